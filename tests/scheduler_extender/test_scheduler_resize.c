/*
 * test_scheduler_resize.c -- vgpu-scheduler's half of a live resize
 * (src/extender/extender_resize.c) against the fake API server: the real
 * binary, polling every 50 ms, answers requests the "node agent" (this test)
 * acknowledged, with placement's rules, and leaves the others alone.
 *
 * node-r: one 8 GiB GPU (GPU-node-r-0). Pod "a" holds 4 GiB / 30 %, pod
 * "b" 3 GiB / 50 %; so "a" may grow to 5 GiB and 50 %, no further.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>
#include <json-c/json.h>

#include "ext_harness.h"
#include "json_get.h"
#include "resize.h"

#define GPU "GPU-node-r-0"

static char *assigned(const char *node, long long mem, int cores) {
  char *s = NULL;
  if (asprintf(&s,
               "{\"version\":1,\"node\":\"%s\",\"containers\":[{\"name\":\"main\",\"resource\":"
               "\"nvidia.com/vgpu\",\"gpus\":[{\"uuid\":\"" GPU "\",\"index\":0,\"memory\":%lld,"
               "\"cores\":%d}]}]}",
               node, mem, cores) < 0)
    abort();
  return s;
}

static int setup(void **state) {
  (void)state;
  if (ext_api_start() != 0) return -1;
  ext_add_vgpu_node("node-r");
  char *a = assigned("node-r", 4 * EXT_GIB, 30), *b = assigned("node-r", 3 * EXT_GIB, 50);
  ext_add_pod("a", "\"nvidia.com/vgpu\":\"1\"", NULL, "node-r", a);
  ext_add_pod("b", "\"nvidia.com/vgpu\":\"1\"", NULL, "node-r", b);
  free(a);
  free(b);
  static const char *const extra[] = {"--resize-poll-ms", "50", NULL};
  return ext_sched_start(extra);
}

static struct vg_assign_gpu gpu_of(const char *pod) {
  json_object *p = ext_get_pod(pod);
  struct vg_assignment a;
  assert_int_equal(vg_assign_from_pod(p, &a, NULL), 1);
  struct vg_assign_gpu g = a.ctr[0].gpu[0];
  vg_assign_free(&a);
  json_object_put(p);
  return g;
}

/* Warning Events with reason ResizeRefused whose message contains part. */
static int refused_events(const char *part) {
  return ext_events("ResizeRefused", NULL, part, NULL, 0);
}

static void test_grow_within_room_is_recorded(void **s) {
  (void)s;
  long user = ext_api_requests("PATCH /api/v1/namespaces/default/pods/a");
  ext_resize_ask("a", "grow-1", 5 * EXT_GIB, 50, true);
  struct vg_resize_status st = ext_resize_wait_status("a", "grow-1");
  assert_int_equal(st.phase, VG_RESIZE_ACCEPTED);
  /* The user's request went to the Pod, vgpu-scheduler's record to pods/status:
   * its role has no patch of Pods (docs/install.md, "Privileges"). */
  assert_int_equal(ext_api_requests("PATCH /api/v1/namespaces/default/pods/a/status"), 1);
  assert_int_equal(ext_api_requests("PATCH /api/v1/namespaces/default/pods/a") - user, 2);
  struct vg_assign_gpu g = gpu_of("a");
  assert_int_equal(g.memory, 5 * EXT_GIB);
  assert_int_equal(g.cores, 50);
  assert_string_equal(g.uuid, GPU);
  assert_int_equal(gpu_of("b").memory, 3 * EXT_GIB); /* the neighbour untouched */
}

static void test_grow_past_room_is_refused(void **s) {
  (void)s;
  ext_resize_ask("a", "grow-2", 5 * EXT_GIB + (1 << 20), -1, true); /* one MiB too many */
  struct vg_resize_status st = ext_resize_wait_status("a", "grow-2");
  assert_int_equal(st.phase, VG_RESIZE_REFUSED);
  ext_expect_contains(st.reason, GPU);
  ext_expect_contains(st.reason, "does not fit");
  assert_int_equal(gpu_of("a").memory, 5 * EXT_GIB); /* the record unchanged */
  assert_true(refused_events("grow-2") == 1);
}

