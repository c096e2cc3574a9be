/* test_grant.c -- the grant (src/common/grant.h) is the authority on a
 * container's limits. With VGPU_GRANT_DIR=<tmp>/grant, libvgpu uses the
 * region <tmp>/region.cache (the harness's own region path, so the tools
 * here read the same file), waits for the grant and fails closed without
 * it, and clamps every limit -- the environment's, `vgpu set`'s, the
 * region's own -- to it, while lowering below it stays allowed. */
#include <pthread.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>

#include "common.h"
#include "region.h"

#define GPU0 "GPU-5a1a0000-0000-4000-8000-000000000000"
#define GPU1 "GPU-5a1a0000-0000-4000-8000-000000000001"
#define ABOVE "above this container's grant"
#define NOT_MINE "is not one of this container's GPUs"
#define OUT_OF_MEMORY 2    /* CUDA_ERROR_OUT_OF_MEMORY */
#define INVALID_DEVICE 101 /* CUDA_ERROR_INVALID_DEVICE */
#define GRANT_300M "vgpu-grant 1\ngpu " GPU0 " memory 314572800 cores 0\n"

static struct vg_run run;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* env->dir/grant, or a file in it. */
static const char *grant_path(const struct vg_env *env, const char *file) {
  static char path[512];
  snprintf(path, sizeof(path), "%s/grant%s%s", env->dir, file ? "/" : "", file ? file : "");
  return path;
}

/* A preloaded environment whose grant directory is env->dir/grant, holding
 * text as its grant (none if NULL). The region the grant comes with,
 * env->dir/region.cache, is the harness's env->cache. */
static void env_granted(struct vg_env *env, const char *text) {
  env_preloaded(env);
  assert_int_equal(mkdir(grant_path(env, NULL), 0755), 0);
  vg_env_set(env, "VGPU_GRANT_DIR", grant_path(env, NULL));
  if (text == NULL) return;
  FILE *f = fopen(grant_path(env, "grant"), "w");
  assert_non_null(f);
  fputs(text, f);
  assert_int_equal(fclose(f), 0);
}

static int alloc_10m(const struct vg_env *env, const char *count) {
  run_probe(env, &run, "alloc", "mem", "10m", count, NULL);
  unsigned long long n = 0;
  if (!vg_json_u64(run.out, "allocated", &n)) fail_msg("probe: %s %s", run.out, run.err);
  return (int)n;
}

/* The region file the grant comes with, opened as any process could. */
static struct vg_region *open_region(const struct vg_env *env, struct vg_shm *shm) {
  struct vg_err err;
  if (vg_region_open(shm, env->cache, &err) != 0) fail_msg("%s", err.msg);
  return vg_region_of(shm);
}

/* The region entry of GPU0, made as the agent would if it is not there. */
static int gpu0_entry(struct vg_shm *shm) {
  assert_int_equal(vg_region_lock(shm), 0);
  int dev = vg_region_device_locked(shm, GPU0, 4096 * MiB);
  vg_region_unlock(shm);
  assert_true(dev >= 0);
  return dev;
}

static void test_env_limit_above_grant_is_cut(void **s) {
  (void)s;
  struct vg_env env;
  env_granted(&env, GRANT_300M);
  vg_env_set(&env, "CUDA_DEVICE_MEMORY_LIMIT", "10g");
  int n = alloc_10m(&env, "100");
  if (n > 30) fail_msg("%d x 10 MiB under a 300 MiB grant: %s", n, run.err);
  assert_int_equal(n, 30);
  assert_int_equal(json_num(run.out, "last_rc"), OUT_OF_MEMORY);
  assert_int_equal(json_num(run.out, "total"), 300 * MiB);
  if (strstr(run.err, ABOVE) == NULL) fail_msg("no warning: %s", run.err);
  vg_env_cleanup(&env);
}

