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
#include "pool.h"
#include "state.h"

/* The common shape: reserve on dev, call, commit or cancel. */
#define VG_ALLOC_CALL(dev, size, dptr, call)                                       \
  do {                                                                             \
    if ((dptr) == NULL || (size) == 0) return (call);                              \
    struct vg_charge c;                                                            \
    enum vg_charge_rc cr = vg_charge_begin((dev), vg_charge_bytes(size), &c);      \
    if (vg_charge_error(cr) != CUDA_SUCCESS) return (CUresult)vg_charge_error(cr); \
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

/* Frees device memory recorded under key: a pool's allocation under the
 * pool mutex, its charge moving to the pool's cache (pool.h). */
#define VG_MEMORY_FREE(key, call)                             \
  do {                                                        \
    struct vg_charge c_;                                      \
    bool ours_ = vg_charge_take(VG_ALLOC_MEMORY, (key), &c_); \
    if (ours_ && c_.pool != 0) vg_pool_lock();                \
    CUresult rc_ = (call);                                    \
    if (!ours_) return rc_;                                   \
    if (rc_ != CUDA_SUCCESS)                                  \
      vg_charge_restore(&c_, VG_ALLOC_MEMORY, (key));         \
    else if (c_.pool != 0)                                    \
      vg_pool_freed(&c_);                                     \
    else                                                      \
      vg_charge_refund(&c_);                                  \
    if (c_.pool != 0) vg_pool_unlock();                       \
    return rc_;                                               \
  } while (0)

VG_EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr) {
  VG_ENTER();
  VG_MEMORY_FREE(dptr, VG_CU(cuMemFree_v2, dptr));
}

/* Pools: which device (region entry) each pool allocates on; a pool in host
 * memory (-1) is not charged. A pool of a GPU outside the container's
 * assignment would put memory there from a stream of any device, so none is
 * handed out (created, default or current). */
VG_EXPORT CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *props) {
  VG_ENTER();
  bool device = props != NULL && props->location.type == CU_MEM_LOCATION_TYPE_DEVICE;
  if (device && vg_state_refuses(props->location.id)) return CUDA_ERROR_INVALID_DEVICE;
  CUresult rc = VG_CU(cuMemPoolCreate, pool, props);
  if (rc == CUDA_SUCCESS && props != NULL) {
    int dev = device ? vg_state_device(props->location.id) : -1;
    vg_pool_note(*pool, device && dev < 0 ? -2 : dev); /* -2: charge where it is used */
  }
  return rc;
}

VG_EXPORT CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *pool, CUdevice dev) {
  VG_ENTER();
  if (vg_state_refuses((int)dev)) return CUDA_ERROR_INVALID_DEVICE;
  CUresult rc = VG_CU(cuDeviceGetDefaultMemPool, pool, dev);
  if (rc == CUDA_SUCCESS) {
    int entry = vg_state_device((int)dev);
    vg_pool_note(*pool, entry < 0 ? -2 : entry);
  }
  return rc;
}

VG_EXPORT CUresult cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice dev) {
  VG_ENTER();
  if (vg_state_refuses((int)dev)) return CUDA_ERROR_INVALID_DEVICE;
  return VG_CU(cuDeviceGetMemPool, pool, dev);
}

VG_EXPORT CUresult cuMemPoolDestroy(CUmemoryPool pool) {
  VG_ENTER();
  CUresult rc = VG_CU(cuMemPoolDestroy, pool);
  if (rc == CUDA_SUCCESS) vg_pool_destroyed(pool);
  return rc;
}

/* The pool gives memory back: refund what it no longer reserves. */
VG_EXPORT CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep) {
  VG_ENTER();
  CUresult rc = VG_CU(cuMemPoolTrimTo, pool, minBytesToKeep);
  if (rc == CUDA_SUCCESS) vg_pool_resync();
  return rc;
}

/* Synchronisation is where a pool releases memory above its threshold. */
#define VG_SYNC(call)                       \
  VG_ENTER();                               \
  CUresult rc = (call);                     \
  if (rc == CUDA_SUCCESS) vg_pool_resync(); \
  return rc

VG_EXPORT CUresult cuCtxSynchronize(void) { VG_SYNC(VG_CU(cuCtxSynchronize)); }

VG_EXPORT CUresult cuStreamSynchronize(CUstream hStream) {
  VG_SYNC(VG_CU(cuStreamSynchronize, hStream));
}

VG_EXPORT CUresult cuStreamSynchronize_ptsz(CUstream hStream) {
  VG_SYNC(VG_CU(cuStreamSynchronize_ptsz, hStream));
}

VG_EXPORT CUresult cuEventSynchronize(CUevent hEvent) {
  VG_SYNC(VG_CU(cuEventSynchronize, hEvent));
}

/* Where a stream-ordered allocation on stream h lands: the device of the
 * stream's context, which need not be the current one (a program may make
 * GPU 0 current and allocate on a stream of GPU 1). Sets *owner to that
 * context and *ordinal to its device, and returns its region entry; -1
 * (owner NULL) for the current context: the default streams, the current
 * context's own streams, or a driver that cannot say; -2 when its device
 * cannot be accounted; VG_STATE_NOT_ASSIGNED when it is not the container's. */
