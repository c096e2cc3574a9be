/* pool.c -- see pool.h. Pools are few: a small array, scanned linearly. */
#include "pool.h"

#include <pthread.h>
#include <string.h>

#include "alloc_table.h"
#include "log.h"
#include "size.h"
#include "state.h"

#define VG_POOLS_MAX 256

struct pool {
  CUmemoryPool handle; /* NULL: free entry */
  int dev;             /* region entry, -1 host, -2 not known yet */
  bool busy;           /* an allocation is between begin and commit */
  uint64_t live;       /* charged to the live allocations' records */
  uint64_t extra;      /* charged to the pool: the reserve beyond live */
};

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static __thread bool g_locked_here; /* this thread holds g_lock */
static struct pool g_pools[VG_POOLS_MAX];
static uint64_t g_extra; /* sum of extra (atomic reads outside the lock) */

void vg_pool_lock(void) {
  pthread_mutex_lock(&g_lock);
  g_locked_here = true;
}

void vg_pool_unlock(void) {
  g_locked_here = false;
  pthread_mutex_unlock(&g_lock);
}

static struct pool *find(CUmemoryPool h) {
  if (h == NULL) return NULL;
  for (int i = 0; i < VG_POOLS_MAX; i++)
    if (g_pools[i].handle == h) return &g_pools[i];
  return NULL;
}

static struct pool *find_or_add(CUmemoryPool h, int dev) {
  struct pool *p = find(h);
  if (p != NULL || h == NULL) return p;
  for (int i = 0; i < VG_POOLS_MAX; i++)
    if (g_pools[i].handle == NULL) {
      g_pools[i] = (struct pool){.handle = h, .dev = dev};
      return &g_pools[i];
    }
  vg_warn("more than %d memory pools: the cache of pool %p is not charged", VG_POOLS_MAX,
          (void *)h);
  return NULL;
}

static void set_extra(struct pool *p, uint64_t extra) {
  __atomic_store_n(&g_extra, g_extra - p->extra + extra, __ATOMIC_RELAXED);
  p->extra = extra;
}

/* Brings p's charge to max(live, reserved), never below what the driver
 * holds: memory it already reserved is charged even past the limit (the
 * region then tells every other process the truth). True if it refunded. */
static bool settle(struct pool *p) {
  if (p->dev < 0 || p->busy) return false;
  uint64_t reserved;
  if (VG_CU(cuMemPoolGetAttribute, p->handle, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &reserved) !=
      CUDA_SUCCESS)
    return false;
  uint64_t want = reserved > p->live ? reserved - p->live : 0;
  if (want == p->extra) return false;
  if (want < p->extra) {
    vg_state_release(p->dev, p->extra - want);
    set_extra(p, want);
    return true;
  }
  uint64_t more = want - p->extra;
  if (vg_state_reserve(p->dev, more) != VG_RESERVE_OK) {
    char a[32];
    vg_warn("memory pool %p holds %s more than its allocations and the limit allows; charged",
            (void *)p->handle, vg_format_size(more, a, sizeof(a)));
    vg_state_charge(p->dev, more);
  }
  set_extra(p, want);
  return false;
}

void vg_pool_note(CUmemoryPool pool, int dev) {
  vg_pool_lock();
  struct pool *p = find_or_add(pool, dev);
  if (p != NULL && p->dev == -2) p->dev = dev;
  vg_pool_unlock();
}

int vg_pool_device(CUmemoryPool pool) {
  vg_pool_lock();
  struct pool *p = find(pool);
  int dev = p != NULL ? p->dev : -2;
  vg_pool_unlock();
  return dev;
}

void vg_pool_destroyed(CUmemoryPool pool) {
  vg_pool_lock();
  struct pool *p = find(pool);
  if (p != NULL) {
    /* Live allocations keep their own charges until their frees. */
    if (p->dev >= 0 && p->extra > 0) vg_state_release(p->dev, p->extra);
    set_extra(p, 0);
    p->handle = NULL;
  }
  vg_pool_unlock();
}

