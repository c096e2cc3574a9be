/*
 * config.h -- the device plugin's one YAML configuration file.
 *
 * The file selects the resource dialects the node advertises (vgpu/HAMi,
 * gpushare/Aliyun, timeSlicing/NVIDIA, cce/Huawei) and their options, plus a
 * few node-level settings. NVIDIA's time-slicing file is accepted unchanged,
 * either nested under `dialects.timeSlicing` or as the whole file; NVIDIA's
 * v1 settings that vgpu does not implement are accepted and named in
 * `warnings` (a typo, a key NVIDIA does not know either, is an error). The schema
 * is documented in docs/configuration.md; examples are in examples/config/.
 *
 * Every error names the place: "path:line:column: reason".
 */
#ifndef VG_PLUGIN_CONFIG_H
#define VG_PLUGIN_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "dialect.h"
#include "err.h"

#define VG_CONFIG_PATH_MAX 1024
/* Most GPU indices a timeSlicing `devices:` list may name. */
#define VG_TS_DEVICES_MAX 64
/* Sanity bounds, to catch typos such as `replicas: 40000`. */
#define VG_TS_REPLICAS_MAX 1024
#define VG_VGPU_SPLIT_MAX 1024
#define VG_CCE_MAX_VGPUS 20
/* Room for the one warning line naming every ignored NVIDIA setting. */
#define VG_CONFIG_WARNINGS_MAX 2048

/* The dialects' options. Resource names default to common/dialect.c's table
 * (the comments give each one's role there). */

/* HAMi. Only `resource_count` is a device-plugin resource; the others are
 * read from the pod (and by the scheduler). */
struct vg_dialect_vgpu {
  int enabled;
  char resource_count[VG_RESOURCE_NAME_MAX];          /* VG_ROLE_VGPU_COUNT */
  char resource_mem[VG_RESOURCE_NAME_MAX];            /* VG_ROLE_VGPU_MEM (MiB) */
  char resource_mem_percentage[VG_RESOURCE_NAME_MAX]; /* VG_ROLE_VGPU_MEM_PCT */
  char resource_cores[VG_RESOURCE_NAME_MAX];          /* VG_ROLE_VGPU_CORES (%) */
  unsigned split_count;                               /* slices per GPU, default 10 */
  double memory_scaling;                              /* 0 < x <= 1, default 1 */
  double core_scaling;                                /* 0 < x <= 10, default 1 */
};

/* Aliyun: one device ID per memory unit. */
struct vg_dialect_gpushare {
  int enabled;
  char resource[VG_RESOURCE_NAME_MAX]; /* VG_ROLE_GPUSHARE_MEM */
  uint64_t unit;                       /* bytes: 1 GiB (default) or 1 MiB */
};

enum vg_memory_per_replica { VG_MEMORY_PER_REPLICA_NONE = 0, VG_MEMORY_PER_REPLICA_EQUAL = 1 };

/* NVIDIA time-slicing: `replicas` device IDs per GPU, no limits by default. */
struct vg_dialect_timeslicing {
  int enabled;
  int from_nvidia_file; /* the whole file was NVIDIA's own */
  int rename_by_default;
  int fail_requests_greater_than_one;
  unsigned replicas;
  char resource[VG_RESOURCE_NAME_MAX]; /* VG_ROLE_GPU or VG_ROLE_GPU_SHARED */
  int all_devices;                     /* devices: all (the default) */
  unsigned devices[VG_TS_DEVICES_MAX]; /* otherwise these GPU indices */
  size_t n_devices;
  enum vg_memory_per_replica memory_per_replica;
};

/* Huawei CCE. Memory in units of 128 MiB, cores in multiples of 5 %. */
struct vg_dialect_cce {
  int enabled;
  char resource_mem[VG_RESOURCE_NAME_MAX];  /* VG_ROLE_CCE_MEM */
  char resource_core[VG_RESOURCE_NAME_MAX]; /* VG_ROLE_CCE_CORES */
  unsigned max_vgpus_per_gpu;               /* 1..20, default 20 */
};

struct vg_plugin_config {
  char library[VG_CONFIG_PATH_MAX];   /* libvgpu.so on the host */
  char state_dir[VG_CONFIG_PATH_MAX]; /* per-container region directories */
  uint64_t context_reserve;           /* bytes reserved per slice for a CUDA context */
  struct vg_dialect_vgpu vgpu;
  struct vg_dialect_gpushare gpushare;
  struct vg_dialect_timeslicing ts;
  struct vg_dialect_cce cce;
  /* NVIDIA v1 settings that were accepted but do nothing here, as one line
   * for the caller to log ("config: these NVIDIA settings have no effect
   * here: ..."); empty when there are none. The parser prints nothing. */
  char warnings[VG_CONFIG_WARNINGS_MAX];
};

#define VG_DEFAULT_LIBRARY "/usr/local/vgpu/libvgpu.so"
#define VG_DEFAULT_STATE_DIR "/var/lib/vgpu"
#define VG_DEFAULT_CONTEXT_RESERVE (256ULL << 20)

/* Reads and validates the file. Returns 0, or -1 with err = "path:line:col: reason"
 * and *cfg left zeroed. */
int vg_plugin_config_load(const char *path, struct vg_plugin_config *cfg, struct vg_err *err);

/* The same for a string in memory; `name` stands for the path in messages. */
int vg_plugin_config_parse_string(const char *text, size_t len, const char *name,
                                  struct vg_plugin_config *cfg, struct vg_err *err);

/* Releases what a successful load holds (nothing on the heap today; call it anyway). */
void vg_plugin_config_free(struct vg_plugin_config *cfg);

#endif
