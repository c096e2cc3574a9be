/*
 * cuda_pool.c -- stream-ordered allocation: cuMemAllocAsync, memory pools.
 *
 * Simplification (documented in docs/simulator.md): stream ordering is not
 * modelled for memory. An asynchronous allocation takes device memory at the
 * call, exactly like cuMemAlloc, and cuMemFreeAsync gives it back at the
 * call; pools never keep freed memory cached (a real pool with the default
 * release threshold of 0 returns it at the next synchronisation). Each device
 * has one default pool; cuMemPoolCreate makes more. Pool pointers are
 * ordinary device pointers, so cuMemFree works on them too, as in CUDA.
 */
#include <stdlib.h>

#include "cuda_internal.h"

/* The device an async allocation on stream h lands on. */
static CUresult stream_device(CUstream h, struct CUctx_st **ctx) {
  struct CUstream_st *s;
  return cu_stream_resolve(h, &s, ctx);
}

CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream) {
  CUresult rc = cu_ready();
  if (rc != CUDA_SUCCESS) return rc;
  struct CUctx_st *ctx;
  if ((rc = stream_device(hStream, &ctx)) != CUDA_SUCCESS) return rc;
  if (dptr == NULL || bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
  return cu_alloc(ctx, ctx->phys, bytesize, dptr);
}

CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream) {
  return cuMemAllocAsync(dptr, bytesize, hStream);
}

CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                 CUstream hStream) {
  CUresult rc = cu_ready();
  if (rc != CUDA_SUCCESS) return rc;
  struct CUctx_st *ctx;
  if ((rc = stream_device(hStream, &ctx)) != CUDA_SUCCESS) return rc;
  if (dptr == NULL || bytesize == 0 || pool == NULL) return CUDA_ERROR_INVALID_VALUE;
  struct CUmemPoolHandle_st *p = cu_handle_get(pool, CU_OBJ_POOL);
  if (p == NULL) return CUDA_ERROR_INVALID_VALUE;
  return cu_alloc(ctx, p->phys, bytesize, dptr);
}

CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                      CUstream hStream) {
  return cuMemAllocFromPoolAsync(dptr, bytesize, pool, hStream);
}

CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream) {
  CUresult rc = cu_ready();
  if (rc != CUDA_SUCCESS) return rc;
  struct CUctx_st *ctx;
  if ((rc = stream_device(hStream, &ctx)) != CUDA_SUCCESS) return rc;
  return cu_free(dptr);
}

CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream) {
  return cuMemFreeAsync(dptr, hStream);
}

CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *props) {
  CUresult rc = cu_ready();
  if (rc != CUDA_SUCCESS) return rc;
  if (pool == NULL || props == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (props->allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
      props->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
    return CUDA_ERROR_INVALID_VALUE;
  unsigned phys;
  if (cu_device(props->location.id, &phys) != CUDA_SUCCESS) return CUDA_ERROR_INVALID_VALUE;
  struct CUmemPoolHandle_st *p = calloc(1, sizeof(*p));
  if (p == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  p->obj.kind = CU_OBJ_POOL;
  p->phys = phys;
  cu_handle_add(p);
  *pool = p;
  return CUDA_SUCCESS;
}

CUresult cuMemPoolDestroy(CUmemoryPool pool) {
  CUresult rc = cu_ready();
  if (rc != CUDA_SUCCESS) return rc;
  struct CUmemPoolHandle_st *p = cu_handle_get(pool, CU_OBJ_POOL);
  if (p == NULL || p->is_default) return CUDA_ERROR_INVALID_VALUE;
  if (cu_handle_take(p, CU_OBJ_POOL) == NULL) return CUDA_ERROR_INVALID_VALUE;
  free(p);
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *pool, CUdevice dev) {
  CUresult rc = cu_ready();
  if (rc != CUDA_SUCCESS) return rc;
  if (pool == NULL) return CUDA_ERROR_INVALID_VALUE;
  unsigned phys;
  if ((rc = cu_device(dev, &phys)) != CUDA_SUCCESS) return rc;
  *pool = &g_cu.default_pool[dev];
  return CUDA_SUCCESS;
}
