/*
 * test_sim_multiproc.c -- one device, several processes: memory one process
 * takes is gone for the others, and a SIGKILLed process's memory comes back
 * (seen through both cuMemGetInfo and NVML), as on a real GPU.
 */
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>

#include "sim_state.h"
#include "sim_test.h"

static struct sim_chan g_chan;

/* Allocates 256 MiB (+ its 64 MiB context), says so, then waits. */
static void holder(void *arg) {
  (void)arg;
  close(g_chan.to_child[1]); /* a parent that dies unblocks us with EOF */
  sim_primary(0);
  CUdeviceptr p;
  OK(cuMemAlloc_v2(&p, 256 * MiB));
  sim_chan_send(g_chan.to_parent[1], 'a');
  sim_chan_recv(g_chan.to_child[0]); /* never answered: killed */
}

static void kill_and_reclaim(void) {
  sim_chan_init(&g_chan);
  pid_t pid = sim_spawn(holder, NULL);
  sim_primary(0); /* this process: 64 MiB of context */
  /* the holder runs concurrently: none, its context, or all of it */
  uint64_t early = sim_used();
  CHECK(early == 64 * MiB || early == 128 * MiB || early == 384 * MiB);
  CHECK(sim_chan_recv(g_chan.to_parent[0]) == 'a');
  CHECK(sim_used() == 384 * MiB);
  NV_OK(nvmlInit_v2());
  nvmlDevice_t d;
  NV_OK(nvmlDeviceGetHandleByIndex_v2(0, &d));
  nvmlMemory_t m;
  NV_OK(nvmlDeviceGetMemoryInfo(d, &m));
  CHECK(m.used == 384 * MiB);
  unsigned long long used = 0;
  CHECK(sim_nvml_listed(d, pid, &used) && used == 320 * MiB);
  CHECK(sim_nvml_listed(d, getpid(), &used) && used == 64 * MiB);
  /* the other process's memory limits this one */
  CUdeviceptr p;
  CHECK_CU(cuMemAlloc_v2(&p, 700 * MiB), CUDA_ERROR_OUT_OF_MEMORY);
  CHECK(kill(pid, SIGKILL) == 0);
  CHECK(sim_wait(pid) == 128 + SIGKILL);
  CHECK(sim_used() == 64 * MiB);
  NV_OK(nvmlDeviceGetMemoryInfo(d, &m));
  CHECK(m.used == 64 * MiB);
  CHECK(!sim_nvml_listed(d, pid, &used));
  OK(cuMemAlloc_v2(&p, 700 * MiB));
}

static void test_kill_and_reclaim(void **state) {
  (void)state;
  const char *env[] = {"VGPU_SIM_MEMORY=1g", "VGPU_SIM_CONTEXT_MEM=64m", NULL};
  sim_run(kill_and_reclaim, env);
}

/* A process killed before anyone asks: an OOM triggers the reaping. */
static void reap_on_oom(void) {
  sim_chan_init(&g_chan);
  pid_t pid = sim_spawn(holder, NULL);
  CHECK(sim_chan_recv(g_chan.to_parent[0]) == 'a');
  CHECK(kill(pid, SIGKILL) == 0);
  CHECK(sim_wait(pid) == 128 + SIGKILL);
  sim_primary(0);
  CUdeviceptr p;
  OK(cuMemAlloc_v2(&p, 900 * MiB)); /* fits only once the dead holder is gone */
}

static void test_reap_on_oom(void **state) {
  (void)state;
  const char *env[] = {"VGPU_SIM_MEMORY=1g", "VGPU_SIM_CONTEXT_MEM=64m", NULL};
  sim_run(reap_on_oom, env);
}

/* Many processes allocate at once, and hold their memory until all have
 * reported: together they never get more than the device has. When they
 * exit, everything is given back. */
static int g_counts[2];  /* grabbers report how many granules they got */
static int g_release[2]; /* closed by the parent: grabbers may exit */

static void grabber(void *arg) {
  (void)arg;
  close(g_release[1]);
  sim_primary(0);
  CUdeviceptr p;
  int got = 0;
  for (int i = 0; i < 64; i++) {
    CUresult rc = cuMemAlloc_v2(&p, 2 * MiB);
    CHECK(rc == CUDA_SUCCESS || rc == CUDA_ERROR_OUT_OF_MEMORY);
    got += rc == CUDA_SUCCESS;
  }
  size_t f, t;
  OK(cuMemGetInfo_v2(&f, &t));
  CHECK(f <= t);
  CHECK(write(g_counts[1], &got, sizeof(got)) == sizeof(got));
  char byte;
  CHECK(read(g_release[0], &byte, 1) == 0);
}

static void many_processes(void) {
  CHECK(pipe(g_counts) == 0 && pipe(g_release) == 0);
  pid_t pids[8];
  for (int i = 0; i < 8; i++) pids[i] = sim_spawn(grabber, NULL);
  int total = 0;
  for (int i = 0; i < 8; i++) {
    int got = 0;
    CHECK(read(g_counts[0], &got, sizeof(got)) == sizeof(got));
    total += got;
  }
  close(g_release[1]);
  for (int i = 0; i < 8; i++) CHECK(sim_wait(pids[i]) == 0);
  if (total != 128) fprintf(stderr, "total %d\n", total);
  CHECK(total == 128); /* 256 MiB device: exactly 128 granules, no more */
  sim_primary(0);
  CHECK(sim_used() == 0);
}

static void test_many_processes(void **state) {
  (void)state;
  const char *env[] = {"VGPU_SIM_MEMORY=256m", NULL};
  sim_run(many_processes, env);
}

/* A process dies holding the state mutex in the middle of an update: the
 * next locker repairs the totals from the process slots, nobody hangs. */
static void die_holding_lock(void *arg) {
  (void)arg;
  int fd = open(sim_state_path(), O_RDWR);
  CHECK(fd >= 0);
  struct vg_sim_state *st = mmap(NULL, sizeof(*st), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  CHECK(st != MAP_FAILED);
  CHECK(pthread_mutex_lock(&st->lock) == 0);
  st->dev[0].mem_used = 12345; /* a half-done update */
  _exit(0);
}

static void owner_dies(void) {
  sim_primary(0);
  CUdeviceptr p;
  OK(cuMemAlloc_v2(&p, 10 * MiB));
  CHECK(sim_wait(sim_spawn(die_holding_lock, NULL)) == 0);
  CHECK(sim_used() == 10 * MiB);
  NV_OK(nvmlInit_v2());
  nvmlDevice_t d;
  NV_OK(nvmlDeviceGetHandleByIndex_v2(0, &d));
  nvmlMemory_t m;
  NV_OK(nvmlDeviceGetMemoryInfo(d, &m));
  CHECK(m.used == 10 * MiB);
  OK(cuMemFree_v2(p));
  CHECK(sim_used() == 0);
}

static void test_owner_dies_holding_lock(void **state) {
  (void)state;
  sim_run(owner_dies, NULL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_kill_and_reclaim),
      cmocka_unit_test(test_reap_on_oom),
      cmocka_unit_test(test_many_processes),
      cmocka_unit_test(test_owner_dies_holding_lock),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
