/*
 * test_scheduler_unrouted.c -- the Warning Event NotRouted
 * (src/extender/extender_unrouted.c) against the fake API server: the real
 * binary's pod watch tells a Pending GPU pod that names another scheduler
 * (created while vgpu-webhook was down) why it will never run, once; and
 * leaves alone the pods that opted out, ask for no GPU or only whole
 * nvidia.com/gpu (a mixed cluster's other plugin may serve it), name
 * vgpu-scheduler or are bound.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <json-c/json.h>

#include "ext_harness.h"
#include "json_get.h"

#define GPU_ASK "\"nvidia.com/vgpu\":\"1\",\"nvidia.com/gpumem\":\"3000\""

static int setup(void **state) {
  (void)state;
  if (ext_api_start() != 0) return -1;
  ext_add_vgpu_node("node-u");
  return ext_sched_start(NULL);
}

/* NotRouted Events on pod; the last one's message into msg. */
static int not_routed(const char *pod, char *msg, size_t len) {
  return ext_events("NotRouted", pod, NULL, msg, len);
}

static void wait_told(const char *pod) {
  for (int i = 0; i < 100 && not_routed(pod, NULL, 0) == 0; i++) usleep(50 * 1000);
  assert_int_equal(not_routed(pod, NULL, 0), 1);
}

/* A Pending pod naming vgpu-scheduler (the webhook routed it). */
static void add_routed(const char *name) {
  char *p = ext_pod_json(name, GPU_ASK, NULL, NULL, NULL), *out = NULL;
  char *at = strstr(p, "\"spec\":{");
  assert_non_null(at);
  at += strlen("\"spec\":{");
  if (asprintf(&out, "%.*s\"schedulerName\":\"vgpu-scheduler\",%s", (int)(at - p), p, at) < 0)
    abort();
  ext_admin("/_test/pods", out);
  free(out);
  free(p);
}

static void test_unrouted_gpu_pod_is_told_once(void **state) {
  (void)state;
  ext_wait_watching();
  ext_add_pod("skipped", GPU_ASK, "\"vgpu.io/scheduler\":\"skip\"", NULL, NULL);
  ext_add_pod("no-gpu", "\"example.com/dongle\":\"1\"", NULL, NULL, NULL);
  ext_add_pod("plain", "\"nvidia.com/gpu\":\"1\"", NULL, NULL,
              NULL); /* NVIDIA's plugin may serve it */
  ext_add_pod("bound", GPU_ASK, NULL, "node-u", NULL);
  add_routed("routed");
  ext_add_pod("unrouted", GPU_ASK, NULL, NULL, NULL);
  wait_told("unrouted");
  char msg[600];
  assert_int_equal(not_routed("unrouted", msg, sizeof(msg)), 1);
  ext_expect_contains(msg, "names scheduler default-scheduler, not vgpu-scheduler");
  ext_expect_contains(msg, "delete the pod and create it again");
  /* the watch delivers in order: the pods added before were judged already */
  const char *quiet[] = {"skipped", "no-gpu", "plain", "bound", "routed"};
  for (size_t i = 0; i < sizeof(quiet) / sizeof(quiet[0]); i++)
    if (not_routed(quiet[i], NULL, 0) != 0) fail_msg("pod %s was told NotRouted", quiet[i]);
  /* the same pod again (a MODIFIED event, same UID): not told twice */
  ext_add_pod("unrouted", GPU_ASK, "\"touched\":\"yes\"", NULL, NULL);
  ext_add_pod("unrouted-2", GPU_ASK, NULL, NULL, NULL);
  wait_told("unrouted-2");
  assert_int_equal(not_routed("unrouted", NULL, 0), 1);
}

/* NotRouted Events recorded so far, on any pod. */
static int events_recorded(void) { return ext_events("NotRouted", NULL, NULL, NULL, 0); }

/* A slow API server for Events does not hold the pod watch: with every
 * Event answered a second late, the watch delivers three unrouted pods and
 * one more while at most one Event has been recorded (posting them from the
 * watch's thread, it could deliver the fourth only after three seconds and
 * three Events). All three are told, in the end. */
static void test_slow_events_do_not_hold_the_watch(void **state) {
  (void)state;
  ext_wait_watching();
  int before_events = events_recorded();
  ext_admin("/_test/slow_events?ms=1000", "{}");
  const char *pods[] = {"slow-1", "slow-2", "slow-3"};
  /* each waits until the watch delivered it (ext_admin) */
  for (int i = 0; i < 3; i++) ext_add_pod(pods[i], GPU_ASK, NULL, NULL, NULL);
  ext_add_pod("after", "\"example.com/dongle\":\"1\"", NULL, NULL, NULL);
  int recorded = events_recorded() - before_events;
  if (recorded > 1) fail_msg("the watch waited for %d Events before its next pod", recorded);
  for (int i = 0; i < 3; i++) {
    for (int t = 0; t < 150 && not_routed(pods[i], NULL, 0) == 0; t++) usleep(50 * 1000);
    if (not_routed(pods[i], NULL, 0) != 1) fail_msg("pod %s was not told", pods[i]);
  }
  ext_admin("/_test/slow_events?ms=0", "{}");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_unrouted_gpu_pod_is_told_once),
      cmocka_unit_test(test_slow_events_do_not_hold_the_watch),
  };
  return cmocka_run_group_tests(tests, setup, ext_teardown);
}
