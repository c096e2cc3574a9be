/*
 * test_scheduler_extender.c -- vgpu-scheduler end to end: the fake API server
 * (tests/k8s/fake_apiserver.py) holds nodes with vgpu.io/gpu-inventory
 * annotations and pods; the real binary serves the extender verbs on a free
 * port; requests are kube-scheduler-style ExtenderArgs bodies sent with
 * libcurl. Checks filter (both node modes), prioritize, bind (the assignment
 * annotation and the Binding), double-booking under concurrent binds, and
 * that malformed bodies get a 400 with a JSON error, never a crash.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>
#include <cmocka.h>
#include <curl/curl.h>
#include <json-c/json.h>

#include "harness.h"
#include "k8s.h"

#define TOKEN "test-token"
#define GIB 1073741824LL

static pid_t api_pid, sched_pid;
static int api_port, sched_port;
static char tmpdir[256];
static struct vg_k8s_client *api;

/* ---- helpers ---- */

struct buf {
  char *data;
  size_t len;
};

static size_t collect(char *p, size_t sz, size_t n, void *arg) {
  struct buf *b = arg;
  char *d = realloc(b->data, b->len + sz * n + 1);
  if (!d) return 0;
  memcpy(d + b->len, p, sz * n);
  b->data = d;
  b->len += sz * n;
  b->data[b->len] = 0;
  return sz * n;
}

/* Sends body (len bytes; NULL = GET) to the scheduler; returns the status,
 * the response body in *out (caller frees). */
static long call(const char *path, const char *body, size_t len, char **out) {
  CURL *c = curl_easy_init();
  char url[128];
  snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", sched_port, path);
  struct buf b = {calloc(1, 1), 0};
  struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
  curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
  if (body) {
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)len);
  }
  long status = 0;
  CURLcode rc = curl_easy_perform(c);
  if (rc == CURLE_OK) curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  curl_slist_free_all(h);
  curl_easy_cleanup(c);
  if (rc != CURLE_OK) fail_msg("%s: %s", path, curl_easy_strerror(rc));
  *out = b.data;
  return status;
}

static json_object *post_json(const char *path, const char *body, long want) {
  char *out;
  long st = call(path, body, strlen(body), &out);
  if (st != want) fail_msg("%s -> %ld (want %ld): %s\nbody: %s", path, st, want, out, body);
  json_object *o = json_tokener_parse(out);
  if (!o) fail_msg("%s: not JSON: %s", path, out);
  free(out);
  return o;
}

static void admin(const char *path, const char *body) {
  struct vg_k8s_response r;
  struct vg_err err;
  if (vg_k8s_request(api, "POST", path, "application/json", body, &r, &err) != 0)
    fail_msg("%s", err.msg);
  if (r.status != 201 && r.status != 200) fail_msg("%s -> %ld: %s", path, r.status, r.body);
  vg_k8s_response_free(&r);
}

/* The inventory annotation of a node: ngpu GPUs of mem GiB, slots each;
 * unhealthy: GPU 0 is Unhealthy. Returns a Node object as JSON text. */
static char *node_json(const char *name, int ngpu, int mem_gib, int slots, bool unhealthy) {
  json_object *inv = json_object_new_object(), *gpus = json_object_new_array();
  json_object_object_add(inv, "version", json_object_new_int(1));
  json_object_object_add(inv, "node", json_object_new_string(name));
  json_object_object_add(inv, "gpus", gpus);
  for (int g = 0; g < ngpu; g++) {
    char uuid[64];
    snprintf(uuid, sizeof(uuid), "GPU-%s-%d", name, g);
    json_object *o = json_object_new_object(), *res = json_object_new_array();
    json_object *r = json_object_new_object();
    json_object_object_add(o, "index", json_object_new_int(g));
    json_object_object_add(o, "uuid", json_object_new_string(uuid));
    json_object_object_add(o, "type", json_object_new_string("NVIDIA A100 (vgpu-sim)"));
    json_object_object_add(o, "memory", json_object_new_int64(mem_gib * GIB));
    json_object_object_add(o, "health",
                           json_object_new_string(unhealthy && g == 0 ? "Unhealthy" : "Healthy"));
    json_object_object_add(r, "name", json_object_new_string("nvidia.com/vgpu"));
    json_object_object_add(r, "dialect", json_object_new_string("vgpu"));
    json_object_object_add(r, "count", json_object_new_int(slots));
    json_object_object_add(r, "unit", json_object_new_int(0));
    json_object_object_add(r, "memory", json_object_new_int64(mem_gib * GIB));
    json_object_object_add(r, "cores", json_object_new_int(100));
    json_object_array_add(res, r);
    json_object_object_add(o, "resources", res);
    json_object_array_add(gpus, o);
  }
  json_object *node = json_object_new_object(), *meta = json_object_new_object();
  json_object *ann = json_object_new_object();
  json_object_object_add(meta, "name", json_object_new_string(name));
  if (ngpu > 0)
    json_object_object_add(
        ann, "vgpu.io/gpu-inventory",
        json_object_new_string(json_object_to_json_string_ext(inv, JSON_C_TO_STRING_PLAIN)));
  json_object_object_add(meta, "annotations", ann);
  json_object_object_add(node, "kind", json_object_new_string("Node"));
  json_object_object_add(node, "metadata", meta);
  json_object_put(inv);
  char *s = strdup(json_object_to_json_string(node));
  json_object_put(node);
  return s;
}