static void test_env_limit_below_grant_applies(void **s) {
  (void)s;
  struct vg_env env;
  env_granted(&env, GRANT_300M);
  vg_env_set(&env, "CUDA_DEVICE_MEMORY_LIMIT", "100m");
  assert_int_equal(alloc_10m(&env, "100"), 10);
  assert_int_equal(json_num(run.out, "last_rc"), OUT_OF_MEMORY);
  assert_int_equal(json_num(run.out, "total"), 100 * MiB);
  if (strstr(run.err, ABOVE) != NULL) fail_msg("a warning for a lower limit: %s", run.err);
  vg_env_cleanup(&env);
}

/* No limit in the environment at all: the grant is the limit. */
static void test_no_env_limit_gets_grant(void **s) {
  (void)s;
  struct vg_env env;
  env_granted(&env, GRANT_300M);
  assert_int_equal(alloc_10m(&env, "100"), 30);
  vg_env_cleanup(&env);
}

static void test_other_region_path_is_ignored(void **s) {
  (void)s;
  struct vg_env env;
  env_granted(&env, GRANT_300M);
  char other[512];
  snprintf(other, sizeof(other), "%s/other.cache", env.dir);
  vg_env_set(&env, "CUDA_DEVICE_MEMORY_SHARED_CACHE", other);
  /* Another process of the container holds 200 MiB in the grant's region. */
  pid_t holder = spawn_probe(&env, "alloc", "mem", "10m", "20", "3", NULL);
  char out[4096] = "";
  for (int i = 0; i < 400 && strstr(out, "holding") == NULL; i++) {
    usleep(25000);
    vg_spawn_output(&env, holder, out, sizeof(out));
  }
  if (strstr(out, "\"holding\":20") == NULL) fail_msg("holder: %s", out);
  struct vg_shm shm;
  const struct vg_region *r = open_region(&env, &shm);
  int dev = vg_region_find_device(r, GPU0);
  if (dev < 0) fail_msg("nothing charged in the grant's region %s", env.cache);
  assert_int_equal(vg_region_mem_used(r, dev), 200 * MiB);
  vg_shm_close(&shm);
  /* ... so this one gets the rest of the grant, not a fresh budget. */
  assert_int_equal(alloc_10m(&env, "100"), 10);
  if (strstr(run.err, "CUDA_DEVICE_MEMORY_SHARED_CACHE") == NULL ||
      strstr(run.err, "ignored") == NULL)
    fail_msg("no warning that the variable is ignored: %s", run.err);
  assert_int_equal(vg_wait(holder), 0);
  if (access(other, F_OK) == 0) fail_msg("%s was created", other);
  vg_env_cleanup(&env);
}

/* The region is writable by the container: what it says must not lift
 * anyone past the grant. */
static void test_rewritten_region_does_not_lift_grant(void **s) {
  (void)s;
  struct vg_env env;
  env_granted(&env, GRANT_300M);
  struct vg_shm shm;
  struct vg_region *r = open_region(&env, &shm);
  int dev = gpu0_entry(&shm);
  __atomic_store_n(&r->dev[dev].mem_limit, 0, __ATOMIC_RELEASE); /* "unlimited" */
  __atomic_store_n(&r->dev[dev].mem_used, 0, __ATOMIC_RELEASE);
  assert_int_equal(alloc_10m(&env, "100"), 30);
  assert_int_equal(json_num(run.out, "last_rc"), OUT_OF_MEMORY);
  /* An absurd limit written into the region does no better. */
  __atomic_store_n(&r->dev[dev].mem_limit, 1ULL << 60, __ATOMIC_RELEASE);
  assert_int_equal(alloc_10m(&env, "100"), 30);
  vg_shm_close(&shm);
  vg_env_cleanup(&env);
}

struct scribbler {
  struct vg_region *r;
  int dev;
  volatile int stop;
};

static void *scribble(void *arg) {
  struct scribbler *sc = arg;
  while (!sc->stop) {
    __atomic_store_n(&sc->r->dev[sc->dev].mem_used, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&sc->r->dev[sc->dev].mem_limit, 0, __ATOMIC_RELAXED);
  }
  return NULL;
}

/* While a process allocates, another keeps zeroing the region's figures:
 * the process's own total, kept in its private memory, still stops it. */
