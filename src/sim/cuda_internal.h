/*
 * cuda_internal.h -- process-local state of the simulated libcuda.so.1.
 *
 * Shared, machine-wide facts (device memory in use, the kernel timeline) live
 * in the state file (sim_state.h). Everything a real driver keeps per process
 * lives here: the visible-device map, contexts and each thread's context
 * stack, the handles the program holds (streams, events, modules, pools,
 * arrays, VMM handles) and the table of device allocations behind its
 * pointers. One process mutex guards these tables; it is always taken before
 * the shared state mutex, never after, and never held while sleeping.
 */
#ifndef VG_CUDA_INTERNAL_H
#define VG_CUDA_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "sim_api.h"
#include "sim_state.h"

#define CU_GRANULE VG_SIM_GRANULE

/* Kinds of handle the program can hold; every handle object starts with a
 * struct cu_obj and is registered while live (cuda_handles.c). */
enum cu_kind {
  CU_OBJ_CTX = 1,
  CU_OBJ_STREAM,
  CU_OBJ_EVENT,
  CU_OBJ_MODULE,
  CU_OBJ_FUNCTION,
  CU_OBJ_POOL,
  CU_OBJ_ARRAY,
  CU_OBJ_MIPMAP,
  CU_OBJ_VMM,
  CU_OBJ_GRAPH,      /* process-wide, like the real driver's graphs */
  CU_OBJ_GRAPH_NODE, /* owned by its graph */
  CU_OBJ_GRAPH_EXEC  /* owned by the context current at instantiation */
};

struct cu_obj {
  enum cu_kind kind;
  struct CUctx_st *ctx; /* owning context; NULL for process-wide objects */
};

struct CUctx_st {
  struct cu_obj obj;
  int ordinal;   /* CUdevice as the program sees it */
  unsigned phys; /* index in the state file */
  bool primary;
  bool active;    /* primary: retained at least once since the last reset */
  bool destroyed; /* cuCtxCreate'd and destroyed: never freed, never valid */
  int refcount;   /* primary only */
  unsigned flags;
  uint64_t mem;      /* context memory charged */
  uint64_t last_end; /* end of the last work queued in this context (atomic) */
};

/* A stream in capture mode records its kernel launches into `capture`
 * instead of running them (cuda_graph.c; fields guarded by its lock). */
struct CUstream_st {
  struct cu_obj obj;
  unsigned flags;
  uint64_t last_end;        /* atomic */
  bool capturing;           /* atomic: capture begun and not ended */
  bool capture_invalid;     /* a forbidden call invalidated the capture */
  int capture_mode;         /* CUstreamCaptureMode */
  pthread_t capture_thread; /* the thread that began the capture */
  struct CUgraph_st *capture;
};

struct CUevent_st {
  struct cu_obj obj;
  unsigned flags;
  bool recorded;
  bool captured; /* last recorded in a capturing stream */
  uint64_t time; /* when the work before the record completes */
};

/* A pool's bytes (cuda_pool.c, guarded by its lock): `reserved` is charged
 * to the device; `used` of it backs live allocations, the rest is cached. */
struct CUmemPoolHandle_st {
  struct cu_obj obj;
  unsigned phys;
  bool is_default;
  bool destroyed; /* destroyed with allocations outstanding: freed with the last */
  uint64_t threshold, reserved, used, reserved_high, used_high;
  int reuse[3];                    /* CU_MEMPOOL_ATTR_REUSE_* */
  struct CUmemPoolHandle_st *next; /* cuMemPoolCreate'd pools */
};

struct cu_process {
  pthread_mutex_t lock;
  bool initialized;
  CUresult init_rc;
  bool forked; /* a child of an initialised process: CUDA is unusable */
  struct vg_sim sim;
  int nvisible;
  unsigned phys[VG_SIM_MAX_DEVICES]; /* ordinal -> device index */
  struct CUctx_st primary[VG_SIM_MAX_DEVICES];
  struct CUmemPoolHandle_st default_pool[VG_SIM_MAX_DEVICES];
  struct CUmemPoolHandle_st *current_pool[VG_SIM_MAX_DEVICES]; /* cuDeviceSetMemPool */
  bool fail_alloc_set;
  uint64_t fail_alloc_after; /* VGPU_SIM_FAIL_ALLOC_AFTER */
  uint64_t allocs_done;
};