/* A Pod asking vgpu count, mem MiB (0: none), cores % (0: none). */
static char *pod_json(const char *name, int count, int mem, int cores, const char *node,
                      const char *assigned) {
  char lim[256] = "", extra[1024] = "";
  snprintf(lim, sizeof(lim), "\"nvidia.com/vgpu\":\"%d\"", count);
  if (mem)
    snprintf(lim + strlen(lim), sizeof(lim) - strlen(lim), ",\"nvidia.com/gpumem\":\"%d\"", mem);
  if (cores)
    snprintf(lim + strlen(lim), sizeof(lim) - strlen(lim), ",\"nvidia.com/gpucores\":\"%d\"",
             cores);
  if (assigned) {
    json_object *s = json_object_new_string(assigned);
    snprintf(extra, sizeof(extra), ",\"annotations\":{\"vgpu.io/assigned\":%s}",
             json_object_to_json_string(s));
    json_object_put(s);
  }
  char *out = NULL;
  if (asprintf(&out,
               "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"namespace\":\"default\"%s},"
               "\"spec\":{%s%s%s\"containers\":[{\"name\":\"main\",\"image\":\"cuda\","
               "\"resources\":{\"limits\":{\"cpu\":\"1\",\"memory\":\"1Gi\",%s}}}]}}",
               name, extra, node ? "\"nodeName\":\"" : "", node ? node : "", node ? "\"," : "",
               lim) < 0)
    abort();
  return out;
}

static void add_node(const char *name, int ngpu, int mem_gib, int slots, bool unhealthy) {
  char *n = node_json(name, ngpu, mem_gib, slots, unhealthy);
  admin("/_test/nodes", n);
  free(n);
}

static void add_pod(const char *name, int count, int mem, int cores, const char *node,
                    const char *assigned) {
  char *p = pod_json(name, count, mem, cores, node, assigned);
  admin("/_test/pods", p);
  free(p);
}

/* ExtenderArgs with NodeNames (nodeCacheCapable). */
static char *args_names(const char *pod, const char *names) {
  char *out = NULL;
  if (asprintf(&out, "{\"Pod\":%s,\"Nodes\":null,\"NodeNames\":[%s]}", pod, names) < 0) abort();
  return out;
}

static const char *failed_reason(json_object *res, const char *node) {
  json_object *f = NULL, *r = NULL;
  if (!json_object_object_get_ex(res, "FailedNodes", &f)) return NULL;
  if (!json_object_object_get_ex(f, node, &r)) return NULL;
  return json_object_get_string(r);
}

static bool has_name(json_object *res, const char *node) {
  json_object *names = NULL;
  if (!json_object_object_get_ex(res, "NodeNames", &names) || !names) return false;
  for (size_t i = 0; i < json_object_array_length(names); i++)
    if (strcmp(json_object_get_string(json_object_array_get_idx(names, i)), node) == 0) return true;
  return false;
}

static void expect_contains(const char *s, const char *part) {
  if (!s || !strstr(s, part)) fail_msg("expected '%s' in '%s'", part, s ? s : "(null)");
}

/* ---- fixture ---- */

