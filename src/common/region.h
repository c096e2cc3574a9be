/*
 * region.h -- the container's region file: one budget for all its processes.
 *
 * Every process of a container maps the same file
 * (CUDA_DEVICE_MEMORY_SHARED_CACHE). The file holds, per physical GPU (keyed
 * by UUID, never by an index that CUDA_VISIBLE_DEVICES could renumber), the
 * container's limits and the bytes charged against them, and per process a
 * slot with what that process holds on each GPU.
 *
 * Rules that make the budget exact:
 *  - Memory is reserved under the region mutex *before* the driver allocates,
 *    and refunded if the driver fails: two processes racing can never pass
 *    the limit together.
 *  - dev[].mem_used is always the sum of the live slots' mem_used, changed
 *    only under the mutex. If a process dies holding the mutex (robust mutex,
 *    EOWNERDEAD), the next locker drops dead slots and recomputes the sums.
 *  - A process holds a POSIX lock on its slot's byte (shmfile.h); when the
 *    kernel drops it, the slot is dead and its memory goes back to the budget.
 *  - Limits carry a generation counter; a process started with different limit
 *    variables, or `vgpu set`, writes new limits and bumps it. No first-writer-
 *    wins, so no need to rename the file to change a limit.
 *
 * This layout is an ABI shared with host tools (vgpu status, metrics): change
 * it only with a version bump. Integers are native-endian; all fields are
 * fixed-size.
 */
#ifndef VG_REGION_H
#define VG_REGION_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "err.h"
#include "shmfile.h"

#define VG_REGION_MAGIC 0x52504756u /* "VGPR" little-endian */
#define VG_REGION_VERSION_MAJOR 1
/* 1.1: compute-limiter fields in the device entry; 1.2: the ASSIGNED flag;
 * 1.3: the JOINED flag; 1.4: the share policy's trend, in a reserved word */
#define VG_REGION_VERSION_MINOR 4
#define VG_MAX_DEVICES 16
#define VG_MAX_PROCS 1024
#define VG_UUID_LEN 96
#define VG_DEFAULT_REGION_PATH "/tmp/vgpu.cache"

struct vg_region_device {
  char uuid[VG_UUID_LEN]; /* "GPU-..."; empty: entry unused */
  uint64_t mem_limit;     /* bytes; 0: unlimited */
  uint64_t mem_used;      /* bytes charged by live processes */
  uint64_t mem_total;     /* physical memory the driver reports */
  uint32_t sm_limit;      /* percent; 0: unlimited */
  uint32_t sm_policy;     /* VG_SM_POLICY_* */
  /* The container's GPU-time bucket (src/lib/limiter.c), under the mutex. */
  int64_t sm_tokens_ns;            /* GPU time the container may still submit */
  uint64_t sm_refill_ns;           /* CLOCK_MONOTONIC of the last refill */
  uint64_t sm_window_start_ns;     /* current 1 s accounting window */
  uint64_t sm_window_used_ns;      /* GPU time submitted in it */
  uint64_t sm_last_window_ns;      /* length of the last complete window */
  uint64_t sm_last_window_used_ns; /* GPU time submitted in it */
  uint32_t sm_borrow_pct;          /* "share" policy: idle time borrowed, percent */
  uint32_t sm_others_trend_pct;    /* "share": others' use, rising slowly (limiter.c) */
  uint64_t sm_borrow_at_ns;        /* when the borrow was last revised */
};

enum { VG_SM_POLICY_HARD = 0, VG_SM_POLICY_SHARE = 1 };

struct vg_region_proc {
  int32_t pid; /* in the container's PID namespace; 0: free slot */
  uint32_t flags;
  uint64_t mem_used[VG_MAX_DEVICES];      /* charged bytes per device entry */
  uint64_t context_bytes[VG_MAX_DEVICES]; /* driver context overhead, informational */
  uint64_t reserved[4];
};

struct vg_region {
  struct vg_shm_header header;
  union {
    pthread_mutex_t mutex;
    char mutex_space[64];
  } lock;
  uint64_t generation;   /* bumped on every limit change */
  uint32_t device_count; /* entries in use in dev[] */
  uint32_t flags;        /* VG_REGION_* */
  uint64_t reserved[8];
  struct vg_region_device dev[VG_MAX_DEVICES];
  struct vg_region_proc proc[VG_MAX_PROCS];
};

/* The node agent created the region at Allocate time and has not written
 * the pod's limits yet (docs/allocation.md): processes wait before using a
 * GPU, and fail closed if it takes too long. */
#define VG_REGION_LIMITS_PENDING 0x1u
/* The node agent made the region at Allocate with the container's GPUs
 * registered: dev[] is the container's whole assignment, and libvgpu refuses
 * a GPU that is not in it (docs/memory.md) instead of running it unlimited.
 * Set together with the pending state (vg_region_set_pending), which only
 * the agent writes; never cleared. */
#define VG_REGION_ASSIGNED 0x2u

/* Describes the region file to vg_shm_open. */
extern const struct vg_shm_spec vg_region_spec;

/* A process has joined the region at least once (vg_region_join): libvgpu
 * loaded in the container. Never cleared; the node agent's audit reads it
 * (src/agent/audit_rules.h). */
