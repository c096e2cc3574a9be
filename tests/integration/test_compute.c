/* test_compute.c -- the compute limit holds on the simulated GPU for every
 * way work is submitted, for the container as a whole, and follows live
 * changes. Bounds are generous on purpose: accuracy is measured by
 * bench/sm-accuracy.sh, not asserted here. */
#include <signal.h>
#include <stdlib.h>

#include "common.h"

static struct vg_run run;

static double rate(struct vg_env *env, const char *kind, const char *seconds) {
  return probe_launch_rate(env, &run, kind, seconds);
}

static double g_unlimited;

static int measure_unlimited(void **s) {
  (void)s;
  struct vg_env env;
  env_preloaded(&env);
  g_unlimited = rate(&env, "kernel", "0.6");
  vg_env_cleanup(&env);
  return g_unlimited > 0 ? 0 : -1;
}

static void limited_kind(const char *kind) {
  struct vg_env env;
  env_preloaded(&env);
  vg_env_set(&env, "CUDA_DEVICE_SM_LIMIT", "25");
  double share = rate(&env, kind, "0.6") / g_unlimited;
  if (share < 0.12 || share > 0.40) fail_msg("%s at 25%%: got %.1f%%", kind, 100 * share);
  vg_env_cleanup(&env);
}

static void test_kernel(void **s) {
  (void)s;
  limited_kind("kernel");
}
static void test_ptsz(void **s) {
  (void)s;
  limited_kind("ptsz");
}
static void test_ex(void **s) {
  (void)s;
  limited_kind("ex");
}
static void test_cooperative(void **s) {
  (void)s;
  limited_kind("coop");
}
static void test_graph(void **s) {
  (void)s;
  limited_kind("graph");
}
static void test_captured_graph(void **s) {
  (void)s;
  limited_kind("capture");
}

/* vgpu-burn's kernels/s (one batch per kernel once kernels are long: launch,
 * synchronise, launch...) in env. */
static double shape_rate(struct vg_env *env, const char *shape, const char *seconds) {
  char burn[512];
  snprintf(burn, sizeof(burn), "%s", vg_build_path("bin/vgpu-burn"));
  char *argv[] = {burn,       "--shape", (char *)shape, "--seconds", (char *)seconds,
                  "--warmup", "0.3",     "--json",      NULL};
  if (vg_run(env, argv, &run) != 0) fail_msg("vgpu-burn: %s", run.err);
  const char *k = strstr(run.out, "\"kernels_per_s\":");
  if (k == NULL) fail_msg("no kernels_per_s: %s", run.out);
  return atof(k + strlen("\"kernels_per_s\":"));
}

static double burn_rate(struct vg_env *env, const char *seconds) {
  return shape_rate(env, "big", seconds);
}

/* Short kernels on a GPU with the H200's timing, where an event record
 * takes 1.5 us of GPU time beside 8 us kernels: charging the events too
 * gave 0.84 of the limit on the real H200 (75 % at 90) and 78 % here. The
 * estimator takes an event's own time off. Bounds are loose; sm-accuracy
 * (--shapes small,mix) measures. */
static void test_short_kernels_get_their_limit(void **s) {
  (void)s;
  struct vg_env env;
  env_preloaded(&env);
  vg_env_set(&env, "VGPU_SIM_TIMING", "h200");
  /* Without the 3.2 us host time per launch: on a loaded CI machine the
   * spin made the loop host-bound (the error is in the events' GPU time). */
  vg_env_set(&env, "VGPU_SIM_LAUNCH_NS", "0");
  double unlimited = shape_rate(&env, "small", "1");
  vg_env_set(&env, "CUDA_DEVICE_SM_LIMIT", "90");
  double share = shape_rate(&env, "small", "1.5") / unlimited;
  if (share < 0.84 || share > 1.05)
    fail_msg("8 us kernels at 90%%: got %.1f%% (unlimited %.1f/s)", 100 * share, unlimited);
  vg_env_cleanup(&env);
}

/* Kernels longer than the bucket's 20 ms: a 90 % limit on 40 ms kernels
 * used to give 62 % (what a kernel earned while it ran was cut at 18 ms).
 * Bounds are loose; bench/sm-accuracy.sh (long30, long100) measures. */
