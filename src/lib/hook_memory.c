/*
 * hook_memory.c -- linear device memory: cuMemAlloc, pitch, managed, the
 * stream-ordered allocators and their frees.
 *
 * Each allocation reserves round_up(size, 2 MiB) -- the driver's page -- in
 * the container budget before the driver is called (charge.h), so the sum
 * of what containers are charged is never below what the driver hands out.
 * A free of a pointer we never saw goes to the driver untouched.
 */
#include <stdint.h>

#include "charge.h"
#include "hooks.h"
#include "log.h"
#include "state.h"

/* The common shape: reserve on dev, call, commit or cancel. */
#define VG_ALLOC_CALL(dev, size, dptr, call) VG_ALLOC_CALL_IN(dev, NULL, size, dptr, call)

/* As VG_ALLOC_CALL, the allocation belonging to context owner (NULL: the
 * current one), whose teardown refunds it. */
#define VG_ALLOC_CALL_IN(dev, owner, size, dptr, call)                             \
  do {                                                                             \
    if ((dptr) == NULL || (size) == 0) return (call);                              \
    struct vg_charge c;                                                            \
    enum vg_charge_rc cr = vg_charge_begin((dev), vg_charge_bytes(size), &c);      \
    if (vg_charge_error(cr) != CUDA_SUCCESS) return (CUresult)vg_charge_error(cr); \
    if ((owner) != NULL) c.ctx = (uint64_t)(uintptr_t)(owner);                     \
    CUresult rc = (call);                                                          \
    if (rc != CUDA_SUCCESS) {                                                      \
      vg_charge_cancel(&c);                                                        \
      return rc;                                                                   \
    }                                                                              \
    if (!vg_charge_commit(&c, VG_ALLOC_MEMORY, *(dptr))) {                         \
      VG_CU(cuMemFree_v2, *(dptr));                                                \
      return CUDA_ERROR_OUT_OF_MEMORY;                                             \
    }                                                                              \
    return rc;                                                                     \
  } while (0)

VG_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize) {
  VG_ENTER();
  VG_ALLOC_CALL(-1, bytesize, dptr, VG_CU(cuMemAlloc_v2, dptr, bytesize));
}

VG_EXPORT CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags) {
  VG_ENTER();
  if (vg_state_ready() && vg_state.cfg.refuse_managed) {
    vg_warn(
        "cuMemAllocManaged refused: VGPU_MANAGED_MEMORY=refuse (isolation cannot bound "
        "unified memory)");
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  VG_ALLOC_CALL(-1, bytesize, dptr, VG_CU(cuMemAllocManaged, dptr, bytesize, flags));
}

/* The driver picks the pitch, so reserve with the usual 512-byte alignment
 * and settle on what it chose. */
VG_EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes,
                                      size_t Height, unsigned int ElementSizeBytes) {
  VG_ENTER();
  if (dptr == NULL || pPitch == NULL || WidthInBytes == 0 || Height == 0 ||
      WidthInBytes > SIZE_MAX / Height)
    return VG_CU(cuMemAllocPitch_v2, dptr, pPitch, WidthInBytes, Height, ElementSizeBytes);
  struct vg_charge c;
  uint64_t guess = ((WidthInBytes + 511) & ~(size_t)511) * (uint64_t)Height;
  enum vg_charge_rc cr = vg_charge_begin(-1, vg_charge_bytes(guess), &c);
  if (vg_charge_error(cr) != CUDA_SUCCESS) return (CUresult)vg_charge_error(cr);
  CUresult rc = VG_CU(cuMemAllocPitch_v2, dptr, pPitch, WidthInBytes, Height, ElementSizeBytes);
  if (rc != CUDA_SUCCESS) {
    vg_charge_cancel(&c);
    return rc;
  }
  if (!vg_charge_resize(&c, vg_charge_bytes((uint64_t)*pPitch * Height)) ||
      !vg_charge_commit(&c, VG_ALLOC_MEMORY, *dptr)) {
    VG_CU(cuMemFree_v2, *dptr);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  return rc;
}

VG_EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr) {
  VG_ENTER();
  struct vg_charge c;
  bool ours = vg_charge_take(VG_ALLOC_MEMORY, dptr, &c);
  CUresult rc = VG_CU(cuMemFree_v2, dptr);
  if (!ours) return rc;
  if (rc == CUDA_SUCCESS)
    vg_charge_refund(&c);
  else
    vg_charge_restore(&c, VG_ALLOC_MEMORY, dptr);
  return rc;
}

/* Pools: remember which device (region entry) each pool allocates on; a
 * pool in host memory (-1) is not charged. */
static int pool_device(CUmemoryPool pool) {
  struct vg_alloc a;
  if (pool != NULL && vg_alloc_get(VG_ALLOC_POOL, (uint64_t)(uintptr_t)pool, &a)) return a.dev;
  return -2; /* unknown pool: charge the current device */
}

static void remember_pool(CUmemoryPool pool, int dev) {
  struct vg_alloc old;
  vg_alloc_put(VG_ALLOC_POOL, (uint64_t)(uintptr_t)pool, (struct vg_alloc){.dev = dev}, &old);
}

