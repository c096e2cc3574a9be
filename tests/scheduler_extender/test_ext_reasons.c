/*
 * test_ext_reasons.c -- the extender's failure classes as values
 * (src/extender/extender_metrics.h): every class has the label /metrics
 * has always printed for it, in the same order, and a bind's class follows
 * from a node reason. test_scheduler_reasons counts a failure of each class
 * through the running scheduler.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "extender_int.h"

/* Every class and its label; docs/metrics.md lists the same. */
static const struct {
  enum ext_reason r;
  const char *label;
} labels[] = {
    {EXT_R_NO_INVENTORY, "no_inventory"},
    {EXT_R_BAD_INVENTORY, "bad_inventory"},
    {EXT_R_NODE_GONE, "node_not_found"},
    {EXT_R_NOT_ADVERTISED, "not_advertised"},
    {EXT_R_TOO_FEW_GPUS, "too_few_gpus"},
    {EXT_R_TOO_LARGE, "too_large"},
    {EXT_R_NO_ROOM, "no_room"},
    {EXT_R_CCE_MODE, "cce_mode"},
    {EXT_R_BAD_ASSIGNMENT, "bad_assignment"},
    {EXT_R_API, "api"},
    {EXT_R_FOREIGN_ASK, "foreign_node"},
    {EXT_R_FOREIGN_FULL, "foreign_node_full"},
    {EXT_R_OTHER, "other"},
};
#define NLABELS (sizeof(labels) / sizeof(labels[0]))

static void test_reason_labels(void **s) {
  (void)s;
  assert_int_equal(NLABELS, EXT_R_COUNT - 1); /* a new class needs its line above */
  for (size_t i = 0; i < NLABELS; i++) {
    assert_int_equal(labels[i].r, (enum ext_reason)(i + 1)); /* the order /metrics prints */
    assert_non_null(ext_reason_label(labels[i].r));
    assert_string_equal(ext_reason_label(labels[i].r), labels[i].label);
  }
  assert_null(ext_reason_label(EXT_R_NONE)); /* not a failure */
  assert_null(ext_reason_label(EXT_R_COUNT));
  assert_int_equal(EXT_R_NONE, 0); /* callers test rc != 0 */
}

static void test_bind_labels(void **s) {
  (void)s;
  assert_string_equal(ext_bind_fail_label(EXT_B_CONFLICT), "conflict");
  assert_string_equal(ext_bind_fail_label(EXT_B_NO_FIT), "no_fit");
  assert_string_equal(ext_bind_fail_label(EXT_B_API), "api");
  assert_string_equal(ext_bind_fail_label(EXT_B_OTHER), "other");
  assert_null(ext_bind_fail_label(EXT_B_COUNT));
  for (size_t i = 0; i < NLABELS; i++) {
    enum ext_bind_fail want = labels[i].r == EXT_R_API     ? EXT_B_API
                              : labels[i].r == EXT_R_OTHER ? EXT_B_OTHER
                                                           : EXT_B_NO_FIT;
    assert_int_equal(ext_bind_fail_of(labels[i].r), want);
  }
}

/* The exposition counts each class under its label, in the order it always
 * had: node_failures[r] = 100 + r. */
static void test_render(void **s) {
  (void)s;
  struct ext_metrics m;
  memset(&m, 0, sizeof(m));
  for (int r = 0; r < EXT_R_COUNT; r++) m.node_failures[r] = 100 + (uint64_t)r;
  for (int b = 0; b < EXT_B_COUNT; b++) m.bind_failures[b] = 200 + (uint64_t)b;
  char *text = ext_metrics_render(&m, NULL);
  assert_non_null(text);
  const char *at = text;
  for (size_t i = 0; i < NLABELS; i++) {
    char line[160];
    snprintf(line, sizeof(line), "vgpu_scheduler_node_failures_total{reason=\"%s\"} %d\n",
             labels[i].label, 100 + (int)labels[i].r);
    const char *p = strstr(at, line);
    if (p == NULL) fail_msg("no line %s after the previous one in\n%s", line, text);
    at = p;
  }
  assert_null(strstr(text, "reason=\"(null)\""));
  assert_non_null(strstr(text,
                         "vgpu_scheduler_binds_total{result=\"conflict\"} 200\n"
                         "vgpu_scheduler_binds_total{result=\"no_fit\"} 201\n"
                         "vgpu_scheduler_binds_total{result=\"api\"} 202\n"
                         "vgpu_scheduler_binds_total{result=\"other\"} 203\n"));
  free(text);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_reason_labels),
      cmocka_unit_test(test_bind_labels),
      cmocka_unit_test(test_render),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
