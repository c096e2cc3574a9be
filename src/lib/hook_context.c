/*
 * hook_context.c -- contexts: where they may be made, and that they take
 * their memory with them.
 *
 * Under the node agent a context on a GPU outside the container's assignment
 * is refused with CUDA_ERROR_INVALID_DEVICE -- what the driver says of a
 * device it does not have (state.h, docs/memory.md). Without a context
 * nothing can run or be allocated there; the allocation paths check too.
 *
 * Destroying a context (cuCtxDestroy, the last cuDevicePrimaryCtxRelease,
 * cuDevicePrimaryCtxReset -- what cudaDeviceReset does) frees every
 * allocation and array made in it, without a cuMemFree the program would
 * call. Each record in the allocation table remembers its context, so here
 * we refund exactly what died with it; otherwise a process that resets the
 * device and carries on would be charged twice for its new allocations.
 */
#include <stdint.h>

#include "charge.h"
#include "hooks.h"
#include "state.h"

/* Primary context handle per CUDA ordinal, learnt at retain. */
static CUcontext g_primary[VG_MAX_DEVICES];

static CUcontext primary_of(CUdevice dev) {
  if (dev < 0 || dev >= VG_MAX_DEVICES) return NULL;
  return __atomic_load_n(&g_primary[dev], __ATOMIC_ACQUIRE);
}

VG_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev) {
  VG_ENTER();
  if (vg_state_refuses((int)dev)) return CUDA_ERROR_INVALID_DEVICE;
  CUresult rc = VG_CU(cuDevicePrimaryCtxRetain, pctx, dev);
  if (rc == CUDA_SUCCESS && pctx != NULL && dev >= 0 && dev < VG_MAX_DEVICES)
    __atomic_store_n(&g_primary[dev], *pctx, __ATOMIC_RELEASE);
  return rc;
}

VG_EXPORT CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev) {
  VG_ENTER();
  if (vg_state_refuses((int)dev)) return CUDA_ERROR_INVALID_DEVICE;
  return VG_CU(cuCtxCreate_v2, pctx, flags, dev);
}

VG_EXPORT CUresult cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *paramsArray, int numParams,
                                  unsigned int flags, CUdevice dev) {
  VG_ENTER();
  if (vg_state_refuses((int)dev)) return CUDA_ERROR_INVALID_DEVICE;
  return VG_CU(cuCtxCreate_v3, pctx, paramsArray, numParams, flags, dev);
}

VG_EXPORT CUresult cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *params, unsigned int flags,
                                  CUdevice dev) {
  VG_ENTER();
  if (vg_state_refuses((int)dev)) return CUDA_ERROR_INVALID_DEVICE;
  return VG_CU(cuCtxCreate_v4, pctx, params, flags, dev);
}

VG_EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  VG_ENTER();
  CUresult rc = VG_CU(cuDevicePrimaryCtxRelease_v2, dev);
  unsigned flags = 0;
  int active = 1;
  if (rc == CUDA_SUCCESS && primary_of(dev) != NULL &&
      VG_CU(cuDevicePrimaryCtxGetState, dev, &flags, &active) == CUDA_SUCCESS && !active)
    vg_charge_context_gone((uint64_t)(uintptr_t)primary_of(dev));
  return rc;
}

VG_EXPORT CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev) {
  VG_ENTER();
  CUresult rc = VG_CU(cuDevicePrimaryCtxReset_v2, dev);
  if (rc == CUDA_SUCCESS && primary_of(dev) != NULL)
    vg_charge_context_gone((uint64_t)(uintptr_t)primary_of(dev));
  return rc;
}

VG_EXPORT CUresult cuCtxDestroy_v2(CUcontext ctx) {
  VG_ENTER();
  CUresult rc = VG_CU(cuCtxDestroy_v2, ctx);
  if (rc == CUDA_SUCCESS && ctx != NULL) vg_charge_context_gone((uint64_t)(uintptr_t)ctx);
  return rc;
}
