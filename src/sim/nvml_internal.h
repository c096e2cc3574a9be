/*
 * nvml_internal.h -- process-local state of the simulated libnvidia-ml.so.1.
 *
 * NVML only observes the shared device state (sim_state.h): it never claims
 * a process slot, it reads device memory, the process slots and the kernel
 * timeline. Device handles are pointers into a small per-process table,
 * one entry per physical device; only the devices NVIDIA_VISIBLE_DEVICES
 * lets the process see (sim_visible.c) are handed out, numbered from 0 in
 * physical order as in a container. CUDA_VISIBLE_DEVICES is ignored, as
 * NVIDIA's NVML ignores it.
 */
#ifndef VG_NVML_INTERNAL_H
#define VG_NVML_INTERNAL_H

#include "sim_api.h"
#include "sim_state.h"

struct nvmlDevice_st {
  unsigned index;   /* physical: the state file's device */
  unsigned visible; /* NVML index in this process */
  bool shown;       /* NVIDIA_VISIBLE_DEVICES lets the process see it */
};

struct nv_process {
  pthread_mutex_t lock;
  int refcount; /* nvmlInit minus nvmlShutdown */
  bool attached;
  struct vg_sim sim;
  struct nvmlDevice_st dev[VG_SIM_MAX_DEVICES]; /* by physical index */
  unsigned nvisible;
  unsigned phys[VG_SIM_MAX_DEVICES]; /* NVML index -> physical index */
};

extern struct nv_process g_nv;

/* NVML_ERROR_UNINITIALIZED unless nvmlInit succeeded. */
nvmlReturn_t nv_ready(void);
/* Validates a device handle (one the process can see) and gives the
 * device's state and its physical index. */
nvmlReturn_t nv_device(nvmlDevice_t device, struct vg_sim_device **dev, unsigned *index);

/* A process as a slot records it: its pid in its own PID namespace ns
 * (0: unknown). */
struct nv_pid {
  unsigned pid;
  uint64_t ns;      /* its PID namespace's inode */
  uint64_t started; /* its start time in clock ticks since boot; 0 unknown */
};
/* Rewrites each pid into the caller's PID namespace, as the real driver
 * reports pids (nvml_pids.c); rows it translates get the caller's ns, rows
 * of processes the caller cannot see keep their pid. Scans /proc: call it
 * without the state lock. */
void nv_pids_to_caller(struct nv_pid *ids, unsigned n);

#endif
