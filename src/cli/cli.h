/*
 * cli.h -- the vgpu command-line tool: one file per verb.
 *
 *   vgpu run [--sim] [--memory SIZE] [--cores PCT] [--devices LIST] [--cache PATH] [-q] -- CMD...
 *   vgpu status [--cache PATH] [--json] [--sim]
 *   vgpu set [--cache PATH] [--memory SIZE] [--cores PCT] [--device N]
 *   vgpu smi            (also: vgpu invoked as nvidia-smi)
 */
#ifndef VG_CLI_H
#define VG_CLI_H

#include <stddef.h>
#include <stdio.h>

#include "grant.h"
#include "nvml_abi.h"
#include "region.h"

int vg_cmd_run(int argc, char **argv);
int vg_cmd_status(int argc, char **argv);
int vg_cmd_set(int argc, char **argv);
int vg_cmd_smi(int argc, char **argv);

/* Runs command (argv, found on PATH) as a child and waits for it (launch.c):
 * its wait status, or -1 with errno when it could not be started. */
int vg_launch(char **command);
/* vgpu run's exit code for the command's wait status: the same code, or
 * death by the same signal. */
int vg_launch_exit(int status);

/* The message for an unknown option of a verb, with a guess (suggest.c). */
void vg_cli_unknown_option(const char *verb, const char *given, const char *const *known);

/* Where the build products are, relative to this executable (or overridden
 * by VGPU_LIBRARY / VGPU_SIM_DIR). Return 0 and fill out, or -1. */
int vg_path_library(char *out, size_t len);
int vg_path_sim_dir(char *out, size_t len);
/* The simulator's libnvidia-ml.so.1 (vgpu status --sim, vgpu smi --sim). */
int vg_path_sim_nvml(char *out, size_t len);
/* The region file: --cache, else $CUDA_DEVICE_MEMORY_SHARED_CACHE, else the default. */
const char *vg_path_region(const char *option);

/* Per-run region files (runs.c). vg_runs_create makes this process's
 * (named by its pid, in a directory of this user's, mode 0700) and puts its
 * path in out; 0, or -1 with err. */
int vg_runs_create(char *out, size_t len, struct vg_err *err);

#define VG_LIVE_RUNS_MAX 16
struct vg_live_run {
  int pid;           /* the vgpu run process */
  char path[4096];   /* its region file */
  char command[128]; /* what it runs, as typed after "--" */
};
struct vg_live_runs {
  int count; /* may exceed VG_LIVE_RUNS_MAX; the first ones are in run */
  struct vg_live_run run[VG_LIVE_RUNS_MAX];
};
/* The per-run regions whose vgpu run is alive; stale ones are removed. */
void vg_runs_list(struct vg_live_runs *live);
/* The region vgpu status and vgpu set use: --cache, else
 * $CUDA_DEVICE_MEMORY_SHARED_CACHE, else the one live run's, else the
 * default. 0 with the path in out, or 1 when several runs are live (in
 * live): the caller refuses with vg_runs_refuse. */
int vg_path_region_find(const char *option, char *out, size_t len, struct vg_live_runs *live);
/* The same for a verb: 0 with the path in out, or -1 after telling the
 * user on stderr which runs are live and to pass --cache. */
int vg_cli_region(const char *verb, const char *option, char *out, size_t len);

/* This container's grant (grant.h), where there is one: 1 with g and its
 * directory in dir, 0 when there is none (vgpu run, a plain host), -1 with
 * err when it cannot be read. */
int vg_cli_grant(struct vg_grant *g, char *dir, size_t len, struct vg_err *err);

/* The limits that apply under the grant (0: none), for what the CLI shows. */
uint64_t vg_cli_mem_limit(const struct vg_grant *g, const struct vg_region_device *d);
unsigned vg_cli_sm_limit(const struct vg_grant *g, const struct vg_region_device *d);

/* NVML opened at run time, for the utilisation vgpu status shows
 * (utilisation.c). ready is 0 when it could not be opened; why says so. */
struct vg_nvml {
  void *lib;
  int ready;
  char why[320];
  __typeof__(nvmlInit_v2) *init;
  __typeof__(nvmlShutdown) *shutdown;
  __typeof__(nvmlErrorString) *error_string;
  __typeof__(nvmlDeviceGetHandleByUUID) *by_uuid;
  __typeof__(nvmlDeviceGetUtilizationRates) *rates;
  __typeof__(nvmlDeviceGetProcessUtilization) *samples;
  __typeof__(nvmlDeviceGetComputeRunningProcesses_v3) *running;
};

/* library: a path, or NULL for libnvidia-ml.so.1 from the loader's search. */
int vg_nvml_open(struct vg_nvml *nv, const char *library);
void vg_nvml_close(struct vg_nvml *nv);

/* One device of a region as NVML measured it over the last few seconds. */
struct vg_util {
  int ok;                        /* 0: unavailable, see why */
  char why[400];                 /* why it is unavailable */
  double sm_pct;                 /* SM %, summed over the region's live processes */
  double others_pct;             /* SM % of the device's other processes */
  int gpu_pct;                   /* the whole device's utilisation; -1: unknown */
  double slot_pct[VG_MAX_PROCS]; /* per live slot; -1 for free or dead slots */
};

/* Fills u for device entry dev of the region in shm. */
void vg_util_measure(const struct vg_nvml *nv, const struct vg_shm *shm, int dev,
                     struct vg_util *u);

#endif
