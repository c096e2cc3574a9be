/*
 * test_scheduler_extender.c -- vgpu-scheduler end to end: the fake API server
 * (tests/k8s/fake_apiserver.py) holds nodes with vgpu.io/gpu-inventory
 * annotations and pods; the real binary serves the extender verbs on a free
 * port; requests are kube-scheduler-style ExtenderArgs bodies sent with
 * libcurl. Checks filter (both node modes), prioritize, bind (the assignment
 * annotation and the Binding), double-booking under concurrent binds, that
 * a pod no node can take is answered 200 with every node failed and why, and
 * that malformed bodies get a 400 with a JSON error, never a crash.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>
#include <cmocka.h>
#include <curl/curl.h>
#include <json-c/json.h>

#include "ext_harness.h"

/* Nodes of the vgpu dialect: ngpu GPUs of mem_gib GiB, `slots` slices each. */
static char *node_json(const char *name, int ngpu, int mem_gib, int slots, bool unhealthy) {
  char res[256];
  snprintf(res, sizeof(res),
           "[{\"name\":\"nvidia.com/vgpu\",\"dialect\":\"vgpu\",\"count\":%d,\"unit\":0,"
           "\"memory\":%lld,\"cores\":100}]",
           slots, mem_gib * EXT_GIB);
  return ext_node_json(name, ngpu, mem_gib, "NVIDIA A100 (vgpu-sim)", res, unhealthy ? 1 : 0);
}

static void add_node(const char *name, int ngpu, int mem_gib, int slots, bool unhealthy) {
  char *n = node_json(name, ngpu, mem_gib, slots, unhealthy);
  ext_admin("/_test/nodes", n);
  free(n);
}

/* A Pod asking vgpu count, mem MiB (0: none), cores % (0: none). */
static char *pod_json(const char *name, int count, int mem, int cores, const char *node,
                      const char *assigned) {
  char lim[256];
  int k = snprintf(lim, sizeof(lim), "\"nvidia.com/vgpu\":\"%d\"", count);
  if (mem) k += snprintf(lim + k, sizeof(lim) - (size_t)k, ",\"nvidia.com/gpumem\":\"%d\"", mem);
  if (cores) snprintf(lim + k, sizeof(lim) - (size_t)k, ",\"nvidia.com/gpucores\":\"%d\"", cores);
  return ext_pod_json(name, lim, NULL, node, assigned);
}

static void add_pod(const char *name, int count, int mem, int cores, const char *node,
                    const char *assigned) {
  char *p = pod_json(name, count, mem, cores, node, assigned);
  ext_admin("/_test/pods", p);
  free(p);
}

/* ---- fixture ---- */

static int setup(void **state) {
  (void)state;
  if (ext_api_start() != 0) return -1;
  /* node-a: 2 x 16 GiB, GPU 0 half taken (8 GiB, 50 %) by pod "old". */
  add_node("node-a", 2, 16, 4, false);
  add_pod("old", 1, 8192, 50, "node-a",
          "{\"version\":1,\"node\":\"node-a\",\"containers\":[{\"name\":\"main\",\"resource\":"
          "\"nvidia.com/vgpu\",\"gpus\":"
          "[{\"uuid\":\"GPU-node-a-0\",\"index\":0,\"memory\":8589934592,\"cores\":50}]}]}");
  add_node("node-b", 1, 8, 4, false);  /* too small for 12 GiB */
  add_node("node-c", 0, 0, 0, false);  /* no inventory annotation */
  add_node("node-d", 1, 16, 4, true);  /* its only GPU is Unhealthy */
  add_node("node-e", 1, 16, 1, false); /* one slot: the race */
  add_node("node-f", 2, 16, 4, false); /* empty: FGD prefers... anything */
  return ext_sched_start(NULL);
}

/* ---- tests ---- */

static void test_healthz_metrics(void **s) {
  (void)s;
  char *out;
  assert_int_equal(ext_call("/healthz", NULL, 0, &out), 200);
  assert_string_equal(out, "ok\n");
  free(out);
  assert_int_equal(ext_call("/metrics", NULL, 0, &out), 200);
  ext_expect_contains(out, "vgpu_scheduler_requests_total{verb=\"filter\"}");
  ext_expect_contains(out, "vgpu_scheduler_request_duration_seconds_sum{verb=\"filter\"}");
  ext_expect_contains(out, "vgpu_scheduler_request_duration_seconds_count{verb=\"bind\"}");
  free(out);
  assert_int_equal(ext_call("/nope", NULL, 0, &out), 404);
  free(out);
  assert_int_equal(ext_call("/filter", NULL, 0, &out), 405);
  free(out);
}