static void test_scribbling_while_allocating(void **s) {
  (void)s;
  struct vg_env env;
  env_granted(&env, GRANT_300M);
  struct vg_shm shm;
  struct scribbler sc = {.r = open_region(&env, &shm), .dev = -1, .stop = 0};
  sc.dev = gpu0_entry(&shm);
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, scribble, &sc), 0);
  run_probe(&env, &run, "alloc", "mem", "2m", "1000", NULL);
  sc.stop = 1;
  pthread_join(t, NULL);
  unsigned long long n = json_num(run.out, "allocated");
  if (n > 150) fail_msg("%llu x 2 MiB under a 300 MiB grant while the region was zeroed", n);
  assert_int_equal(n, 150);
  vg_shm_close(&shm);
  vg_env_cleanup(&env);
}

static int vgpu(const struct vg_env *env, const char *a, const char *b, const char *c,
                const char *d, const char *e) {
  char path[512];
  snprintf(path, sizeof(path), "%s", vg_build_path("bin/vgpu"));
  char *argv[] = {path, (char *)a, (char *)b, (char *)c, (char *)d, (char *)e, NULL};
  return vg_run(env, argv, &run);
}

static void test_vgpu_set_above_grant(void **s) {
  (void)s;
  struct vg_env env;
  env_granted(&env, "vgpu-grant 1\ngpu " GPU0 " memory 314572800 cores 25\n");
  assert_int_equal(alloc_10m(&env, "1"), 1); /* the region lists the GPU now */
  assert_int_equal(vgpu(&env, "set", "--cache", env.cache, "--memory", "7g"), 0);
  char want[1024];
  snprintf(want, sizeof(want),
           "vgpu set: " GPU0
           ": 7 GiB is above this container's grant of 300 MiB (%s); "
           "300 MiB applies",
           grant_path(&env, "grant"));
  if (strstr(run.err, want) == NULL) fail_msg("want '%s' in: %s", want, run.err);
  struct vg_shm shm;
  struct vg_region *r = open_region(&env, &shm);
  int dev = vg_region_find_device(r, GPU0);
  assert_int_equal(vg_region_mem_limit(r, dev), 300 * MiB);
  assert_int_equal(alloc_10m(&env, "100"), 30);

  /* The compute limit too. */
  assert_int_equal(vgpu(&env, "set", "--cache", env.cache, "--cores", "80"), 0);
  if (strstr(run.err, "80 % is above this container's grant of 25 %") == NULL)
    fail_msg("cores: %s", run.err);
  assert_int_equal(r->dev[dev].sm_limit, 25);

  /* Lowering works, silently. */
  assert_int_equal(vgpu(&env, "set", "--cache", env.cache, "--memory", "100m"), 0);
  if (strstr(run.err, ABOVE) != NULL) fail_msg("lowering warned: %s", run.err);
  assert_int_equal(vg_region_mem_limit(r, dev), 100 * MiB);
  assert_int_equal(alloc_10m(&env, "100"), 10);
  vg_shm_close(&shm);
  vg_env_cleanup(&env);
}

static void test_missing_grant_fails_closed(void **s) {
  (void)s;
  struct vg_env env;
  env_granted(&env, NULL);
  vg_env_set(&env, "VGPU_LIMITS_TIMEOUT", "1");
  double t0 = now();
  run_probe(&env, &run, "alloc", "mem", "10m", "10", NULL);
  double took = now() - t0;
  unsigned long long n = 0;
  if (vg_json_u64(run.out, "allocated", &n) && n > 0)
    fail_msg("%llu allocations without a grant: %s", n, run.out);
  char want[1024];
  snprintf(want, sizeof(want), "has not written this container's grant to %s within 1 s",
           grant_path(&env, NULL));
  if (strstr(run.err, want) == NULL) fail_msg("want '%s' in: %s", want, run.err);
  if (took < 0.9) fail_msg("refused after %.2f s, before the 1 s wait", took);
  vg_env_cleanup(&env);
}

