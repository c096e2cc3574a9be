/* backstop_compute.c -- see backstop_compute.h. */
#include "backstop_compute.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "devices.h"
#include "log.h"

#define MAX_PIDS 256    /* distinct processes per GPU and pass */
#define MAX_TALLIES 256 /* containers per GPU and pass */

/* What the driver offers on one GPU, across passes. */
struct gpu {
  char uuid[VG_UUID_LEN];
  uint64_t last_us; /* the newest sample seen: the next call's lastSeenTimeStamp */
  bool unsupported, failing;
};

/* One container on one GPU, across passes, while it is listed. */
struct entry {
  char slot[17];
  char uuid[VG_UUID_LEN];
  unsigned measured;
  struct vg_compute_episode ep;
};

struct vg_compute {
  struct vg_compute_opts o;
  pthread_mutex_t lock; /* everything below: the metrics read it */
  struct gpu gpus[VG_MAX_GPUS];
  unsigned ngpus;
  struct entry *e;
  size_t n, cap;
};

/* One process in one pass: its mean share over its samples. */
struct pid_util {
  uint32_t pid;
  unsigned sum, samples;
};

/* One container on one GPU in one pass. */
struct tally {
  char slot[17];
  unsigned measured, procs, cores;
  bool share;
  uint32_t pids[VG_COMPUTE_PIDS_SHOWN];
};

/* The share a container may use: its grant, and under policy share also
 * what the others leave (work-conserving, as libvgpu's share policy). */
static unsigned allowed(unsigned grant, bool share, unsigned others) {
  unsigned left = others >= 100 ? 0 : 100 - others;
  return share && left > grant ? left : grant;
}

bool vg_compute_over(unsigned measured, unsigned grant, bool share, unsigned others,
                     unsigned tolerance) {
  if (grant == 0 || grant >= 100) return false; /* the whole GPU */
  return measured > allowed(grant, share, others) + tolerance;
}

bool vg_compute_step(struct vg_compute_episode *e, bool over, uint64_t now_ms,
                     uint64_t sustain_ms) {
  if (!over) {
    *e = (struct vg_compute_episode){false, false, 0}; /* back within: the episode ends */
    return false;
  }
  if (!e->over) e->over = true, e->since_ms = now_ms;
  if (e->reported || now_ms - e->since_ms < sustain_ms) return false;
  e->reported = true;
  return true;
}

struct vg_compute *vg_compute_new(const struct vg_compute_opts *o) {
  struct vg_compute *c = calloc(1, sizeof(*c));
  if (c == NULL) return NULL;
  c->o = *o;
  if (c->o.util == NULL) c->o.util = vg_gpu_process_util;
  pthread_mutex_init(&c->lock, NULL);
  return c;
}

void vg_compute_free(struct vg_compute *c) {
  if (c == NULL) return;
  free(c->e);
  pthread_mutex_destroy(&c->lock);
  free(c);
}

/* The state of GPU uuid (added when new); NULL past VG_MAX_GPUS. Locked. */
static struct gpu *gpu_of(struct vg_compute *c, const char *uuid) {
  for (unsigned i = 0; i < c->ngpus; i++)
    if (strcmp(c->gpus[i].uuid, uuid) == 0) return &c->gpus[i];
  if (c->ngpus == VG_MAX_GPUS) return NULL;
  struct gpu *g = &c->gpus[c->ngpus++];
  memset(g, 0, sizeof(*g));
  snprintf(g->uuid, sizeof(g->uuid), "%s", uuid);
  return g;
}

static struct entry *find(struct vg_compute *c, const char *slot, const char *uuid) {
  for (size_t i = 0; i < c->n; i++)
    if (strcmp(c->e[i].slot, slot) == 0 && strcmp(c->e[i].uuid, uuid) == 0) return &c->e[i];
  return NULL;
}

static struct entry *entry_of(struct vg_compute *c, const char *slot, const char *uuid) {
  struct entry *e = find(c, slot, uuid);
  if (e != NULL) return e;
  if (c->n == c->cap) {
    size_t cap = c->cap ? c->cap * 2 : 16;
    struct entry *v = realloc(c->e, cap * sizeof(*v));
    if (v == NULL) return NULL;
    c->e = v, c->cap = cap;
  }
  e = &c->e[c->n++];
  memset(e, 0, sizeof(*e));
  snprintf(e->slot, sizeof(e->slot), "%.16s", slot);
  snprintf(e->uuid, sizeof(e->uuid), "%s", uuid);
  return e;
}

