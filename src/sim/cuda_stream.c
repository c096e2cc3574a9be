/*
 * cuda_stream.c -- streams and events.
 *
 * All work of a device runs on the device's one shared timeline
 * (sim_timeline.c); a stream only remembers when the last work queued on it
 * ends, which is what cuStreamSynchronize waits for. The default streams
 * (NULL, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD) stand for the current
 * context, whose "last end" covers everything queued in it. Since work never
 * overlaps on the timeline, per-thread and legacy default streams behave the
 * same, and the _ptsz entry points are the same functions.
 *
 * An event records the time at which the work queued before it completes;
 * synchronising on it sleeps until then, querying it says whether that time
 * has passed, and the elapsed time between two events is the simulated time
 * between those points.
 *
 * Streams in capture mode (cuda_graph.c) refuse to be synchronised or
 * queried, and an event recorded in one is "captured": waiting on it,
 * querying it or timing it is CUDA_ERROR_CAPTURED_EVENT until it is recorded
 * again outside capture, as with the real driver.
 */
#include <stdlib.h>

#include "cuda_internal.h"

#define EVENT_FLAGS_KNOWN 0x7u /* blocking sync, disable timing, interprocess */
#define EVENT_DISABLE_TIMING 0x2u
#define EVENT_INTERPROCESS 0x4u

static bool is_default_stream(CUstream h) {
  return h == NULL || h == CU_STREAM_LEGACY || h == CU_STREAM_PER_THREAD;
}

CUresult cu_stream_resolve(CUstream h, struct CUstream_st **s, struct CUctx_st **ctx) {
  if (is_default_stream(h)) {
    *s = NULL;
    return cu_current(ctx);
  }
  CUresult rc = cu_ready();
  if (rc != CUDA_SUCCESS) return rc;
  *s = cu_handle_get(h, CU_OBJ_STREAM);
  if (*s == NULL) return CUDA_ERROR_INVALID_HANDLE;
  *ctx = (*s)->obj.ctx;
  return cu_ctx_check(*ctx);
}

uint64_t cu_stream_last_end(struct CUstream_st *s, struct CUctx_st *ctx) {
  const uint64_t *end = s != NULL ? &s->last_end : &ctx->last_end;
  return __atomic_load_n(end, __ATOMIC_RELAXED);
}

void cu_stream_note_work(struct CUstream_st *s, struct CUctx_st *ctx, uint64_t end) {
  if (s != NULL) __atomic_store_n(&s->last_end, end, __ATOMIC_RELAXED);
  cu_ctx_note_work(ctx, end);
}

void cu_destroy_owned(struct cu_obj *obj) {
  switch (obj->kind) {
    case CU_OBJ_STREAM:
      if (cu_handle_take(obj, obj->kind) == NULL) break;
      cu_capture_abandon((struct CUstream_st *)obj);
      free(obj);
      break;
    case CU_OBJ_EVENT:
      if (cu_handle_take(obj, obj->kind) != NULL) free(obj);
      break;
    case CU_OBJ_GRAPH_EXEC:
      cu_graph_exec_destroy(obj);
      break;
    case CU_OBJ_MODULE:
      cu_module_destroy(obj);
      break;
    case CU_OBJ_ARRAY:
    case CU_OBJ_MIPMAP:
      cu_array_destroy(obj);
      break;
    default:
      break;
  }
}

