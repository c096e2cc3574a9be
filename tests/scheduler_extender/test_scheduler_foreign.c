/*
 * test_scheduler_foreign.c -- vgpu-scheduler end to end on a mixed cluster
 * (issue 29): nodes without vgpu's inventory whose allocatable names
 * nvidia.com/gpu run another device plugin ("foreign GPU nodes").
 *
 *   - a pod asking only whole nvidia.com/gpu fits there while the node's
 *     allocatable less its bound pods' nvidia.com/gpu requests covers it;
 *     bound pods, our own binds and prioritize's reservation all count;
 *   - anything vgpu-specific (gpumem, gpucores, nvidia.com/vgpu, other
 *     dialects, a GPU type/UUID selection) fails there with a reason, in
 *     both failure maps (no preemption can help); a node that is only full
 *     is in FailedNodes alone;
 *   - prioritize ranks foreign nodes below every vgpu node, unique ranks;
 *   - bind posts a plain Binding: no vgpu.io/assigned;
 *   - the same from the API (--no-watch), and --foreign-gpu-nodes deny
 *     fails every GPU pod there, as before issue 29.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <json-c/json.h>

#include "ext_harness.h"

/* vgpu's node: one 10 GiB GPU advertising nvidia.com/gpu as vgpu (HAMi's name). */
#define VGPU_AS_GPU                                                                        \
  "[{\"name\":\"nvidia.com/gpu\",\"dialect\":\"vgpu\",\"count\":10,\"unit\":0,\"memory\":" \
  "10737418240,\"cores\":100}]"
#define PLAIN(n) "\"nvidia.com/gpu\":\"" n "\""

static int setup(void **state) {
  (void)state;
  if (ext_api_start() != 0 || ext_sched_start(NULL) != 0) return -1;
  ext_wait_watching();
  ext_add_node("vg", 1, 10, "A100", VGPU_AS_GPU, 0);
  ext_add_foreign("nv-a", "2");
  ext_add_foreign("nv-b", "4");
  ext_add_foreign("nv-full", "2");
  ext_add_foreign("nv-resv", "2");
  ext_add_foreign("no-gpus", NULL);
  /* Another scheduler's pod on nv-full: 2 GPUs, no vgpu.io/assigned. A
   * finished one holds nothing. */
  ext_add_pod("nv-holder", PLAIN("2"), NULL, "nv-full", NULL);
  char *done = ext_pod_json("nv-done", PLAIN("2"), NULL, "nv-a", NULL);
  char *p = strstr(done, "\"Running\"");
  memcpy(p, "\"Failed\" ", 9);
  ext_admin("/_test/pods", done);
  free(done);
  return 0;
}

static json_object *call(const char *verb, const char *name, const char *limits,
                         const char *annotations, const char *names) {
  char *pod = ext_pod_json(name, limits, annotations, NULL, NULL);
  char *body = ext_args_names(pod, names);
  json_object *res = ext_post(verb, body, 200);
  free(body);
  free(pod);
  return res;
}

static void test_plain_gpus_fit(void **s) {
  (void)s;
  json_object *res =
      call("/filter", "plain", PLAIN("1"), NULL, "\"vg\",\"nv-a\",\"nv-b\",\"no-gpus\"");
  printf("filter: %s\n", json_object_to_json_string(res));
  assert_true(ext_has_name(res, "vg"));
  assert_true(ext_has_name(res, "nv-a")); /* nv-done finished: its 2 GPUs are free */
  assert_true(ext_has_name(res, "nv-b"));
  ext_expect_refused(res, "no-gpus", "(is vgpu-device-plugin running there?)");
  json_object_put(res);
  /* More than nv-a has at all (its fullness counts in /metrics below).
   * One node per filter: where several are named and one fits, filter
   * reserves it for the pod (extender_reserve.c), which later tests would
   * see. */
  res = call("/filter", "plain-many", PLAIN("4"), NULL, "\"nv-a\"");
  assert_false(ext_has_name(res, "nv-a"));
  json_object_put(res);
  res = call("/filter", "plain-many", PLAIN("4"), NULL, "\"nv-b\"");
  assert_true(ext_has_name(res, "nv-b"));
  json_object_put(res);
}

