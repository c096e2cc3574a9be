/*
 * sim_test.h -- helpers for the simulated driver's tests.
 *
 * The simulator keeps per-process state (cuInit happens once) and machine-
 * wide state (the state file). So every test scenario runs in a fresh forked
 * child with its own VGPU_SIM_STATE file in a new temporary directory and its
 * own VGPU_SIM_* variables; the cmocka test in the parent only checks that
 * the child exited 0. Inside a child the CHECK macros print what failed and
 * exit 1. Scenarios that need several processes fork again before their
 * first CUDA call (a child of an initialised process cannot use CUDA).
 */
#ifndef VG_SIM_TEST_H
#define VG_SIM_TEST_H

// clang-format off
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
// clang-format on

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>
#include <unistd.h>

#include "cuda_abi.h"
#include "nvml_abi.h"

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      _exit(1);                                                                \
    }                                                                          \
  } while (0)

#define CHECK_CU(expr, want)                                                                       \
  do {                                                                                             \
    CUresult rc_ = (expr);                                                                         \
    if (rc_ != (want)) {                                                                           \
      fprintf(stderr, "%s:%d: %s returned %d, expected %d\n", __FILE__, __LINE__, #expr, (int)rc_, \
              (int)(want));                                                                        \
      _exit(1);                                                                                    \
    }                                                                                              \
  } while (0)

#define CHECK_NV(expr, want)                                                                       \
  do {                                                                                             \
    nvmlReturn_t rc_ = (expr);                                                                     \
    if (rc_ != (want)) {                                                                           \
      fprintf(stderr, "%s:%d: %s returned %d, expected %d\n", __FILE__, __LINE__, #expr, (int)rc_, \
              (int)(want));                                                                        \
      _exit(1);                                                                                    \
    }                                                                                              \
  } while (0)

#define OK(expr) CHECK_CU(expr, CUDA_SUCCESS)
#define NV_OK(expr) CHECK_NV(expr, NVML_SUCCESS)

#define MiB (1ull << 20)
#define GiB (1ull << 30)

/* Runs fn in a fresh child: own state file, VGPU_SIM_* and CUDA_VISIBLE_DEVICES
 * cleared, then env ("NAME=VALUE" strings, NULL-terminated, may be NULL)
 * applied. Fails the cmocka test unless the child exits 0. */
void sim_run(void (*fn)(void), const char *const *env);

/* In a child: the test's temporary directory and its state file path. */
const char *sim_dir(void);
const char *sim_state_path(void);

/* In a child: cuInit, retain device dev's primary context, make it current. */
CUcontext sim_primary(int dev);
/* Device-wide used bytes of the current context's device (cuMemGetInfo). */
uint64_t sim_used(void);

/* Redirects stderr to a file; sim_stderr_text returns what was written. */
void sim_capture_stderr(void);
const char *sim_stderr_text(void);

/* A helper process: forks, runs fn(arg) in the child and _exits 0. */
pid_t sim_spawn(void (*fn)(void *), void *arg);
int sim_wait(pid_t pid); /* exit code or 128+signal */

/* One-byte signalling between processes over a pipe pair. */
struct sim_chan {
  int to_child[2];
  int to_parent[2];
};
void sim_chan_init(struct sim_chan *c);
void sim_chan_send(int fd, char byte);
/* usedGpuMemory of pid in device d's compute-process listing (_v3) in
 * *used; false if it is not listed. */
bool sim_nvml_listed(nvmlDevice_t d, pid_t pid, unsigned long long *used);
char sim_chan_recv(int fd);

uint64_t sim_now_ns(void);

#endif
