/* test_webhook_review.c -- vgpu-webhook's decision and its JSONPatch, through
 * vg_wh_review (the whole AdmissionReview in and out) and vg_wh_handle (the
 * endpoints), case by case as docs/admission.md states them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "decide.h"
#include "json_get.h"
#include "patch.h"
#include "review_fixture.h"
#include "server.h"

static const char *const all_resources[] = {
    "nvidia.com/vgpu",       "nvidia.com/gpumem",        "nvidia.com/gpumem-percentage",
    "nvidia.com/gpucores",   "aliyun.com/gpu-mem",       "nvidia.com/gpu",
    "nvidia.com/gpu.shared", "volcano.sh/gpu-mem.128Mi", "volcano.sh/gpu-core.percentage"};

/* A pod with one app container "main" whose resources.<list> has res: qty. */
static char *pod1(const char *list, const char *res, const char *qty, const char *extra_spec,
                  const char *metadata) {
  char *out = NULL;
  assert_true(asprintf(&out,
                       "{\"metadata\":%s,\"spec\":{%s\"containers\":[{\"name\":\"main\","
                       "\"image\":\"x\",\"resources\":{\"%s\":{\"cpu\":\"1\",\"%s\":\"%s\"}}}]}}",
                       metadata, extra_spec, list, res, qty) > 0);
  return out;
}

/* The response for pod (freed here). */
static json_object *review_pod(char *pod) {
  char *review = fx_review(pod);
  json_object *resp = fx_response(review);
  free(review);
  free(pod);
  return resp;
}

static bool allowed(json_object *resp) {
  json_object *a = vg_json_get(resp, "allowed");
  assert_non_null(a);
  return json_object_get_boolean(a);
}

