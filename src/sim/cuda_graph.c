/*
 * cuda_graph.c -- CUDA graphs and stream capture.
 *
 * A graph is a list of kernel nodes. Nodes may name dependencies (they are
 * checked to belong to the graph), but since a simulated device runs one
 * kernel at a time, an executable graph runs its kernels in insertion order,
 * back to back. Each node is costed like a launch when it is added
 * (cu_launch_cost); cuGraphInstantiateWithFlags takes a snapshot of the
 * nodes, so later changes to the graph do not affect the executable graph.
 *
 * cuGraphLaunch is one submission: the sum of the kernels' durations is
 * queued on the device timeline in one piece, after the stream's last work
 * and the exec's previous launch, with the launch queue's back-pressure
 * applied once. Because the kernels would run back to back anyway, the
 * timeline, events and NVML utilisation see exactly what N launches on the
 * stream would have produced.
 *
 * Stream capture: cuStreamBeginCapture_v2 puts a created stream into capture
 * mode (the default streams cannot capture here). Kernel launches on it
 * (every cuLaunch* entry point) and graph launches into it are validated as
 * usual and then appended to a new graph instead of running;
 * cuStreamEndCapture returns that graph and cuStreamIsCapturing reports the
 * state. Synchronising or querying a capturing stream, or a context-wide
 * synchronize during a global-mode capture (or a thread-local one begun by
 * the calling thread), is refused with CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED
 * and invalidates the capture; later work on it fails with
 * CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, and cuStreamEndCapture returns that
 * code and no graph, as the real driver does. Global and thread-local
 * captures must end on the thread that began them.
 *
 * Graphs are process-wide objects (they outlive contexts, as in the driver);
 * executable graphs belong to the context current at instantiation and die
 * with it. One mutex guards node lists and capture state; it never nests
 * with another lock except the handle set's (taken inside it, never around).
 */
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"

#define INSTANTIATE_KNOWN_FLAGS 0x9ull /* AUTO_FREE_ON_LAUNCH, USE_NODE_PRIORITY */

struct CUgraphNode_st {
  struct cu_obj obj; /* ctx NULL: nodes die with their graph */
  struct CUgraph_st *graph;
  struct CUctx_st *ctx; /* the kernel's context */
  CUfunction func;
  struct cu_launch launch;
  uint64_t duration;
};

struct CUgraph_st {
  struct cu_obj obj;
  size_t n, cap;
  struct CUgraphNode_st **nodes;
};

struct CUgraphExec_st {
  struct cu_obj obj; /* ctx: the context the graph runs in */
  size_t n;
  struct CUgraphNode_st *nodes; /* snapshot (obj, graph unused) */
  uint64_t total;               /* sum of the kernels' durations */
  uint64_t last_end;            /* atomic: end of the previous launch */
};

static pthread_mutex_t g_graph_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned g_active_captures; /* atomic: streams capturing in this process */

static struct CUgraph_st *new_graph(void) {
  struct CUgraph_st *g = calloc(1, sizeof(*g));
  if (g != NULL) g->obj.kind = CU_OBJ_GRAPH;
  return g;
}

static void free_graph(struct CUgraph_st *g) {
  for (size_t i = 0; i < g->n; i++) {
    cu_handle_del(g->nodes[i]);
    free(g->nodes[i]);
  }
  free(g->nodes);
  free(g);
}

/* Appends a kernel node (registered as a handle when `visible`). Caller holds
 * g_graph_lock. */
static struct CUgraphNode_st *append_node(struct CUgraph_st *g, struct CUctx_st *ctx,
                                          CUfunction func, const struct cu_launch *l,
                                          uint64_t duration, bool visible) {
  if (g->n == g->cap) {
    size_t cap = g->cap == 0 ? 8 : g->cap * 2;
    struct CUgraphNode_st **grown = realloc(g->nodes, cap * sizeof(*grown));
    if (grown == NULL) return NULL;
    g->nodes = grown;
    g->cap = cap;
  }
  struct CUgraphNode_st *node = calloc(1, sizeof(*node));
  if (node == NULL) return NULL;
  *node = (struct CUgraphNode_st){{CU_OBJ_GRAPH_NODE, NULL}, g, ctx, func, *l, duration};
  if (visible) cu_handle_add(node);
  g->nodes[g->n++] = node;
  return node;
}

/* --- graphs --- */

