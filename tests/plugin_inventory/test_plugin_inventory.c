/*
 * test_plugin_inventory.c -- GPU health and the Node inventory annotation.
 *
 * The simulated NVML (VGPU_SIM_DEVICES=2, a fresh state file) stands for the
 * GPUs and build/bin/vgpu-sim injects faults; tests/k8s/fake_apiserver.py is
 * the API server. Checked: the annotation appears with the right content and
 * is not patched again when nothing changed; XID 79 and a lost GPU make that
 * GPU Unhealthy (callback called, next inventory says so), XID 13 does not;
 * clearing brings it back; an API server that is down at start gets the
 * inventory once it is up.
 */
// clang-format off
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
// clang-format on

#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "health.h"
#include "inventory.h"

#define TOKEN "test-token"
#define NODE "node1"

static char tmpdir[256];

/* ---- fake API server ---- */

/* Starts the fake server on `port` (0: any); returns its pid, *port_out set. */
static pid_t start_server(int port, int *port_out) {
  char p[16];
  snprintf(p, sizeof(p), "%d", port);
  /* The server binds port 0; wrap its class to bind a given port. */
  char *code =
      "import sys, importlib.util as u\n"
      "s = u.spec_from_file_location('fake', sys.argv[1]); m = u.module_from_spec(s)\n"
      "s.loader.exec_module(m); R = m.ThreadingHTTPServer; port = int(sys.argv[2])\n"
      "m.ThreadingHTTPServer = lambda a, h: R(('127.0.0.1', port), h)\n"
      "sys.argv = [sys.argv[0]] + sys.argv[3:]; sys.exit(m.main())\n";
  char *argv[] = {"/usr/bin/python3", "-c", code, VG_K8S_FAKE, p, "--token", TOKEN, NULL};
  return vg_start_server(argv, port_out);
}

static void stop_server(pid_t pid) {
  kill(pid, SIGTERM);
  waitpid(pid, NULL, 0);
}

static struct vg_k8s_client *client_for(int port) {
  char server[64];
  snprintf(server, sizeof(server), "http://127.0.0.1:%d", port);
  struct vg_k8s_config cfg = {.server = server, .token = (char *)TOKEN};
  struct vg_err err;
  struct vg_k8s_client *c = vg_k8s_client_new(&cfg, &err);
  if (c == NULL) fail_msg("client: %s", err.msg);
  vg_k8s_client_set_timeouts(c, 2000, 500);
  return c;
}

static void add_node(struct vg_k8s_client *c, const char *name) {
  char body[256];
  snprintf(body, sizeof(body), "{\"metadata\":{\"name\":\"%s\"}}", name);
  struct vg_k8s_response r;
  struct vg_err err;
  if (vg_k8s_request(c, "POST", "/_test/nodes", "application/json", body, &r, &err) != 0)
    fail_msg("create node: %s", err.msg);
  assert_true(r.status < 300);
  vg_k8s_response_free(&r);
}

/* The node's inventory annotation, parsed (NULL if absent). */
static json_object *node_inventory(struct vg_k8s_client *c, const char *name) {
  json_object *node = NULL, *meta, *ann, *val;
  struct vg_err err;
  if (vg_k8s_get_node(c, name, &node, &err) != 0) fail_msg("get node: %s", err.msg);
  json_object *doc = NULL;
  if (json_object_object_get_ex(node, "metadata", &meta) &&
      json_object_object_get_ex(meta, "annotations", &ann) &&
      json_object_object_get_ex(ann, VG_INVENTORY_ANNOTATION, &val))
    doc = json_tokener_parse(json_object_get_string(val));
  json_object_put(node);
  return doc;
}

static json_object *gpu_of(json_object *doc, size_t i) {
  json_object *gpus;
  assert_true(json_object_object_get_ex(doc, "gpus", &gpus));
  assert_true(json_object_array_length(gpus) > i);
  return json_object_array_get_idx(gpus, i);
}

static const char *str_of(json_object *o, const char *key) {
  json_object *v;
  return json_object_object_get_ex(o, key, &v) ? json_object_get_string(v) : NULL;
}

static int64_t int_of(json_object *o, const char *key) {
  json_object *v;
  return json_object_object_get_ex(o, key, &v) ? json_object_get_int64(v) : -999;
}

static bool wait_for(bool (*cond)(void *), void *arg, int ms) {
  for (int t = 0; t < ms; t += 20) {
    if (cond(arg)) return true;
    usleep(20000);
  }
  return cond(arg);
}

static bool inv_current(void *arg) { return vg_inventory_current(arg); }

