/*
 * audit_rules.h -- how the node agent decides that a GPU holds memory no
 * container's region accounts for (audit.h runs it).
 *
 * libvgpu charges every allocation of a container's processes to its region
 * file. If the library did not load in a container (an old glibc, a static
 * binary, a bypassed preload), that container's work runs on the GPU with
 * no limit and no charge: NVML sees the memory, no region does. Per GPU:
 *
 *   unaccounted = used - baseline - charged - processes x context_allowance
 *
 * used: NVML's memory in use; baseline: what NVML showed the last time no
 * container held the GPU at all (the driver's own reserve, host processes);
 * 0 until such a moment; charged: the live processes' charges in the
 * regions on the GPU; processes: those processes (each also holds a CUDA
 * context, which NVML counts and libvgpu does not charge; the allowance is
 * the config's contextReserve). Negative values count as 0.
 *
 * A GPU is flagged when unaccounted exceeds the tolerance, and only when
 * every container holding it has a region: a time-sliced container without
 * isolation (no region by design) makes the GPU unauditable.
 *
 * A container is called unenforced when its GPU is flagged, its slot was
 * handed out at least the grace ago, and no process ever joined its region
 * (VG_REGION_JOINED): the preload most likely did not load there. A
 * container that runs no GPU work at all looks the same, which is why it is
 * reported only while its GPU is flagged.
 */
#ifndef VG_AGENT_AUDIT_RULES_H
#define VG_AGENT_AUDIT_RULES_H

#include <stdbool.h>
#include <stdint.h>

/* One GPU in one pass. */
struct vg_audit_reading {
  bool nvml_ok;     /* used is NVML's answer */
  uint64_t used;    /* bytes in use on the GPU, every process */
  bool held;        /* some container the kubelet lists holds an ID on it */
  bool auditable;   /* every such container has a region */
  uint64_t charged; /* bytes charged by the regions' live processes */
  unsigned procs;   /* those processes */
};

/* What is kept per GPU from pass to pass. */
struct vg_audit_gpu_state {
  uint64_t baseline;    /* NVML's used when no container held the GPU; 0 until seen */
  bool baseline_seen;   /* such a moment was seen */
  uint64_t unaccounted; /* the last pass's value */
  bool flagged;         /* unaccounted > tolerance in the last pass */
};

enum vg_audit_change { VG_AUDIT_SAME = 0, VG_AUDIT_FLAGGED = 1, VG_AUDIT_CLEARED = 2 };

/* Applies one reading to st; says whether the GPU became flagged or cleared. */
enum vg_audit_change vg_audit_assess(const struct vg_audit_reading *r, uint64_t context_allowance,
                                     uint64_t tolerance, struct vg_audit_gpu_state *st);

/* Is a container unenforced (see above)? age_s: since its slot was handed out. */
bool vg_audit_unenforced(bool gpu_flagged, bool joined, double age_s, unsigned grace_s);

#endif
