/* region.c -- see region.h for the rules this code keeps. */
#include "region.h"

#include "grant.h"

#include <time.h>
#include <stdio.h>
#include <string.h>

#include "size.h"

static int region_init(void *base, size_t size, void *arg, struct vg_err *err) {
  (void)size;
  (void)arg;
  struct vg_region *r = base;
  if (vg_shared_mutex_init(&r->lock.mutex) != 0)
    return vg_err_set(err, "cannot initialise the region mutex");
  return 0;
}

const struct vg_shm_spec vg_region_spec = {
    .kind = "region file",
    .magic = VG_REGION_MAGIC,
    .version_major = VG_REGION_VERSION_MAJOR,
    .version_minor = VG_REGION_VERSION_MINOR,
    .size = sizeof(struct vg_region),
    .init = region_init,
    .init_arg = NULL,
};

int vg_region_open(struct vg_shm *shm, const char *path, struct vg_err *err) {
  if (path == NULL || *path == '\0') path = VG_DEFAULT_REGION_PATH;
  return vg_shm_open(shm, path, &vg_region_spec, err);
}

int vg_region_open_slot(struct vg_shm *shm, const char *slot_dir, bool readonly,
                        struct vg_err *err) {
  if (vg_shm_open_at(shm, slot_dir, VG_REGION_FILE, &vg_region_spec, readonly, err) != 0) return -1;
  shm->lock_wait_ms = VG_REGION_AGENT_LOCK_WAIT_MS;
  return 0;
}

int vg_region_create_slot(struct vg_shm *shm, const char *slot_dir, struct vg_err *err) {
  if (vg_shm_create_at(shm, slot_dir, VG_REGION_FILE, &vg_region_spec, VG_REGION_MODE, err) != 0)
    return -1;
  shm->lock_wait_ms = VG_REGION_AGENT_LOCK_WAIT_MS;
  return 0;
}

static void add_used(uint64_t *counter, int64_t delta) {
  __atomic_store_n(counter, *counter + (uint64_t)delta, __ATOMIC_RELAXED);
}

/* Frees slot i and gives its memory back. Lock held. */
static void drop_slot(struct vg_region *r, int i) {
  struct vg_region_proc *p = &r->proc[i];
  for (int d = 0; d < VG_MAX_DEVICES; d++) {
    uint64_t held = p->mem_used[d];
    uint64_t used = r->dev[d].mem_used;
    add_used(&r->dev[d].mem_used, -(int64_t)(held < used ? held : used));
    p->mem_used[d] = 0;
    p->context_bytes[d] = 0;
  }
  __atomic_store_n(&p->pid, 0, __ATOMIC_RELEASE);
}

int vg_region_reap_locked(struct vg_shm *shm) {
  struct vg_region *r = vg_region_of(shm);
  int reaped = 0;
  for (int i = 0; i < VG_MAX_PROCS; i++) {
    if (r->proc[i].pid == 0 || vg_shm_slot_alive(shm, (unsigned)i)) continue;
    drop_slot(r, i);
    reaped++;
  }
  return reaped;
}

/* The previous lock holder died, possibly half-way through an update: drop
 * every dead slot and rebuild the per-device sums from the live ones, which
 * are consistent because only lock holders write them. */
static void repair(void *arg) {
  struct vg_shm *shm = arg;
  struct vg_region *r = vg_region_of(shm);
  vg_region_reap_locked(shm);
  for (int d = 0; d < VG_MAX_DEVICES; d++) {
    uint64_t sum = 0;
    for (int i = 0; i < VG_MAX_PROCS; i++)
      if (r->proc[i].pid != 0) sum += r->proc[i].mem_used[d];
    __atomic_store_n(&r->dev[d].mem_used, sum, __ATOMIC_RELAXED);
  }
}

int vg_region_lock(struct vg_shm *shm) {
  shm->last_lock =
      vg_shared_mutex_lock(&vg_region_of(shm)->lock.mutex, shm->lock_wait_ms, repair, shm);
  return shm->last_lock;
}

