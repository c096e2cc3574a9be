/* test_devices.c -- which GPU is charged: per-device limits, the mapping
 * through CUDA_VISIBLE_DEVICES (indices and UUIDs) that HAMi gets wrong,
 * contexts that take their memory with them, and threads of one process
 * sharing its budget. */
#include "common.h"

static struct vg_run run;

/* A preloaded environment on two simulated 4 GiB GPUs. */
static void env_two_gpus(struct vg_env *env) {
  env_preloaded(env);
  vg_env_set(env, "VGPU_SIM_DEVICES", "2");
}

static void test_per_device_limits(void **s) {
  (void)s;
  struct vg_env env;
  env_two_gpus(&env);
  vg_env_set(&env, "CUDA_DEVICE_MEMORY_LIMIT", "100m");
  vg_env_set(&env, "CUDA_DEVICE_MEMORY_LIMIT_1", "40m");
  run_probe(&env, &run, "alloc", "mem", "10m", "100", NULL);
  assert_int_equal(json_num(run.out, "allocated"), 10);
  vg_env_set(&env, "PROBE_DEVICE", "1");
  run_probe(&env, &run, "alloc", "mem", "10m", "100", NULL);
  assert_int_equal(json_num(run.out, "allocated"), 4);
  assert_int_equal(json_num(run.out, "total"), 40 * MiB);
  vg_env_cleanup(&env);
}

/* cuMemAllocAsync on a stream of GPU 1 while GPU 0's context is current:
 * the memory lands on GPU 1, so GPU 1's limit must stop it, and GPU 0's
 * budget must not be touched (libvgpu once charged the current device). */
static void test_async_on_other_devices_stream(void **s) {
  (void)s;
  struct vg_env env;
  env_two_gpus(&env);
  vg_env_set(&env, "CUDA_DEVICE_MEMORY_LIMIT_0", "100m");
  vg_env_set(&env, "CUDA_DEVICE_MEMORY_LIMIT_1", "40m");
  vg_env_set(&env, "PROBE_DEVICE", "0");
  vg_env_set(&env, "PROBE_STREAM_DEVICE", "1");
  run_probe(&env, &run, "alloc", "xasync", "10m", "100", NULL);
  assert_int_equal(json_num(run.out, "allocated"), 4);    /* GPU 1's 40 MiB */
  assert_int_equal(json_num(run.out, "last_rc"), 2);      /* CUDA_ERROR_OUT_OF_MEMORY */
  assert_int_equal(json_num(run.out, "free"), 100 * MiB); /* GPU 0 (current): untouched */
  assert_int_equal(json_num(run.out, "free_rc"), 0);
  /* The same stream on the current device is charged there, as before. */
  vg_env_set(&env, "PROBE_STREAM_DEVICE", "0");
  run_probe(&env, &run, "alloc", "xasync", "10m", "100", NULL);
  assert_int_equal(json_num(run.out, "allocated"), 10);
  vg_env_cleanup(&env);
}

/* CUDA ordinal 0 is physical GPU 1: the limit and the charge land there,
 * and NVML (which ignores CUDA_VISIBLE_DEVICES) shows it on index 1 only. */
static void visible_second_gpu(const char *visible) {
  struct vg_env env;
  env_two_gpus(&env);
  vg_env_set(&env, "CUDA_VISIBLE_DEVICES", visible);
  vg_env_set(&env, "CUDA_DEVICE_MEMORY_LIMIT_0", "100m");
  run_probe(&env, &run, "alloc", "mem", "10m", "100", "3");
  assert_int_equal(json_num(run.out, "allocated"), 10);
  vg_env_set(&env, "PROBE_NVML_INDEX", "1");
  run_probe(&env, &run, "meminfo", NULL, NULL, NULL, NULL);
  assert_int_equal(json_num(run.out, "nvml_total"), 100 * MiB);
  assert_int_equal(json_num(run.out, "total"), 100 * MiB);
  vg_env_set(&env, "PROBE_NVML_INDEX", "0");
  run_probe(&env, &run, "meminfo", NULL, NULL, NULL, NULL);
  assert_int_equal(json_num(run.out, "nvml_total"), 4096 * MiB); /* not ours: untouched */
  vg_env_cleanup(&env);
}

static void test_visible_by_index(void **s) {
  (void)s;
  visible_second_gpu("1");
}

static void test_visible_by_uuid(void **s) {
  (void)s;
  visible_second_gpu("GPU-5a1a0000-0000-4000-8000-000000000001");
}

static void teardown_refunds(const char *how) {
  struct vg_env env;
  env_preloaded(&env);
  vg_env_set(&env, "CUDA_DEVICE_MEMORY_LIMIT", "100m");
  run_probe(&env, &run, "teardown", how, "10m", "6", NULL);
  assert_int_equal(json_num(run.out, "before"), 6);
  /* refunded at the teardown itself, not later when addresses are reused */
  assert_int_equal(json_num(run.out, "free_after_teardown"), 100 * MiB);
  assert_int_equal(json_num(run.out, "after"), 10); /* all 100 MiB again */
  assert_int_equal(json_num(run.out, "last_rc"), 2);
  vg_env_cleanup(&env);
}

static void test_reset_refunds(void **s) {
  (void)s;
  teardown_refunds("reset");
}
static void test_release_refunds(void **s) {
  (void)s;
  teardown_refunds("release");
}
static void test_destroy_refunds(void **s) {
  (void)s;
  teardown_refunds("destroy");
}

static void test_threads_share_budget(void **s) {
  (void)s;
  struct vg_env env;
  env_preloaded(&env);
  vg_env_set(&env, "CUDA_DEVICE_MEMORY_LIMIT", "300m");
  run_probe(&env, &run, "threads", "8", "2m", NULL, NULL);
  assert_int_equal(json_num(run.out, "allocated"), 150);
  vg_env_cleanup(&env);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_per_device_limits),
      cmocka_unit_test(test_async_on_other_devices_stream),
      cmocka_unit_test(test_visible_by_index),
      cmocka_unit_test(test_visible_by_uuid),
      cmocka_unit_test(test_reset_refunds),
      cmocka_unit_test(test_release_refunds),
      cmocka_unit_test(test_destroy_refunds),
      cmocka_unit_test(test_threads_share_budget),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