/* Each process's samples folded into one share: the driver may give one
 * sample per sample period since last_us, so a process's share of the
 * window is their mean, not their sum. Advances *last_us. */
static size_t per_pid(const struct vg_gpu_util_sample *s, unsigned n, struct pid_util *p,
                      uint64_t *last_us) {
  size_t np = 0;
  for (unsigned i = 0; i < n; i++) {
    if (s[i].ts_us > *last_us) *last_us = s[i].ts_us;
    size_t k = 0;
    while (k < np && p[k].pid != s[i].pid) k++;
    if (k == np) {
      if (np == MAX_PIDS) continue;
      p[np++] = (struct pid_util){s[i].pid, 0, 0};
    }
    p[k].sum += s[i].sm > 100 ? 100 : s[i].sm;
    p[k].samples++;
  }
  return np;
}

static bool listed(const char *const *slots, size_t n, const char *slot) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(slots[i], slot) == 0) return true;
  return false;
}

/* The processes summed per listed container; *total gets every process's
 * share, ours or not. */
static size_t attribute(const struct vg_compute *c, const struct pid_util *p, size_t np,
                        const char *const *slots, size_t nslots, struct tally *t, unsigned *total) {
  size_t nt = 0;
  *total = 0;
  for (size_t i = 0; i < np; i++) {
    unsigned share = (p[i].sum + p[i].samples / 2) / p[i].samples;
    *total += share;
    char slot[17];
    if (c->o.slot_of(c->o.arg, p[i].pid, slot) != 1 || !listed(slots, nslots, slot)) continue;
    size_t k = 0;
    while (k < nt && strcmp(t[k].slot, slot) != 0) k++;
    if (k == nt) {
      if (nt == MAX_TALLIES) continue;
      memset(&t[nt], 0, sizeof(t[nt]));
      memcpy(t[nt++].slot, slot, sizeof(slot));
    }
    if (t[k].procs < VG_COMPUTE_PIDS_SHOWN) t[k].pids[t[k].procs] = p[i].pid;
    t[k].procs++;
    t[k].measured += share;
  }
  return nt;
}

static const struct tally *tally_of(const struct tally *t, size_t n, const char *slot) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(t[i].slot, slot) == 0) return &t[i];
  return NULL;
}

/* A reading for every container listed on GPU uuid: the tallied ones at
 * their share, the others at 0 (none of their processes ran). Locked. */
static size_t judge(struct vg_compute *c, const char *uuid, const struct tally *t, size_t nt,
                    unsigned total, uint64_t now_ms, struct vg_compute_finding *out, size_t max) {
  for (size_t i = 0; i < nt; i++) entry_of(c, t[i].slot, uuid); /* out of memory: unjudged */
  size_t nf = 0;
  for (size_t i = 0; i < c->n; i++) {
    struct entry *e = &c->e[i];
    if (strcmp(e->uuid, uuid) != 0) continue;
    const struct tally *k = tally_of(t, nt, e->slot);
    e->measured = k ? k->measured : 0;
    bool over = k != NULL && vg_compute_over(k->measured, k->cores, k->share, total - k->measured,
                                             c->o.tolerance);
    if (!vg_compute_step(&e->ep, over, now_ms, (uint64_t)c->o.sustain_s * 1000) || nf == max)
      continue;
    struct vg_compute_finding *f = &out[nf++];
    memset(f, 0, sizeof(*f));
    memcpy(f->slot, e->slot, sizeof(f->slot));
    snprintf(f->uuid, sizeof(f->uuid), "%s", uuid);
    f->measured = k->measured, f->grant = k->cores, f->procs = k->procs;
    f->allowed = allowed(k->cores, k->share, total - k->measured);
    f->tolerance = c->o.tolerance;
    f->seconds = (unsigned)((now_ms - e->ep.since_ms) / 1000);
    memcpy(f->pids, k->pids, sizeof(f->pids));
  }
  return nf;
}

/* Forgets the readings on uuid (not judged there) and of containers no
 * longer listed. Locked. */
