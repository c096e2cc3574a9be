/*
 * cuda_context.c -- primary and created contexts, and each thread's context
 * stack.
 *
 * Every device has one primary context per process, reference counted by
 * cuDevicePrimaryCtxRetain/Release; cuCtxCreate makes additional ones. A
 * context costs VGPU_SIM_CONTEXT_MEM of device memory (as a real context
 * costs a few hundred MiB), charged to the process when it becomes active and
 * given back when it is destroyed, released to zero or reset -- together with
 * every allocation, stream, event, module and array made in it, as the real
 * driver tears a context down.
 *
 * Created contexts are never freed, only marked destroyed, so a stale handle
 * still on some thread's stack is reported as CUDA_ERROR_CONTEXT_IS_DESTROYED
 * instead of being read after free.
 */
#include <stdlib.h>

#include "cuda_internal.h"

#define STACK_MAX 128

static pthread_mutex_t g_ctx_lock = PTHREAD_MUTEX_INITIALIZER;
static __thread struct CUctx_st *t_stack[STACK_MAX];
static __thread int t_depth;

CUresult cu_ctx_check(struct CUctx_st *ctx) {
  struct CUctx_st *c = cu_handle_get(ctx, CU_OBJ_CTX);
  if (c == NULL) return CUDA_ERROR_INVALID_CONTEXT;
  if (c->destroyed) return CUDA_ERROR_CONTEXT_IS_DESTROYED;
  if (c->primary && !__atomic_load_n(&c->active, __ATOMIC_ACQUIRE))
    return CUDA_ERROR_INVALID_CONTEXT;
  return CUDA_SUCCESS;
}

CUresult cu_current(struct CUctx_st **ctx) {
  CUresult rc = cu_ready();
  if (rc != CUDA_SUCCESS) return rc;
  if (t_depth == 0) return CUDA_ERROR_INVALID_CONTEXT;
  if ((rc = cu_ctx_check(t_stack[t_depth - 1])) != CUDA_SUCCESS) return rc;
  *ctx = t_stack[t_depth - 1];
  return CUDA_SUCCESS;
}