static void test_filter_node_names(void **s) {
  (void)s;
  char *pod = pod_json("p", 1, 12288, 40, NULL, NULL);
  char *body =
      ext_args_names(pod, "\"node-a\",\"node-b\",\"node-c\",\"node-d\",\"node-x\",\"node-f\"");
  json_object *res = ext_post("/filter", body, 200);
  printf("filter: %s\n", json_object_to_json_string(res));
  assert_true(ext_has_name(res, "node-a")); /* GPU 1 is free */
  assert_true(ext_has_name(res, "node-f"));
  assert_false(ext_has_name(res, "node-b"));
  ext_expect_contains(ext_failed_reason(res, "node-b"), "largest GPU here has 8192 MiB");
  ext_expect_contains(ext_failed_reason(res, "node-c"), "no vgpu.io/gpu-inventory annotation");
  ext_expect_contains(ext_failed_reason(res, "node-d"),
                      "the node has 0 healthy nvidia.com/vgpu GPUs");
  ext_expect_contains(ext_failed_reason(res, "node-x"), "node not found");
  /* None of these would fit with other pods evicted: preemption is pointless. */
  ext_expect_refused(res, "node-b", "largest GPU here has 8192 MiB");
  ext_expect_refused(res, "node-c", "no vgpu.io/gpu-inventory annotation");
  ext_expect_refused(res, "node-d", "the node has 0 healthy nvidia.com/vgpu GPUs");
  ext_expect_refused(res, "node-x", "node not found");
  json_object *e = NULL;
  assert_true(json_object_object_get_ex(res, "Error", &e));
  assert_string_equal(json_object_get_string(e), "");
  json_object_put(res);
  free(body);
  free(pod);

  /* Two GPUs with 12 GiB: node-a has only one (GPU 0 is half used). */
  pod = pod_json("p", 2, 12288, 0, NULL, NULL);
  body = ext_args_names(pod, "\"node-a\",\"node-f\"");
  res = ext_post("/filter", body, 200);
  assert_false(ext_has_name(res, "node-a"));
  ext_expect_contains(ext_failed_reason(res, "node-a"), "needs 2 GPUs each with 12288 MiB");
  assert_null(ext_unresolvable_reason(res, "node-a")); /* evicting "old" would make room */
  assert_true(ext_has_name(res, "node-f"));
  json_object_put(res);
  free(body);
  free(pod);
}

static int count_of(const char *s, const char *part) {
  int n = 0;
  for (const char *p = s; (p = strstr(p, part)) != NULL; p += strlen(part)) n++;
  return n;
}

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* Issue 27: at --cache-ttl-ms 0 every name was read from the API server on
 * its own, duplicates again: 5,000 names took 20 s, past kube-scheduler's
 * 5 s timeout. Each name is now read once per request, and 16 or more names
 * missing the cache are read from one Node list and one Pod list. Fitting
 * names are listed as often as they were asked for (NodeNames is the subset
 * of the input); the failed maps name each node once, with one reason. */
static void test_filter_many_names(void **s) {
  (void)s;
  static const char *const fixed[] = {"node-a", "node-b", "node-c", "node-x"};
  char name[32];
  for (int k = 0; k < 20; k++) {
    snprintf(name, sizeof(name), "many-%02d", k);
    add_node(name, 1, 16, 4, false);
  }
  enum { N = 5000 };
  size_t cap = (size_t)N * 12 + 1, used = 0;
  char *names = malloc(cap);
  assert_non_null(names);
  int fits = 0, node_a = 0;
  for (int i = 0; i < N; i++) {
    int k = i % 24;
    if (k < 4)
      snprintf(name, sizeof(name), "%s", fixed[k]);
    else
      snprintf(name, sizeof(name), "many-%02d", k - 4);
    fits += k == 0 || k >= 4;
    node_a += k == 0;
    used += (size_t)snprintf(names + used, cap - used, "%s\"%s\"", i ? "," : "", name);
  }
  char *pod = pod_json("p", 1, 12288, 40, NULL, NULL);
  char *body = ext_args_names(pod, names);
  char *out = NULL;
  double t0 = now_ms();
  assert_int_equal(ext_call("/filter", body, strlen(body), &out), 200);
  double ms = now_ms() - t0;
  printf("filter over %d names (24 distinct), --cache-ttl-ms 0: %.1f ms\n", N, ms);
  assert_true(ms < 2000); /* 20 s before; ~20 ms after, on a busy 2-core machine */
  json_object *res = json_tokener_parse(out);
  json_object *listed = json_object_object_get(res, "NodeNames");
  assert_int_equal(json_object_array_length(listed), fits);
  assert_int_equal(count_of(out, "\"node-a\""), node_a); /* only in NodeNames */
  for (int k = 1; k < 4; k++) {                          /* once per map */
    snprintf(name, sizeof(name), "\"%s\":", fixed[k]);
    assert_int_equal(count_of(out, name), 2);
  }
  ext_expect_refused(res, "node-b", "largest GPU here has 8192 MiB");
  ext_expect_refused(res, "node-c", "no vgpu.io/gpu-inventory annotation");
  ext_expect_refused(res, "node-x", "node not found");
  json_object_put(res);
  free(out);
  free(body);
  /* Read from the lists, node-a still has pod "old" on GPU 0. */
  free(pod);
  pod = pod_json("p", 2, 12288, 0, NULL, NULL);
  body = ext_args_names(pod, names);
  res = ext_post("/filter", body, 200);
  ext_expect_contains(ext_failed_reason(res, "node-a"), "needs 2 GPUs each with 12288 MiB");
  json_object_put(res);
  /* prioritize: every name asked for is scored, a node the same each time */
  res = ext_post("/prioritize", body, 200);
  assert_int_equal(json_object_array_length(res), N);
  for (int i = 24; i < N; i++) {
    json_object *a = json_object_array_get_idx(res, (size_t)i);
    json_object *b = json_object_array_get_idx(res, (size_t)(i % 24));
    assert_string_equal(json_object_get_string(json_object_object_get(a, "Host")),
                        json_object_get_string(json_object_object_get(b, "Host")));
    assert_int_equal(json_object_get_int(json_object_object_get(a, "Score")),
                     json_object_get_int(json_object_object_get(b, "Score")));
  }
  json_object_put(res);
  free(body);
  free(pod);
  free(names);
}

