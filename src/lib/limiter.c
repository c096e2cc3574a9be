/* limiter.c -- see limiter.h. */
#include "limiter.h"

#include <errno.h>
#include <time.h>

#include "hooks.h"
#include "log.h"
#include "state.h"

#define NS_PER_S 1000000000ULL
#define BURST_NS (20ULL * 1000 * 1000)   /* bucket depth: 20 ms (+ 2 kernels, depth_of) */
#define DEBT_NS (1ULL * 1000 * 1000)     /* sleep once 1 ms of GPU time is owed */
#define IDLE_CAP_NS (1000ULL * NS_PER_S) /* longer gaps count as this long */
#define REVISE_NS (100ULL * 1000 * 1000)
#define SHARE_MARGIN_PCT 5 /* headroom left for others when borrowing */

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * NS_PER_S + (uint64_t)ts.tv_nsec;
}

static bool scan_engaged(void) {
  for (int i = 0; i < VG_MAX_DEVICES; i++)
    if (vg_state.cfg.sm_set[i] && vg_state.cfg.sm_limit[i] != 0) return true;
  if (vg_state_grant_limits_sm()) return true; /* whatever the region says */
  const struct vg_region *r = vg_region_of(&vg_state.shm);
  uint32_t n = __atomic_load_n(&r->device_count, __ATOMIC_ACQUIRE);
  for (uint32_t d = 0; d < n && d < VG_MAX_DEVICES; d++)
    if (__atomic_load_n(&r->dev[d].sm_limit, __ATOMIC_RELAXED) != 0) return true;
  return false;
}

/* The answer changes only when a limit changes, and every limit change
 * bumps the region's generation: one load and a compare per launch. */
bool vg_limiter_engaged(void) {
  static uint64_t seen = UINT64_MAX;
  static bool engaged;
  if (!vg_state_ready()) return false;
  /* Under a grant nothing is decided before the grant is read: this waits
   * for the node agent like any first use of a GPU. */
  bool grant = __atomic_load_n(&vg_state.grant_loaded, __ATOMIC_ACQUIRE);
  if (vg_state.granted && !grant) {
    vg_state_current_device();
    grant = __atomic_load_n(&vg_state.grant_loaded, __ATOMIC_ACQUIRE);
  }
  uint64_t gen = __atomic_load_n(&vg_region_of(&vg_state.shm)->generation, __ATOMIC_ACQUIRE);
  gen = gen * 2 + grant; /* the grant's arrival counts as a change */
  if (gen == __atomic_load_n(&seen, __ATOMIC_ACQUIRE))
    return __atomic_load_n(&engaged, __ATOMIC_RELAXED);
  vg_state_refresh_grant(); /* a resize moves the generation too */
  bool now = scan_engaged();
  __atomic_store_n(&engaged, now, __ATOMIC_RELAXED);
  __atomic_store_n(&seen, gen, __ATOMIC_RELEASE);
  return now;
}

unsigned vg_limiter_percent(int dev) {
  if (dev < 0 || dev >= VG_MAX_DEVICES) return 0;
  return vg_state_sm_limit(dev);
}

/* NVML handle of the GPU with this UUID, or NULL. */
static nvmlDevice_t nvml_device(const char *uuid) {
  static int nvml_ready = -1;
  if (nvml_ready < 0) nvml_ready = vg_nvml_load() && VG_NV(nvmlInit_v2) == NVML_SUCCESS;
  nvmlDevice_t handle;
  if (!nvml_ready || VG_NV(nvmlDeviceGetHandleByUUID, uuid, &handle) != NVML_SUCCESS) return NULL;
  return handle;
}

/* True if pid is a live process of this container (a region slot). */
static bool ours(const struct vg_region *r, unsigned pid) {
  for (int i = 0; i < VG_MAX_PROCS; i++)
    if ((unsigned)r->proc[i].pid == pid && vg_shm_slot_alive(&vg_state.shm, (unsigned)i))
      return true;
  return false;
}

/* What NVML says the device spent, over the last second, on this
 * container's processes (*mine) and on everybody else's (*others), in SM
 * percent. False if NVML cannot tell. */
