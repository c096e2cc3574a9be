/* test_quantity.c -- Kubernetes quantities as whole numbers: every suffix
 * family, the canonical forms the API server hands back, and each refusal. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "quantity.h"

static void ok_fmt(const char *text, int64_t want, enum vg_quantity_format want_fmt) {
  int64_t got = -1;
  enum vg_quantity_format fmt = (enum vg_quantity_format) - 1;
  struct vg_err err;
  if (vg_quantity_parse(text, &got, &fmt, &err) != 0) fail_msg("'%s' rejected: %s", text, err.msg);
  if (got != want) fail_msg("'%s' -> %lld, want %lld", text, (long long)got, (long long)want);
  if (fmt != want_fmt) fail_msg("'%s': format %d, want %d", text, (int)fmt, (int)want_fmt);
}

static void ok(const char *text, int64_t want) {
  int64_t got = -1;
  struct vg_err err;
  if (vg_quantity_parse(text, &got, NULL, &err) != 0) fail_msg("'%s' rejected: %s", text, err.msg);
  if (got != want) fail_msg("'%s' -> %lld, want %lld", text, (long long)got, (long long)want);
}

static void bad(const char *text, const char *reason) {
  int64_t got = 12345;
  struct vg_err err = {{0}};
  assert_int_equal(vg_quantity_parse(text, &got, NULL, &err), -1);
  assert_int_equal(got, 12345); /* untouched on error */
  if (strstr(err.msg, reason) == NULL) fail_msg("'%s': '%s' lacks '%s'", text, err.msg, reason);
}

/* What the API server writes back for what users write (3000 -> 3k, ...). */
static void test_canonical_forms(void **s) {
  (void)s;
  ok_fmt("3k", 3000, VG_QUANTITY_DECIMAL_SI);
  ok_fmt("2k", 2000, VG_QUANTITY_DECIMAL_SI);
  ok_fmt("8k", 8000, VG_QUANTITY_DECIMAL_SI);
  ok_fmt("1M", 1000000, VG_QUANTITY_DECIMAL_SI);
  ok_fmt("4096", 4096, VG_QUANTITY_DECIMAL_SI);
  ok_fmt("1Gi", 1LL << 30, VG_QUANTITY_BINARY_SI);
  ok_fmt("1536Mi", 1536LL << 20, VG_QUANTITY_BINARY_SI);
  ok_fmt("3e3", 3000, VG_QUANTITY_DECIMAL_EXPONENT);
  ok_fmt("10e3", 10000, VG_QUANTITY_DECIMAL_EXPONENT);
  ok_fmt("0", 0, VG_QUANTITY_DECIMAL_SI);
}

static void test_decimal_si(void **s) {
  (void)s;
  ok("1", 1);
  ok("+3", 3);
  ok("007", 7);
  ok("1k", 1000);
  ok("1M", 1000000);
  ok("1G", 1000000000LL);
  ok("1T", 1000000000000LL);
  ok("1P", 1000000000000000LL);
  ok("1E", 1000000000000000000LL); /* E alone is exa */
  ok("9E", 9000000000000000000LL);
  ok("1000m", 1);
  ok("3000000u", 3);
  ok("5000000000n", 5);
  ok("1.5k", 1500);
  ok("2.000", 2);
  ok("1.", 1);
  ok(".5k", 500);
  ok("0.001k", 1);
  ok("9223372036854775807", INT64_MAX);
  ok("9223372036.854775807G", INT64_MAX);
  ok("-0", 0);
  ok("0.0", 0);
  ok("0m", 0);
}

static void test_binary_si(void **s) {
  (void)s;
  ok("1Ki", 1024);
  ok("1Mi", 1LL << 20);
  ok("2Gi", 2LL << 30);
  ok("1Ti", 1LL << 40);
  ok("1Pi", 1LL << 50);
  ok("1Ei", 1LL << 60);
  ok("7Ei", 7LL << 60);
  ok("0.5Ki", 512);
  ok("1.5Gi", 3LL << 29);
  ok(".25Mi", 1LL << 18);
  ok("7.5Ei", 8646911284551352320LL);
  bad("7.9999999999999999999Ei", "not a whole number"); /* 2^63 - 0.11 */
}

static void test_exponent(void **s) {
  (void)s;
  ok("3e3", 3000);
  ok("3E3", 3000);
  ok("1e0", 1);
  ok("1e+3", 1000);
  ok("5000e-3", 5);
  ok("1.5e3", 1500);
  ok("1e18", 1000000000000000000LL);
  ok("0e999999999", 0);
  ok("0.000e-999999999999", 0);
}

