/* test_config.c -- limits from the environment: precedence and errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "config.h"

static void test_precedence(void **s) {
  (void)s;
  char *env[] = {"CUDA_DEVICE_MEMORY_LIMIT_1=1g",
                 "CUDA_DEVICE_MEMORY_LIMIT=300m",
                 "CUDA_DEVICE_SM_LIMIT=30",
                 "CUDA_DEVICE_SM_LIMIT_2=0",
                 "CUDA_DEVICE_MEMORY_SHARED_CACHE=/x/d.cache",
                 "OTHER=1",
                 NULL};
  struct vg_config cfg;
  struct vg_err err;
  assert_int_equal(vg_config_load(&cfg, env, &err), 0);
  assert_true(cfg.mem_set[0]);
  assert_int_equal(cfg.mem_limit[0], 300ULL << 20);
  assert_int_equal(cfg.mem_limit[1], 1ULL << 30);
  assert_int_equal(cfg.mem_limit[15], 300ULL << 20);
  assert_int_equal(cfg.sm_limit[0], 30);
  assert_int_equal(cfg.sm_limit[2], 0);
  assert_true(cfg.sm_set[2]);
  assert_string_equal(cfg.region_path, "/x/d.cache");
}

static void test_defaults(void **s) {
  (void)s;
  char *env[] = {"PATH=/bin", NULL};
  struct vg_config cfg;
  struct vg_err err;
  assert_int_equal(vg_config_load(&cfg, env, &err), 0);
  assert_false(cfg.mem_set[0]);
  assert_false(cfg.refuse_managed);
  assert_string_equal(cfg.region_path, VG_DEFAULT_REGION_PATH);
}

/* A limit in decimal units is kept (powers of ten), and noted once. */
static void test_decimal_limit_noted(void **s) {
  (void)s;
  char *env[] = {"CUDA_DEVICE_MEMORY_LIMIT_0=300Mb", "CUDA_DEVICE_MEMORY_LIMIT_1=1GB", NULL};
  struct vg_config cfg;
  struct vg_err err;
  assert_int_equal(vg_config_load(&cfg, env, &err), 0);
  assert_int_equal(cfg.mem_limit[0], 300000000ULL);
  assert_int_equal(cfg.mem_limit[1], 1000000000ULL);
  assert_non_null(strstr(cfg.note, "CUDA_DEVICE_MEMORY_LIMIT_0=300Mb means 300000000 bytes"));
  char *binary[] = {"CUDA_DEVICE_MEMORY_LIMIT=300m", NULL};
  assert_int_equal(vg_config_load(&cfg, binary, &err), 0);
  assert_string_equal(cfg.note, "");
}

static void bad(char *entry, const char *reason) {
  char *env[] = {entry, NULL};
  struct vg_config cfg;
  struct vg_err err;
  assert_int_equal(vg_config_load(&cfg, env, &err), -1);
  size_t name = strcspn(entry, "=");
  if (strncmp(err.msg, entry, name) != 0 || strstr(err.msg, reason) == NULL)
    fail_msg("%s: message '%s'", entry, err.msg);
}

static void test_errors(void **s) {
  (void)s;
  bad("CUDA_DEVICE_MEMORY_LIMIT=abc", "start with a digit");
  bad("CUDA_DEVICE_MEMORY_LIMIT_3=1Gx", "unknown unit");
  bad("CUDA_DEVICE_MEMORY_LIMIT_16=1g", "device index");
  bad("CUDA_DEVICE_MEMORY_LIMIT_=1g", "device index");
  bad("CUDA_DEVICE_MEMORY_LIMIT_0x=1g", "device index");
  bad("CUDA_DEVICE_SM_LIMIT=abc", "0 to 100");
  bad("CUDA_DEVICE_SM_LIMIT_1=200", "0 to 100");
  bad("VGPU_MANAGED_MEMORY=maybe", "'count' or 'refuse'");
  bad("CUDA_DEVICE_MEMORY_LIMIT=", "empty");
  bad("VGPU_SM_POLICY=soft", "'hard' or 'share'");
  bad("VGPU_LIMITS_TIMEOUT=-1", "0 to 3600");
  bad("VGPU_LIMITS_TIMEOUT=5s", "0 to 3600");
  bad("VGPU_LIMITS_TIMEOUT=9999", "0 to 3600");
}

static void test_managed_switch(void **s) {
  (void)s;
  char *env[] = {"VGPU_MANAGED_MEMORY=refuse", "VGPU_SM_POLICY=share", NULL};
  struct vg_config cfg;
  struct vg_err err;
  assert_int_equal(vg_config_load(&cfg, env, &err), 0);
  assert_true(cfg.refuse_managed);
  assert_true(cfg.sm_policy_set);
  assert_int_equal(cfg.sm_policy, VG_SM_POLICY_SHARE);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_precedence),          cmocka_unit_test(test_defaults),
      cmocka_unit_test(test_decimal_limit_noted), cmocka_unit_test(test_errors),
      cmocka_unit_test(test_managed_switch),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
