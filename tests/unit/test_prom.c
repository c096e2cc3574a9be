/*
 * test_prom.c -- the Prometheus text writer (src/common/prom.c): the
 * format's escaping rules (label values: backslash, double quote, newline;
 * HELP: backslash and newline, quotes kept), label sets joined by commas,
 * samples with and without labels, and out of memory in a label set
 * reaching the text it is used in.
 */
#include <stdlib.h>
#include <string.h>
// clang-format off
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include "prom.h"

static void test_label_escaping(void **s) {
  (void)s;
  struct vg_textbuf l = {0};
  assert_true(vg_prom_label(&l, "model", "Tesla \"T4\" C:\\gpu\nline 2"));
  assert_string_equal(l.data, "model=\"Tesla \\\"T4\\\" C:\\\\gpu\\nline 2\"");
  assert_true(vg_prom_label(&l, "empty", ""));
  assert_true(vg_prom_label(&l, "end", "\\"));
  assert_string_equal(l.data,
                      "model=\"Tesla \\\"T4\\\" C:\\\\gpu\\nline 2\",empty=\"\",end=\"\\\\\"");
  vg_textbuf_reset(&l);
  assert_true(vg_prom_label(&l, "node", "plain-node.1"));
  assert_string_equal(l.data, "node=\"plain-node.1\""); /* nothing to escape: as it was */
  vg_textbuf_free(&l);
}

static void test_help_escaping(void **s) {
  (void)s;
  struct vg_textbuf out = {0};
  assert_true(vg_prom_family(&out, "x_total", "counter", "Says \"why\": a\\b,\nthen more."));
  assert_string_equal(
      out.data, "# HELP x_total Says \"why\": a\\\\b,\\nthen more.\n# TYPE x_total counter\n");
  vg_textbuf_free(&out);
}

static void test_samples(void **s) {
  (void)s;
  struct vg_textbuf out = {0}, l = {0};
  assert_true(vg_prom_sample(&out, "up", NULL, "%d", 1));
  assert_true(vg_prom_sample(&out, "up", &l, "%d", 0)); /* an empty set: no braces */
  vg_prom_label(&l, "verb", "filter");
  vg_prom_label(&l, "le", "+Inf");
  assert_true(vg_prom_sample(&out, "d_bucket", &l, "%llu", 18446744073709551615ull));
  assert_true(vg_prom_sample(&out, "ratio", &l, "%.2f", 0.3));
  assert_string_equal(out.data,
                      "up 1\nup 0\nd_bucket{verb=\"filter\",le=\"+Inf\"} "
                      "18446744073709551615\nratio{verb=\"filter\",le=\"+Inf\"} 0.30\n");
  vg_textbuf_free(&out);
  vg_textbuf_free(&l);
}

static void test_cut_label_set_fails_the_text(void **s) {
  (void)s;
  struct vg_textbuf out = {0}, l = {0};
  vg_prom_label(&l, "node", "n");
  l.oom = true; /* as after a failed allocation */
  assert_false(vg_prom_sample(&out, "up", &l, "%d", 1));
  assert_null(vg_textbuf_take(&out, NULL));
  vg_textbuf_free(&l);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_label_escaping),
      cmocka_unit_test(test_help_escaping),
      cmocka_unit_test(test_samples),
      cmocka_unit_test(test_cut_label_set_fails_the_text),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