static void test_cores_past_room_are_refused(void **s) {
  (void)s;
  ext_resize_ask("a", "cores-1", -1, 51, true);
  struct vg_resize_status st = ext_resize_wait_status("a", "cores-1");
  assert_int_equal(st.phase, VG_RESIZE_REFUSED);
  ext_expect_contains(st.reason, "of its compute");
  ext_resize_ask("a", "cores-2", -1, 100, true); /* exclusive while b shares the GPU */
  st = ext_resize_wait_status("a", "cores-2");
  assert_int_equal(st.phase, VG_RESIZE_REFUSED);
  assert_int_equal(gpu_of("a").cores, 50);
}

static void test_shrink_is_recorded(void **s) {
  (void)s;
  ext_resize_ask("a", "shrink-1", 1 * EXT_GIB, 10, true);
  assert_int_equal(ext_resize_wait_status("a", "shrink-1").phase, VG_RESIZE_ACCEPTED);
  struct vg_assign_gpu g = gpu_of("a");
  assert_int_equal(g.memory, 1 * EXT_GIB);
  assert_int_equal(g.cores, 10);
  /* The room freed is really free: b may now grow to 7 GiB. */
  ext_resize_ask("b", "grow-b", 7 * EXT_GIB, -1, true);
  assert_int_equal(ext_resize_wait_status("b", "grow-b").phase, VG_RESIZE_ACCEPTED);
  assert_int_equal(gpu_of("b").memory, 7 * EXT_GIB);
}

static void test_unacknowledged_is_left_to_the_node(void **s) {
  (void)s;
  ext_resize_ask("a", "early-1", 2 * EXT_GIB, -1, false);
  nanosleep(&(struct timespec){0, 400000000L}, NULL); /* eight polls */
  json_object *p = ext_get_pod("a");
  struct vg_resize_view v;
  vg_resize_view_of(p, &v, NULL);
  json_object_put(p);
  assert_true(v.has_status);
  assert_string_not_equal(v.status.id, "early-1");
  assert_int_equal(gpu_of("a").memory, 1 * EXT_GIB);
}

static void test_unknown_container_is_refused(void **s) {
  (void)s;
  struct vg_resize_request q = {.memory = EXT_GIB, .cores = -1};
  snprintf(q.id, sizeof(q.id), "who-1");
  snprintf(q.container, sizeof(q.container), "sidecar");
  char *text = vg_resize_request_format(&q), *ack = vg_resize_node_format("who-1");
  json_object *ann = json_object_new_object();
  json_object_object_add(ann, VG_RESIZE_REQUEST_ANNOTATION, json_object_new_string(text));
  json_object_object_add(ann, VG_RESIZE_NODE_ANNOTATION, json_object_new_string(ack));
  struct vg_err err = {{0}};
  assert_int_equal(vg_k8s_patch_pod_metadata(ext_api, "default", "a", NULL, ann, NULL, NULL, &err),
                   0);
  json_object_put(ann);
  free(text);
  free(ack);
  struct vg_resize_status st = ext_resize_wait_status("a", "who-1");
  assert_int_equal(st.phase, VG_RESIZE_REFUSED);
  ext_expect_contains(st.reason, "container sidecar");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_grow_within_room_is_recorded),
      cmocka_unit_test(test_grow_past_room_is_refused),
      cmocka_unit_test(test_cores_past_room_are_refused),
      cmocka_unit_test(test_shrink_is_recorded),
      cmocka_unit_test(test_unacknowledged_is_left_to_the_node),
      cmocka_unit_test(test_unknown_container_is_refused),
  };
  return cmocka_run_group_tests(tests, setup, ext_teardown);
}
