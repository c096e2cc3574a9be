/*
 * test_opt.c -- the option helpers every program shares (src/common/opt.c):
 * vg_opt_value's three spellings and what it refuses, and the guess that
 * vg_opt_suggest offers for a typo.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "opt.h"

#define ARGC(a) ((int)(sizeof(a) / sizeof((a)[0])))

static void test_value_spellings(void **s) {
  (void)s;
  char *argv[] = {"prog", "--memory", "2Gi", "--cores=30", "-nprod", "-o", "json"};
  int i = 1;
  assert_string_equal(vg_opt_value(ARGC(argv), argv, &i, "--memory"), "2Gi");
  assert_int_equal(i, 2); /* moved past the value */
  i = 3;
  assert_string_equal(vg_opt_value(ARGC(argv), argv, &i, "--cores"), "30");
  assert_int_equal(i, 3);
  i = 4;
  assert_string_equal(vg_opt_value(ARGC(argv), argv, &i, "-n"), "prod");
  i = 5;
  assert_string_equal(vg_opt_value(ARGC(argv), argv, &i, "-o"), "json");
  assert_int_equal(i, 6);
}

static void test_value_refuses_other_options(void **s) {
  (void)s;
  char *argv[] = {"prog", "--memoryx=1", "--mem", "--cores", "--nodes3"};
  int i = 1;
  /* A longer option that starts with the name is another option. */
  assert_null(vg_opt_value(ARGC(argv), argv, &i, "--memory"));
  assert_null(vg_opt_value(ARGC(argv), argv, &i, "--memo"));
  i = 2;
  assert_null(vg_opt_value(ARGC(argv), argv, &i, "--memory")); /* a prefix is not the name */
  i = 4;
  assert_null(vg_opt_value(ARGC(argv), argv, &i, "--nodes")); /* only "-x" glues its value */
  assert_int_equal(i, 4);
}

static void test_value_missing_is_empty(void **s) {
  (void)s;
  char *argv[] = {"prog", "--cores"};
  int i = 1;
  assert_string_equal(vg_opt_value(ARGC(argv), argv, &i, "--cores"), "");
  assert_int_equal(i, 1); /* nothing to move past */
}

static void test_suggest_within_two_edits(void **s) {
  (void)s;
  const char *const known[] = {"--memory", "--cores", "--namespace", NULL};
  assert_string_equal(vg_opt_suggest("--memroy", known), "--memory"); /* a swap */
  assert_string_equal(vg_opt_suggest("--core", known), "--cores");
  assert_null(vg_opt_suggest("--verbose", known));
  char huge[100];
  memset(huge, 'x', sizeof(huge) - 1);
  huge[sizeof(huge) - 1] = '\0';
  assert_null(vg_opt_suggest(huge, known)); /* too long to compare: no guess, no overflow */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_value_spellings),
      cmocka_unit_test(test_value_refuses_other_options),
      cmocka_unit_test(test_value_missing_is_empty),
      cmocka_unit_test(test_suggest_within_two_edits),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
