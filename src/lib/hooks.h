/*
 * hooks.h -- which driver entry points libvgpu interposes, and the table of
 * the real ones.
 *
 * One X-macro list names every exported symbol we replace. From it come the
 * table of real driver functions (filled from libcuda.so.1 / libnvidia-ml.so.1
 * with the real dlsym) and the name -> hook map that the dlsym and
 * cuGetProcAddress paths use to hand programs our functions instead of the
 * driver's. A hook is always the exact exported variant it replaces
 * (cuMemAlloc_v2, cuMemAllocAsync_ptsz), so the ABI the caller asked for is
 * the ABI it gets.
 */
#ifndef VG_HOOKS_H
#define VG_HOOKS_H

#include <stdbool.h>

#include "cuda_abi.h"
#include "nvml_abi.h"

#define VG_EXPORT __attribute__((visibility("default")))

/* CUDA entry points we replace (exported by libvgpu.so). */
#define VG_CUDA_HOOKS(X)            \
  X(cuArray3DCreate_v2)             \
  X(cuArrayCreate_v2)               \
  X(cuArrayDestroy)                 \
  X(cuCtxCreate_v2)                 \
  X(cuCtxCreate_v3)                 \
  X(cuCtxCreate_v4)                 \
  X(cuCtxDestroy_v2)                \
  X(cuCtxSynchronize)               \
  X(cuDeviceGetDefaultMemPool)      \
  X(cuDeviceGetMemPool)             \
  X(cuDevicePrimaryCtxRelease_v2)   \
  X(cuDevicePrimaryCtxReset_v2)     \
  X(cuDevicePrimaryCtxRetain)       \
  X(cuDeviceTotalMem_v2)            \
  X(cuEventSynchronize)             \
  X(cuGetProcAddress)               \
  X(cuGetProcAddress_v2)            \
  X(cuGraphLaunch)                  \
  X(cuGraphLaunch_ptsz)             \
  X(cuInit)                         \
  X(cuLaunchCooperativeKernel)      \
  X(cuLaunchCooperativeKernel_ptsz) \
  X(cuLaunchKernel)                 \
  X(cuLaunchKernelEx)               \
  X(cuLaunchKernelEx_ptsz)          \
  X(cuLaunchKernel_ptsz)            \
  X(cuMemAllocAsync)                \
  X(cuMemAllocAsync_ptsz)           \
  X(cuMemAllocFromPoolAsync)        \
  X(cuMemAllocFromPoolAsync_ptsz)   \
  X(cuMemAllocManaged)              \
  X(cuMemAllocPitch_v2)             \
  X(cuMemAlloc_v2)                  \
  X(cuMemCreate)                    \
  X(cuMemFreeAsync)                 \
  X(cuMemFreeAsync_ptsz)            \
  X(cuMemFree_v2)                   \
  X(cuMemGetInfo_v2)                \
  X(cuMemMap)                       \
  X(cuMemPoolCreate)                \
  X(cuMemPoolDestroy)               \
  X(cuMemPoolTrimTo)                \
  X(cuMemRelease)                   \
  X(cuMemRetainAllocationHandle)    \
  X(cuMemUnmap)                     \
  X(cuMipmappedArrayCreate)         \
  X(cuMipmappedArrayDestroy)        \
  X(cuStreamSynchronize)            \
  X(cuStreamSynchronize_ptsz)

/* CUDA entry points we only call. */
#define VG_CUDA_USED(X)         \
  X(cuCtxGetCurrent)            \
  X(cuCtxGetDevice)             \
  X(cuCtxPopCurrent_v2)         \
  X(cuCtxPushCurrent_v2)        \
  X(cuStreamGetCtx)             \
  X(cuMemPoolGetAttribute)      \
  X(cuDevicePrimaryCtxGetState) \
  X(cuDeviceGetCount)           \
  X(cuDeviceGetUuid)            \
  X(cuDeviceGetUuid_v2)         \
  X(cuEventCreate)              \
  X(cuEventDestroy_v2)          \
  X(cuEventElapsedTime)         \
  X(cuEventQuery)               \
  X(cuEventRecord)              \
  X(cuEventRecord_ptsz)         \
  X(cuStreamIsCapturing)        \
  X(cuStreamIsCapturing_ptsz)   \
  X(cuMemGetAllocationGranularity)

/* NVML entry points we replace, and those we only call. */
#define VG_NVML_HOOKS(X)                     \
  X(nvmlDeviceGetComputeRunningProcesses)    \
  X(nvmlDeviceGetComputeRunningProcesses_v2) \
  X(nvmlDeviceGetComputeRunningProcesses_v3) \
  X(nvmlDeviceGetCount)                      \
  X(nvmlDeviceGetCount_v2)                   \
  X(nvmlDeviceGetHandleByIndex)              \
  X(nvmlDeviceGetHandleByIndex_v2)           \
  X(nvmlDeviceGetHandleByPciBusId_v2)        \
  X(nvmlDeviceGetHandleByUUID)               \
  X(nvmlDeviceGetIndex)                      \
  X(nvmlDeviceGetMemoryInfo)                 \
  X(nvmlDeviceGetMemoryInfo_v2)

#define VG_NVML_USED(X)              \
  X(nvmlDeviceGetProcessUtilization) \
  X(nvmlDeviceGetUUID)               \
  X(nvmlDeviceGetUtilizationRates)   \
  X(nvmlInit_v2)

struct vg_real_cuda {
#define VG_FIELD(name) __typeof__(name) *name;
  VG_CUDA_HOOKS(VG_FIELD)
  VG_CUDA_USED(VG_FIELD)
};

struct vg_real_nvml {
  VG_NVML_HOOKS(VG_FIELD)
  VG_NVML_USED(VG_FIELD)
#undef VG_FIELD
};

extern struct vg_real_cuda vg_cuda;
extern struct vg_real_nvml vg_nvml;

/* Load the real libraries and fill the tables (once; thread-safe). Return
 * false if the library cannot be found. */
bool vg_cuda_load(void);
bool vg_nvml_load(void);

/* Our hook for the exported name, or NULL if we do not replace it. */
void *vg_hook_by_name(const char *name);
/* Our hook replacing the real driver function at address real, or NULL. */
void *vg_hook_by_real(const void *real);
/* For dlsym: our hook if sym is the driver's own export of name, else sym.
 * Never loads or waits for the driver (dlsym may run under the loader lock). */
void *vg_redirect_driver_symbol(const char *name, void *sym);

/* Calls the real function, or returns err_value when the driver lacks it. */
#define VG_REAL(table, name, err_value, ...) \
  ((table).name != NULL ? (table).name(__VA_ARGS__) : (err_value))
#define VG_CU(name, ...) VG_REAL(vg_cuda, name, CUDA_ERROR_NOT_FOUND, __VA_ARGS__)
#define VG_NV(name, ...) VG_REAL(vg_nvml, name, NVML_ERROR_UNINITIALIZED, __VA_ARGS__)

#endif
