/*
 * gpu_usage.h -- what the node's GPUs are doing now, as NVML reports it
 * (memory in use by every process, utilisation over the driver's last
 * sample period), for the node agent's metrics. The library is opened and
 * initialised once, on first use, and kept: a scrape must not pay nvmlInit.
 */
#ifndef VG_AGENT_GPU_USAGE_H
#define VG_AGENT_GPU_USAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct vg_gpu_usage {
  char uuid[96];
  uint64_t memory_used; /* bytes, every process on the GPU */
  int utilization;      /* percent, -1 when the driver does not say */
};

/* Fills out[0..*count) (at most max) in NVML index order. 0, or -1 with err. */
int vg_gpu_usage_read(struct vg_gpu_usage *out, unsigned max, unsigned *count, char *err,
                      size_t err_len);

/* A process on a GPU, as NVML reports it: its PID in the caller's PID
 * namespace (the host's, for an agent with hostPID) and the memory it holds
 * there, its CUDA context included. */
struct vg_gpu_proc {
  uint32_t pid;
  uint64_t memory; /* bytes */
  bool known;      /* false: the driver did not say how much */
};

#define VG_GPU_PROCS_MAX 256 /* per GPU; more are not listed */

/* The compute processes on the GPU of NVML index `index`: out[0..*count)
 * (at most max). 0, or -1 with err. */
int vg_gpu_processes(unsigned index, struct vg_gpu_proc *out, unsigned max, unsigned *count,
                     char *err, size_t err_len);

#endif
