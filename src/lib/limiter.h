/*
 * limiter.h -- the container's share of GPU time (CUDA_DEVICE_SM_LIMIT).
 *
 * A token bucket per device in the region file, shared by every process of
 * the container and measured in nanoseconds of GPU time: it fills at
 * limit% of wall-clock time (at most 20 ms plus two of the process's
 * largest recent kernels worth ahead, so that what a long kernel earns while
 * it runs is kept) and each submission takes its estimated GPU time
 * (estimate.h). A submission that leaves the
 * bucket more than 1 ms in debt waits until the debt is repaid, so the
 * container's work reaches the GPU at limit% of its capacity whatever the
 * kernel sizes, the number of processes, or the size of the GPU.
 *
 * Policies (VGPU_SM_POLICY, per device in the region):
 *  - hard (default): limit% even on an idle GPU, as the seeds expect.
 *  - share: work-conserving. Every 100 ms the other containers' use of the
 *    device is read through NVML; what they leave (minus a margin) is lent
 *    to the container, regrown by half the gap and cut at once when they
 *    leave less. While their use is climbing nothing is lent, since a
 *    neighbour held back by the loan reads low. So a tenant borrows while
 *    others are quiet and returns to its share when they run.
 */
#ifndef VG_LIMITER_H
#define VG_LIMITER_H

#include <stdbool.h>
#include <stdint.h>

/* True when some device of this container has a compute limit (or this
 * process brings one): only then do launches take the slow path. */
bool vg_limiter_engaged(void);

/* The compute limit in percent of region entry dev (0: none). */
unsigned vg_limiter_percent(int dev);

/* Takes cost_ns from dev's bucket and waits as long as the bucket requires.
 * False, after saying so once, when the region's lock could not be had in
 * time (held or forged in the container): the submission must be refused,
 * since it could not be charged. */
bool vg_limiter_admit(int dev, uint64_t cost_ns);

/* For a device that could not be registered: says, once per process, that
 * GPU work is refused because the region's last lock could not be had;
 * false when it could (nothing said). */
bool vg_limiter_lock_refused(void);

/* Takes cost_ns without waiting (a submission already made). */
void vg_limiter_charge(int dev, uint64_t cost_ns);

#endif
