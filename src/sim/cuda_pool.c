/*
 * cuda_pool.c -- stream-ordered allocation: cuMemAllocAsync, memory pools.
 *
 * Each pool (one default pool per device, more from cuMemPoolCreate) keeps
 * memory like a real one: `reserved` bytes are charged to the device (so
 * NVML and cuMemGetInfo count them as used), `used` of them back live
 * allocations, and the rest is cached after cuMemFreeAsync and reused by the
 * pool's next allocations. The pool releases its cache down to its release
 * threshold (CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, 0 by default) at every
 * synchronisation (cuStreamSynchronize, cuCtxSynchronize,
 * cuEventSynchronize: cu_pools_sync) and on cuMemPoolTrimTo.
 *
 * Simplifications (docs/simulator.md): stream ordering is not modelled for
 * memory -- an allocation takes its bytes at the call, a free gives them
 * back at the call. With threshold 0 the cache is released at the free
 * itself (a real pool would at the next synchronisation), and cuMemFree of a
 * pool pointer releases down to the threshold at once (it synchronises).
 * Reuse is by bytes, not by blocks: an allocation takes what it can from the
 * cache and charges the device for the rest. Pool pointers are ordinary
 * device pointers, so cuMemFree works on them too, as in CUDA.
 */
#include <stdlib.h>

#include "cuda_internal.h"

/* Guards every pool's byte counts and the list of created pools. Never held
 * while taking the allocation table's lock (cuda_alloc.c holds that one
 * while returning bytes here). */
static pthread_mutex_t g_pool_lock = PTHREAD_MUTEX_INITIALIZER;
static struct CUmemPoolHandle_st *g_pools; /* cuMemPoolCreate'd, live or draining */

/* Releases cached bytes until reserved <= keep (never below used). Caller
 * holds g_pool_lock. */
static void trim_locked(struct CUmemPoolHandle_st *p, uint64_t keep) {
  uint64_t floor = keep > p->used ? keep : p->used;
  if (p->reserved <= floor) return;
  cu_refund(p->phys, p->reserved - floor);
  p->reserved = floor;
}

static void unlink_locked(struct CUmemPoolHandle_st *p) {
  for (struct CUmemPoolHandle_st **q = &g_pools; *q != NULL; q = &(*q)->next)
    if (*q == p) {
      *q = p->next;
      return;
    }
}

void cu_pool_return(struct CUmemPoolHandle_st *p, uint64_t bytes, bool keep) {
  pthread_mutex_lock(&g_pool_lock);
  p->used -= bytes;
  if (!keep || p->threshold == 0 || p->destroyed) trim_locked(p, p->destroyed ? 0 : p->threshold);
  bool gone = p->destroyed && p->used == 0;
  if (gone) unlink_locked(p);
  pthread_mutex_unlock(&g_pool_lock);
  if (gone) free(p);
}

void cu_pools_sync(void) {
  if (cu_ready() != CUDA_SUCCESS) return;
  pthread_mutex_lock(&g_pool_lock);
  for (int i = 0; i < g_cu.nvisible; i++)
    trim_locked(&g_cu.default_pool[i], g_cu.default_pool[i].threshold);
  for (struct CUmemPoolHandle_st *p = g_pools; p != NULL; p = p->next)
    trim_locked(p, p->destroyed ? 0 : p->threshold);
  pthread_mutex_unlock(&g_pool_lock);
}

/* Allocates from pool p: takes what the cache holds, charges the device for
 * the rest, then places the pointer. */
static CUresult pool_alloc(struct CUctx_st *ctx, struct CUmemPoolHandle_st *p, uint64_t size,
                           CUdeviceptr *dptr) {
  uint64_t bytes = cu_round_up(size, CU_GRANULE);
  pthread_mutex_lock(&g_pool_lock);
  uint64_t cached = p->reserved - p->used;
  uint64_t grow = bytes > cached ? bytes - cached : 0;
  CUresult rc = grow > 0 ? cu_charge(p->phys, grow) : CUDA_SUCCESS;
  if (rc == CUDA_SUCCESS) {
    p->reserved += grow;
    p->used += bytes;
    if (p->reserved > p->reserved_high) p->reserved_high = p->reserved;
    if (p->used > p->used_high) p->used_high = p->used;
  }
  pthread_mutex_unlock(&g_pool_lock);
  if (rc != CUDA_SUCCESS) return rc;
  rc = cu_alloc_pooled(ctx, p, size, dptr);
  if (rc != CUDA_SUCCESS) cu_pool_return(p, bytes, false);
  return rc;
}

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
  struct CUmemPoolHandle_st *p = g_cu.current_pool[ctx->ordinal];
  return pool_alloc(ctx, p != NULL ? p : &g_cu.default_pool[ctx->ordinal], bytesize, dptr);
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
  return pool_alloc(ctx, p, bytesize, dptr);
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
  return cu_free_to_pool(dptr, true);
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
  p->reuse[0] = p->reuse[1] = p->reuse[2] = 1;
  pthread_mutex_lock(&g_pool_lock);
  p->next = g_pools;
  g_pools = p;
  pthread_mutex_unlock(&g_pool_lock);
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
  /* A device's current pool falls back to its default pool. */
  for (int i = 0; i < g_cu.nvisible; i++)
    if (g_cu.current_pool[i] == p) g_cu.current_pool[i] = NULL;
  /* Outstanding allocations keep it alive until their free (as in CUDA). */
  pthread_mutex_lock(&g_pool_lock);
  p->destroyed = true;
  trim_locked(p, 0);
  bool gone = p->used == 0;
  if (gone) unlink_locked(p);
  pthread_mutex_unlock(&g_pool_lock);
  if (gone) free(p);
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

