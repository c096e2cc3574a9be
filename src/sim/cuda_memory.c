/*
 * cuda_memory.c -- the classic memory calls: cuMemAlloc, pitch, managed,
 * free, host memory, copies and sets, cuMemGetInfo.
 *
 * All device allocations go through cu_alloc (cuda_alloc.c) and so cost
 * round_up(size, 2 MiB) of the device. Managed memory counts as device memory
 * of the current context's device. Pitched allocations use a 512-byte pitch
 * (CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT). Host allocations are plain
 * host memory and cost the device nothing.
 *
 * Copies and sets are synchronous and ordered after the work already queued
 * in the context, like the driver's legacy default stream: they wait for the
 * context's timeline, then move the bytes (they take no simulated time
 * themselves). Their device range must lie inside one live allocation or an
 * accessible VMM mapping, else CUDA_ERROR_INVALID_VALUE.
 */
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"

#define PITCH_ALIGN 512

static pthread_mutex_t g_host_lock = PTHREAD_MUTEX_INITIALIZER;
static void **g_host;
static size_t g_nhost, g_caphost;

CUresult cuMemGetInfo_v2(size_t *free, size_t *total) {
  struct CUctx_st *ctx;
  CUresult rc = cu_current(&ctx);
  if (rc != CUDA_SUCCESS) return rc;
  if (free == NULL || total == NULL) return CUDA_ERROR_INVALID_VALUE;
  uint64_t used, all;
  vg_sim_mem_info(&g_cu.sim, ctx->phys, &used, &all);
  *total = (size_t)all;
  *free = (size_t)(used < all ? all - used : 0);
  return CUDA_SUCCESS;
}

CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize) {
  struct CUctx_st *ctx;
  CUresult rc = cu_current(&ctx);
  if (rc != CUDA_SUCCESS) return rc;
  if (dptr == NULL || bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
  return cu_alloc(ctx, ctx->phys, bytesize, dptr);
}

CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes, size_t Height,
                            unsigned int ElementSizeBytes) {
  struct CUctx_st *ctx;
  CUresult rc = cu_current(&ctx);
  if (rc != CUDA_SUCCESS) return rc;
  if (dptr == NULL || pPitch == NULL || WidthInBytes == 0 || Height == 0)
    return CUDA_ERROR_INVALID_VALUE;
  if (ElementSizeBytes != 4 && ElementSizeBytes != 8 && ElementSizeBytes != 16)
    return CUDA_ERROR_INVALID_VALUE;
  uint64_t pitch = cu_round_up(WidthInBytes, PITCH_ALIGN);
  if (Height > UINT64_MAX / pitch) return CUDA_ERROR_OUT_OF_MEMORY;
  if ((rc = cu_alloc(ctx, ctx->phys, pitch * Height, dptr)) != CUDA_SUCCESS) return rc;
  *pPitch = (size_t)pitch;
  return CUDA_SUCCESS;
}

CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags) {
  struct CUctx_st *ctx;
  CUresult rc = cu_current(&ctx);
  if (rc != CUDA_SUCCESS) return rc;
  if (dptr == NULL || bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
  if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST) return CUDA_ERROR_INVALID_VALUE;
  return cu_alloc(ctx, ctx->phys, bytesize, dptr);
}

CUresult cuMemFree_v2(CUdeviceptr dptr) {
  struct CUctx_st *ctx;
  CUresult rc = cu_current(&ctx);
  if (rc != CUDA_SUCCESS) return rc;
  return cu_free(dptr);
}

static bool host_add(void *p) {
  pthread_mutex_lock(&g_host_lock);
  if (g_nhost == g_caphost) {
    size_t cap = g_caphost == 0 ? 64 : g_caphost * 2;
    void **grown = realloc(g_host, cap * sizeof(*grown));
    if (grown == NULL) {
      pthread_mutex_unlock(&g_host_lock);
      return false;
    }
    g_host = grown;
    g_caphost = cap;
  }
  g_host[g_nhost++] = p;
  pthread_mutex_unlock(&g_host_lock);
  return true;
}

static bool host_remove(void *p) {
  pthread_mutex_lock(&g_host_lock);
  bool found = false;
  for (size_t i = 0; i < g_nhost && !found; i++) {
    if (g_host[i] != p) continue;
    g_host[i] = g_host[--g_nhost];
    found = true;
  }
  pthread_mutex_unlock(&g_host_lock);
  return found;
}

CUresult cuMemAllocHost_v2(void **pp, size_t bytesize) {
  struct CUctx_st *ctx;
  CUresult rc = cu_current(&ctx);
  if (rc != CUDA_SUCCESS) return rc;
  if (pp == NULL || bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
  void *p = NULL;
  if (posix_memalign(&p, 4096, bytesize) != 0) return CUDA_ERROR_OUT_OF_MEMORY;
  if (!host_add(p)) {
    free(p);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  *pp = p;
  return CUDA_SUCCESS;
}

CUresult cuMemFreeHost(void *p) {
  CUresult rc = cu_ready();
  if (rc != CUDA_SUCCESS) return rc;
  if (p == NULL || !host_remove(p)) return CUDA_ERROR_INVALID_VALUE;
  free(p);
  return CUDA_SUCCESS;
}

/* Common entry of copies and sets: a context, a valid device range, and the
 * context's queued work finished. */
static CUresult device_range(CUdeviceptr ptr, uint64_t n) {
  struct CUctx_st *ctx;
  CUresult rc = cu_current(&ctx);
  if (rc != CUDA_SUCCESS) return rc;
  if (n > 0 && !cu_range_ok(ptr, n)) return CUDA_ERROR_INVALID_VALUE;
  cu_wait_ctx(ctx);
  return CUDA_SUCCESS;
}

CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n) {
  CUresult rc = device_range(dst, n);
  if (rc != CUDA_SUCCESS) return rc;
  if (n == 0) return CUDA_SUCCESS;
  if (src == NULL) return CUDA_ERROR_INVALID_VALUE;
  memcpy((void *)(uintptr_t)dst, src, n);
  return CUDA_SUCCESS;
}

CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n) {
  CUresult rc = device_range(src, n);
  if (rc != CUDA_SUCCESS) return rc;
  if (n == 0) return CUDA_SUCCESS;
  if (dst == NULL) return CUDA_ERROR_INVALID_VALUE;
  memcpy(dst, (const void *)(uintptr_t)src, n);
  return CUDA_SUCCESS;
}

CUresult cuMemsetD8_v2(CUdeviceptr dst, unsigned char uc, size_t n) {
  CUresult rc = device_range(dst, n);
  if (rc != CUDA_SUCCESS) return rc;
  if (n > 0) memset((void *)(uintptr_t)dst, uc, n);
  return CUDA_SUCCESS;
}

CUresult cuMemsetD32_v2(CUdeviceptr dst, unsigned int ui, size_t n) {
  CUresult rc = cu_ready();
  if (rc != CUDA_SUCCESS) return rc;
  if (dst % 4 != 0 || n > SIZE_MAX / 4) return CUDA_ERROR_INVALID_VALUE;
  if ((rc = device_range(dst, (uint64_t)n * 4)) != CUDA_SUCCESS) return rc;
  uint32_t *p = (uint32_t *)(uintptr_t)dst;
  for (size_t i = 0; i < n; i++) p[i] = ui;
  return CUDA_SUCCESS;
}
