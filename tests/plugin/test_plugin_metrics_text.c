/*
 * test_plugin_metrics_text.c -- the node agent's /metrics text, byte for
 * byte, rendered in process (no kubelet, no API server) and compared with
 * tests/golden/plugin_metrics.prom, written from the renderer before it
 * moved onto the shared Prometheus writer (common/prom.c).
 *
 * The registry is made to be the same on every machine: three GPUs, two of
 * them the simulated NVML's (loaded by path before the agent opens it by
 * soname, so a real driver is never asked) and one NVML does not know; a
 * node name and GPU models with a quote, a backslash and a newline, which
 * the label values must escape; a stale slot directory; no PodResources
 * socket (so no containers and podresources_up 0); the steering, gate and
 * slot collector counters at zero. test_plugin_metrics checks the container
 * families by value and with promtool.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
// clang-format off
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include "gate.h"
#include "golden.h"
#include "gpu_usage.h"
#include "harness.h"
#include "k8s.h"
#include "metrics.h"
#include "plugin.h"
#include "slot_gc.h"
#include "steer.h"

#define MIB (1ull << 20)

/* The simulated NVML's first two GPUs, loaded so that the agent's dlopen of
 * libnvidia-ml.so.1 finds it. */
static void sim_nvml(const char *dir, char uuids[2][96]) {
  char state[600];
  snprintf(state, sizeof(state), "%s/sim.state", dir);
  setenv("VGPU_SIM_STATE", state, 1);
  setenv("VGPU_SIM_DEVICES", "2", 1);
  assert_non_null(dlopen(vg_build_path("sim/libnvidia-ml.so.1"), RTLD_NOW | RTLD_GLOBAL));
  struct vg_gpu_usage u[8];
  unsigned n = 0;
  char err[256];
  assert_int_equal(vg_gpu_usage_read(u, 8, &n, err, sizeof(err)), 0);
  assert_true(n >= 2);
  for (int i = 0; i < 2; i++) snprintf(uuids[i], 96, "%s", u[i].uuid);
}

static void gpu(struct vg_plugin *p, const char *uuid, const char *name, uint64_t memory,
                bool healthy) {
  struct vg_gpu *g = &p->gpus[p->ngpus];
  g->index = p->ngpus++;
  snprintf(g->uuid, sizeof(g->uuid), "%s", uuid);
  snprintf(g->name, sizeof(g->name), "%s", name);
  g->memory = memory;
  g->healthy = healthy;
}

/* The UUIDs differ between simulator builds: the golden text names them U0, U1. */
static char *replace(char *text, const char *from, const char *to) {
  for (char *at; (at = strstr(text, from)) != NULL;) {
    size_t head = (size_t)(at - text), n = strlen(text) - head - strlen(from);
    char *next = malloc(head + strlen(to) + n + 1);
    assert_non_null(next);
    memcpy(next, text, head);
    strcpy(next + head, to);
    strcpy(next + head + strlen(to), at + strlen(from));
    free(text);
    text = next;
  }
  return text;
}

static void test_golden(void **state) {
  (void)state;
  char dir[] = "/tmp/vgpu-metrics-text-XXXXXX", path[600], sock[600];
  assert_non_null(mkdtemp(dir));
  char uuids[2][96];
  sim_nvml(dir, uuids);
  snprintf(path, sizeof(path), "%s/slots", dir);
  assert_int_equal(mkdir(path, 0755), 0);
  snprintf(path, sizeof(path), "%s/slots/0123456789abcdef", dir);
  assert_int_equal(mkdir(path, 0755), 0);
  snprintf(sock, sizeof(sock), "%s/no-kubelet.sock", dir);

  static struct vg_plugin p;
  pthread_mutex_init(&p.lock, NULL);
  pthread_rwlock_init(&p.slots_lock, NULL);
  gpu(&p, uuids[0], "Tesla \"T4\" \\ 16GB", 16384 * MIB, true);
  gpu(&p, uuids[1], "A100\nSXM4", 40960 * MIB, false);
  gpu(&p, "GPU-not-in-nvml", "H100", 81920 * MIB, true);

  struct vg_err err;
  struct vg_k8s_config cfg = {.server = "https://127.0.0.1:1", .source = "test"};
  struct vg_k8s_client *k8s = vg_k8s_client_new(&cfg, &err);
  assert_non_null(k8s);
  const char *node = "node \"1\"\\a\nb";
  struct vg_steer *steer = vg_steer_new(k8s, node, sock, false, &err);
  struct vg_gate *gate = vg_gate_new(k8s, node, sock, &err);
  struct vg_slot_gc_opts go = {
      .state_dir = dir, .podresources_socket = sock, .grace_s = 60, .slots_lock = &p.slots_lock};
  struct vg_slot_gc *gc = vg_slot_gc_new(&go, &err);
  assert_non_null(steer);
  assert_non_null(gate);
  assert_non_null(gc);

  struct vg_metrics_sources src = {.node = node,
                                   .state_dir = dir,
                                   .podresources_socket = sock,
                                   .plugin = &p,
                                   .steer = steer,
                                   .gate = gate,
                                   .slot_gc = gc};
  size_t len = 0;
  char *text = vg_metrics_render(&src, &len);
  assert_non_null(text);
  assert_int_equal(len, strlen(text));
  text = replace(text, uuids[0], "U0");
  text = replace(text, uuids[1], "U1");
  vg_assert_golden("plugin_metrics.prom", text);
  free(text);
  vg_slot_gc_stop(gc);
  vg_gate_free(gate);
  vg_steer_free(steer);
  vg_k8s_client_free(k8s);
  snprintf(path, sizeof(path), "rm -rf '%s'", dir);
  assert_int_equal(system(path), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_golden)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
