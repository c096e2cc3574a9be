/*
 * ext_harness.c -- the shared fixture of the vgpu-scheduler end-to-end tests
 * (ext_harness.h). Both processes are started with vg_start_server, which
 * reads the "PORT <n>" line each prints once it listens.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include <curl/curl.h>

#include "ext_harness.h"
#include "fake_requests.h"
#include "harness.h"
#include "json_get.h"

#define TOKEN "test-token"

struct vg_k8s_client *ext_api;
static pid_t api_pid, sched_pid;
static int api_port, sched_port;
static char tmpdir[256], kubeconfig[320];

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

long ext_call(const char *path, const char *body, size_t len, char **out) {
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

json_object *ext_post(const char *path, const char *body, long want) {
  char *out;
  long st = ext_call(path, body, strlen(body), &out);
  if (st != want) fail_msg("%s -> %ld (want %ld): %s\nbody: %s", path, st, want, out, body);
  json_object *o = json_tokener_parse(out);
  if (!o) fail_msg("%s: not JSON: %s", path, out);
  free(out);
  return o;
}

long ext_watch_events(const char *resource) {
  if (sched_pid <= 0) return -1;
  char *out = NULL, line[96];
  long n = -1;
  if (ext_call("/metrics", NULL, 0, &out) == 200 && out &&
      strstr(out, "vgpu_scheduler_watch_up{resource=\"pods\"} 1") &&
      strstr(out, "vgpu_scheduler_watch_up{resource=\"nodes\"} 1")) {
    snprintf(line, sizeof(line), "vgpu_scheduler_watch_events_total{resource=\"%s\"} ", resource);
    const char *at = strstr(out, line);
    if (at) n = strtol(at + strlen(line), NULL, 10);
  }
  free(out);
  return n;
}

void ext_wait_watch_events(const char *resource, long before) {
  for (int i = 0; before >= 0 && i < 1000; i++) { /* 10 s on a loaded machine */
    long now = ext_watch_events(resource);
    if (now < 0 || now > before) return; /* delivered, or the watch went down: API reads */
    usleep(10 * 1000);
  }
  if (before >= 0) fail_msg("the scheduler's %s watch did not deliver a write in 10 s", resource);
}

void ext_wait_watching(void) {
  for (int i = 0; i < 100; i++) {
    char *out = NULL;
    ext_call("/metrics", NULL, 0, &out);
    bool up = out && strstr(out, "vgpu_scheduler_watch_up{resource=\"pods\"} 1") &&
              strstr(out, "vgpu_scheduler_watch_up{resource=\"nodes\"} 1");
    free(out);
    if (up) return;
    usleep(100 * 1000);
  }
  fail_msg("the Pod and Node watches did not come up in 10 s");
}

void ext_admin(const char *path, const char *body) {
  struct vg_k8s_response r;
  struct vg_err err;
  /* A Pod or Node written behind the scheduler's back reaches its store by
   * the watch, milliseconds later (docs/scheduler.md, "Freshness"): wait
   * for that, so that the next filter is sure to see it. */
  const char *res = strcmp(path, "/_test/pods") == 0    ? "pods"
                    : strcmp(path, "/_test/nodes") == 0 ? "nodes"
                                                        : NULL;
  long before = res ? ext_watch_events(res) : -1;
  if (vg_k8s_request(ext_api, "POST", path, "application/json", body, &r, &err) != 0)
    fail_msg("%s", err.msg);
  if (r.status != 201 && r.status != 200) fail_msg("%s -> %ld: %s", path, r.status, r.body);
  vg_k8s_response_free(&r);
  if (res) ext_wait_watch_events(res, before);
}

long ext_api_requests(const char *prefix) {
  struct vg_err err;
  long n = vg_fake_requests(ext_api, prefix, &err);
  if (n < 0) fail_msg("%s", err.msg);
  return n;
}

long ext_api_gets(void) { return ext_api_requests("GET "); }

static json_object *gpu_json(const char *node, int g, int mem_gib, const char *type,
                             const char *resources, bool unhealthy) {
  char uuid[96];
  snprintf(uuid, sizeof(uuid), "GPU-%s-%d", node, g);
  json_object *o = json_object_new_object();
  json_object_object_add(o, "index", json_object_new_int(g));
  json_object_object_add(o, "uuid", json_object_new_string(uuid));
  json_object_object_add(o, "type", json_object_new_string(type));
  json_object_object_add(o, "memory", json_object_new_int64(mem_gib * EXT_GIB));
  json_object_object_add(o, "numa", NULL);
  json_object_object_add(o, "health", json_object_new_string(unhealthy ? "Unhealthy" : "Healthy"));
  json_object *res = json_tokener_parse(resources);
  if (!res) fail_msg("resources are not JSON: %s", resources);
  json_object_object_add(o, "resources", res);
  return o;
}