static int stream_entry(CUstream h, CUcontext *owner, CUdevice *ordinal_out) {
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
  if (entry == VG_STATE_NOT_ASSIGNED) return entry;
  if (entry < 0) {
    vg_error("CUDA device %d cannot be accounted in region file %s; refusing the allocation",
             (int)ordinal, vg_state.shm.path);
    return -2;
  }
  *owner = sctx;
  *ordinal_out = ordinal;
  return entry;
}

/* The pool path: reserve (first taking over what the pool's cache is
 * already charged for), call, commit or cancel -- under the pool mutex. */
#define VG_POOLED_CALL(pool, dev, owner, size, dptr, call)                          \
  do {                                                                              \
    if ((dptr) == NULL || (size) == 0) return (call);                               \
    struct vg_charge c;                                                             \
    enum vg_charge_rc cr = vg_pool_begin((pool), (dev), vg_charge_bytes(size), &c); \
    if (vg_charge_error(cr) != CUDA_SUCCESS) {                                      \
      vg_pool_cancel(&c);                                                           \
      return (CUresult)vg_charge_error(cr);                                         \
    }                                                                               \
    CUresult rc = (call);                                                           \
    if (rc != CUDA_SUCCESS) {                                                       \
      vg_pool_cancel(&c);                                                           \
      return rc;                                                                    \
    }                                                                               \
    if (!vg_pool_commit(&c, (uint64_t)(uintptr_t)(owner), *(dptr))) {               \
      VG_CU(cuMemFree_v2, *(dptr));                                                 \
      return CUDA_ERROR_OUT_OF_MEMORY;                                              \
    }                                                                               \
    return rc;                                                                      \
  } while (0)

/* The pool cuMemAllocAsync draws from: the device's current pool
 * (cuDeviceSetMemPool), its default pool unless changed. */
static CUmemoryPool current_pool(CUdevice ordinal) {
  CUmemoryPool pool = NULL;
  if (ordinal < 0) return NULL;
  if (VG_CU(cuDeviceGetMemPool, &pool, ordinal) == CUDA_SUCCESS) return pool;
  if (VG_CU(cuDeviceGetDefaultMemPool, &pool, ordinal) == CUDA_SUCCESS) return pool;
  return NULL;
}

/* Where the current context allocates: its region entry (-1 when none or
 * not accountable: vg_charge_begin then says which; VG_STATE_NOT_ASSIGNED),
 * and its ordinal. */
static int current_entry(CUdevice *ordinal) {
  *ordinal = -1;
  if (!vg_state_ready() || VG_CU(cuCtxGetDevice, ordinal) != CUDA_SUCCESS) {
    *ordinal = -1;
    return -1;
  }
  return vg_state_device((int)*ordinal);
}

/* Stream-ordered allocations are charged to the stream's device, each from
 * its alloc call to its free call, and the pool they come from is charged
 * for the memory it keeps beyond them (pool.h). */
#define VG_ASYNC_ALLOC(fn, dptr, size, stream)                              \
  VG_ENTER();                                                               \
  CUcontext owner = NULL;                                                   \
  CUdevice ordinal = -1;                                                    \
  int dev = vg_state_ready() ? stream_entry(stream, &owner, &ordinal) : -1; \
  if (dev == -2) return CUDA_ERROR_OUT_OF_MEMORY;                           \
  if (dev == -1) dev = current_entry(&ordinal);                             \
  if (dev == VG_STATE_NOT_ASSIGNED) return CUDA_ERROR_INVALID_DEVICE;       \
  VG_POOLED_CALL(current_pool(ordinal), dev, owner, size, dptr, VG_CU(fn, dptr, size, stream))

/* A pool's allocations land on the pool's device; a pool libvgpu did not see
 * created (-2) on the stream's device, as above. */
#define VG_POOL_ALLOC(fn, dptr, size, pool, stream)                                          \
  VG_ENTER();                                                                                \
  CUcontext owner = NULL;                                                                    \
  CUdevice ordinal = -1;                                                                     \
  int dev = vg_pool_device(pool);                                                            \
  if (dev == -1) return VG_CU(fn, dptr, size, pool, stream);                                 \
  if (dev == -2 && vg_state_ready() && (dev = stream_entry(stream, &owner, &ordinal)) == -2) \
    return CUDA_ERROR_OUT_OF_MEMORY;                                                         \
  if (dev == VG_STATE_NOT_ASSIGNED) return CUDA_ERROR_INVALID_DEVICE;                        \
  if (dev < 0) dev = current_entry(&ordinal);                                                \
  if (dev == VG_STATE_NOT_ASSIGNED) return CUDA_ERROR_INVALID_DEVICE;                        \
  VG_POOLED_CALL(pool, dev, owner, size, dptr, VG_CU(fn, dptr, size, pool, stream))

#define VG_ASYNC_FREE(fn, dptr, stream) \
  VG_ENTER();                           \
  VG_MEMORY_FREE(dptr, VG_CU(fn, dptr, stream))

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
