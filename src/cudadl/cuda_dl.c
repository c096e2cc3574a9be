/*
 * cuda_dl.c -- opening libcuda.so.1 at run time (see cuda_dl.h).
 */
#include "cuda_dl.h"

#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>

struct vg_cuda_dl vg_cu;

static void *g_handle;
static char g_path[PATH_MAX];

/* The loader's own name for the file (the directory it found it in), so
 * that a caller can tell NVIDIA's driver from the simulator's. */
static void remember_path(void *handle) {
  struct link_map *map = NULL;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) != 0 || map == NULL || map->l_name == NULL) return;
  if (realpath(map->l_name, g_path) == NULL) snprintf(g_path, sizeof(g_path), "%s", map->l_name);
}

/* Assigning through (void **) is the conversion POSIX's dlsym page gives for
 * function pointers. */
#define VG_CUDA_DL_RESOLVE(name) *(void **)(&vg_cu.name) = dlsym(g_handle, #name);
#define VG_CUDA_DL_CHECK(name) \
  if (vg_cu.name == NULL) return #name;

/* The first required entry point this driver lacks, or NULL. */
static const char *resolve(void) {
  VG_CUDA_DL_REQUIRED(VG_CUDA_DL_RESOLVE)
  VG_CUDA_DL_OPTIONAL(VG_CUDA_DL_RESOLVE)
  VG_CUDA_DL_REQUIRED(VG_CUDA_DL_CHECK)
  return NULL;
}
#undef VG_CUDA_DL_CHECK
#undef VG_CUDA_DL_RESOLVE

int vg_cuda_dl_open(const char *prog) {
  g_handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (g_handle == NULL) {
    fprintf(stderr,
            "%s: no NVIDIA driver found (libcuda.so.1 does not load: %s); on a machine without a "
            "GPU run it under 'vgpu run --sim'\n",
            prog, dlerror());
    return -1;
  }
  const char *missing = resolve();
  if (missing != NULL) {
    fprintf(stderr, "%s: this libcuda.so.1 lacks %s (driver too old?)\n", prog, missing);
    dlclose(g_handle);
    g_handle = NULL;
    return -1;
  }
  remember_path(g_handle);
  return 0;
}

const char *vg_cuda_dl_path(void) { return g_handle != NULL && g_path[0] != '\0' ? g_path : NULL; }
