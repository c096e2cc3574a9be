/* test_launch_paths.c -- the per-thread-default-stream (_ptsz) forms of
 * cuLaunchKernelEx, cuLaunchCooperativeKernel and cuGraphLaunch are throttled
 * by CUDA_DEVICE_SM_LIMIT whether the program links them directly or fetches
 * them with cuGetProcAddress_v2 or cuGetProcAddress (v1) and the per-thread
 * flag; and the v1 cuGetProcAddress hands out libvgpu's hooks, honouring the
 * requested CUDA version and the flag. Bounds are generous on purpose:
 * accuracy is measured by bench/sm-accuracy.sh. */
#include <stdlib.h>

#include "common.h"

static struct vg_run run;

static int run_paths(const struct vg_env *env, const char *a, const char *b, const char *c,
                     const char *d) {
  char prog[512];
  snprintf(prog, sizeof(prog), "%s", vg_build_path("tests/probe_paths"));
  char *argv[] = {prog, (char *)a, (char *)b, (char *)c, (char *)d, NULL};
  return vg_run(env, argv, &run);
}

/* The simulated GPU's capacity: every kernel the probe launches is one wave
 * (432 or 108 blocks of 256 threads on 108 SMs) of 100 us. Shares are taken
 * of it rather than of a measured unlimited rate, which load on the machine
 * can only lower. */
#define WAVES_PER_S 10000.0

static void env_sim(struct vg_env *env) {
  env_preloaded(env);
  vg_env_set(env, "VGPU_SIM_SMS", "108");
  vg_env_set(env, "VGPU_SIM_WAVE_US", "100");
}

/* Share of the GPU `probe_paths launch VIA KIND 0.5` got in env. */
static double share(const struct vg_env *env, const char *via, const char *kind) {
  if (run_paths(env, "launch", via, kind, "0.5") != 0)
    fail_msg("launch %s %s: %s %s", via, kind, run.out, run.err);
  unsigned long long per_s = 0;
  if (!vg_json_u64(run.out, "per_s", &per_s)) fail_msg("no rate: %s %s", run.out, run.err);
  if (json_num(run.out, "is_hook") != 1)
    fail_msg("%s_ptsz via %s is not libvgpu's: %s", kind, via, run.out);
  return (double)per_s / WAVES_PER_S;
}

/* KIND at 20 %, reached each of the three ways. */
static void limited_ptsz(const char *kind) {
  static const char *const vias[] = {"direct", "gpa2", "gpa1"};
  for (size_t i = 0; i < sizeof(vias) / sizeof(vias[0]); i++) {
    struct vg_env env;
    env_sim(&env);
    vg_env_set(&env, "CUDA_DEVICE_SM_LIMIT", "20");
    double got = share(&env, vias[i], kind);
    if (got < 0.05 || got > 0.60)
      fail_msg("%s_ptsz via %s at 20%%: got %.1f%%", kind, vias[i], 100 * got);
    vg_env_cleanup(&env);
  }
}

/* Control: without a limit the same launches get most of the GPU, so the
 * bounds above do tell throttled from not. */
static void test_unlimited_ptsz_is_not_throttled(void **s) {
  (void)s;
  struct vg_env env;
  env_sim(&env);
  double got = share(&env, "gpa2", "ex");
  if (got < 0.60) fail_msg("no limit, yet %.1f%% of the GPU", 100 * got);
  vg_env_cleanup(&env);
}

static void test_launch_kernel_ex_ptsz_is_limited(void **s) {
  (void)s;
  limited_ptsz("ex");
}

static void test_cooperative_ptsz_is_limited(void **s) {
  (void)s;
  limited_ptsz("coop");
}

static void test_graph_launch_ptsz_is_limited(void **s) {
  (void)s;
  limited_ptsz("graph");
}

/* The number key of the last run's output is want, or the test fails
 * showing the output. */
static void expect(const char *key, unsigned long long want) {
  unsigned long long got = json_num(run.out, key);
  if (got != want) fail_msg("%s: %llu, not %llu, in %s", key, got, want, run.out);
}

/* cuGetProcAddress (v1): our hooks for the variant the version and flag
 * select, and the memory limit holds through the pointers it returns. */
static void test_get_proc_address_v1(void **s) {
  (void)s;
  struct vg_env env;
  env_preloaded(&env);
  vg_env_set(&env, "CUDA_DEVICE_MEMORY_LIMIT", "100m");
  assert_int_equal(run_paths(&env, "gpa1", "10m", "50", NULL), 0);
  expect("is_hook", 1);
  expect("ptsz_is_hook", 1);
  expect("legacy_is_hook", 1);
  /* The version decides: 11.3 gets cuGetProcAddress, 12.0 its _v2 -- ours. */
  expect("gpa_11030_is_hook", 1);
  expect("gpa_12000_is_hook_v2", 1);
  /* cuCtxDestroy before CUDA 4.0 is not exported by the simulator: the
   * driver's CUDA_ERROR_NOT_FOUND passes through. */
  expect("old_rc", 500);
  expect("allocated", 10);
  expect("last_rc", 2);
  expect("allocated_async", 10);
  expect("last_async_rc", 2);
  vg_env_cleanup(&env);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_unlimited_ptsz_is_not_throttled),
      cmocka_unit_test(test_launch_kernel_ex_ptsz_is_limited),
      cmocka_unit_test(test_cooperative_ptsz_is_limited),
      cmocka_unit_test(test_graph_launch_ptsz_is_limited),
      cmocka_unit_test(test_get_proc_address_v1),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
