/*
 * test_scheduler_reasons.c -- vgpu-scheduler's failure classes as /metrics
 * counts them: a node that fails filter for each reason, and a bind that
 * fails for each result, moves exactly its own series by one and no other
 * (the classes are values returned with the words, extender_metrics.h; a
 * reworded reason must not move a metric). The foreign-node classes are
 * counted in test_scheduler_foreign.
 *
 * The scheduler runs with --no-watch, so that every view is read from the
 * fake API server and a failure of it can be injected (/_test/fail).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ext_harness.h"

#define VGPU16                                                                             \
  "[{\"name\":\"nvidia.com/vgpu\",\"dialect\":\"vgpu\",\"count\":4,\"unit\":0,\"memory\":" \
  "17179869184,\"cores\":100}]"
#define GS_GIB \
  "[{\"name\":\"aliyun.com/gpu-mem\",\"dialect\":\"gpushare\",\"count\":16,\"unit\":1073741824}]"
#define CCE2                                                                            \
  "[{\"name\":\"volcano.sh/gpu-mem.128Mi\",\"dialect\":\"cce\",\"count\":128,\"unit\":" \
  "134217728,\"maxVgpus\":20}]"
#define ONE_VGPU "\"nvidia.com/vgpu\":\"1\",\"nvidia.com/gpumem\":\"1024\""

static const char *const reasons[] = {
    "no_inventory", "bad_inventory",     "node_not_found", "not_advertised", "too_few_gpus",
    "too_large",    "no_room",           "cce_mode",       "bad_assignment", "api",
    "foreign_node", "foreign_node_full", "other"};
#define NREASONS (sizeof(reasons) / sizeof(reasons[0]))
static const char *const results[] = {"ok", "conflict", "no_fit", "api", "other"};
#define NRESULTS (sizeof(results) / sizeof(results[0]))

static int setup(void **state) {
  (void)state;
  /* No resize poller either: nothing else of the scheduler's reaches the API. */
  static const char *const blind[] = {"--no-watch", "--resize-poll-ms", "0", NULL};
  if (ext_api_start() != 0 || ext_sched_start(blind) != 0) return -1;
  ext_add_node("r-ok", 1, 16, "A100", VGPU16, 0);
  ext_add_node("r-noinv", 0, 0, "", "[]", 0); /* no annotation */
  ext_add_node("r-badinv", 1, 16, "A100",
               "[{\"name\":\"aliyun.com/gpu-mem\",\"dialect\":\"gpushare\",\"unit\":-5}]", 0);
  ext_add_node("r-gs", 1, 16, "A100", GS_GIB, 0);
  ext_add_node("r-busy", 1, 16, "A100", VGPU16, 0);
  ext_add_holder("r-busy-holder", "r-busy", "nvidia.com/vgpu", "GPU-r-busy-0", EXT_GIB, 10);
  ext_add_node("r-cce", 1, 16, "A100", CCE2, 0);
  ext_add_holder("r-cce-holder", "r-cce", "volcano.sh/gpu-mem.128Mi", "GPU-r-cce-0", EXT_GIB, 0);
  ext_add_foreign("r-nv", "2");
  return 0;
}

/* Every series of family (label name label) from /metrics into v. */
static void read_series(const char *family, const char *label, const char *const *values, size_t n,
                        double *v) {
  char *out;
  assert_int_equal(ext_call("/metrics", NULL, 0, &out), 200);
  for (size_t i = 0; i < n; i++) {
    char series[200];
    snprintf(series, sizeof(series), "%s{%s=\"%s\"}", family, label, values[i]);
    v[i] = ext_metric(out, series);
  }
  free(out);
}

/* Only want's series moved, by one. */
static void expect_moved(const char *what, const char *const *values, size_t n, const double *was,
                         const double *now, const char *want) {
  for (size_t i = 0; i < n; i++) {
    double d = now[i] - was[i], expect = strcmp(values[i], want) == 0 ? 1 : 0;
    if (d != expect) fail_msg("%s: %s moved by %g, not %g", what, values[i], d, expect);
  }
}

/* Filter of a pod with limits over node (a name, or a Node object when
 * node_obj) fails it, and counts it under reason. */