static void vgpu_sim(const char *args) {
  char cmd[1024];
  snprintf(cmd, sizeof(cmd), "%s %s", vg_build_path("bin/vgpu-sim"), args);
  assert_int_equal(system(cmd), 0);
}

/* ---- fixtures ---- */

static struct vg_plugin_config cfg;
static struct vg_gpu gpus[VG_MAX_GPUS];
static unsigned n_gpus;

static const char *config_yaml =
    "version: v1\n"
    "contextReserve: 512Mi\n"
    "dialects:\n"
    "  vgpu:\n"
    "    deviceSplitCount: 4\n"
    "  gpushare:\n"
    "    memoryUnit: GiB\n";

static int setup(void **state) {
  (void)state;
  snprintf(tmpdir, sizeof(tmpdir), "/tmp/vg-inventory-test.XXXXXX");
  if (mkdtemp(tmpdir) == NULL) return -1;
  char path[512];
  snprintf(path, sizeof(path), "%s/sim.state", tmpdir);
  setenv("VGPU_SIM_STATE", path, 1);
  setenv("VGPU_SIM_DEVICES", "2", 1);
  setenv("VGPU_SIM_MEMORY", "16g", 1);
  /* dlopen("libnvidia-ml.so.1") then finds this one by its soname. */
  if (dlopen(vg_build_path("sim/libnvidia-ml.so.1"), RTLD_NOW | RTLD_GLOBAL) == NULL) {
    fprintf(stderr, "%s\n", dlerror());
    return -1;
  }
  struct vg_err err;
  if (vg_plugin_config_parse_string(config_yaml, strlen(config_yaml), "test.yaml", &cfg, &err) !=
      0) {
    fprintf(stderr, "config: %s\n", err.msg);
    return -1;
  }
  char msg[256];
  if (vg_gpus_discover(gpus, &n_gpus, msg, sizeof(msg)) != 0) {
    fprintf(stderr, "discover: %s\n", msg);
    return -1;
  }
  return n_gpus == 2 ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  vg_plugin_config_free(&cfg);
  char cmd[300];
  snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
  return system(cmd) == 0 ? 0 : -1;
}

/* ---- tests ---- */

#define DOC_GPU(i)                                                                              \
  "{\"index\":" #i ",\"uuid\":\"GPU-5a1a0000-0000-4000-8000-00000000000" #i                     \
  "\","                                                                                         \
  "\"type\":\"NVIDIA A100-SXM4-16GB (vgpu-sim)\",\"memory\":17179869184,\"numa\":0,"            \
  "\"health\":\"Healthy\",\"resources\":[{\"name\":\"nvidia.com\\/vgpu\",\"dialect\":\"vgpu\"," \
  "\"count\":4,\"unit\":0,\"memory\":17179869184,\"cores\":100},"                               \
  "{\"name\":\"aliyun.com\\/gpu-mem\",\"dialect\":\"gpushare\",\"count\":16,"                   \
  "\"unit\":1073741824}]}"
#define DOC_TEXT                    \
  "{\"version\":1,\"node\":\"" NODE \
  "\",\"contextReserve\":536870912,\"gpus\":[" DOC_GPU(0) "," DOC_GPU(1) "]}"

static void test_build(void **state) {
  (void)state;
  json_object *doc = vg_inventory_build(&cfg, NODE, gpus, n_gpus, NULL, 0);
  assert_int_equal(int_of(doc, "version"), 1);
  assert_string_equal(str_of(doc, "node"), NODE);
  assert_int_equal(int_of(doc, "contextReserve"), 512LL << 20);
  json_object *g1 = gpu_of(doc, 1);
  assert_int_equal(int_of(g1, "index"), 1);
  assert_string_equal(str_of(g1, "uuid"), "GPU-5a1a0000-0000-4000-8000-000000000001");
  assert_string_equal(str_of(g1, "type"), "NVIDIA A100-SXM4-16GB (vgpu-sim)");
  assert_int_equal(int_of(g1, "memory"), 16LL << 30);
  json_object *numa;
  /* the simulator puts every GPU on node 0 unless VGPU_SIM_NUMA_NODES says more */
  assert_true(json_object_object_get_ex(g1, "numa", &numa) && numa != NULL);
  assert_int_equal(json_object_get_int(numa), 0);
  assert_string_equal(str_of(g1, "health"), "Healthy");
  json_object *res;
  assert_true(json_object_object_get_ex(g1, "resources", &res));
  assert_int_equal(json_object_array_length(res), 2);
  json_object *r0 = json_object_array_get_idx(res, 0), *r1 = json_object_array_get_idx(res, 1);
  assert_string_equal(str_of(r0, "name"), "nvidia.com/vgpu");
  assert_string_equal(str_of(r0, "dialect"), "vgpu");
  assert_int_equal(int_of(r0, "count"), 4);
  assert_int_equal(int_of(r0, "unit"), 0);
  assert_int_equal(int_of(r0, "memory"), 16LL << 30);
  assert_int_equal(int_of(r0, "cores"), 100);
  assert_string_equal(str_of(r1, "name"), "aliyun.com/gpu-mem");
  assert_int_equal(int_of(r1, "count"), 16);
  assert_int_equal(int_of(r1, "unit"), 1LL << 30);
  /* Byte for byte what it was before the codec (k8s/gpu_inventory.c) wrote
   * it: a node agent upgraded in place finds its Node's annotation current. */
  assert_string_equal(json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PLAIN), DOC_TEXT);
  json_object_put(doc);
}