static void test_long_kernels_get_their_limit(void **s) {
  (void)s;
  struct vg_env env;
  env_preloaded(&env);
  vg_env_set(&env, "VGPU_SIM_WAVE_US", "10000"); /* big = 4 waves: 40 ms */
  double unlimited = burn_rate(&env, "1");
  vg_env_set(&env, "CUDA_DEVICE_SM_LIMIT", "90");
  double share = burn_rate(&env, "1.5") / unlimited;
  if (share < 0.78 || share > 1.02)
    fail_msg("40 ms kernels at 90%%: got %.1f%% (unlimited %.1f/s)", 100 * share, unlimited);
  vg_env_cleanup(&env);
}

static void test_unlimited_is_not_throttled(void **s) {
  (void)s;
  struct vg_env env;
  env_preloaded(&env);
  vg_env_set(&env, "CUDA_DEVICE_SM_LIMIT", "0");
  double share = rate(&env, "kernel", "0.6") / g_unlimited;
  if (share < 0.7) fail_msg("no limit, yet %.1f%% of the unlimited rate", 100 * share);
  vg_env_cleanup(&env);
}

/* Two processes of one container share one limit. */
static void test_limit_is_per_container(void **s) {
  (void)s;
  struct vg_env env;
  env_preloaded(&env);
  vg_env_set(&env, "CUDA_DEVICE_SM_LIMIT", "40");
  pid_t a = spawn_probe(&env, "launch", "kernel", "1.5", NULL, NULL, NULL);
  pid_t b = spawn_probe(&env, "launch", "kernel", "1.5", NULL, NULL, NULL);
  assert_int_equal(vg_wait(a), 0);
  assert_int_equal(vg_wait(b), 0);
  double total = 0;
  pid_t pids[2] = {a, b};
  for (int i = 0; i < 2; i++) {
    char out[8192];
    unsigned long long per_s = 0;
    vg_spawn_output(&env, pids[i], out, sizeof(out));
    assert_true(vg_json_u64(out, "per_s", &per_s));
    total += (double)per_s;
  }
  double share = total / g_unlimited;
  if (share < 0.28 || share > 0.55) fail_msg("two processes at 40%%: together %.1f%%", 100 * share);
  vg_env_cleanup(&env);
}

/* Mean rate of the last n interval lines of out (-1: fewer than n). */
static double last_intervals(const char *out, int n) {
  const char *at[64];
  int count = 0;
  for (const char *q = strstr(out, "interval_per_s"); q && count < 64;
       q = strstr(q + 1, "interval_per_s"))
    at[count++] = q;
  if (count < n) return -1;
  double sum = 0;
  for (int i = count - n; i < count; i++) sum += atof(at[i] + strlen("interval_per_s") + 2);
  return sum / n;
}

/* Rate of the last interval line before the summary line of out. */
static double last_interval(const char *out) { return last_intervals(out, 1); }

static double first_interval(const char *out) {
  const char *p = strstr(out, "interval_per_s");
  return p != NULL ? atof(p + strlen("interval_per_s") + 2) : -1;
}

static void test_vgpu_set_changes_running_process(void **s) {
  (void)s;
  struct vg_env env;
  env_preloaded(&env);
  vg_env_set(&env, "CUDA_DEVICE_SM_LIMIT", "10");
  char vgpu[512];
  snprintf(vgpu, sizeof(vgpu), "%s", vg_build_path("bin/vgpu"));
  pid_t p = spawn_probe(&env, "launch", "kernel", "2.5", "400", NULL, NULL);
  usleep(1200000);
  char *set[] = {vgpu, "set", "--cores", "80", NULL};
  struct vg_run r;
  assert_int_equal(vg_run(&env, set, &r), 0);
  assert_int_equal(vg_wait(p), 0);
  char out[16384];
  vg_spawn_output(&env, p, out, sizeof(out));
  double before = first_interval(out) / g_unlimited, after = last_interval(out) / g_unlimited;
  if (before > 0.3 || after < 0.5)
    fail_msg("10%% then 80%%: %.1f%% then %.1f%%", 100 * before, 100 * after);
  vg_env_cleanup(&env);
}

/* Seed 001: a new process with CUDA_DEVICE_SM_LIMIT changes the container's
 * limit, and processes already running follow it. */
static void test_new_process_changes_limit(void **s) {
  (void)s;
  struct vg_env env;
  env_preloaded(&env);
  vg_env_set(&env, "CUDA_DEVICE_SM_LIMIT", "80");
  pid_t p = spawn_probe(&env, "launch", "kernel", "2.5", "400", NULL, NULL);
  usleep(1000000);
  vg_env_set(&env, "CUDA_DEVICE_SM_LIMIT", "10");
  rate(&env, "kernel", "0.2");
  assert_int_equal(vg_wait(p), 0);
  char out[16384];
  vg_spawn_output(&env, p, out, sizeof(out));
  double before = first_interval(out) / g_unlimited, after = last_interval(out) / g_unlimited;
  if (before < 0.5 || after > 0.3)
    fail_msg("80%% then 10%%: %.1f%% then %.1f%%", 100 * before, 100 * after);
  vg_env_cleanup(&env);
}

