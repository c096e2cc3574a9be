/*
 * test_backstop_rules.c -- the backstop's two decisions on their own: whose
 * is a process (the slot mounted at /usr/local/vgpu in its mountinfo,
 * proc_slot.c) and is a container over its grant (backstop.c); and the
 * compute judgement (backstop_compute.c) on samples this test feeds in
 * place of NVML's per-process utilisation.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backstop.h"
#include "backstop_compute.h"
#include "proc_slot.h"

#define MIB (1024ULL * 1024ULL)

/* What a container's mountinfo looks like from the host (cgroup v1, containerd). */
static const char container[] =
    "1201 1100 0:52 / / rw,relatime master:300 - overlay overlay rw,lowerdir=/x\n"
    "1202 1201 0:55 / /proc rw,nosuid,nodev,noexec,relatime - proc proc rw\n"
    "1210 1201 254:0 /var/lib/vgpu/slots/0f1e2d3c4b5a6978 /usr/local/vgpu rw,relatime - ext4 "
    "/dev/vda rw\n"
    "1211 1210 254:0 /var/lib/vgpu/slots/0f1e2d3c4b5a6978/grant /usr/local/vgpu/grant "
    "ro,relatime - ext4 /dev/vda rw\n"
    "1212 1201 254:0 /usr/local/vgpu/libvgpu.so /usr/local/vgpu/libvgpu.so ro - ext4 /dev/vda\n";

static void test_mountinfo(void **s) {
  (void)s;
  char slot[17] = "";
  assert_int_equal(vg_mountinfo_slot(container, strlen(container), slot), 1);
  assert_string_equal(slot, "0f1e2d3c4b5a6978");
  /* A state dir on a file system of its own: the root is relative to it. */
  static const char own_fs[] = "40 30 8:3 /slots/00000000000000ff /usr/local/vgpu rw - xfs x rw";
  assert_int_equal(vg_mountinfo_slot(own_fs, strlen(own_fs), slot), 1);
  assert_string_equal(slot, "00000000000000ff");
  static const char *const not_ours[] = {
      "40 30 8:3 /slots/00000000000000ff /usr/local/vgpu2 rw - xfs x rw", /* another point */
      "40 30 8:3 /slots/00000000000000fg /usr/local/vgpu rw - xfs x rw",  /* not hex */
      "40 30 8:3 /slots/00000000000000f /usr/local/vgpu rw - xfs x rw",   /* 15 digits */
      "40 30 8:3 /var/lib/vgpu /usr/local/vgpu rw - xfs x rw",            /* not a slot */
      "40 30 8:3 /slots/0000000000000000/grant /usr/local/vgpu rw - x",   /* a sub dir */
      "40 30 8:3",                                                        /* cut short */
      "",
  };
  for (size_t i = 0; i < sizeof(not_ours) / sizeof(not_ours[0]); i++)
    assert_int_equal(vg_mountinfo_slot(not_ours[i], strlen(not_ours[i]), slot), 0);
}

/* The slot read-only with the region file mounted read-write over it
 * (docs/device-plugin.md): two entries name the slot, only the one at
 * /usr/local/vgpu itself counts, whichever comes first. */
static void test_mountinfo_region_mount(void **s) {
  (void)s;
  static const char region[] =
      "1213 1210 254:0 /var/lib/vgpu/slots/0f1e2d3c4b5a6978/region.cache "
      "/usr/local/vgpu/region.cache rw,relatime - ext4 /dev/vda rw\n";
  static const char slot_ro[] =
      "1210 1201 254:0 /var/lib/vgpu/slots/0f1e2d3c4b5a6978 /usr/local/vgpu ro,relatime - ext4 "
      "/dev/vda rw\n";
  char text[1024], slot[17] = "";
  snprintf(text, sizeof(text), "%s%s", slot_ro, region);
  assert_int_equal(vg_mountinfo_slot(text, strlen(text), slot), 1);
  assert_string_equal(slot, "0f1e2d3c4b5a6978");
  snprintf(text, sizeof(text), "%s%s", region, slot_ro);
  memset(slot, 0, sizeof(slot));
  assert_int_equal(vg_mountinfo_slot(text, strlen(text), slot), 1);
  assert_string_equal(slot, "0f1e2d3c4b5a6978");
  /* the region's mount alone is no slot mount */
  assert_int_equal(vg_mountinfo_slot(region, strlen(region), slot), 0);
}