/* Issue 27: a bound pod whose vgpu.io/assigned does not parse made its node
 * fail every GPU pod. It now costs what it might hold: the GPUs its text
 * still names, wholly; else its request on every GPU that could serve it;
 * else every GPU. Each such pod is logged and counted once. */
static void test_unreadable_assignment(void **s) {
  (void)s;
  char *out = NULL;
  assert_int_equal(ext_call("/metrics", NULL, 0, &out), 200);
  double before = ext_metric(out, "vgpu_scheduler_bad_assignments_total");
  free(out);
  add_node("bad-1", 2, 16, 4, false);
  add_pod("cut", 1, 4096, 0, "bad-1", /* truncated, but names GPU 0 */
          "{\"version\":1,\"node\":\"bad-1\",\"containers\":[{\"name\":\"main\",\"gpus\":"
          "[{\"uuid\":\"GPU-bad-1-0\",\"memory\":42");
  add_node("bad-2", 2, 16, 4, false);
  add_pod("garbled", 1, 12288, 0, "bad-2", "not JSON"); /* 12 GiB on each GPU */
  add_node("bad-3", 2, 16, 4, false);
  ext_add_pod("worse", "\"nvidia.com/vgpu\":\"two\"", NULL, "bad-3", "{");
  for (int round = 0; round < 2; round++) { /* read twice (TTL 0): counted once */
    char *pod = pod_json("p", 1, 4096, 0, NULL, NULL);
    char *body = ext_args_names(pod, "\"bad-1\",\"bad-2\",\"bad-3\"");
    json_object *res = ext_post("/filter", body, 200);
    assert_true(ext_has_name(res, "bad-1")); /* GPU 1 */
    assert_true(ext_has_name(res, "bad-2")); /* 4 GiB left on each GPU */
    ext_expect_contains(ext_failed_reason(res, "bad-3"), "needs 1 GPUs each with 4096 MiB");
    json_object_put(res);
    free(body);
    free(pod);
  }
  char *pod = pod_json("p", 2, 4096, 0, NULL, NULL); /* GPU 0 of bad-1 is out */
  char *body = ext_args_names(pod, "\"bad-1\",\"bad-2\"");
  json_object *res = ext_post("/filter", body, 200);
  ext_expect_contains(ext_failed_reason(res, "bad-1"), "needs 2 GPUs each with 4096 MiB");
  assert_true(ext_has_name(res, "bad-2"));
  json_object_put(res);
  free(body);
  free(pod);
  pod = pod_json("p", 1, 8192, 0, NULL, NULL); /* more than the 4 GiB garbled left */
  body = ext_args_names(pod, "\"bad-1\",\"bad-2\"");
  res = ext_post("/filter", body, 200);
  assert_true(ext_has_name(res, "bad-1"));
  ext_expect_contains(ext_failed_reason(res, "bad-2"), "needs 1 GPUs each with 8192 MiB");
  json_object_put(res);
  free(body);
  free(pod);
  assert_int_equal(ext_call("/metrics", NULL, 0, &out), 200);
  assert_true(ext_metric(out, "vgpu_scheduler_bad_assignments_total") == before + 3);
  free(out);
}

/* The answers are written as text (extender_out.c): a name needing every kind
 * of JSON escape comes back intact in FailedNodes and in prioritize's Host. */
static void test_answer_escaping(void **s) {
  (void)s;
  static const char odd[] = "odd\"q\\b\n\x01\x1f\xc3\xa9";
  char *pod = pod_json("p", 1, 4096, 0, NULL, NULL);
  char *body = ext_args_names(pod, "\"odd\\\"q\\\\b\\n\\u0001\\u001f\xc3\xa9\",\"node-a\"");
  json_object *res = ext_post("/filter", body, 200);
  json_object *failed = NULL, *reason = NULL;
  assert_true(json_object_object_get_ex(res, "FailedNodes", &failed));
  assert_true(json_object_object_get_ex(failed, odd, &reason));
  assert_true(ext_has_name(res, "node-a"));
  json_object_put(res);
  res = ext_post("/prioritize", body, 200);
  assert_int_equal(json_object_array_length(res), 2);
  json_object *h = json_object_array_get_idx(res, 0);
  assert_string_equal(json_object_get_string(json_object_object_get(h, "Host")), odd);
  assert_int_equal(ext_score(res, odd), 0); /* it did not fit */
  json_object_put(res);
  free(body);
  free(pod);
}