long long ext_context_reserve = 0;

char *ext_node_json(const char *name, int ngpu, int mem_gib, const char *type,
                    const char *resources, unsigned unhealthy) {
  json_object *inv = json_object_new_object(), *gpus = json_object_new_array();
  json_object_object_add(inv, "version", json_object_new_int(1));
  json_object_object_add(inv, "node", json_object_new_string(name));
  json_object_object_add(inv, "contextReserve", json_object_new_int64(ext_context_reserve));
  json_object_object_add(inv, "gpus", gpus);
  for (int g = 0; g < ngpu; g++)
    json_object_array_add(gpus, gpu_json(name, g, mem_gib, type, resources, unhealthy >> g & 1));
  json_object *node = json_object_new_object(), *meta = json_object_new_object();
  json_object *ann = json_object_new_object();
  json_object_object_add(meta, "name", json_object_new_string(name));
  if (ngpu > 0)
    json_object_object_add(
        ann, "vgpu.io/gpu-inventory",
        json_object_new_string(json_object_to_json_string_ext(inv, JSON_C_TO_STRING_PLAIN)));
  json_object_object_add(meta, "annotations", ann);
  json_object_object_add(node, "kind", json_object_new_string("Node"));
  json_object_object_add(node, "apiVersion", json_object_new_string("v1"));
  json_object_object_add(node, "metadata", meta);
  json_object_put(inv);
  char *s = strdup(json_object_to_json_string(node));
  json_object_put(node);
  return s;
}

void ext_add_node(const char *name, int ngpu, int mem_gib, const char *type, const char *resources,
                  unsigned unhealthy) {
  char *n = ext_node_json(name, ngpu, mem_gib, type, resources, unhealthy);
  ext_admin("/_test/nodes", n);
  free(n);
}

char *ext_pod_json(const char *name, const char *limits, const char *annotations, const char *node,
                   const char *assigned) {
  json_object *ann = json_tokener_parse("{}");
  if (annotations) {
    char *text = NULL;
    if (asprintf(&text, "{%s}", annotations) < 0) abort();
    json_object_put(ann);
    ann = json_tokener_parse(text);
    if (!ann) fail_msg("annotations are not JSON: %s", text);
    free(text);
  }
  if (assigned) json_object_object_add(ann, "vgpu.io/assigned", json_object_new_string(assigned));
  char *out = NULL;
  if (asprintf(&out,
               "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"%s\","
               "\"namespace\":\"default\",\"uid\":\"uid-%s\",\"annotations\":%s},"
               "\"spec\":{%s%s%s\"containers\":[{\"name\":\"main\",\"image\":\"cuda\","
               "\"resources\":{\"limits\":{\"cpu\":\"1\",\"memory\":\"1Gi\",%s}}}]},"
               "\"status\":{\"phase\":\"%s\"}}",
               name, name, json_object_to_json_string(ann), node ? "\"nodeName\":\"" : "",
               node ? node : "", node ? "\"," : "", limits, node ? "Running" : "Pending") < 0)
    abort();
  json_object_put(ann);
  return out;
}

void ext_add_pod(const char *name, const char *limits, const char *annotations, const char *node,
                 const char *assigned) {
  char *p = ext_pod_json(name, limits, annotations, node, assigned);
  ext_admin("/_test/pods", p);
  free(p);
}

void ext_add_vgpu_node(const char *name) {
  ext_add_node(name, 1, 8, "NVIDIA H100 (vgpu-sim)",
               "[{\"name\":\"nvidia.com/vgpu\",\"dialect\":\"vgpu\",\"count\":4,\"unit\":0,"
               "\"memory\":8589934592,\"cores\":100}]",
               0);
}

int ext_events(const char *reason, const char *pod, const char *part, char *last, size_t len) {
  json_object *list = NULL;
  struct vg_err err = {{0}};
  assert_int_equal(vg_k8s_call(ext_api, "GET", "/_test/events", NULL, NULL, &list, &err), 0);
  json_object *items = vg_json_get(list, "items");
  int n = 0;
  for (size_t i = 0; i < json_object_array_length(items); i++) {
    json_object *ev = json_object_array_get_idx(items, i);
    const char *name = vg_json_get_str(vg_json_get(ev, "involvedObject"), "name");
    const char *msg = vg_json_get_str(ev, "message");
    if (strcmp(vg_json_get_str(ev, "reason"), reason) != 0 ||
        strcmp(vg_json_get_str(ev, "type"), "Warning") != 0 ||
        strcmp(vg_json_get_str(vg_json_get(ev, "source"), "component"), "vgpu-scheduler") != 0 ||
        (pod != NULL && (name == NULL || strcmp(name, pod) != 0)) ||
        (part != NULL && (msg == NULL || strstr(msg, part) == NULL)))
      continue;
    if (last != NULL) snprintf(last, len, "%s", msg != NULL ? msg : "");
    n++;
  }
  json_object_put(list);
  return n;
}