/* kube-scheduler ignores nvidia.com/gpu (ignoredByScheduler): the count of
 * what the node's pods request is ours to check. Full is not unresolvable:
 * preemption of those pods could help. */
static void test_bound_pods_count(void **s) {
  (void)s;
  json_object *res = call("/filter", "full", PLAIN("1"), NULL, "\"nv-full\"");
  printf("filter: %s\n", json_object_to_json_string(res));
  assert_false(ext_has_name(res, "nv-full"));
  ext_expect_contains(ext_failed_reason(res, "nv-full"),
                      "the pod asks for 1 nvidia.com/gpu, 0 of the node's 2 are not yet "
                      "requested by its pods");
  assert_null(ext_unresolvable_reason(res, "nv-full"));
  json_object_put(res);
}

static void test_vgpu_asks_refused(void **s) {
  (void)s;
  static const struct {
    const char *limits, *annotations, *why;
  } asks[] = {
      {PLAIN("1") ",\"nvidia.com/gpumem\":\"1000\"", NULL, "asks for nvidia.com/gpumem/gpucores"},
      {PLAIN("1") ",\"nvidia.com/gpucores\":\"30\"", NULL, "asks for nvidia.com/gpumem/gpucores"},
      {"\"nvidia.com/vgpu\":\"1\"", NULL, "asks for nvidia.com/vgpu"},
      {"\"aliyun.com/gpu-mem\":\"2\"", NULL, "asks for aliyun.com/gpu-mem"},
      {"\"volcano.sh/gpu-mem.128Mi\":\"8\"", NULL, "asks for volcano.sh/gpu-mem.128Mi"},
      {PLAIN("1"), "\"vgpu.io/use-gputype\":\"A100\"", "selects GPUs by type or UUID"},
  };
  for (size_t i = 0; i < sizeof(asks) / sizeof(asks[0]); i++) {
    json_object *res = call("/filter", "vgpu-ask", asks[i].limits, asks[i].annotations, "\"nv-b\"");
    printf("filter: %s\n", json_object_to_json_string(res));
    ext_expect_refused(res, "nv-b", asks[i].why);
    ext_expect_contains(ext_failed_reason(res, "nv-b"), "no vgpu.io/gpu-inventory on this node");
    json_object_put(res);
  }
  char *out = NULL;
  assert_int_equal(ext_call("/metrics", NULL, 0, &out), 200);
  ext_expect_contains(out, "vgpu_scheduler_node_failures_total{reason=\"foreign_node\"} 6");
  ext_expect_contains(out, "vgpu_scheduler_node_failures_total{reason=\"foreign_node_full\"} 2");
  free(out);
}

static void test_foreign_ranked_last(void **s) {
  (void)s;
  json_object *res =
      call("/prioritize", "rank", PLAIN("1"), NULL, "\"nv-b\",\"vg\",\"nv-a\",\"nv-full\"");
  printf("prioritize: %s\n", json_object_to_json_string(res));
  /* vgpu's node first; then the foreign one left fuller (nv-a: 1 of 2 left,
   * nv-b: 3 of 4); nv-full does not fit. */
  assert_int_equal(ext_score(res, "vg"), 300);
  assert_int_equal(ext_score(res, "nv-a"), 200);
  assert_int_equal(ext_score(res, "nv-b"), 100);
  assert_int_equal(ext_score(res, "nv-full"), 0);
  json_object_put(res);
}

/* NVIDIA's plugin allocates on its node: a plain Binding, no assignment.
 * The very next filter sees the bind (the store holds it at once). */
static void test_bind_plain(void **s) {
  (void)s;
  ext_add_pod("bound-plain", PLAIN("2"), NULL, NULL, NULL);
  json_object *res = ext_bind("bound-plain", "nv-b");
  assert_string_equal(ext_bind_error(res), "");
  json_object_put(res);
  assert_null(ext_assigned("bound-plain"));
  res = call("/filter", "after-bind", PLAIN("3"), NULL, "\"nv-b\"");
  ext_expect_contains(ext_failed_reason(res, "nv-b"), "2 of the node's 4 are not yet requested");
  json_object_put(res);
  ext_add_pod("too-many", PLAIN("3"), NULL, NULL, NULL);
  res = ext_bind("too-many", "nv-b");
  ext_expect_contains(ext_bind_error(res), "the pod asks for 3 nvidia.com/gpu, 2 of the node's 4");
  json_object_put(res);
  assert_null(ext_assigned("too-many"));
  /* A vgpu-specific pod is refused at bind too. */
  ext_add_pod("vgpu-bind", PLAIN("1") ",\"nvidia.com/gpucores\":\"30\"", NULL, NULL, NULL);
  res = ext_bind("vgpu-bind", "nv-b");
  ext_expect_contains(ext_bind_error(res), "asks for nvidia.com/gpumem/gpucores");
  json_object_put(res);
}