extern struct cu_process g_cu;

/* Result codes the simulator returns that cuda_abi.h does not declare (the
 * real driver's values). */
#define CU_ERR_ILLEGAL_STATE ((CUresult)401)
#define CU_ERR_COOPERATIVE_LAUNCH_TOO_LARGE ((CUresult)720)
#define CU_ERR_CAPTURE_UNSUPPORTED ((CUresult)900)
#define CU_ERR_CAPTURE_INVALIDATED ((CUresult)901)
#define CU_ERR_CAPTURED_EVENT ((CUresult)907)
#define CU_ERR_CAPTURE_WRONG_THREAD ((CUresult)908)

/* Exports cuda_abi.h does not declare: the _ptsz twin of cuStreamQuery and
 * the pre-12.0 cuGraphAddKernelNode, whose parameters lack the trailing
 * kern/ctx fields of CUDA_KERNEL_NODE_PARAMS (v2). */
typedef struct CUDA_KERNEL_NODE_PARAMS_v1_st {
  CUfunction func;
  unsigned int gridDimX;
  unsigned int gridDimY;
  unsigned int gridDimZ;
  unsigned int blockDimX;
  unsigned int blockDimY;
  unsigned int blockDimZ;
  unsigned int sharedMemBytes;
  void **kernelParams;
  void **extra;
} CU_KERNEL_NODE_PARAMS_V1;

#pragma GCC visibility push(default)
CUresult cuStreamQuery_ptsz(CUstream hStream);
CUresult cuGraphAddKernelNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                              const CUgraphNode *dependencies, size_t numDependencies,
                              const CU_KERNEL_NODE_PARAMS_V1 *nodeParams);
#pragma GCC visibility pop

/* A validated kernel launch: its shape, and its simulated duration on the
 * device it runs on (cuda_launch.c). */
struct cu_launch {
  unsigned grid[3];
  unsigned block[3];
  unsigned shared;
  bool cooperative;
};

/* cuda_init.c */
CUresult cu_ready(void); /* CUDA_ERROR_NOT_INITIALIZED unless cuInit succeeded */
CUresult cu_device(CUdevice dev, unsigned *phys);
uint64_t cu_max_u64(uint64_t a, uint64_t b);
/* Spends ns of host time, as the driver's side of a call does (timing
 * profile, VGPU_SIM_LAUNCH_NS). */
void cu_host_cost(uint64_t ns);
/* What a synchronize does: sleeps until work ending at `end` is done, and
 * the profile's wake-up time after it (VGPU_SIM_SYNC_NS) when it waited. */
void cu_wait_until(uint64_t end);
uint64_t cu_round_up(uint64_t v, uint64_t to);

/* cuda_handles.c */
void cu_handle_add(void *obj);
void cu_handle_del(void *obj);
/* The object if p is a live handle of that kind, else NULL. */
void *cu_handle_get(const void *p, enum cu_kind kind);
/* Removes and returns the object if p is a live handle of that kind: the
 * one way to destroy a handle, so two racing destroys cannot both free it. */
void *cu_handle_take(const void *p, enum cu_kind kind);
/* Calls fn for every live object owned by ctx (safe against fn deleting it). */
void cu_handles_of_ctx(struct CUctx_st *ctx, void (*fn)(struct cu_obj *));

/* cuda_context.c */
/* The calling thread's current context, validated. */
CUresult cu_current(struct CUctx_st **ctx);
CUresult cu_ctx_check(struct CUctx_st *ctx);
void cu_ctx_note_work(struct CUctx_st *ctx, uint64_t end);
void cu_wait_ctx(struct CUctx_st *ctx);

