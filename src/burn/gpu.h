/*
 * gpu.h -- the driver-API plumbing vgpu-burn shares between its parts.
 *
 * vgpu-burn talks to libcuda.so.1 only (no runtime library), the way a
 * framework does underneath: cuInit, the device's primary context made
 * current, and plain driver calls. Every failing call is reported the same
 * way -- the call's symbol name and the CUresult's name -- so that a user can
 * tell a limit (CUDA_ERROR_OUT_OF_MEMORY) from a broken setup.
 */
#ifndef VG_BURN_GPU_H
#define VG_BURN_GPU_H

#include <signal.h>
#include <stddef.h>

#include "cuda_dl.h"

struct burn_gpu {
  int ordinal;
  CUdevice dev;
  CUcontext ctx; /* the retained primary context, current on this thread */
  char name[256];
  int sm_count;
  int max_block; /* CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK */
};

struct burn_meminfo {
  size_t free;         /* cuMemGetInfo_v2 */
  size_t total;        /* cuMemGetInfo_v2 */
  size_t device_total; /* cuDeviceTotalMem_v2 */
};

/* Set by SIGINT/SIGTERM: the loops and the hold stop early and free cleanly. */
extern volatile sig_atomic_t burn_stop;
void burn_install_signals(void);

/* "CUDA_ERROR_OUT_OF_MEMORY", or "CUresult 123" for a code the driver cannot
 * name. */
const char *burn_cu_name(CUresult r, char *buf, size_t len);

/* Returns 0 on CUDA_SUCCESS; otherwise prints "vgpu-burn: CALL failed:
 * NAME (description)" to stderr and returns -1. */
int burn_check(CUresult r, const char *call);

/* cuInit, device lookup, primary context retained and made current, name and
 * attributes read. */
int burn_gpu_open(int ordinal, struct burn_gpu *g);
void burn_gpu_close(struct burn_gpu *g);

int burn_meminfo_query(const struct burn_gpu *g, struct burn_meminfo *m);

/* CLOCK_MONOTONIC in seconds. */
double burn_now(void);

/* Sleeps up to `seconds`, waking early when burn_stop is set. */
void burn_sleep(double seconds);

#endif