CUresult cuGraphCreate(CUgraph *phGraph, unsigned int flags) {
  CUresult rc = cu_ready();
  if (rc != CUDA_SUCCESS) return rc;
  if (phGraph == NULL || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  struct CUgraph_st *g = new_graph();
  if (g == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  cu_handle_add(g);
  *phGraph = g;
  return CUDA_SUCCESS;
}

static CUresult add_kernel_node(CUgraphNode *phGraphNode, CUgraph hGraph,
                                const CUgraphNode *dependencies, size_t numDependencies,
                                CUfunction func, const struct cu_launch *l, void **params,
                                void **extra) {
  CUresult rc = cu_ready();
  if (rc != CUDA_SUCCESS) return rc;
  if (phGraphNode == NULL || hGraph == NULL || (numDependencies > 0 && dependencies == NULL))
    return CUDA_ERROR_INVALID_VALUE;
  struct CUctx_st *ctx;
  if (cu_function_ctx(func, &ctx) != CUDA_SUCCESS) return CUDA_ERROR_INVALID_VALUE;
  uint64_t duration;
  if (params != NULL && extra != NULL) return CUDA_ERROR_INVALID_VALUE;
  if ((rc = cu_launch_cost(l, ctx->phys, &duration)) != CUDA_SUCCESS) return rc;
  pthread_mutex_lock(&g_graph_lock);
  struct CUgraph_st *g = cu_handle_get(hGraph, CU_OBJ_GRAPH);
  for (size_t i = 0; g != NULL && i < numDependencies; i++) {
    struct CUgraphNode_st *dep = cu_handle_get(dependencies[i], CU_OBJ_GRAPH_NODE);
    if (dep == NULL || dep->graph != g) g = NULL;
  }
  struct CUgraphNode_st *node = NULL;
  if (g == NULL)
    rc = CUDA_ERROR_INVALID_VALUE;
  else if ((node = append_node(g, ctx, func, l, duration, true)) == NULL)
    rc = CUDA_ERROR_OUT_OF_MEMORY;
  pthread_mutex_unlock(&g_graph_lock);
  if (node != NULL) *phGraphNode = node;
  return rc;
}

CUresult cuGraphAddKernelNode_v2(CUgraphNode *phGraphNode, CUgraph hGraph,
                                 const CUgraphNode *dependencies, size_t numDependencies,
                                 const CUDA_KERNEL_NODE_PARAMS *nodeParams) {
  CUresult rc = cu_ready();
  if (rc != CUDA_SUCCESS) return rc;
  if (nodeParams == NULL) return CUDA_ERROR_INVALID_VALUE;
  /* func wins over kern; CUkernel (library) handles are not simulated */
  if (nodeParams->func == NULL) return CUDA_ERROR_INVALID_VALUE;
  const CUDA_KERNEL_NODE_PARAMS *p = nodeParams;
  struct cu_launch l = {{p->gridDimX, p->gridDimY, p->gridDimZ},
                        {p->blockDimX, p->blockDimY, p->blockDimZ},
                        p->sharedMemBytes,
                        false};
  return add_kernel_node(phGraphNode, hGraph, dependencies, numDependencies, p->func, &l,
                         p->kernelParams, p->extra);
}

CUresult cuGraphAddKernelNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                              const CUgraphNode *dependencies, size_t numDependencies,
                              const CU_KERNEL_NODE_PARAMS_V1 *nodeParams) {
  CUresult rc = cu_ready();
  if (rc != CUDA_SUCCESS) return rc;
  if (nodeParams == NULL) return CUDA_ERROR_INVALID_VALUE;
  const CU_KERNEL_NODE_PARAMS_V1 *p = nodeParams;
  struct cu_launch l = {{p->gridDimX, p->gridDimY, p->gridDimZ},
                        {p->blockDimX, p->blockDimY, p->blockDimZ},
                        p->sharedMemBytes,
                        false};
  return add_kernel_node(phGraphNode, hGraph, dependencies, numDependencies, p->func, &l,
                         p->kernelParams, p->extra);
}

CUresult cuGraphDestroy(CUgraph hGraph) {
  CUresult rc = cu_ready();
  if (rc != CUDA_SUCCESS) return rc;
  pthread_mutex_lock(&g_graph_lock);
  struct CUgraph_st *g = cu_handle_take(hGraph, CU_OBJ_GRAPH);
  pthread_mutex_unlock(&g_graph_lock);
  if (g == NULL) return CUDA_ERROR_INVALID_VALUE;
  free_graph(g);
  return CUDA_SUCCESS;
}

/* --- executable graphs --- */

CUresult cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph,
                                     unsigned long long flags) {
  struct CUctx_st *ctx;
  CUresult rc = cu_current(&ctx);
  if (rc != CUDA_SUCCESS) return rc;
  if (phGraphExec == NULL || hGraph == NULL || (flags & ~INSTANTIATE_KNOWN_FLAGS) != 0)
    return CUDA_ERROR_INVALID_VALUE;
  struct CUgraphExec_st *e = calloc(1, sizeof(*e));
  if (e == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  e->obj = (struct cu_obj){CU_OBJ_GRAPH_EXEC, ctx};
  pthread_mutex_lock(&g_graph_lock);
  struct CUgraph_st *g = cu_handle_get(hGraph, CU_OBJ_GRAPH);
  if (g == NULL) rc = CUDA_ERROR_INVALID_VALUE;
  if (g != NULL && g->n > 0 && (e->nodes = calloc(g->n, sizeof(*e->nodes))) == NULL)
    rc = CUDA_ERROR_OUT_OF_MEMORY;
  for (size_t i = 0; rc == CUDA_SUCCESS && i < g->n; i++) {
    struct CUctx_st *fctx;
    /* every kernel must still exist and run in this graph's context */
    if (cu_function_ctx(g->nodes[i]->func, &fctx) != CUDA_SUCCESS || fctx != ctx) {
      rc = CUDA_ERROR_INVALID_VALUE;
      break;
    }
    e->nodes[e->n++] = *g->nodes[i];
    e->total += g->nodes[i]->duration;
  }
  pthread_mutex_unlock(&g_graph_lock);
  if (rc != CUDA_SUCCESS) {
    free(e->nodes);
    free(e);
    return rc;
  }
  cu_handle_add(e);
  *phGraphExec = e;
  return CUDA_SUCCESS;
}

static void free_exec(struct CUgraphExec_st *e) {
  free(e->nodes);
  free(e);
}

void cu_graph_exec_destroy(struct cu_obj *obj) {
  if (cu_handle_take(obj, CU_OBJ_GRAPH_EXEC) != NULL) free_exec((struct CUgraphExec_st *)obj);
}

CUresult cuGraphExecDestroy(CUgraphExec hGraphExec) {
  CUresult rc = cu_ready();
  if (rc != CUDA_SUCCESS) return rc;
  struct CUgraphExec_st *e = cu_handle_take(hGraphExec, CU_OBJ_GRAPH_EXEC);
  if (e == NULL) return CUDA_ERROR_INVALID_VALUE;
  free_exec(e);
  return CUDA_SUCCESS;
}

/* Appends the exec's kernels to s's capture graph (a graph launched into a
 * capturing stream becomes part of the captured graph, flattened). */
static CUresult capture_exec(struct CUstream_st *s, const struct CUgraphExec_st *e,
                             bool *captured) {
  CUresult rc = CUDA_SUCCESS;
  pthread_mutex_lock(&g_graph_lock);
  *captured = s->capture != NULL;
  if (*captured && s->capture_invalid) rc = CU_ERR_CAPTURE_INVALIDATED;
  for (size_t i = 0; *captured && rc == CUDA_SUCCESS && i < e->n; i++) {
    const struct CUgraphNode_st *n = &e->nodes[i];
    if (append_node(s->capture, n->ctx, n->func, &n->launch, n->duration, false) == NULL)
      rc = CUDA_ERROR_OUT_OF_MEMORY;
  }
  pthread_mutex_unlock(&g_graph_lock);
  return rc;
}

CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream) {
  CUresult rc = cu_ready();
  if (rc != CUDA_SUCCESS) return rc;
  if (hGraphExec == NULL) return CUDA_ERROR_INVALID_VALUE;
  struct CUgraphExec_st *e = cu_handle_get(hGraphExec, CU_OBJ_GRAPH_EXEC);
  if (e == NULL) return CUDA_ERROR_INVALID_VALUE;
  struct CUstream_st *s;
  struct CUctx_st *ctx;
  if ((rc = cu_stream_resolve(hStream, &s, &ctx)) != CUDA_SUCCESS) return rc;
  if (ctx != e->obj.ctx) return CUDA_ERROR_INVALID_VALUE; /* a stream of another context */
  if (s != NULL && __atomic_load_n(&s->capturing, __ATOMIC_ACQUIRE)) {
    bool captured = false;
    rc = capture_exec(s, e, &captured);
    if (captured) return rc;
  }
  uint64_t after =
      cu_max_u64(cu_stream_last_end(s, ctx), __atomic_load_n(&e->last_end, __ATOMIC_RELAXED));
  cu_host_cost(g_cu.sim.st->config.launch_ns); /* one launch call, whatever the graph holds */
  uint64_t end = vg_sim_queue_work(&g_cu.sim, ctx->phys, after, e->total);
  __atomic_store_n(&e->last_end, end, __ATOMIC_RELAXED);
  cu_stream_note_work(s, ctx, end);
  return CUDA_SUCCESS;
}

