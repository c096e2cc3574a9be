/* fuzz_region.c -- libFuzzer target for the region file (region.h): what a
 * file may hold, and the budget that the operations on a region keep.
 *
 * The first byte of the input chooses what the rest is:
 *
 *  - odd: a region file's content, as is, or (bit 1 set) stretched with zeros
 *    to the region's size so that the header checks are reached. Any content
 *    is either accepted as a region or refused with a message, and a refused
 *    file is never modified. An accepted one must survive a reap, a join, a
 *    reserve and a leave whatever its body holds.
 *
 *  - even: a program. The harness makes a valid region and the input fills
 *    it, then drives it:
 *      ndev          1 + byte % 4 device entries, each: mem_total, mem_limit
 *      ndead         byte % 4 slots of processes that died holding memory,
 *                    each: slot (2 bytes), pid byte, bytes held per device
 *      operations    up to 128, each an op byte (op % 10, see enum op) and
 *                    its arguments (a device is a byte, an amount 3 bytes:
 *                    take_amount)
 *    After every operation region.h's rules must hold: each device's mem_used
 *    is the sum of the mem_used of the slots in use; a reserve that succeeds
 *    leaves the device within its limit (and the cap), one that fails was over
 *    it; release gives back at most what the slot holds; a limit below what
 *    is in use is refused; a reap leaves no slot but the harness's own. A
 *    missing byte reads as 0.
 */
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "region.h"

#define MAX_OPS 128

struct input {
  const uint8_t *p;
  size_t n;
};

static unsigned take(struct input *in) {
  if (in->n == 0) return 0;
  in->n--;
  return *in->p++;
}

/* An amount of bytes: k, then m (16 bits): m << (k % 48), or, for k 0xff,
 * UINT64_MAX - m, the edge where sums wrap. */
static uint64_t take_amount(struct input *in) {
  unsigned k = take(in);
  uint64_t m = take(in);
  m |= (uint64_t)take(in) << 8;
  return k == 0xff ? UINT64_MAX - m : m << (k % 48);
}

static void check(int ok) {
  if (!ok) abort();
}

/* A path of our own for the region file, under TMPDIR. */
static void region_path(char *path, size_t len) {
  const char *dir = getenv("TMPDIR");
  snprintf(path, len, "%s/vgpu-fuzz-region-%d", dir != NULL && *dir ? dir : "/tmp", (int)getpid());
}

/* Writes len bytes to path, which it creates or empties. */
static void write_file(const char *path, const uint8_t *content, size_t len) {
  int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
  if (fd < 0 || (len > 0 && write(fd, content, len) != (ssize_t)len)) abort();
  close(fd);
}

/* ---- The file: accepted, or refused and left as it was. ---- */

static void fuzz_file(const char *path, const uint8_t *data, size_t size, int stretch) {
  size_t len = stretch ? sizeof(struct vg_region) : size;
  uint8_t *content = calloc(1, len ? len : 1);
  memcpy(content, data, size < len ? size : len);
  /* The mutex is a real one whose lock word and owner come from the input,
   * as a tenant's dd forges them: a lock "held" by anyone must fail closed
   * at its deadline (0 here), and an owner marked dead must be repaired.
   * Its other fields stay what vg_shared_mutex_init made: garbage there is
   * no parse's to refuse. */
  if (stretch) {
    pthread_mutex_t *m = (pthread_mutex_t *)(content + offsetof(struct vg_region, lock));
    int lock = m->__data.__lock, owner = m->__data.__owner;
    memset(m, 0, sizeof(((struct vg_region *)0)->lock));
    vg_shared_mutex_init(m);
    m->__data.__lock = lock;
    m->__data.__owner = owner;
  }
  write_file(path, content, len);
  struct vg_shm shm;
  struct vg_err err;
  if (vg_region_open(&shm, path, &err) == 0) {
    shm.lock_wait_ms = 0;
    /* Whatever the body holds: nothing may crash (a lock that fails is the
     * callers' to fail closed on). */
    if (vg_region_lock(&shm) == 0) {
      vg_region_reap_locked(&shm);
      vg_region_unlock(&shm);
    }
    int slot = vg_region_join(&shm, 1);
    if (slot >= 0) {
      vg_region_reserve(&shm, slot, 0, 1);
      vg_region_leave(&shm, slot);
    }
    vg_shm_close(&shm);
  } else {
    check(err.msg[0] != '\0');
    uint8_t *back = malloc(len ? len : 1);
    int fd = open(path, O_RDONLY);
    check(fd >= 0 && read(fd, back, len) == (ssize_t)len && memcmp(back, content, len) == 0);
    close(fd);
    free(back);
  }
  free(content);
}

/* ---- The program: a valid region, driven, its rules checked. ---- */

