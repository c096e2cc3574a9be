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
  CU_OBJ_VMM
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

struct CUstream_st {
  struct cu_obj obj;
  unsigned flags;
  uint64_t last_end; /* atomic */
};

struct CUevent_st {
  struct cu_obj obj;
  unsigned flags;
  bool recorded;
  uint64_t time; /* when the work before the record completes */
};

struct CUmemPoolHandle_st {
  struct cu_obj obj;
  unsigned phys;
  bool is_default;
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
  bool fail_alloc_set;
  uint64_t fail_alloc_after; /* VGPU_SIM_FAIL_ALLOC_AFTER */
  uint64_t allocs_done;
};

extern struct cu_process g_cu;

/* cuda_init.c */
CUresult cu_ready(void); /* CUDA_ERROR_NOT_INITIALIZED unless cuInit succeeded */
CUresult cu_device(CUdevice dev, unsigned *phys);
uint64_t cu_max_u64(uint64_t a, uint64_t b);
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

/* cuda_module.c */
void cu_module_destroy(struct cu_obj *obj);
CUresult cu_function_ctx(CUfunction f, struct CUctx_st **ctx);

/* cuda_array.c */
void cu_array_destroy(struct cu_obj *obj);

#endif
