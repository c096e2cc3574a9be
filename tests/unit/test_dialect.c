/*
 * test_dialect.c -- the dialect table (src/common/dialect.c): every role has
 * a default name and a dialect, renames by the configuration's keys, names
 * looked up by role and role by name, and every malformed --resource
 * refused with a message naming what is wrong.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "dialect.h"

static void test_table_complete(void **s) {
  (void)s;
  for (int r = 0; r < VG_ROLE_COUNT; r++) {
    const struct vg_role_info *i = vg_role_info((enum vg_role)r);
    assert_non_null(i->default_name);
    assert_non_null(strchr(i->default_name, '/'));
    assert_true(i->dialect >= 0 && i->dialect < VG_DIALECT_COUNT);
    assert_int_equal(vg_resource_role(NULL, i->default_name), r); /* names are unique */
    if (i->key != NULL) assert_non_null(strstr(vg_resource_keys(), i->key));
  }
  assert_string_equal(vg_resource_keys(),
                      "vgpu.resourceName, vgpu.resourceMem, vgpu.resourceMemPercentage, "
                      "vgpu.resourceCores, gpushare.resourceName");
  assert_string_equal(vg_resource_name(NULL, VG_ROLE_VGPU_MEM), "nvidia.com/gpumem");
  assert_int_equal(vg_role_info(VG_ROLE_VGPU_MEM)->unit, VG_UNIT_MIB);
  assert_int_equal(vg_role_info(VG_ROLE_CCE_MEM)->memory_per_id, 128ULL << 20);
}

static void test_dialect_names(void **s) {
  (void)s;
  for (int d = 0; d < VG_DIALECT_COUNT; d++)
    assert_int_equal(vg_dialect_from_name(vg_dialect_name((enum vg_dialect)d)), d);
  assert_string_equal(vg_dialect_name(VG_DIALECT_TIMESLICING), "timeSlicing");
  assert_string_equal(vg_dialect_label(VG_DIALECT_TIMESLICING), "time-slicing");
  assert_int_equal(vg_dialect_from_name("mig"), VG_DIALECT_NONE);
  assert_int_equal(vg_dialect_from_name(NULL), VG_DIALECT_NONE);
  assert_string_equal(vg_dialect_name(VG_DIALECT_NONE), "unknown");
}

static void test_rename(void **s) {
  (void)s;
  struct vg_resource_names n;
  struct vg_err err = {{0}};
  vg_resource_names_default(&n);
  assert_int_equal(vg_resource_names_set(&n, "vgpu.resourceMem=example.com/vram", &err), 0);
  assert_string_equal(vg_resource_name(&n, VG_ROLE_VGPU_MEM), "example.com/vram");
  assert_int_equal(vg_resource_role(&n, "example.com/vram"), VG_ROLE_VGPU_MEM);
  assert_int_equal(vg_resource_role(&n, "nvidia.com/gpumem"), -1);
  assert_int_equal(vg_resource_role(NULL, "nvidia.com/gpumem"), VG_ROLE_VGPU_MEM);
  char list[4096];
  assert_int_equal(vg_resource_names_join(&n, ",", list, sizeof(list)), 0);
  assert_non_null(strstr(list, "nvidia.com/vgpu,example.com/vram,nvidia.com/gpumem-percentage"));
  assert_int_equal(vg_resource_names_join(&n, ",", list, 20), -1);
}

static void expect_refused(const char *arg, const char *part) {
  struct vg_resource_names n;
  struct vg_err err = {{0}};
  vg_resource_names_default(&n);
  assert_int_equal(vg_resource_names_set(&n, arg, &err), -1);
  if (strstr(err.msg, part) == NULL) fail_msg("'%s': '%s' lacks '%s'", arg, err.msg, part);
  assert_string_equal(vg_resource_name(&n, VG_ROLE_VGPU_MEM), "nvidia.com/gpumem");
}

static void test_rename_refused(void **s) {
  (void)s;
  expect_refused("vgpu.resourceMem", "KEY=NAME");
  expect_refused("vgpu.memory=a/b", "unknown key 'vgpu.memory'");
  expect_refused("cce.resourceMem=a/b", "unknown key"); /* CCE's names are fixed */
  expect_refused("vgpu.resourceMem=vram", "not an extended resource name");
  expect_refused("vgpu.resourceMem=", "not an extended resource name");
  expect_refused("vgpu.resourceMem=nvidia.com/gpucores", "already names another resource");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_table_complete),
      cmocka_unit_test(test_dialect_names),
      cmocka_unit_test(test_rename),
      cmocka_unit_test(test_rename_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
