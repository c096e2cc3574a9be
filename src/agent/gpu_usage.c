/* gpu_usage.c -- see gpu_usage.h. */
#include "gpu_usage.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "nvml_abi.h"

static struct {
  pthread_once_t once;
  char error[256];
  __typeof__(nvmlDeviceGetCount_v2) *count;
  __typeof__(nvmlDeviceGetHandleByIndex_v2) *handle;
  __typeof__(nvmlDeviceGetUUID) *uuid;
  __typeof__(nvmlDeviceGetMemoryInfo) *memory;
  __typeof__(nvmlDeviceGetUtilizationRates) *utilization;
  __typeof__(nvmlDeviceGetComputeRunningProcesses_v3) *procs; /* _v3, else _v2; may be NULL */
  __typeof__(nvmlDeviceGetProcessUtilization) *proc_util;     /* may be NULL */
} g_nvml = {.once = PTHREAD_ONCE_INIT};

static void load(void) {
  void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) {
    snprintf(g_nvml.error, sizeof(g_nvml.error), "cannot load libnvidia-ml.so.1: %s", dlerror());
    return;
  }
  __typeof__(nvmlInit_v2) *init = (__typeof__(init))dlsym(lib, "nvmlInit_v2");
  g_nvml.count = (__typeof__(g_nvml.count))dlsym(lib, "nvmlDeviceGetCount_v2");
  g_nvml.handle = (__typeof__(g_nvml.handle))dlsym(lib, "nvmlDeviceGetHandleByIndex_v2");
  g_nvml.uuid = (__typeof__(g_nvml.uuid))dlsym(lib, "nvmlDeviceGetUUID");
  g_nvml.memory = (__typeof__(g_nvml.memory))dlsym(lib, "nvmlDeviceGetMemoryInfo");
  g_nvml.utilization = (__typeof__(g_nvml.utilization))dlsym(lib, "nvmlDeviceGetUtilizationRates");
  g_nvml.procs = (__typeof__(g_nvml.procs))dlsym(lib, "nvmlDeviceGetComputeRunningProcesses_v3");
  if (g_nvml.procs == NULL) /* drivers before 510: the same layout under _v2 */
    g_nvml.procs = (__typeof__(g_nvml.procs))dlsym(lib, "nvmlDeviceGetComputeRunningProcesses_v2");
  g_nvml.proc_util = (__typeof__(g_nvml.proc_util))dlsym(lib, "nvmlDeviceGetProcessUtilization");
  nvmlReturn_t rc = NVML_SUCCESS;
  if (init == NULL || g_nvml.count == NULL || g_nvml.handle == NULL || g_nvml.uuid == NULL ||
      g_nvml.memory == NULL) {
    snprintf(g_nvml.error, sizeof(g_nvml.error), "libnvidia-ml.so.1 lacks a needed function");
  } else if ((rc = init()) != NVML_SUCCESS) {
    snprintf(g_nvml.error, sizeof(g_nvml.error), "nvmlInit_v2 failed (NVML error %d)", (int)rc);
  } else {
    return; /* kept open for the life of the agent */
  }
  g_nvml.count = NULL;
  dlclose(lib);
}

int vg_gpu_usage_read(struct vg_gpu_usage *out, unsigned max, unsigned *count, char *err,
                      size_t err_len) {
  *count = 0;
  pthread_once(&g_nvml.once, load);
  if (g_nvml.count == NULL) {
    snprintf(err, err_len, "%s", g_nvml.error);
    return -1;
  }
  unsigned n = 0;
  nvmlReturn_t rc = g_nvml.count(&n);
  if (rc != NVML_SUCCESS) {
    snprintf(err, err_len, "nvmlDeviceGetCount_v2 failed (NVML error %d)", (int)rc);
    return -1;
  }
  for (unsigned i = 0; i < n && *count < max; i++) {
    nvmlDevice_t dev;
    struct vg_gpu_usage *u = &out[*count];
    memset(u, 0, sizeof(*u));
    nvmlMemory_t mem = {0};
    if (g_nvml.handle(i, &dev) != NVML_SUCCESS ||
        g_nvml.uuid(dev, u->uuid, sizeof(u->uuid)) != NVML_SUCCESS)
      continue; /* a GPU gone since discovery: the health checker reports it */
    u->memory_used = g_nvml.memory(dev, &mem) == NVML_SUCCESS ? mem.used : 0;
    nvmlUtilization_t util = {0, 0};
    u->utilization = g_nvml.utilization != NULL && g_nvml.utilization(dev, &util) == NVML_SUCCESS
                         ? (int)util.gpu
                         : -1;
    (*count)++;
  }
  return 0;
}

