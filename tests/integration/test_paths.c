/* test_paths.c -- the three ways a program reaches the driver are all
 * intercepted: direct linking, dlopen + dlsym, and cuGetProcAddress (with
 * the requested version and per-thread-stream flag honoured); and our dlsym
 * keeps RTLD_NEXT working for other interposers. */
#include "common.h"

static struct vg_run run;

static void test_direct_link(void **s) {
  (void)s;
  struct vg_env env;
  env_preloaded(&env);
  vg_env_set(&env, "CUDA_DEVICE_MEMORY_LIMIT", "100m");
  run_probe(&env, &run, "alloc", "mem", "10m", "50", NULL);
  assert_int_equal(json_num(run.out, "allocated"), 10);
  vg_env_cleanup(&env);
}

static void test_without_preload_no_limit(void **s) {
  (void)s;
  struct vg_env env;
  vg_env_init(&env, false);
  vg_env_set(&env, "VGPU_SIM_MEMORY", "4g");
  vg_env_set(&env, "CUDA_DEVICE_MEMORY_LIMIT", "100m");
  run_probe(&env, &run, "alloc", "mem", "10m", "50", NULL);
  assert_int_equal(json_num(run.out, "allocated"), 50); /* control: the limit is ours */
  vg_env_cleanup(&env);
}

static void test_dlopen_dlsym(void **s) {
  (void)s;
  struct vg_env env;
  env_preloaded(&env);
  vg_env_set(&env, "CUDA_DEVICE_MEMORY_LIMIT", "100m");
  run_probe(&env, &run, "dl", "10m", "50", NULL, NULL);
  assert_int_equal(json_num(run.out, "hooked"), 1);
  assert_int_equal(json_num(run.out, "allocated"), 10);
  assert_int_equal(json_num(run.out, "last_rc"), 2);
  assert_int_equal(json_num(run.out, "total"), 100 * MiB);
  vg_env_cleanup(&env);
}

static void test_get_proc_address(void **s) {
  (void)s;
  struct vg_env env;
  env_preloaded(&env);
  vg_env_set(&env, "CUDA_DEVICE_MEMORY_LIMIT", "100m");
  run_probe(&env, &run, "gpa", "10m", "50", NULL, NULL);
  assert_int_equal(json_num(run.out, "is_hook"), 1);
  assert_int_equal(json_num(run.out, "ptsz_is_hook"), 1);
  assert_int_equal(json_num(run.out, "allocated"), 10);
  assert_int_equal(json_num(run.out, "last_rc"), 2);
  /* cuMemAlloc for CUDA 3.1 is the legacy 32-bit entry, which the
   * simulator does not export: the driver's answer passes through. */
  assert_int_equal(json_num(run.out, "old_rc"), 500);
  assert_int_equal(json_num(run.out, "old_status"), 2);
  vg_env_cleanup(&env);
}

static void test_rtld_next_preserved(void **s) {
  (void)s;
  struct vg_env env;
  env_preloaded(&env);
  char prog[512], libs[1024];
  snprintf(prog, sizeof(prog), "%s", vg_build_path("tests/next_main"));
  snprintf(libs, sizeof(libs), "%s:%s", vg_build_path("tests"), vg_build_path("sim"));
  vg_env_set(&env, "LD_LIBRARY_PATH", libs);
  char *argv[] = {prog, NULL};
  assert_int_equal(vg_run(&env, argv, &run), 0);
  assert_int_equal(json_num(run.out, "next"), 107);
  vg_env_cleanup(&env);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_direct_link),         cmocka_unit_test(test_without_preload_no_limit),
      cmocka_unit_test(test_dlopen_dlsym),        cmocka_unit_test(test_get_proc_address),
      cmocka_unit_test(test_rtld_next_preserved),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