static bool measured_use(const struct vg_region_device *d, unsigned *mine, unsigned *others) {
  *mine = *others = 0;
  nvmlDevice_t handle = nvml_device(d->uuid);
  if (handle == NULL) return false;
  nvmlProcessUtilizationSample_t samples[64];
  unsigned count = 64;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  unsigned long long since = (unsigned long long)ts.tv_sec * 1000000ULL - 1000000ULL;
  nvmlReturn_t rc = VG_NV(nvmlDeviceGetProcessUtilization, handle, samples, &count, since);
  if (rc == NVML_ERROR_NOT_FOUND) return true; /* nobody ran */
  if (rc != NVML_SUCCESS) return false;
  const struct vg_region *r = vg_region_of(&vg_state.shm);
  for (unsigned i = 0; i < count && i < 64; i++)
    *(ours(r, samples[i].pid) ? mine : others) += samples[i].smUtil;
  return true;
}

/* Whether the other tenants' use is still climbing: above its trend (which
 * follows a fall at once and a rise by an eighth a step) by the margin. */
static bool others_climbing(struct vg_region_device *d, unsigned others) {
  unsigned trend = d->sm_others_trend_pct;
  d->sm_others_trend_pct = others <= trend ? others : trend + (others - trend + 7) / 8;
  return others >= trend + SHARE_MARGIN_PCT;
}

/* "share" policy: lend what the other tenants leave, minus a margin.
 * Their measured use says what they got, not what they want: a neighbour
 * held back by the loan reads low, and lending by that reading alone
 * settled, in half the runs, with a neighbour at 55-65 % of its 70 % (the
 * GPU not even full: our kernels between theirs cost them their turns). So
 * while their use climbs nothing is lent; once it levels off the loan
 * regrows by half the gap to what they leave, and drops at once to that. */
static void revise_borrow(struct vg_region_device *d, unsigned pct, unsigned others) {
  if (others_climbing(d, others)) {
    d->sm_borrow_pct = 0;
    return;
  }
  unsigned used = others + pct + SHARE_MARGIN_PCT;
  unsigned room = used < 100 ? 100 - used : 0;
  unsigned borrow = d->sm_borrow_pct;
  d->sm_borrow_pct = room < borrow ? room : borrow + (room - borrow + 1) / 2;
}

/* Every 100 ms, for the share policy, from one NVML reading; where NVML
 * cannot attribute processes the loan stays as it is. Lock held. */
static void revise(struct vg_region_device *d, unsigned policy, unsigned pct, uint64_t now) {
  if (policy != VG_SM_POLICY_SHARE) {
    d->sm_borrow_pct = 0;
    return;
  }
  if (now - d->sm_borrow_at_ns < REVISE_NS) return;
  d->sm_borrow_at_ns = now;
  unsigned mine, others;
  if (!measured_use(d, &mine, &others)) return;
  revise_borrow(d, pct, others);
  vg_debug("limiter on %s: ours %u%%, others %u%%, borrowing %u%% over %u%%", d->uuid, mine, others,
           d->sm_borrow_pct, pct);
}

/*
 * The bucket's depth: BURST_NS of wall time plus two of the largest
 * submissions this process made lately, all at pct.
 *
 * Why submissions: in a launch-then-synchronise loop the tokens that pay for
 * kernel n+1 are earned while kernel n is on the GPU (the wait before it only
 * repays its own debt). A fixed 20 ms depth threw away what a longer kernel
 * earned beyond it, so the container got less than its limit the longer its
 * kernels were: 30 ms kernels at 90 % got 69 %, 40 ms ones 62 %, 100 ms ones
 * 52 %. A kernel is on the GPU for its own time plus, when another context's
 * kernel is running, up to that one's (kernels of different contexts run one
 * after another): two kernels of room keep what such a loop earns next to a
 * neighbour with kernels as long (at 30:70 with 100 ms kernels one kernel of
 * room gave the 70 % side 61 %, two 70 %). The burst after idle time stays
 * bounded: 20 ms plus two kernels, and a kernel cannot be split anyway. Like
 * the costs it is in GPU time, so no SM count and no kernel length is tuned
 * in: one setting from small GPUs to H100s, for 0.1 ms and 100 ms kernels.
 *
 * Why the largest lately and not this submission's: a long kernel followed
 * by short ones (a graph and its setup kernels) still needs room for what
 * the long one earned. "Lately" is two of that kernel's periods at the limit
 * (cost * 100 / pct; at least a second), so a shape the process stopped
 * using stops widening the bucket. Process-local: the region has no field
 * for it, and each process's refills keep what its own kernels earned.
 * Lock held (the region lock also serialises this process's threads).
 */
static uint64_t g_big_ns[VG_MAX_DEVICES], g_big_at_ns[VG_MAX_DEVICES];

