/* test_memory_limit.c -- every way of taking device memory is counted
 * against the container limit, stops cleanly with CUDA_ERROR_OUT_OF_MEMORY
 * and is given back by its free. */
#include "common.h"

static struct vg_run run;

static void limit_stops_kind(const char *kind, const char *size, unsigned long long expect) {
  struct vg_env env;
  env_preloaded(&env);
  vg_env_set(&env, "CUDA_DEVICE_MEMORY_LIMIT", "64m");
  assert_int_equal(run_probe(&env, &run, "alloc", kind, size, "100", NULL), 0);
  assert_int_equal(json_num(run.out, "allocated"), expect);
  assert_int_equal(json_num(run.out, "last_rc"), 2); /* CUDA_ERROR_OUT_OF_MEMORY */
  assert_int_equal(json_num(run.out, "total"), 64 * MiB);
  assert_int_equal(json_num(run.out, "free_rc"), 0);
  assert_int_equal(json_num(run.out, "free_after"), 64 * MiB);
  vg_env_cleanup(&env);
}

static void test_mem(void **s) {
  (void)s;
  limit_stops_kind("mem", "8m", 8);
}
static void test_mem_rounds_to_pages(void **s) {
  (void)s;
  limit_stops_kind("mem", "3m", 16);
}
static void test_pitch(void **s) {
  (void)s;
  limit_stops_kind("pitch", "8m", 8);
}
static void test_managed(void **s) {
  (void)s;
  limit_stops_kind("managed", "8m", 8);
}
static void test_async(void **s) {
  (void)s;
  limit_stops_kind("async", "8m", 8);
}
static void test_pool(void **s) {
  (void)s;
  limit_stops_kind("pool", "8m", 8);
}
static void test_vmm(void **s) {
  (void)s;
  limit_stops_kind("vmm", "8m", 8);
}
/* Released right after mapping, as NVIDIA's samples do: the memory lives
 * until unmapped, so it must stay charged until then. */
static void test_vmm_mapped_after_release(void **s) {
  (void)s;
  limit_stops_kind("vmmmap", "8m", 8);
}
static void test_array(void **s) {
  (void)s;
  limit_stops_kind("array", "8m", 8);
}
static void test_array3d(void **s) {
  (void)s;
  limit_stops_kind("array3d", "8m", 8);
}
static void test_mipmap(void **s) {
  (void)s;
  limit_stops_kind("mipmap", "8m", 8);
}

static void test_seed_200m(void **s) {
  (void)s;
  struct vg_env env;
  env_preloaded(&env);
  vg_env_set(&env, "CUDA_DEVICE_MEMORY_LIMIT_0", "200m");
  run_probe(&env, &run, "alloc", "mem", "10m", "1000", NULL);
  assert_int_equal(json_num(run.out, "allocated"), 20);
  assert_int_equal(json_num(run.out, "last_rc"), 2);
  assert_int_equal(json_num(run.out, "free"), 0);
  vg_env_cleanup(&env);
}

static void test_no_limit_passes_through(void **s) {
  (void)s;
  struct vg_env env;
  env_preloaded(&env);
  run_probe(&env, &run, "meminfo", NULL, NULL, NULL, NULL);
  assert_int_equal(json_num(run.out, "total"), 4096 * MiB);
  assert_int_equal(json_num(run.out, "device_total"), 4096 * MiB);
  assert_int_equal(json_num(run.out, "nvml_total"), 4096 * MiB);
  vg_env_cleanup(&env);
}

