/*
 * hook_nvml.c -- the NVML view inside a container.
 *
 * nvidia-smi and monitoring agents read memory through NVML, not CUDA. For a
 * GPU with a container limit we report the same numbers cuMemGetInfo does:
 * total = limit, used = what the container's processes are charged, free =
 * the rest (never negative; never more than is physically free). Without a
 * limit the total is the whole GPU's, but used is still the container's own
 * charge: a neighbour's memory is not the tenant's business, any more than
 * its processes are (a `vgpu run` without --memory, a pod with only a
 * compute share). The GPU is
 * matched to the region by UUID, so NVML indices and CUDA ordinals may
 * differ without mixing up devices. A GPU outside the node agent's
 * assignment is not listed at all (hook_nvml_devices.c); a handle to one
 * obtained another way is refused here as an invalid argument. The
 * processes on a GPU are the container's own (hook_nvml_procs.c).
 */
#include <string.h>

#include "hooks.h"
#include "state.h"

/* Region entry for an NVML device, VG_STATE_NOT_ASSIGNED, or -1 when there
 * is nothing to change. */
static int entry_for(nvmlDevice_t device, unsigned long long total) {
  char uuid[VG_UUID_LEN];
  unsigned index = 0;
  if (VG_NV(nvmlDeviceGetUUID, device, uuid, sizeof(uuid)) != NVML_SUCCESS) return -1;
  if (VG_NV(nvmlDeviceGetIndex, device, &index) != NVML_SUCCESS) return -1;
  return vg_state_device_by_uuid(uuid, total, (int)index);
}

/* Rewrites total/free/used for region entry dev: the container's view. */
static void virtual_view(int dev, unsigned long long *total, unsigned long long *free,
                         unsigned long long *used) {
  struct vg_region *r = vg_region_of(&vg_state.shm);
  uint64_t limit = vg_state_mem_limit(dev);
  uint64_t charged = vg_region_mem_used(r, dev);
  uint64_t size = limit != 0 && limit < *total ? limit : *total;
  uint64_t left = charged >= size ? 0 : size - charged;
  *free = left < *free ? left : *free;
  *used = charged;
  *total = size;
}

VG_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory) {
  if (!vg_nvml_load()) return NVML_ERROR_UNINITIALIZED;
  nvmlReturn_t rc = VG_NV(nvmlDeviceGetMemoryInfo, device, memory);
  if (rc != NVML_SUCCESS || memory == NULL) return rc;
  int dev = entry_for(device, memory->total);
  if (dev == VG_STATE_NOT_ASSIGNED) {
    memory->total = memory->free = memory->used = 0;
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  if (dev >= 0) virtual_view(dev, &memory->total, &memory->free, &memory->used);
  return rc;
}

VG_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t *memory) {
  if (!vg_nvml_load()) return NVML_ERROR_UNINITIALIZED;
  nvmlReturn_t rc = VG_NV(nvmlDeviceGetMemoryInfo_v2, device, memory);
  if (rc != NVML_SUCCESS || memory == NULL) return rc;
  int dev = entry_for(device, memory->total);
  if (dev == VG_STATE_NOT_ASSIGNED) {
    memory->total = memory->free = memory->used = memory->reserved = 0;
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  /* The slice has no driver-reserved part: total = free + used. */
  if (dev >= 0) {
    virtual_view(dev, &memory->total, &memory->free, &memory->used);
    memory->reserved = 0;
  }
  return rc;
}
