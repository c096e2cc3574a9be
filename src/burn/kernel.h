/*
 * kernel.h -- the --seconds loop: keep the GPU's FMA units busy.
 *
 * Preparation (module load, buffer, stream) is separate from the timed loop
 * so that it happens before --alloc takes memory: the workload's own small
 * buffer must not be what runs out.
 */
#ifndef VG_BURN_KERNEL_H
#define VG_BURN_KERNEL_H

#include <stdint.h>

#include "cuda_abi.h"
#include "gpu.h"
#include "options.h"

struct burn_kernel {
  CUmodule module;
  CUfunction func;
  CUstream stream;
  CUdeviceptr buf; /* n floats */
  unsigned n;      /* threads per launch = grid * block */
  unsigned grid, block, iters;
};

struct burn_kernel_result {
  uint64_t kernels; /* launches completed */
  double seconds;   /* measured wall time of the loop */
  double kernels_per_s;
  double gflops; /* FMA work done per second, in 10^9 flop/s */
};

/* Loads the PTX, sizes the grid (o->grid/o->block or SMs x 4 blocks of 256
 * threads), allocates and zeroes the buffer, creates the stream. */
int burn_kernel_prepare(const struct burn_opts *o, const struct burn_gpu *g, struct burn_kernel *k);

/* Launches for `seconds` (or until burn_stop), synchronising about every
 * 10 ms of work; fills r. */
int burn_kernel_run(struct burn_kernel *k, double seconds, struct burn_kernel_result *r);

void burn_kernel_release(struct burn_kernel *k);

#endif
