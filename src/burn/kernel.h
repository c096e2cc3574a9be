/*
 * kernel.h -- the --seconds loop: keep the GPU's FMA units busy.
 *
 * Preparation (module load, buffer, stream) is separate from the timed loop
 * so that it happens before --alloc takes memory: the workload's own small
 * buffer must not be what runs out.
 */
#ifndef VG_BURN_KERNEL_H
#define VG_BURN_KERNEL_H

#include <stdbool.h>
#include <stdint.h>

#include "cuda_dl.h"
#include "gpu.h"
#include "options.h"

struct burn_kernel {
  CUmodule module;
  CUfunction func;
  CUstream stream;
  CUdeviceptr buf; /* n floats */
  unsigned n;      /* threads per launch = grid * block */
  unsigned grid, block, iters;
  bool mix;          /* --shape mix: every other launch is small */
  uint64_t launched; /* launches so far, for mix's turns */
};

/* One --series interval: it ends t seconds after the loop started and
 * began where the previous one ended (or at 0). */
struct burn_series_point {
  double t;         /* end of the interval, seconds since the loop started */
  uint64_t kernels; /* kernels completed in the interval */
  double kps;       /* kernels / the interval's measured length */
};

struct burn_kernel_result {
  uint64_t kernels; /* launches completed (the warm-up not counted) */
  double seconds;   /* measured wall time of the loop */
  double kernels_per_s;
  double gflops;                    /* FMA work done per second, in 10^9 flop/s */
  double start_epoch;               /* CLOCK_REALTIME at t = 0, so that other processes'
                                     * clocks (a script's `date`) can be related to t */
  struct burn_series_point *series; /* --series points, malloc'ed; NULL without */
  size_t series_len, series_cap;
};

/* Loads the PTX, sizes the grid (o->grid/o->block or SMs x 4 blocks of 256
 * threads), allocates and zeroes the buffer, creates the stream. */
int burn_kernel_prepare(const struct burn_opts *o, const struct burn_gpu *g, struct burn_kernel *k);

/* Launches for o->warmup_s seconds uncounted, then for o->seconds (or until
 * burn_stop), synchronising about every 10 ms of work (more often with a
 * short --series), and fills r. With o->series_ms, prints one line per
 * interval as it ends and records it in r->series. */
int burn_kernel_run(struct burn_kernel *k, const struct burn_opts *o, struct burn_kernel_result *r);

/* Frees r->series. */
void burn_kernel_result_free(struct burn_kernel_result *r);

void burn_kernel_release(struct burn_kernel *k);

#endif
