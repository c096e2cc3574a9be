/* test_k8s_client.c -- the Kubernetes client against tests/k8s/fake_apiserver.py
 * (a local API server with real resourceVersion, merge-patch, 409 and 410
 * semantics), plus kubeconfig and in-cluster configuration from files. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <time.h>
#include <unistd.h>

#include "fake_requests.h"
#include "harness.h"
#include "k8s.h"

#define TOKEN "test-token"

static pid_t server_pid;
static int server_port;
static char tmpdir[256];

/* ---- fixtures ---- */

static int start_server(void **state) {
  (void)state;
  char *argv[] = {"/usr/bin/python3",    VG_K8S_FAKE, "--token", TOKEN,
                  "--bookmark-interval", "0.3",       NULL};
  server_pid = vg_start_server(argv, &server_port);
  if (server_pid < 0) return -1;
  snprintf(tmpdir, sizeof(tmpdir), "/tmp/vg-k8s-test.XXXXXX");
  if (mkdtemp(tmpdir) == NULL) return -1;
  return 0;
}

static int stop_server(void **state) {
  (void)state;
  kill(server_pid, SIGTERM);
  waitpid(server_pid, NULL, 0);
  char cmd[300];
  snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
  if (system(cmd) != 0) return -1;
  return 0;
}

static struct vg_k8s_client *client_for(int port, const char *token) {
  char server[64];
  snprintf(server, sizeof(server), "http://127.0.0.1:%d", port);
  struct vg_k8s_config cfg = {.server = server, .token = (char *)token};
  struct vg_err err;
  struct vg_k8s_client *c = vg_k8s_client_new(&cfg, &err);
  if (c == NULL) fail_msg("client: %s", err.msg);
  vg_k8s_client_set_timeouts(c, 5000, 2000);
  return c;
}

static struct vg_k8s_client *client(void) { return client_for(server_port, TOKEN); }

/* Calls a /_test endpoint of the fake server. */
static void admin(struct vg_k8s_client *c, const char *method, const char *path, const char *body) {
  struct vg_k8s_response r;
  struct vg_err err;
  if (vg_k8s_request(c, method, path, "application/json", body, &r, &err) != 0)
    fail_msg("%s %s: %s", method, path, err.msg);
  if (r.status >= 300) fail_msg("%s %s: HTTP %ld %s", method, path, r.status, r.body);
  vg_k8s_response_free(&r);
}

/* How many requests "VERB /path..." the fake server has served: which path,
 * subresource or not, a call went to. */
static long requests_to(struct vg_k8s_client *c, const char *key) {
  struct vg_err err;
  long n = vg_fake_requests(c, key, &err);
  if (n < 0) fail_msg("%s", err.msg);
  return n;
}

static void add_pod(struct vg_k8s_client *c, const char *name, const char *node) {
  char body[512];
  if (node != NULL)
    snprintf(body, sizeof(body),
             "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"default\"},"
             "\"spec\":{\"nodeName\":\"%s\"}}",
             name, node);
  else
    snprintf(body, sizeof(body), "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"default\"}}",
             name);
  admin(c, "POST", "/_test/pods", body);
}

static void write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

static void expect_msg(const char *msg, const char *part) {
  if (strstr(msg, part) == NULL) fail_msg("error '%s' lacks '%s'", msg, part);
}

static const char *get_str(json_object *o, const char *a, const char *b) {
  json_object *x, *y;
  if (!json_object_object_get_ex(o, a, &x)) return NULL;
  if (b == NULL) return json_object_get_string(x);
  if (!json_object_object_get_ex(x, b, &y)) return NULL;
  return json_object_get_string(y);
}

static const char *annotation(json_object *o, const char *key) {
  json_object *m, *a, *v;
  if (json_object_object_get_ex(o, "metadata", &m) &&
      json_object_object_get_ex(m, "annotations", &a) && json_object_object_get_ex(a, key, &v))
    return json_object_get_string(v);
  return NULL;
}

