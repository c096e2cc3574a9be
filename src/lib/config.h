/*
 * config.h -- the limits a process was started with, read from its
 * environment.
 *
 * Variables (README.md's table): CUDA_DEVICE_MEMORY_LIMIT (every device),
 * CUDA_DEVICE_MEMORY_LIMIT_<i> (CUDA ordinal i, wins), the same pair for
 * CUDA_DEVICE_SM_LIMIT, CUDA_DEVICE_MEMORY_SHARED_CACHE (region file), and our
 * own VGPU_MANAGED_MEMORY=count|refuse, VGPU_SM_POLICY=hard|share and
 * VGPU_LIMITS_TIMEOUT=<seconds> (how long to wait for limits the node agent
 * has not written yet; default 30). A malformed value is an error
 * naming the variable and the value; the caller refuses to run CUDA rather than run without the
 * limit the user meant.
 */
#ifndef VG_CONFIG_H
#define VG_CONFIG_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "err.h"
#include "region.h"

struct vg_config {
  bool mem_set[VG_MAX_DEVICES];
  uint64_t mem_limit[VG_MAX_DEVICES]; /* 0: unlimited */
  bool sm_set[VG_MAX_DEVICES];
  unsigned sm_limit[VG_MAX_DEVICES]; /* 0: unlimited */
  bool refuse_managed;
  unsigned limits_timeout_s; /* VGPU_LIMITS_TIMEOUT: wait for pending limits, seconds */
  bool sm_policy_set;
  unsigned sm_policy; /* VG_SM_POLICY_* */
  char region_path[PATH_MAX];
  char note[320]; /* a limit given in decimal units (300Mb), said once at start; "" if none */
};

/* Reads the configuration from envp (NULL-terminated "NAME=VALUE" list). */
int vg_config_load(struct vg_config *cfg, char *const *envp, struct vg_err *err);

#endif
