/*
 * hook_vmm.c -- virtual memory management: cuMemCreate and friends.
 *
 * Physical memory from cuMemCreate is charged when created, on the device in
 * prop->location (memory placed on the host is not charged). The driver
 * frees it only when the program holds no reference to the handle (created
 * once, plus each cuMemRetainAllocationHandle, minus each cuMemRelease) AND
 * no mapping of it is left (cuMemMap / cuMemUnmap). Releasing a handle right
 * after mapping it is the documented idiom, so the refund waits for both
 * counts to reach zero; refunding at cuMemRelease would let a program map
 * far more than its limit.
 */
#include <pthread.h>
#include <stdint.h>

#include "charge.h"
#include "hooks.h"
#include "log.h"
#include "state.h"

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

/* Adjusts a handle's counts; refunds and forgets it when both reach zero. */
static void handle_update(CUmemGenericAllocationHandle handle, int refs, int maps) {
  struct vg_alloc a, old;
  bool gone = false;
  pthread_mutex_lock(&g_lock);
  if (vg_alloc_take(VG_ALLOC_HANDLE, handle, &a)) {
    a.refs = (uint32_t)((int)a.refs + refs);
    a.maps = (uint32_t)((int)a.maps + maps);
    gone = a.refs == 0 && a.maps == 0;
    if (!gone) vg_alloc_put(VG_ALLOC_HANDLE, handle, a, &old);
  }
  pthread_mutex_unlock(&g_lock);
  if (gone && a.dev >= 0) vg_state_release(a.dev, a.bytes);
}

/* True when CUDA device id exists: a device we then cannot account for
 * must fail closed rather than be used unaccounted. */
static bool device_exists(int id) {
  int count = 0;
  return VG_CU(cuDeviceGetCount, &count) == CUDA_SUCCESS && id >= 0 && id < count;
}

VG_EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                               const CUmemAllocationProp *prop, unsigned long long flags) {
  VG_ENTER();
  if (handle == NULL || prop == NULL || size == 0 ||
      prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
    return VG_CU(cuMemCreate, handle, size, prop, flags);
  if (!vg_state_ready())
    return vg_state.config_ok ? VG_CU(cuMemCreate, handle, size, prop, flags)
                              : CUDA_ERROR_INVALID_VALUE;
  int dev = vg_state_device(prop->location.id);
  if (dev == VG_STATE_NOT_ASSIGNED) return CUDA_ERROR_INVALID_DEVICE;
  if (dev < 0) {
    if (!device_exists(prop->location.id)) return VG_CU(cuMemCreate, handle, size, prop, flags);
    vg_error("CUDA device %d cannot be accounted; refusing cuMemCreate", prop->location.id);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  struct vg_charge c;
  enum vg_charge_rc cr = vg_charge_begin(dev, vg_charge_bytes(size), &c);
  if (vg_charge_error(cr) != CUDA_SUCCESS) return (CUresult)vg_charge_error(cr);
  c.ctx = 0; /* physical VMM memory is not owned by a context */
  CUresult rc = VG_CU(cuMemCreate, handle, size, prop, flags);
  if (rc != CUDA_SUCCESS) {
    vg_charge_cancel(&c);
    return rc;
  }
  if (!vg_charge_commit(&c, VG_ALLOC_HANDLE, *handle)) {
    VG_CU(cuMemRelease, *handle);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  handle_update(*handle, 1, 0);
  return rc;
}

VG_EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
  VG_ENTER();
  CUresult rc = VG_CU(cuMemRelease, handle);
  if (rc == CUDA_SUCCESS) handle_update(handle, -1, 0);
  return rc;
}

VG_EXPORT CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *handle, void *addr) {
  VG_ENTER();
  CUresult rc = VG_CU(cuMemRetainAllocationHandle, handle, addr);
  if (rc == CUDA_SUCCESS && handle != NULL) handle_update(*handle, 1, 0);
  return rc;
}

VG_EXPORT CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                            CUmemGenericAllocationHandle handle, unsigned long long flags) {
  VG_ENTER();
  CUresult rc = VG_CU(cuMemMap, ptr, size, offset, handle, flags);
  struct vg_alloc a, old;
  if (rc != CUDA_SUCCESS || !vg_alloc_get(VG_ALLOC_HANDLE, handle, &a)) return rc;
  handle_update(handle, 0, 1);
  vg_alloc_put(VG_ALLOC_MAPPING, ptr, (struct vg_alloc){.dev = -1, .bytes = size, .link = handle},
               &old);
  return rc;
}

VG_EXPORT CUresult cuMemUnmap(CUdeviceptr ptr, size_t size) {
  VG_ENTER();
  CUresult rc = VG_CU(cuMemUnmap, ptr, size);
  if (rc != CUDA_SUCCESS) return rc;
  struct vg_alloc gone[32];
  int n;
  do {
    n = vg_alloc_take_range(VG_ALLOC_MAPPING, ptr, ptr + size, gone, 32);
    for (int i = 0; i < n; i++) handle_update(gone[i].link, 0, -1);
  } while (n == 32);
  return rc;
}