static void test_filter_node_list(void **s) {
  (void)s;
  /* Full NodeList mode: the inventory comes from the objects in the request. */
  char *pod = pod_json("p", 1, 4096, 0, NULL, NULL);
  char *na = node_json("node-a", 2, 16, 4, false), *nb = node_json("node-b", 1, 2, 4, false);
  char *body = NULL;
  assert_true(asprintf(&body,
                       "{\"Pod\":%s,\"Nodes\":{\"metadata\":{},\"items\":[%s,%s]},"
                       "\"NodeNames\":null}",
                       pod, na, nb) > 0);
  json_object *res = ext_post("/filter", body, 200);
  json_object *nodes = NULL, *items = NULL;
  assert_true(json_object_object_get_ex(res, "Nodes", &nodes));
  assert_true(json_object_object_get_ex(nodes, "items", &items));
  assert_int_equal(json_object_array_length(items), 1);
  json_object *meta = json_object_object_get(json_object_array_get_idx(items, 0), "metadata");
  assert_string_equal(json_object_get_string(json_object_object_get(meta, "name")), "node-a");
  ext_expect_contains(ext_failed_reason(res, "node-b"), "2048 MiB");
  json_object_put(res);
  free(body);
  free(na);
  free(nb);
  free(pod);
}

static void test_prioritize(void **s) {
  (void)s;
  char *pod = pod_json("p", 1, 4096, 25, NULL, NULL);
  char *body = ext_args_names(pod, "\"node-a\",\"node-f\",\"node-b\",\"node-c\"");
  json_object *res = ext_post("/prioritize", body, 200);
  printf("prioritize: %s\n", json_object_to_json_string(res));
  assert_true(json_object_is_type(res, json_type_array));
  assert_int_equal(json_object_array_length(res), 4);
  for (size_t i = 0; i < 4; i++) {
    json_object *h = json_object_array_get_idx(res, i);
    int score = json_object_get_int(json_object_object_get(h, "Score"));
    assert_true(score >= 0 && score % 100 == 0); /* ranks of the policy's scores, x100 */
    if (strcmp(json_object_get_string(json_object_object_get(h, "Host")), "node-c") == 0)
      assert_int_equal(score, 0); /* does not fit */
  }
  json_object_put(res);
  free(body);
  free(pod);
}

static void test_bind(void **s) {
  (void)s;
  add_pod("web", 1, 12288, 30, NULL, NULL);
  json_object *res = ext_bind("web", "node-a");
  assert_string_equal(ext_bind_error(res), "");
  json_object_put(res);
  json_object *pod = NULL;
  struct vg_err err;
  assert_int_equal(vg_k8s_get_pod(ext_api, "default", "web", &pod, &err), 0);
  json_object *spec = json_object_object_get(pod, "spec");
  assert_string_equal(json_object_get_string(json_object_object_get(spec, "nodeName")), "node-a");
  json_object *ann = json_object_object_get(json_object_object_get(pod, "metadata"), "annotations");
  const char *a = json_object_get_string(json_object_object_get(ann, "vgpu.io/assigned"));
  printf("assigned: %s\n", a);
  ext_expect_contains(a, "\"uuid\":\"GPU-node-a-1\""); /* GPU 0 has only 8 GiB left */
  ext_expect_contains(a, "\"memory\":12884901888");
  ext_expect_contains(a, "\"cores\":30");
  json_object_put(pod);

  /* Binding it again: the API server's 409 comes back as an Error. */
  res = ext_bind("web", "node-a");
  ext_expect_contains(ext_bind_error(res), "conflict");
  json_object_put(res);

  /* node-a now has 4 GiB on GPU 1 and 8 GiB on GPU 0: a second 12 GiB pod no longer fits. */
  char *p = pod_json("p", 1, 12288, 0, NULL, NULL);
  char *body = ext_args_names(p, "\"node-a\"");
  res = ext_post("/filter", body, 200);
  assert_false(ext_has_name(res, "node-a"));
  json_object_put(res);
  free(body);
  free(p);

  /* A pod without GPU requests is bound without an assignment. */
  char *plain = NULL;
  assert_true(asprintf(&plain,
                       "{\"metadata\":{\"name\":\"plain\"},\"spec\":{\"containers\":"
                       "[{\"name\":\"c\",\"resources\":{}}]}}") > 0);
  ext_admin("/_test/pods", plain);
  free(plain);
  res = ext_bind("plain", "node-c");
  assert_string_equal(ext_bind_error(res), "");
  json_object_put(res);
  res = ext_bind("ghost", "node-a");
  ext_expect_contains(ext_bind_error(res), "404");
  json_object_put(res);
}

struct race {
  const char *pod;
  json_object *res;
};

