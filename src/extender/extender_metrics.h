/*
 * extender_metrics.h -- what vgpu-scheduler tells Prometheus: requests and
 * their latency per verb (a histogram), why nodes fail filter and why binds
 * fail (by reason class), and what it has placed. Updated by the verbs under
 * the extender's lock; rendered by GET /metrics (docs/metrics.md).
 */
#ifndef VG_EXTENDER_METRICS_H
#define VG_EXTENDER_METRICS_H

#include <stdint.h>

#define EXT_LAT_BUCKETS 12

/* Classes of a node's filter failure: each failure site of the view and
 * the fit (extender_view.c, extender_fit.c, extender_foreign.c) returns its
 * class along with the words it writes, and /metrics counts the class, never
 * the words (rewording a reason moves no metric). EXT_R_NONE is not a
 * failure: "the node fits", 0, so that `rc != 0` still reads "failed". A new
 * class: a value before EXT_R_OTHER, its label in extender_metrics.c's
 * table, whether preemption could help in extender.c's unresolvable(), and
 * a line in docs/metrics.md. */
enum ext_reason {
  EXT_R_NONE,          /* not a failure */
  EXT_R_NO_INVENTORY,  /* no vgpu.io/gpu-inventory: no plugin there */
  EXT_R_BAD_INVENTORY, /* the annotation does not parse */
  EXT_R_NODE_GONE,     /* node not found */
  EXT_R_NOT_ADVERTISED,
  EXT_R_TOO_FEW_GPUS, /* not enough healthy (and selected) GPUs */
  EXT_R_TOO_LARGE,    /* more memory than the largest GPU */
  EXT_R_NO_ROOM,      /* GPUs exist but lack memory/cores/slices now */
  EXT_R_CCE_MODE,     /* the other CCE isolation mode holds the GPUs */
  EXT_R_BAD_ASSIGNMENT,
  EXT_R_API,          /* the API server could not be read */
  EXT_R_FOREIGN_ASK,  /* a foreign GPU node: the pod asks for more than whole nvidia.com/gpu */
  EXT_R_FOREIGN_FULL, /* a foreign GPU node: its nvidia.com/gpu are requested by its pods */
  EXT_R_OTHER,        /* out of memory, ... */
  EXT_R_COUNT
};

/* Classes of a failed bind. */
enum ext_bind_fail { EXT_B_CONFLICT, EXT_B_NO_FIT, EXT_B_API, EXT_B_OTHER, EXT_B_COUNT };

struct ext_metrics {
  uint64_t requests[5];     /* filter prioritize bind healthz metrics */
  uint64_t bad_requests;    /* answered 4xx: not the verb's arguments */
  uint64_t refused_pods;    /* filters whose pod no node can ever take */
  uint64_t bad_assignments; /* bound pods whose vgpu.io/assigned is unreadable (once each) */
  uint64_t lat_bucket[3][EXT_LAT_BUCKETS]; /* cumulative per upper bound */
  uint64_t lat_count[3];
  double lat_sum[3];
  uint64_t node_failures[EXT_R_COUNT];
  uint64_t binds_ok, bind_failures[EXT_B_COUNT];
  uint64_t assigned_gpus; /* GPU slices written into assignments */
  /* The Pod and Node watches (extender_watch.c), [0] pods, [1] nodes. */
  int watch_up[2];
  uint64_t watch_events[2];
};

/* The metric label of a class ("no_inventory", ...); NULL for EXT_R_NONE
 * and for values out of range. */
const char *ext_reason_label(enum ext_reason r);
const char *ext_bind_fail_label(enum ext_bind_fail b);
/* A bind that failed for a node reason r (it read the node's view, or
 * fitted the pod there): the API, something else, or the pod's no fit. */
enum ext_bind_fail ext_bind_fail_of(enum ext_reason r);
/* verb: 0..2 (filter prioritize bind). */
void ext_metrics_observe(struct ext_metrics *m, int verb, double seconds);
struct node_entry;

/* The exposition text (malloc'd), NULL when out of memory. nodes: the
 * extender's node cache (its list), whose last-read views give the
 * per-node allocation gauges. Called under the extender's lock. */
char *ext_metrics_render(const struct ext_metrics *m, const struct node_entry *nodes);

#endif
