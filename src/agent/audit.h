/*
 * audit.h -- notices GPU memory that no container's region accounts for.
 *
 * When libvgpu does not load in a container (an image with an old glibc, a
 * static binary, a preload bypassed), its processes use the GPU with no
 * limit and charge nothing: the node agent would otherwise never know. Every
 * interval the audit reads NVML's memory in use per GPU, the kubelet's
 * PodResources (which container holds which GPU) and the containers' region
 * files, and applies audit_rules.h: a GPU whose memory in use exceeds what
 * the regions account for by more than the tolerance is flagged, with a
 * warning in the log naming the GPU and the amount, and counted; so is each
 * container on it whose region no process ever joined, past a grace period.
 * The results are exported by /metrics (docs/metrics.md). It is a
 * detection, not enforcement: nothing is stopped or killed.
 */
#ifndef VG_AGENT_AUDIT_H
#define VG_AGENT_AUDIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backstop.h"
#include "err.h"
#include "region.h"

struct vg_audit;

struct vg_audit_opts {
  const char *state_dir;           /* <state_dir>/slots */
  const char *podresources_socket; /* NULL: the kubelet's default */
  uint64_t tolerance;              /* bytes beyond the accounted before a GPU is flagged */
  uint64_t context_allowance;      /* bytes per live process for its CUDA context */
  unsigned grace_s;                /* a slot this young is never called unenforced */
  unsigned interval_ms;            /* between passes; > 0 */
  /* The backstop (backstop.h), judged in the same passes: */
  struct vg_k8s_client *k8s;      /* for its Events and evictions; NULL: log only */
  enum vg_backstop_policy policy; /* report (default) or evict */
  const char *proc_root;          /* NULL: /proc */
  unsigned compute_tolerance;     /* points above a compute grant */
  unsigned compute_sustain_s;     /* over this long before it is reported */
};

/* Copies o. NULL with err on bad options. */
struct vg_audit *vg_audit_new(const struct vg_audit_opts *o, struct vg_err *err);
/* Runs passes in a thread. 0, or -1 with err. */
int vg_audit_start(struct vg_audit *a, struct vg_err *err);
/* One pass on the caller's thread. 0, or -1 with err when NVML or
 * PodResources could not be read (nothing is judged then). */
int vg_audit_run_once(struct vg_audit *a, struct vg_err *err);
/* Stops the thread (if started) and frees. NULL is fine. */
void vg_audit_stop(struct vg_audit *a);

/* The last judged pass, per GPU NVML listed. */
struct vg_audit_gpu {
  char uuid[VG_UUID_LEN];
  uint64_t unaccounted; /* bytes */
  bool flagged;
  bool auditable; /* false: a container without a region holds it */
};
/* Copies up to max GPUs into out; how many. */
unsigned vg_audit_gpus(struct vg_audit *a, struct vg_audit_gpu *out, unsigned max);
/* Was the container of this slot directory unenforced in the last pass? */
bool vg_audit_slot_unenforced(struct vg_audit *a, const char *slot);

struct vg_audit_stats {
  uint64_t passes;     /* judged passes */
  uint64_t detections; /* times a GPU became flagged */
  uint64_t errors;     /* passes that could not read NVML or PodResources */
};
void vg_audit_get_stats(struct vg_audit *a, struct vg_audit_stats *st);
/* The backstop the passes run (for the metrics). */
struct vg_backstop *vg_audit_backstop(struct vg_audit *a);

#endif
