/*
 * test_once.c -- the "say it once" set (src/common/once.c): first time
 * true, then false; forgetting; bounded, forgetting everything when full.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "once.h"

static void test_first_then_not(void **s) {
  (void)s;
  struct vg_once o = {0};
  assert_true(vg_once_first(&o, "malformed|ns/a"));
  assert_false(vg_once_first(&o, "malformed|ns/a"));
  assert_true(vg_once_first(&o, "malformed|ns/b"));
  assert_true(vg_once_first(&o, "")); /* the empty key is a key too */
  assert_false(vg_once_first(&o, ""));
  vg_once_forget(&o, "malformed|ns/a");
  assert_true(vg_once_first(&o, "malformed|ns/a"));
  assert_false(vg_once_first(&o, "malformed|ns/b")); /* forgetting one keeps the others */
  vg_once_forget(&o, "never seen");                  /* a no-op */
  assert_int_equal(o.n, 3);
  vg_once_free(&o);
  assert_int_equal(o.n, 0);
  assert_true(vg_once_first(&o, "malformed|ns/b"));
  vg_once_free(&o);
}

static void test_bounded(void **s) {
  (void)s;
  struct vg_once o = {0};
  char key[32];
  for (int i = 0; i < VG_ONCE_MAX; i++) {
    snprintf(key, sizeof(key), "k%d", i);
    assert_true(vg_once_first(&o, key));
  }
  assert_int_equal(o.n, VG_ONCE_MAX);
  assert_false(vg_once_first(&o, "k0"));
  assert_true(vg_once_first(&o, "one more")); /* full: everything forgotten first */
  assert_int_equal(o.n, 1);
  assert_true(vg_once_first(&o, "k0"));
  vg_once_free(&o);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_first_then_not),
      cmocka_unit_test(test_bounded),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