struct cb_count {
  pthread_mutex_t lock;
  int calls;
  struct vg_gpu_health last[VG_MAX_GPUS];
  unsigned n;
};

static void on_change(const struct vg_gpu_health *g, unsigned n, void *arg) {
  struct cb_count *c = arg;
  pthread_mutex_lock(&c->lock);
  c->calls++;
  memcpy(c->last, g, n * sizeof(*g));
  c->n = n;
  pthread_mutex_unlock(&c->lock);
}

static int calls(struct cb_count *c) {
  pthread_mutex_lock(&c->lock);
  int n = c->calls;
  pthread_mutex_unlock(&c->lock);
  return n;
}

struct wait_calls {
  struct cb_count *c;
  int want;
};
static bool calls_reached(void *arg) {
  struct wait_calls *w = arg;
  return calls(w->c) >= w->want;
}

/* Builds, publishes and reads back the inventory with the current health. */
static json_object *publish_and_read(struct vg_inventory *inv, struct vg_k8s_client *c,
                                     struct vg_health *h) {
  struct vg_gpu_health st[VG_MAX_GPUS];
  unsigned n = vg_health_get(h, st, VG_MAX_GPUS);
  struct vg_gpu g[VG_MAX_GPUS];
  memcpy(g, gpus, sizeof(g));
  vg_health_apply(h, g, n_gpus);
  vg_inventory_set(inv, vg_inventory_build(&cfg, NODE, g, n_gpus, st, n));
  assert_true(wait_for(inv_current, inv, 5000));
  json_object *doc = node_inventory(c, NODE);
  assert_non_null(doc);
  return doc;
}