enum op {
  OP_JOIN,           /* pid byte: a new process; the old slot is abandoned, as if it died */
  OP_LEAVE,          /* the harness's process leaves */
  OP_RESERVE,        /* device, amount */
  OP_RESERVE_CAPPED, /* device, amount, cap */
  OP_RELEASE,        /* device, amount */
  OP_CHARGE,         /* device, amount */
  OP_SET_MEM_LIMIT,  /* device, amount */
  OP_REAP,
  OP_DEVICE,  /* uuid byte, mem_total: an entry, new or found */
  OP_SM_LIMIT /* device, percent byte */
};

struct prog {
  struct vg_shm shm;
  struct vg_region *r;
  int me; /* the harness's slot, -1 when it has none */
};

/* Each device's mem_used is the sum of the slots in use; no slot but ours is
 * left after a reap (reaped) -- ours alone is alive. */
static void check_rules(const struct prog *g, int reaped) {
  uint64_t sum[VG_MAX_DEVICES] = {0};
  for (int i = 0; i < VG_MAX_PROCS; i++) {
    if (g->r->proc[i].pid == 0) continue;
    check(!reaped || i == g->me);
    for (int d = 0; d < VG_MAX_DEVICES; d++) sum[d] += g->r->proc[i].mem_used[d];
  }
  for (int d = 0; d < VG_MAX_DEVICES; d++) check(g->r->dev[d].mem_used == sum[d]);
  check(g->r->device_count <= VG_MAX_DEVICES);
  check(g->me < 0 || g->r->proc[g->me].pid != 0);
}

/* A device entry in use (there is always one). */
static int take_dev(const struct prog *g, struct input *in) {
  return (int)(take(in) % g->r->device_count);
}

static int joined(struct prog *g, unsigned pid) {
  if (g->me < 0) g->me = vg_region_join(&g->shm, (int32_t)pid + 1); /* pid 0 is a free slot */
  return g->me >= 0;
}

static void op_reserve(struct prog *g, struct input *in, int capped) {
  int d = take_dev(g, in);
  uint64_t bytes = take_amount(in), cap = capped ? take_amount(in) : 0;
  if (!joined(g, 1)) return;
  const struct vg_region_device *dev = &g->r->dev[d];
  uint64_t mine = g->r->proc[g->me].mem_used[d];
  bool ok = capped ? vg_region_reserve_capped(&g->shm, g->me, d, bytes, cap)
                   : vg_region_reserve(&g->shm, g->me, d, bytes);
  uint64_t limit = dev->mem_limit, used = dev->mem_used;
  if (cap != 0 && (limit == 0 || cap < limit)) limit = cap;
  if (ok) { /* within the lower of limit and cap */
    check(g->r->proc[g->me].mem_used[d] == mine + bytes);
    check(limit == 0 || used <= limit);
  } else { /* refused: it would have passed the limit, or wrapped */
    check(g->r->proc[g->me].mem_used[d] == mine);
    check(bytes > UINT64_MAX - used || (limit != 0 && (used > limit || bytes > limit - used)));
  }
}

static void op_release(struct prog *g, struct input *in) {
  int d = take_dev(g, in);
  uint64_t bytes = take_amount(in);
  if (!joined(g, 1)) return;
  uint64_t mine = g->r->proc[g->me].mem_used[d], used = g->r->dev[d].mem_used;
  uint64_t give = bytes < mine ? bytes : mine;
  vg_region_release(&g->shm, g->me, d, bytes);
  check(g->r->proc[g->me].mem_used[d] == mine - give);
  check(g->r->dev[d].mem_used == used - give);
}

static void op_charge(struct prog *g, struct input *in) {
  int d = take_dev(g, in);
  uint64_t bytes = take_amount(in);
  if (!joined(g, 1)) return;
  uint64_t used = g->r->dev[d].mem_used;
  /* Memory the driver already holds: it never adds up past 2^64. */
  if (bytes > UINT64_MAX - used) return;
  vg_region_charge(&g->shm, g->me, d, bytes);
  check(g->r->dev[d].mem_used == used + bytes);
}

static void op_set_mem_limit(struct prog *g, struct input *in) {
  int d = take_dev(g, in);
  uint64_t limit = take_amount(in), before = g->r->dev[d].mem_limit;
  uint64_t used = g->r->dev[d].mem_used, gen = g->r->generation;
  struct vg_err err = {0};
  int rc = vg_region_set_mem_limit(&g->shm, d, limit, &err);
  if (limit != 0 && limit < used) { /* nothing allocated may be lost */
    check(rc == -1 && err.msg[0] != '\0' && g->r->dev[d].mem_limit == before);
  } else {
    check(rc == 0 && g->r->dev[d].mem_limit == limit);
    check(g->r->generation == gen + (limit != before));
  }
}

static void op_leave(struct prog *g) {
  if (g->me < 0) return;
  uint64_t held[VG_MAX_DEVICES], used[VG_MAX_DEVICES];
  for (int d = 0; d < VG_MAX_DEVICES; d++) {
    held[d] = g->r->proc[g->me].mem_used[d];
    used[d] = g->r->dev[d].mem_used;
  }
  vg_region_leave(&g->shm, g->me);
  check(g->r->proc[g->me].pid == 0);
  for (int d = 0; d < VG_MAX_DEVICES; d++) check(g->r->dev[d].mem_used == used[d] - held[d]);
  g->me = -1;
}