static uint64_t depth_of(int dev, unsigned pct, uint64_t cost, uint64_t now) {
  uint64_t hold = 2 * g_big_ns[dev] * 100 / pct;
  if (hold < NS_PER_S) hold = NS_PER_S;
  if (cost >= g_big_ns[dev] || now - g_big_at_ns[dev] > hold) {
    g_big_ns[dev] = cost;
    g_big_at_ns[dev] = now;
  }
  return (BURST_NS + 2 * g_big_ns[dev]) * pct / 100;
}

/* Adds what the bucket earned since the last refill, up to depth. A debt is
 * never forgiven, however old: waits longer than a second happen (long
 * kernels at low limits, several processes in line), and forgiving them let
 * the container through early. Lock held. */
static void refill(struct vg_region_device *d, unsigned pct, uint64_t depth, uint64_t now) {
  if (d->sm_refill_ns == 0 || now < d->sm_refill_ns) {
    d->sm_tokens_ns = (int64_t)depth; /* first use */
  } else {
    uint64_t gap = now - d->sm_refill_ns;
    if (gap > IDLE_CAP_NS) gap = IDLE_CAP_NS; /* no overflow below */
    int64_t tokens = d->sm_tokens_ns + (int64_t)(gap * pct / 100);
    d->sm_tokens_ns = tokens > (int64_t)depth ? (int64_t)depth : tokens;
  }
  d->sm_refill_ns = now;
}

/* One-second windows of submitted GPU time, for vgpu status. Lock held. */
static void account(struct vg_region_device *d, uint64_t cost, uint64_t now) {
  if (d->sm_window_start_ns == 0 || now < d->sm_window_start_ns) d->sm_window_start_ns = now;
  if (now - d->sm_window_start_ns >= NS_PER_S) {
    __atomic_store_n(&d->sm_last_window_ns, now - d->sm_window_start_ns, __ATOMIC_RELAXED);
    __atomic_store_n(&d->sm_last_window_used_ns, d->sm_window_used_ns, __ATOMIC_RELAXED);
    d->sm_window_start_ns = now;
    d->sm_window_used_ns = 0;
  }
  d->sm_window_used_ns += cost;
}

/* Says once per process that launches are refused for lock result rc. */
static void say_refused(int rc) {
  static int said;
  if (__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED) == 0)
    vg_error("region file %s: %s; refusing kernel launches rather than running them uncharged",
             vg_state.shm.path, vg_shm_lock_strerror(rc));
}

bool vg_limiter_lock_refused(void) {
  int rc = __atomic_load_n(&vg_state.shm.last_lock, __ATOMIC_RELAXED);
  if (rc == VG_SHM_LOCKED) return false;
  say_refused(rc);
  return true;
}

/* Charges cost into *wait (how long to wait before submitting). Returns the
 * lock's result: anything but VG_SHM_LOCKED charged nothing. This call's
 * own result, not shm.last_lock, which another thread may overwrite. */
static int take(int dev, uint64_t cost, uint64_t *wait_out) {
  struct vg_region_device *d = &vg_region_of(&vg_state.shm)->dev[dev];
  uint64_t now = now_ns(), wait = 0;
  *wait_out = 0;
  int rc = vg_region_lock(&vg_state.shm);
  if (rc != VG_SHM_LOCKED) return rc;
  unsigned pct = vg_state_sm_limit(dev), policy = vg_state_sm_policy(dev);
  if (pct > 0) {
    revise(d, policy, pct, now);
    /* The borrow is in the writable region: bounded here, not trusted. */
    unsigned borrow = policy == VG_SM_POLICY_SHARE ? d->sm_borrow_pct : 0;
    pct += borrow < 100 - pct ? borrow : 100 - pct;
    refill(d, pct, depth_of(dev, pct, cost, now), now);
    d->sm_tokens_ns -= (int64_t)cost;
    if (d->sm_tokens_ns < -(int64_t)DEBT_NS) wait = (uint64_t)(-d->sm_tokens_ns) * 100 / pct;
  }
  account(d, cost, now);
  vg_region_unlock(&vg_state.shm);
  *wait_out = wait;
  return VG_SHM_LOCKED;
}

bool vg_limiter_admit(int dev, uint64_t cost_ns) {
  uint64_t wait;
  int rc = take(dev, cost_ns, &wait);
  if (rc != VG_SHM_LOCKED) {
    say_refused(rc);
    return false;
  }
  if (wait == 0) return true;
  struct timespec ts = {.tv_sec = (time_t)(wait / NS_PER_S), .tv_nsec = (long)(wait % NS_PER_S)};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
  return true;
}

void vg_limiter_charge(int dev, uint64_t cost_ns) {
  uint64_t wait;
  take(dev, cost_ns, &wait); /* already submitted: a lock that fails was said at admission */
}
