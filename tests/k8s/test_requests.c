/* test_requests.c -- what a pod requests and a node offers, as kube-scheduler
 * counts them (src/k8s/requests.c): CPU and memory, and one extended
 * resource's count (nvidia.com/gpu on a node another device plugin serves,
 * docs/scheduler.md "Foreign GPU nodes"). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include <json-c/json.h>

#include "requests.h"

#define GPU "nvidia.com/gpu"

static json_object *parse(const char *text) {
  json_object *o = json_tokener_parse(text);
  if (!o) fail_msg("not JSON: %s", text);
  return o;
}

/* The larger of the app containers' sum (3) and the largest init container
 * (2), plus the overhead (1); a limit without a request is the request. */
static void test_pod_count_as_kube_scheduler(void **state) {
  (void)state;
  json_object *pod = parse(
      "{\"spec\":{\"containers\":["
      "{\"name\":\"a\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"2\"}}},"
      "{\"name\":\"b\",\"resources\":{\"requests\":{\"nvidia.com/gpu\":\"1\",\"cpu\":\"500m\"}}}],"
      "\"initContainers\":[{\"name\":\"i\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"2\"}}}],"
      "\"overhead\":{\"nvidia.com/gpu\":\"1\"}}}");
  int64_t n = -1;
  struct vg_err err = {""};
  assert_int_equal(vg_pod_request_count(pod, GPU, &n, &err), 0);
  assert_int_equal(n, 4);
  struct vg_cpu_mem r;
  assert_int_equal(vg_pod_requests(pod, &r, &err), 0); /* the CPU and memory rule is unchanged */
  assert_int_equal(r.cpu, 500);
  assert_int_equal(r.mem, 0);
  json_object_put(pod);
  pod = parse("{\"spec\":{\"containers\":[{\"name\":\"c\"}]}}");
  assert_int_equal(vg_pod_request_count(pod, GPU, &n, &err), 0);
  assert_int_equal(n, 0); /* names none */
  json_object_put(pod);
}

static void test_pod_count_bad_quantity(void **state) {
  (void)state;
  json_object *pod = parse(
      "{\"spec\":{\"containers\":[{\"name\":\"c\",\"resources\":"
      "{\"limits\":{\"nvidia.com/gpu\":\"two\"}}}]}}");
  int64_t n = 0;
  struct vg_err err = {""};
  assert_int_equal(vg_pod_request_count(pod, GPU, &n, &err), -1);
  assert_non_null(strstr(err.msg, "container c limits nvidia.com/gpu"));
  json_object_put(pod);
}

static void test_node_count(void **state) {
  (void)state;
  json_object *node = parse(
      "{\"status\":{\"allocatable\":{\"cpu\":\"8\",\"memory\":\"32Gi\",\"nvidia.com/"
      "gpu\":\"2\"}}}");
  int64_t n = -1;
  struct vg_err err = {""};
  assert_int_equal(vg_node_allocatable_count(node, GPU, &n, &err), 1);
  assert_int_equal(n, 2);
  struct vg_cpu_mem a;
  assert_int_equal(vg_node_allocatable(node, &a, &err), 1);
  assert_int_equal(a.cpu, 8000);
  assert_int_equal(a.mem, 32768);
  json_object_put(node);
  node = parse("{\"status\":{\"allocatable\":{\"cpu\":\"8\",\"memory\":\"32Gi\"}}}");
  assert_int_equal(vg_node_allocatable_count(node, GPU, &n, &err), 0); /* not named */
  json_object_put(node);
  node = parse("{\"status\":{\"allocatable\":{\"nvidia.com/gpu\":\"-1\"}}}");
  assert_int_equal(vg_node_allocatable_count(node, GPU, &n, &err), -1);
  json_object_put(node);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_pod_count_as_kube_scheduler),
      cmocka_unit_test(test_pod_count_bad_quantity),
      cmocka_unit_test(test_node_count),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
