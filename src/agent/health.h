/*
 * health.h -- GPU health for the device plugin: XID errors and lost GPUs.
 *
 * A GPU is Unhealthy
 *   - after a critical XID error, delivered by NVML's event API
 *     (nvmlEventTypeXidCriticalError). Critical = every XID except the
 *     application errors NVIDIA's own device plugin ignores (13, 31, 43, 45,
 *     68, 109; see health.c), or the list given in the options. It stays
 *     Unhealthy until vg_health_clear() (the plugin re-discovering its GPUs,
 *     or a restart), as in NVIDIA's plugin, because NVML never reports that
 *     an XID condition has ended;
 *   - while NVML answers NVML_ERROR_GPU_IS_LOST for it or its UUID is no
 *     longer found. It becomes Healthy again by itself when the same UUID
 *     answers again (a GPU that came back was reset: its XID mark is dropped
 *     too).
 * Checked every interval (default 1 s): the checker waits up to the interval
 * on the event set, then asks NVML for every GPU's UUID. Without the event
 * API (an old driver) only lost GPUs are detected. docs/inventory.md.
 */
#ifndef VG_AGENT_HEALTH_H
#define VG_AGENT_HEALTH_H

#include <stdbool.h>
#include <stddef.h>

#include "devices.h"

struct vg_gpu_health {
  unsigned index;
  char uuid[96];
  bool healthy;
  bool lost;    /* GPU_IS_LOST or the UUID disappeared */
  unsigned xid; /* the critical XID that made it Unhealthy; 0: none */
};

/* Called from the checker's thread after any GPU's health changed, with all
 * GPUs' states (a copy, valid during the call). */
typedef void (*vg_health_fn)(const struct vg_gpu_health *gpus, unsigned n, void *arg);

struct vg_health_opts {
  unsigned interval_ms;        /* 0: 1000 */
  const unsigned *ignored_xid; /* XIDs that do not make a GPU Unhealthy; NULL: the default */
  size_t n_ignored_xid;
};

/* NVIDIA's list of application XIDs (not the GPU's fault). */
extern const unsigned vg_health_default_ignored_xid[];
extern const size_t vg_health_default_n_ignored_xid;

/* Parses "13,31,43" (or "" for none) into out; -1 with err on a bad entry. */
int vg_health_parse_xids(const char *s, unsigned *out, size_t max, size_t *n, char *err,
                         size_t err_len);

struct vg_health;

/* Watches gpus[0..n) (by UUID) through libnvidia-ml.so.1. opts and fn may be
 * NULL. Returns NULL with a message in err when NVML cannot be used. */
struct vg_health *vg_health_new(const struct vg_gpu *gpus, unsigned n,
                                const struct vg_health_opts *opts, vg_health_fn fn, void *arg,
                                char *err, size_t err_len);
/* Runs vg_health_check in a thread, one interval after another. */
int vg_health_start(struct vg_health *h);
/* Stops the thread (within one interval) and releases everything. */
void vg_health_free(struct vg_health *h);

/* One round, on the caller's thread: waits up to wait_ms for XID events, then
 * checks every GPU. Returns 1 if a GPU's health changed (fn was called), else 0. */
int vg_health_check(struct vg_health *h, unsigned wait_ms);

/* Copies the states (n at most) into out; returns the GPU count. */
unsigned vg_health_get(struct vg_health *h, struct vg_gpu_health *out, unsigned n);
/* Sets gpus[i].healthy from the states, matching by UUID. */
void vg_health_apply(struct vg_health *h, struct vg_gpu *gpus, unsigned n);
/* Forgets the XID mark of GPU `index` (all GPUs if index < 0); calls fn if
 * that changed its health. */
void vg_health_clear(struct vg_health *h, int index);

#endif