/* The agent writes the grant while the process waits: it then runs under it. */
static void test_grant_arriving_late_is_used(void **s) {
  (void)s;
  struct vg_env env;
  env_granted(&env, NULL);
  vg_env_set(&env, "VGPU_LIMITS_TIMEOUT", "20");
  pid_t p = spawn_probe(&env, "alloc", "mem", "10m", "100", NULL, NULL);
  usleep(500 * 1000);
  char tmp[600];
  snprintf(tmp, sizeof(tmp), "%s/.grant.tmp", env.dir);
  FILE *f = fopen(tmp, "w");
  assert_non_null(f);
  fputs(GRANT_300M, f);
  assert_int_equal(fclose(f), 0);
  assert_int_equal(rename(tmp, grant_path(&env, "grant")), 0);
  assert_int_equal(vg_wait(p), 0);
  char out[4096];
  vg_spawn_output(&env, p, out, sizeof(out));
  unsigned long long n = 0;
  if (!vg_json_u64(out, "allocated", &n) || n != 30) fail_msg("%s", out);
  vg_env_cleanup(&env);
}

static void test_malformed_grant_refused_at_once(void **s) {
  (void)s;
  struct vg_env env;
  env_granted(&env, "vgpu-grant 1\ngpu " GPU0 " memory 300m cores 0\n");
  vg_env_set(&env, "VGPU_LIMITS_TIMEOUT", "5");
  double t0 = now();
  run_probe(&env, &run, "alloc", "mem", "10m", "10", NULL);
  double took = now() - t0;
  unsigned long long n = 0;
  if (vg_json_u64(run.out, "allocated", &n) && n > 0)
    fail_msg("%llu allocations under a malformed grant: %s", n, run.out);
  if (strstr(run.err, "not valid") == NULL || strstr(run.err, "line 2") == NULL)
    fail_msg("no reason: %s", run.err);
  if (took > 2.5) fail_msg("refused after %.2f s: waited instead of refusing", took);
  vg_env_cleanup(&env);
}

static int occurrences(const char *s, const char *text) {
  int n = 0;
  for (const char *p = strstr(s, text); p != NULL; p = strstr(p + 1, text)) n++;
  return n;
}

/* Two GPUs visible, the grant lists GPU 1 only. */
static void env_grant_gpu1(struct vg_env *env) {
  env_granted(env, "vgpu-grant 1\ngpu " GPU1 " memory 104857600 cores 0\n");
  vg_env_set(env, "VGPU_SIM_DEVICES", "2");
}

static void test_gpu_outside_grant_refused(void **s) {
  (void)s;
  struct vg_env env;
  env_grant_gpu1(&env);
  vg_env_set(&env, "PROBE_DEVICE", "0");
  run_probe(&env, &run, "alloc", "mem", "10m", "10", NULL);
  unsigned long long n = 0;
  if (vg_json_u64(run.out, "allocated", &n) && n > 0)
    fail_msg("%llu allocations on GPU 0, outside the grant: %s", n, run.out);
  if (strstr(run.err, "CUDA device 0 (" GPU0 ") " NOT_MINE) == NULL)
    fail_msg("stderr does not name the GPU: %s", run.err);
  /* GPU 1 (ordinal 1) has its grant. */
  vg_env_set(&env, "PROBE_DEVICE", "1");
  assert_int_equal(alloc_10m(&env, "100"), 10);
  assert_int_equal(json_num(run.out, "total"), 100 * MiB);
  vg_env_cleanup(&env);
}

/* What probe_gpus says of GPU 0 that a GPU outside the assignment would not:
 * each way onto it that was not refused, NVML listing it, the refusal not
 * said once. Empty when GPU 0 is refused like test_foreign_gpu.c's. */
