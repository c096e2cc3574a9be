/*
 * test_ext_out.c -- the writer of filter's and prioritize's answers
 * (src/extender/extender_out.c): every string and integer it writes must
 * read back, through json-c, as exactly what went in.
 */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "extender_int.h"

static json_object *parse_taken(struct ext_out *o) {
  char *text = ext_out_take(o);
  assert_non_null(text);
  json_object *v = json_tokener_parse(text);
  if (!v) fail_msg("not JSON: %s", text);
  free(text);
  return v;
}

static void test_integers(void **s) {
  (void)s;
  static const long long values[] = {0, 7, 10, -1, -42, 1234567890123LL, LLONG_MAX, LLONG_MIN};
  for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
    struct ext_out o = {0};
    ext_out_lit(&o, "[");
    ext_out_int(&o, values[i]);
    ext_out_lit(&o, "]");
    json_object *v = parse_taken(&o);
    assert_int_equal(json_object_get_int64(json_object_array_get_idx(v, 0)), values[i]);
    json_object_put(v);
  }
}

static void test_strings(void **s) {
  (void)s;
  char every[256]; /* each byte value 1..127, then valid UTF-8 */
  for (int b = 1; b < 128; b++) every[b - 1] = (char)b;
  strcpy(every + 127, "\xc3\xa9\xe2\x82\xac");
  const char *values[] = {"", "node-a", "\"", "\\", "a\"b\\c\n\t\r\x01\x1f", every};
  for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
    struct ext_out o = {0};
    ext_out_lit(&o, "{");
    ext_out_str(&o, values[i]); /* as a key and as a value */
    ext_out_lit(&o, ":");
    ext_out_str(&o, values[i]);
    ext_out_lit(&o, "}");
    json_object *v = parse_taken(&o), *got = NULL;
    assert_true(json_object_object_get_ex(v, values[i], &got));
    assert_string_equal(json_object_get_string(got), values[i]);
    json_object_put(v);
  }
}

/* Reasons: every '%' becomes "percent" (kube-scheduler's Eventf would read
 * it as a verb); escaping works as for any string. */
static void test_reason_has_no_percent(void **s) {
  (void)s;
  static const char *const in_out[][2] = {
      {"50% cores", "50 percent cores"},
      {"100%", "100 percent"},
      {"%", "percent"},
      {"a % b", "a percent b"},
      {"GET /api/v1/x%2Fy: \"%s\"\n", "GET /api/v1/x percent2Fy: \" percents\"\n"},
      {"no sign", "no sign"},
      {"", ""},
  };
  for (size_t i = 0; i < sizeof(in_out) / sizeof(in_out[0]); i++) {
    struct ext_out o = {0};
    ext_out_lit(&o, "[");
    ext_out_reason(&o, in_out[i][0]);
    ext_out_lit(&o, "]");
    json_object *v = parse_taken(&o);
    assert_string_equal(json_object_get_string(json_object_array_get_idx(v, 0)), in_out[i][1]);
    json_object_put(v);
  }
}

static void test_grows_and_resets(void **s) {
  (void)s;
  struct ext_out o = {0};
  ext_out_lit(&o, "[");
  for (int i = 0; i < 20000; i++) { /* well past the first 4 kB */
    if (i) ext_out_lit(&o, ",");
    ext_out_int(&o, i);
  }
  ext_out_lit(&o, "]");
  json_object *v = parse_taken(&o);
  assert_int_equal(json_object_array_length(v), 20000);
  assert_int_equal(json_object_get_int(json_object_array_get_idx(v, 19999)), 19999);
  json_object_put(v);
  assert_null(o.t.data);         /* take handed the buffer over */
  assert_null(ext_out_take(&o)); /* nothing written: nothing to take */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_integers),
      cmocka_unit_test(test_strings),
      cmocka_unit_test(test_reason_has_no_percent),
      cmocka_unit_test(test_grows_and_resets),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
