/*
 * advertise.h -- pure helpers that turn the configuration into what the device
 * plugin advertises to the kubelet and into what a container's device IDs
 * alone say about its limits. No I/O, no NVML: easy to test. The dialects
 * themselves (roles, default names, units) are common/dialect.h's table.
 */
#ifndef VG_PLUGIN_ADVERTISE_H
#define VG_PLUGIN_ADVERTISE_H

#include <stdint.h>

#include "config.h"
#include "err.h"

/* One kubelet resource and how many device IDs one GPU contributes to it. */
struct vg_advertised {
  enum vg_dialect dialect;
  const char *name; /* points into the configuration */
  uint64_t ids;     /* device IDs for this GPU (0: the GPU has none of this resource) */
};

/* Most entries vg_dialect_advertise fills (one per dialect, plus the whole-GPU
 * whole-GPU resource (VG_ROLE_GPU) of a GPU that a timeSlicing `devices:` list leaves out). */
#define VG_ADVERTISED_MAX (VG_DIALECT_COUNT + 1)

/* For the GPU with NVML index `index` and `gpu_total_mem` bytes, fills out[] with
 * one entry per advertised resource and returns how many (0..VG_ADVERTISED_MAX):
 *   vgpu:        resource_count, deviceSplitCount IDs
 *   gpushare:    resource, floor(memory / unit) IDs
 *   timeSlicing: resource, `replicas` IDs (a GPU not in `devices:` gives
 *                VG_ROLE_GPU's name with 1 ID, as NVIDIA's plugin does)
 *   cce:         resource_mem, floor(memory / 128 MiB) IDs
 * (the kubelet counts the IDs a request takes, so a memory resource needs one ID
 * per unit; CCE's 20-vGPUs-per-GPU cap is max_vgpus_per_gpu, published in
 * the inventory as maxVgpus and kept by the scheduler's fit alone: the IDs
 * of one container cannot tell how many others share its GPU). */
int vg_dialect_advertise(const struct vg_plugin_config *cfg, uint64_t gpu_total_mem, unsigned index,
                         struct vg_advertised out[VG_ADVERTISED_MAX]);

/* vgpu dialect: the memory of a GPU that its slices may add up to,
 * floor(total * deviceMemoryScaling) rounded down to MiB, and the compute
 * percent they may add up to, 100 * deviceCoreScaling (what the node
 * inventory publishes for the scheduler). */
uint64_t vg_dialect_vgpu_memory(const struct vg_plugin_config *cfg, uint64_t gpu_total_mem);
unsigned vg_dialect_vgpu_cores(const struct vg_plugin_config *cfg);

/* What the device IDs of one resource say about a container's limits. */
struct vg_container_limits {
  enum vg_dialect dialect;
  int unlimited;          /* no isolation at all (timeSlicing, memoryPerReplica: none) */
  int pending;            /* some limits are bound later from the pod (docs/allocation.md) */
  unsigned gpus;          /* GPUs requested, when the IDs say (vgpu count); else 0 */
  uint64_t memory_per_id; /* bytes each ID stands for; 0 when IDs carry no memory */
  uint64_t memory;        /* n_ids * memory_per_id: the limit when all IDs are on one GPU */
};

/* For `n_ids` IDs of resource `name` on a GPU of `gpu_total_mem` bytes:
 *   gpushare:           memory = n_ids * unit
 *   timeSlicing equal:  memory_per_id = (total - replicas * contextReserve) / replicas
 *                       (rounded down to MiB), memory = n_ids * that
 *   timeSlicing none:   unlimited
 *   cce:                memory = n_ids * 128 MiB, cores pending
 *   vgpu:               gpus = n_ids, memory and cores pending
 * Returns -1 with err for a resource this configuration does not advertise, a
 * non-device resource (vgpu's memory, ...), n_ids == 0, or more than one
 * replica with failRequestsGreaterThanOne. */
int vg_dialect_container_limits(const struct vg_plugin_config *cfg, const char *name,
                                uint64_t n_ids, uint64_t gpu_total_mem,
                                struct vg_container_limits *limits, struct vg_err *err);

#endif