static void expect_reason(const char *limits, const char *node, const char *node_obj,
                          const char *reason) {
  double was[NREASONS], now[NREASONS];
  read_series("vgpu_scheduler_node_failures_total", "reason", reasons, NREASONS, was);
  char *pod = ext_pod_json("probe", limits, NULL, NULL, NULL), *body = NULL;
  if (node_obj) {
    if (asprintf(&body,
                 "{\"Pod\":%s,\"Nodes\":{\"metadata\":{},\"items\":[%s]},\"NodeNames\":null}", pod,
                 node_obj) < 0)
      abort();
  } else {
    char names[64];
    snprintf(names, sizeof(names), "\"%s\"", node);
    body = ext_args_names(pod, names);
  }
  json_object *res = ext_post("/filter", body, 200);
  assert_false(ext_has_name(res, node));
  assert_true(ext_failed_reason(res, node)[0] != '\0');
  json_object_put(res);
  free(body);
  free(pod);
  read_series("vgpu_scheduler_node_failures_total", "reason", reasons, NREASONS, now);
  expect_moved(node, reasons, NREASONS, was, now, reason);
}

static void test_filter_reasons(void **s) {
  (void)s;
  expect_reason(ONE_VGPU, "r-noinv", NULL, "no_inventory");
  expect_reason("\"aliyun.com/gpu-mem\":\"1\"", "r-badinv", NULL, "bad_inventory");
  expect_reason(ONE_VGPU, "r-none", NULL, "node_not_found");
  expect_reason(ONE_VGPU, "r-gs", NULL, "not_advertised");
  expect_reason("\"nvidia.com/vgpu\":\"2\"", "r-ok", NULL, "too_few_gpus");
  expect_reason("\"nvidia.com/vgpu\":\"1\",\"nvidia.com/gpumem\":\"32768\"", "r-ok", NULL,
                "too_large");
  expect_reason(ONE_VGPU ",\"nvidia.com/gpucores\":\"100\"", "r-busy", NULL, "no_room");
  expect_reason("\"volcano.sh/gpu-mem.128Mi\":\"8\",\"volcano.sh/gpu-core.percentage\":\"50\"",
                "r-cce", NULL, "cce_mode");
  expect_reason(ONE_VGPU, "r-nv", NULL, "foreign_node");
  expect_reason("\"nvidia.com/gpu\":\"4\"", "r-nv", NULL, "foreign_node_full");
  /* The node's pods cannot be listed: the API server fails the next request. */
  char *node = ext_node_json("r-ok", 1, 16, "A100", VGPU16, 0);
  ext_admin("/_test/fail?n=1", "");
  expect_reason(ONE_VGPU, "r-ok", node, "api");
  free(node);
}

/* Bind of a new pod (limits) to node; counted under result. */
static void expect_bind(const char *pod, const char *limits, const char *node, bool fail_api,
                        const char *result) {
  double was[NRESULTS], now[NRESULTS];
  read_series("vgpu_scheduler_binds_total", "result", results, NRESULTS, was);
  if (limits) ext_add_pod(pod, limits, NULL, NULL, NULL);
  if (fail_api) ext_admin("/_test/fail?n=1", "");
  json_object *res = ext_bind(pod, node);
  assert_true(strcmp(result, "ok") == 0 ? ext_bind_error(res)[0] == '\0'
                                        : ext_bind_error(res)[0] != '\0');
  json_object_put(res);
  read_series("vgpu_scheduler_binds_total", "result", results, NRESULTS, now);
  expect_moved(pod, results, NRESULTS, was, now, result);
}

static void test_bind_results(void **s) {
  (void)s;
  expect_bind("b-ok", ONE_VGPU, "r-ok", false, "ok");
  expect_bind("b-ok", NULL, "r-ok", false, "conflict"); /* bound already: the API's 409 */
  expect_bind("b-big", "\"nvidia.com/vgpu\":\"2\"", "r-ok", false, "no_fit");
  expect_bind("b-api", ONE_VGPU, "r-ok", true, "api");
  expect_bind("b-two", "\"aliyun.com/gpu-mem\":\"2\",\"nvidia.com/vgpu\":\"1\"", "r-ok", false,
              "other"); /* a request no node can take */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_filter_reasons),
      cmocka_unit_test(test_bind_results),
  };
  return cmocka_run_group_tests(tests, setup, ext_teardown);
}