static void *race_bind(void *arg) {
  struct race *r = arg;
  r->res = ext_bind(r->pod, "node-e");
  return NULL;
}

static void test_concurrent_bind_last_gpu(void **s) {
  (void)s;
  /* node-e has one GPU with one slot: of two simultaneous binds exactly one wins. */
  for (int round = 0; round < 3; round++) {
    char n1[32], n2[32];
    snprintf(n1, sizeof(n1), "race-%d-a", round);
    snprintf(n2, sizeof(n2), "race-%d-b", round);
    add_pod(n1, 1, 1024, 10, NULL, NULL);
    add_pod(n2, 1, 1024, 10, NULL, NULL);
    struct race r[2] = {{n1, NULL}, {n2, NULL}};
    pthread_t t[2];
    for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, race_bind, &r[i]);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    int ok = 0;
    for (int i = 0; i < 2; i++) {
      const char *e = ext_bind_error(r[i].res);
      if (e[0] == 0)
        ok++;
      else
        ext_expect_contains(e, "a slot of nvidia.com/vgpu free");
      json_object_put(r[i].res);
    }
    assert_int_equal(ok, round == 0 ? 1 : 0);
  }
}

/* Bodies that are not ExtenderArgs: 400 with a JSON Error (kube-scheduler
 * shows only the code; these are its bug or ours, not the user's). */
static void test_bad_requests(void **s) {
  (void)s;
  static const char *const bad[] = {
      "",
      "{",
      "null",
      "[]",
      "42",
      "{\"Pod\":{},\"Surprise\":1,\"NodeNames\":{}}",
      "{\"Pod\":{}}",
      "{\"Pod\":{},\"NodeNames\":[1]}",
      "{\"Pod\":{},\"NodeNames\":\"a\"}",
      "{\"Pod\":{},\"Nodes\":{\"items\":[{}]}}",
      "{\"Pod\":{},\"Nodes\":{\"items\":7}}",
      "{\"Pod\":7,\"NodeNames\":[]}",
      "{\"NodeNames\":[\"node-a\"]}",
      "{\"Pod\":{},\"NodeNames\":[\"node-a\"]} {\"Pod\":7}",
      "{\"Pod\":{},\"NodeNames\":[\"node-a\"]}x",
  };
  const char *verbs[] = {"/filter", "/prioritize"};
  for (size_t v = 0; v < 2; v++)
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
      char *out;
      long st = ext_call(verbs[v], bad[i], strlen(bad[i]), &out);
      if (st != 400) fail_msg("%s %s -> %ld %s", verbs[v], bad[i], st, out);
      json_object *o = json_tokener_parse(out);
      json_object *e = NULL;
      if (!o || !json_object_object_get_ex(o, "Error", &e) || !json_object_get_string_len(e))
        fail_msg("%s: no JSON error: %s", bad[i], out);
      /* An unknown field beside a malformed known one: the known one's error. */
      if (i == 5) ext_expect_contains(out, "NodeNames is not an array");
      if (strstr(out, "Surprise")) fail_msg("%s: %s", bad[i], out);
      if (i == 11 || i == 12) ext_expect_contains(out, "Pod is missing or not an object");
      /* Issue 27: trailing bytes were ignored, and null read "not JSON: success". */
      if (i == 2) ext_expect_contains(out, "request body is not a JSON object but null");
      if (i == 3) ext_expect_contains(out, "request body is not a JSON object but array");
      if (i == 4) ext_expect_contains(out, "request body is not a JSON object but int");
      if (i == 1)
        ext_expect_contains(out, "request body is not JSON: unexpected end of data at byte 1");
      if (i >= 13) /* the first byte that is not white space */
        ext_expect_contains(out, i == 13 ? "bytes after the JSON value, at byte 34"
                                         : "bytes after the JSON value, at byte 33");
      if (strstr(out, "success")) fail_msg("%s: %s", bad[i], out);
      json_object_put(o);
      free(out);
    }
}

/* text with extra inserted after the first `at` (which must be there). */
static char *with_field(const char *text, const char *at, const char *extra) {
  const char *p = strstr(text, at);
  if (!p) fail_msg("no %s in %s", at, text);
  size_t head = (size_t)(p - text) + strlen(at);
  char *out = NULL;
  if (asprintf(&out, "%.*s%s%s", (int)head, text, extra, text + head) < 0) abort();
  return out;
}

/* Go's decoder skips fields it does not know, and kube-scheduler's structs
 * grow: a field a later release adds -- at the top of ExtenderArgs or
 * ExtenderBindingArgs, in the Pod, in the NodeList or a Node -- must not
 * change the answer (issue 29: it was a 400, which fails every GPU pod). */