CUresult cuStreamCreate(CUstream *phStream, unsigned int Flags) {
  struct CUctx_st *ctx;
  CUresult rc = cu_current(&ctx);
  if (rc != CUDA_SUCCESS) return rc;
  if (phStream == NULL || (Flags & ~(unsigned)CU_STREAM_NON_BLOCKING) != 0)
    return CUDA_ERROR_INVALID_VALUE;
  struct CUstream_st *s = calloc(1, sizeof(*s));
  if (s == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  *s = (struct CUstream_st){.obj = {CU_OBJ_STREAM, ctx}, .flags = Flags};
  cu_handle_add(s);
  *phStream = s;
  return CUDA_SUCCESS;
}

/* The context a stream belongs to (the current one for the default
 * streams): what libvgpu asks to charge a stream-ordered allocation to the
 * stream's device. */
CUresult cuStreamGetCtx(CUstream hStream, CUcontext *pctx) {
  struct CUstream_st *s;
  struct CUctx_st *ctx;
  CUresult rc = cu_stream_resolve(hStream, &s, &ctx);
  if (rc != CUDA_SUCCESS) return rc;
  if (pctx == NULL) return CUDA_ERROR_INVALID_VALUE;
  *pctx = ctx;
  return CUDA_SUCCESS;
}

CUresult cuStreamGetCtx_ptsz(CUstream hStream, CUcontext *pctx) {
  return cuStreamGetCtx(hStream, pctx);
}

CUresult cuStreamDestroy_v2(CUstream hStream) {
  CUresult rc = cu_ready();
  if (rc != CUDA_SUCCESS) return rc;
  struct CUstream_st *s = cu_handle_take(hStream, CU_OBJ_STREAM);
  if (s == NULL) return CUDA_ERROR_INVALID_HANDLE;
  cu_capture_abandon(s); /* a capture in progress is discarded */
  free(s);
  return CUDA_SUCCESS;
}

CUresult cuStreamSynchronize(CUstream hStream) {
  struct CUstream_st *s;
  struct CUctx_st *ctx;
  CUresult rc = cu_stream_resolve(hStream, &s, &ctx);
  if (rc != CUDA_SUCCESS) return rc;
  if ((rc = cu_capture_forbid(s)) != CUDA_SUCCESS) return rc;
  uint64_t end = cu_stream_last_end(s, ctx);
  cu_wait_until(end);
  cu_pools_sync();
  return CUDA_SUCCESS;
}

CUresult cuStreamSynchronize_ptsz(CUstream hStream) { return cuStreamSynchronize(hStream); }

CUresult cuStreamQuery(CUstream hStream) {
  struct CUstream_st *s;
  struct CUctx_st *ctx;
  CUresult rc = cu_stream_resolve(hStream, &s, &ctx);
  if (rc != CUDA_SUCCESS) return rc;
  if ((rc = cu_capture_forbid(s)) != CUDA_SUCCESS) return rc;
  return cu_stream_last_end(s, ctx) > vg_sim_now_ns() ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
}

CUresult cuStreamQuery_ptsz(CUstream hStream) { return cuStreamQuery(hStream); }

CUresult cuEventCreate(CUevent *phEvent, unsigned int Flags) {
  struct CUctx_st *ctx;
  CUresult rc = cu_current(&ctx);
  if (rc != CUDA_SUCCESS) return rc;
  if (phEvent == NULL || (Flags & ~EVENT_FLAGS_KNOWN) != 0) return CUDA_ERROR_INVALID_VALUE;
  if ((Flags & EVENT_INTERPROCESS) && !(Flags & EVENT_DISABLE_TIMING))
    return CUDA_ERROR_INVALID_VALUE;
  struct CUevent_st *e = calloc(1, sizeof(*e));
  if (e == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  *e = (struct CUevent_st){.obj = {CU_OBJ_EVENT, ctx}, .flags = Flags};
  cu_handle_add(e);
  *phEvent = e;
  return CUDA_SUCCESS;
}

/* When the event completes: after the work queued before it, and after
 * its own GPU time (VGPU_SIM_EVENT_NS), which the stream then queues behind
 * -- a real event is a command the GPU processes, and what it costs shows
 * in every span measured with it. */
static uint64_t record_time(struct CUstream_st *s, struct CUctx_st *ctx) {
  uint64_t after = cu_stream_last_end(s, ctx), cost = g_cu.sim.st->config.event_ns;
  if (cost == 0) return cu_max_u64(vg_sim_now_ns(), after);
  uint64_t end = vg_sim_queue_work(&g_cu.sim, ctx->phys, after, cost);
  cu_stream_note_work(s, ctx, end);
  return end;
}

CUresult cuEventRecord(CUevent hEvent, CUstream hStream) {
  CUresult rc = cu_ready();
  if (rc != CUDA_SUCCESS) return rc;
  struct CUevent_st *e = cu_handle_get(hEvent, CU_OBJ_EVENT);
  if (e == NULL) return CUDA_ERROR_INVALID_HANDLE;
  struct CUstream_st *s;
  struct CUctx_st *ctx;
  if ((rc = cu_stream_resolve(hStream, &s, &ctx)) != CUDA_SUCCESS) return rc;
  bool captured;
  if ((rc = cu_capture_event(s, &captured)) != CUDA_SUCCESS) return rc;
  e->captured = captured;
  if (captured) return CUDA_SUCCESS; /* it records a point in the graph, not in time */
  e->time = record_time(s, ctx);
  e->recorded = true;
  return CUDA_SUCCESS;
}

CUresult cuEventRecord_ptsz(CUevent hEvent, CUstream hStream) {
  return cuEventRecord(hEvent, hStream);
}

CUresult cuEventSynchronize(CUevent hEvent) {
  CUresult rc = cu_ready();
  if (rc != CUDA_SUCCESS) return rc;
  struct CUevent_st *e = cu_handle_get(hEvent, CU_OBJ_EVENT);
  if (e == NULL) return CUDA_ERROR_INVALID_HANDLE;
  if (e->captured) return CU_ERR_CAPTURED_EVENT;
  if (e->recorded) cu_wait_until(e->time);
  cu_pools_sync();
  return CUDA_SUCCESS;
}

CUresult cuEventQuery(CUevent hEvent) {
  CUresult rc = cu_ready();
  if (rc != CUDA_SUCCESS) return rc;
  struct CUevent_st *e = cu_handle_get(hEvent, CU_OBJ_EVENT);
  if (e == NULL) return CUDA_ERROR_INVALID_HANDLE;
  if (e->captured) return CU_ERR_CAPTURED_EVENT;
  /* an event never recorded has nothing to wait for */
  return e->recorded && e->time > vg_sim_now_ns() ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
}

CUresult cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd) {
  CUresult rc = cu_ready();
  if (rc != CUDA_SUCCESS) return rc;
  if (pMilliseconds == NULL) return CUDA_ERROR_INVALID_VALUE;
  struct CUevent_st *a = cu_handle_get(hStart, CU_OBJ_EVENT);
  struct CUevent_st *b = cu_handle_get(hEnd, CU_OBJ_EVENT);
  if (a == NULL || b == NULL) return CUDA_ERROR_INVALID_HANDLE;
  if (a->captured || b->captured) return CU_ERR_CAPTURED_EVENT;
  if ((a->flags | b->flags) & EVENT_DISABLE_TIMING) return CUDA_ERROR_INVALID_HANDLE;
  if (!a->recorded || !b->recorded) return CUDA_ERROR_INVALID_HANDLE;
  if (cu_max_u64(a->time, b->time) > vg_sim_now_ns()) return CUDA_ERROR_NOT_READY;
  *pMilliseconds = (float)(((double)b->time - (double)a->time) / 1e6);
  return CUDA_SUCCESS;
}

CUresult cuEventElapsedTime_v2(float *pMilliseconds, CUevent hStart, CUevent hEnd) {
  return cuEventElapsedTime(pMilliseconds, hStart, hEnd);
}

CUresult cuEventDestroy_v2(CUevent hEvent) {
  CUresult rc = cu_ready();
  if (rc != CUDA_SUCCESS) return rc;
  struct CUevent_st *e = cu_handle_take(hEvent, CU_OBJ_EVENT);
  if (e == NULL) return CUDA_ERROR_INVALID_HANDLE;
  free(e);
  return CUDA_SUCCESS;
}
