/* test_nvml_procs.c -- NVML's process list in a container is the
 * container's own: two containers on one GPU each see their process alone,
 * with the bytes it is charged (nvidia-smi's Processes table), and keep
 * NVML's size protocol. A container without a memory limit sees its own
 * (none here) all the same; only the node, without libvgpu, sees both. */
#include <signal.h>

#include "common.h"

static struct vg_run run;

#define NOT_AVAILABLE 0xFFFFFFFFULL
#define INSUFFICIENT_SIZE 7

/* A container on the GPU of env first (its simulator state), with a region
 * file of its own. */
static void env_neighbour(struct vg_env *env, const struct vg_env *first) {
  env_preloaded(env);
  vg_env_set(env, "VGPU_SIM_STATE", first->state);
}

/* The container of env lists pid alone, holding used bytes, in all three
 * variants. */
static void sees_only(const struct vg_env *env, pid_t pid, unsigned long long used) {
  run_probe(env, &run, "procs", NULL, NULL, NULL, NULL);
  assert_int_equal(json_num(run.out, "rc3"), 0);
  assert_int_equal(json_num(run.out, "count3"), 1);
  assert_int_equal(json_num(run.out, "pid3"), pid);
  assert_int_equal(json_num(run.out, "used3"), used);
  assert_int_equal(json_num(run.out, "gi3"), NOT_AVAILABLE);
  assert_int_equal(json_num(run.out, "ci3"), NOT_AVAILABLE);
  assert_int_equal(json_num(run.out, "rc2"), 0);
  assert_int_equal(json_num(run.out, "count2"), 1);
  assert_int_equal(json_num(run.out, "pid2"), pid);
  assert_int_equal(json_num(run.out, "used2"), used);
  assert_int_equal(json_num(run.out, "gi2"), NOT_AVAILABLE);
  assert_int_equal(json_num(run.out, "rc1"), 0);
  assert_int_equal(json_num(run.out, "count1"), 1);
  assert_int_equal(json_num(run.out, "pid1"), pid);
  assert_int_equal(json_num(run.out, "used1"), used);
  assert_int_equal(json_num(run.out, "null_rc"), INSUFFICIENT_SIZE);
  assert_int_equal(json_num(run.out, "null_count"), 1);
  assert_int_equal(json_num(run.out, "small_rc"), INSUFFICIENT_SIZE);
  assert_int_equal(json_num(run.out, "small_count"), 1);
}

static void test_each_container_sees_its_own(void **s) {
  (void)s;
  struct vg_env a, b;
  env_preloaded(&a);
  env_neighbour(&b, &a);
  vg_env_set(&a, "CUDA_DEVICE_MEMORY_LIMIT", "300m");
  vg_env_set(&b, "CUDA_DEVICE_MEMORY_LIMIT", "200m");
  pid_t pa = spawn_probe(&a, "hold", "100m", "30", NULL, NULL, NULL);
  pid_t pb = spawn_probe(&b, "hold", "50m", "30", NULL, NULL, NULL);
  wait_used(&a, 100 * MiB);
  wait_used(&b, 50 * MiB);
  /* Looking changes nothing: a lister started with another limit (as
   * after `vgpu set`) does not write it, as a process using the GPU would. */
  vg_env_set(&a, "CUDA_DEVICE_MEMORY_LIMIT", "250m");
  sees_only(&a, pa, 100 * MiB);
  unsigned long long limit = 0;
  region_used(&a, &limit);
  assert_int_equal(limit, 300 * MiB);
  sees_only(&b, pb, 50 * MiB);
  /* A container without a memory limit (a third region) is a container
   * too: none of the neighbours' processes, nor their memory (issue 32). */
  struct vg_env third, node;
  env_neighbour(&third, &a);
  run_probe(&third, &run, "procs", NULL, NULL, NULL, NULL);
  assert_int_equal(json_num(run.out, "rc3"), 0);
  assert_int_equal(json_num(run.out, "count3"), 0);
  assert_int_equal(json_num(run.out, "count1"), 0);
  run_probe(&third, &run, "meminfo", NULL, NULL, NULL, NULL);
  assert_int_equal(json_num(run.out, "nvml_total"), 4096 * MiB);
  assert_int_equal(json_num(run.out, "nvml_used"), 0);
  assert_int_equal(json_num(run.out, "nvml2_used"), 0);
  /* The node, without libvgpu, gets the driver's list: both. */
  vg_env_init(&node, false);
  vg_env_set(&node, "VGPU_SIM_MEMORY", "4g");
  vg_env_set(&node, "VGPU_SIM_STATE", a.state);
  run_probe(&node, &run, "procs", NULL, NULL, NULL, NULL);
  assert_int_equal(json_num(run.out, "count3"), 2);
  run_probe(&node, &run, "meminfo", NULL, NULL, NULL, NULL);
  assert_true(json_num(run.out, "nvml_used") >= 150 * MiB);
  kill(pa, SIGKILL);
  kill(pb, SIGKILL);
  vg_wait(pa);
  vg_wait(pb);
  vg_env_cleanup(&node);
  vg_env_cleanup(&third);
  vg_env_cleanup(&b);
  vg_env_cleanup(&a);
}

/* No process of the container on the GPU: success and a count of 0, even
 * with no buffer, while the neighbour's process runs. */
static void test_none_of_its_own(void **s) {
  (void)s;
  struct vg_env a, b;
  env_preloaded(&a);
  env_neighbour(&b, &a);
  vg_env_set(&b, "CUDA_DEVICE_MEMORY_LIMIT", "200m");
  pid_t pb = spawn_probe(&b, "hold", "50m", "30", NULL, NULL, NULL);
  wait_used(&b, 50 * MiB);
  vg_env_set(&a, "CUDA_DEVICE_MEMORY_LIMIT", "300m");
  run_probe(&a, &run, "procs", NULL, NULL, NULL, NULL);
  assert_int_equal(json_num(run.out, "rc3"), 0);
  assert_int_equal(json_num(run.out, "count3"), 0);
  assert_int_equal(json_num(run.out, "rc1"), 0);
  assert_int_equal(json_num(run.out, "count1"), 0);
  assert_int_equal(json_num(run.out, "null_rc"), 0);
  assert_int_equal(json_num(run.out, "null_count"), 0);
  kill(pb, SIGKILL);
  vg_wait(pb);
  vg_env_cleanup(&b);
  vg_env_cleanup(&a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_each_container_sees_its_own),
      cmocka_unit_test(test_none_of_its_own),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
