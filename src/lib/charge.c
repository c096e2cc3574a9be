/* charge.c -- see charge.h. */
#include "charge.h"

#include <stdint.h>

#include "cuda_abi.h"
#include "log.h"
#include "pool.h"
#include "size.h"
#include "state.h"

enum vg_charge_rc vg_charge_begin(int dev, uint64_t bytes, struct vg_charge *c) {
  c->dev = -1;
  c->bytes = 0;
  c->ctx = 0;
  c->pool = 0;
  c->taken = 0;
  if (!vg_state_ready()) return vg_state.config_ok ? VG_CHARGE_UNTRACKED : VG_CHARGE_REFUSED;
  CUcontext ctx = NULL;
  if (VG_CU(cuCtxGetCurrent, &ctx) == CUDA_SUCCESS) c->ctx = (uint64_t)(uintptr_t)ctx;
  if (dev < 0) {
    CUdevice ordinal;
    if (VG_CU(cuCtxGetDevice, &ordinal) != CUDA_SUCCESS)
      return VG_CHARGE_UNTRACKED; /* no context: the driver will say so */
    dev = vg_state_device((int)ordinal);
    if (dev == VG_STATE_NOT_ASSIGNED) return VG_CHARGE_FOREIGN; /* said by state.c */
    if (dev < 0) {
      /* A device we cannot account for is never used unaccounted. */
      vg_error("CUDA device %d cannot be accounted in region file %s; refusing the allocation",
               (int)ordinal, vg_state.shm.path);
      return VG_CHARGE_OVER;
    }
  }
  enum vg_reserve_rc rc = vg_state_reserve(dev, bytes);
  /* Before refusing: memory this process's pools released since we last
   * looked is no longer theirs to be charged for. */
  if (rc == VG_RESERVE_OVER && vg_pool_resync()) rc = vg_state_reserve(dev, bytes);
  /* A full process table is logged where it happens; the allocation fails
   * as out of memory rather than going through unaccounted. */
  if (rc == VG_RESERVE_NO_SLOT) return VG_CHARGE_OVER;
  if (rc == VG_RESERVE_OVER) {
    struct vg_region *r = vg_region_of(&vg_state.shm);
    char a[32], b[32], l[32];
    vg_info("out of memory on %s: %s requested, %s of %s in use", r->dev[dev].uuid,
            vg_format_size(bytes, a, sizeof(a)),
            vg_format_size(vg_region_mem_used(r, dev), b, sizeof(b)),
            vg_format_size(vg_state_mem_limit(dev), l, sizeof(l)));
    return VG_CHARGE_OVER;
  }
  c->dev = dev;
  c->bytes = bytes;
  return VG_CHARGE_OK;
}

bool vg_charge_resize(struct vg_charge *c, uint64_t bytes) {
  if (c->dev < 0 || bytes == c->bytes) return true;
  if (bytes < c->bytes) {
    vg_state_release(c->dev, c->bytes - bytes);
    c->bytes = bytes;
    return true;
  }
  if (vg_state_reserve(c->dev, bytes - c->bytes) == VG_RESERVE_OK) {
    c->bytes = bytes;
    return true;
  }
  vg_charge_cancel(c);
  return false;
}

bool vg_charge_commit(struct vg_charge *c, enum vg_alloc_kind kind, uint64_t key) {
  if (c->dev < 0) return true;
  struct vg_alloc old;
  int rc = vg_alloc_put(
      kind, key,
      (struct vg_alloc){.dev = c->dev, .bytes = c->bytes, .ctx = c->ctx, .link = c->pool}, &old);
  if (rc == 1) vg_state_release(old.dev, old.bytes); /* its free never reached us */
  if (rc >= 0) return true;
  vg_error("cannot record an allocation (out of host memory)");
  vg_charge_cancel(c);
  return false;
}

void vg_charge_cancel(struct vg_charge *c) {
  if (c->dev >= 0 && c->bytes > 0) vg_state_release(c->dev, c->bytes);
  c->dev = -1;
  c->bytes = 0;
}

bool vg_charge_take(enum vg_alloc_kind kind, uint64_t key, struct vg_charge *c) {
  struct vg_alloc a;
  c->dev = -1;
  c->bytes = 0;
  c->pool = 0;
  c->taken = 0;
  if (!vg_alloc_take(kind, key, &a)) return false;
  c->dev = a.dev;
  c->bytes = a.bytes;
  c->ctx = a.ctx;
  c->pool = kind == VG_ALLOC_MEMORY ? a.link : 0;
  return true;
}

void vg_charge_refund(struct vg_charge *c) { vg_charge_cancel(c); }

void vg_charge_restore(struct vg_charge *c, enum vg_alloc_kind kind, uint64_t key) {
  struct vg_alloc old;
  if (c->dev >= 0)
    vg_alloc_put(
        kind, key,
        (struct vg_alloc){.dev = c->dev, .bytes = c->bytes, .ctx = c->ctx, .link = c->pool}, &old);
}

void vg_charge_context_gone(uint64_t ctx) {
  uint64_t freed[VG_MAX_DEVICES] = {0};
  vg_alloc_drop_context(ctx, freed, VG_MAX_DEVICES);
  for (int d = 0; d < VG_MAX_DEVICES; d++)
    if (freed[d] > 0) vg_state_release(d, freed[d]);
  vg_pool_recount(); /* pool allocations went back to their pools */
}

int vg_charge_error(enum vg_charge_rc rc) {
  switch (rc) {
    case VG_CHARGE_OVER:
      return CUDA_ERROR_OUT_OF_MEMORY;
    case VG_CHARGE_REFUSED:
      return CUDA_ERROR_INVALID_VALUE;
    case VG_CHARGE_FOREIGN:
      return CUDA_ERROR_INVALID_DEVICE;
    default:
      return CUDA_SUCCESS;
  }
}