static void not_refused(char *failed, size_t len) {
  failed[0] = '\0';
  size_t off = 0;
  assert_int_equal(json_num(run.out, "cuda_count"), 2);
  static const char *const ways[] = {"retain", "ctx", "defpool", "mempool", "poolcreate", "vmm"};
  for (size_t i = 0; i < sizeof(ways) / sizeof(ways[0]); i++) {
    char key[32];
    snprintf(key, sizeof(key), "%s0", ways[i]);
    if (json_num(run.out, key) != INVALID_DEVICE)
      off += (size_t)snprintf(failed + off, len - off, " %s=%llu", key, json_num(run.out, key));
    snprintf(key, sizeof(key), "%s1", ways[i]);
    if (json_num(run.out, key) != 0) fail_msg("%s: %s", key, run.out);
  }
  if (json_num(run.out, "nvml_count") != 1 || json_num(run.out, "nvml_phys0") != 1)
    off += (size_t)snprintf(failed + off, len - off, " nvml_count=%llu",
                            json_num(run.out, "nvml_count"));
  if (occurrences(run.err, NOT_MINE) != 1)
    off += (size_t)snprintf(failed + off, len - off, " refusals said %d times",
                            occurrences(run.err, NOT_MINE));
  if (strstr(run.err, "assigned none") != NULL)
    snprintf(failed + off, len - off, " the message says 'assigned none'");
}

static void run_gpus(const struct vg_env *env) {
  char probe[512];
  snprintf(probe, sizeof(probe), "%s", vg_build_path("tests/probe_gpus"));
  char *argv[] = {probe, NULL};
  vg_run(env, argv, &run);
}

/* Like a GPU outside the agent's assignment (test_foreign_gpu.c): every
 * way onto GPU 0 is closed, not only cuMemAlloc, and NVML does not list
 * it -- here with the grant alone, the region not (yet) marked. */
static void test_gpu_outside_grant_every_way_closed(void **s) {
  (void)s;
  struct vg_env env;
  env_grant_gpu1(&env);
  run_gpus(&env);
  char failed[512];
  not_refused(failed, sizeof(failed));
  if (failed[0] != '\0') fail_msg("GPU 0 is not refused:%s\n%s\n%s", failed, run.out, run.err);
  vg_env_cleanup(&env);
}

/* The same with the region the agent wrote beside the grant (GPU 1 listed,
 * marked assigned). */
static void test_gpu_outside_grant_and_assignment(void **s) {
  (void)s;
  struct vg_env env;
  env_grant_gpu1(&env);
  struct vg_shm shm;
  struct vg_err err;
  open_region(&env, &shm);
  assert_int_equal(vg_region_lock(&shm), 0);
  int dev = vg_region_device_locked(&shm, GPU1, 4096 * MiB);
  vg_region_unlock(&shm);
  assert_int_equal(vg_region_set_mem_limit(&shm, dev, 100 * MiB, &err), 0);
  vg_region_set_pending(&shm, false);
  vg_shm_close(&shm);
  run_gpus(&env);
  char failed[512];
  not_refused(failed, sizeof(failed));
  if (failed[0] != '\0') fail_msg("GPU 0 is not refused:%s\n%s\n%s", failed, run.out, run.err);
  vg_env_cleanup(&env);
}

static double rate(struct vg_env *env, const char *seconds) {
  return probe_launch_rate(env, &run, "kernel", seconds);
}

static double g_unlimited;

static int measure_unlimited(void **s) {
  (void)s;
  struct vg_env env;
  env_preloaded(&env);
  g_unlimited = rate(&env, "0.6");
  vg_env_cleanup(&env);
  return g_unlimited > 0 ? 0 : -1;
}

#define GRANT_25 "vgpu-grant 1\ngpu " GPU0 " memory 0 cores 25\n"

static void test_sm_from_grant_env_zero(void **s) {
  (void)s;
  struct vg_env env;
  env_granted(&env, GRANT_25);
  vg_env_set(&env, "CUDA_DEVICE_SM_LIMIT", "0");
  double share = rate(&env, "0.6") / g_unlimited;
  if (share >= 0.60)
    fail_msg("granted 25%%, CUDA_DEVICE_SM_LIMIT=0: %.1f%% of the unlimited rate", 100 * share);
  vg_env_cleanup(&env);
}

static void test_sm_from_grant_env_above(void **s) {
  (void)s;
  struct vg_env env;
  env_granted(&env, GRANT_25);
  vg_env_set(&env, "CUDA_DEVICE_SM_LIMIT", "90");
  double share = rate(&env, "0.6") / g_unlimited;
  if (share >= 0.60)
    fail_msg("granted 25%%, CUDA_DEVICE_SM_LIMIT=90: %.1f%% of the unlimited rate", 100 * share);
  if (strstr(run.err, ABOVE) == NULL) fail_msg("no warning: %s", run.err);
  vg_env_cleanup(&env);
}