/* Prioritize reserves the foreign node it ranked first: the next pod's
 * filter sees the GPUs taken; the pod's own bind does not count them twice. */
static void test_reservation_counts(void **s) {
  (void)s;
  ext_add_pod("resv-f", PLAIN("2"), NULL, NULL, NULL);
  json_object *res = call("/prioritize", "resv-f", PLAIN("2"), NULL, "\"nv-resv\"");
  assert_int_equal(ext_score(res, "nv-resv"), 100);
  json_object_put(res);
  res = call("/filter", "resv-other", PLAIN("1"), NULL, "\"nv-resv\"");
  ext_expect_contains(ext_failed_reason(res, "nv-resv"), "0 of the node's 2 are not yet");
  json_object_put(res);
  res = ext_bind("resv-f", "nv-resv");
  assert_string_equal(ext_bind_error(res), "");
  json_object_put(res);
  assert_null(ext_assigned("resv-f"));
}

/* Views from the API (no watch): the same counts from the node's pod list. */
static void test_from_api(void **s) {
  (void)s;
  static const char *const blind[] = {"--no-watch", NULL};
  ext_sched_stop(false);
  assert_int_equal(ext_sched_start(blind), 0);
  json_object *res = call("/filter", "api", PLAIN("2"), NULL, "\"nv-b\",\"nv-full\",\"nv-a\"");
  printf("filter: %s\n", json_object_to_json_string(res));
  assert_true(ext_has_name(res, "nv-b")); /* bound-plain holds 2 of 4 */
  assert_true(ext_has_name(res, "nv-a"));
  ext_expect_contains(ext_failed_reason(res, "nv-full"), "0 of the node's 2 are not yet");
  json_object_put(res);
  res = call("/filter", "api-3", PLAIN("3"), NULL, "\"nv-b\"");
  ext_expect_contains(ext_failed_reason(res, "nv-b"), "2 of the node's 4 are not yet");
  json_object_put(res);
}

/* --foreign-gpu-nodes deny: every GPU pod fails there, as before issue 29;
 * a pod asking for no GPU is still placed anywhere. */
static void test_deny(void **s) {
  (void)s;
  static const char *const deny[] = {"--foreign-gpu-nodes", "deny", NULL};
  ext_sched_stop(false);
  assert_int_equal(ext_sched_start(deny), 0);
  ext_wait_watching();
  json_object *res = call("/filter", "denied", PLAIN("1"), NULL, "\"vg\",\"nv-a\"");
  printf("filter: %s\n", json_object_to_json_string(res));
  assert_true(ext_has_name(res, "vg"));
  ext_expect_refused(res, "nv-a", "--foreign-gpu-nodes deny keeps GPU pods off such nodes");
  json_object_put(res);
  res = call("/filter", "cpu-only", PLAIN("0"), NULL, "\"vg\",\"nv-a\"");
  assert_true(ext_has_name(res, "nv-a"));
  json_object_put(res);
  static const char *const bad[] = {"--foreign-gpu-nodes", "maybe", NULL};
  ext_sched_stop(false);
  assert_int_not_equal(ext_sched_start(bad), 0);
  assert_int_equal(ext_sched_start(NULL), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_plain_gpus_fit),    cmocka_unit_test(test_bound_pods_count),
      cmocka_unit_test(test_vgpu_asks_refused), cmocka_unit_test(test_foreign_ranked_last),
      cmocka_unit_test(test_bind_plain),        cmocka_unit_test(test_reservation_counts),
      cmocka_unit_test(test_from_api),          cmocka_unit_test(test_deny),
  };
  return cmocka_run_group_tests(tests, setup, ext_teardown);
}
