/*
 * nvml_internal.h -- process-local state of the simulated libnvidia-ml.so.1.
 *
 * NVML only observes the shared device state (sim_state.h): it never claims
 * a process slot, it reads device memory, the process slots and the kernel
 * timeline. Device handles are pointers into a small per-process table;
 * NVML numbers devices physically and ignores CUDA_VISIBLE_DEVICES, as
 * NVIDIA's does.
 */
#ifndef VG_NVML_INTERNAL_H
#define VG_NVML_INTERNAL_H

#include "sim_api.h"
#include "sim_state.h"

struct nvmlDevice_st {
  unsigned index;
};

struct nv_process {
  pthread_mutex_t lock;
  int refcount; /* nvmlInit minus nvmlShutdown */
  bool attached;
  struct vg_sim sim;
  struct nvmlDevice_st dev[VG_SIM_MAX_DEVICES];
};

extern struct nv_process g_nv;

/* NVML_ERROR_UNINITIALIZED unless nvmlInit succeeded. */
nvmlReturn_t nv_ready(void);
/* Validates a device handle and gives the device's state. */
nvmlReturn_t nv_device(nvmlDevice_t device, struct vg_sim_device **dev, unsigned *index);

#endif
