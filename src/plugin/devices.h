/*
 * devices.h -- the node's GPUs as NVML reports them (dlopen of
 * libnvidia-ml.so.1: the real driver or the simulated one).
 */
#ifndef VG_PLUGIN_DEVICES_H
#define VG_PLUGIN_DEVICES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define VG_MAX_GPUS 64

struct vg_gpu {
  unsigned index;
  char uuid[96];
  char name[96];
  uint64_t memory; /* bytes */
  int numa_node;   /* nvmlDeviceGetNumaNodeId; -1 when the driver lacks it or fails */
  int minor;       /* /dev/nvidia<minor>; -1 when NVML does not say */
  bool healthy;
};

/* Fills gpus[0..*count); 0 on success, -1 with a message in err. */
int vg_gpus_discover(struct vg_gpu *gpus, unsigned *count, char *err, size_t err_len);

#endif
