/* test_foreign_gpu.c -- a container sees a GPU the node agent did not give
 * it. On two simulated GPUs the agent's region grants GPU 1 only (100 MiB,
 * with the environment the device plugin sets). With
 * NVIDIA_VISIBLE_DEVICES=all the container also sees GPU 0: libvgpu must
 * refuse it, with a message naming it, rather than run it unlimited (the
 * defect: a pod given GPU 1 took 8 GiB of GPU 0), while GPU 1 keeps its
 * limit. With the plugin's own value GPU 1 is ordinal 0 and works as usual.
 * Outside the node agent an unlisted GPU stays unlimited, as documented. */
#include "common.h"
#include "region.h"

#define GPU0 "GPU-5a1a0000-0000-4000-8000-000000000000"
#define GPU1 "GPU-5a1a0000-0000-4000-8000-000000000001"
#define REFUSED "is not one of this container's GPUs"
#define INVALID_DEVICE 101 /* CUDA_ERROR_INVALID_DEVICE */
#define NOT_FOUND 6        /* NVML_ERROR_NOT_FOUND */

static struct vg_run run;

static void env_two_gpus(struct vg_env *env) {
  env_preloaded(env);
  vg_env_set(env, "VGPU_SIM_DEVICES", "2");
}

/* What Allocate and the binder leave for a container given GPU 1. */
static void agent_gives_gpu1(struct vg_env *env) {
  env_two_gpus(env);
  vg_env_set(env, "CUDA_DEVICE_MEMORY_LIMIT_0", "100m");
  struct vg_shm shm;
  struct vg_err err;
  assert_int_equal(vg_region_open(&shm, env->cache, &err), 0);
  assert_int_equal(vg_region_lock(&shm), 0);
  int dev = vg_region_device_locked(&shm, GPU1, 4096 * MiB);
  vg_region_unlock(&shm);
  assert_int_equal(vg_region_set_mem_limit(&shm, dev, 100 * MiB, &err), 0);
  vg_region_set_pending(&shm, false);
  vg_shm_close(&shm);
}

static int run_gpus(const struct vg_env *env) {
  char probe[512];
  snprintf(probe, sizeof(probe), "%s", vg_build_path("tests/probe_gpus"));
  char *argv[] = {probe, NULL};
  return vg_run(env, argv, &run);
}

/* How often text occurs in s. */
static int occurrences(const char *s, const char *text) {
  int n = 0;
  for (const char *p = strstr(s, text); p != NULL; p = strstr(p + 1, text)) n++;
  return n;
}

/* The region still lists GPU 1 alone: nothing registered GPU 0. */
static void region_lists_gpu1_only(const struct vg_env *env) {
  struct vg_shm shm;
  struct vg_err err;
  assert_int_equal(vg_region_open(&shm, env->cache, &err), 0);
  const struct vg_region *r = vg_region_of(&shm);
  assert_int_equal(r->device_count, 1);
  assert_string_equal(r->dev[0].uuid, GPU1);
  vg_shm_close(&shm);
}