/* ---- configuration ---- */

/* "-----BEGIN CERTIFICATE-----\nfake\n-----END CERTIFICATE-----\n" */
#define CA_PEM "-----BEGIN CERTIFICATE-----\nfake\n-----END CERTIFICATE-----\n"
#define CA_B64 "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCmZha2UKLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo="

static void test_kubeconfig_token_and_ca_data(void **s) {
  (void)s;
  char path[320];
  snprintf(path, sizeof(path), "%s/kc1", tmpdir);
  write_file(path,
             "apiVersion: v1\nkind: Config\ncurrent-context: dev\n"
             "clusters:\n"
             "- name: other\n  cluster:\n    server: https://wrong:1\n"
             "- name: c1\n  cluster:\n    server: https://10.1.2.3:6443/\n"
             "    certificate-authority-data: " CA_B64
             "\n"
             "contexts:\n- name: dev\n  context:\n    cluster: c1\n    user: u1\n"
             "    namespace: gpu\n"
             "users:\n- name: u1\n  user:\n    token: abc.def\n");
  struct vg_k8s_config cfg;
  struct vg_err err;
  if (vg_k8s_config_kubeconfig(&cfg, path, &err) != 0) fail_msg("%s", err.msg);
  assert_string_equal(cfg.server, "https://10.1.2.3:6443");
  assert_string_equal(cfg.token, "abc.def");
  assert_string_equal(cfg.namespace_, "gpu");
  assert_int_equal(cfg.ca_data_len, strlen(CA_PEM));
  assert_memory_equal(cfg.ca_data, CA_PEM, strlen(CA_PEM));
  assert_false(cfg.insecure);
  vg_k8s_config_free(&cfg);

  /* Files relative to the kubeconfig; client certificates; $KUBECONFIG. */
  snprintf(path, sizeof(path), "%s/kc2", tmpdir);
  write_file(path,
             "current-context: x\n"
             "clusters:\n- name: c\n  cluster:\n    server: https://h:1\n"
             "    certificate-authority: ca.crt\n    insecure-skip-tls-verify: true\n"
             "contexts:\n- name: x\n  context: {cluster: c, user: u}\n"
             "users:\n- name: u\n  user:\n    client-certificate: /abs/cert.pem\n"
             "    client-key-data: " CA_B64 "\n");
  setenv("KUBECONFIG", path, 1);
  if (vg_k8s_config_load(&cfg, NULL, &err) != 0) fail_msg("%s", err.msg);
  unsetenv("KUBECONFIG");
  char want[340];
  snprintf(want, sizeof(want), "%s/ca.crt", tmpdir);
  assert_string_equal(cfg.ca_file, want);
  assert_true(cfg.insecure);
  assert_string_equal(cfg.cert_file, "/abs/cert.pem");
  assert_non_null(cfg.key_data);
  assert_null(cfg.token);
  assert_string_equal(cfg.source, path);
  vg_k8s_config_free(&cfg);
}

static void bad_kubeconfig(const char *text, const char *part) {
  char path[320];
  snprintf(path, sizeof(path), "%s/bad", tmpdir);
  write_file(path, text);
  struct vg_k8s_config cfg;
  struct vg_err err;
  assert_int_equal(vg_k8s_config_kubeconfig(&cfg, path, &err), -1);
  expect_msg(err.msg, path);
  expect_msg(err.msg, part);
}

