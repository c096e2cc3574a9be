/*
 * sim_timeline.c -- the device's kernel timeline, shared by all processes.
 *
 * A simulated GPU runs one kernel at a time. Each device has a single
 * timeline in the state file: busy_until is when the work queued so far ends.
 * A new piece of work starts at max(now, busy_until, its stream's last end)
 * and pushes busy_until forward, so kernels of all processes serialise the
 * way time-slicing on a real GPU makes them.
 *
 * Because work always starts at max(now, busy_until), the span from now to
 * busy_until is always fully busy, and the past is a sequence of disjoint,
 * time-ordered busy intervals. The last VG_SIM_RING of them (contiguous ones
 * of one process merged) are kept per device with their owner, which is all
 * NVML needs for device and per-process utilisation over a window.
 *
 * Like a real driver's bounded launch queue, a launch blocks while the
 * queued work reaches more than 50 ms into the future.
 */
#include <errno.h>
#include <time.h>

#include "sim_state.h"

#define MAX_BACKLOG_NS (50ull * 1000 * 1000)

uint64_t vg_sim_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void vg_sim_sleep_until(uint64_t t) {
  struct timespec ts = {(time_t)(t / 1000000000ull), (long)(t % 1000000000ull)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
  }
}

static uint64_t max_u64(uint64_t a, uint64_t b) { return a > b ? a : b; }

static void append_interval(struct vg_sim_device *d, uint32_t slot, uint32_t gen, uint64_t start,
                            uint64_t end) {
  if (d->ring_next > 0) {
    struct vg_sim_interval *last = &d->ring[(d->ring_next - 1) % VG_SIM_RING];
    if (last->slot == slot && last->gen == gen && last->end == start) {
      last->end = end;
      return;
    }
  }
  struct vg_sim_interval *iv = &d->ring[d->ring_next % VG_SIM_RING];
  iv->start = start;
  iv->end = end;
  iv->slot = slot;
  iv->gen = gen;
  d->ring_next++;
}

/* Commits the work if the backlog allows; returns 0 and sets *wait when the
 * caller must sleep first. */
static uint64_t try_queue(struct vg_sim *sim, unsigned dev, uint64_t after, uint64_t duration,
                          uint64_t *wait) {
  struct vg_sim_device *d = &sim->st->dev[dev];
  uint64_t now = vg_sim_now_ns();
  if (d->busy_until > now + MAX_BACKLOG_NS) {
    *wait = d->busy_until - MAX_BACKLOG_NS;
    return 0;
  }
  uint64_t start = max_u64(max_u64(now, d->busy_until), after);
  uint64_t end = start + duration;
  d->busy_until = max_u64(d->busy_until, end);
  d->busy_ns += duration;
  sim->st->slot[sim->slot].busy_ns[dev] += duration;
  if (duration > 0) append_interval(d, sim->slot, sim->gen, start, end);
  return end;
}

uint64_t vg_sim_queue_work(struct vg_sim *sim, unsigned dev, uint64_t after, uint64_t duration) {
  for (;;) {
    uint64_t wait = 0;
    vg_sim_lock(sim);
    uint64_t end = try_queue(sim, dev, after, duration, &wait);
    vg_sim_unlock(sim);
    if (end != 0) return end;
    vg_sim_sleep_until(wait);
  }
}

static bool owned_by(const struct vg_sim_interval *iv, uint32_t slot, uint32_t gen) {
  return slot == VG_SIM_NO_SLOT || (iv->slot == slot && iv->gen == gen);
}

uint64_t vg_sim_busy_in_window_locked(const struct vg_sim_device *d, uint32_t slot, uint32_t gen,
                                      uint64_t from, uint64_t to) {
  uint64_t n = d->ring_next < VG_SIM_RING ? d->ring_next : VG_SIM_RING;
  uint64_t busy = 0, oldest = from;
  bool exhausted = true;
  for (uint64_t k = 1; k <= n; k++) {
    const struct vg_sim_interval *iv = &d->ring[(d->ring_next - k) % VG_SIM_RING];
    if (iv->end <= from) {
      exhausted = false;
      break;
    }
    oldest = iv->start;
    if (iv->start >= to || !owned_by(iv, slot, gen)) continue;
    uint64_t s = max_u64(iv->start, from), e = iv->end < to ? iv->end : to;
    busy += e - s;
  }
  /* The ring forgot the start of the window: extrapolate from what it covers. */
  if (exhausted && d->ring_next > VG_SIM_RING && oldest > from && to > oldest)
    busy = (uint64_t)((double)busy * (double)(to - from) / (double)(to - oldest));
  return busy;
}

uint64_t vg_sim_last_activity_locked(const struct vg_sim_device *d, uint32_t slot, uint32_t gen,
                                     uint64_t to) {
  uint64_t n = d->ring_next < VG_SIM_RING ? d->ring_next : VG_SIM_RING;
  for (uint64_t k = 1; k <= n; k++) {
    const struct vg_sim_interval *iv = &d->ring[(d->ring_next - k) % VG_SIM_RING];
    if (iv->start >= to || !owned_by(iv, slot, gen)) continue;
    return iv->end < to ? iv->end : to;
  }
  return 0;
}
