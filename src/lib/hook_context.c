/*
 * hook_context.c -- contexts take their memory with them.
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
  CUresult rc = VG_CU(cuDevicePrimaryCtxRetain, pctx, dev);
  if (rc == CUDA_SUCCESS && pctx != NULL && dev >= 0 && dev < VG_MAX_DEVICES)
    __atomic_store_n(&g_primary[dev], *pctx, __ATOMIC_RELEASE);
  return rc;
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