CUresult cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice dev) {
  CUresult rc = cu_ready();
  if (rc != CUDA_SUCCESS) return rc;
  if (pool == NULL) return CUDA_ERROR_INVALID_VALUE;
  unsigned phys;
  if ((rc = cu_device(dev, &phys)) != CUDA_SUCCESS) return rc;
  struct CUmemPoolHandle_st *p = g_cu.current_pool[dev];
  *pool = p != NULL ? p : &g_cu.default_pool[dev];
  return CUDA_SUCCESS;
}

CUresult cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool) {
  CUresult rc = cu_ready();
  if (rc != CUDA_SUCCESS) return rc;
  unsigned phys;
  if ((rc = cu_device(dev, &phys)) != CUDA_SUCCESS) return rc;
  struct CUmemPoolHandle_st *p = cu_handle_get(pool, CU_OBJ_POOL);
  if (p == NULL || p->phys != phys) return CUDA_ERROR_INVALID_VALUE;
  g_cu.current_pool[dev] = p->is_default ? NULL : p;
  return CUDA_SUCCESS;
}

/* The counters behind an attribute, or NULL for the REUSE flags. */
static uint64_t *counter(struct CUmemPoolHandle_st *p, CUmemPool_attribute attr) {
  switch (attr) {
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
      return &p->threshold;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT:
      return &p->reserved;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
      return &p->reserved_high;
    case CU_MEMPOOL_ATTR_USED_MEM_CURRENT:
      return &p->used;
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
      return &p->used_high;
    default:
      return NULL;
  }
}

static bool reuse_attr(CUmemPool_attribute attr) {
  return attr >= CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES &&
         attr <= CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES;
}

/* The pool behind handle h, after the checks every pool call makes. */
static CUresult pool_of(CUmemoryPool h, struct CUmemPoolHandle_st **p) {
  CUresult rc = cu_ready();
  if (rc != CUDA_SUCCESS) return rc;
  *p = cu_handle_get(h, CU_OBJ_POOL);
  return *p != NULL ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

static CUresult get_locked(struct CUmemPoolHandle_st *p, CUmemPool_attribute attr, void *value) {
  uint64_t *c = counter(p, attr);
  if (c != NULL)
    *(uint64_t *)value = *c;
  else if (reuse_attr(attr))
    *(int *)value = p->reuse[attr - 1];
  else
    return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

/* As in CUDA: the threshold and the REUSE flags may be set; the high
 * watermarks only reset (to 0, which makes them the current value). */
static CUresult set_locked(struct CUmemPoolHandle_st *p, CUmemPool_attribute attr,
                           const void *value) {
  if (reuse_attr(attr)) {
    p->reuse[attr - 1] = *(const int *)value != 0;
    return CUDA_SUCCESS;
  }
  uint64_t v = *(const uint64_t *)value;
  if (attr == CU_MEMPOOL_ATTR_RELEASE_THRESHOLD)
    p->threshold = v;
  else if (attr == CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH && v == 0)
    p->reserved_high = p->reserved;
  else if (attr == CU_MEMPOOL_ATTR_USED_MEM_HIGH && v == 0)
    p->used_high = p->used;
  else
    return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

CUresult cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value) {
  struct CUmemPoolHandle_st *p;
  CUresult rc = pool_of(pool, &p);
  if (rc != CUDA_SUCCESS || value == NULL)
    return rc != CUDA_SUCCESS ? rc : CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&g_pool_lock);
  rc = get_locked(p, attr, value);
  pthread_mutex_unlock(&g_pool_lock);
  return rc;
}

CUresult cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value) {
  struct CUmemPoolHandle_st *p;
  CUresult rc = pool_of(pool, &p);
  if (rc != CUDA_SUCCESS || value == NULL)
    return rc != CUDA_SUCCESS ? rc : CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&g_pool_lock);
  rc = set_locked(p, attr, value);
  pthread_mutex_unlock(&g_pool_lock);
  return rc;
}

CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep) {
  struct CUmemPoolHandle_st *p;
  CUresult rc = pool_of(pool, &p);
  if (rc != CUDA_SUCCESS) return rc;
  pthread_mutex_lock(&g_pool_lock);
  trim_locked(p, minBytesToKeep);
  pthread_mutex_unlock(&g_pool_lock);
  return CUDA_SUCCESS;
}