enum vg_charge_rc vg_pool_begin(CUmemoryPool pool, int dev, uint64_t bytes, struct vg_charge *c) {
  vg_pool_lock();
  struct pool *p = find_or_add(pool, -2);
  if (p != NULL && p->dev == -2 && dev >= 0) p->dev = dev;
  uint64_t take = 0;
  bool pooled = p != NULL && p->dev >= 0 && p->dev == dev && !p->busy;
  if (pooled) {
    take = p->extra < bytes ? p->extra : bytes; /* memory the pool already pays for */
    set_extra(p, p->extra - take);
    p->busy = true;
  }
  enum vg_charge_rc rc = vg_charge_begin(dev, bytes - take, c);
  c->pool = pooled ? (uint64_t)(uintptr_t)pool : 0;
  c->taken = take;
  return rc;
}

/* Gives back what begin took from the pool and clears busy. */
static void end_take(struct vg_charge *c) {
  struct pool *p = find((CUmemoryPool)(uintptr_t)c->pool);
  if (p == NULL) return;
  if (p->busy) {
    set_extra(p, p->extra + c->taken);
    p->busy = false;
  }
  c->taken = 0;
}

void vg_pool_cancel(struct vg_charge *c) {
  end_take(c);
  vg_charge_cancel(c);
  struct pool *p = find((CUmemoryPool)(uintptr_t)c->pool);
  if (p != NULL) settle(p); /* a failed allocation may have trimmed the pool */
  vg_pool_unlock();
}

bool vg_pool_commit(struct vg_charge *c, uint64_t owner, CUdeviceptr ptr) {
  struct pool *p = find((CUmemoryPool)(uintptr_t)c->pool);
  bool pooled = p != NULL && p->busy;
  if (pooled) {
    c->bytes += c->taken; /* the allocation now carries what the cache paid */
    c->taken = 0;
    p->busy = false;
  } else {
    end_take(c);
    c->pool = 0; /* recorded without a pool */
  }
  if (owner != 0) c->ctx = owner;
  bool ok = vg_charge_commit(c, VG_ALLOC_MEMORY, ptr);
  if (ok && pooled) {
    p->live += c->bytes;
    settle(p);
  }
  vg_pool_unlock();
  return ok;
}

void vg_pool_freed(struct vg_charge *c) {
  struct pool *p = find((CUmemoryPool)(uintptr_t)c->pool);
  if (p == NULL || p->dev != c->dev || p->busy) {
    vg_charge_refund(c);
    return;
  }
  /* The freed block's charge moves to the pool; settle refunds what the
   * pool did not keep. */
  p->live -= c->bytes < p->live ? c->bytes : p->live;
  set_extra(p, p->extra + c->bytes);
  c->dev = -1;
  c->bytes = 0;
  settle(p);
}

bool vg_pool_resync(void) {
  if (__atomic_load_n(&g_extra, __ATOMIC_RELAXED) == 0) return false;
  bool mine = g_locked_here;
  if (!mine) vg_pool_lock();
  bool refunded = false;
  for (int i = 0; i < VG_POOLS_MAX; i++)
    if (g_pools[i].handle != NULL && settle(&g_pools[i])) refunded = true;
  if (!mine) vg_pool_unlock();
  return refunded;
}

void vg_pool_recount(void) {
  vg_pool_lock();
  for (int i = 0; i < VG_POOLS_MAX; i++) {
    struct pool *p = &g_pools[i];
    if (p->handle == NULL || p->dev < 0) continue;
    p->live = vg_alloc_sum_linked(VG_ALLOC_MEMORY, (uint64_t)(uintptr_t)p->handle);
    settle(p);
  }
  vg_pool_unlock();
}

void vg_pool_reset(void) {
  pthread_mutex_init(&g_lock, NULL);
  g_locked_here = false;
  memset(g_pools, 0, sizeof(g_pools));
  g_extra = 0;
}