static void test_proc_slot(void **s) {
  (void)s;
  char root[] = "/tmp/vg-proc-XXXXXX", dir[64], path[96], slot[17];
  assert_non_null(mkdtemp(root));
  snprintf(dir, sizeof(dir), "%s/4242", root);
  assert_int_equal(mkdir(dir, 0755), 0);
  snprintf(path, sizeof(path), "%s/mountinfo", dir);
  FILE *f = fopen(path, "w");
  fputs(container, f);
  fclose(f);
  assert_int_equal(vg_proc_slot(root, 4242, slot), 1);
  assert_string_equal(slot, "0f1e2d3c4b5a6978");
  assert_int_equal(vg_proc_slot(root, 4243, slot), -1);       /* gone */
  assert_int_equal(vg_proc_slot("/proc", getpid(), slot), 0); /* this test: not in a slot */
  unlink(path);
  rmdir(dir);
  rmdir(root);
}

static void test_over(void **s) {
  (void)s;
  const uint64_t ctx = 256 * MIB, tol = 256 * MIB, grant = 1000 * MIB;
  assert_false(vg_backstop_over(grant + ctx + tol, 1, grant, ctx, tol)); /* at the edge */
  assert_true(vg_backstop_over(grant + ctx + tol + 1, 1, grant, ctx, tol));
  assert_false(vg_backstop_over(grant + 2 * ctx + tol, 2, grant, ctx, tol)); /* two contexts */
  assert_false(vg_backstop_over(UINT64_MAX, 1, 0, ctx, tol));                /* 0: the whole GPU */
  assert_false(vg_backstop_over(UINT64_MAX, UINT32_MAX, UINT64_MAX - 1, ctx, tol)); /* no wrap */
  enum vg_backstop_policy p;
  struct vg_err err = {""};
  assert_int_equal(vg_backstop_policy_parse("evict", &p, &err), 0);
  assert_int_equal(p, VG_BACKSTOP_EVICT);
  assert_int_equal(vg_backstop_policy_parse("kill", &p, &err), -1);
  assert_non_null(strstr(err.msg, "neither report nor evict"));
}

static void test_compute_over(void **s) {
  (void)s;
  assert_false(vg_compute_over(40, 30, false, 0, 10)); /* at the edge: grant + tolerance */
  assert_true(vg_compute_over(41, 30, false, 0, 10));
  assert_true(vg_compute_over(31, 30, false, 0, 0));
  assert_false(vg_compute_over(100, 0, false, 0, 0));   /* 0: the whole GPU */
  assert_false(vg_compute_over(100, 100, false, 0, 0)); /* so is 100 % */
  /* share: what the others leave is allowed too, never less than the grant */
  assert_false(vg_compute_over(85, 30, true, 10, 5));
  assert_true(vg_compute_over(96, 30, true, 10, 5));
  assert_true(vg_compute_over(45, 30, true, 100, 10));
  assert_false(vg_compute_over(40, 30, true, 150, 10)); /* others over 100: the grant */
  assert_true(vg_compute_over(85, 30, false, 10, 5));   /* hard: the grant alone */
}

/* The sustained rule: reported once it has been over in every reading for
 * the period, once per episode; a reading within ends the episode. */
static void test_compute_step(void **s) {
  (void)s;
  struct vg_compute_episode e = {0};
  assert_false(vg_compute_step(&e, true, 1000, 30000));
  assert_false(vg_compute_step(&e, true, 30999, 30000));
  assert_true(vg_compute_step(&e, true, 31000, 30000));
  assert_false(vg_compute_step(&e, true, 41000, 30000)); /* the same episode */
  assert_true(e.reported);
  assert_false(vg_compute_step(&e, false, 51000, 30000)); /* back within: over */
  assert_false(e.over || e.reported);
  assert_false(vg_compute_step(&e, true, 61000, 30000)); /* a new episode starts the clock */
  assert_false(vg_compute_step(&e, false, 71000, 30000));
  assert_false(vg_compute_step(&e, true, 81000, 30000));
  assert_true(vg_compute_step(&e, true, 111000, 30000));
  struct vg_compute_episode z = {0};
  assert_true(vg_compute_step(&z, true, 5, 0)); /* sustain 0: the first reading */
}

/* ---- a pass on samples fed in place of NVML's ---- */

#define SLOT_A "aaaaaaaaaaaaaaaa" /* grant 30 %, hard */
#define SLOT_B "bbbbbbbbbbbbbbbb" /* grant 50 %, hard */
#define SLOT_C "cccccccccccccccc" /* no compute limit */
#define SLOT_D "dddddddddddddddd" /* grant 30 %, share */
#define SLOT_X "eeeeeeeeeeeeeeee" /* not listed */

static struct {
  int rc[2]; /* per GPU index */
  struct vg_gpu_util_sample s[2][16];
  unsigned n[2];
  uint64_t since[2]; /* what the pass asked for */
  unsigned calls;
} fake;

