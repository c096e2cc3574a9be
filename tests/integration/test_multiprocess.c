/* test_multiprocess.c -- one budget for all processes of a container:
 * racing processes never pass the limit together, a SIGKILLed process gives
 * its memory back, and a process started with a new limit changes it for
 * everybody without a new region file. */
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include "common.h"
#include "region.h"

static struct vg_run run;

static void test_race_never_exceeds(void **s) {
  (void)s;
  enum { N = 8 };
  struct vg_env env;
  env_preloaded(&env);
  vg_env_set(&env, "CUDA_DEVICE_MEMORY_LIMIT", "400m");
  pid_t pids[N];
  for (int i = 0; i < N; i++) pids[i] = spawn_probe(&env, "alloc", "mem", "2m", "1000", "2", NULL);
  for (int i = 0; i < N; i++) assert_int_equal(vg_wait(pids[i]), 0);
  unsigned long long total = 0;
  for (int i = 0; i < N; i++) {
    char out[4096];
    vg_spawn_output(&env, pids[i], out, sizeof(out));
    total += json_num(out, "holding");
  }
  /* All held at once: together exactly the limit, never more. */
  assert_int_equal(total * 2, 400);
  vg_env_cleanup(&env);
}

static void test_sigkill_returns_memory(void **s) {
  (void)s;
  struct vg_env env;
  env_preloaded(&env);
  vg_env_set(&env, "CUDA_DEVICE_MEMORY_LIMIT", "200m");
  pid_t pid = spawn_probe(&env, "hold", "150m", "60", NULL, NULL, NULL);
  wait_used(&env, 150 * MiB);
  kill(pid, SIGKILL);
  assert_int_equal(vg_wait(pid), 128 + SIGKILL);
  run_probe(&env, &run, "alloc", "mem", "10m", "100", NULL);
  assert_int_equal(json_num(run.out, "allocated"), 20);
  vg_env_cleanup(&env);
}

static void test_new_limit_without_new_file(void **s) {
  (void)s;
  struct vg_env env;
  env_preloaded(&env);
  vg_env_set(&env, "CUDA_DEVICE_MEMORY_LIMIT_0", "200m");
  pid_t first = spawn_probe(&env, "alloc", "mem", "10m", "1000", "30", NULL);
  wait_used(&env, 200 * MiB);
  /* Seed 000 without the rename: same region file, a larger limit. */
  vg_env_set(&env, "CUDA_DEVICE_MEMORY_LIMIT_0", "300m");
  run_probe(&env, &run, "alloc", "mem", "10m", "1000", NULL);
  assert_int_equal(json_num(run.out, "allocated"), 10); /* the extra 100 MiB */
  assert_int_equal(json_num(run.out, "total"), 300 * MiB);
  kill(first, SIGKILL);
  vg_wait(first);
  vg_env_cleanup(&env);
}

static void test_lower_limit_below_use_refused(void **s) {
  (void)s;
  struct vg_env env;
  env_preloaded(&env);
  vg_env_set(&env, "CUDA_DEVICE_MEMORY_LIMIT", "200m");
  pid_t first = spawn_probe(&env, "hold", "150m", "30", NULL, NULL, NULL);
  wait_used(&env, 150 * MiB);
  vg_env_set(&env, "CUDA_DEVICE_MEMORY_LIMIT", "100m");
  run_probe(&env, &run, "alloc", "mem", "10m", "1000", NULL);
  assert_non_null(strstr(run.err, "not applied"));
  assert_int_equal(json_num(run.out, "allocated"), 5); /* 200 - 150 */
  unsigned long long limit = 0;
  region_used(&env, &limit);
  assert_int_equal(limit, 200 * MiB);
  kill(first, SIGKILL);
  vg_wait(first);
  vg_env_cleanup(&env);
}