static int setup(void **state) {
  (void)state;
  curl_global_init(CURL_GLOBAL_DEFAULT);
  char *argv[] = {"/usr/bin/python3", VG_K8S_FAKE, "--token", TOKEN, NULL};
  api_pid = vg_start_server(argv, &api_port);
  if (api_pid < 0) return -1;
  snprintf(tmpdir, sizeof(tmpdir), "/tmp/vg-sched-ext.XXXXXX");
  if (!mkdtemp(tmpdir)) return -1;
  char kc[320];
  snprintf(kc, sizeof(kc), "%s/kubeconfig", tmpdir);
  FILE *f = fopen(kc, "w");
  if (!f) return -1;
  fprintf(f,
          "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
          "clusters:\n- name: k\n  cluster:\n    server: http://127.0.0.1:%d\n"
          "contexts:\n- name: c\n  context: {cluster: k, user: u}\n"
          "users:\n- name: u\n  user:\n    token: %s\n",
          api_port, TOKEN);
  fclose(f);
  char server[64];
  snprintf(server, sizeof(server), "http://127.0.0.1:%d", api_port);
  struct vg_k8s_config cfg = {.server = server, .token = TOKEN};
  struct vg_err err;
  api = vg_k8s_client_new(&cfg, &err);
  if (!api) return -1;

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

  char *sargv[] = {(char *)vg_build_path("bin/vgpu-scheduler"),
                   "--listen",
                   "127.0.0.1:0",
                   "--kubeconfig",
                   kc,
                   "--cache-ttl-ms",
                   "0",
                   NULL};
  sched_pid = vg_start_server(sargv, &sched_port);
  return sched_pid < 0 ? -1 : 0;
}

static int teardown(void **state) {
  (void)state;
  if (sched_pid > 0) {
    kill(sched_pid, SIGTERM);
    int st = 0;
    waitpid(sched_pid, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) fprintf(stderr, "scheduler exit status %d\n", st);
  }
  kill(api_pid, SIGTERM);
  waitpid(api_pid, NULL, 0);
  vg_k8s_client_free(api);
  char cmd[300];
  snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
  if (system(cmd) != 0) return -1;
  curl_global_cleanup();
  return 0;
}

/* ---- tests ---- */

static void test_healthz_metrics(void **s) {
  (void)s;
  char *out;
  assert_int_equal(call("/healthz", NULL, 0, &out), 200);
  assert_string_equal(out, "ok\n");
  free(out);
  assert_int_equal(call("/metrics", NULL, 0, &out), 200);
  expect_contains(out, "vgpu_scheduler_requests_total{verb=\"filter\"}");
  free(out);
  assert_int_equal(call("/nope", NULL, 0, &out), 404);
  free(out);
  assert_int_equal(call("/filter", NULL, 0, &out), 405);
  free(out);
}

static void test_filter_node_names(void **s) {
  (void)s;
  char *pod = pod_json("p", 1, 12288, 40, NULL, NULL);
  char *body = args_names(pod, "\"node-a\",\"node-b\",\"node-c\",\"node-d\",\"node-x\",\"node-f\"");
  json_object *res = post_json("/filter", body, 200);
  printf("filter: %s\n", json_object_to_json_string(res));
  assert_true(has_name(res, "node-a")); /* GPU 1 is free */
  assert_true(has_name(res, "node-f"));
  assert_false(has_name(res, "node-b"));
  expect_contains(failed_reason(res, "node-b"), "largest GPU here has 8192 MiB");
  expect_contains(failed_reason(res, "node-c"), "no vgpu.io/gpu-inventory annotation");
  expect_contains(failed_reason(res, "node-d"), "the node has 0 healthy nvidia.com/vgpu GPUs");
  expect_contains(failed_reason(res, "node-x"), "node not found");
  json_object *e = NULL;
  assert_true(json_object_object_get_ex(res, "Error", &e));
  assert_string_equal(json_object_get_string(e), "");
  json_object_put(res);
  free(body);
  free(pod);

  /* Two GPUs with 12 GiB: node-a has only one (GPU 0 is half used). */
  pod = pod_json("p", 2, 12288, 0, NULL, NULL);
  body = args_names(pod, "\"node-a\",\"node-f\"");
  res = post_json("/filter", body, 200);
  assert_false(has_name(res, "node-a"));
  expect_contains(failed_reason(res, "node-a"), "needs 2 GPUs each with 12288 MiB");
  assert_true(has_name(res, "node-f"));
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
  json_object *res = post_json("/filter", body, 200);
  json_object *nodes = NULL, *items = NULL;
  assert_true(json_object_object_get_ex(res, "Nodes", &nodes));
  assert_true(json_object_object_get_ex(nodes, "items", &items));
  assert_int_equal(json_object_array_length(items), 1);
  json_object *meta = json_object_object_get(json_object_array_get_idx(items, 0), "metadata");
  assert_string_equal(json_object_get_string(json_object_object_get(meta, "name")), "node-a");
  expect_contains(failed_reason(res, "node-b"), "2048 MiB");
  json_object_put(res);
  free(body);
  free(na);
  free(nb);
  free(pod);
}