static void test_unknown_fields(void **s) {
  (void)s;
  char *pod = pod_json("uf", 1, 4096, 0, NULL, NULL);
  char *pod_x = with_field(pod, "\"spec\":{", "\"futureSpec\":{\"a\":[1,2]},");
  char *pod_xx = with_field(pod_x, "{", "\"futurePodField\":true,");
  char *plain = ext_args_names(pod, "\"node-b\",\"node-c\",\"node-f\"");
  char *body = ext_args_names(pod_xx, "\"node-b\",\"node-c\",\"node-f\"");
  char *body_x = with_field(body, "{", "\"FutureArgs\":{\"x\":1},\"Nodes\":null,");
  const char *verbs[] = {"/filter", "/prioritize"};
  for (int v = 0; v < 2; v++) {
    json_object *want = ext_post(verbs[v], plain, 200), *got = ext_post(verbs[v], body_x, 200);
    assert_string_equal(json_object_to_json_string(got), json_object_to_json_string(want));
    if (v == 0) {
      assert_true(ext_has_name(got, "node-f"));
      ext_expect_contains(ext_failed_reason(got, "node-c"), "no vgpu.io/gpu-inventory annotation");
    }
    json_object_put(want);
    json_object_put(got);
  }
  free(body_x);
  free(body);
  free(plain);
  json_object *res;

  /* The full NodeList mode: unknown fields on the list and on a Node. (Not
   * node-a: test_metrics_after reads the view of it that bind left.) */
  char *na = node_json("node-f", 2, 16, 4, false), *nb = node_json("node-b", 1, 2, 4, false);
  char *nb_x = with_field(nb, "{", "\"futureNodeField\":[null],");
  char *na_x = with_field(na, "\"metadata\": {", "\"futureMeta\":\"x\",");
  assert_true(asprintf(&body,
                       "{\"Pod\":%s,\"Nodes\":{\"futureList\":7,\"metadata\":{},\"items\":[%s,%s]},"
                       "\"NodeNames\":null,\"futureTop\":\"y\"}",
                       pod_xx, na_x, nb_x) > 0);
  res = ext_post("/filter", body, 200);
  json_object *nodes = NULL, *items = NULL;
  assert_true(json_object_object_get_ex(res, "Nodes", &nodes));
  assert_true(json_object_object_get_ex(nodes, "items", &items));
  assert_int_equal(json_object_array_length(items), 1);
  ext_expect_contains(ext_failed_reason(res, "node-b"), "2048 MiB");
  json_object_put(res);
  free(body);

  /* Bind: an unknown field beside the four known ones binds as without it. */
  ext_admin("/_test/pods", pod);
  res = ext_post("/bind",
                 "{\"PodName\":\"uf\",\"PodNamespace\":\"default\",\"PodUID\":\"\","
                 "\"Node\":\"node-f\",\"FutureBindField\":{\"x\":[1]}}",
                 200);
  assert_string_equal(ext_bind_error(res), "");
  json_object_put(res);
  char *a = ext_assigned("uf");
  assert_non_null(a);
  ext_expect_contains(a, "\"node\":\"node-f\"");
  free(a);
  /* A malformed known field still gets its clear error. */
  char *out = NULL;
  const char *bad = "{\"PodName\":7,\"PodNamespace\":\"default\",\"Node\":\"node-f\",\"X\":1}";
  assert_int_equal(ext_call("/bind", bad, strlen(bad), &out), 400);
  ext_expect_contains(out, "PodName is missing or not a string");
  free(out);
  free(na);
  free(nb);
  free(na_x);
  free(nb_x);
  free(pod_xx);
  free(pod_x);
  free(pod);
}

/* Issue 27: json-c keeps a \u0000 inside a string and C then cuts it: a bind
 * of "web\u0000x" was a bind of "web" (only the UID check stopped it).
 * Refused wherever it is, with where; in filter's and bind's Error (HTTP
 * 200: kube-scheduler shows that in the pod's events), a 400 for prioritize. */
static void test_nul_strings(void **s) {
  (void)s;
  static const char *const filters[] = {
      "{\"Pod\":{\"metadata\":{\"annotations\":{\"vgpu.io/use-gpuuuid\":\"GPU-a\\u0000,GPU-b\"}},"
      "\"spec\":{\"containers\":[]}},\"NodeNames\":[\"node-a\"]}",
      "{\"Pod\":{\"spec\":{}},\"NodeNames\":[\"node-a\\u0000evil\"]}",
      "{\"Pod\":{\"spec\":{}},\"NodeNames\":[\"node-a\"],\"Pod\\u0000\":1}",
  };
  for (size_t i = 0; i < sizeof(filters) / sizeof(filters[0]); i++) {
    char *out = NULL;
    assert_int_equal(ext_call("/filter", filters[i], strlen(filters[i]), &out), 200);
    json_object *res = json_tokener_parse(out);
    const char *e = json_object_get_string(json_object_object_get(res, "Error"));
    ext_expect_contains(e, "request body: a string holds a NUL character (\\u0000) at byte");
    assert_null(json_object_object_get(res, "NodeNames")); /* no node passes */
    json_object_put(res);
    free(out);
    assert_int_equal(ext_call("/prioritize", filters[i], strlen(filters[i]), &out), 400);
    ext_expect_contains(out, "NUL character");
    free(out);
  }
  char *out = NULL;
  static const char odd[] = "{\"Pod\":{\"spec\":{}},\"NodeNames\":[\"a\\\\u0000\"]}";
  assert_int_equal(ext_call("/filter", odd, strlen(odd), &out), 200); /* a backslash, "u0000" */
  ext_expect_contains(out, "\"Error\":\"\"");
  free(out);
  add_pod("nul", 1, 1024, 0, NULL, NULL);
  static const char bind[] =
      "{\"PodName\":\"nul\\u0000x\",\"PodNamespace\":\"default\","
      "\"PodUID\":\"\",\"Node\":\"node-f\"}";
  assert_int_equal(ext_call("/bind", bind, strlen(bind), &out), 200);
  ext_expect_contains(out, "a string holds a NUL character");
  ext_expect_contains(out, "PodName");
  free(out);
  char *a = ext_assigned("nul");
  assert_null(a); /* not bound */
}