/* The region says unlimited (sm_limit 0, as a tenant could write): the
 * grant still limits. */
static void test_sm_from_grant_region_zero(void **s) {
  (void)s;
  struct vg_env env;
  env_granted(&env, GRANT_25);
  struct vg_shm shm;
  struct vg_region *r = open_region(&env, &shm);
  int dev = gpu0_entry(&shm);
  __atomic_store_n(&r->dev[dev].sm_limit, 0, __ATOMIC_RELEASE);
  double share = rate(&env, "0.6") / g_unlimited;
  if (share >= 0.60)
    fail_msg("granted 25%%, region sm_limit=0: %.1f%% of the unlimited rate", 100 * share);
  vg_shm_close(&shm);
  vg_env_cleanup(&env);
}

static void test_status_shows_grant(void **s) {
  (void)s;
  struct vg_env env;
  env_granted(&env, "vgpu-grant 1\ngpu " GPU0 " memory 314572800 cores 25\n");
  assert_int_equal(alloc_10m(&env, "1"), 1);
  /* The region claims more than the grant: status shows what applies. */
  struct vg_shm shm;
  struct vg_region *r = open_region(&env, &shm);
  int dev = vg_region_find_device(r, GPU0);
  assert_true(dev >= 0);
  __atomic_store_n(&r->dev[dev].mem_limit, 10240 * MiB, __ATOMIC_RELEASE);
  __atomic_store_n(&r->dev[dev].sm_limit, 0, __ATOMIC_RELEASE);
  vg_shm_close(&shm);

  assert_int_equal(vgpu(&env, "status", "--json", NULL, NULL, NULL), 0);
  char *procs = strstr(run.out, "\"processes\"");
  if (procs != NULL) *procs = '\0';
  assert_int_equal(json_num(run.out, "grant_memory"), 300 * MiB);
  assert_int_equal(json_num(run.out, "grant_cores"), 25);
  assert_int_equal(json_num(run.out, "mem_limit"), 300 * MiB);
  assert_int_equal(json_num(run.out, "sm_limit"), 25);

  assert_int_equal(vgpu(&env, "status", NULL, NULL, NULL, NULL), 0);
  char want[600];
  snprintf(want, sizeof(want), "grant %s ", grant_path(&env, "grant"));
  if (strstr(run.out, want) == NULL || strstr(run.out, GPU0 "  memory 300 MiB  cores 25%") == NULL)
    fail_msg("no grant section: %s", run.out);

  /* Without a grant the fields are there, null. */
  vg_env_unset(&env, "VGPU_GRANT_DIR");
  assert_int_equal(vgpu(&env, "status", "--json", NULL, NULL, NULL), 0);
  if (strstr(run.out, "\"grant_memory\":null,\"grant_cores\":null") == NULL)
    fail_msg("%s", run.out);
  vg_env_cleanup(&env);
}

/* ---- the node agent changes the grant of a running container (resize) ---- */

/* What the binder does on a resize: the new grant first, then the region's
 * limit, whose change moves the generation that running processes watch. */
static void agent_regrants(const struct vg_env *env, uint64_t bytes) {
  char text[256];
  snprintf(text, sizeof(text), "vgpu-grant 1\ngpu " GPU0 " memory %llu cores 0\n",
           (unsigned long long)bytes);
  char tmp[600];
  snprintf(tmp, sizeof(tmp), "%s.new", grant_path(env, "grant"));
  FILE *f = fopen(tmp, "w");
  assert_non_null(f);
  fputs(text, f);
  assert_int_equal(fclose(f), 0);
  assert_int_equal(rename(tmp, grant_path(env, "grant")), 0);
  struct vg_shm shm;
  struct vg_err err;
  open_region(env, &shm);
  int dev = gpu0_entry(&shm);
  assert_int_equal(vg_region_lock(&shm), 0);
  vg_region_reap_locked(&shm); /* what exited holds nothing */
  vg_region_unlock(&shm);
  if (vg_region_set_mem_limit(&shm, dev, bytes, &err) != 0) fail_msg("%s", err.msg);
  vg_shm_close(&shm);
}