void cu_ctx_note_work(struct CUctx_st *ctx, uint64_t end) {
  uint64_t cur = __atomic_load_n(&ctx->last_end, __ATOMIC_RELAXED);
  while (cur < end && !__atomic_compare_exchange_n(&ctx->last_end, &cur, end, true,
                                                   __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
}

void cu_wait_ctx(struct CUctx_st *ctx) {
  uint64_t end = __atomic_load_n(&ctx->last_end, __ATOMIC_RELAXED);
  cu_wait_until(end);
}

/* Charges the context's memory; false if the device is full. */
static bool activate(struct CUctx_st *ctx) {
  uint64_t mem = g_cu.sim.st->config.context_mem;
  if (mem > 0 && !vg_sim_charge(&g_cu.sim, ctx->phys, mem)) return false;
  ctx->mem = mem;
  ctx->last_end = 0;
  vg_sim_context_count(&g_cu.sim, ctx->phys, 1);
  __atomic_store_n(&ctx->active, true, __ATOMIC_RELEASE);
  return true;
}

static void teardown(struct CUctx_st *ctx) {
  __atomic_store_n(&ctx->active, false, __ATOMIC_RELEASE);
  cu_handles_of_ctx(ctx, cu_destroy_owned);
  cu_free_ctx_allocs(ctx);
  if (ctx->mem > 0) vg_sim_refund(&g_cu.sim, ctx->phys, ctx->mem);
  ctx->mem = 0;
  vg_sim_context_count(&g_cu.sim, ctx->phys, -1);
}

static void stack_remove(struct CUctx_st *ctx) {
  int out = 0;
  for (int i = 0; i < t_depth; i++)
    if (t_stack[i] != ctx) t_stack[out++] = t_stack[i];
  t_depth = out;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev) {
  CUresult rc = cu_ready();
  if (rc != CUDA_SUCCESS) return rc;
  if (pctx == NULL) return CUDA_ERROR_INVALID_VALUE;
  unsigned phys;
  if ((rc = cu_device(dev, &phys)) != CUDA_SUCCESS) return rc;
  struct CUctx_st *p = &g_cu.primary[dev];
  pthread_mutex_lock(&g_ctx_lock);
  if (p->refcount == 0 && !activate(p)) rc = CUDA_ERROR_OUT_OF_MEMORY;
  if (rc == CUDA_SUCCESS) {
    p->refcount++;
    *pctx = p;
  }
  pthread_mutex_unlock(&g_ctx_lock);
  return rc;
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  CUresult rc = cu_ready();
  if (rc != CUDA_SUCCESS) return rc;
  unsigned phys;
  if ((rc = cu_device(dev, &phys)) != CUDA_SUCCESS) return rc;
  struct CUctx_st *p = &g_cu.primary[dev];
  pthread_mutex_lock(&g_ctx_lock);
  if (p->refcount == 0)
    rc = CUDA_ERROR_INVALID_CONTEXT;
  else if (--p->refcount == 0)
    teardown(p);
  pthread_mutex_unlock(&g_ctx_lock);
  return rc;
}

CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev) {
  CUresult rc = cu_ready();
  if (rc != CUDA_SUCCESS) return rc;
  unsigned phys;
  if ((rc = cu_device(dev, &phys)) != CUDA_SUCCESS) return rc;
  struct CUctx_st *p = &g_cu.primary[dev];
  pthread_mutex_lock(&g_ctx_lock);
  if (p->refcount > 0) teardown(p);
  p->refcount = 0;
  pthread_mutex_unlock(&g_ctx_lock);
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active) {
  CUresult rc = cu_ready();
  if (rc != CUDA_SUCCESS) return rc;
  if (flags == NULL || active == NULL) return CUDA_ERROR_INVALID_VALUE;
  unsigned phys;
  if ((rc = cu_device(dev, &phys)) != CUDA_SUCCESS) return rc;
  pthread_mutex_lock(&g_ctx_lock);
  *flags = g_cu.primary[dev].flags;
  *active = g_cu.primary[dev].refcount > 0;
  pthread_mutex_unlock(&g_ctx_lock);
  return CUDA_SUCCESS;
}

/* CU_CTX_SCHED_* is one of 0, 1, 2, 4 in the low bits; the other defined
 * flags (map host, lmem resize, coredump, sync memops) are bits 3..7. */
static bool flags_valid(unsigned flags) {
  unsigned sched = flags & 0x7u;
  return flags <= 0xFFu && (sched == 0 || sched == 1 || sched == 2 || sched == 4);
}

CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags) {
  CUresult rc = cu_ready();
  if (rc != CUDA_SUCCESS) return rc;
  unsigned phys;
  if ((rc = cu_device(dev, &phys)) != CUDA_SUCCESS) return rc;
  if (!flags_valid(flags)) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&g_ctx_lock);
  g_cu.primary[dev].flags = flags;
  pthread_mutex_unlock(&g_ctx_lock);
  return CUDA_SUCCESS;
}

CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev) {
  CUresult rc = cu_ready();
  if (rc != CUDA_SUCCESS) return rc;
  if (pctx == NULL || !flags_valid(flags)) return CUDA_ERROR_INVALID_VALUE;
  unsigned phys;
  if ((rc = cu_device(dev, &phys)) != CUDA_SUCCESS) return rc;
  if (t_depth == STACK_MAX) return CUDA_ERROR_INVALID_VALUE;
  struct CUctx_st *ctx = calloc(1, sizeof(*ctx));
  if (ctx == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  ctx->obj.kind = CU_OBJ_CTX;
  ctx->ordinal = dev;
  ctx->phys = phys;
  ctx->flags = flags;
  pthread_mutex_lock(&g_ctx_lock);
  bool ok = activate(ctx);
  pthread_mutex_unlock(&g_ctx_lock);
  if (!ok) {
    free(ctx);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  cu_handle_add(ctx);
  t_stack[t_depth++] = ctx;
  *pctx = ctx;
  return CUDA_SUCCESS;
}

CUresult cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *params, unsigned int flags,
                        CUdevice dev) {
  CUresult rc = cu_ready();
  if (rc != CUDA_SUCCESS) return rc;
  if (params != NULL && (params->numExecAffinityParams != 0 || params->cigParams != NULL))
    return CUDA_ERROR_NOT_SUPPORTED;
  return cuCtxCreate_v2(pctx, flags, dev);
}

CUresult cuCtxDestroy_v2(CUcontext ctx) {
  CUresult rc = cu_ready();
  if (rc != CUDA_SUCCESS) return rc;
  if (ctx == NULL) return CUDA_ERROR_INVALID_VALUE;
  struct CUctx_st *c = cu_handle_get(ctx, CU_OBJ_CTX);
  if (c == NULL || c->primary) return CUDA_ERROR_INVALID_CONTEXT;
  pthread_mutex_lock(&g_ctx_lock);
  if (c->destroyed) {
    rc = CUDA_ERROR_CONTEXT_IS_DESTROYED;
  } else {
    teardown(c);
    c->destroyed = true;
  }
  pthread_mutex_unlock(&g_ctx_lock);
  stack_remove(c);
  return rc;
}

CUresult cuCtxSetCurrent(CUcontext ctx) {
  CUresult rc = cu_ready();
  if (rc != CUDA_SUCCESS) return rc;
  if (ctx == NULL) {
    if (t_depth > 0) t_depth--;
    return CUDA_SUCCESS;
  }
  if ((rc = cu_ctx_check(ctx)) != CUDA_SUCCESS) return rc;
  if (t_depth == 0) t_depth = 1;
  t_stack[t_depth - 1] = ctx;
  return CUDA_SUCCESS;
}

CUresult cuCtxGetCurrent(CUcontext *pctx) {
  CUresult rc = cu_ready();
  if (rc != CUDA_SUCCESS) return rc;
  if (pctx == NULL) return CUDA_ERROR_INVALID_VALUE;
  *pctx = t_depth > 0 ? t_stack[t_depth - 1] : NULL;
  return CUDA_SUCCESS;
}

CUresult cuCtxPushCurrent_v2(CUcontext ctx) {
  CUresult rc = cu_ready();
  if (rc != CUDA_SUCCESS) return rc;
  if (ctx == NULL) return CUDA_ERROR_INVALID_VALUE;
  if ((rc = cu_ctx_check(ctx)) != CUDA_SUCCESS) return rc;
  if (t_depth == STACK_MAX) return CUDA_ERROR_INVALID_VALUE;
  t_stack[t_depth++] = ctx;
  return CUDA_SUCCESS;
}

CUresult cuCtxPopCurrent_v2(CUcontext *pctx) {
  CUresult rc = cu_ready();
  if (rc != CUDA_SUCCESS) return rc;
  if (t_depth == 0) return CUDA_ERROR_INVALID_CONTEXT;
  struct CUctx_st *top = t_stack[--t_depth];
  if (pctx != NULL) *pctx = top;
  return CUDA_SUCCESS;
}

CUresult cuCtxGetDevice(CUdevice *device) {
  CUresult rc = cu_ready();
  if (rc != CUDA_SUCCESS) return rc;
  if (device == NULL) return CUDA_ERROR_INVALID_VALUE;
  struct CUctx_st *ctx;
  if ((rc = cu_current(&ctx)) != CUDA_SUCCESS) return rc;
  *device = ctx->ordinal;
  return CUDA_SUCCESS;
}

CUresult cuCtxSynchronize(void) {
  struct CUctx_st *ctx;
  CUresult rc = cu_current(&ctx);
  if (rc != CUDA_SUCCESS) return rc;
  /* not while a capture it would have to wait behind is in progress */
  if (cu_capture_blocks_ctx_sync(ctx)) return CU_ERR_CAPTURE_UNSUPPORTED;
  cu_wait_ctx(ctx);
  cu_pools_sync();
  return CUDA_SUCCESS;
}