/* Pods whose request no node could ever take: 200, every candidate failed in
 * FailedNodes (kube-scheduler 1.20) and FailedAndUnresolvableNodes (1.21+,
 * no preemption) with the reason, which reaches the pod's events; prioritize
 * scores them 0. Before, these were 400s and the user saw only "code 400". */
static void test_refused_pods(void **s) {
  (void)s;
  static const struct {
    const char *pod, *why;
  } refused[] = {
      {"{\"spec\":{\"containers\":{}}}", "Pod.spec.containers is not an array"},
      {"{\"spec\":{\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":"
       "{\"nvidia.com/vgpu\":\"two\"}}}]}}",
       "container c: nvidia.com/vgpu: 'two' is not a quantity"},
      {"{\"spec\":{\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":"
       "{\"nvidia.com/vgpu\":\"1\",\"nvidia.com/gpucores\":\"150\"}}}]}}",
       "nvidia.com/gpucores is 150, at most 100"},
      {"{\"spec\":{\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":"
       "{\"nvidia.com/gpumem\":\"1000\"}}}]}}",
       "need nvidia.com/vgpu (or nvidia.com/gpu) > 0"},
      {"{\"spec\":{\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":"
       "{\"nvidia.com/vgpu-typo\":\"1\"}}}]}}",
       "nvidia.com/vgpu-typo is not supported"},
      {"{\"spec\":{\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":[]}}]}}",
       "resources are not an object"},
      {"{\"spec\":{\"initContainers\":[{\"name\":\"warm\",\"resources\":{\"limits\":"
       "{\"aliyun.com/gpu-mem\":\"2\"}}}],\"containers\":[{\"name\":\"c\"}]}}",
       "init container warm asks for aliyun.com/gpu-mem: GPUs are placed for app containers only"},
      {"{\"spec\":{\"initContainers\":{},\"containers\":[]}}", "initContainers is not an array"},
      {"{\"spec\":{\"containers\":[{\"resources\":{\"limits\":{\"nvidia.com/vgpu\":\"1\"}}}]}}",
       "a container asking for nvidia.com/vgpu has no name"},
      {"{\"spec\":{\"containers\":[{\"name\":\"b\",\"resources\":{\"limits\":{\"nvidia.com/"
       "vgpu\":\"1\"}}},{\"name\":\"b\",\"resources\":{\"limits\":{\"nvidia.com/vgpu\":\"1\"}}}]}}",
       "two containers are named b"},
  };
  for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
    char *body = ext_args_names(refused[i].pod, "\"node-a\",\"node-f\"");
    json_object *res = ext_post("/filter", body, 200);
    ext_expect_refused(res, "node-a", refused[i].why);
    ext_expect_refused(res, "node-f", refused[i].why);
    assert_int_equal(json_object_get_string_len(json_object_object_get(res, "Error")), 0);
    json_object_put(res);
    res = ext_post("/prioritize", body, 200);
    assert_int_equal(ext_score(res, "node-a"), 0);
    assert_int_equal(ext_score(res, "node-f"), 0);
    json_object_put(res);
    free(body);
  }
  /* An init container without GPUs is no reason to refuse the pod. */
  static const char cpu_init[] =
      "{\"Pod\":{\"spec\":{\"initContainers\":[{\"name\":\"warm\",\"resources\":{\"limits\":"
      "{\"cpu\":\"1\"}}}],\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":"
      "{\"nvidia.com/vgpu\":\"1\"}}}]}},\"NodeNames\":[\"node-f\"]}";
  char *ok = NULL;
  assert_int_equal(ext_call("/filter", cpu_init, strlen(cpu_init), &ok), 200);
  ext_expect_contains(ok, "\"NodeNames\":[\"node-f\"]");
  free(ok);
}

/* Bind bodies that are not ExtenderBindingArgs get a 400; garbage of every
 * kind is answered, 200 or 400, and never crashes the server. */
