/*
 * cli.h -- the vgpu command-line tool: one file per verb.
 *
 *   vgpu run [--sim] [--memory SIZE] [--cores PCT] [--devices LIST] [--cache PATH] -- CMD...
 *   vgpu status [--cache PATH] [--json]
 *   vgpu set [--cache PATH] [--memory SIZE] [--cores PCT] [--device N]
 *   vgpu smi
 */
#ifndef VG_CLI_H
#define VG_CLI_H

#include <stddef.h>

int vg_cmd_run(int argc, char **argv);
int vg_cmd_status(int argc, char **argv);
int vg_cmd_set(int argc, char **argv);
int vg_cmd_smi(int argc, char **argv);

/* Where the build products are, relative to this executable (or overridden
 * by VGPU_LIBRARY / VGPU_SIM_DIR). Return 0 and fill out, or -1. */
int vg_path_library(char *out, size_t len);
int vg_path_sim_dir(char *out, size_t len);
/* The region file: --cache, else $CUDA_DEVICE_MEMORY_SHARED_CACHE, else the default. */
const char *vg_path_region(const char *option);

#endif
