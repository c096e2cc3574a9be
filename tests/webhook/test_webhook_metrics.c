/*
 * test_webhook_metrics.c -- vgpu-webhook's /metrics text, byte for byte:
 * counters with distinct values rendered and compared with
 * tests/golden/webhook_metrics.prom (written from the renderer before it
 * moved onto the shared Prometheus writer, common/prom.c).
 */
#include <stdlib.h>
// clang-format off
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include "golden.h"
#include "metrics.h"

static void test_golden(void **state) {
  (void)state;
  struct vg_wh_metrics m;
  for (int r = 0; r < VG_WH_R_COUNT; r++) atomic_init(&m.reviews[r], 10ul * (unsigned long)r + 1);
  atomic_init(&m.tls_reloads, 3);
  atomic_init(&m.tls_reload_failures, 18446744073709551615ul);
  char *text = vg_wh_metrics_render(&m);
  assert_non_null(text);
  vg_assert_golden("webhook_metrics.prom", text);
  free(text);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_golden)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
