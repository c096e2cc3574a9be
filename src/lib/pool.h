/*
 * pool.h -- what a stream-ordered memory pool physically holds.
 *
 * A CUDA pool keeps memory freed with cuMemFreeAsync reserved, up to its
 * release threshold, and gives it back at synchronisation or on
 * cuMemPoolTrimTo. That memory is as real as a live allocation, so each pool
 * is charged max(live, reserved): its live allocations are charged one by
 * one (their records in the allocation table name the pool in `link`), and
 * the pool itself carries `extra` = max(0, RESERVED_MEM_CURRENT - live),
 * re-read from the driver after every allocation and free from the pool,
 * after cuMemPoolTrimTo and synchronisations, and before any allocation is
 * refused (docs/memory.md, "Pools").
 *
 * One process mutex serialises the pool path (the driver's allocation or
 * free and the re-read), so the reserve read always matches the live count.
 * The plain cuMemAlloc path never takes it.
 */
#ifndef VG_POOL_H
#define VG_POOL_H

#include <stdbool.h>
#include <stdint.h>

#include "charge.h"
#include "cuda_abi.h"

/* A pool and its region entry: >= 0, -1 host memory (not charged), -2 not
 * known yet (charged where it is first used). */
void vg_pool_note(CUmemoryPool pool, int dev);
int vg_pool_device(CUmemoryPool pool);
/* The driver destroyed pool: its cache is refunded, the pool forgotten. */
void vg_pool_destroyed(CUmemoryPool pool);

/* The pool path, under the pool mutex:
 *   vg_pool_begin    lock; reserve bytes on dev for an allocation from pool,
 *                    taking first what the pool's cache already pays for
 *   driver call
 *   vg_pool_commit   on success: record the pointer, re-read the reserve; unlock
 *   vg_pool_cancel   on failure: undo; unlock
 * vg_pool_begin has locked even when it fails: call vg_pool_cancel then. */
enum vg_charge_rc vg_pool_begin(CUmemoryPool pool, int dev, uint64_t bytes, struct vg_charge *c);
bool vg_pool_commit(struct vg_charge *c, uint64_t owner, CUdeviceptr ptr);
void vg_pool_cancel(struct vg_charge *c);

/* Frees: a record with c->pool != 0 is freed with the pool mutex held
 * (vg_pool_lock before the driver call, vg_pool_unlock after); on success
 * vg_pool_freed moves its charge to the pool's cache and re-reads it. */
void vg_pool_lock(void);
void vg_pool_unlock(void);
void vg_pool_freed(struct vg_charge *c);

/* Re-reads the reserve of every pool of this process and refunds what they
 * released (synchronisation, trim, before refusing an allocation). True if
 * anything was refunded. Nearly free when no pool holds a cache. */
bool vg_pool_resync(void);
/* Recounts the pools' live bytes from the allocation table (after a context
 * took its allocations with it). */
void vg_pool_recount(void);
/* Forgets every pool (a forked child). */
void vg_pool_reset(void);

#endif
