/*
 * alloc.h -- the --alloc loop: take device memory chunk by chunk.
 *
 * This is how a memory limit is observed from the outside: allocate with
 * cuMemAlloc until the requested total is reached or the driver (or libvgpu
 * in front of it) answers CUDA_ERROR_OUT_OF_MEMORY. The OOM answer is the
 * expected end of an over-limit request, not an error; any other failure is.
 */
#ifndef VG_BURN_ALLOC_H
#define VG_BURN_ALLOC_H

#include <stddef.h>
#include <stdint.h>

#include "cuda_dl.h"
#include "options.h"

struct burn_alloc {
  CUdeviceptr *ptrs; /* one per successful cuMemAlloc_v2 */
  size_t count;
  size_t cap;
  uint64_t bytes; /* sum of the requested sizes that succeeded */
  int oom;        /* stopped by CUDA_ERROR_OUT_OF_MEMORY */
};

/* Allocates o->alloc_bytes in o->chunk_bytes pieces (the last may be
 * smaller), touching each with cuMemsetD8 when o->touch. Returns 0 when the
 * loop ended by reaching the total, by OOM or by a stop signal; -1 (message
 * printed) on any other failure. What was allocated stays recorded in *a either way. */
int burn_alloc_run(const struct burn_opts *o, struct burn_alloc *a);

/* Frees everything in a; returns 0 or -1 if a cuMemFree_v2 failed. */
int burn_alloc_free(struct burn_alloc *a);

#endif