static int fake_util(unsigned index, uint64_t since_us, struct vg_gpu_util_sample *out,
                     unsigned max, unsigned *count, char *err, size_t err_len) {
  fake.since[index] = since_us;
  fake.calls++;
  *count = 0;
  if (fake.rc[index] == VG_GPU_UTIL_ERROR) snprintf(err, err_len, "NVML error 999");
  if (fake.rc[index] != VG_GPU_UTIL_OK) return fake.rc[index];
  for (unsigned i = 0; i < fake.n[index] && i < max; i++) out[(*count)++] = fake.s[index][i];
  return VG_GPU_UTIL_OK;
}

/* pid / 100 names the container: 1xx A, 2xx B, 3xx C, 4xx D, 5xx X; others none. */
static int fake_slot(void *arg, uint32_t pid, char slot[17]) {
  (void)arg;
  static const char *const slots[] = {SLOT_A, SLOT_B, SLOT_C, SLOT_D, SLOT_X};
  if (pid < 100 || pid >= 600) return 0;
  memcpy(slot, slots[pid / 100 - 1], 17);
  return 1;
}

static void fake_grant(void *arg, const char *slot, const char *uuid, unsigned *cores,
                       bool *share) {
  (void)arg, (void)uuid;
  *cores = slot[0] == 'a' || slot[0] == 'd' ? 30 : slot[0] == 'b' ? 50 : 0;
  *share = slot[0] == 'd';
}

static void feed(unsigned gpu, int rc, const struct vg_gpu_util_sample *s, unsigned n) {
  fake.rc[gpu] = rc;
  fake.n[gpu] = n;
  if (n > 0) memcpy(fake.s[gpu], s, n * sizeof(*s));
}

static struct vg_compute *compute_for_test(unsigned sustain_s) {
  memset(&fake, 0, sizeof(fake));
  fake.rc[1] = VG_GPU_UTIL_NONE;
  struct vg_compute_opts o = {10, sustain_s, fake_util, fake_slot, fake_grant, NULL};
  struct vg_compute *c = vg_compute_new(&o);
  assert_non_null(c);
  return c;
}

static const struct vg_gpu_usage gpus[2] = {{"GPU-zero", 0, 0}, {"GPU-one", 0, 0}};
static const char *const listed[] = {SLOT_A, SLOT_B, SLOT_C, SLOT_D};

static size_t pass(struct vg_compute *c, uint64_t now_ms, struct vg_compute_finding *f) {
  return vg_compute_pass(c, gpus, 2, listed, 4, now_ms, f, 8);
}

static unsigned reading(struct vg_compute *c, const char *slot, bool *over) {
  unsigned m = 999;
  *over = false;
  if (!vg_compute_reading(c, slot, "GPU-zero", &m, over)) return 1000; /* none */
  return m;
}

/* Per process the mean of its samples, per container the sum; only A is
 * over (B within the tolerance, C unlimited, D under share with room left,
 * X not listed); reported once, after 30 s of over-readings, naming the
 * measurement, grant, duration and PIDs; lastSeenTimeStamp advances. */
static void test_compute_pass(void **s) {
  (void)s;
  struct vg_compute *c = compute_for_test(30);
  struct vg_compute_finding f[8];
  const struct vg_gpu_util_sample busy[] = {
      {101, 40, 1000},  {101, 50, 2000}, {102, 50, 1500}, /* A: 45 + 50 = 95 */
      {201, 58, 1800},                                    /* B: 58 <= 50 + 10 */
      {301, 100, 1900},                                   /* C: unlimited */
      {501, 100, 1700},                                   /* X: not listed */
      {7, 100, 1600},                                     /* a host process */
  };
  feed(0, VG_GPU_UTIL_OK, busy, 7);
  assert_int_equal(pass(c, 0, f), 0); /* over, not yet for 30 s */
  assert_int_equal(fake.since[0], 0); /* the first pass: all the driver holds */
  bool over;
  assert_int_equal(reading(c, SLOT_A, &over), 95);
  assert_false(over);
  assert_int_equal(reading(c, SLOT_B, &over), 58);
  assert_int_equal(reading(c, SLOT_C, &over), 100);
  assert_int_equal(reading(c, SLOT_D, &over), 1000); /* never ran: no reading */
  assert_int_equal(reading(c, SLOT_X, &over), 1000);
  assert_int_equal(pass(c, 29999, f), 0);
  assert_int_equal(fake.since[0], 2000); /* the newest sample seen */
  assert_int_equal(pass(c, 30000, f), 1);
  assert_string_equal(f[0].slot, SLOT_A);
  assert_string_equal(f[0].uuid, "GPU-zero");
  assert_int_equal(f[0].measured, 95);
  assert_int_equal(f[0].grant, 30);
  assert_int_equal(f[0].allowed, 30);
  assert_int_equal(f[0].seconds, 30);
  assert_int_equal(f[0].procs, 2);
  assert_int_equal(f[0].pids[0], 101);
  assert_int_equal(f[0].pids[1], 102);
  assert_int_equal(reading(c, SLOT_A, &over), 95);
  assert_true(over);
  assert_int_equal(pass(c, 40000, f), 0); /* once per episode */
  assert_true(vg_compute_judged(c, "GPU-zero") && vg_compute_judged(c, "GPU-one"));
  vg_compute_free(c);
}

