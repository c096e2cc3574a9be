/*
 * test_plugin_metrics_text.c -- the node agent's /metrics text, byte for
 * byte, rendered in process (no kubelet, no API server) and compared with
 * tests/golden/plugin_metrics.prom, written from the renderer before it
 * moved onto the shared Prometheus writer (common/prom.c).
 *
 * The registry is made to be the same on every machine: three GPUs, two of
 * them the simulated NVML's (loaded by path before the agent opens it by
 * soname, so a real driver is never asked) and one NVML does not know; a
 * node name, GPU models and a pod name with a quote, a backslash or a
 * newline, which the label values must escape; three containers the fake
 * kubelet's PodResources lists -- one on two GPUs with limits, compute use
 * and 256 MiB charged to a process slot of this test (not counted live: the
 * lock that shows it alive is this process's own), one waiting for its
 * limits, one with no region -- and a stale slot directory; the steering, gate and slot
 * collector counters at zero. test_plugin_metrics checks the same families
 * against a running agent, by value and with promtool.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <time.h>
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
#include "plugin_fixture.h"
#include "region.h"
#include "slot.h"
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

/* A container's slot directory (named by its device IDs, as Allocate names
 * it) with a region of one device per uuid: limit (0: none), compute limit,
 * and a last-second compute use of used_pct. The region stays open in shm. */
static void slot_region(const char *state_dir, const char *const *ids, size_t nids,
                        const char *const *uuids, const uint64_t *limit, unsigned sm_limit,
                        bool pending, struct vg_shm *shm) {
  char name[17], dir[700];
  assert_int_equal(vg_slot_name(ids, nids, name), 0);
  snprintf(dir, sizeof(dir), "%s/slots/%s", state_dir, name);
  assert_int_equal(mkdir(dir, 0755), 0);
  struct vg_err err;
  assert_int_equal(vg_region_create_slot(shm, dir, &err), 0);
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  for (int d = 0; uuids[d] != NULL; d++) {
    assert_int_equal(vg_region_lock(shm), 0);
    int dev = vg_region_device_locked(shm, uuids[d], 16384 * MIB);
    vg_region_unlock(shm);
    assert_int_equal(dev, d);
    assert_int_equal(vg_region_set_mem_limit(shm, dev, limit[d], &err), 0);
    assert_int_equal(vg_region_set_sm_limit(shm, dev, sm_limit, &err), 0);
    struct vg_region_device *rd = &vg_region_of(shm)->dev[dev];
    rd->sm_window_start_ns = (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
    rd->sm_last_window_ns = 1000000000ull;
    rd->sm_last_window_used_ns = 125000000ull * (uint64_t)(d + 1); /* 12.5 %, 25 % */
  }
  vg_region_set_pending(shm, pending);
}

/* The fake kubelet's PodResources lists three containers; two have regions
 * (a and b, open in shm[0..1]); a's has a process slot holding 256 MiB. */
static void containers(struct setup *s, const char *dir, char uuids[2][96], struct vg_shm shm[2],
                       int *proc) {
  assert_true(strlen(dir) + sizeof("/pr.sock") <= sizeof(s->pr_socket));
  snprintf(s->pr_socket, sizeof(s->pr_socket), "%.300s/pr.sock", dir);
  start_fake(s, true);
  assert_non_null(strstr(fake(s, "assign default pod-a main nvidia.com/vgpu a-1,a-2"), "true"));
  assert_non_null(strstr(fake(s, "assign kube-system web\"1\\x side nvidia.com/vgpu b-1"), "true"));
  assert_non_null(strstr(fake(s, "assign default no-region c nvidia.com/vgpu c-1"), "true"));
  const char *a_ids[] = {"a-1", "a-2"}, *b_ids[] = {"b-1"};
  const char *a_uuids[] = {uuids[0], uuids[1], NULL}, *b_uuids[] = {"GPU-not-in-nvml", NULL};
  const uint64_t a_limit[] = {3000 * MIB, 0}, b_limit[] = {1024 * MIB};
  slot_region(dir, a_ids, 2, a_uuids, a_limit, 30, false, &shm[0]);
  slot_region(dir, b_ids, 1, b_uuids, b_limit, 0, true, &shm[1]);
  *proc = vg_region_join(&shm[0], getpid());
  assert_true(*proc >= 0);
  assert_true(vg_region_reserve(&shm[0], *proc, 0, 256 * MIB));
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
  struct setup *fx = *state;
  char dir[400], path[600], sock[600];
  snprintf(dir, sizeof(dir), "%s", fx->env.dir);
  char uuids[2][96];
  sim_nvml(dir, uuids);
  snprintf(path, sizeof(path), "%s/slots", dir);
  assert_int_equal(mkdir(path, 0755), 0);
  snprintf(path, sizeof(path), "%s/slots/0123456789abcdef", dir);
  assert_int_equal(mkdir(path, 0755), 0);
  struct vg_shm shm[2];
  int proc;
  containers(fx, dir, uuids, shm, &proc);
  snprintf(sock, sizeof(sock), "%s", fx->pr_socket);

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
  vg_region_release(&shm[0], proc, 0, 256 * MIB);
  vg_region_leave(&shm[0], proc);
  vg_shm_close(&shm[0]);
  vg_shm_close(&shm[1]);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test_setup_teardown(test_golden, setup, teardown)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