void vg_region_unlock(struct vg_shm *shm) {
  vg_shared_mutex_unlock(&vg_region_of(shm)->lock.mutex);
}

int vg_region_find_device(const struct vg_region *r, const char *uuid) {
  uint32_t n = __atomic_load_n(&r->device_count, __ATOMIC_ACQUIRE);
  for (uint32_t i = 0; i < n && i < VG_MAX_DEVICES; i++)
    if (strncmp(r->dev[i].uuid, uuid, VG_UUID_LEN) == 0) return (int)i;
  return -1;
}

int vg_region_device_locked(struct vg_shm *shm, const char *uuid, uint64_t mem_total) {
  struct vg_region *r = vg_region_of(shm);
  int found = vg_region_find_device(r, uuid);
  if (found >= 0) {
    if (mem_total != 0) r->dev[found].mem_total = mem_total;
    return found;
  }
  if (r->device_count >= VG_MAX_DEVICES) return -1;
  int i = (int)r->device_count;
  snprintf(r->dev[i].uuid, VG_UUID_LEN, "%s", uuid);
  r->dev[i].mem_total = mem_total;
  __atomic_store_n(&r->device_count, (uint32_t)i + 1, __ATOMIC_RELEASE);
  return i;
}

int vg_region_join(struct vg_shm *shm, int32_t pid) {
  struct vg_region *r = vg_region_of(shm);
  if (vg_region_lock(shm) != 0) return -1;
  vg_region_reap_locked(shm);
  int slot = -1;
  for (int i = 0; i < VG_MAX_PROCS && slot < 0; i++) {
    if (r->proc[i].pid != 0 || vg_shm_claim_slot(shm, (unsigned)i) != 0) continue;
    memset(&r->proc[i], 0, sizeof(r->proc[i]));
    __atomic_store_n(&r->proc[i].pid, pid, __ATOMIC_RELEASE);
    slot = i;
  }
  if (slot >= 0) __atomic_or_fetch(&r->flags, VG_REGION_JOINED, __ATOMIC_RELEASE);
  vg_region_unlock(shm);
  return slot;
}

void vg_region_leave(struct vg_shm *shm, int slot) {
  if (slot < 0 || slot >= VG_MAX_PROCS || vg_region_lock(shm) != 0) return;
  drop_slot(vg_region_of(shm), slot);
  vg_region_unlock(shm);
  vg_shm_release_slot(shm, (unsigned)slot);
}

static bool fits(const struct vg_region_device *d, uint64_t bytes, uint64_t cap) {
  if (bytes > UINT64_MAX - d->mem_used) return false; /* no limit still cannot wrap */
  uint64_t limit = vg_grant_clamp(d->mem_limit, cap);
  return limit == 0 || (d->mem_used <= limit && bytes <= limit - d->mem_used);
}

bool vg_region_reserve(struct vg_shm *shm, int slot, int dev, uint64_t bytes) {
  return vg_region_reserve_capped(shm, slot, dev, bytes, 0);
}

bool vg_region_reserve_capped(struct vg_shm *shm, int slot, int dev, uint64_t bytes, uint64_t cap) {
  struct vg_region *r = vg_region_of(shm);
  struct vg_region_device *d = &r->dev[dev];
  if (vg_region_lock(shm) != 0) return false; /* an unusable lock: fail closed */
  bool ok = fits(d, bytes, cap);
  if (!ok && vg_region_reap_locked(shm) > 0) ok = fits(d, bytes, cap);
  if (ok) {
    add_used(&d->mem_used, (int64_t)bytes);
    add_used(&r->proc[slot].mem_used[dev], (int64_t)bytes);
  }
  vg_region_unlock(shm);
  return ok;
}