int vg_gpu_processes(unsigned index, struct vg_gpu_proc *out, unsigned max, unsigned *count,
                     char *err, size_t err_len) {
  *count = 0;
  pthread_once(&g_nvml.once, load);
  if (g_nvml.count == NULL || g_nvml.procs == NULL) {
    snprintf(err, err_len, "%s",
             g_nvml.count == NULL ? g_nvml.error
                                  : "libnvidia-ml.so.1 lists no processes (no "
                                    "nvmlDeviceGetComputeRunningProcesses_v3 or _v2)");
    return -1;
  }
  nvmlDevice_t dev;
  nvmlProcessInfo_t info[VG_GPU_PROCS_MAX];
  unsigned n = VG_GPU_PROCS_MAX;
  nvmlReturn_t rc = g_nvml.handle(index, &dev);
  if (rc == NVML_SUCCESS) rc = g_nvml.procs(dev, &n, info);
  if (rc != NVML_SUCCESS) {
    snprintf(err, err_len, "listing the processes of GPU %u failed (NVML error %d)", index,
             (int)rc);
    return -1;
  }
  for (unsigned i = 0; i < n && i < max; i++) {
    /* NOT_AVAILABLE (all ones) where the driver may not say (some MIG and
     * Windows modes): no amount, and no judgement made on it. */
    bool known = info[i].usedGpuMemory != ~0ULL;
    out[(*count)++] = (struct vg_gpu_proc){info[i].pid, known ? info[i].usedGpuMemory : 0, known};
  }
  return 0;
}

int vg_gpu_process_util(unsigned index, uint64_t since_us, struct vg_gpu_util_sample *out,
                        unsigned max, unsigned *count, char *err, size_t err_len) {
  *count = 0;
  pthread_once(&g_nvml.once, load);
  if (g_nvml.count == NULL) return snprintf(err, err_len, "%s", g_nvml.error), VG_GPU_UTIL_ERROR;
  if (g_nvml.proc_util == NULL) return VG_GPU_UTIL_UNSUPPORTED; /* an old driver */
  static __thread nvmlProcessUtilizationSample_t
      s[VG_GPU_UTIL_SAMPLES_MAX]; /* 32 KiB: off the stack */
  unsigned n = VG_GPU_UTIL_SAMPLES_MAX;
  nvmlDevice_t dev;
  nvmlReturn_t rc = g_nvml.handle(index, &dev);
  if (rc == NVML_SUCCESS) rc = g_nvml.proc_util(dev, s, &n, since_us);
  if (rc == NVML_ERROR_NOT_FOUND) return VG_GPU_UTIL_NONE;
  if (rc == NVML_ERROR_NOT_SUPPORTED) return VG_GPU_UTIL_UNSUPPORTED;
  if (rc != NVML_SUCCESS) {
    snprintf(err, err_len, "the process utilisation of GPU %u failed (NVML error %d)", index,
             (int)rc);
    return VG_GPU_UTIL_ERROR;
  }
  for (unsigned i = 0; i < n && i < max; i++)
    out[(*count)++] = (struct vg_gpu_util_sample){s[i].pid, s[i].smUtil, s[i].timeStamp};
  return VG_GPU_UTIL_OK;
}