/* NOT_FOUND (nobody ran) ends an episode: the next over starts anew; an
 * NVML error is no reading and changes nothing. */
static void test_compute_episodes(void **s) {
  (void)s;
  struct vg_compute *c = compute_for_test(20);
  struct vg_compute_finding f[8];
  const struct vg_gpu_util_sample a[] = {{101, 90, 1000}};
  feed(0, VG_GPU_UTIL_OK, a, 1);
  assert_int_equal(pass(c, 0, f), 0);
  feed(0, VG_GPU_UTIL_ERROR, NULL, 0);
  assert_int_equal(pass(c, 10000, f), 0);
  bool over;
  assert_int_equal(reading(c, SLOT_A, &over), 90); /* kept */
  feed(0, VG_GPU_UTIL_OK, a, 1);
  assert_int_equal(pass(c, 20000, f), 1); /* the error did not break the episode */
  feed(0, VG_GPU_UTIL_NONE, NULL, 0);
  assert_int_equal(pass(c, 30000, f), 0);
  assert_int_equal(reading(c, SLOT_A, &over), 0);
  assert_false(over);
  feed(0, VG_GPU_UTIL_OK, a, 1);
  assert_int_equal(pass(c, 40000, f), 0);
  const struct vg_gpu_util_sample within[] = {{101, 35, 2000}};
  feed(0, VG_GPU_UTIL_OK, within, 1); /* back within grant + tolerance */
  assert_int_equal(pass(c, 50000, f), 0);
  feed(0, VG_GPU_UTIL_OK, a, 1);
  assert_int_equal(pass(c, 60000, f), 0);
  assert_int_equal(pass(c, 79999, f), 0);
  assert_int_equal(pass(c, 80000, f), 1); /* a second episode, reported */
  assert_int_equal(f[0].seconds, 20);
  vg_compute_free(c);
}

/* Under policy share the others' use decides: D may take what they leave,
 * and is over once they want more than that. */
static void test_compute_share(void **s) {
  (void)s;
  struct vg_compute *c = compute_for_test(0);
  struct vg_compute_finding f[8];
  const struct vg_gpu_util_sample idle_others[] = {{401, 85, 1000}, {201, 10, 1000}};
  feed(0, VG_GPU_UTIL_OK, idle_others, 2);
  assert_int_equal(pass(c, 0, f), 0);
  const struct vg_gpu_util_sample busy_others[] = {{401, 85, 2000}, {201, 50, 2000}};
  feed(0, VG_GPU_UTIL_OK, busy_others, 2);
  assert_int_equal(pass(c, 1000, f), 1);
  assert_string_equal(f[0].slot, SLOT_D);
  assert_int_equal(f[0].allowed, 50);
  vg_compute_free(c);
}

/* NOT_SUPPORTED: not judged there (said by vg_compute_judged), no
 * readings; a container no longer listed loses its readings. */
static void test_compute_unsupported(void **s) {
  (void)s;
  struct vg_compute *c = compute_for_test(0);
  struct vg_compute_finding f[8];
  const struct vg_gpu_util_sample a[] = {{101, 90, 1000}};
  feed(0, VG_GPU_UTIL_OK, a, 1);
  assert_int_equal(pass(c, 0, f), 1);
  feed(0, VG_GPU_UTIL_UNSUPPORTED, NULL, 0);
  assert_int_equal(pass(c, 1000, f), 0);
  assert_false(vg_compute_judged(c, "GPU-zero"));
  assert_true(vg_compute_judged(c, "GPU-one"));
  assert_true(vg_compute_judged(c, "GPU-never-seen"));
  bool over;
  assert_int_equal(reading(c, SLOT_A, &over), 1000);
  feed(0, VG_GPU_UTIL_OK, a, 1); /* supported again (a driver update) */
  assert_int_equal(pass(c, 2000, f), 1);
  assert_true(vg_compute_judged(c, "GPU-zero"));
  assert_int_equal(vg_compute_pass(c, gpus, 2, listed + 1, 3, 3000, f, 8), 0); /* A gone */
  assert_int_equal(reading(c, SLOT_A, &over), 1000);
  vg_compute_free(c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_mountinfo),     cmocka_unit_test(test_mountinfo_region_mount),
      cmocka_unit_test(test_proc_slot),     cmocka_unit_test(test_over),
      cmocka_unit_test(test_compute_over),  cmocka_unit_test(test_compute_step),
      cmocka_unit_test(test_compute_pass),  cmocka_unit_test(test_compute_episodes),
      cmocka_unit_test(test_compute_share), cmocka_unit_test(test_compute_unsupported),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