static void test_kubeconfig_errors(void **s) {
  (void)s;
  const char *ok_tail =
      "contexts:\n- name: x\n  context: {cluster: c, user: u}\n"
      "users:\n- name: u\n  user: {token: t}\n";
  char buf[1024];
  bad_kubeconfig("clusters: []\n", "current-context is missing");
  bad_kubeconfig("current-context: x\ncontexts: []\n", "no entry named 'x'");
  snprintf(buf, sizeof(buf), "current-context: x\nclusters:\n- name: c\n  cluster: {}\n%s",
           ok_tail);
  bad_kubeconfig(buf, "has no server field");
  snprintf(buf, sizeof(buf),
           "current-context: x\nclusters:\n- name: c\n  cluster:\n    server: https://h\n"
           "    certificate-authority-data: '***'\n%s",
           ok_tail);
  bad_kubeconfig(buf, "certificate-authority-data is not valid base64");
  bad_kubeconfig(
      "current-context: x\nclusters:\n- name: c\n  cluster: {server: https://h}\n"
      "contexts:\n- name: x\n  context: {cluster: c, user: nobody}\nusers: []\n",
      "users has no entry named 'nobody'");
  bad_kubeconfig(
      "current-context: x\nclusters:\n- name: c\n  cluster: {server: https://h}\n"
      "contexts:\n- name: x\n  context: {cluster: c, user: u}\n"
      "users:\n- name: u\n  user: {client-certificate: /c.pem}\n",
      "no client-key");
  bad_kubeconfig("current-context: [unclosed\n", "YAML error");
  struct vg_k8s_config cfg;
  struct vg_err err;
  assert_int_equal(vg_k8s_config_kubeconfig(&cfg, "/nonexistent/kubeconfig", &err), -1);
  expect_msg(err.msg, "/nonexistent/kubeconfig");
}

static void test_in_cluster(void **s) {
  (void)s;
  char dir[300], p[340];
  snprintf(dir, sizeof(dir), "%s/sa", tmpdir);
  mkdir(dir, 0700);
  struct vg_k8s_config cfg;
  struct vg_err err;
  unsetenv("KUBERNETES_SERVICE_HOST");
  assert_int_equal(vg_k8s_config_in_cluster(&cfg, dir, &err), -1);
  expect_msg(err.msg, "KUBERNETES_SERVICE_HOST");

  setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
  setenv("KUBERNETES_SERVICE_PORT", "443", 1);
  assert_int_equal(vg_k8s_config_in_cluster(&cfg, dir, &err), -1);
  expect_msg(err.msg, "token");

  snprintf(p, sizeof(p), "%s/token", dir);
  write_file(p, TOKEN "\n");
  assert_int_equal(vg_k8s_config_in_cluster(&cfg, dir, &err), -1);
  expect_msg(err.msg, "ca.crt");
  snprintf(p, sizeof(p), "%s/ca.crt", dir);
  write_file(p, CA_PEM);
  snprintf(p, sizeof(p), "%s/namespace", dir);
  write_file(p, "kube-system\n");
  if (vg_k8s_config_in_cluster(&cfg, dir, &err) != 0) fail_msg("%s", err.msg);
  assert_string_equal(cfg.server, "https://10.96.0.1:443");
  assert_string_equal(cfg.namespace_, "kube-system");
  snprintf(p, sizeof(p), "%s/ca.crt", dir);
  assert_string_equal(cfg.ca_file, p);

  /* The token file is what authenticates (trailing newline stripped): point
   * the same config at the fake server over plain HTTP. */
  char server[64];
  snprintf(server, sizeof(server), "http://127.0.0.1:%d", server_port);
  free(cfg.server);
  cfg.server = strdup(server);
  struct vg_k8s_client *c = vg_k8s_client_new(&cfg, &err);
  assert_non_null(c);
  json_object *list = NULL;
  if (vg_k8s_list_pods(c, NULL, &list, NULL, 0, &err) != 0) fail_msg("%s", err.msg);
  json_object_put(list);
  vg_k8s_client_free(c);
  vg_k8s_config_free(&cfg);

  setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
  if (vg_k8s_config_in_cluster(&cfg, dir, &err) != 0) fail_msg("%s", err.msg);
  assert_string_equal(cfg.server, "https://[fd00::1]:443");
  vg_k8s_config_free(&cfg);
  unsetenv("KUBERNETES_SERVICE_HOST");
  unsetenv("KUBERNETES_SERVICE_PORT");
}