void vg_region_charge(struct vg_shm *shm, int slot, int dev, uint64_t bytes) {
  struct vg_region *r = vg_region_of(shm);
  if (vg_region_lock(shm) != 0) return;
  add_used(&r->dev[dev].mem_used, (int64_t)bytes);
  add_used(&r->proc[slot].mem_used[dev], (int64_t)bytes);
  vg_region_unlock(shm);
}

void vg_region_release(struct vg_shm *shm, int slot, int dev, uint64_t bytes) {
  struct vg_region *r = vg_region_of(shm);
  if (vg_region_lock(shm) != 0) return;
  uint64_t *mine = &r->proc[slot].mem_used[dev];
  uint64_t give = bytes < *mine ? bytes : *mine;
  add_used(mine, -(int64_t)give);
  add_used(&r->dev[dev].mem_used,
           -(int64_t)(give < r->dev[dev].mem_used ? give : r->dev[dev].mem_used));
  vg_region_unlock(shm);
}

int vg_region_set_mem_limit(struct vg_shm *shm, int dev, uint64_t limit, struct vg_err *err) {
  struct vg_region *r = vg_region_of(shm);
  int rc = 0;
  if (vg_region_lock(shm) != 0)
    return vg_err_set(err, "region file %s: %s", shm->path, vg_shm_lock_strerror(shm->last_lock));
  uint64_t used = r->dev[dev].mem_used;
  if (limit != 0 && limit < used) {
    char a[32], b[32];
    rc =
        vg_err_set(err, "cannot lower the memory limit of %s to %s: %s is in use", r->dev[dev].uuid,
                   vg_format_size(limit, a, sizeof(a)), vg_format_size(used, b, sizeof(b)));
  } else if (r->dev[dev].mem_limit != limit) {
    __atomic_store_n(&r->dev[dev].mem_limit, limit, __ATOMIC_RELAXED);
    __atomic_add_fetch(&r->generation, 1, __ATOMIC_RELEASE);
  }
  vg_region_unlock(shm);
  return rc;
}

int vg_region_set_sm_limit(struct vg_shm *shm, int dev, unsigned percent, struct vg_err *err) {
  struct vg_region *r = vg_region_of(shm);
  if (vg_region_lock(shm) != 0)
    return vg_err_set(err, "region file %s: %s", shm->path, vg_shm_lock_strerror(shm->last_lock));
  if (r->dev[dev].sm_limit != percent) {
    __atomic_store_n(&r->dev[dev].sm_limit, percent, __ATOMIC_RELAXED);
    __atomic_add_fetch(&r->generation, 1, __ATOMIC_RELEASE);
  }
  vg_region_unlock(shm);
  return 0;
}

void vg_region_set_pending(struct vg_shm *shm, bool pending) {
  struct vg_region *r = vg_region_of(shm);
  /* Only the node agent hands a region over this way (docs/allocation.md),
   * and it has registered the container's GPUs by then: mark it assigned. */
  __atomic_or_fetch(&r->flags, VG_REGION_ASSIGNED, __ATOMIC_RELEASE);
  if (pending)
    __atomic_or_fetch(&r->flags, VG_REGION_LIMITS_PENDING, __ATOMIC_RELEASE);
  else
    __atomic_and_fetch(&r->flags, ~VG_REGION_LIMITS_PENDING, __ATOMIC_RELEASE);
  __atomic_add_fetch(&r->generation, 1, __ATOMIC_RELEASE);
}

double vg_region_sm_used_pct(const struct vg_region_device *d) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  uint64_t now = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
  uint64_t len = __atomic_load_n(&d->sm_last_window_ns, __ATOMIC_RELAXED);
  uint64_t used = __atomic_load_n(&d->sm_last_window_used_ns, __ATOMIC_RELAXED);
  uint64_t start = __atomic_load_n(&d->sm_window_start_ns, __ATOMIC_RELAXED);
  if (len == 0 || now - start > 2000000000ULL) return 0;
  double pct = 100.0 * (double)used / (double)len;
  return pct > 100 ? 100 : pct;
}