/* The API server keeps 1n and rounds anything finer up. */
static void test_rounds_up_to_nano(void **s) {
  (void)s;
  ok("2.9999999999", 3);
  ok("2.99999999900000000001", 3);
  ok("0.99999999999999999999k", 1000);
  bad("2.999999999", "not a whole number");  /* exactly 2999999999n */
  bad("2.9999999990", "not a whole number"); /* the same, a zero longer */
  bad("2.0000000001", "not a whole number"); /* 2000000001n after rounding */
}

static void test_rejects(void **s) {
  (void)s;
  bad("", "empty");
  bad("two", "not a quantity");
  bad("-", "not a quantity");
  bad("+", "not a quantity");
  bad(".", "not a quantity");
  bad("k", "not a quantity");
  bad(" 3", "not a quantity");
  bad("3 ", "unknown suffix ' '");
  bad("1.5.3", "unknown suffix '.3'");
  bad("1K", "unknown suffix 'K'");
  bad("1ki", "unknown suffix 'ki'");
  bad("1KiB", "unknown suffix 'KiB'");
  bad("1e", "unknown suffix 'e'");
  bad("1e+", "unknown suffix 'e+'");
  bad("1e3.5", "unknown suffix 'e3.5'");
  bad("1Zi", "unknown suffix 'Zi'");
  bad("0x10", "unknown suffix 'x10'");
  bad("500m", "'500m' is not a whole number");
  bad("1.5", "'1.5' is not a whole number");
  bad("1n", "not a whole number");
  bad("1e-3", "not a whole number");
  bad("0.3Ki", "not a whole number"); /* 307.2 */
  bad("-1", "'-1' is negative");
  bad("-1k", "negative");
  bad("-500m", "negative");
  bad("9223372036854775808", "too large");
  bad("10E", "too large");
  bad("8Ei", "too large");
  bad("1e19", "too large");
  bad("1e999999999999", "too large");
  bad("99999999999999999999999999999", "too large");
  bad("9223372036854775807.9999999999", "too large"); /* rounds up past the top */
  char longer[VG_QUANTITY_MAX_TEXT + 2];
  memset(longer, '1', sizeof(longer) - 1);
  longer[sizeof(longer) - 1] = '\0';
  bad(longer, "longer than 128 characters");
}

/* Every error says why, and quotes what it read. */
static void test_messages_quote_text(void **s) {
  (void)s;
  static const char *const texts[] = {"two", "1K", "500m", "-1", "10E"};
  for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
    int64_t v;
    struct vg_err err = {{0}};
    assert_int_equal(vg_quantity_parse(texts[i], &v, NULL, &err), -1);
    char quoted[32];
    snprintf(quoted, sizeof(quoted), "'%s'", texts[i]);
    if (strstr(err.msg, quoted) == NULL) fail_msg("%s: %s", texts[i], err.msg);
  }
}

static void milli(const char *text, int64_t want) {
  int64_t got = -1;
  struct vg_err err;
  if (vg_quantity_parse_ceil(text, 3, &got, &err) != 0)
    fail_msg("'%s' rejected: %s", text, err.msg);
  if (got != want) fail_msg("'%s' -> %lld milli, want %lld", text, (long long)got, (long long)want);
}

/* Requests as kube-scheduler reads them (MilliValue, Value): scaled, and a
 * fraction left rounds up rather than being refused. */
static void test_ceil_scaled(void **s) {
  (void)s;
  milli("1500m", 1500);
  milli("1.5", 1500);
  milli("2", 2000);
  milli("0.1m", 1);
  milli("100u", 1);
  milli("0", 0);
  milli("1k", 1000000);
  int64_t got = 7;
  struct vg_err err;
  assert_int_equal(vg_quantity_parse_ceil("1.5Ki", 0, &got, &err), 0);
  assert_int_equal(got, 1536);
  assert_int_equal(vg_quantity_parse_ceil("0.5", 0, &got, &err), 0);
  assert_int_equal(got, 1);
  got = 7;
  assert_int_equal(vg_quantity_parse_ceil("-1", 3, &got, &err), -1);
  assert_int_equal(vg_quantity_parse_ceil("9E", 3, &got, &err), -1);
  assert_int_equal(vg_quantity_parse_ceil("1x", 3, &got, &err), -1);
  assert_int_equal(got, 7);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_canonical_forms),     cmocka_unit_test(test_decimal_si),
      cmocka_unit_test(test_binary_si),           cmocka_unit_test(test_exponent),
      cmocka_unit_test(test_rounds_up_to_nano),   cmocka_unit_test(test_rejects),
      cmocka_unit_test(test_messages_quote_text), cmocka_unit_test(test_ceil_scaled),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
