/*
 * nvml_util.c -- utilisation: device-wide and per process.
 *
 * Both come from the device timeline's interval ring (sim_timeline.c):
 *  - nvmlDeviceGetUtilizationRates: gpu = share of the last second during
 *    which the device ran kernels; memory = used / total memory, in percent.
 *  - nvmlDeviceGetProcessUtilization: one sample per live process that ran
 *    kernels after lastSeenTimeStamp (CPU time in microseconds, as NVML's
 *    timestamps), with smUtil = that process's share of the window from
 *    lastSeenTimeStamp (at most one second back) to now. No such process:
 *    NVML_ERROR_NOT_FOUND. Pids are the caller's namespace's (nvml_pids.c).
 *    With VGPU_SIM_PROCESS_UTILIZATION=unsupported (read at each call) it
 *    answers NVML_ERROR_NOT_SUPPORTED, as drivers do on GPUs that do not
 *    measure it, so that callers' fallbacks can be tested.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nvml_internal.h"

#define WINDOW_NS 1000000000ull

static uint64_t realtime_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000ull + (uint64_t)ts.tv_nsec / 1000;
}

static unsigned percent(uint64_t part, uint64_t whole) {
  if (whole == 0) return 0;
  uint64_t p = (part * 100 + whole / 2) / whole;
  return p > 100 ? 100 : (unsigned)p;
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t *utilization) {
  struct vg_sim_device *d;
  unsigned i;
  nvmlReturn_t rc = nv_device(device, &d, &i);
  if (rc != NVML_SUCCESS) return rc;
  if (utilization == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  uint64_t now = vg_sim_now_ns();
  vg_sim_lock(&g_nv.sim);
  vg_sim_reap_locked(&g_nv.sim);
  uint64_t busy = vg_sim_busy_in_window_locked(d, VG_SIM_NO_SLOT, 0, now - WINDOW_NS, now);
  utilization->memory = percent(d->mem_used, d->mem_total);
  vg_sim_unlock(&g_nv.sim);
  utilization->gpu = percent(busy, WINDOW_NS);
  return NVML_SUCCESS;
}

struct window {
  uint64_t from, to;    /* CLOCK_MONOTONIC ns */
  uint64_t now_real_us; /* CLOCK_REALTIME at `to` */
};

static uint64_t to_real_us(const struct window *w, uint64_t mono) {
  return w->now_real_us - (w->to - mono) / 1000;
}

/* Samples for the live processes active in w; returns how many (all of
 * them, even past max, so the caller can size its buffer). ids[i] gets the
 * slot's pid and namespace of out[i], for translation after the lock. */
static unsigned sample_locked(const struct vg_sim_device *d, const struct window *w,
                              nvmlProcessUtilizationSample_t *out, struct nv_pid *ids,
                              unsigned max) {
  unsigned n = 0;
  for (unsigned s = 0; s < g_nv.sim.st->slots_hwm && s < VG_SIM_MAX_PROCS; s++) {
    const struct vg_sim_slot *slot = &g_nv.sim.st->slot[s];
    if (!slot->in_use) continue;
    uint64_t busy = vg_sim_busy_in_window_locked(d, s, slot->gen, w->from, w->to);
    if (busy == 0) continue;
    if (out != NULL && n < max) {
      uint64_t last = vg_sim_last_activity_locked(d, s, slot->gen, w->to);
      out[n] = (nvmlProcessUtilizationSample_t){
          (unsigned)slot->pid, to_real_us(w, last), percent(busy, w->to - w->from), 0, 0, 0};
      ids[n] = (struct nv_pid){(unsigned)slot->pid, slot->pidns, slot->started};
    }
    n++;
  }
  return n;
}

/* Samples into out (up to *count; NULL: only count them) with the pids
 * translated once the lock is dropped. */
static nvmlReturn_t sample(const struct vg_sim_device *d, const struct window *w,
                           nvmlProcessUtilizationSample_t *out, unsigned *count) {
  unsigned max = out == NULL ? 0 : *count;
  if (max > VG_SIM_MAX_PROCS) max = VG_SIM_MAX_PROCS; /* one sample per slot at most */
  struct nv_pid *ids = max == 0 ? NULL : malloc(max * sizeof(*ids));
  if (max > 0 && ids == NULL) return NVML_ERROR_UNKNOWN;
  vg_sim_lock(&g_nv.sim);
  vg_sim_reap_locked(&g_nv.sim);
  unsigned n = sample_locked(d, w, out, ids, max);
  vg_sim_unlock(&g_nv.sim);
  bool fits = out != NULL && *count >= n;
  if (fits) {
    nv_pids_to_caller(ids, n);
    for (unsigned i = 0; i < n; i++) out[i].pid = ids[i].pid;
  }
  free(ids);
  if (n == 0) return NVML_ERROR_NOT_FOUND;
  *count = n;
  return fits ? NVML_SUCCESS : NVML_ERROR_INSUFFICIENT_SIZE;
}

nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t device,
                                             nvmlProcessUtilizationSample_t *utilization,
                                             unsigned int *processSamplesCount,
                                             unsigned long long lastSeenTimeStamp) {
  struct vg_sim_device *d;
  unsigned i;
  nvmlReturn_t rc = nv_device(device, &d, &i);
  if (rc != NVML_SUCCESS) return rc;
  if (processSamplesCount == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  const char *knob = getenv("VGPU_SIM_PROCESS_UTILIZATION");
  if (knob != NULL && strcmp(knob, "unsupported") == 0) return NVML_ERROR_NOT_SUPPORTED;
  struct window w = {0, vg_sim_now_ns(), realtime_us()};
  uint64_t back_ns =
      lastSeenTimeStamp >= w.now_real_us ? 0 : (w.now_real_us - lastSeenTimeStamp) * 1000;
  if (back_ns > WINDOW_NS || lastSeenTimeStamp == 0) back_ns = WINDOW_NS;
  w.from = w.to - back_ns;
  if (back_ns == 0) return NVML_ERROR_NOT_FOUND;
  return sample(d, &w, utilization, processSamplesCount);
}
