/*
 * cuda_dl.h -- the driver API, loaded with dlopen, for vgpu-burn and the
 * benchmarks.
 *
 * Linked with DT_NEEDED libcuda.so.1, these programs could not even print
 * --help on a machine without an NVIDIA driver: the dynamic loader stops them
 * first (exit 127). They therefore open libcuda.so.1 only after parsing their
 * command line, and call the driver through vg_cu, a table of the exact
 * (versioned) entry points they used to bind: cuMemAlloc_v2, not cuMemAlloc.
 *
 * The entry points are resolved with dlsym, which libvgpu.so interposes
 * (src/lib/dlsym.c): under LD_PRELOAD=libvgpu.so the table holds libvgpu's
 * hooks, so limits apply exactly as they did to the linked symbols.
 */
#ifndef VG_CUDA_DL_H
#define VG_CUDA_DL_H

#include "cuda_abi.h"

/* Every program needs these; a driver without one of them is refused. */
#define VG_CUDA_DL_REQUIRED(X)    \
  X(cuInit)                       \
  X(cuDriverGetVersion)           \
  X(cuGetErrorName)               \
  X(cuGetErrorString)             \
  X(cuDeviceGet)                  \
  X(cuDeviceGetCount)             \
  X(cuDeviceGetName)              \
  X(cuDeviceGetAttribute)         \
  X(cuDeviceTotalMem_v2)          \
  X(cuDevicePrimaryCtxRetain)     \
  X(cuDevicePrimaryCtxRelease_v2) \
  X(cuCtxSetCurrent)              \
  X(cuCtxGetDevice)               \
  X(cuCtxSynchronize)             \
  X(cuMemGetInfo_v2)              \
  X(cuMemAlloc_v2)                \
  X(cuMemFree_v2)                 \
  X(cuMemsetD8_v2)                \
  X(cuMemsetD32_v2)               \
  X(cuModuleLoadData)             \
  X(cuModuleGetFunction)          \
  X(cuModuleUnload)               \
  X(cuStreamCreate)               \
  X(cuStreamDestroy_v2)           \
  X(cuStreamSynchronize)          \
  X(cuEventCreate)                \
  X(cuEventRecord)                \
  X(cuEventSynchronize)           \
  X(cuEventElapsedTime)           \
  X(cuEventDestroy_v2)            \
  X(cuLaunchKernel)

/* Newer than some drivers still in use (CUDA 11.8): NULL when absent, and
 * only the program that calls it checks. */
#define VG_CUDA_DL_OPTIONAL(X) X(cuLaunchKernelEx)

#define VG_CUDA_DL_MEMBER(name) __typeof__(name) *name;
struct vg_cuda_dl {
  VG_CUDA_DL_REQUIRED(VG_CUDA_DL_MEMBER)
  VG_CUDA_DL_OPTIONAL(VG_CUDA_DL_MEMBER)
};
#undef VG_CUDA_DL_MEMBER

/* Filled by vg_cuda_dl_open; every call of the driver goes through it. */
extern struct vg_cuda_dl vg_cu;

/* Opens libcuda.so.1 and fills vg_cu. Returns 0, or -1 after printing
 * "PROG: no NVIDIA driver found (...)" (or the missing entry point) to
 * stderr. */
int vg_cuda_dl_open(const char *prog);

/* The file the loaded libcuda.so.1 came from (the loader's path for it, made
 * absolute), or NULL before vg_cuda_dl_open succeeded. */
const char *vg_cuda_dl_path(void);

#endif