static void forget(struct vg_compute *c, const char *uuid, const char *const *slots,
                   size_t nslots) {
  size_t k = 0;
  for (size_t i = 0; i < c->n; i++) {
    bool gone =
        (uuid != NULL && strcmp(c->e[i].uuid, uuid) == 0) || !listed(slots, nslots, c->e[i].slot);
    if (!gone) c->e[k++] = c->e[i];
  }
  c->n = k;
}

/* Says a change in what the driver offers on a GPU, once. Locked. */
static void say(struct gpu *g, int rc, const char *err) {
  bool unsupported = rc == VG_GPU_UTIL_UNSUPPORTED, failing = rc == VG_GPU_UTIL_ERROR;
  if (unsupported && !g->unsupported)
    vg_warn(
        "backstop: NVML does not measure per-process utilisation on GPU %s: compute is not "
        "judged there (a container running without libvgpu uses it unreported)",
        g->uuid);
  if (failing && !g->failing)
    vg_warn("backstop: %s (GPU %s); its compute is not judged until it answers", err, g->uuid);
  if (!failing && g->failing)
    vg_info("backstop: GPU %s answers again: its compute is judged", g->uuid);
  g->unsupported = unsupported, g->failing = failing;
}

/* Reads one GPU; the samples' tallies into t. -1: no reading. */
static int read_gpu(struct vg_compute *c, unsigned index, const char *uuid,
                    const char *const *slots, size_t nslots, struct tally *t, size_t *nt,
                    unsigned *total) {
  static __thread struct vg_gpu_util_sample s[VG_GPU_UTIL_SAMPLES_MAX];
  struct pid_util p[MAX_PIDS];
  char err[256] = "";
  unsigned n = 0;
  pthread_mutex_lock(&c->lock);
  struct gpu *g = gpu_of(c, uuid);
  uint64_t last = g ? g->last_us : 0;
  pthread_mutex_unlock(&c->lock);
  if (g == NULL) return -1;
  int rc = c->o.util(index, last, s, VG_GPU_UTIL_SAMPLES_MAX, &n, err, sizeof(err));
  size_t np = rc == VG_GPU_UTIL_OK ? per_pid(s, n, p, &last) : 0;
  *nt = attribute(c, p, np, slots, nslots, t, total);
  for (size_t i = 0; i < *nt; i++)
    c->o.grant_of(c->o.arg, t[i].slot, uuid, &t[i].cores, &t[i].share);
  pthread_mutex_lock(&c->lock);
  say(g, rc, err);
  g->last_us = last;
  pthread_mutex_unlock(&c->lock);
  return rc;
}

size_t vg_compute_pass(struct vg_compute *c, const struct vg_gpu_usage *gpus, unsigned ngpus,
                       const char *const *slots, size_t nslots, uint64_t now_ms,
                       struct vg_compute_finding *out, size_t max) {
  static __thread struct tally t[MAX_TALLIES];
  size_t nf = 0;
  pthread_mutex_lock(&c->lock);
  forget(c, NULL, slots, nslots);
  pthread_mutex_unlock(&c->lock);
  for (unsigned g = 0; g < ngpus; g++) {
    size_t nt = 0;
    unsigned total = 0;
    int rc = read_gpu(c, g, gpus[g].uuid, slots, nslots, t, &nt, &total);
    if (rc == VG_GPU_UTIL_ERROR) continue; /* no reading: nothing changes */
    pthread_mutex_lock(&c->lock);
    if (rc == VG_GPU_UTIL_UNSUPPORTED)
      forget(c, gpus[g].uuid, slots, nslots);
    else
      nf += judge(c, gpus[g].uuid, t, nt, total, now_ms, out + nf, max - nf);
    pthread_mutex_unlock(&c->lock);
  }
  return nf;
}

bool vg_compute_reading(struct vg_compute *c, const char *slot, const char *uuid,
                        unsigned *measured, bool *over) {
  pthread_mutex_lock(&c->lock);
  const struct entry *e = find(c, slot, uuid);
  if (e != NULL) *measured = e->measured, *over = e->ep.reported;
  pthread_mutex_unlock(&c->lock);
  return e != NULL;
}

bool vg_compute_judged(struct vg_compute *c, const char *uuid) {
  bool judged = true;
  pthread_mutex_lock(&c->lock);
  for (unsigned i = 0; i < c->ngpus; i++)
    if (strcmp(c->gpus[i].uuid, uuid) == 0) judged = !c->gpus[i].unsupported;
  pthread_mutex_unlock(&c->lock);
  return judged;
}