static void test_views_agree(void **s) {
  (void)s;
  struct vg_env env;
  env_preloaded(&env);
  vg_env_set(&env, "CUDA_DEVICE_MEMORY_LIMIT", "300m");
  run_probe(&env, &run, "meminfo", NULL, NULL, NULL, NULL);
  assert_int_equal(json_num(run.out, "rc"), 0);
  assert_int_equal(json_num(run.out, "total"), 300 * MiB);
  assert_int_equal(json_num(run.out, "free"), 300 * MiB);
  assert_int_equal(json_num(run.out, "device_total"), 300 * MiB);
  assert_int_equal(json_num(run.out, "nvml_rc"), 0);
  assert_int_equal(json_num(run.out, "nvml_total"), 300 * MiB);
  assert_int_equal(json_num(run.out, "nvml_free"), 300 * MiB);
  assert_int_equal(json_num(run.out, "nvml_used"), 0);
  assert_int_equal(json_num(run.out, "nvml2_rc"), 0);
  assert_int_equal(json_num(run.out, "nvml2_total"), 300 * MiB);
  vg_env_cleanup(&env);
}

static void test_limit_above_physical(void **s) {
  (void)s;
  struct vg_env env;
  env_preloaded(&env);
  vg_env_set(&env, "CUDA_DEVICE_MEMORY_LIMIT", "64g");
  run_probe(&env, &run, "meminfo", NULL, NULL, NULL, NULL);
  assert_int_equal(json_num(run.out, "total"), 4096 * MiB);
  assert_int_equal(json_num(run.out, "nvml_total"), 4096 * MiB);
  vg_env_cleanup(&env);
}

static void test_managed_refused_when_asked(void **s) {
  (void)s;
  struct vg_env env;
  env_preloaded(&env);
  vg_env_set(&env, "CUDA_DEVICE_MEMORY_LIMIT", "64m");
  vg_env_set(&env, "VGPU_MANAGED_MEMORY", "refuse");
  run_probe(&env, &run, "alloc", "managed", "8m", "4", NULL);
  assert_int_equal(json_num(run.out, "allocated"), 0);
  assert_int_equal(json_num(run.out, "last_rc"), 801); /* CUDA_ERROR_NOT_SUPPORTED */
  assert_non_null(strstr(run.err, "VGPU_MANAGED_MEMORY=refuse"));
  vg_env_cleanup(&env);
}

static void test_unknown_free_reaches_driver(void **s) {
  (void)s;
  struct vg_env env;
  env_preloaded(&env);
  vg_env_set(&env, "CUDA_DEVICE_MEMORY_LIMIT", "64m");
  run_probe(&env, &run, "freebad", NULL, NULL, NULL, NULL);
  assert_int_equal(json_num(run.out, "rc"), 1); /* the driver's CUDA_ERROR_INVALID_VALUE */
  vg_env_cleanup(&env);
}

static void test_driver_failure_refunds(void **s) {
  (void)s;
  struct vg_env env;
  env_preloaded(&env);
  vg_env_set(&env, "CUDA_DEVICE_MEMORY_LIMIT", "100m");
  vg_env_set(&env, "VGPU_SIM_FAIL_ALLOC_AFTER", "3");
  run_probe(&env, &run, "alloc", "mem", "10m", "10", NULL);
  assert_int_equal(json_num(run.out, "allocated"), 3);
  assert_int_equal(json_num(run.out, "last_rc"), 2);
  /* the failed call's reservation went back: 100 - 3 x 10 */
  assert_int_equal(json_num(run.out, "free"), 70 * MiB);
  vg_env_cleanup(&env);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_mem),
      cmocka_unit_test(test_mem_rounds_to_pages),
      cmocka_unit_test(test_pitch),
      cmocka_unit_test(test_managed),
      cmocka_unit_test(test_async),
      cmocka_unit_test(test_pool),
      cmocka_unit_test(test_vmm),
      cmocka_unit_test(test_vmm_mapped_after_release),
      cmocka_unit_test(test_array),
      cmocka_unit_test(test_array3d),
      cmocka_unit_test(test_mipmap),
      cmocka_unit_test(test_seed_200m),
      cmocka_unit_test(test_no_limit_passes_through),
      cmocka_unit_test(test_views_agree),
      cmocka_unit_test(test_limit_above_physical),
      cmocka_unit_test(test_managed_refused_when_asked),
      cmocka_unit_test(test_unknown_free_reaches_driver),
      cmocka_unit_test(test_driver_failure_refunds),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
