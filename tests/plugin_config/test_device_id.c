/*
 * test_device_id.c -- the device ID format "<GPU UUID>::<n>"
 * (src/plugin/device_id.c), which the plugin writes and the plugin, the
 * binder and steering read back.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "device_id.h"

static void test_round_trip(void **s) {
  (void)s;
  static const uint64_t values[] = {0, 7, 1000000, UINT64_MAX};
  for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
    char id[160];
    assert_true(vg_device_id_format(id, sizeof(id), "GPU-1234-abcd", values[i]));
    size_t ulen = 0;
    uint64_t n = 1;
    assert_true(vg_device_id_parse(id, &ulen, &n));
    assert_int_equal(ulen, strlen("GPU-1234-abcd"));
    assert_true(n == values[i]);
    assert_true(vg_device_id_on(id, "GPU-1234-abcd"));
  }
  char id[32];
  assert_true(vg_device_id_format(id, sizeof(id), "G", 12));
  assert_string_equal(id, "G::12");
}

static void test_too_small_buffer(void **s) {
  (void)s;
  char id[8];
  assert_false(vg_device_id_format(id, sizeof(id), "GPU-1234", 5)); /* "GPU-1234::5" is 11 */
  assert_true(vg_device_id_format(id, sizeof(id), "GPU", 5));
}

static void test_refused(void **s) {
  (void)s;
  static const char *const bad[] = {
      "",          "GPU-1",     "GPU-1::",   "::3",
      "GPU-1::x",  "GPU-1::-1", "GPU-1:: 1", "GPU-1::+1",
      "GPU-1::1x", "GPU-1:3",   "GPU-1::1.", "GPU-1::99999999999999999999" /* past 64 bits */,
  };
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    size_t ulen = 0;
    uint64_t n = 0;
    if (vg_device_id_parse(bad[i], &ulen, &n)) fail_msg("accepted \"%s\"", bad[i]);
    assert_false(vg_device_id_on(bad[i], "GPU-1"));
  }
}

static void test_on_needs_the_whole_uuid(void **s) {
  (void)s;
  assert_true(vg_device_id_on("GPU-1::0", "GPU-1"));
  assert_false(vg_device_id_on("GPU-10::0", "GPU-1")); /* a prefix is another GPU */
  assert_false(vg_device_id_on("GPU-1::0", "GPU-10"));
  assert_false(vg_device_id_on("GPU-1::0", ""));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_round_trip),
      cmocka_unit_test(test_too_small_buffer),
      cmocka_unit_test(test_refused),
      cmocka_unit_test(test_on_needs_the_whole_uuid),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
