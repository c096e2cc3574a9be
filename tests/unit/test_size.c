/* test_size.c -- the size and percent grammar of src/common/size.h, both ways. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "size.h"

static void ok(const char *text, uint64_t want) {
  uint64_t got = 0;
  struct vg_err err;
  if (vg_parse_size(text, &got, &err) != 0) fail_msg("'%s' rejected: %s", text, err.msg);
  if (got != want)
    fail_msg("'%s' -> %llu, want %llu", text, (unsigned long long)got, (unsigned long long)want);
}

static void bad(const char *text, const char *reason) {
  uint64_t got = 12345;
  struct vg_err err;
  assert_int_equal(vg_parse_size(text, &got, &err), -1);
  assert_int_equal(got, 12345); /* untouched on error */
  if (strstr(err.msg, reason) == NULL) fail_msg("'%s': '%s' lacks '%s'", text, err.msg, reason);
}

static void test_accepts(void **s) {
  (void)s;
  ok("0", 0);
  ok("1048576", 1048576);
  ok("300m", 300ULL << 20);
  ok("300M", 300ULL << 20);
  ok("1g", 1ULL << 30);
  ok("2Gi", 2ULL << 30);
  ok("4ki", 4096);
  ok("1t", 1ULL << 40);
  ok("1Ti", 1ULL << 40);
  ok("1KB", 1000);
  ok("5MB", 5000000);
  ok("2gb", 2000000000ULL);
  ok("1TB", 1000000000000ULL);
  ok("1.5g", 3ULL << 29);
  ok("0.5m", 512ULL << 10);
  ok("18446744073709551615", UINT64_MAX);
  ok("16777215.999t",
     16777215ULL * (1ULL << 40) + (1ULL << 40) / 1000 * 999 + (1ULL << 40) % 1000 * 999 / 1000);
}

static void test_rejects(void **s) {
  (void)s;
  bad("", "empty");
  bad("abc", "start with a digit");
  bad("-5", "start with a digit");
  bad("+5", "start with a digit");
  bad(" 5", "start with a digit");
  bad("5 ", "unknown unit ' '");
  bad("1Gx", "unknown unit 'Gx'");
  bad("0x10", "unknown unit 'x10'");
  bad("1.", "no digits after");
  bad("1.5", "whole");
  bad("18446744073709551616", "too large");
  bad("99999999999999999999999", "too large");
  bad("16777216t", "too large");
  bad("17179869184g", "too large");
  bad("0.0000001k", "rounds down to 0");
}

static void test_percent(void **s) {
  (void)s;
  unsigned p = 7;
  struct vg_err err;
  assert_int_equal(vg_parse_percent("0", &p, &err), 0);
  assert_int_equal(p, 0);
  assert_int_equal(vg_parse_percent("100", &p, &err), 0);
  assert_int_equal(p, 100);
  assert_int_equal(vg_parse_percent("101", &p, &err), -1);
  assert_int_equal(vg_parse_percent("10%", &p, &err), -1);
  assert_int_equal(vg_parse_percent("-1", &p, &err), -1);
  assert_int_equal(vg_parse_percent("", &p, &err), -1);
  assert_int_equal(vg_parse_percent("99999999999999999999999", &p, &err), -1);
  assert_non_null(strstr(err.msg, "0 to 100"));
}

static void test_format(void **s) {
  (void)s;
  char buf[32];
  assert_string_equal(vg_format_size(200ULL << 20, buf, sizeof(buf)), "200 MiB");
  assert_string_equal(vg_format_size(3ULL << 29, buf, sizeof(buf)), "1.5 GiB");
  /* not a tenth of a GiB: the exact MiB, not a rounded GiB */
  assert_string_equal(vg_format_size(3000ULL << 20, buf, sizeof(buf)), "3000 MiB");
  assert_string_equal(vg_format_size(1490ULL << 20, buf, sizeof(buf)), "1490 MiB");
  /* not whole in the smaller unit either: one decimal */
  assert_string_equal(vg_format_size((3000ULL << 20) + 1, buf, sizeof(buf)), "2.9 GiB");
  assert_string_equal(vg_format_size(512, buf, sizeof(buf)), "512 B");
  assert_string_equal(vg_format_size(0, buf, sizeof(buf)), "0 B");
}

/* Issue 14: seed 000's prose says "300Mb"; decimal units are powers of ten,
 * and whoever writes them is told what they get. */
static void test_decimal_note(void **state) {
  (void)state;
  assert_true(vg_size_is_decimal("300Mb"));
  assert_true(vg_size_is_decimal("1.5GB"));
  assert_true(vg_size_is_decimal("7kb"));
  assert_false(vg_size_is_decimal("300m"));
  assert_false(vg_size_is_decimal("300Mi"));
  assert_false(vg_size_is_decimal("300"));
  assert_false(vg_size_is_decimal("MB"));
  assert_false(vg_size_is_decimal(""));
  char note[320];
  assert_string_equal(vg_size_decimal_note("L", "300Mb", 300000000, note, sizeof(note)),
                      "L=300Mb means 300000000 bytes = 286.1 MiB (KB, MB, GB and TB are decimal "
                      "units); for binary units write 300m or 300Mi");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_accepts),      cmocka_unit_test(test_rejects),
      cmocka_unit_test(test_percent),      cmocka_unit_test(test_format),
      cmocka_unit_test(test_decimal_note),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
