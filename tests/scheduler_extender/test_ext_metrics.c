/*
 * test_ext_metrics.c -- vgpu-scheduler's /metrics text, byte for byte: a
 * registry with distinct values in every counter, latencies in several
 * histogram buckets, and a node cache of two readable nodes, one whose read
 * failed and one never read (both left out), rendered and compared with
 * tests/golden/scheduler_metrics.prom (written from the renderer before it
 * moved onto the shared Prometheus writer, common/prom.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
// clang-format off
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include "extender_int.h"
#include "extender_metrics.h"
#include "golden.h"

#define GIB (1ll << 30)

static void registry(struct ext_metrics *m) {
  memset(m, 0, sizeof(*m));
  for (int v = 0; v < 5; v++) m->requests[v] = 100u + (uint64_t)v;
  m->bad_requests = 2, m->refused_pods = 3, m->bad_assignments = 4;
  static const double seconds[] = {0.0001, 0.0007, 0.003, 0.02, 0.3, 2, 9};
  for (int v = 0; v < 3; v++)
    for (size_t i = 0; i < sizeof(seconds) / sizeof(seconds[0]); i += (size_t)v + 1)
      ext_metrics_observe(m, v, seconds[i]);
  /* Each class by its place among the classes (EXT_R_NONE is none). */
  for (int r = EXT_R_NONE + 1; r < EXT_R_COUNT; r++)
    m->node_failures[r] = 7u * (uint64_t)(r - EXT_R_NONE - 1);
  m->binds_ok = 11;
  for (int b = 0; b < EXT_B_COUNT; b++) m->bind_failures[b] = 20u + (uint64_t)b;
  m->assigned_gpus = 13;
  m->watch_up[0] = 1;
  m->watch_events[0] = 40, m->watch_events[1] = 41;
}

/* A node read at some time with n GPUs, the last one unhealthy. */
static struct node_entry *node(const char *name, int n, int rc, struct node_entry *next) {
  struct node_entry *e = calloc(1, sizeof(*e));
  assert_non_null(e);
  snprintf(e->name, sizeof(e->name), "%s", name);
  e->rc = rc;
  e->at.tv_sec = 1700000000;
  e->view.n = n;
  for (int g = 0; g < n; g++) {
    e->view.g[g].healthy = g + 1 < n || n == 1;
    e->view.g[g].mem = 16 * GIB;
    e->view.g[g].mem_used = (g + 1) * GIB;
    e->view.g[g].slices = g + 2;
  }
  e->next = next;
  return e;
}

static void test_golden(void **state) {
  (void)state;
  struct ext_metrics m;
  registry(&m);
  struct node_entry *nodes = node("gpu-b", 1, 0, NULL);
  nodes = node("gone", 2, 1, nodes);
  nodes = node("unread", 2, 0, nodes);
  nodes->at.tv_sec = 0;
  nodes = node("gpu-a", 4, 0, nodes);
  char *text = ext_metrics_render(&m, nodes);
  assert_non_null(text);
  vg_assert_golden("scheduler_metrics.prom", text);
  free(text);
  while (nodes != NULL) {
    struct node_entry *next = nodes->next;
    free(nodes);
    nodes = next;
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_golden)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