/* ---- API operations ---- */

struct upd {
  int calls;
};

static int set_inventory(json_object *cur, json_object **ann, void *arg, struct vg_err *err) {
  (void)err;
  struct upd *u = arg;
  u->calls++;
  const char *old = annotation(cur, "vgpu.io/count");
  char v[32];
  snprintf(v, sizeof(v), "%d", old != NULL ? atoi(old) + 1 : 1);
  *ann = json_object_new_object();
  json_object_object_add(*ann, "vgpu.io/count", json_object_new_string(v));
  return 0;
}

static void test_node_get_patch_conflict(void **s) {
  (void)s;
  struct vg_k8s_client *c = client();
  struct vg_err err;
  admin(c, "POST", "/_test/nodes", "{\"metadata\":{\"name\":\"node-a\"}}");
  json_object *node = NULL;
  if (vg_k8s_get_node(c, "node-a", &node, &err) != 0) fail_msg("%s", err.msg);
  char rv[64];
  snprintf(rv, sizeof(rv), "%s", get_str(node, "metadata", "resourceVersion"));
  json_object_put(node);

  json_object *ann = json_object_new_object();
  json_object_object_add(ann, "vgpu.io/inventory", json_object_new_string("[1]"));
  json_object *out = NULL;
  if (vg_k8s_patch_node_annotations(c, "node-a", ann, rv, &out, &err) != 0) fail_msg("%s", err.msg);
  assert_string_equal(annotation(out, "vgpu.io/inventory"), "[1]");
  assert_string_not_equal(get_str(out, "metadata", "resourceVersion"), rv);
  json_object_put(out);

  /* The same precondition again is stale now. */
  assert_int_equal(vg_k8s_patch_node_annotations(c, "node-a", ann, rv, NULL, &err),
                   VG_K8S_ECONFLICT);
  expect_msg(err.msg, "PATCH");
  expect_msg(err.msg, "/api/v1/nodes/node-a/status");
  expect_msg(err.msg, "HTTP 409");
  expect_msg(err.msg, "the object has been modified");

  /* null deletes (RFC 7386). */
  json_object_object_add(ann, "vgpu.io/inventory", NULL);
  if (vg_k8s_patch_node_annotations(c, "node-a", ann, NULL, &out, &err) != 0)
    fail_msg("%s", err.msg);
  assert_null(annotation(out, "vgpu.io/inventory"));
  json_object_put(out);
  json_object_put(ann);

  /* Read-modify-write: two conflicts, then success on the third try. */
  struct upd u = {0};
  admin(c, "POST", "/_test/conflict_next?n=2", "");
  if (vg_k8s_update_node_annotations(c, "node-a", set_inventory, &u, 5, &err) != 0)
    fail_msg("%s", err.msg);
  assert_int_equal(u.calls, 3);
  vg_k8s_get_node(c, "node-a", &node, &err);
  assert_string_equal(annotation(node, "vgpu.io/count"), "1");
  json_object_put(node);

  /* Bounded: always conflicting gives up with a clear message. */
  u.calls = 0;
  admin(c, "POST", "/_test/conflict_next?n=100", "");
  assert_int_equal(vg_k8s_update_node_annotations(c, "node-a", set_inventory, &u, 3, &err),
                   VG_K8S_ECONFLICT);
  assert_int_equal(u.calls, 3);
  expect_msg(err.msg, "still conflicting after 3 attempts");
  admin(c, "POST", "/_test/conflict_next?n=0", "");

  /* Every write went to nodes/status, none to the Node: the node agent's
   * role has patch on nodes/status only (docs/install.md, "Privileges"). 3
   * patches, then 3 + 3 read-modify-write attempts. */
  assert_int_equal(requests_to(c, "PATCH /api/v1/nodes/node-a/status"), 9);
  assert_int_equal(requests_to(c, "PATCH /api/v1/nodes/node-a"), 9); /* none on the Node */
  assert_int_equal(requests_to(c, "GET /api/v1/nodes/node-a/status"), 0);
  /* A status write cannot touch the spec (taints, unschedulable). */
  struct vg_k8s_response r;
  if (vg_k8s_request(c, "PATCH", "/api/v1/nodes/node-a/status", "application/merge-patch+json",
                     "{\"spec\":{\"unschedulable\":true}}", &r, &err) != 0)
    fail_msg("%s", err.msg);
  vg_k8s_response_free(&r);
  vg_k8s_get_node(c, "node-a", &node, &err);
  assert_null(json_object_object_get(node, "spec"));
  json_object_put(node);

  assert_int_equal(vg_k8s_get_node(c, "no-such-node", &node, &err), VG_K8S_ENOTFOUND);
  expect_msg(err.msg, "HTTP 404");
  expect_msg(err.msg, "not found");
  vg_k8s_client_free(c);
}

