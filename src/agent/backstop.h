/*
 * backstop.h -- the node-side check of each container's GPU memory against
 * its grant, for the processes libvgpu does not govern.
 *
 * libvgpu is cooperative: a static binary, a process started through a
 * loader that skips /etc/ld.so.preload, or one that drives the kernel
 * module directly never consults the grant (docs/security.md, layer 4). The
 * driver still knows what every process holds. Each audit pass the backstop
 * asks NVML for the processes on each GPU, finds each one's container by the
 * slot mounted in its mount namespace (proc_slot.h), sums per container and
 * GPU, and compares with the container's grant:
 *
 *   over = nvml > grant + processes x context_allowance + tolerance
 *
 * (NVML counts each process's CUDA context, which no grant covers: the
 * allowance is contextReserve, as for the GPU-wide audit.) A grant of 0
 * (the whole GPU) is never over. A container that goes over is reported
 * once per episode: a warning in the log, a Warning Event
 * `GPUMemoryOverGrant` on its pod, and the metrics; with the policy
 * `evict` (off by default) the pod is also evicted through the Eviction
 * API, so that PodDisruptionBudgets are honoured. It detects after the
 * fact; what libvgpu enforces is refused before it happens.
 *
 * Compute is judged in the same passes, per container and GPU, from NVML's
 * per-process utilisation against the grant's compute share, and reported
 * (Event `GPUComputeOverGrant`) or evicted alike once a container has been
 * over for a sustained period: backstop_compute.h.
 */
#ifndef VG_AGENT_BACKSTOP_H
#define VG_AGENT_BACKSTOP_H

#include <stdbool.h>
#include <stdint.h>

#include "err.h"
#include "backstop_compute.h"
#include "gpu_usage.h"
#include "region.h"

struct vg_k8s_client;

enum vg_backstop_policy { VG_BACKSTOP_REPORT = 0, VG_BACKSTOP_EVICT = 1 };
/* "report" or "evict"; -1 with err otherwise. */
int vg_backstop_policy_parse(const char *text, enum vg_backstop_policy *p, struct vg_err *err);

/* The rule above. */
bool vg_backstop_over(uint64_t nvml, unsigned procs, uint64_t grant, uint64_t context_allowance,
                      uint64_t tolerance);

/* A container the kubelet lists, as the audit pass knows it. */
struct vg_backstop_ctr {
  char slot[17];
  const char *ns, *pod, *container;
};

struct vg_backstop_opts {
  const char *slots_dir;     /* <stateDir>/slots: grants are read there */
  const char *proc_root;     /* "/proc" (NULL); tests point elsewhere */
  struct vg_k8s_client *k8s; /* NULL: no Events, no eviction */
  enum vg_backstop_policy policy;
  uint64_t tolerance, context_allowance;
  unsigned compute_tolerance;       /* points above the compute grant */
  unsigned compute_sustain_s;       /* over this long before it is reported */
  vg_compute_util_fn *compute_util; /* NULL: NVML; tests feed samples */
};

struct vg_backstop;
struct vg_backstop *vg_backstop_new(const struct vg_backstop_opts *o, struct vg_err *err);
void vg_backstop_free(struct vg_backstop *b);

/* One pass: the GPUs (NVML index order, as vg_gpu_usage_read gives them)
 * and the containers listed. Reads NVML's processes, judges, and reports or
 * evicts what newly went over; judges compute too (backstop_compute.h).
 * Returns how many containers are over their memory grant. */
int vg_backstop_pass(struct vg_backstop *b, const struct vg_gpu_usage *gpus, unsigned ngpus,
                     const struct vg_backstop_ctr *ctrs, size_t nctrs);

/* The last pass for one container and GPU: the bytes NVML says its
 * processes hold there (*nvml), and whether that is over its grant. False
 * when the pass saw no process of it there. */
bool vg_backstop_reading(struct vg_backstop *b, const char *slot, const char *uuid, uint64_t *nvml,
                         bool *over);

struct vg_backstop_stats {
  uint64_t detections;         /* containers that went over their memory grant */
  uint64_t compute_detections; /* ... over their compute grant, sustained */
  uint64_t evictions;          /* pods evicted for it */
  uint64_t errors;             /* NVML process lists that failed */
};
/* The compute judgement (for the metrics). */
struct vg_compute *vg_backstop_compute(struct vg_backstop *b);

void vg_backstop_get_stats(struct vg_backstop *b, struct vg_backstop_stats *st);

#endif
