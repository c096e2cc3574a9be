/*
 * charge.h -- the reserve / allocate / commit-or-refund protocol every
 * allocating hook follows.
 *
 *   vg_charge_begin   reserve the bytes in the container's budget (or fail:
 *                     the hook returns CUDA_ERROR_OUT_OF_MEMORY and the driver
 *                     is never called)
 *   driver call
 *   vg_charge_commit  on success: remember what the object holds
 *   vg_charge_cancel  on failure: give the reservation back
 *
 * Frees run the other way: vg_charge_take the record, call the driver, then
 * vg_charge_refund on success or vg_charge_restore on failure. The refund
 * comes after the driver has released the memory, so a neighbour can never
 * be promised memory the driver still holds.
 */
#ifndef VG_CHARGE_H
#define VG_CHARGE_H

#include <stdbool.h>
#include <stdint.h>

#include "alloc_table.h"
#include "hooks.h"

enum vg_charge_rc {
  VG_CHARGE_OK,        /* reserved: call the driver */
  VG_CHARGE_UNTRACKED, /* nothing to account (no context, host memory): call the driver */
  VG_CHARGE_OVER,      /* over the limit: return CUDA_ERROR_OUT_OF_MEMORY */
  VG_CHARGE_REFUSED,   /* configuration is broken: return CUDA_ERROR_INVALID_VALUE */
  VG_CHARGE_FOREIGN    /* not this container's GPU: return CUDA_ERROR_INVALID_DEVICE */
};

struct vg_charge {
  int dev; /* region entry, -1 untracked */
  uint64_t bytes;
  uint64_t ctx;   /* context current at the reservation; 0 for objects that outlive contexts */
  uint64_t pool;  /* memory: the pool it comes from (pool.h), 0 none */
  uint64_t taken; /* pool.c: bytes of the pool's cache this allocation took over */
};

/* Reserves bytes on region entry dev (-1: the current context's device),
 * noting the current context: objects die with it (hook_context.c). */
enum vg_charge_rc vg_charge_begin(int dev, uint64_t bytes, struct vg_charge *c);
/* Changes a reservation to the size the driver actually used; false (and
 * nothing reserved any more) if the larger size does not fit. */
bool vg_charge_resize(struct vg_charge *c, uint64_t bytes);
/* Records the object; false if it could not be recorded (the reservation is
 * then given back and the caller must free the object and fail). */
bool vg_charge_commit(struct vg_charge *c, enum vg_alloc_kind kind, uint64_t key);
void vg_charge_cancel(struct vg_charge *c);

/* The driver destroyed context ctx and everything allocated in it: refund it. */
void vg_charge_context_gone(uint64_t ctx);

bool vg_charge_take(enum vg_alloc_kind kind, uint64_t key, struct vg_charge *c);
void vg_charge_refund(struct vg_charge *c);
void vg_charge_restore(struct vg_charge *c, enum vg_alloc_kind kind, uint64_t key);

/* Maps a charge result to the CUresult a hook returns instead of calling
 * the driver (CUDA_SUCCESS: go ahead). */
int vg_charge_error(enum vg_charge_rc rc);

/* Every CUDA hook starts here: the driver must be loaded. */
#define VG_ENTER()                                          \
  do {                                                      \
    if (!vg_cuda_load()) return CUDA_ERROR_NOT_INITIALIZED; \
  } while (0)

/* The free side of the protocol for any object recorded under (kind, key):
 * take the record, let the driver free, refund or put the record back. An
 * object we never recorded is the driver's business alone. */
#define VG_FREE_AND_REFUND(kind, key, call)      \
  do {                                           \
    struct vg_charge c_;                         \
    bool ours_ = vg_charge_take(kind, key, &c_); \
    CUresult rc_ = (call);                       \
    if (!ours_) return rc_;                      \
    if (rc_ == CUDA_SUCCESS)                     \
      vg_charge_refund(&c_);                     \
    else                                         \
      vg_charge_restore(&c_, kind, key);         \
    return rc_;                                  \
  } while (0)

#endif