static void test_list_pods_by_node_and_patch_pod(void **s) {
  (void)s;
  struct vg_k8s_client *c = client();
  struct vg_err err;
  add_pod(c, "lp-1", "list-node");
  add_pod(c, "lp-2", "list-node");
  add_pod(c, "lp-3", "elsewhere");
  add_pod(c, "lp-4", NULL);
  json_object *list = NULL;
  char rv[64] = "";
  if (vg_k8s_list_pods(c, "list-node", &list, rv, sizeof(rv), &err) != 0) fail_msg("%s", err.msg);
  assert_true(rv[0] != '\0');
  json_object *items;
  assert_true(json_object_object_get_ex(list, "items", &items));
  assert_int_equal(json_object_array_length(items), 2);
  for (size_t i = 0; i < 2; i++)
    assert_string_equal(get_str(json_object_array_get_idx(items, i), "spec", "nodeName"),
                        "list-node");
  json_object_put(list);

  json_object *ann = json_object_new_object();
  json_object_object_add(ann, "vgpu.io/assigned", json_object_new_string("GPU-1"));
  if (vg_k8s_patch_pod_annotations(c, "default", "lp-1", ann, NULL, NULL, &err) != 0)
    fail_msg("%s", err.msg);
  json_object_put(ann);
  json_object *pod = NULL;
  if (vg_k8s_get_pod(c, "default", "lp-1", &pod, &err) != 0) fail_msg("%s", err.msg);
  assert_string_equal(annotation(pod, "vgpu.io/assigned"), "GPU-1");
  char rv2[64];
  snprintf(rv2, sizeof(rv2), "%s", get_str(pod, "metadata", "resourceVersion"));
  json_object_put(pod);

  /* vgpu's own components write through pods/status: labels and annotations
   * persist, null deletes, the resourceVersion precondition holds. */
  json_object *labels = json_object_new_object();
  ann = json_object_new_object();
  json_object_object_add(labels, "vgpu.io/resize", json_object_new_string("open"));
  json_object_object_add(ann, "vgpu.io/resize-status", json_object_new_string("s1"));
  json_object_object_add(ann, "vgpu.io/assigned", NULL);
  json_object *out = NULL;
  if (vg_k8s_patch_pod_status_metadata(c, "default", "lp-1", labels, ann, rv2, &out, &err) != 0)
    fail_msg("%s", err.msg);
  assert_string_equal(annotation(out, "vgpu.io/resize-status"), "s1");
  assert_null(annotation(out, "vgpu.io/assigned"));
  assert_string_equal(get_str(out, "spec", "nodeName"), "list-node");
  json_object_put(out);
  assert_int_equal(
      vg_k8s_patch_pod_status_metadata(c, "default", "lp-1", labels, ann, rv2, NULL, &err),
      VG_K8S_ECONFLICT);
  expect_msg(err.msg, "/api/v1/namespaces/default/pods/lp-1/status");
  json_object_put(ann);
  json_object_put(labels);
  if (vg_k8s_get_pod(c, "default", "lp-1", &pod, &err) != 0) fail_msg("%s", err.msg);
  json_object *pl = json_object_object_get(json_object_object_get(pod, "metadata"), "labels");
  assert_string_equal(json_object_get_string(json_object_object_get(pl, "vgpu.io/resize")), "open");
  json_object_put(pod);
  assert_int_equal(requests_to(c, "PATCH /api/v1/namespaces/default/pods/lp-1/status"), 2);
  assert_int_equal(requests_to(c, "PATCH /api/v1/namespaces/default/pods/lp-1"), 3); /* 1 Pod */
  vg_k8s_client_free(c);
}

