/*
 * estimate.h -- how much GPU time a submission costs.
 *
 * The limiter charges launches in nanoseconds of GPU time, not in blocks: a
 * block of one kernel may take a microsecond and of another a millisecond,
 * and the SM count of the device does not enter at all, so one tuning holds
 * from small GPUs to H200s. The time of each kernel shape (function, grid,
 * block) or CUDA graph is learnt from event pairs recorded around sampled
 * submissions. Other work on the device can only make a sample longer, never
 * shorter, so the estimate is the least of the recent samples.
 *
 * An event record is itself a command the GPU processes (about 1.5 us on
 * an H200), so a span from a start event to an end event holds the kernel
 * and one event's processing. Beside a 300 us kernel that is nothing; beside
 * an 8 us one it overcharged by a fifth (0.84 of the limit on the H200).
 * Each sample therefore records a third event just before the start one:
 * pre -> start is one event's own time with nothing between, and the least
 * of those recent readings is taken off every span (at most half of it).
 */
#ifndef VG_ESTIMATE_H
#define VG_ESTIMATE_H

#include <stdbool.h>
#include <stdint.h>

#include "cuda_abi.h"

struct vg_shape {
  uint64_t object;  /* CUfunction or CUgraphExec */
  uint64_t blocks;  /* grid size; 0 for graphs */
  uint32_t threads; /* block size; 0 for graphs */
};

/* One submission being measured: events recorded around it. */
struct vg_sample {
  struct vg_shape shape;
  CUevent pre, start, end; /* pre -> start: an event's own GPU time */
  bool active;
  bool wait; /* measure now: nothing is known about this shape yet */
};

/* The estimate for shape in ns (0 when nothing is known yet), and whether
 * this submission is to be sampled (then sample holds its events). */
uint64_t vg_estimate_before(const struct vg_shape *shape, struct vg_sample *sample);
/* Records the sample's pre and start events on stream (ptsz: per-thread default
 * stream semantics). Called after the limiter's wait, right before the
 * submission, so that the wait is never measured as GPU time. */
void vg_estimate_start(struct vg_sample *sample, CUstream stream, bool ptsz);
/* After the submission: records the end event; for a first sample, waits
 * for it and returns the cost it measured in ns (else 0). */
uint64_t vg_estimate_after(struct vg_sample *sample, CUstream stream, bool ptsz, bool launched);
/* Folds finished samples into the estimates (cheap; called per launch). */
void vg_estimate_poll(void);

#endif
