/*
 * metrics.h -- vgpu-webhook's /metrics (Prometheus text format): reviews by
 * result and certificate reloads. Counters are atomics: the server's pool
 * of threads answers several requests at once.
 */
#ifndef VG_WH_METRICS_H
#define VG_WH_METRICS_H

#include <stdatomic.h>

#include "review.h"

struct vg_wh_metrics {
  atomic_ulong reviews[VG_WH_R_COUNT];
  atomic_ulong tls_reloads, tls_reload_failures;
};

/* The exposition text, malloc'd; NULL when out of memory. */
char *vg_wh_metrics_render(const struct vg_wh_metrics *m);

#endif