static void test_binding(void **s) {
  (void)s;
  struct vg_k8s_client *c = client();
  struct vg_err err;
  add_pod(c, "bind-me", NULL);
  json_object *pod = NULL;
  vg_k8s_get_pod(c, "default", "bind-me", &pod, &err);
  char uid[64];
  snprintf(uid, sizeof(uid), "%s", get_str(pod, "metadata", "uid"));
  json_object_put(pod);

  json_object *ann = json_object_new_object();
  json_object_object_add(ann, "vgpu.io/gpus", json_object_new_string("GPU-a,GPU-b"));
  assert_int_equal(vg_k8s_bind_pod(c, "default", "bind-me", "wrong-uid", "n1", ann, &err),
                   VG_K8S_ECONFLICT);
  /* A 400 has its own code (an Eviction's fallback to policy/v1beta1 keys on it). */
  assert_int_equal(vg_k8s_bind_pod(c, "default", "bind-me", uid, "", ann, &err),
                   VG_K8S_EBADREQUEST);
  expect_msg(err.msg, "HTTP 400");
  if (vg_k8s_bind_pod(c, "default", "bind-me", uid, "gpu-node-1", ann, &err) != 0)
    fail_msg("%s", err.msg);
  vg_k8s_get_pod(c, "default", "bind-me", &pod, &err);
  assert_string_equal(get_str(pod, "spec", "nodeName"), "gpu-node-1");
  assert_string_equal(annotation(pod, "vgpu.io/gpus"), "GPU-a,GPU-b");
  json_object_put(pod);

  assert_int_equal(vg_k8s_bind_pod(c, "default", "bind-me", uid, "gpu-node-2", ann, &err),
                   VG_K8S_ECONFLICT);
  expect_msg(err.msg, "POST");
  expect_msg(err.msg, "/binding");
  expect_msg(err.msg, "already assigned");
  json_object_put(ann);
  vg_k8s_client_free(c);
}

/* ---- watch ---- */

struct seen {
  pthread_mutex_t lock;
  int n, bookmarks;
  char ev[64][80]; /* "TYPE name" */
  char rv[64][32];
};

static int record(enum vg_k8s_event type, json_object *obj, void *arg) {
  struct seen *s = arg;
  pthread_mutex_lock(&s->lock);
  if (type == VG_K8S_BOOKMARK) {
    s->bookmarks++;
  } else if (s->n < 64) {
    const char *name = get_str(obj, "metadata", "name");
    snprintf(s->ev[s->n], sizeof(s->ev[0]), "%s %s", vg_k8s_event_name(type),
             name != NULL ? name : "?");
    snprintf(s->rv[s->n], sizeof(s->rv[0]), "%s", get_str(obj, "metadata", "resourceVersion"));
    s->n++;
  }
  pthread_mutex_unlock(&s->lock);
  return 0;
}

struct watcher {
  struct vg_k8s_client *c;
  struct vg_k8s_watch_opts opts;
  char rv[64];
  struct seen seen;
  volatile sig_atomic_t stop;
  int ret;
  struct vg_err err;
};

static void *watch_thread(void *arg) {
  struct watcher *w = arg;
  w->ret = vg_k8s_watch(w->c, &w->opts, w->rv, sizeof(w->rv), record, &w->seen, &w->err);
  return NULL;
}