static void test_visible_all_refuses_unassigned_gpu(void **s) {
  (void)s;
  struct vg_env env;
  agent_gives_gpu1(&env);
  vg_env_set(&env, "NVIDIA_VISIBLE_DEVICES", "all");

  /* cudaSetDevice(0) + cudaMalloc: no context, hence no memory, on GPU 0. */
  vg_env_set(&env, "PROBE_DEVICE", "0");
  assert_int_equal(run_probe(&env, &run, "alloc", "mem", "10m", "10", NULL), 3);
  assert_int_equal(json_num(run.out, "rc"), INVALID_DEVICE);
  if (strstr(run.err, "CUDA device 0 (" GPU0 ") " REFUSED ": the node agent assigned " GPU1) ==
          NULL ||
      strstr(run.err, "CUDA_ERROR_INVALID_DEVICE") == NULL)
    fail_msg("stderr does not name the GPU and why: %s", run.err);

  /* GPU 1 (ordinal 1 here) keeps the agent's limit. */
  vg_env_set(&env, "PROBE_DEVICE", "1");
  run_probe(&env, &run, "alloc", "mem", "10m", "100", NULL);
  assert_int_equal(json_num(run.out, "allocated"), 10);
  assert_int_equal(json_num(run.out, "last_rc"), 2); /* CUDA_ERROR_OUT_OF_MEMORY */
  assert_int_equal(json_num(run.out, "total"), 100 * MiB);

  /* Every way onto GPU 0 is closed, GPU 1's are open; one message. */
  run_gpus(&env);
  assert_int_equal(json_num(run.out, "cuda_count"), 2);
  static const char *const ways[] = {"retain", "ctx", "defpool", "mempool", "poolcreate", "vmm"};
  for (size_t i = 0; i < sizeof(ways) / sizeof(ways[0]); i++) {
    char key[32];
    snprintf(key, sizeof(key), "%s0", ways[i]);
    if (json_num(run.out, key) != INVALID_DEVICE) fail_msg("%s: %s", key, run.out);
    snprintf(key, sizeof(key), "%s1", ways[i]);
    if (json_num(run.out, key) != 0) fail_msg("%s: %s", key, run.out);
  }
  assert_int_equal(occurrences(run.err, REFUSED), 1);

  /* NVML (nvidia-smi) lists the container's GPU alone, as index 0. */
  assert_int_equal(json_num(run.out, "nvml_count"), 1);
  assert_int_equal(json_num(run.out, "nvml_phys0"), 1);
  assert_int_equal(json_num(run.out, "nvml_index0"), 0);
  assert_int_equal(json_num(run.out, "nvml_total0"), 100 * MiB);
  assert_int_equal(json_num(run.out, "nvml_byuuid0"), NOT_FOUND);
  assert_int_equal(json_num(run.out, "nvml_byuuid1"), 0);

  region_lists_gpu1_only(&env);
  vg_env_cleanup(&env);
}

/* The device plugin's own value: GPU 1 is ordinal 0 and NVML index 0. */
static void test_assigned_gpu_by_uuid_is_ordinal_0(void **s) {
  (void)s;
  struct vg_env env;
  agent_gives_gpu1(&env);
  vg_env_set(&env, "NVIDIA_VISIBLE_DEVICES", GPU1);
  run_probe(&env, &run, "alloc", "mem", "10m", "100", NULL);
  assert_int_equal(json_num(run.out, "allocated"), 10);
  assert_int_equal(json_num(run.out, "last_rc"), 2);
  assert_int_equal(json_num(run.out, "total"), 100 * MiB);
  run_gpus(&env);
  assert_int_equal(json_num(run.out, "cuda_count"), 1);
  assert_int_equal(json_num(run.out, "retain0"), 0);
  assert_int_equal(json_num(run.out, "ctx0"), 0);
  assert_int_equal(json_num(run.out, "vmm0"), 0);
  assert_int_equal(json_num(run.out, "nvml_count"), 1);
  assert_int_equal(json_num(run.out, "nvml_phys0"), 1);
  assert_int_equal(json_num(run.out, "nvml_total0"), 100 * MiB);
  assert_null(strstr(run.err, REFUSED));
  region_lists_gpu1_only(&env);
  vg_env_cleanup(&env);
}

/* `vgpu run` (no node agent): a GPU without a limit variable is used
 * without a limit and registered on first use (docs/memory.md). */
static void test_outside_agent_unlisted_gpu_unlimited(void **s) {
  (void)s;
  struct vg_env env;
  env_two_gpus(&env);
  vg_env_set(&env, "CUDA_DEVICE_MEMORY_LIMIT_1", "40m");
  run_probe(&env, &run, "alloc", "mem", "10m", "30", NULL);
  assert_int_equal(json_num(run.out, "allocated"), 30);
  assert_int_equal(json_num(run.out, "total"), 4096 * MiB);
  run_gpus(&env);
  assert_int_equal(json_num(run.out, "retain0"), 0);
  assert_int_equal(json_num(run.out, "nvml_count"), 2);
  assert_null(strstr(run.err, REFUSED));
  vg_env_cleanup(&env);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_visible_all_refuses_unassigned_gpu),
      cmocka_unit_test(test_assigned_gpu_by_uuid_is_ordinal_0),
      cmocka_unit_test(test_outside_agent_unlisted_gpu_unlimited),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