/* Starts `probe_paths regrow 10m 100 GO`: allocates until refused, waits
 * for GO, frees and allocates again. */
static pid_t spawn_regrow(const struct vg_env *env, const char *go) {
  char prog[512];
  snprintf(prog, sizeof(prog), "%s", vg_build_path("tests/probe_paths"));
  char *argv[] = {prog, "regrow", "10m", "100", (char *)go, NULL};
  return vg_spawn(env, argv);
}

static void wait_key(const struct vg_env *env, pid_t pid, const char *key, char *out, size_t len) {
  for (int i = 0; i < 400; i++) {
    vg_spawn_output(env, pid, out, len);
    if (strstr(out, key) != NULL) return;
    usleep(25000);
  }
  fail_msg("no \"%s\" from pid %d: %s", key, (int)pid, out);
}

/* The grant raised from 100 to 200 MiB while a process runs at its limit:
 * the same process, not restarted, gets 10 more 10 MiB blocks (200 MiB),
 * and sees the new total. Then lowered to 50 MiB with nothing in use: a new
 * allocation round gets 50. */
static void test_running_process_follows_a_new_grant(void **s) {
  (void)s;
  struct vg_env env;
  env_granted(&env, "vgpu-grant 1\ngpu " GPU0 " memory 104857600 cores 0\n");
  char go[400], out[8192];
  snprintf(go, sizeof(go), "%s/go", env.dir);
  pid_t pid = spawn_regrow(&env, go);
  wait_key(&env, pid, "\"first\"", out, sizeof(out));
  if (json_num(out, "first") != 10 || json_num(out, "first_total") != 100 * MiB)
    fail_msg("before the resize: %s", out);
  agent_regrants(&env, 200 * MiB);
  FILE *f = fopen(go, "w");
  assert_non_null(f);
  fclose(f);
  assert_int_equal(vg_wait(pid), 0);
  vg_spawn_output(&env, pid, out, sizeof(out));
  if (json_num(out, "second") != 10 || json_num(out, "second_total") != 200 * MiB)
    fail_msg("after the resize to 200 MiB: %s", out);

  agent_regrants(&env, 50 * MiB);
  assert_int_equal(alloc_10m(&env, "100"), 5);
  vg_env_cleanup(&env);
}

int main(void) {
  const struct CMUnitTest memory[] = {
      cmocka_unit_test(test_env_limit_above_grant_is_cut),
      cmocka_unit_test(test_env_limit_below_grant_applies),
      cmocka_unit_test(test_no_env_limit_gets_grant),
      cmocka_unit_test(test_other_region_path_is_ignored),
      cmocka_unit_test(test_rewritten_region_does_not_lift_grant),
      cmocka_unit_test(test_scribbling_while_allocating),
      cmocka_unit_test(test_vgpu_set_above_grant),
      cmocka_unit_test(test_missing_grant_fails_closed),
      cmocka_unit_test(test_grant_arriving_late_is_used),
      cmocka_unit_test(test_malformed_grant_refused_at_once),
      cmocka_unit_test(test_gpu_outside_grant_refused),
      cmocka_unit_test(test_gpu_outside_grant_every_way_closed),
      cmocka_unit_test(test_gpu_outside_grant_and_assignment),
      cmocka_unit_test(test_status_shows_grant),
      cmocka_unit_test(test_running_process_follows_a_new_grant),
  };
  const struct CMUnitTest compute[] = {
      cmocka_unit_test(test_sm_from_grant_env_zero),
      cmocka_unit_test(test_sm_from_grant_env_above),
      cmocka_unit_test(test_sm_from_grant_region_zero),
  };
  int failed = cmocka_run_group_tests_name("memory", memory, NULL, NULL);
  return failed + cmocka_run_group_tests_name("compute", compute, measure_unlimited, NULL);
}