static int count(struct watcher *w, int *bookmarks) {
  pthread_mutex_lock(&w->seen.lock);
  int n = w->seen.n;
  if (bookmarks != NULL) *bookmarks = w->seen.bookmarks;
  pthread_mutex_unlock(&w->seen.lock);
  return n;
}

static void wait_for(struct watcher *w, int n) {
  for (int i = 0; i < 100 && count(w, NULL) < n; i++) usleep(50 * 1000);
  if (count(w, NULL) < n) fail_msg("watch saw %d events, want %d", count(w, NULL), n);
}

static void watcher_init(struct watcher *w, const char *node) {
  memset(w, 0, sizeof(*w));
  pthread_mutex_init(&w->seen.lock, NULL);
  w->c = client();
  w->opts.field_selector = NULL;
  static char sel[128];
  snprintf(sel, sizeof(sel), "spec.nodeName=%s", node);
  w->opts.field_selector = sel;
  w->opts.bookmarks = true;
  w->opts.timeout_seconds = 30;
  w->opts.stop = &w->stop;
  struct vg_err err;
  if (vg_k8s_list_pods(w->c, node, NULL, w->rv, sizeof(w->rv), &err) != 0) fail_msg("%s", err.msg);
}

static void test_watch_events_and_resume(void **s) {
  (void)s;
  struct watcher w;
  watcher_init(&w, "watch-node");
  struct vg_k8s_client *c = w.c;
  struct vg_err err;
  pthread_t t;
  pthread_create(&t, NULL, watch_thread, &w);
  usleep(200 * 1000);
  add_pod(c, "w1", "watch-node");
  add_pod(c, "other", "other-node"); /* not selected */
  json_object *ann = json_object_new_object();
  json_object_object_add(ann, "k", json_object_new_string("v"));
  vg_k8s_patch_pod_annotations(c, "default", "w1", ann, NULL, NULL, &err);
  admin(c, "DELETE", "/_test/pods/default/w1", NULL);
  wait_for(&w, 3);

  /* The server ends the stream; events made before the client reconnects
   * must arrive exactly once (the watch resumes from the last rv). */
  admin(c, "POST", "/_test/close_watches", "");
  add_pod(c, "w2", "watch-node");
  add_pod(c, "w3", NULL);
  vg_k8s_bind_pod(c, "default", "w3", NULL, "watch-node", ann, &err); /* enters the selection */
  json_object_put(ann);
  wait_for(&w, 5);

  int bookmarks = 0;
  for (int i = 0; i < 40 && bookmarks == 0; i++) {
    usleep(50 * 1000);
    count(&w, &bookmarks);
  }
  w.stop = 1;
  pthread_join(t, NULL);
  if (w.ret != 0) fail_msg("watch returned %d: %s", w.ret, w.err.msg);
  assert_int_equal(w.seen.n, 5);
  assert_string_equal(w.seen.ev[0], "ADDED w1");
  assert_string_equal(w.seen.ev[1], "MODIFIED w1");
  assert_string_equal(w.seen.ev[2], "DELETED w1");
  assert_string_equal(w.seen.ev[3], "ADDED w2");
  assert_string_equal(w.seen.ev[4], "ADDED w3");
  for (int i = 1; i < 5; i++) assert_true(atol(w.seen.rv[i]) > atol(w.seen.rv[i - 1]));
  assert_true(bookmarks > 0);
  /* Bookmarks move the rv on even when no selected pod changes. */
  assert_true(atol(w.rv) >= atol(w.seen.rv[4]));
  vg_k8s_client_free(c);
}

