/*
 * gpu_usage.h -- what the node's GPUs are doing now, as NVML reports it
 * (memory in use by every process, utilisation over the driver's last
 * sample period), for the node agent's metrics. The library is opened and
 * initialised once, on first use, and kept: a scrape must not pay nvmlInit.
 */
#ifndef VG_PLUGIN_GPU_USAGE_H
#define VG_PLUGIN_GPU_USAGE_H

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

#endif
