/*
 * gpu.c -- driver-API plumbing for vgpu-burn (see gpu.h).
 *
 * The primary context is what the CUDA runtime, PyTorch and CuPy use, so a
 * limit that works for vgpu-burn works the way it will for them; the
 * context is retained and released symmetrically.
 */
#include "gpu.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

volatile sig_atomic_t burn_stop = 0;

static void on_stop_signal(int sig) {
  (void)sig;
  burn_stop = 1;
}

void burn_install_signals(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
}

const char *burn_cu_name(CUresult r, char *buf, size_t len) {
  const char *name = NULL;
  if (vg_cu.cuGetErrorName(r, &name) == CUDA_SUCCESS && name != NULL) return name;
  snprintf(buf, len, "CUresult %d", (int)r);
  return buf;
}

int burn_check(CUresult r, const char *call) {
  if (r == CUDA_SUCCESS) return 0;
  char buf[32];
  const char *desc = NULL;
  if (vg_cu.cuGetErrorString(r, &desc) != CUDA_SUCCESS || desc == NULL) desc = "no description";
  fprintf(stderr, "vgpu-burn: %s failed: %s (%s)\n", call, burn_cu_name(r, buf, sizeof(buf)), desc);
  return -1;
}

static int read_attributes(struct burn_gpu *g) {
  if (burn_check(vg_cu.cuDeviceGetName(g->name, (int)sizeof(g->name), g->dev), "cuDeviceGetName"))
    return -1;
  g->name[sizeof(g->name) - 1] = '\0';
  if (burn_check(vg_cu.cuDeviceGetAttribute(&g->sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                                            g->dev),
                 "cuDeviceGetAttribute(MULTIPROCESSOR_COUNT)"))
    return -1;
  if (burn_check(vg_cu.cuDeviceGetAttribute(&g->max_block,
                                            CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, g->dev),
                 "cuDeviceGetAttribute(MAX_THREADS_PER_BLOCK)"))
    return -1;
  return 0;
}

int burn_gpu_open(int ordinal, struct burn_gpu *g) {
  memset(g, 0, sizeof(*g));
  g->ordinal = ordinal;
  if (burn_check(vg_cu.cuInit(0), "cuInit")) return -1;
  int count = 0;
  if (burn_check(vg_cu.cuDeviceGetCount(&count), "cuDeviceGetCount")) return -1;
  if (ordinal >= count) {
    fprintf(stderr, "vgpu-burn: --device %d: the driver reports %d device(s)\n", ordinal, count);
    return -1;
  }
  if (burn_check(vg_cu.cuDeviceGet(&g->dev, ordinal), "cuDeviceGet")) return -1;
  if (read_attributes(g) != 0) return -1;
  if (burn_check(vg_cu.cuDevicePrimaryCtxRetain(&g->ctx, g->dev), "cuDevicePrimaryCtxRetain"))
    return -1;
  if (burn_check(vg_cu.cuCtxSetCurrent(g->ctx), "cuCtxSetCurrent")) {
    vg_cu.cuDevicePrimaryCtxRelease_v2(g->dev);
    g->ctx = NULL;
    return -1;
  }
  return 0;
}

void burn_gpu_close(struct burn_gpu *g) {
  if (g->ctx == NULL) return;
  burn_check(vg_cu.cuCtxSetCurrent(NULL), "cuCtxSetCurrent(NULL)");
  burn_check(vg_cu.cuDevicePrimaryCtxRelease_v2(g->dev), "cuDevicePrimaryCtxRelease_v2");
  g->ctx = NULL;
}

int burn_meminfo_query(const struct burn_gpu *g, struct burn_meminfo *m) {
  memset(m, 0, sizeof(*m));
  if (burn_check(vg_cu.cuMemGetInfo_v2(&m->free, &m->total), "cuMemGetInfo_v2")) return -1;
  return burn_check(vg_cu.cuDeviceTotalMem_v2(&m->device_total, g->dev), "cuDeviceTotalMem_v2");
}

double burn_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void burn_sleep(double seconds) {
  double deadline = burn_now() + seconds;
  while (!burn_stop) {
    double left = deadline - burn_now();
    if (left <= 0.0) break;
    if (left > 0.1) left = 0.1; /* wake regularly to notice burn_stop */
    struct timespec ts = {(time_t)left, (long)((left - (double)(time_t)left) * 1e9)};
    nanosleep(&ts, NULL);
  }
}
