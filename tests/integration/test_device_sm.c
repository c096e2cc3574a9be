/* test_device_sm.c -- per-device compute limits on a simulated machine with
 * two GPUs: CUDA_DEVICE_SM_LIMIT_<i> limits CUDA device i alone, and wins
 * over CUDA_DEVICE_SM_LIMIT. Bounds are generous on purpose: accuracy is
 * measured by bench/sm-accuracy.sh. */
#include <stdlib.h>

#include "common.h"

static struct vg_run run;

/* The simulated GPU's capacity for `probe launch kernel`: one 100 us wave
 * (432 blocks of 256 threads on 108 SMs) per kernel. Shares are taken of it
 * rather than of a measured unlimited rate, which load can only lower. */
#define WAVES_PER_S 10000.0

/* A preloaded environment on two simulated 4 GiB GPUs. */
static void env_two_gpus(struct vg_env *env) {
  env_preloaded(env);
  vg_env_set(env, "VGPU_SIM_DEVICES", "2");
  vg_env_set(env, "VGPU_SIM_SMS", "108");
  vg_env_set(env, "VGPU_SIM_WAVE_US", "100");
}

/* Share of CUDA device dev that `probe launch kernel 0.5` got in env. */
static double share(struct vg_env *env, int dev) {
  vg_env_set(env, "PROBE_DEVICE", dev == 0 ? "0" : "1");
  return probe_launch_rate(env, &run, "kernel", "0.5") / WAVES_PER_S;
}

/* limited must be throttled to about 20 %; free must not be (at least twice
 * as fast, so that load on the machine cannot fake it). */
static void check(double limited, double free, const char *what) {
  if (limited < 0.05 || limited > 0.60 || free < 2 * limited)
    fail_msg("%s: the limited device got %.1f%%, the other %.1f%%", what, 100 * limited,
             100 * free);
}

static void test_device_limit_applies_to_that_device_only(void **s) {
  (void)s;
  struct vg_env env;
  env_two_gpus(&env);
  vg_env_set(&env, "CUDA_DEVICE_SM_LIMIT_1", "20");
  double d1 = share(&env, 1), d0 = share(&env, 0);
  check(d1, d0, "CUDA_DEVICE_SM_LIMIT_1=20");
  vg_env_cleanup(&env);
}

static void test_device_limit_wins_over_global(void **s) {
  (void)s;
  struct vg_env env;
  env_two_gpus(&env);
  vg_env_set(&env, "CUDA_DEVICE_SM_LIMIT", "20");
  vg_env_set(&env, "CUDA_DEVICE_SM_LIMIT_1", "100");
  double d1 = share(&env, 1), d0 = share(&env, 0);
  check(d0, d1, "CUDA_DEVICE_SM_LIMIT=20 CUDA_DEVICE_SM_LIMIT_1=100");
  vg_env_cleanup(&env);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_device_limit_applies_to_that_device_only),
      cmocka_unit_test(test_device_limit_wins_over_global),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
