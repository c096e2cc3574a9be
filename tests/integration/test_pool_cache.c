/* test_pool_cache.c -- memory a stream-ordered pool keeps after
 * cuMemFreeAsync is charged like a live allocation (docs/memory.md, "Pools"):
 * a container never holds its limit in allocations plus as much again in
 * pool caches, and memory the pool gives back (synchronisation below its
 * threshold, cuMemPoolTrimTo) is refunded. */
#include <stdlib.h>

#include "common.h"

#define OOM 2 /* CUDA_ERROR_OUT_OF_MEMORY */

static struct vg_run run;

/* Runs build/tests/pool_steps with the given steps (NULL-terminated). */
static int steps(const struct vg_env *env, struct vg_run *r, char *const *args) {
  char prog[512];
  snprintf(prog, sizeof(prog), "%s", vg_build_path("tests/pool_steps"));
  char *argv[64] = {prog};
  int n = 1;
  while (args[n - 1] != NULL && n < 63) {
    argv[n] = args[n - 1];
    n++;
  }
  argv[n] = NULL;
  int rc = vg_run(env, argv, r);
  if (rc != 0) fail_msg("pool_steps exited %d: %s %s", rc, r->out, r->err);
  return rc;
}

static long long result(const char *out, int i) {
  char key[16];
  snprintf(key, sizeof(key), "r%d", i);
  return (long long)json_num(out, key);
}

static void limited(struct vg_env *env, const char *limit) {
  env_preloaded(env);
  vg_env_set(env, "CUDA_DEVICE_MEMORY_LIMIT", limit);
}

/* The gap this closes: with a threshold of UINT64_MAX (what PyTorch's
 * cudaMallocAsync backend sets) a freed pool block stays on the GPU, so the
 * container may not allocate it again with cuMemAlloc. The pool itself may. */
static void test_cached_pool_memory_is_charged(void **s) {
  (void)s;
  struct vg_env env;
  limited(&env, "64m");
  char *args[] = {"threshold", "max", "aalloc", "64m",  "afree", "sync",  "alloc", "64m",
                  "aalloc",    "64m", "afree",  "trim", "0",     "alloc", "64m",   NULL};
  steps(&env, &run, args);
  assert_int_equal(result(run.out, 0), 0);
  assert_int_equal(result(run.out, 1), 0);
  assert_int_equal(result(run.out, 2), 0);
  assert_int_equal(result(run.out, 3), 0);
  assert_int_equal(result(run.out, 4), OOM); /* the pool still holds 64 MiB */
  assert_int_equal(result(run.out, 5), 0);   /* the pool reuses its cache: no false OOM */
  assert_int_equal(result(run.out, 7), 0);   /* trimmed: refunded */
  assert_int_equal(result(run.out, 8), 0);
  vg_env_cleanup(&env);
}

/* Synchronisation releases a pool down to its threshold, and that much is
 * refunded: with threshold 0 all of it, with 16 MiB all but 16 MiB. */
static void test_sync_releases_to_threshold(void **s) {
  (void)s;
  struct vg_env env;
  limited(&env, "64m");
  char *args[] = {"threshold", "0",         "aalloc", "64m",    "afree", "sync",  "alloc", "64m",
                  "free",      "threshold", "16m",    "aalloc", "64m",   "afree", "alloc", "64m",
                  "ctxsync",   "alloc",     "48m",    "alloc",  "2m",    NULL};
  steps(&env, &run, args);
  assert_int_equal(result(run.out, 4), 0);   /* threshold 0: all back after the sync */
  assert_int_equal(result(run.out, 9), OOM); /* 16 MiB threshold: cached until a sync */
  assert_int_equal(result(run.out, 10), 0);
  assert_int_equal(result(run.out, 11), 0);   /* 48 MiB came back */
  assert_int_equal(result(run.out, 12), OOM); /* 16 MiB stay cached */
  vg_env_cleanup(&env);
}

/* cuMemPoolTrimTo gives memory back, down to what it is asked to keep. */
static void test_trim_returns_memory(void **s) {
  (void)s;
  struct vg_env env;
  limited(&env, "64m");
  char *args[] = {"threshold", "max",   "aalloc", "64m",  "afree", "trim",  "32m", "alloc",
                  "32m",       "alloc", "2m",     "trim", "0",     "alloc", "32m", NULL};
  steps(&env, &run, args);
  assert_int_equal(result(run.out, 3), 0);
  assert_int_equal(result(run.out, 4), 0);   /* 32 MiB refunded */
  assert_int_equal(result(run.out, 5), OOM); /* 32 MiB kept */
  assert_int_equal(result(run.out, 6), 0);
  assert_int_equal(result(run.out, 7), 0);
  vg_env_cleanup(&env);
}