/* The patch's ops as "path=value" lines, for exact comparison. */
static void assert_patch(json_object *resp, const char *want) {
  json_object *p = fx_patch(resp);
  assert_non_null(p);
  char got[1024] = "";
  for (size_t i = 0; i < json_object_array_length(p); i++) {
    json_object *op = json_object_array_get_idx(p, i);
    assert_string_equal(vg_json_get_str(op, "op"), "add");
    size_t n = strlen(got);
    snprintf(
        got + n, sizeof(got) - n, "%s=%s\n", vg_json_get_str(op, "path"),
        json_object_to_json_string_ext(vg_json_get(op, "value"),
                                       JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
  }
  assert_string_equal(got, want);
  json_object_put(p);
}

static void assert_unchanged(json_object *resp) {
  assert_true(allowed(resp));
  assert_null(vg_json_get(resp, "patch"));
  assert_null(vg_json_get(resp, "patchType"));
  json_object_put(resp);
}

static void assert_refused(json_object *resp, const char *part1, const char *part2) {
  assert_false(allowed(resp));
  assert_null(vg_json_get(resp, "patch"));
  json_object *st = vg_json_get(resp, "status");
  assert_int_equal(json_object_get_int(vg_json_get(st, "code")), 403);
  const char *msg = vg_json_get_str(st, "message");
  assert_non_null(msg);
  if (strstr(msg, part1) == NULL || strstr(msg, part2) == NULL)
    fail_msg("message \"%s\" lacks \"%s\" or \"%s\"", msg, part1, part2);
  json_object_put(resp);
}

static const char routed_fresh[] =
    "/spec/schedulerName=\"vgpu-scheduler\"\n"
    "/metadata/annotations={\"vgpu.io/original-scheduler-name\":\"default-scheduler\"}\n"
    "/metadata/labels={\"vgpu.io/managed\":\"true\"}\n";

/* Every dialect's resource routes, from limits; a pod without annotations
 * gets the map. CCE's compute share comes with its memory (seed 004), here
 * in requests so that the share, found first in limits, is what routes. */
static void test_each_resource_routes(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof(all_resources) / sizeof(all_resources[0]); i++) {
    char *pod = pod1("limits", all_resources[i], "1", "", "{\"name\":\"p\"}");
    if (strcmp(all_resources[i], "volcano.sh/gpu-core.percentage") == 0) {
      free(pod);
      pod = strdup(
          "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[{\"name\":\"main\","
          "\"resources\":{\"limits\":{\"volcano.sh/gpu-core.percentage\":\"1\"},"
          "\"requests\":{\"volcano.sh/gpu-mem.128Mi\":\"1\"}}}]}}");
    }
    json_object *r = review_pod(pod);
    assert_true(allowed(r));
    assert_patch(r, routed_fresh);
    assert_null(vg_json_get(r, "warnings")); /* default-scheduler: nothing to warn about */
    json_object_put(r);
  }
}

static void test_requests_route_too(void **state) {
  (void)state;
  json_object *r = review_pod(pod1("requests", "nvidia.com/gpumem", "4Gi", "", "{}"));
  assert_patch(r, routed_fresh);
  json_object_put(r);
}

static void test_zero_does_not_count(void **state) {
  (void)state;
  assert_unchanged(review_pod(pod1("limits", "nvidia.com/gpu", "0", "", "{}")));
  assert_unchanged(review_pod(pod1("requests", "aliyun.com/gpu-mem", "0k", "", "{}")));
  /* a zero and a real request: the real one routes */
  char *pod = strdup(
      "{\"spec\":{\"containers\":[{\"name\":\"a\",\"resources\":{\"limits\":"
      "{\"nvidia.com/gpu\":\"0\"}}},{\"name\":\"b\",\"resources\":{\"requests\":"
      "{\"nvidia.com/gpucores\":30}}}]}}");
  json_object *r = review_pod(pod);
  assert_patch(r, routed_fresh);
  json_object_put(r);
}

/* Seed 004: CCE's memory is a positive integer of 128 MiB units, and its
 * compute share comes only with memory: both refused at creation, where a
 * 0 of any other resource asks for none (test_zero_does_not_count). */
static void test_cce_rules(void **state) {
  (void)state;
  assert_refused(review_pod(pod1("limits", "volcano.sh/gpu-mem.128Mi", "0", "", "{}")),
                 "container \"main\": resources.limits volcano.sh/gpu-mem.128Mi is 0",
                 "CCE requires a positive integer number of 128 MiB units");
  assert_refused(review_pod(pod1("requests", "volcano.sh/gpu-mem.128Mi", "0k", "", "{}")),
                 "resources.requests volcano.sh/gpu-mem.128Mi is 0", "positive integer");
  assert_refused(review_pod(pod1("limits", "volcano.sh/gpu-mem.128Mi", "-1", "", "{}")),
                 "volcano.sh/gpu-mem.128Mi", "negative");
  assert_refused(
      review_pod(strdup("{\"spec\":{\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":"
                        "{\"volcano.sh/gpu-core.percentage\":\"25\"}}}]}}")),
      "container \"c\" asks for volcano.sh/gpu-core.percentage without volcano.sh/gpu-mem.128Mi",
      "only together with memory");
  /* memory and compute together, or memory alone, route */
  json_object *r = review_pod(strdup(
      "{\"spec\":{\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":"
      "{\"volcano.sh/gpu-mem.128Mi\":\"40\",\"volcano.sh/gpu-core.percentage\":\"25\"}}}]}}"));
  assert_patch(r, routed_fresh);
  json_object_put(r);
  r = review_pod(pod1("limits", "volcano.sh/gpu-mem.128Mi", "40", "", "{}"));
  assert_patch(r, routed_fresh);
  json_object_put(r);
}

static void test_unmanaged_resources_ignored(void **state) {
  (void)state;
  assert_unchanged(review_pod(pod1("limits", "example.com/fpga", "1", "", "{}")));
  assert_unchanged(review_pod(pod1("limits", "memory", "1Gi", "", "{}")));
  assert_unchanged(review_pod(strdup("{\"spec\":{\"containers\":[{\"name\":\"c\"}]}}")));
}

/* Another scheduler is replaced, recorded under an escaped key in the
 * existing map, and said in a warning. */
static void test_other_scheduler_replaced(void **state) {
  (void)state;
  json_object *r =
      review_pod(pod1("limits", "volcano.sh/gpu-mem.128Mi", "8", "\"schedulerName\":\"volcano\",",
                      "{\"annotations\":{\"team\":\"a\"}}"));
  assert_patch(r,
               "/spec/schedulerName=\"vgpu-scheduler\"\n"
               "/metadata/annotations/vgpu.io~1original-scheduler-name=\"volcano\"\n"
               "/metadata/labels={\"vgpu.io/managed\":\"true\"}\n");
  json_object *w = vg_json_get(r, "warnings");
  assert_non_null(w);
  assert_non_null(strstr(json_object_get_string(json_object_array_get_idx(w, 0)), "volcano"));
  json_object_put(r);
  r = review_pod(pod1("limits", "nvidia.com/vgpu", "1", "\"schedulerName\":\"default-scheduler\",",
                      "{\"annotations\":{}}"));
  assert_patch(r,
               "/spec/schedulerName=\"vgpu-scheduler\"\n"
               "/metadata/annotations/vgpu.io~1original-scheduler-name=\"default-scheduler\"\n"
               "/metadata/labels={\"vgpu.io/managed\":\"true\"}\n");
  json_object_put(r);
}

/* Reviewing the pod our own patch produced yields no patch (reinvocation). */
static void test_idempotent(void **state) {
  (void)state;
  const char *specs[] = {"", "\"schedulerName\":\"volcano\",",
                         "\"schedulerName\":\"default-scheduler\","};
  const char *metas[] = {"{}", "{\"annotations\":{\"x\":\"y\"}}", "{\"labels\":{}}"};
  for (int i = 0; i < 3; i++) {
    char *pod = pod1("limits", "nvidia.com/gpu.shared", "2", specs[i], metas[i]);
    char *review = fx_review(pod);
    json_object *r = fx_response(review);
    free(review);
    json_object *patch = fx_patch(r);
    assert_non_null(patch);
    char *mutated = fx_apply(pod, patch);
    json_object_put(patch);
    json_object_put(r);
    assert_non_null(strstr(mutated, "\"schedulerName\":\"vgpu-scheduler\""));
    assert_non_null(strstr(mutated, "\"vgpu.io/original-scheduler-name\":\""));
    assert_unchanged(review_pod(mutated));
    free(pod);
  }
}

/* A pod that already names vgpu-scheduler is left alone; one whose
 * scheduler was reset after routing gets it back without a second record. */
static void test_already_routed(void **state) {
  (void)state;
  assert_unchanged(
      review_pod(pod1("limits", "nvidia.com/gpu", "1", "\"schedulerName\":\"vgpu-scheduler\",",
                      "{\"labels\":{\"vgpu.io/managed\":\"true\"}}")));
  /* named by the user: only the label that scopes the guard is added */
  json_object *r =
      review_pod(pod1("limits", "nvidia.com/gpu", "1", "\"schedulerName\":\"vgpu-scheduler\",",
                      "{\"labels\":{\"app\":\"x\"}}"));
  assert_patch(r, "/metadata/labels/vgpu.io~1managed=\"true\"\n");
  assert_null(vg_json_get(r, "warnings"));
  json_object_put(r);
  r = review_pod(pod1("limits", "nvidia.com/gpu", "1", "\"schedulerName\":\"default-scheduler\",",
                      "{\"annotations\":{\"vgpu.io/original-scheduler-name\":\"volcano\"},"
                      "\"labels\":{\"vgpu.io/managed\":\"false\"}}"));
  assert_patch(
      r, "/spec/schedulerName=\"vgpu-scheduler\"\n/metadata/labels/vgpu.io~1managed=\"true\"\n");
  json_object_put(r);
}

static void test_opt_out(void **state) {
  (void)state;
  assert_unchanged(review_pod(pod1("limits", "nvidia.com/gpu", "1", "",
                                   "{\"annotations\":{\"vgpu.io/scheduler\":\"skip\"}}")));
  /* only "skip" opts out */
  json_object *r = review_pod(pod1("limits", "nvidia.com/gpu", "1", "",
                                   "{\"annotations\":{\"vgpu.io/scheduler\":\"yes\"}}"));
  assert_true(allowed(r));
  assert_non_null(vg_json_get(r, "patch"));
  json_object_put(r);
}

static void test_privileged_refused(void **state) {
  (void)state;
  assert_refused(
      review_pod(strdup("{\"spec\":{\"containers\":[{\"name\":\"side\",\"securityContext\":"
                        "{\"privileged\":true}},{\"name\":\"trainer\",\"securityContext\":"
                        "{\"privileged\":true},\"resources\":{\"limits\":"
                        "{\"nvidia.com/vgpu\":\"1\"}}}]}}")),
      "container \"trainer\" asks for nvidia.com/vgpu", "privileged");
  /* a privileged sidecar without GPUs does not stop the GPU container */
  json_object *r = review_pod(strdup(
      "{\"spec\":{\"containers\":[{\"name\":\"side\",\"securityContext\":{\"privileged\":true}},"
      "{\"name\":\"gpu\",\"securityContext\":{\"privileged\":false},\"resources\":{\"limits\":"
      "{\"nvidia.com/vgpu\":\"1\"}}}]}}"));
  assert_patch(r, routed_fresh);
  json_object_put(r);
}

static void test_init_container_refused(void **state) {
  (void)state;
  assert_refused(review_pod(strdup("{\"spec\":{\"initContainers\":[{\"name\":\"warmup\","
                                   "\"resources\":{\"requests\":{\"aliyun.com/gpu-mem\":\"2\"}}}],"
                                   "\"containers\":[{\"name\":\"main\"}]}}")),
                 "init container \"warmup\" asks for aliyun.com/gpu-mem", "app containers only");
  /* zero in an init container is nothing */
  json_object *r = review_pod(strdup(
      "{\"spec\":{\"initContainers\":[{\"name\":\"i\",\"resources\":{\"limits\":"
      "{\"nvidia.com/gpu\":\"0\"}}}],\"containers\":[{\"name\":\"m\",\"resources\":{\"limits\":"
      "{\"nvidia.com/gpu\":\"1\"}}}]}}"));
  assert_patch(r, routed_fresh);
  json_object_put(r);
}

/* Anything but a Pod CREATE is allowed unchanged, whatever it holds. */
static void test_not_pod_create(void **state) {
  (void)state;
  const char *pod =
      "{\"spec\":{\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":"
      "{\"nvidia.com/gpu\":\"1\"}}}]}}";
  char *base = fx_review(pod);
  const char *swaps[][2] = {
      {"\"operation\":\"CREATE\"", "\"operation\":\"DELETE\""},
      {"\"operation\":\"CREATE\"", "\"operation\":\"UPDATE\",\"subResource\":\"status\""},
      {"\"kind\":\"Pod\"", "\"kind\":\"Deployment\""},
      {"\"group\":\"\",\"version\":\"v1\",\"kind\"",
       "\"group\":\"apps\",\"version\":\"v1\",\"kind\""},
      {"\"operation\":\"CREATE\"", "\"operation\":\"CREATE\",\"subResource\":\"binding\""}};
  for (size_t i = 0; i < sizeof(swaps) / sizeof(swaps[0]); i++) {
    char text[2048];
    const char *at = strstr(base, swaps[i][0]);
    assert_non_null(at);
    snprintf(text, sizeof(text), "%.*s%s%s", (int)(at - base), base, swaps[i][1],
             at + strlen(swaps[i][0]));
    assert_unchanged(fx_response(text));
  }
  free(base);
}

#define SCHED VG_WH_DEFAULT_SCHEDULER_USER
#define NODE VG_WH_DEFAULT_NODE_USER

/* The answer to old -> pod by user (NULL: no userInfo), with writers w
 * (NULL: the defaults). */
static json_object *update_with(const char *old, const char *pod, const char *user,
                                const struct vg_wh_writers *w) {
  char *text = fx_update_review(old, pod, user);
  json_object *resp = w != NULL ? fx_response_with(text, w) : fx_response(text);
  free(text);
  return resp;
}

static json_object *update_as(const char *user, const char *old, const char *pod) {
  return update_with(old, pod, user, NULL);
}

/* A pod with the annotations map ann (JSON text). */
#define POD_ANN(ann)                                                            \
  "{\"metadata\":{\"name\":\"p\",\"labels\":{\"a\":\"b\"},\"annotations\":" ann \
  "},\"spec\":"                                                                 \
  "{\"containers\":[{\"name\":\"c\"}]}}"
#define POD_ASSIGNED(v) POD_ANN("{\"vgpu.io/assigned\":" v "}")
#define POD_PLAIN "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[{\"name\":\"c\"}]}}"

/* vgpu.io/assigned is the scheduler's (its Binding writes it first, a
 * resize rewrites it): an UPDATE that leaves it alone passes, one by anyone
 * else that sets, changes or removes it is refused, and so is a pod created
 * with it -- a tenant would otherwise write itself a larger grant. */
static void test_assignment_annotation_guarded(void **state) {
  (void)state;
  const char *mine = POD_ASSIGNED("\"{\\\"c\\\":[]}\"");
  const char *bigger = POD_ASSIGNED("\"{\\\"c\\\":[1]}\"");
  assert_unchanged(update_as("alice", mine, mine)); /* labels, other annotations: not ours */
  assert_unchanged(update_as("alice", POD_PLAIN, POD_PLAIN));
  assert_refused(update_as("alice", mine, bigger), "vgpu.io/assigned", "cannot be changed");
  assert_refused(update_as("alice", POD_PLAIN, mine), "vgpu.io/assigned", "cannot be changed");
  assert_refused(update_as("alice", mine, POD_PLAIN), "vgpu.io/assigned", "cannot be changed");
  assert_refused(update_as("alice", POD_ASSIGNED("7"), POD_ASSIGNED("7")), "vgpu.io/assigned",
                 "cannot be changed"); /* not a string: nothing of ours wrote it */
  /* the node agent reads it, never writes it */
  assert_refused(update_as(NODE, mine, bigger), "vgpu.io/assigned", "user " NODE);
  /* the scheduler: a resize records the new amounts there */
  assert_unchanged(update_as(SCHED, mine, bigger));
  assert_unchanged(update_as(SCHED, POD_PLAIN, mine));
  assert_unchanged(update_as(SCHED, mine, POD_PLAIN));
  /* an UPDATE without the old object cannot be judged */
  char *text = fx_review(mine), *at = strstr(text, "\"CREATE\"");
  memcpy(at, "\"UPDATE\"", 8);
  assert_refused(fx_response(text), "oldObject", "not a Pod");
  free(text);
  /* created with it, even opted out or asking for nothing */
  assert_refused(review_pod(strdup(mine)), "vgpu.io/assigned", "cannot be created with it");
  assert_refused(review_pod(strdup(POD_ASSIGNED("\"\""))), "vgpu.io/assigned", "created");
}

/* vgpu.io/assigned-mac, the scheduler's signature over vgpu.io/assigned,
 * is guarded exactly like it: only the scheduler changes it, nobody brings
 * it along at creation. */
#define POD_MAC(v) POD_ANN("{\"vgpu.io/assigned-mac\":" v "}")
static void test_assignment_mac_guarded(void **state) {
  (void)state;
  const char *mine = POD_MAC("\"v1:00\""), *other = POD_MAC("\"v1:01\"");
  assert_unchanged(update_as("alice", mine, mine));
  assert_refused(update_as("alice", mine, other), "vgpu.io/assigned-mac", "cannot be changed");
  assert_refused(update_as("alice", POD_PLAIN, mine), "vgpu.io/assigned-mac", "cannot be changed");
  assert_refused(update_as("alice", mine, POD_PLAIN), "vgpu.io/assigned-mac", "cannot be changed");
  assert_refused(update_as(NODE, mine, other), "vgpu.io/assigned-mac", "user " NODE);
  assert_unchanged(update_as(SCHED, mine, other));
  assert_unchanged(update_as(SCHED, POD_PLAIN, mine));
  assert_refused(review_pod(strdup(mine)), "vgpu.io/assigned-mac", "cannot be created with it");
}

/* The refusals word for word: the annotation, who may change it, who tried. */
static void test_guard_messages(void **state) {
  (void)state;
  json_object *r = update_as("alice", POD_PLAIN, POD_ASSIGNED("\"{}\""));
  assert_string_equal(
      vg_json_get_str(vg_json_get(r, "status"), "message"),
      "vgpu: the annotation vgpu.io/assigned cannot be changed by user alice: only vgpu-scheduler "
      "(" SCHED
      ") may change it (it records the GPU slices placed, from which the node agent "
      "grants each container its limits; docs/security.md)");
  json_object_put(r);
  r = update_as("alice", POD_PLAIN, POD_ANN("{\"vgpu.io/resize-status\":\"{}\"}"));
  assert_string_equal(vg_json_get_str(vg_json_get(r, "status"), "message"),
                      "vgpu: the annotation vgpu.io/resize-status cannot be changed by user alice: "
                      "only vgpu-scheduler (" SCHED ") or the node agent (" NODE
                      ") may change it (it records a resize request's outcome; docs/security.md)");
  json_object_put(r);
  r = review_pod(strdup(POD_ANN("{\"vgpu.io/resize-node\":\"{}\"}")));
  assert_string_equal(
      vg_json_get_str(vg_json_get(r, "status"), "message"),
      "vgpu: the annotation vgpu.io/resize-node is written on a scheduled pod by the "
      "node agent (it records that the node checked a resize request and put any "
      "decrease in force); a pod cannot be created with it: remove it (a copy of a "
      "scheduled pod, as kubectl get -o yaml prints it, carries it; "
      "docs/security.md)");
  json_object_put(r);
}

#define ACK(id) "{\"vgpu.io/resize-node\":\"{\\\"id\\\":\\\"" id "\\\"}\"}"

/* vgpu.io/resize-node is the node agent's alone: not the scheduler's, not
 * the user's. */
static void test_resize_node_guarded(void **state) {
  (void)state;
  assert_unchanged(update_as(NODE, POD_PLAIN, POD_ANN(ACK("1"))));
  assert_unchanged(update_as(NODE, POD_ANN(ACK("1")), POD_ANN(ACK("2"))));
  assert_unchanged(update_as(NODE, POD_ANN(ACK("1")), POD_PLAIN));
  assert_unchanged(update_as("alice", POD_ANN(ACK("1")), POD_ANN(ACK("1"))));
  assert_refused(update_as(SCHED, POD_PLAIN, POD_ANN(ACK("1"))),
                 "vgpu.io/resize-node cannot be changed by user " SCHED,
                 "only the node agent (" NODE ") may change it");
  assert_refused(update_as("alice", POD_ANN(ACK("1")), POD_PLAIN), "vgpu.io/resize-node",
                 "cannot be changed by user alice");
  /* a kubelet is not the node agent */
  assert_refused(update_as("system:node:gpu-1", POD_PLAIN, POD_ANN(ACK("1"))),
                 "vgpu.io/resize-node", "user system:node:gpu-1");
}

#define STATUS(phase) \
  "{\"vgpu.io/resize-status\":\"{\\\"id\\\":\\\"1\\\",\\\"phase\\\":\\\"" phase "\\\"}\"}"

/* vgpu.io/resize-status: the scheduler's (Accepted, Refused) and the node
 * agent's (Applied, Refused), no one else's. */
static void test_resize_status_guarded(void **state) {
  (void)state;
  assert_unchanged(update_as(SCHED, POD_PLAIN, POD_ANN(STATUS("Accepted"))));
  assert_unchanged(update_as(NODE, POD_ANN(STATUS("Accepted")), POD_ANN(STATUS("Applied"))));
  assert_unchanged(update_as(NODE, POD_ANN(STATUS("Applied")), POD_PLAIN));
  assert_refused(update_as("alice", POD_ANN(STATUS("Refused")), POD_ANN(STATUS("Applied"))),
                 "vgpu.io/resize-status cannot be changed by user alice",
                 "only vgpu-scheduler (" SCHED ") or the node agent (" NODE ")");
  assert_refused(update_as("alice", POD_ANN(STATUS("Applied")), POD_PLAIN), "vgpu.io/resize-status",
                 "cannot be changed");
  /* one key allowed does not carry another: the node agent may write the
   * status, not the assignment it came with */
  assert_refused(
      update_as(NODE, POD_PLAIN,
                POD_ANN("{\"vgpu.io/resize-status\":\"{}\",\"vgpu.io/assigned\":\"{}\"}")),
      "vgpu.io/assigned", "user " NODE);
}

/* The user's own keys (the request, the label) are RBAC's business. */
static void test_resize_request_free(void **state) {
  (void)state;
  const char *asked =
      "{\"metadata\":{\"name\":\"p\",\"labels\":{\"vgpu.io/resize\":\"requested\"},"
      "\"annotations\":{\"vgpu.io/resize-request\":\"{\\\"id\\\":\\\"1\\\"}\"}},\"spec\":"
      "{\"containers\":[{\"name\":\"c\"}]}}";
  assert_unchanged(update_as("alice", POD_PLAIN, asked));
  assert_unchanged(update_as("alice", asked, POD_PLAIN));
  assert_unchanged(update_as(NULL, POD_PLAIN, asked));
  /* and a pod may be created with them (nothing reads a request before the
   * pod runs) */
  assert_unchanged(review_pod(strdup(asked)));
}

/* A copy of a running pod carries the components' keys: refused at
 * creation, naming the key and saying to remove it. */
static void test_create_with_resize_keys(void **state) {
  (void)state;
  assert_refused(review_pod(strdup(POD_ANN(STATUS("Applied")))), "vgpu.io/resize-status",
                 "cannot be created with it: remove it");
  assert_refused(review_pod(strdup(POD_ANN(ACK("1")))), "vgpu.io/resize-node",
                 "cannot be created with it");
}

/* No userInfo, or an empty username, is no one: refused for the guarded
 * keys, fine for the rest. */
static void test_no_user_info(void **state) {
  (void)state;
  const char *mine = POD_ASSIGNED("\"{}\"");
  assert_refused(update_as(NULL, POD_PLAIN, mine), "vgpu.io/assigned",
                 "cannot be changed by a request without request.userInfo.username");
  assert_refused(update_as("", POD_PLAIN, mine), "vgpu.io/assigned", "without request.userInfo");
  assert_refused(update_as(NULL, POD_PLAIN, POD_ANN(ACK("1"))), "vgpu.io/resize-node",
                 "without request.userInfo");
  assert_unchanged(update_as(NULL, mine, mine));
}

/* --scheduler-user / --node-user replace the defaults (each set on its
 * own), and are repeatable. */
static void test_writer_flags(void **state) {
  (void)state;
  struct vg_wh_writers w = {0};
  struct vg_err err = {{0}};
  assert_int_equal(vg_wh_users_add(&w.scheduler, "--scheduler-user", "sched-a", &err), 0);
  assert_int_equal(vg_wh_users_add(&w.scheduler, "--scheduler-user", "sched-b", &err), 0);
  vg_wh_writers_default(&w);
  assert_int_equal(w.scheduler.n, 2);
  assert_int_equal(w.node.n, 1);
  assert_string_equal(w.node.name[0], NODE);
  const char *mine = POD_ASSIGNED("\"{}\"");
  assert_unchanged(update_with(POD_PLAIN, mine, "sched-b", &w));
  assert_refused(update_with(POD_PLAIN, mine, SCHED, &w), "only vgpu-scheduler (sched-a, sched-b)",
                 "user " SCHED);
  assert_unchanged(update_with(POD_PLAIN, POD_ANN(ACK("1")), NODE, &w));
  struct vg_wh_writers n = {0};
  assert_int_equal(vg_wh_users_add(&n.node, "--node-user", "agent", &err), 0);
  vg_wh_writers_default(&n);
  assert_string_equal(n.scheduler.name[0], SCHED);
  assert_unchanged(update_with(POD_PLAIN, POD_ANN(ACK("1")), "agent", &n));
  assert_refused(update_with(POD_PLAIN, POD_ANN(ACK("1")), NODE, &n), "the node agent (agent)",
                 "user " NODE);
  /* what the flags refuse */
  assert_int_equal(vg_wh_users_add(&n.node, "--node-user", "", &err), -1);
  assert_string_equal(err.msg, "--node-user: an empty user name");
  char longer[VG_WH_USER_MAX + 1];
  memset(longer, 'u', VG_WH_USER_MAX);
  longer[VG_WH_USER_MAX] = '\0';
  assert_int_equal(vg_wh_users_add(&n.node, "--node-user", longer, &err), -1);
  assert_non_null(strstr(err.msg, "longer than"));
  for (int i = n.node.n; i < VG_WH_USERS_MAX; i++)
    assert_int_equal(vg_wh_users_add(&n.node, "--node-user", "x", &err), 0);
  assert_int_equal(vg_wh_users_add(&n.node, "--node-user", "x", &err), -1);
  assert_non_null(strstr(err.msg, "more than"));
}

static void expect_status(const char *body, size_t len, unsigned status, const char *part) {
  struct vg_wh_resources res;
  vg_wh_resources_default(&res, NULL);
  struct vg_wh_writers w = {0};
  vg_wh_writers_default(&w);
  struct vg_wh_reply r;
  vg_wh_review(body, len, &res, &w, &r);
  assert_int_equal(r.status, status);
  assert_int_equal(r.result, VG_WH_R_INVALID);
  if (strstr(r.body, part) == NULL) fail_msg("reply \"%s\" lacks \"%s\"", r.body, part);
  free(r.body);
}

/* Bodies that cannot be answered: 400 with a message; Pods that cannot be
 * read: allowed false with the reason. */
static void test_malformed(void **state) {
  (void)state;
  const char *bad[][2] = {
      {"", "not JSON"},
      {"{\"apiVersion\":", "not JSON"},
      {"[1,2", "not JSON"},
      {"{} trailing", "not JSON"},
      /* Issue 27: null read "not JSON: success"; a \u0000 cut the string. */
      {"null", "request body is not a JSON object but null"},
      {"[{}]", "request body is not a JSON object but array"},
      {"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":"
       "{\"uid\":\"u\",\"object\":{\"metadata\":{\"annotations\":{\"vgpu.io/assigned\\u0000\":"
       "\"{}\"}}}}}",
       "a string holds a NUL character (\\u0000) at byte"},
      {"{}", "apiVersion"},
      {"{\"apiVersion\":\"v1\",\"kind\":\"AdmissionReview\"}", "apiVersion"},
      {"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"Pod\"}", "kind"},
      {"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\"}", "uid"},
      {"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":"
       "{\"uid\":7}}",
       "uid"}};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
    expect_status(bad[i][0], strlen(bad[i][0]), 400, bad[i][1]);
  expect_status("{\"a\":1}\0{", 9, 400, "not JSON"); /* a NUL inside the body */
  char *review = fx_review("\"not a pod\"");
  assert_refused(fx_response(review), "request.object", "not a Pod");
  free(review);
  assert_refused(review_pod(strdup("{\"spec\":{\"containers\":{}}}")), "spec.containers",
                 "not an array");
  assert_refused(review_pod(strdup("{\"spec\":{\"containers\":[{\"name\":\"c\",\"resources\":"
                                   "{\"limits\":[1]}}]}}")),
                 "container \"c\"", "not an object");
  assert_refused(review_pod(pod1("limits", "nvidia.com/gpu", "lots", "", "{}")),
                 "container \"main\"", "nvidia.com/gpu");
  assert_refused(review_pod(pod1("limits", "nvidia.com/gpu", "500m", "", "{}")),
                 "container \"main\"", "500m");
}

/* Over the body limit: 413 without parsing; a large but legal pod (1 MiB
 * of annotation) is answered as usual. */
static void test_huge(void **state) {
  (void)state;
  size_t big = VG_WH_MAX_BODY + 1;
  char *body = malloc(big);
  memset(body, ' ', big);
  expect_status(body, big, 413, "limit");
  free(body);
  size_t n = 1u << 20;
  char *meta = malloc(n + 64);
  memcpy(meta, "{\"annotations\":{\"big\":\"", 23);
  memset(meta + 23, 'a', n);
  strcpy(meta + 23 + n, "\"}}");
  json_object *r = review_pod(pod1("limits", "nvidia.com/gpu", "1", "", meta));
  free(meta);
  assert_patch(r,
               "/spec/schedulerName=\"vgpu-scheduler\"\n"
               "/metadata/annotations/vgpu.io~1original-scheduler-name=\"default-scheduler\"\n"
               "/metadata/labels={\"vgpu.io/managed\":\"true\"}\n");
  json_object_put(r);
}

/* --resources narrows what routes. */
static void test_resources_flag(void **state) {
  (void)state;
  struct vg_wh_resources res;
  struct vg_err err = {{0}};
  assert_int_equal(vg_wh_resources_parse(" aliyun.com/gpu-mem , nvidia.com/vgpu", &res, &err), 0);
  assert_int_equal(res.n, 2);
  assert_true(vg_wh_resources_has(&res, "nvidia.com/vgpu"));
  assert_false(vg_wh_resources_has(&res, "nvidia.com/gpu"));
  char *review = fx_review(
      "{\"spec\":{\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":"
      "{\"nvidia.com/gpu\":\"1\"}}}]}}");
  struct vg_wh_writers w = {0};
  vg_wh_writers_default(&w);
  struct vg_wh_reply r;
  vg_wh_review(review, strlen(review), &res, &w, &r);
  free(review);
  assert_int_equal(r.status, 200);
  assert_null(strstr(r.body, "patch"));
  free(r.body);
  assert_int_equal(vg_wh_resources_parse("nvidia.com/gpu,,x/y", &res, &err), -1);
  assert_non_null(strstr(err.msg, "empty"));
  assert_int_equal(vg_wh_resources_parse("gpu", &res, &err), -1);
  assert_non_null(strstr(err.msg, "\"gpu\""));
  assert_int_equal(res.n, 0);
  vg_wh_resources_default(&res, NULL);
  assert_int_equal(res.n, 9);
  for (size_t i = 0; i < 9; i++) assert_true(vg_wh_resources_has(&res, all_resources[i]));
}

/* Resources renamed in the device plugin's configuration and given to the
 * webhook with --resource route a pod under their new names; the default
 * names alone do not know them (before the dialect table, nothing did). */
static void test_renamed_resources_route(void **state) {
  (void)state;
  struct vg_resource_names names;
  struct vg_err err = {{0}};
  vg_resource_names_default(&names);
  assert_int_equal(vg_resource_names_set(&names, "vgpu.resourceName=example.com/vgpu", &err), 0);
  assert_int_equal(vg_resource_names_set(&names, "vgpu.resourceMem=example.com/vram", &err), 0);
  struct vg_wh_resources renamed, dflt;
  vg_wh_resources_default(&renamed, &names);
  vg_wh_resources_default(&dflt, NULL);
  assert_true(vg_wh_resources_has(&renamed, "example.com/vram"));
  assert_false(vg_wh_resources_has(&renamed, "nvidia.com/gpumem"));
  const char *asks[] = {"\"example.com/vgpu\":\"1\",\"example.com/vram\":\"3000\"",
                        "\"example.com/vram\":\"3000\""};
  for (size_t i = 0; i < 2; i++) {
    char text[512];
    snprintf(text, sizeof(text),
             "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[{\"name\":\"c\","
             "\"resources\":{\"limits\":{%s}}}]}}",
             asks[i]);
    json_object *pod = json_tokener_parse(text);
    assert_non_null(pod);
    struct vg_wh_decision d;
    vg_wh_decide(pod, &renamed, &d);
    assert_int_equal(d.verdict, VG_WH_ROUTE);
    vg_wh_decide(pod, &dflt, &d);
    assert_int_equal(d.verdict, VG_WH_ALLOW);
    json_object_put(pod);
  }
}

/* The label that scopes the guard's calls cannot be removed or changed, by
 * anyone; adding it, or keeping it, is no change. */
static void test_managed_label_guarded(void **state) {
  (void)state;
#define POD_LABELS(l) \
  "{\"metadata\":{\"name\":\"p\",\"labels\":" l "},\"spec\":{\"containers\":[{\"name\":\"c\"}]}}"
  const char *marked = POD_LABELS("{\"vgpu.io/managed\":\"true\"}");
  assert_refused(update_as("alice", marked, POD_LABELS("{}")), "label vgpu.io/managed",
                 "cannot be changed or removed");
  assert_refused(update_as(SCHED, marked, POD_PLAIN), "label vgpu.io/managed", "removed");
  assert_refused(update_as("alice", marked, POD_LABELS("{\"vgpu.io/managed\":\"false\"}")),
                 "label vgpu.io/managed", "changed");
  assert_unchanged(
      update_as("alice", marked, POD_LABELS("{\"vgpu.io/managed\":\"true\",\"x\":\"y\"}")));
  assert_unchanged(update_as("alice", POD_PLAIN, marked));
#undef POD_LABELS
}

/* The answer of the validating endpoint (POST /validate) to review_text. */
static json_object *validate(const char *review_text) {
  struct vg_wh_resources res;
  vg_wh_resources_default(&res, NULL);
  struct vg_wh_writers w = {0};
  vg_wh_writers_default(&w);
  struct vg_wh_metrics m = {0};
  struct vg_wh_reply r;
  vg_wh_handle(&res, &w, &m, "POST", "/validate", review_text, strlen(review_text), &r);
  assert_int_equal(r.status, 200);
  json_object *top = json_tokener_parse(r.body);
  free(r.body);
  json_object *resp = json_object_get(vg_json_get(top, "response"));
  json_object_put(top);
  return resp;
}

/* The validating guard never patches (a validating webhook may not), and
 * refuses what the mutating one refuses of vgpu's keys. */
static void test_validate_guards_only(void **state) {
  (void)state;
  char *pod = pod1("limits", "nvidia.com/gpu", "1", "", "{}");
  char *text = fx_review(pod);
  assert_unchanged(validate(text)); /* a GPU pod: no routing here */
  free(text);
  free(pod);
  text = fx_review(POD_ASSIGNED("\"{}\""));
  assert_refused(validate(text), "vgpu.io/assigned", "cannot be created with it");
  free(text);
  text = fx_update_review(POD_ASSIGNED("\"{}\""), POD_ASSIGNED("\"{ }\""), "alice");
  assert_refused(validate(text), "vgpu.io/assigned", "user alice");
  free(text);
  text = fx_update_review(POD_ASSIGNED("\"{}\""), POD_ASSIGNED("\"{ }\""), SCHED);
  assert_unchanged(validate(text));
  free(text);
}

/* Reviews whose pods are null or missing are refused, by either endpoint:
 * nothing can be judged without them (issue 29). */
static void test_null_objects(void **state) {
  (void)state;
  char *text = fx_review("null");
  assert_refused(fx_response(text), "request.object", "not a Pod");
  assert_refused(validate(text), "request.object", "not a Pod");
  free(text);
  text = fx_update_review("null", POD_ASSIGNED("\"{}\""), SCHED);
  assert_refused(fx_response(text), "oldObject", "not a Pod");
  assert_refused(validate(text), "oldObject", "not a Pod");
  free(text);
  text = fx_update_review(POD_ASSIGNED("\"{}\""), "null", SCHED);
  assert_refused(fx_response(text), "request.object", "not a Pod");
  free(text);
}

static void test_pointer_escape(void **state) {
  (void)state;
  char buf[32];
  assert_true(vg_wh_pointer_escape("vgpu.io/a~b", buf, sizeof(buf)));
  assert_string_equal(buf, "vgpu.io~1a~0b");
  assert_false(vg_wh_pointer_escape("a/b/c", buf, 5));
}

static void expect_endpoint(struct vg_wh_metrics *m, const char *method, const char *url,
                            unsigned status, const char *part) {
  struct vg_wh_resources res;
  vg_wh_resources_default(&res, NULL);
  struct vg_wh_writers w = {0};
  vg_wh_writers_default(&w);
  struct vg_wh_reply r;
  vg_wh_handle(&res, &w, m, method, url, "", 0, &r);
  assert_int_equal(r.status, status);
  if (strstr(r.body, part) == NULL)
    fail_msg("%s %s: \"%s\" lacks \"%s\"", method, url, r.body, part);
  free(r.body);
}

static void test_endpoints(void **state) {
  (void)state;
  struct vg_wh_metrics m = {0};
  expect_endpoint(&m, "GET", "/healthz", 200, "ok");
  expect_endpoint(&m, "GET", "/mutate", 405, "POST");
  expect_endpoint(&m, "GET", "/validate", 405, "POST");
  expect_endpoint(&m, "POST", "/validate", 400, "not JSON");
  expect_endpoint(&m, "POST", "/mutate", 400, "not JSON");
  expect_endpoint(&m, "GET", "/nope", 404, "/mutate");
  expect_endpoint(&m, "DELETE", "/healthz", 405, "GET");
  expect_endpoint(&m, "GET", "/metrics", 200, "vgpu_webhook_reviews_total{result=\"invalid\"} 2\n");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_each_resource_routes),
      cmocka_unit_test(test_requests_route_too),
      cmocka_unit_test(test_zero_does_not_count),
      cmocka_unit_test(test_cce_rules),
      cmocka_unit_test(test_unmanaged_resources_ignored),
      cmocka_unit_test(test_other_scheduler_replaced),
      cmocka_unit_test(test_idempotent),
      cmocka_unit_test(test_already_routed),
      cmocka_unit_test(test_opt_out),
      cmocka_unit_test(test_privileged_refused),
      cmocka_unit_test(test_init_container_refused),
      cmocka_unit_test(test_not_pod_create),
      cmocka_unit_test(test_assignment_annotation_guarded),
      cmocka_unit_test(test_assignment_mac_guarded),
      cmocka_unit_test(test_guard_messages),
      cmocka_unit_test(test_resize_node_guarded),
      cmocka_unit_test(test_resize_status_guarded),
      cmocka_unit_test(test_resize_request_free),
      cmocka_unit_test(test_create_with_resize_keys),
      cmocka_unit_test(test_no_user_info),
      cmocka_unit_test(test_writer_flags),
      cmocka_unit_test(test_malformed),
      cmocka_unit_test(test_renamed_resources_route),
      cmocka_unit_test(test_huge),
      cmocka_unit_test(test_resources_flag),
      cmocka_unit_test(test_managed_label_guarded),
      cmocka_unit_test(test_validate_guards_only),
      cmocka_unit_test(test_null_objects),
      cmocka_unit_test(test_pointer_escape),
      cmocka_unit_test(test_endpoints),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