CUresult cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream) {
  return cuGraphLaunch(hGraphExec, hStream);
}

/* --- stream capture --- */

/* Ends s's capture; returns its graph. Caller holds g_graph_lock. */
static struct CUgraph_st *end_capture_locked(struct CUstream_st *s) {
  struct CUgraph_st *g = s->capture;
  s->capture = NULL;
  s->capture_invalid = false;
  __atomic_store_n(&s->capturing, false, __ATOMIC_RELEASE);
  __atomic_fetch_sub(&g_active_captures, 1, __ATOMIC_RELAXED);
  return g;
}

CUresult cuStreamBeginCapture_v2(CUstream hStream, CUstreamCaptureMode mode) {
  struct CUstream_st *s;
  struct CUctx_st *ctx;
  CUresult rc = cu_stream_resolve(hStream, &s, &ctx);
  if (rc != CUDA_SUCCESS) return rc;
  if (s == NULL) return CU_ERR_CAPTURE_UNSUPPORTED; /* the default streams */
  if ((unsigned)mode > CU_STREAM_CAPTURE_MODE_RELAXED) return CUDA_ERROR_INVALID_VALUE;
  struct CUgraph_st *g = new_graph();
  if (g == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  pthread_mutex_lock(&g_graph_lock);
  if (s->capture != NULL) {
    rc = CU_ERR_ILLEGAL_STATE;
  } else {
    s->capture = g;
    s->capture_invalid = false;
    s->capture_mode = (int)mode;
    s->capture_thread = pthread_self();
    __atomic_fetch_add(&g_active_captures, 1, __ATOMIC_RELAXED);
    __atomic_store_n(&s->capturing, true, __ATOMIC_RELEASE);
  }
  pthread_mutex_unlock(&g_graph_lock);
  if (rc != CUDA_SUCCESS) free(g);
  return rc;
}

CUresult cuStreamBeginCapture_v2_ptsz(CUstream hStream, CUstreamCaptureMode mode) {
  return cuStreamBeginCapture_v2(hStream, mode);
}

CUresult cuStreamEndCapture(CUstream hStream, CUgraph *phGraph) {
  struct CUstream_st *s;
  struct CUctx_st *ctx;
  CUresult rc = cu_stream_resolve(hStream, &s, &ctx);
  if (rc != CUDA_SUCCESS) return rc;
  if (phGraph == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (s == NULL) return CU_ERR_ILLEGAL_STATE; /* default streams never capture */
  struct CUgraph_st *g = NULL;
  pthread_mutex_lock(&g_graph_lock);
  if (s->capture == NULL) {
    rc = CU_ERR_ILLEGAL_STATE;
  } else if (s->capture_mode != CU_STREAM_CAPTURE_MODE_RELAXED &&
             !pthread_equal(s->capture_thread, pthread_self())) {
    rc = CU_ERR_CAPTURE_WRONG_THREAD;
  } else {
    if (s->capture_invalid) rc = CU_ERR_CAPTURE_INVALIDATED;
    g = end_capture_locked(s);
  }
  pthread_mutex_unlock(&g_graph_lock);
  if (rc == CU_ERR_CAPTURE_INVALIDATED) {
    free_graph(g);
    *phGraph = NULL;
    return rc;
  }
  if (rc != CUDA_SUCCESS) return rc;
  /* the graph becomes a handle, its nodes with it */
  for (size_t i = 0; i < g->n; i++) cu_handle_add(g->nodes[i]);
  cu_handle_add(g);
  *phGraph = g;
  return CUDA_SUCCESS;
}

CUresult cuStreamEndCapture_ptsz(CUstream hStream, CUgraph *phGraph) {
  return cuStreamEndCapture(hStream, phGraph);
}

CUresult cuStreamIsCapturing(CUstream hStream, CUstreamCaptureStatus *captureStatus) {
  struct CUstream_st *s;
  struct CUctx_st *ctx;
  CUresult rc = cu_stream_resolve(hStream, &s, &ctx);
  if (rc != CUDA_SUCCESS) return rc;
  if (captureStatus == NULL) return CUDA_ERROR_INVALID_VALUE;
  *captureStatus = CU_STREAM_CAPTURE_STATUS_NONE;
  if (s == NULL || !__atomic_load_n(&s->capturing, __ATOMIC_ACQUIRE)) return CUDA_SUCCESS;
  pthread_mutex_lock(&g_graph_lock);
  if (s->capture != NULL)
    *captureStatus =
        s->capture_invalid ? CU_STREAM_CAPTURE_STATUS_INVALIDATED : CU_STREAM_CAPTURE_STATUS_ACTIVE;
  pthread_mutex_unlock(&g_graph_lock);
  return CUDA_SUCCESS;
}

CUresult cuStreamIsCapturing_ptsz(CUstream hStream, CUstreamCaptureStatus *captureStatus) {
  return cuStreamIsCapturing(hStream, captureStatus);
}

CUresult cu_capture_kernel(struct CUstream_st *s, CUfunction f, const struct cu_launch *l,
                           uint64_t duration, bool *captured) {
  *captured = false;
  if (s == NULL || !__atomic_load_n(&s->capturing, __ATOMIC_ACQUIRE)) return CUDA_SUCCESS;
  CUresult rc = CUDA_SUCCESS;
  pthread_mutex_lock(&g_graph_lock);
  if (s->capture != NULL) {
    *captured = true;
    if (s->capture_invalid)
      rc = CU_ERR_CAPTURE_INVALIDATED;
    else if (append_node(s->capture, s->obj.ctx, f, l, duration, false) == NULL)
      rc = CUDA_ERROR_OUT_OF_MEMORY;
  }
  pthread_mutex_unlock(&g_graph_lock);
  return rc;
}

CUresult cu_capture_forbid(struct CUstream_st *s) {
  if (s == NULL || !__atomic_load_n(&s->capturing, __ATOMIC_ACQUIRE)) return CUDA_SUCCESS;
  CUresult rc = CUDA_SUCCESS;
  pthread_mutex_lock(&g_graph_lock);
  if (s->capture != NULL) {
    rc = s->capture_invalid ? CU_ERR_CAPTURE_INVALIDATED : CU_ERR_CAPTURE_UNSUPPORTED;
    s->capture_invalid = true;
  }
  pthread_mutex_unlock(&g_graph_lock);
  return rc;
}

CUresult cu_capture_event(struct CUstream_st *s, bool *captured) {
  *captured = false;
  if (s == NULL || !__atomic_load_n(&s->capturing, __ATOMIC_ACQUIRE)) return CUDA_SUCCESS;
  CUresult rc = CUDA_SUCCESS;
  pthread_mutex_lock(&g_graph_lock);
  if (s->capture != NULL) {
    *captured = true;
    if (s->capture_invalid) rc = CU_ERR_CAPTURE_INVALIDATED;
  }
  pthread_mutex_unlock(&g_graph_lock);
  return rc;
}

static __thread bool t_blocked; /* set by invalidate_for_sync */

/* Callback for cu_handles_of_ctx: invalidates the captures a context-wide
 * synchronize may not wait behind. */
static void invalidate_for_sync(struct cu_obj *obj) {
  pthread_mutex_lock(&g_graph_lock);
  /* The stream may have been destroyed since it was listed: look it up again,
   * under the lock that cu_capture_abandon takes before a stream is freed. */
  struct CUstream_st *s = cu_handle_get(obj, CU_OBJ_STREAM);
  if (s != NULL && s->capture != NULL) {
    bool mine = pthread_equal(s->capture_thread, pthread_self());
    if (s->capture_mode == CU_STREAM_CAPTURE_MODE_GLOBAL ||
        (s->capture_mode == CU_STREAM_CAPTURE_MODE_THREAD_LOCAL && mine)) {
      s->capture_invalid = true;
      t_blocked = true;
    }
  }
  pthread_mutex_unlock(&g_graph_lock);
}

bool cu_capture_blocks_ctx_sync(struct CUctx_st *ctx) {
  if (__atomic_load_n(&g_active_captures, __ATOMIC_RELAXED) == 0) return false;
  t_blocked = false;
  cu_handles_of_ctx(ctx, invalidate_for_sync);
  return t_blocked;
}

/* Always takes the lock: invalidate_for_sync may be looking at s. */
void cu_capture_abandon(struct CUstream_st *s) {
  struct CUgraph_st *g = NULL;
  pthread_mutex_lock(&g_graph_lock);
  if (s->capture != NULL) g = end_capture_locked(s);
  pthread_mutex_unlock(&g_graph_lock);
  if (g != NULL) free_graph(g);
}