char *ext_args_names(const char *pod, const char *names) {
  char *out = NULL;
  if (asprintf(&out, "{\"Pod\":%s,\"Nodes\":null,\"NodeNames\":[%s]}", pod, names) < 0) abort();
  return out;
}

json_object *ext_bind(const char *pod, const char *node) {
  char body[256];
  snprintf(body, sizeof(body),
           "{\"PodName\":\"%s\",\"PodNamespace\":\"default\",\"PodUID\":\"\",\"Node\":\"%s\"}", pod,
           node);
  return ext_post("/bind", body, 200);
}

const char *ext_bind_error(json_object *res) {
  json_object *e = NULL;
  return json_object_object_get_ex(res, "Error", &e) ? json_object_get_string(e) : "(no Error)";
}

char *ext_assigned(const char *pod) {
  json_object *o = NULL;
  struct vg_err err;
  if (vg_k8s_get_pod(ext_api, "default", pod, &o, &err) != 0) fail_msg("get %s: %s", pod, err.msg);
  json_object *ann = json_object_object_get(json_object_object_get(o, "metadata"), "annotations");
  json_object *a = json_object_object_get(ann, "vgpu.io/assigned");
  /* Re-serialised without escaping '/', so tests can look for resource names. */
  json_object *parsed = a ? json_tokener_parse(json_object_get_string(a)) : NULL;
  char *s = parsed ? strdup(json_object_to_json_string_ext(
                         parsed, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE))
                   : NULL;
  json_object_put(parsed);
  json_object_put(o);
  return s;
}

static const char *reason_in(json_object *res, const char *map, const char *node) {
  json_object *f = NULL, *r = NULL;
  if (!json_object_object_get_ex(res, map, &f)) return NULL;
  if (!json_object_object_get_ex(f, node, &r)) return NULL;
  return json_object_get_string(r);
}

const char *ext_failed_reason(json_object *res, const char *node) {
  return reason_in(res, "FailedNodes", node);
}

const char *ext_unresolvable_reason(json_object *res, const char *node) {
  return reason_in(res, "FailedAndUnresolvableNodes", node);
}

void ext_expect_refused(json_object *res, const char *node, const char *part) {
  if (ext_has_name(res, node)) fail_msg("%s passed: %s", node, json_object_to_json_string(res));
  ext_expect_contains(ext_failed_reason(res, node), part);
  ext_expect_contains(ext_unresolvable_reason(res, node), part);
}

bool ext_has_name(json_object *res, const char *node) {
  json_object *names = NULL;
  if (!json_object_object_get_ex(res, "NodeNames", &names) || !names) return false;
  for (size_t i = 0; i < json_object_array_length(names); i++)
    if (strcmp(json_object_get_string(json_object_array_get_idx(names, i)), node) == 0) return true;
  return false;
}

void ext_expect_contains(const char *s, const char *part) {
  if (!s || !strstr(s, part)) fail_msg("expected '%s' in '%s'", part, s ? s : "(null)");
}

int ext_score(json_object *list, const char *host) {
  for (size_t i = 0; i < json_object_array_length(list); i++) {
    json_object *h = json_object_array_get_idx(list, i);
    if (strcmp(json_object_get_string(json_object_object_get(h, "Host")), host) == 0)
      return json_object_get_int(json_object_object_get(h, "Score"));
  }
  fail_msg("no score for %s in %s", host, json_object_to_json_string(list));
  return -1;
}

int ext_api_start(void) {
  curl_global_init(CURL_GLOBAL_DEFAULT);
  char *argv[] = {"/usr/bin/python3", VG_K8S_FAKE, "--token", TOKEN, NULL};
  api_pid = vg_start_server(argv, &api_port);
  if (api_pid < 0) return -1;
  snprintf(tmpdir, sizeof(tmpdir), "/tmp/vg-sched-ext.XXXXXX");
  if (!mkdtemp(tmpdir)) return -1;
  snprintf(kubeconfig, sizeof(kubeconfig), "%s/kubeconfig", tmpdir);
  FILE *f = fopen(kubeconfig, "w");
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
  ext_api = vg_k8s_client_new(&cfg, &err);
  return ext_api ? 0 : -1;
}

void ext_api_stop(void) {
  kill(api_pid, SIGTERM);
  waitpid(api_pid, NULL, 0);
  vg_k8s_client_free(ext_api);
  char cmd[300];
  snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
  if (system(cmd) != 0) fprintf(stderr, "cannot remove %s\n", tmpdir);
  curl_global_cleanup();
}