static void test_prioritize(void **s) {
  (void)s;
  char *pod = pod_json("p", 1, 4096, 25, NULL, NULL);
  char *body = args_names(pod, "\"node-a\",\"node-f\",\"node-b\",\"node-c\"");
  json_object *res = post_json("/prioritize", body, 200);
  printf("prioritize: %s\n", json_object_to_json_string(res));
  assert_true(json_object_is_type(res, json_type_array));
  assert_int_equal(json_object_array_length(res), 4);
  for (size_t i = 0; i < 4; i++) {
    json_object *h = json_object_array_get_idx(res, i);
    int score = json_object_get_int(json_object_object_get(h, "Score"));
    assert_true(score >= 0 && score <= 10);
    if (strcmp(json_object_get_string(json_object_object_get(h, "Host")), "node-c") == 0)
      assert_int_equal(score, 0); /* does not fit */
  }
  json_object_put(res);
  free(body);
  free(pod);
}

static json_object *bind_pod(const char *pod, const char *node) {
  char body[256];
  snprintf(body, sizeof(body),
           "{\"PodName\":\"%s\",\"PodNamespace\":\"default\",\"PodUID\":\"\",\"Node\":\"%s\"}", pod,
           node);
  return post_json("/bind", body, 200);
}

static const char *bind_error(json_object *res) {
  json_object *e = NULL;
  return json_object_object_get_ex(res, "Error", &e) ? json_object_get_string(e) : "(no Error)";
}

static void test_bind(void **s) {
  (void)s;
  add_pod("web", 1, 12288, 30, NULL, NULL);
  json_object *res = bind_pod("web", "node-a");
  assert_string_equal(bind_error(res), "");
  json_object_put(res);
  json_object *pod = NULL;
  struct vg_err err;
  assert_int_equal(vg_k8s_get_pod(api, "default", "web", &pod, &err), 0);
  json_object *spec = json_object_object_get(pod, "spec");
  assert_string_equal(json_object_get_string(json_object_object_get(spec, "nodeName")), "node-a");
  json_object *ann = json_object_object_get(json_object_object_get(pod, "metadata"), "annotations");
  const char *a = json_object_get_string(json_object_object_get(ann, "vgpu.io/assigned"));
  printf("assigned: %s\n", a);
  expect_contains(a, "\"uuid\":\"GPU-node-a-1\""); /* GPU 0 has only 8 GiB left */
  expect_contains(a, "\"memory\":12884901888");
  expect_contains(a, "\"cores\":30");
  json_object_put(pod);

  /* Binding it again: the API server's 409 comes back as an Error. */
  res = bind_pod("web", "node-a");
  expect_contains(bind_error(res), "conflict");
  json_object_put(res);

  /* node-a now has 4 GiB on GPU 1 and 8 GiB on GPU 0: a second 12 GiB pod no longer fits. */
  char *p = pod_json("p", 1, 12288, 0, NULL, NULL);
  char *body = args_names(p, "\"node-a\"");
  res = post_json("/filter", body, 200);
  assert_false(has_name(res, "node-a"));
  json_object_put(res);
  free(body);
  free(p);

  /* A pod without GPU requests is bound without an assignment. */
  char *plain = NULL;
  assert_true(asprintf(&plain,
                       "{\"metadata\":{\"name\":\"plain\"},\"spec\":{\"containers\":"
                       "[{\"name\":\"c\",\"resources\":{}}]}}") > 0);
  admin("/_test/pods", plain);
  free(plain);
  res = bind_pod("plain", "node-c");
  assert_string_equal(bind_error(res), "");
  json_object_put(res);
  res = bind_pod("ghost", "node-a");
  expect_contains(bind_error(res), "404");
  json_object_put(res);
}

