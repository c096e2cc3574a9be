/*
 * test_sim_pidns.c -- NVML lists processes under the pids the caller knows.
 *
 * The real driver reports a process's pid in the NVML caller's PID
 * namespace: a node agent with hostPID: true gets the host pid of a process
 * running in a container. Here a process in a new PID namespace (pid 1
 * there) holds memory, and NVML in the original namespace must list it under
 * the pid fork() gave its parent (in the process listing and in the
 * utilisation samples), while a process of the caller's own namespace keeps
 * its own pid. Needs CAP_SYS_ADMIN (unshare(CLONE_NEWPID)):
 * skipped without it.
 */
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/wait.h>

#include "sim_test.h"

static const char g_ptx[] = ".version 7.0\n.target sm_80\n.entry k()\n{\n\tret;\n}\n";

static struct sim_chan g_chan;
static int g_outer[2]; /* the unsharer tells the holder's pid outside */

/* pid 1 of the new namespace: 64 MiB and 100 ms of kernels, then reports
 * its own pid and waits for EOF. */
static void holder(void *arg) {
  (void)arg;
  CUcontext ctx = NULL;
  CUdeviceptr p;
  OK(cuInit(0));
  OK(cuCtxCreate_v2(&ctx, 0, 0));
  OK(cuMemAlloc_v2(&p, 64 * MiB));
  CUmodule m;
  CUfunction f;
  OK(cuModuleLoadData(&m, g_ptx));
  OK(cuModuleGetFunction(&f, m, "k"));
  /* VGPU_SIM_SMS=10, VGPU_SIM_WAVE_US=2000: 100 blocks of 1024 are 10 ms */
  for (int i = 0; i < 10; i++) OK(cuLaunchKernel(f, 100, 1, 1, 1024, 1, 1, 0, NULL, NULL, NULL));
  OK(cuCtxSynchronize());
  pid_t inner = getpid();
  CHECK(write(g_chan.to_parent[1], &inner, sizeof(inner)) == sizeof(inner));
  char byte;
  CHECK(read(g_chan.to_child[0], &byte, 1) == 0); /* the scenario is done */
}

/* Moves into a new PID namespace for its children, forks the holder there
 * and passes on the holder's pid as this namespace sees it. */
static void unsharer(void *arg) {
  (void)arg;
  close(g_chan.to_child[1]); /* a parent that dies unblocks the holder */
  CHECK(unshare(CLONE_NEWPID) == 0);
  pid_t outer = sim_spawn(holder, NULL);
  CHECK(write(g_outer[1], &outer, sizeof(outer)) == sizeof(outer));
  CHECK(sim_wait(outer) == 0);
}

static void read_pid(int fd, pid_t *pid) { CHECK(read(fd, pid, sizeof(*pid)) == sizeof(*pid)); }

/* Whether the utilisation samples of the last second name pid. */
static bool sampled(nvmlDevice_t d, pid_t pid) {
  nvmlProcessUtilizationSample_t samples[16];
  unsigned count = 16;
  NV_OK(nvmlDeviceGetProcessUtilization(d, samples, &count, 0));
  for (unsigned i = 0; i < count; i++)
    if (samples[i].pid == (unsigned)pid) return true;
  return false;
}

static void foreign_namespace(void) {
  sim_chan_init(&g_chan);
  CHECK(pipe(g_outer) == 0);
  pid_t unsharer_pid = sim_spawn(unsharer, NULL);
  pid_t outer = 0, inner = 0;
  read_pid(g_outer[0], &outer);
  read_pid(g_chan.to_parent[0], &inner); /* sent once its memory is held */
  CHECK(inner == 1 && outer != inner);
  NV_OK(nvmlInit_v2());
  nvmlDevice_t d;
  NV_OK(nvmlDeviceGetHandleByIndex_v2(0, &d));
  /* first, while the holder's kernels are within the last second */
  CHECK(sampled(d, outer) && !sampled(d, inner));
  sim_primary(0);
  CUdeviceptr p;
  OK(cuMemAlloc_v2(&p, 32 * MiB));
  unsigned long long used = 0;
  if (!sim_nvml_listed(d, outer, &used))
    fprintf(stderr, "pid %d (%d inside) not listed\n", outer, inner);
  CHECK(sim_nvml_listed(d, outer, &used) && used == 64 * MiB);
  CHECK(sim_nvml_listed(d, getpid(), &used) && used == 32 * MiB);
  CHECK(!sim_nvml_listed(d, inner, &used));
  close(g_chan.to_child[1]);
  CHECK(sim_wait(unsharer_pid) == 0);
}

/* Whether this process may create PID namespaces (root with CAP_SYS_ADMIN). */
static bool can_unshare(void) {
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) _exit(unshare(CLONE_NEWPID) == 0 ? 0 : errno == EPERM ? 2 : 1);
  int rc = sim_wait(pid);
  assert_true(rc == 0 || rc == 2);
  return rc == 0;
}

static void test_foreign_namespace(void **state) {
  (void)state;
  if (!can_unshare()) {
    fprintf(stderr, "skipped: unshare(CLONE_NEWPID) needs CAP_SYS_ADMIN\n");
    skip();
  }
  const char *env[] = {"VGPU_SIM_MEMORY=1g", "VGPU_SIM_CONTEXT_MEM=0", "VGPU_SIM_SMS=10",
                       "VGPU_SIM_WAVE_US=2000", NULL};
  sim_run(foreign_namespace, env);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_foreign_namespace),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