static void test_publish_and_health(void **state) {
  (void)state;
  int port;
  pid_t srv = start_server(0, &port);
  assert_true(srv > 0);
  struct vg_k8s_client *c = client_for(port);
  add_node(c, NODE);

  struct cb_count cb = {.lock = PTHREAD_MUTEX_INITIALIZER};
  struct vg_health_opts opts = {.interval_ms = 100};
  char msg[256];
  struct vg_health *h = vg_health_new(gpus, n_gpus, &opts, on_change, &cb, msg, sizeof(msg));
  if (h == NULL) fail_msg("health: %s", msg);
  assert_int_equal(vg_health_start(h), 0);
  struct vg_inventory *inv = vg_inventory_new(c, NODE, 200);
  assert_int_equal(vg_inventory_start(inv), 0);

  /* The annotation appears, with the right content. */
  json_object *doc = publish_and_read(inv, c, h);
  assert_int_equal(int_of(doc, "version"), VG_INVENTORY_VERSION);
  assert_string_equal(str_of(gpu_of(doc, 0), "uuid"), "GPU-5a1a0000-0000-4000-8000-000000000000");
  assert_string_equal(str_of(gpu_of(doc, 0), "health"), "Healthy");
  assert_string_equal(str_of(gpu_of(doc, 1), "health"), "Healthy");
  json_object_put(doc);
  assert_int_equal(vg_inventory_patches(inv), 1);
  /* The same document again: no PATCH. */
  doc = publish_and_read(inv, c, h);
  json_object_put(doc);
  assert_int_equal(vg_inventory_patches(inv), 1);
  assert_int_equal(calls(&cb), 0);

  /* XID 79 on GPU 1: Unhealthy, callback, next inventory says so. */
  vgpu_sim("fault --device 1 --xid 79");
  struct wait_calls w = {&cb, 1};
  assert_true(wait_for(calls_reached, &w, 3000));
  assert_false(cb.last[1].healthy);
  assert_int_equal(cb.last[1].xid, 79);
  assert_true(cb.last[0].healthy);
  doc = publish_and_read(inv, c, h);
  assert_string_equal(str_of(gpu_of(doc, 1), "health"), "Unhealthy");
  assert_string_equal(str_of(gpu_of(doc, 1), "reason"), "xid 79");
  assert_string_equal(str_of(gpu_of(doc, 0), "health"), "Healthy");
  json_object_put(doc);
  assert_int_equal(vg_inventory_patches(inv), 2);

  /* XID 13 (an application error) on GPU 0: nothing changes. */
  vgpu_sim("fault --device 0 --xid 13");
  usleep(500000);
  assert_int_equal(calls(&cb), 1);
  struct vg_gpu_health st[VG_MAX_GPUS];
  vg_health_get(h, st, VG_MAX_GPUS);
  assert_true(st[0].healthy);

  /* Cleared: the XID mark is sticky until the plugin clears it. */
  vgpu_sim("fault --device 1 --clear");
  usleep(300000);
  assert_int_equal(calls(&cb), 1);
  vg_health_clear(h, 1);
  assert_int_equal(calls(&cb), 2);
  assert_true(cb.last[1].healthy);
  doc = publish_and_read(inv, c, h);
  assert_string_equal(str_of(gpu_of(doc, 1), "health"), "Healthy");
  assert_null(str_of(gpu_of(doc, 1), "reason"));
  json_object_put(doc);

  /* Lost GPU 0: Unhealthy; back after --clear: Healthy by itself. */
  vgpu_sim("fault --device 0 --lost");
  w.want = 3;
  assert_true(wait_for(calls_reached, &w, 3000));
  assert_false(cb.last[0].healthy);
  assert_true(cb.last[0].lost);
  doc = publish_and_read(inv, c, h);
  assert_string_equal(str_of(gpu_of(doc, 0), "health"), "Unhealthy");
  assert_string_equal(str_of(gpu_of(doc, 0), "reason"), "lost");
  json_object_put(doc);
  vgpu_sim("fault --device 0 --clear");
  w.want = 4;
  assert_true(wait_for(calls_reached, &w, 3000));
  assert_true(cb.last[0].healthy);
  doc = publish_and_read(inv, c, h);
  assert_string_equal(str_of(gpu_of(doc, 0), "health"), "Healthy");
  json_object_put(doc);

  vg_inventory_free(inv);
  vg_health_free(h);
  vg_k8s_client_free(c);
  stop_server(srv);
}

static void test_api_down_at_start(void **state) {
  (void)state;
  int port;
  pid_t srv = start_server(0, &port); /* learn a free port, then go down */
  assert_true(srv > 0);
  stop_server(srv);
  struct vg_k8s_client *c = client_for(port);
  struct vg_inventory *inv = vg_inventory_new(c, NODE, 200);
  vg_inventory_set(inv, vg_inventory_build(&cfg, NODE, gpus, n_gpus, NULL, 0));
  assert_int_equal(vg_inventory_start(inv), 0);
  usleep(700000);
  assert_false(vg_inventory_current(inv));
  assert_int_equal(vg_inventory_patches(inv), 0);

  int port2;
  srv = start_server(port, &port2);
  assert_true(srv > 0);
  assert_int_equal(port2, port);
  add_node(c, NODE);
  assert_true(wait_for(inv_current, inv, 5000));
  json_object *doc = node_inventory(c, NODE);
  assert_non_null(doc);
  assert_int_equal(json_object_array_length(json_object_object_get(doc, "gpus")), 2);
  json_object_put(doc);
  assert_int_equal(vg_inventory_patches(inv), 1);

  vg_inventory_free(inv);
  vg_k8s_client_free(c);
  stop_server(srv);
}

static void test_parse_xids(void **state) {
  (void)state;
  unsigned x[8];
  size_t n;
  char err[128];
  assert_int_equal(vg_health_parse_xids("13, 31,43", x, 8, &n, err, sizeof(err)), 0);
  assert_int_equal(n, 3);
  assert_int_equal(x[2], 43);
  assert_int_equal(vg_health_parse_xids("", x, 8, &n, err, sizeof(err)), 0);
  assert_int_equal(n, 0);
  assert_int_equal(vg_health_parse_xids("13,x", x, 8, &n, err, sizeof(err)), -1);
  assert_non_null(strstr(err, "'x'"));
  assert_int_equal(vg_health_parse_xids("1,2,3", x, 2, &n, err, sizeof(err)), -1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_build),
      cmocka_unit_test(test_parse_xids),
      cmocka_unit_test(test_publish_and_health),
      cmocka_unit_test(test_api_down_at_start),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
