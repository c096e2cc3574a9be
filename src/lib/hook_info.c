/*
 * hook_info.c -- what CUDA tells a program about memory, and cuInit.
 *
 * With a limit, a container sees a GPU whose size is its limit: total =
 * min(limit, physical) and free = what the container can still allocate,
 * min(limit - used, physically free), never negative and never an error
 * (HAMi's cuMemGetInfo fails when usage passes the limit, and callers such as
 * PyTorch then abort). Without a limit the driver's own values pass through.
 */
#include "hooks.h"
#include "log.h"
#include "state.h"

VG_EXPORT CUresult cuInit(unsigned int flags) {
  if (!vg_cuda_load()) return CUDA_ERROR_NOT_INITIALIZED;
  if (!vg_state_ready() && !vg_state.config_ok) return CUDA_ERROR_INVALID_VALUE;
  return VG_CU(cuInit, flags);
}

/* free/total as the container sees them on region entry dev. */
static void virtual_view(int dev, size_t *free, size_t *total) {
  struct vg_region *r = vg_region_of(&vg_state.shm);
  uint64_t limit = vg_state_mem_limit(dev);
  if (limit == 0) return;
  uint64_t used = vg_region_mem_used(r, dev);
  uint64_t size = limit < *total ? limit : *total;
  uint64_t left = used >= size ? 0 : size - used;
  *free = left < *free ? left : *free;
  *total = size;
}

VG_EXPORT CUresult cuMemGetInfo_v2(size_t *free, size_t *total) {
  if (!vg_cuda_load()) return CUDA_ERROR_NOT_INITIALIZED;
  CUresult rc = VG_CU(cuMemGetInfo_v2, free, total);
  if (rc != CUDA_SUCCESS || free == NULL || total == NULL) return rc;
  int dev = vg_state_current_device();
  if (dev >= 0) virtual_view(dev, free, total);
  return rc;
}

VG_EXPORT CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice device) {
  if (!vg_cuda_load()) return CUDA_ERROR_NOT_INITIALIZED;
  CUresult rc = VG_CU(cuDeviceTotalMem_v2, bytes, device);
  if (rc != CUDA_SUCCESS || bytes == NULL) return rc;
  int dev = vg_state_device((int)device);
  if (dev < 0) return rc;
  uint64_t limit = vg_state_mem_limit(dev);
  if (limit != 0 && limit < *bytes) *bytes = (size_t)limit;
  return rc;
}