static void test_garbage(void **s) {
  (void)s;
  static const char *const bad_bind[] = {"{", "{\"PodName\":\"x\"}",
                                         "{\"PodName\":1,"
                                         "\"PodNamespace\":\"d\","
                                         "\"Node\":\"n\"}",
                                         "{\"PodName\":\"x\",\"PodNamespace\":\"d\",\"Node\":"
                                         "7,\"Extra\":true}"};
  for (size_t i = 0; i < sizeof(bad_bind) / sizeof(bad_bind[0]); i++) {
    char *out;
    assert_int_equal(ext_call("/bind", bad_bind[i], strlen(bad_bind[i]), &out), 400);
    free(out);
  }
  /* Garbage: random bytes and truncations of a good body; the server answers every one. */
  char *pod = pod_json("p", 1, 1024, 10, NULL, NULL);
  char *good = ext_args_names(pod, "\"node-a\",\"node-f\"");
  srand(7);
  for (int i = 0; i < 300; i++) {
    char body[512];
    size_t len;
    if (i % 2) {
      len = (size_t)rand() % sizeof(body);
      for (size_t k = 0; k < len; k++) body[k] = (char)(rand() % 256);
    } else {
      len = (size_t)rand() % strlen(good);
      memcpy(body, good, len);
      if (len) body[rand() % len] = "{}[]\":,x0"[rand() % 9];
    }
    char *out;
    static const char *const fuzz_verbs[] = {"/filter", "/prioritize", "/bind"};
    long st = ext_call(fuzz_verbs[i % 3], body, len, &out);
    assert_true(st == 400 || st == 200);
    free(out);
  }
  free(good);
  free(pod);
  char *out;
  assert_int_equal(ext_call("/healthz", NULL, 0, &out), 200);
  free(out);
}

/* After the tests above: why nodes failed, binds by result, the latency
 * histogram; and promtool (Debian's prometheus) accepts the text. */
static void test_metrics_after(void **s) {
  (void)s;
  char *out;
  assert_int_equal(ext_call("/metrics", NULL, 0, &out), 200);
  /* node-c has no inventory, node-b is too small for 12 GiB, node-d's GPU is Unhealthy */
  assert_true(ext_metric(out, "vgpu_scheduler_node_failures_total{reason=\"no_inventory\"}") >= 1);
  assert_true(ext_metric(out, "vgpu_scheduler_node_failures_total{reason=\"too_large\"}") >= 1);
  assert_true(ext_metric(out, "vgpu_scheduler_node_failures_total{reason=\"too_few_gpus\"}") >= 1);
  assert_true(ext_metric(out, "vgpu_scheduler_binds_total{result=\"ok\"}") >= 1);
  assert_true(ext_metric(out, "vgpu_scheduler_binds_total{result=\"no_fit\"}") >= 1); /* the race */
  assert_true(ext_metric(out, "vgpu_scheduler_assigned_gpus_total") >= 1);
  double filters =
      ext_metric(out, "vgpu_scheduler_request_duration_seconds_count{verb=\"filter\"}");
  assert_true(filters >= 2);
  assert_true(
      ext_metric(out,
                 "vgpu_scheduler_request_duration_seconds_bucket{verb=\"filter\",le=\"+Inf\"}") ==
      filters);
  assert_true(ext_metric(out, "vgpu_scheduler_bad_requests_total") >= 1);
  assert_true(ext_metric(out, "vgpu_scheduler_refused_pods_total") >= 10); /* test_refused_pods */
  /* node-a: 2 x 16 GiB, pod "old" holds 8 GiB of GPU 0 (its view was read by bind) */
  assert_true(ext_metric(out, "vgpu_scheduler_node_gpus{node=\"node-a\"}") == 2);
  assert_true(ext_metric(out, "vgpu_scheduler_node_gpu_memory_bytes{node=\"node-a\"}") ==
              32.0 * (1 << 30));
  assert_true(ext_metric(out, "vgpu_scheduler_node_gpu_memory_allocated_bytes{node=\"node-a\"}") >=
              8.0 * (1 << 30));
  char path[] = "/tmp/vgpu-sched-metrics-XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  assert_int_equal(write(fd, out, strlen(out)), (ssize_t)strlen(out));
  close(fd);
  char cmd[200];
  snprintf(cmd, sizeof(cmd), "promtool check metrics < %s", path);
  int rc = system(cmd);
  unlink(path);
  if (rc != 0) fail_msg("promtool check metrics failed (%d) on:\n%s", rc, out);
  free(out);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_healthz_metrics),
      cmocka_unit_test(test_filter_node_names),
      cmocka_unit_test(test_filter_many_names),
      cmocka_unit_test(test_unreadable_assignment),
      cmocka_unit_test(test_filter_node_list),
      cmocka_unit_test(test_answer_escaping),
      cmocka_unit_test(test_prioritize),
      cmocka_unit_test(test_bind),
      cmocka_unit_test(test_concurrent_bind_last_gpu),
      cmocka_unit_test(test_bad_requests),
      cmocka_unit_test(test_unknown_fields),
      cmocka_unit_test(test_nul_strings),
      cmocka_unit_test(test_refused_pods),
      cmocka_unit_test(test_garbage),
      cmocka_unit_test(test_metrics_after),
  };
  return cmocka_run_group_tests(tests, setup, ext_teardown);
}