/* A pool the program creates and makes current is charged the same way,
 * and destroying it refunds its cache. */
static void test_created_pool(void **s) {
  (void)s;
  struct vg_env env;
  limited(&env, "64m");
  char *args[] = {"newpool", "max",   "aalloc", "32m",     "palloc", "32m", "afree", "afree",
                  "sync",    "alloc", "2m",     "delpool", "alloc",  "64m", NULL};
  steps(&env, &run, args);
  assert_int_equal(result(run.out, 1), 0);
  assert_int_equal(result(run.out, 2), 0);
  assert_int_equal(result(run.out, 6), OOM); /* 64 MiB cached in the pool */
  assert_int_equal(result(run.out, 7), 0);
  assert_int_equal(result(run.out, 8), 0); /* destroyed: refunded */
  vg_env_cleanup(&env);
}

/* Threads racing async and plain allocations, syncs and frees keep the
 * books: afterwards, with the cache trimmed, the whole limit is free again
 * and the pool's cache was charged throughout (the plain fill stops at the
 * limit with it included). */
static void test_threads_keep_the_books(void **s) {
  (void)s;
  struct vg_env env;
  limited(&env, "64m");
  char *args[] = {"threshold", "max",  "threads", "4",    "300", "fill",
                  "2m",        "trim", "0",       "fill", "2m",  NULL};
  steps(&env, &run, args);
  assert_int_equal(result(run.out, 1), 0); /* no call failed but with out-of-memory */
  long long first = result(run.out, 2), second = result(run.out, 4);
  assert_int_equal(first + second, 32); /* 64 MiB in 2 MiB blocks, cache included */
  assert_true(second > 0);              /* the cache was charged, then refunded */
  vg_env_cleanup(&env);
}

/* Device memory in use on the simulated GPU, as a process without libvgpu
 * sees it (contexts cost nothing here). */
static unsigned long long physical_used(const struct vg_env *env) {
  struct vg_env raw = *env;
  for (int i = 0; i < env->nvars; i++) raw.vars[i] = strdup(env->vars[i]);
  vg_env_unset(&raw, "LD_PRELOAD");
  struct vg_run r;
  assert_int_equal(run_probe(&raw, &r, "meminfo", NULL, NULL, NULL, NULL), 0);
  for (int i = 0; i < raw.nvars; i++) free(raw.vars[i]);
  return json_num(r.out, "nvml_used");
}

/* Two processes of one container: one keeps a pool cache, the other fills
 * the rest with cuMemAlloc. Together they never hold more than the limit. */
static void test_two_processes_stay_within_limit(void **s) {
  (void)s;
  struct vg_env env;
  limited(&env, "128m");
  char prog[512];
  snprintf(prog, sizeof(prog), "%s", vg_build_path("tests/pool_steps"));
  char *a[] = {prog, "threshold", "max", "aalloc", "96m", "afree", "sync", "sleep", "4", NULL};
  pid_t pa = vg_spawn(&env, a);
  for (int i = 0; i < 200 && physical_used(&env) != 96 * MiB; i++) usleep(25000);
  assert_int_equal(physical_used(&env), 96 * MiB); /* freed, but kept by the pool */
  char *b[] = {prog, "fill", "2m", "ready", "sleep", "2", NULL};
  pid_t pb = vg_spawn(&env, b);
  wait_used(&env, 128 * MiB);
  usleep(200000); /* let b finish filling, if it could go further */
  unsigned long long phys = physical_used(&env);
  if (phys > 128 * MiB) fail_msg("the GPU holds %llu MiB for a 128 MiB container", phys / MiB);
  assert_int_equal(vg_wait(pb), 0);
  char out[4096];
  vg_spawn_output(&env, pb, out, sizeof(out));
  assert_int_equal(result(out, 0), 16); /* 128 - 96 MiB, in 2 MiB blocks */
  assert_int_equal(vg_wait(pa), 0);
  vg_env_cleanup(&env);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_cached_pool_memory_is_charged),
      cmocka_unit_test(test_sync_releases_to_threshold),
      cmocka_unit_test(test_trim_returns_memory),
      cmocka_unit_test(test_created_pool),
      cmocka_unit_test(test_threads_keep_the_books),
      cmocka_unit_test(test_two_processes_stay_within_limit),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