VG_EXPORT CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *props) {
  VG_ENTER();
  CUresult rc = VG_CU(cuMemPoolCreate, pool, props);
  if (rc == CUDA_SUCCESS && props != NULL) {
    bool device = props->location.type == CU_MEM_LOCATION_TYPE_DEVICE;
    int dev = device ? vg_state_device(props->location.id) : -1;
    remember_pool(*pool, device && dev < 0 ? -2 : dev); /* -2: charge where it is used */
  }
  return rc;
}

VG_EXPORT CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *pool, CUdevice dev) {
  VG_ENTER();
  CUresult rc = VG_CU(cuDeviceGetDefaultMemPool, pool, dev);
  if (rc == CUDA_SUCCESS) {
    int entry = vg_state_device((int)dev);
    remember_pool(*pool, entry < 0 ? -2 : entry);
  }
  return rc;
}

VG_EXPORT CUresult cuMemPoolDestroy(CUmemoryPool pool) {
  VG_ENTER();
  struct vg_alloc a;
  vg_alloc_take(VG_ALLOC_POOL, (uint64_t)(uintptr_t)pool, &a);
  return VG_CU(cuMemPoolDestroy, pool);
}

/* Where a stream-ordered allocation on stream h lands: the device of the
 * stream's context, which need not be the current one (a program may make
 * GPU 0 current and allocate on a stream of GPU 1). Sets *owner to that
 * context and returns its region entry; -1 (owner NULL) for the current
 * context: the default streams, the current context's own streams, or a
 * driver that cannot say; -2 when its device cannot be accounted. */
static int stream_entry(CUstream h, CUcontext *owner) {
  *owner = NULL;
  if (h == NULL || h == CU_STREAM_LEGACY || h == CU_STREAM_PER_THREAD) return -1;
  CUcontext sctx = NULL, cur = NULL, popped;
  if (VG_CU(cuStreamGetCtx, h, &sctx) != CUDA_SUCCESS || sctx == NULL) return -1;
  if (VG_CU(cuCtxGetCurrent, &cur) == CUDA_SUCCESS && cur == sctx) return -1;
  CUdevice ordinal;
  if (VG_CU(cuCtxPushCurrent_v2, sctx) != CUDA_SUCCESS) return -1;
  CUresult rc = VG_CU(cuCtxGetDevice, &ordinal);
  VG_CU(cuCtxPopCurrent_v2, &popped);
  if (rc != CUDA_SUCCESS) return -1;
  int entry = vg_state_device((int)ordinal);
  if (entry < 0) {
    vg_error("CUDA device %d cannot be accounted in region file %s; refusing the allocation",
             (int)ordinal, vg_state.shm.path);
    return -2;
  }
  *owner = sctx;
  return entry;
}

/* Stream-ordered allocations are charged while live, to the stream's device:
 * from the alloc call to the free call. Memory a pool keeps cached after a
 * free is not charged (see docs/memory.md). */
#define VG_ASYNC_ALLOC(fn, dptr, size, stream)                    \
  VG_ENTER();                                                     \
  CUcontext owner = NULL;                                         \
  int dev = vg_state_ready() ? stream_entry(stream, &owner) : -1; \
  if (dev == -2) return CUDA_ERROR_OUT_OF_MEMORY;                 \
  VG_ALLOC_CALL_IN(dev, owner, size, dptr, VG_CU(fn, dptr, size, stream))

/* A pool's allocations land on the pool's device; a pool libvgpu did not see
 * created (-2) on the stream's device, as above. */
#define VG_POOL_ALLOC(fn, dptr, size, pool, stream)                                \
  VG_ENTER();                                                                      \
  CUcontext owner = NULL;                                                          \
  int dev = pool_device(pool);                                                     \
  if (dev == -1) return VG_CU(fn, dptr, size, pool, stream);                       \
  if (dev == -2 && vg_state_ready() && (dev = stream_entry(stream, &owner)) == -2) \
    return CUDA_ERROR_OUT_OF_MEMORY;                                               \
  VG_ALLOC_CALL_IN(dev < 0 ? -1 : dev, owner, size, dptr, VG_CU(fn, dptr, size, pool, stream))

#define VG_ASYNC_FREE(fn, dptr, stream) \
  VG_ENTER();                           \
  VG_FREE_AND_REFUND(VG_ALLOC_MEMORY, dptr, VG_CU(fn, dptr, stream))

VG_EXPORT CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream) {
  VG_ASYNC_ALLOC(cuMemAllocAsync, dptr, bytesize, hStream);
}

VG_EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream) {
  VG_ASYNC_ALLOC(cuMemAllocAsync_ptsz, dptr, bytesize, hStream);
}

VG_EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                           CUstream hStream) {
  VG_POOL_ALLOC(cuMemAllocFromPoolAsync, dptr, bytesize, pool, hStream);
}

VG_EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize,
                                                CUmemoryPool pool, CUstream hStream) {
  VG_POOL_ALLOC(cuMemAllocFromPoolAsync_ptsz, dptr, bytesize, pool, hStream);
}

VG_EXPORT CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream) {
  VG_ASYNC_FREE(cuMemFreeAsync, dptr, hStream);
}

VG_EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream) {
  VG_ASYNC_FREE(cuMemFreeAsync_ptsz, dptr, hStream);
}
