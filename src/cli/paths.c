/* paths.c -- locating libvgpu.so, the simulator and the region file. */
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "region.h"

static int exe_dir(char *out, size_t len) {
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0) return -1;
  self[n] = '\0';
  char *slash = strrchr(self, '/');
  if (slash == NULL) return -1;
  *slash = '\0';
  snprintf(out, len, "%s", self);
  return 0;
}

/* $env if set (env may be NULL), else relative to the program's directory. */
static int find(const char *env, const char *relative, char *out, size_t len) {
  const char *v = env != NULL ? getenv(env) : NULL;
  if (v != NULL && *v != '\0') {
    snprintf(out, len, "%s", v);
    return access(out, R_OK) == 0 ? 0 : -1;
  }
  char dir[PATH_MAX];
  if (exe_dir(dir, sizeof(dir)) != 0) return -1;
  snprintf(out, len, "%s/%s", dir, relative);
  return access(out, R_OK) == 0 ? 0 : -1;
}

int vg_path_library(char *out, size_t len) {
  if (find("VGPU_LIBRARY", "../lib/libvgpu.so", out, len) == 0) return 0;
  snprintf(out, len, "/usr/local/lib/vgpu/libvgpu.so");
  return access(out, R_OK) == 0 ? 0 : -1;
}

/* dir holds the simulated driver (its libcuda.so.1). */
static bool has_sim(const char *dir) {
  char lib[PATH_MAX + 16];
  snprintf(lib, sizeof(lib), "%s/libcuda.so.1", dir);
  return access(lib, R_OK) == 0;
}

/* $VGPU_SIM_DIR, else next to the program: build/sim in the build tree,
 * PREFIX/lib/vgpu-sim where `make install` put it. */
int vg_path_sim_dir(char *out, size_t len) {
  if (getenv("VGPU_SIM_DIR") != NULL && *getenv("VGPU_SIM_DIR") != '\0')
    return find("VGPU_SIM_DIR", NULL, out, len) == 0 && has_sim(out) ? 0 : -1;
  if (find(NULL, "../sim", out, len) == 0 && has_sim(out)) return 0;
  return find(NULL, "../lib/vgpu-sim", out, len) == 0 && has_sim(out) ? 0 : -1;
}

int vg_path_sim_nvml(char *out, size_t len) {
  char dir[PATH_MAX];
  if (vg_path_sim_dir(dir, sizeof(dir)) != 0) return -1;
  snprintf(out, len, "%s/libnvidia-ml.so.1", dir);
  return 0;
}

const char *vg_path_region(const char *option) {
  if (option != NULL && *option != '\0') return option;
  const char *env = getenv("CUDA_DEVICE_MEMORY_SHARED_CACHE");
  return (env != NULL && *env != '\0') ? env : VG_DEFAULT_REGION_PATH;
}

int vg_cli_grant(struct vg_grant *g, char *dir, size_t len, struct vg_err *err) {
  memset(g, 0, sizeof(*g));
  if (!vg_grant_dir(dir, len)) return 0;
  int rc = vg_grant_load(dir, g, err);
  if (rc == 1) return vg_err_set(err, "the node agent has not written the grant in %s yet", dir);
  return rc < 0 ? -1 : 1;
}

uint64_t vg_cli_mem_limit(const struct vg_grant *g, const struct vg_region_device *d) {
  return vg_grant_memory(vg_grant_find(g, d->uuid), d->mem_limit);
}

unsigned vg_cli_sm_limit(const struct vg_grant *g, const struct vg_region_device *d) {
  return vg_grant_cores(vg_grant_find(g, d->uuid), d->sm_limit);
}