#define VG_REGION_JOINED 0x4u

/* Opens the region at path (or VG_DEFAULT_REGION_PATH when NULL/empty). */
int vg_region_open(struct vg_shm *shm, const char *path, struct vg_err *err);

/* The node agent's side (docs/security.md). A container's region is
 * <slot>/region.cache, mounted read-write in the container (the slot around
 * it read-only; slots from before were read-write), so its contents may be
 * forged. The agent opens the region
 * there without following links or creating it (vg_shm_open_at) and waits
 * at most VG_REGION_AGENT_LOCK_WAIT_MS for its lock; at Allocate it makes
 * a fresh one and renames it over whatever was there (vg_shm_create_at).
 * The mode lets a container's processes of any user charge memory. */
#define VG_REGION_FILE "region.cache"
#define VG_REGION_MODE 0666u
#define VG_REGION_AGENT_LOCK_WAIT_MS 200u
int vg_region_open_slot(struct vg_shm *shm, const char *slot_dir, bool readonly,
                        struct vg_err *err);
int vg_region_create_slot(struct vg_shm *shm, const char *slot_dir, struct vg_err *err);

static inline struct vg_region *vg_region_of(const struct vg_shm *shm) {
  return (struct vg_region *)shm->base;
}

/* Lock/unlock the region mutex; a dead holder is repaired transparently.
 * Returns VG_SHM_LOCKED (0), or VG_SHM_LOCK_TIMEDOUT when it was held past
 * shm->lock_wait_ms, or VG_SHM_LOCK_UNUSABLE (a corrupt file): callers fail
 * closed. The result is kept in shm->last_lock for messages. */
int vg_region_lock(struct vg_shm *shm);
void vg_region_unlock(struct vg_shm *shm);

/* With the lock held: frees the slots of dead processes and returns their
 * memory to the budget. Returns how many slots were freed. */
int vg_region_reap_locked(struct vg_shm *shm);

/* With the lock held: the entry for uuid, creating it if absent. Returns the
 * entry index or -1 when all VG_MAX_DEVICES are taken. */
int vg_region_device_locked(struct vg_shm *shm, const char *uuid, uint64_t mem_total);

/* Claims a free process slot for pid (takes its liveness lock). Returns the
 * slot index, or -1 when the table is full. */
int vg_region_join(struct vg_shm *shm, int32_t pid);
void vg_region_leave(struct vg_shm *shm, int slot);

/* Reserves bytes on device entry dev for slot; fails (returns false) if the
 * limit would be passed. Dead processes are reaped before giving up. */
bool vg_region_reserve(struct vg_shm *shm, int slot, int dev, uint64_t bytes);
/* The same, against the lower of the entry's limit and cap (0: no cap): the
 * node agent's grant, which the region itself cannot be trusted to hold. */
bool vg_region_reserve_capped(struct vg_shm *shm, int slot, int dev, uint64_t bytes, uint64_t cap);
void vg_region_release(struct vg_shm *shm, int slot, int dev, uint64_t bytes);
/* Adds bytes without checking the limit: memory the driver already holds. */
void vg_region_charge(struct vg_shm *shm, int slot, int dev, uint64_t bytes);

/* Sets a device's memory limit. Refuses (returns -1 with err) a limit below
 * what is already in use, so that nothing allocated is lost. */
int vg_region_set_mem_limit(struct vg_shm *shm, int dev, uint64_t limit, struct vg_err *err);
int vg_region_set_sm_limit(struct vg_shm *shm, int dev, unsigned percent, struct vg_err *err);

/* Marks the limits pending (the agent, at Allocate) or ready (once written);
 * either way the region becomes the agent's: VG_REGION_ASSIGNED. */
void vg_region_set_pending(struct vg_shm *shm, bool pending);
static inline bool vg_region_pending(const struct vg_region *r) {
  return (__atomic_load_n(&r->flags, __ATOMIC_ACQUIRE) & VG_REGION_LIMITS_PENDING) != 0;
}
static inline bool vg_region_assigned(const struct vg_region *r) {
  return (__atomic_load_n(&r->flags, __ATOMIC_ACQUIRE) & VG_REGION_ASSIGNED) != 0;
}
static inline bool vg_region_joined(const struct vg_region *r) {
  return (__atomic_load_n(&r->flags, __ATOMIC_ACQUIRE) & VG_REGION_JOINED) != 0;
}

/* The entry for uuid, or -1. Lock-free: entries are only ever appended, each
 * written before device_count publishes it. */
int vg_region_find_device(const struct vg_region *r, const char *uuid);

/* GPU time the container submitted on a device in the last complete second,
 * as a percentage of the device (0..100); 0 when it has been idle for longer.
 * Lock-free, for tools (vgpu status, the node agent's metrics). */
double vg_region_sm_used_pct(const struct vg_region_device *d);

/* Lock-free readers for tools and the hot path. */
static inline uint64_t vg_region_mem_used(const struct vg_region *r, int dev) {
  return __atomic_load_n(&r->dev[dev].mem_used, __ATOMIC_RELAXED);
}
static inline uint64_t vg_region_mem_limit(const struct vg_region *r, int dev) {
  return __atomic_load_n(&r->dev[dev].mem_limit, __ATOMIC_RELAXED);
}

#endif