int ext_sched_start(const char *const *extra) {
  const char *argv[16] = {vg_build_path("bin/vgpu-scheduler"),
                          "--listen",
                          "127.0.0.1:0",
                          "--kubeconfig",
                          kubeconfig,
                          "--cache-ttl-ms",
                          "0"};
  int n = 7;
  for (int i = 0; extra && extra[i] && n < 15; i++) argv[n++] = extra[i];
  argv[n] = NULL;
  sched_pid = vg_start_server((char *const *)argv, &sched_port);
  return sched_pid < 0 ? -1 : 0;
}

void ext_sched_stop(bool kill9) {
  if (sched_pid <= 0) return;
  kill(sched_pid, kill9 ? SIGKILL : SIGTERM);
  int st = 0;
  waitpid(sched_pid, &st, 0);
  if (!kill9 && (!WIFEXITED(st) || WEXITSTATUS(st) != 0))
    fprintf(stderr, "scheduler exit status %d\n", st);
  sched_pid = 0;
}

int ext_teardown(void **state) {
  (void)state;
  ext_sched_stop(false);
  ext_api_stop();
  return 0;
}

int ext_sched_port(void) { return sched_port; }

/* ---- live resizes ---- */

json_object *ext_get_pod(const char *name) {
  json_object *pod = NULL;
  struct vg_err err = {{0}};
  assert_int_equal(vg_k8s_get_pod(ext_api, "default", name, &pod, &err), 0);
  return pod;
}

/* Writes a request on pod (and the node's acknowledgement when acked). */
void ext_resize_ask(const char *pod, const char *id, long long memory, int cores, bool acked) {
  struct vg_resize_request q = {.memory = memory, .cores = cores};
  snprintf(q.id, sizeof(q.id), "%s", id);
  snprintf(q.container, sizeof(q.container), "main");
  char *text = vg_resize_request_format(&q), *ack = vg_resize_node_format(id);
  json_object *ann = json_object_new_object(), *labels = json_object_new_object();
  json_object_object_add(ann, VG_RESIZE_REQUEST_ANNOTATION, json_object_new_string(text));
  if (acked) json_object_object_add(ann, VG_RESIZE_NODE_ANNOTATION, json_object_new_string(ack));
  json_object_object_add(labels, VG_RESIZE_LABEL, json_object_new_string(VG_RESIZE_LABEL_OPEN));
  struct vg_err err = {{0}};
  assert_int_equal(
      vg_k8s_patch_pod_metadata(ext_api, "default", pod, labels, ann, NULL, NULL, &err), 0);
  json_object_put(ann);
  json_object_put(labels);
  free(text);
  free(ack);
}

/* The pod's status for id within 5 s; fails the test when none comes. */
struct vg_resize_status ext_resize_wait_status(const char *pod, const char *id) {
  for (int i = 0; i < 500; i++) {
    json_object *p = ext_get_pod(pod);
    struct vg_resize_view v;
    vg_resize_view_of(p, &v, NULL);
    json_object_put(p);
    if (v.has_status && strcmp(v.status.id, id) == 0) return v.status;
    nanosleep(&(struct timespec){0, 10000000L}, NULL);
  }
  fail_msg("no resize status for %s on pod %s", id, pod);
  return (struct vg_resize_status){0};
}

char *ext_assign1(const char *node, const char *resource, const char *uuid, long long memory,
                  int cores) {
  char *s = NULL;
  if (asprintf(&s,
               "{\"version\":1,\"node\":\"%s\",\"containers\":[{\"name\":\"main\",\"resource\":"
               "\"%s\",\"gpus\":[{\"uuid\":\"%s\",\"index\":0,\"memory\":%lld,\"cores\":%d}]}]}",
               node, resource, uuid, memory, cores) < 0)
    abort();
  return s;
}

void ext_add_holder(const char *pod, const char *node, const char *resource, const char *uuid,
                    long long memory, int cores) {
  char *a = ext_assign1(node, resource, uuid, memory, cores);
  ext_add_pod(pod, "\"cpu\":\"1\"", NULL, node, a);
  free(a);
}

void ext_add_foreign(const char *name, const char *gpus) {
  char *text = NULL;
  if (asprintf(&text,
               "{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"%s\","
               "\"annotations\":{}},\"status\":{\"allocatable\":{\"cpu\":\"64\","
               "\"memory\":\"256Gi\"%s%s%s}}}",
               name, gpus ? ",\"nvidia.com/gpu\":\"" : "", gpus ? gpus : "", gpus ? "\"" : "") < 0)
    abort();
  ext_admin("/_test/nodes", text);
  free(text);
}

double ext_metric(const char *text, const char *series) {
  char want[300];
  snprintf(want, sizeof(want), "\n%s ", series);
  const char *p = strstr(text, want);
  if (p == NULL) fail_msg("no %s in\n%s", series, text);
  return atof(p + strlen(want));
}