static void test_neighbours_never_hit_driver_oom(void **s) {
  (void)s;
  /* Two containers on a 1 GiB GPU whose contexts cost 100 MiB each: with
   * limits that leave room for the contexts, both reach their limit and
   * stop with our OOM, not the driver's. */
  struct vg_env a, b;
  env_preloaded(&a);
  vg_env_set(&a, "VGPU_SIM_MEMORY", "1g");
  vg_env_set(&a, "VGPU_SIM_CONTEXT_MEM", "100m");
  vg_env_set(&a, "CUDA_DEVICE_MEMORY_LIMIT", "412m");
  b = a;
  for (int i = 0; i < a.nvars; i++) b.vars[i] = strdup(a.vars[i]);
  char cache_b[400];
  snprintf(cache_b, sizeof(cache_b), "%s/region-b.cache", a.dir);
  vg_env_set(&b, "CUDA_DEVICE_MEMORY_SHARED_CACHE", cache_b);
  pid_t pa = spawn_probe(&a, "alloc", "mem", "4m", "1000", "2", NULL);
  pid_t pb = spawn_probe(&b, "alloc", "mem", "4m", "1000", "2", NULL);
  assert_int_equal(vg_wait(pa), 0);
  assert_int_equal(vg_wait(pb), 0);
  char out[4096];
  vg_spawn_output(&a, pa, out, sizeof(out));
  assert_int_equal(json_num(out, "holding"), 103);
  assert_int_equal(json_num(out, "last_rc"), 2); /* our OOM at the limit */
  vg_spawn_output(&b, pb, out, sizeof(out));
  assert_int_equal(json_num(out, "holding"), 103);
  assert_int_equal(json_num(out, "last_rc"), 2);
  for (int i = 0; i < b.nvars; i++) free(b.vars[i]);
  vg_env_cleanup(&a);
}

/* docs/allocation.md: the node agent creates the region with the
 * container's GPU (here the simulated GPU 0) registered and its limits
 * pending, and writes them after Allocate; a workload that starts first
 * waits. */
static void mark_pending(const struct vg_env *env, struct vg_shm *shm) {
  struct vg_err err;
  assert_int_equal(vg_region_open(shm, env->cache, &err), 0);
  assert_int_equal(vg_region_lock(shm), 0);
  assert_int_equal(vg_region_device_locked(shm, "GPU-5a1a0000-0000-4000-8000-000000000000", 0), 0);
  vg_region_unlock(shm);
  vg_region_set_pending(shm, true);
}

static void test_waits_for_pending_limits(void **s) {
  (void)s;
  struct vg_env env;
  env_preloaded(&env);
  vg_env_set(&env, "VGPU_LIMITS_TIMEOUT", "10");
  struct vg_shm shm;
  mark_pending(&env, &shm);
  pid_t p = spawn_probe(&env, "alloc", "mem", "10m", "1000", NULL, NULL);
  usleep(500000);
  /* the agent binds the pod: 100 MiB on the simulated GPU 0 */
  struct vg_err err;
  assert_int_equal(vg_region_lock(&shm), 0);
  int dev = vg_region_device_locked(&shm, "GPU-5a1a0000-0000-4000-8000-000000000000", 0);
  vg_region_unlock(&shm);
  assert_int_equal(vg_region_set_mem_limit(&shm, dev, 100 * MiB, &err), 0);
  vg_region_set_pending(&shm, false);
  assert_int_equal(vg_wait(p), 0);
  char out[4096];
  vg_spawn_output(&env, p, out, sizeof(out));
  assert_int_equal(json_num(out, "allocated"), 10);
  vg_shm_close(&shm);
  vg_env_cleanup(&env);
}

static void test_pending_limits_time_out_closed(void **s) {
  (void)s;
  struct vg_env env;
  env_preloaded(&env);
  vg_env_set(&env, "VGPU_LIMITS_TIMEOUT", "1");
  struct vg_shm shm;
  mark_pending(&env, &shm);
  run_probe(&env, &run, "alloc", "mem", "10m", "10", NULL);
  assert_int_equal(json_num(run.out, "allocated"), 0);
  assert_int_equal(json_num(run.out, "last_rc"), 2);
  assert_non_null(strstr(run.err, "has not written this container's limits"));
  vg_shm_close(&shm);
  vg_env_cleanup(&env);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_race_never_exceeds),
      cmocka_unit_test(test_sigkill_returns_memory),
      cmocka_unit_test(test_new_limit_without_new_file),
      cmocka_unit_test(test_lower_limit_below_use_refused),
      cmocka_unit_test(test_neighbours_never_hit_driver_oom),
      cmocka_unit_test(test_waits_for_pending_limits),
      cmocka_unit_test(test_pending_limits_time_out_closed),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