static void test_status_shows_limit_and_use(void **s) {
  (void)s;
  struct vg_env env;
  env_preloaded(&env);
  vg_env_set(&env, "CUDA_DEVICE_SM_LIMIT", "30");
  char vgpu[512];
  snprintf(vgpu, sizeof(vgpu), "%s", vg_build_path("bin/vgpu"));
  pid_t p = spawn_probe(&env, "launch", "kernel", "2.6", NULL, NULL, NULL);
  usleep(2300000);
  char *status[] = {vgpu, "status", NULL};
  assert_int_equal(vg_run(&env, status, &run), 0);
  assert_int_equal(vg_wait(p), 0);
  if (strstr(run.out, "30% (hard)") == NULL) fail_msg("status: %s", run.out);
  const char *used = strstr(run.out, "(hard)");
  double pct = used != NULL ? atof(used + 6) : -1;
  if (pct < 15 || pct > 45) fail_msg("SM used %.1f%% at a 30%% limit: %s", pct, run.out);
  vg_env_cleanup(&env);
}

/* VGPU_SM_POLICY=share: alone, a tenant borrows idle time; when another
 * container starts working, it gives the time back, all of it, within a
 * second. 10 runs on the simulator: 0.74-0.75 of the unlimited rate; when
 * lending followed the neighbour's measured use alone (limiter.c,
 * revise_borrow), 0.54-0.75, 4 of them under 0.70. */
static void test_share_policy_borrows_and_returns(void **s) {
  (void)s;
  struct vg_env a;
  env_preloaded(&a);
  vg_env_set(&a, "VGPU_SM_POLICY", "share");
  vg_env_set(&a, "CUDA_DEVICE_SM_LIMIT", "20");
  char cache_b[400];
  pid_t pa = spawn_probe(&a, "launch", "kernel", "6", "500", NULL, NULL);
  usleep(2000000);
  /* B: another container (its own region file) on the same GPU, hard 70 %. */
  snprintf(cache_b, sizeof(cache_b), "%s/b.cache", a.dir);
  vg_env_set(&a, "CUDA_DEVICE_MEMORY_SHARED_CACHE", cache_b);
  vg_env_set(&a, "VGPU_SM_POLICY", "hard");
  vg_env_set(&a, "CUDA_DEVICE_SM_LIMIT", "70");
  pid_t pb = spawn_probe(&a, "launch", "kernel", "3.5", "500", NULL, NULL);
  assert_int_equal(vg_wait(pb), 0);
  assert_int_equal(vg_wait(pa), 0);
  char out[16384];
  vg_spawn_output(&a, pa, out, sizeof(out));
  double alone = first_interval(out) / g_unlimited;
  const char *third = strstr(out, "\"t\":1.5");
  double borrowed = third != NULL ? atof(strstr(third, "interval_per_s") + 16) / g_unlimited : 0;
  vg_spawn_output(&a, pb, out, sizeof(out));
  double neighbour = last_intervals(out, 4) / g_unlimited; /* from 1 s after its start */
  if (borrowed < 0.5)
    fail_msg("alone at 20%% (share): only %.1f%% (first %.1f%%)", 100 * borrowed, 100 * alone);
  if (neighbour < 0.65)
    fail_msg("neighbour at 70%% got %.1f%% from 1 s after its start", 100 * neighbour);
  vg_env_cleanup(&a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_kernel),
      cmocka_unit_test(test_ptsz),
      cmocka_unit_test(test_ex),
      cmocka_unit_test(test_cooperative),
      cmocka_unit_test(test_graph),
      cmocka_unit_test(test_captured_graph),
      cmocka_unit_test(test_unlimited_is_not_throttled),
      cmocka_unit_test(test_long_kernels_get_their_limit),
      cmocka_unit_test(test_short_kernels_get_their_limit),
      cmocka_unit_test(test_limit_is_per_container),
      cmocka_unit_test(test_vgpu_set_changes_running_process),
      cmocka_unit_test(test_new_process_changes_limit),
      cmocka_unit_test(test_status_shows_limit_and_use),
      cmocka_unit_test(test_share_policy_borrows_and_returns),
  };
  return cmocka_run_group_tests(tests, measure_unlimited, NULL);
}
