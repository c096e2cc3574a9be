/*
 * backstop_compute.h -- the backstop's compute judgement: each container's
 * share of each GPU's SM time, as the driver measured it, against its grant.
 *
 * A process that never loads libvgpu (a static binary, a bypassed preload,
 * direct driver calls; docs/security.md, layer 4) runs kernels unthrottled.
 * The driver still times every process: NVML's per-process utilisation
 * (nvmlDeviceGetProcessUtilization) gives, per process, its share of the
 * SM time in the driver's recent sample periods. Each pass asks for the
 * samples recorded since the newest one the last pass saw (NVML's
 * lastSeenTimeStamp), takes each process's mean over its samples (the
 * driver may give one per sample period), maps the process to its container
 * by its slot mount (as for memory) and sums per container and GPU:
 *
 *   over = measured > allowed + tolerance
 *   allowed = grant                              (policy hard)
 *           = max(grant, 100 - the others' use)  (policy share: what others leave)
 *
 * A grant of 0 (the whole GPU; 100 % is stored as 0) is never over. The
 * grant comes from the slot, which only the agent writes -- never from the
 * region file the container can write. Utilisation is bursty, so one
 * reading over is not a finding: a container is reported once it has been
 * over in every reading for `sustain` seconds, once per episode; a reading
 * not over (nobody of it ran, or it ran within) ends the episode.
 *
 * NVML's answers: NOT_FOUND is "no process ran" (every container there
 * reads 0); NOT_SUPPORTED (or a driver without the call) means compute is
 * not judged on that GPU, which vg_compute_judged says (once in the log, and
 * a metric); any other error is no reading and changes nothing.
 *
 * This file judges; backstop.c reports and evicts. The driver, the process
 * to container mapping and the grant are reached through callbacks, so
 * that tests feed samples of their own.
 */
#ifndef VG_AGENT_BACKSTOP_COMPUTE_H
#define VG_AGENT_BACKSTOP_COMPUTE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpu_usage.h"
#include "region.h"

/* The rule above, in percentage points. */
bool vg_compute_over(unsigned measured, unsigned grant, bool share, unsigned others,
                     unsigned tolerance);

/* One container on one GPU across passes: an episode of over-readings. */
struct vg_compute_episode {
  bool over;         /* the last reading was over */
  bool reported;     /* this episode was reported */
  uint64_t since_ms; /* the first over-reading of the episode */
};
/* Adds one reading at now_ms; true when it makes the episode reportable
 * (over for sustain_ms, not reported before). */
bool vg_compute_step(struct vg_compute_episode *e, bool over, uint64_t now_ms, uint64_t sustain_ms);

/* nvmlDeviceGetProcessUtilization behind vg_gpu_process_util's contract. */
typedef int vg_compute_util_fn(unsigned index, uint64_t since_us, struct vg_gpu_util_sample *out,
                               unsigned max, unsigned *count, char *err, size_t err_len);
/* The container (slot) of a process: 1, or 0 when it is none of ours. */
typedef int vg_compute_slot_fn(void *arg, uint32_t pid, char slot[17]);
/* The compute grant of a container on a GPU: percent (0: the whole GPU)
 * and whether its policy is share. */
typedef void vg_compute_grant_fn(void *arg, const char *slot, const char *uuid, unsigned *cores,
                                 bool *share);

struct vg_compute_opts {
  unsigned tolerance;       /* points above the grant a reading may be */
  unsigned sustain_s;       /* over this long before it is reported */
  vg_compute_util_fn *util; /* NULL: vg_gpu_process_util */
  vg_compute_slot_fn *slot_of;
  vg_compute_grant_fn *grant_of;
  void *arg; /* for slot_of and grant_of */
};

#define VG_COMPUTE_PIDS_SHOWN 4

/* A container newly reportable in a pass. */
struct vg_compute_finding {
  char slot[17];
  char uuid[VG_UUID_LEN];
  unsigned measured, grant, allowed; /* percent */
  unsigned tolerance;                /* points: the opts' */
  unsigned seconds;                  /* over for this long */
  unsigned procs;
  uint32_t pids[VG_COMPUTE_PIDS_SHOWN];
};

struct vg_compute;
struct vg_compute *vg_compute_new(const struct vg_compute_opts *o);
void vg_compute_free(struct vg_compute *c);

/* One pass at now_ms (CLOCK_MONOTONIC) over the GPUs (NVML index order)
 * for the containers listed (slot names): reads, judges, and fills out
 * (at most max) with those that became reportable; returns how many. */
size_t vg_compute_pass(struct vg_compute *c, const struct vg_gpu_usage *gpus, unsigned ngpus,
                       const char *const *slots, size_t nslots, uint64_t now_ms,
                       struct vg_compute_finding *out, size_t max);

/* The last reading of a container on a GPU: its measured share (percent)
 * and whether it is in a reported episode. False when it never ran there
 * while listed, or the GPU is not judged. */
bool vg_compute_reading(struct vg_compute *c, const char *slot, const char *uuid,
                        unsigned *measured, bool *over);

/* False when the driver does not measure per-process utilisation on the
 * GPU (compute is not judged there); true otherwise, also before the first
 * pass. */
bool vg_compute_judged(struct vg_compute *c, const char *uuid);

#endif