/* One operation; returns whether it reaped every dead slot. */
static int step(struct prog *g, struct input *in) {
  switch ((enum op)(take(in) % 10)) {
    case OP_JOIN: {
      unsigned pid = take(in);
      g->me = -1;
      if (joined(g, pid)) check(g->r->proc[g->me].pid == (int32_t)pid + 1);
      break; /* the abandoned slot was still ours when the join reaped */
    }
    case OP_LEAVE:
      op_leave(g);
      break;
    case OP_RESERVE:
      op_reserve(g, in, 0);
      break;
    case OP_RESERVE_CAPPED:
      op_reserve(g, in, 1);
      break;
    case OP_RELEASE:
      op_release(g, in);
      break;
    case OP_CHARGE:
      op_charge(g, in);
      break;
    case OP_SET_MEM_LIMIT:
      op_set_mem_limit(g, in);
      break;
    case OP_REAP:
      /* -1: the lock is unusable (or, with a deadline, timed out): a caller
       * fails closed, as the harness does by not reaping. */
      if (vg_region_lock(&g->shm) != 0) break;
      vg_region_reap_locked(&g->shm);
      vg_region_unlock(&g->shm);
      return 1;
    case OP_DEVICE: {
      char uuid[16];
      snprintf(uuid, sizeof(uuid), "GPU-%u", take(in) % 20);
      uint64_t total = take_amount(in);
      if (vg_region_lock(&g->shm) != 0) break;
      int d = vg_region_device_locked(&g->shm, uuid, total);
      vg_region_unlock(&g->shm);
      check(d == -1 ? g->r->device_count == VG_MAX_DEVICES
                    : d < (int)g->r->device_count && strcmp(g->r->dev[d].uuid, uuid) == 0);
      break;
    }
    case OP_SM_LIMIT: {
      int d = take_dev(g, in);
      unsigned pct = take(in) % 101;
      struct vg_err err;
      check(vg_region_set_sm_limit(&g->shm, d, pct, &err) == 0); /* nobody else holds the lock */
      check(g->r->dev[d].sm_limit == pct);
      break;
    }
  }
  return 0;
}

/* The state the input describes: devices with limits, and slots of processes
 * that died holding memory (the sums kept, as a live region keeps them). */
static int fill(struct prog *g, struct input *in) {
  unsigned ndev = 1 + take(in) % 4;
  for (unsigned i = 0; i < ndev; i++) {
    char uuid[16];
    snprintf(uuid, sizeof(uuid), "GPU-%u", i);
    uint64_t total = take_amount(in), limit = take_amount(in);
    if (vg_region_lock(&g->shm) != 0) return -1;
    int d = vg_region_device_locked(&g->shm, uuid, total);
    vg_region_unlock(&g->shm);
    struct vg_err err;
    check(d == (int)i && vg_region_set_mem_limit(&g->shm, d, limit, &err) == 0);
  }
  unsigned ndead = take(in) % 4;
  for (unsigned i = 0; i < ndead; i++) {
    unsigned slot = take(in);
    slot = (slot | take(in) << 8) % VG_MAX_PROCS;
    int32_t pid = (int32_t)take(in) + 1;
    if (vg_region_lock(&g->shm) != 0) return -1;
    struct vg_region_proc *p = &g->r->proc[slot];
    if (p->pid == 0) {
      p->pid = pid;
      for (unsigned d = 0; d < ndev; d++) {
        uint64_t held = take_amount(in);
        if (held > UINT64_MAX - g->r->dev[d].mem_used) held = 0;
        p->mem_used[d] = held;
        g->r->dev[d].mem_used += held;
      }
    }
    vg_region_unlock(&g->shm);
  }
  return 0;
}

static void fuzz_program(const char *path, struct input *in) {
  struct prog g = {.me = -1};
  struct vg_err err;
  write_file(path, NULL, 0); /* empty: vg_region_open makes a fresh region */
  check(vg_region_open(&g.shm, path, &err) == 0 && g.shm.created);
  g.r = vg_region_of(&g.shm);
  if (fill(&g, in) == 0) {
    check_rules(&g, 0);
    for (int i = 0; i < MAX_OPS && in->n > 0; i++) check_rules(&g, step(&g, in));
    op_leave(&g);
    check_rules(&g, 0);
    for (int i = 0; i < VG_MAX_PROCS; i++) /* a free slot holds nothing */
      for (int d = 0; d < VG_MAX_DEVICES && g.r->proc[i].pid == 0; d++)
        check(g.r->proc[i].mem_used[d] == 0);
  }
  vg_shm_close(&g.shm);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char path[PATH_MAX];
  region_path(path, sizeof(path));
  struct input in = {data + (size > 0), size - (size > 0)};
  unsigned mode = size > 0 ? data[0] : 0;
  if (mode & 1)
    fuzz_file(path, in.p, in.n, (mode & 2) != 0);
  else
    fuzz_program(path, &in);
  unlink(path);
  return 0;
}