struct race {
  const char *pod;
  json_object *res;
};

static void *race_bind(void *arg) {
  struct race *r = arg;
  r->res = bind_pod(r->pod, "node-e");
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
      const char *e = bind_error(r[i].res);
      if (e[0] == 0)
        ok++;
      else
        expect_contains(e, "a slot of nvidia.com/vgpu free");
      json_object_put(r[i].res);
    }
    assert_int_equal(ok, round == 0 ? 1 : 0);
  }
}

static void test_bad_requests(void **s) {
  (void)s;
  static const char *const bad[] = {
      "",
      "{",
      "null",
      "[]",
      "42",
      "{\"Pod\":{},\"NodeNames\":[\"a\"],\"Surprise\":1}",
      "{\"Pod\":{}}",
      "{\"Pod\":{},\"NodeNames\":[1]}",
      "{\"Pod\":{},\"NodeNames\":\"a\"}",
      "{\"Pod\":{},\"Nodes\":{\"items\":[{}]}}",
      "{\"Pod\":{},\"Nodes\":{\"items\":7}}",
      "{\"Pod\":7,\"NodeNames\":[]}",
      "{\"Pod\":{\"spec\":{\"containers\":{}}},\"NodeNames\":[]}",
      "{\"Pod\":{\"spec\":{\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":"
      "{\"nvidia.com/vgpu\":\"two\"}}}]}},\"NodeNames\":[]}",
      "{\"Pod\":{\"spec\":{\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":"
      "{\"nvidia.com/vgpu\":\"1\",\"nvidia.com/gpucores\":\"150\"}}}]}},\"NodeNames\":[]}",
      "{\"Pod\":{\"spec\":{\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":"
      "{\"nvidia.com/gpumem\":\"1000\"}}}]}},\"NodeNames\":[]}",
      "{\"Pod\":{\"spec\":{\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":"
      "{\"nvidia.com/vgpu-typo\":\"1\"}}}]}},\"NodeNames\":[]}",
      "{\"Pod\":{\"spec\":{\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":[]}}]}},"
      "\"NodeNames\":[]}",
  };
  const char *verbs[] = {"/filter", "/prioritize"};
  for (size_t v = 0; v < 2; v++)
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
      char *out;
      long st = call(verbs[v], bad[i], strlen(bad[i]), &out);
      if (st != 400) fail_msg("%s %s -> %ld %s", verbs[v], bad[i], st, out);
      json_object *o = json_tokener_parse(out);
      json_object *e = NULL;
      if (!o || !json_object_object_get_ex(o, "Error", &e) || !json_object_get_string_len(e))
        fail_msg("%s: no JSON error: %s", bad[i], out);
      if (i == 5) expect_contains(out, "unknown field \\\"Surprise\\\"");
      if (i == 16) expect_contains(out, "nvidia.com\\/vgpu-typo is not supported");
      json_object_put(o);
      free(out);
    }
  static const char *const bad_bind[] = {"{", "{\"PodName\":\"x\"}",
                                         "{\"PodName\":1,"
                                         "\"PodNamespace\":\"d\","
                                         "\"Node\":\"n\"}",
                                         "{\"PodName\":\"x\",\"PodNamespace\":\"d\",\"Node\":"
                                         "\"n\",\"Extra\":true}"};
  for (size_t i = 0; i < sizeof(bad_bind) / sizeof(bad_bind[0]); i++) {
    char *out;
    assert_int_equal(call("/bind", bad_bind[i], strlen(bad_bind[i]), &out), 400);
    free(out);
  }
  /* Garbage: random bytes and truncations of a good body; the server answers every one. */
  char *pod = pod_json("p", 1, 1024, 10, NULL, NULL);
  char *good = args_names(pod, "\"node-a\",\"node-f\"");
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
    long st = call(fuzz_verbs[i % 3], body, len, &out);
    assert_true(st == 400 || st == 200);
    free(out);
  }
  free(good);
  free(pod);
  char *out;
  assert_int_equal(call("/healthz", NULL, 0, &out), 200);
  free(out);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_healthz_metrics),
      cmocka_unit_test(test_filter_node_names),
      cmocka_unit_test(test_filter_node_list),
      cmocka_unit_test(test_prioritize),
      cmocka_unit_test(test_bind),
      cmocka_unit_test(test_concurrent_bind_last_gpu),
      cmocka_unit_test(test_bad_requests),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
