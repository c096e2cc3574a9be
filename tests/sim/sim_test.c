/* sim_test.c -- see sim_test.h. */
#include "sim_test.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

static char g_dir[256];
static char g_state[300];
static char g_err_path[300];

static const char *const g_cleared[] = {"VGPU_SIM_STATE",
                                        "VGPU_SIM_DEVICES",
                                        "VGPU_SIM_MEMORY",
                                        "VGPU_SIM_SMS",
                                        "VGPU_SIM_NAME",
                                        "VGPU_SIM_CONTEXT_MEM",
                                        "VGPU_SIM_WAVE_US",
                                        "VGPU_SIM_FAIL_ALLOC_AFTER",
                                        "CUDA_VISIBLE_DEVICES",
                                        "NVIDIA_VISIBLE_DEVICES",
                                        NULL};

static void apply_env(const char *const *env) {
  for (int i = 0; g_cleared[i] != NULL; i++) unsetenv(g_cleared[i]);
  for (int i = 0; i < 16; i++) {
    char name[32];
    snprintf(name, sizeof(name), "VGPU_SIM_MEMORY_%d", i);
    unsetenv(name);
  }
  setenv("VGPU_SIM_STATE", g_state, 1);
  for (int i = 0; env != NULL && env[i] != NULL; i++) {
    char *copy = strdup(env[i]);
    char *eq = strchr(copy, '=');
    CHECK(eq != NULL);
    *eq = '\0';
    setenv(copy, eq + 1, 1);
    free(copy);
  }
}

static void remove_dir(void) {
  char cmd[300];
  snprintf(cmd, sizeof(cmd), "rm -rf '%s'", g_dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", g_dir);
}

void sim_run(void (*fn)(void), const char *const *env) {
  snprintf(g_dir, sizeof(g_dir), "/tmp/vgpu-simtest-XXXXXX");
  assert_non_null(mkdtemp(g_dir));
  snprintf(g_state, sizeof(g_state), "%s/sim.state", g_dir);
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    alarm(60); /* a hung scenario fails instead of blocking the suite */
    apply_env(env);
    fn();
    fflush(NULL);
    _exit(0);
  }
  int status = sim_wait(pid);
  remove_dir();
  assert_int_equal(status, 0);
}

const char *sim_dir(void) { return g_dir; }
const char *sim_state_path(void) { return g_state; }

CUcontext sim_primary(int dev) {
  CUcontext ctx = NULL;
  OK(cuInit(0));
  OK(cuDevicePrimaryCtxRetain(&ctx, dev));
  OK(cuCtxSetCurrent(ctx));
  return ctx;
}

uint64_t sim_used(void) {
  size_t free_b = 0, total = 0;
  OK(cuMemGetInfo_v2(&free_b, &total));
  return total - free_b;
}

void sim_capture_stderr(void) {
  snprintf(g_err_path, sizeof(g_err_path), "%s/stderr.txt", g_dir);
  int fd = open(g_err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  CHECK(fd >= 0);
  dup2(fd, 2);
  close(fd);
}

const char *sim_stderr_text(void) {
  static char text[8192];
  text[0] = '\0';
  FILE *f = fopen(g_err_path, "r");
  if (f == NULL) return text;
  size_t n = fread(text, 1, sizeof(text) - 1, f);
  text[n] = '\0';
  fclose(f);
  return text;
}

pid_t sim_spawn(void (*fn)(void *), void *arg) {
  fflush(NULL);
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    alarm(60); /* alarms are not inherited: an orphan must not live on */
    fn(arg);
    fflush(NULL);
    _exit(0);
  }
  return pid;
}

int sim_wait(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

void sim_chan_init(struct sim_chan *c) {
  CHECK(pipe(c->to_child) == 0);
  CHECK(pipe(c->to_parent) == 0);
}

void sim_chan_send(int fd, char byte) { CHECK(write(fd, &byte, 1) == 1); }

char sim_chan_recv(int fd) {
  char byte = 0;
  ssize_t n;
  while ((n = read(fd, &byte, 1)) < 0 && errno == EINTR) {
  }
  CHECK(n == 1);
  return byte;
}

uint64_t sim_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

bool sim_nvml_listed(nvmlDevice_t d, pid_t pid, unsigned long long *used) {
  nvmlProcessInfo_t infos[16];
  unsigned count = 16;
  NV_OK(nvmlDeviceGetComputeRunningProcesses_v3(d, &count, infos));
  for (unsigned i = 0; i < count; i++) {
    if (infos[i].pid != (unsigned)pid) continue;
    *used = infos[i].usedGpuMemory;
    return true;
  }
  return false;
}