static void test_watch_expired(void **s) {
  (void)s;
  struct watcher w;
  struct vg_err err;
  /* HTTP 410: the rv is older than the compaction point. */
  watcher_init(&w, "gone-node");
  add_pod(w.c, "g1", "gone-node");
  admin(w.c, "POST", "/_test/compact", "");
  w.ret = vg_k8s_watch(w.c, &w.opts, w.rv, sizeof(w.rv), record, &w.seen, &err);
  assert_int_equal(w.ret, VG_K8S_EEXPIRED);
  expect_msg(err.msg, "HTTP 410");
  /* Relist gives a usable rv again. */
  if (vg_k8s_list_pods(w.c, "gone-node", NULL, w.rv, sizeof(w.rv), &err) != 0)
    fail_msg("%s", err.msg);

  /* In-stream ERROR 410 while watching. */
  pthread_t t;
  pthread_create(&t, NULL, watch_thread, &w);
  usleep(300 * 1000);
  admin(w.c, "POST", "/_test/compact", "");
  pthread_join(t, NULL);
  assert_int_equal(w.ret, VG_K8S_EEXPIRED);
  expect_msg(w.err.msg, "expired");
  vg_k8s_client_free(w.c);
}

/* ---- failures ---- */

static int free_port(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  bind(fd, (struct sockaddr *)&a, sizeof(a));
  socklen_t len = sizeof(a);
  getsockname(fd, (struct sockaddr *)&a, &len);
  close(fd); /* nothing listens there now */
  return ntohs(a.sin_port);
}

static void test_server_down(void **s) {
  (void)s;
  struct vg_k8s_client *c = client_for(free_port(), TOKEN);
  struct vg_err err;
  json_object *node = NULL;
  assert_int_equal(vg_k8s_get_node(c, "n", &node, &err), VG_K8S_EUNREACHABLE);
  expect_msg(err.msg, "GET http://127.0.0.1:");
  expect_msg(err.msg, "API server unreachable");
  char rv[32] = "1";
  struct vg_k8s_watch_opts o = {0};
  assert_int_equal(vg_k8s_watch(c, &o, rv, sizeof(rv), record, NULL, &err), VG_K8S_EUNREACHABLE);
  expect_msg(err.msg, "unreachable");
  vg_k8s_client_free(c);
}

static void test_unauthorized_and_5xx(void **s) {
  (void)s;
  struct vg_k8s_client *c = client_for(server_port, "wrong");
  struct vg_err err;
  json_object *out = NULL;
  assert_int_equal(vg_k8s_list_pods(c, "x", &out, NULL, 0, &err), VG_K8S_EUNAUTHORIZED);
  expect_msg(err.msg, "HTTP 401");
  expect_msg(err.msg, "Unauthorized");
  char rv[32] = "1";
  struct vg_k8s_watch_opts o = {0};
  assert_int_equal(vg_k8s_watch(c, &o, rv, sizeof(rv), record, NULL, &err), VG_K8S_EUNAUTHORIZED);
  vg_k8s_client_free(c);

  c = client();
  admin(c, "POST", "/_test/fail?n=1", "");
  assert_int_equal(vg_k8s_get_node(c, "node-a", &out, &err), VG_K8S_EFAIL);
  expect_msg(err.msg, "HTTP 500");
  expect_msg(err.msg, "injected failure");
  if (vg_k8s_get_node(c, "node-a", &out, &err) != 0) fail_msg("%s", err.msg);
  json_object_put(out);
  vg_k8s_client_free(c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_kubeconfig_token_and_ca_data),
      cmocka_unit_test(test_kubeconfig_errors),
      cmocka_unit_test(test_in_cluster),
      cmocka_unit_test(test_node_get_patch_conflict),
      cmocka_unit_test(test_list_pods_by_node_and_patch_pod),
      cmocka_unit_test(test_binding),
      cmocka_unit_test(test_watch_events_and_resume),
      cmocka_unit_test(test_watch_expired),
      cmocka_unit_test(test_server_down),
      cmocka_unit_test(test_unauthorized_and_5xx),
  };
  return cmocka_run_group_tests(tests, start_server, stop_server);
}
