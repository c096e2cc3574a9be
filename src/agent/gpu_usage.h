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

/* A sample of NVML's per-process utilisation: the process's share of the
 * GPU's SM time (percent) over the driver's sample period that ended at
 * ts_us (CPU time, microseconds). */
struct vg_gpu_util_sample {
  uint32_t pid;
  unsigned sm;
  uint64_t ts_us;
};

#define VG_GPU_UTIL_SAMPLES_MAX 1024 /* per GPU and call */

/* What nvmlDeviceGetProcessUtilization said. */
enum vg_gpu_util_rc {
  VG_GPU_UTIL_ERROR = -1,      /* it failed: err says why; no reading */
  VG_GPU_UTIL_OK = 0,          /* out[0..*count) */
  VG_GPU_UTIL_NONE = 1,        /* NOT_FOUND: no process ran since since_us */
  VG_GPU_UTIL_UNSUPPORTED = 2, /* the driver does not measure it on this GPU (or has no call) */
};

/* The per-process utilisation samples of the GPU of NVML index `index`
 * recorded after since_us (NVML's lastSeenTimeStamp; 0: whatever the driver
 * still holds), into out[0..*count) (at most max). */
int vg_gpu_process_util(unsigned index, uint64_t since_us, struct vg_gpu_util_sample *out,
                        unsigned max, unsigned *count, char *err, size_t err_len);

#endif