/* cuda_alloc.c: device memory charges and the pointer table */
CUresult cu_charge(unsigned phys, uint64_t bytes); /* with fault injection */
void cu_refund(unsigned phys, uint64_t bytes);
CUresult cu_alloc(struct CUctx_st *ctx, unsigned phys, uint64_t size, CUdeviceptr *out);
CUresult cu_free(CUdeviceptr ptr);
/* A pool allocation: the pool has charged the device already; frees of it go
 * back to the pool (cu_pool_return). */
CUresult cu_alloc_pooled(struct CUctx_st *ctx, struct CUmemPoolHandle_st *pool, uint64_t size,
                         CUdeviceptr *out);
/* cu_free, but a pool allocation stays cached in its pool when keep is true
 * (cuMemFreeAsync) and the pool releases down to its threshold otherwise. */
CUresult cu_free_to_pool(CUdeviceptr ptr, bool keep);

/* cuda_pool.c */
/* Gives back the bytes of a freed pool allocation; trims the pool to its
 * release threshold unless keep. */
void cu_pool_return(struct CUmemPoolHandle_st *pool, uint64_t bytes, bool keep);
/* A synchronisation: every pool of the process releases down to its threshold. */
void cu_pools_sync(void);
/* Frees every allocation made in ctx (context destruction). */
void cu_free_ctx_allocs(struct CUctx_st *ctx);
/* True if [ptr, ptr+n) lies inside one live allocation or VMM mapping. */
bool cu_range_ok(CUdeviceptr ptr, uint64_t n);

/* cuda_vmm.c */
bool cu_vmm_range_ok(CUdeviceptr ptr, uint64_t n);

/* cuda_stream.c */
/* Validates a stream handle (NULL / legacy / per-thread allowed) and finds
 * the context it runs in; *s is NULL for the default streams. */
CUresult cu_stream_resolve(CUstream h, struct CUstream_st **s, struct CUctx_st **ctx);
uint64_t cu_stream_last_end(struct CUstream_st *s, struct CUctx_st *ctx);
void cu_stream_note_work(struct CUstream_st *s, struct CUctx_st *ctx, uint64_t end);
void cu_destroy_owned(struct cu_obj *obj); /* stream/event/module/array by kind */

/* cuda_launch.c */
/* Checks the shape like the driver; INVALID_VALUE when it is not launchable,
 * COOPERATIVE_LAUNCH_TOO_LARGE when a cooperative grid exceeds one wave.
 * *duration: the kernel's simulated time on device phys. */
CUresult cu_launch_cost(const struct cu_launch *l, unsigned phys, uint64_t *duration);

/* cuda_graph.c: graphs, executable graphs and stream capture */
/* If s is capturing, records the kernel into its graph (*captured = true);
 * CU_ERR_CAPTURE_INVALIDATED when its capture was invalidated. */
CUresult cu_capture_kernel(struct CUstream_st *s, CUfunction f, const struct cu_launch *l,
                           uint64_t duration, bool *captured);
/* A call that must not happen on a capturing stream (synchronize, query):
 * invalidates the capture and returns CU_ERR_CAPTURE_UNSUPPORTED (or
 * CU_ERR_CAPTURE_INVALIDATED if it already was); CUDA_SUCCESS otherwise. */
CUresult cu_capture_forbid(struct CUstream_st *s);
/* cuEventRecord: whether s is capturing (the event becomes "captured"). */
CUresult cu_capture_event(struct CUstream_st *s, bool *captured);
/* cuCtxSynchronize: invalidates the captures it may not wait behind (global
 * mode, or thread-local begun by this thread) and says if there were any. */
bool cu_capture_blocks_ctx_sync(struct CUctx_st *ctx);
/* A stream going away ends its capture and frees the partial graph. */
void cu_capture_abandon(struct CUstream_st *s);
void cu_graph_exec_destroy(struct cu_obj *obj);

/* cuda_module.c */
void cu_module_destroy(struct cu_obj *obj);
CUresult cu_function_ctx(CUfunction f, struct CUctx_st **ctx);

/* cuda_array.c */
void cu_array_destroy(struct cu_obj *obj);

#endif
