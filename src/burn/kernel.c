/*
 * kernel.c -- the --seconds loop (see kernel.h).
 *
 * Launches are queued in batches on one stream and each batch ends with a
 * cuStreamSynchronize, so the count of kernels reflects work the GPU
 * finished, not work merely queued. The batch size adapts: after each batch
 * the measured time per kernel sets the next batch to about 10 ms of work
 * (growing at most 8x at a time, and shrinking near the deadline), which
 * keeps the queue full without overshooting --seconds by much.
 */
#include "kernel.h"

#include <stdio.h>
#include <string.h>

#include "ptx.h"

#define BURN_BATCH_TARGET_S 0.010
#define BURN_BATCH_MAX 1000000ULL

static int choose_shape(const struct burn_opts *o, const struct burn_gpu *g,
                        struct burn_kernel *k) {
  k->block = o->block ? o->block : 256;
  k->grid = o->grid ? o->grid : (unsigned)(g->sm_count > 0 ? g->sm_count : 1) * 4;
  k->iters = o->iters;
  if (g->max_block > 0 && k->block > (unsigned)g->max_block) {
    fprintf(stderr, "vgpu-burn: --block %u: the device allows at most %d threads per block\n",
            k->block, g->max_block);
    return -1;
  }
  if ((uint64_t)k->grid * k->block > 0xffffffffULL) {
    fprintf(stderr, "vgpu-burn: --grid %u x --block %u is more than 2^32-1 threads\n", k->grid,
            k->block);
    return -1;
  }
  k->n = k->grid * k->block;
  return 0;
}

int burn_kernel_prepare(const struct burn_opts *o, const struct burn_gpu *g,
                        struct burn_kernel *k) {
  memset(k, 0, sizeof(*k));
  if (choose_shape(o, g, k) != 0) return -1;
  if (burn_check(cuModuleLoadData(&k->module, vg_burn_ptx), "cuModuleLoadData")) return -1;
  if (burn_check(cuModuleGetFunction(&k->func, k->module, VG_BURN_KERNEL),
                 "cuModuleGetFunction(" VG_BURN_KERNEL ")"))
    return -1;
  if (burn_check(cuMemAlloc_v2(&k->buf, (size_t)k->n * sizeof(float)),
                 "cuMemAlloc_v2 (kernel buffer)"))
    return -1;
  if (burn_check(cuMemsetD32_v2(k->buf, 0, k->n), "cuMemsetD32_v2")) return -1;
  return burn_check(cuStreamCreate(&k->stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
}

static int launch_batch(struct burn_kernel *k, uint64_t batch) {
  void *params[] = {&k->buf, &k->n, &k->iters};
  for (uint64_t i = 0; i < batch; i++) {
    if (burn_check(
            cuLaunchKernel(k->func, k->grid, 1, 1, k->block, 1, 1, 0, k->stream, params, NULL),
            "cuLaunchKernel"))
      return -1;
  }
  return burn_check(cuStreamSynchronize(k->stream), "cuStreamSynchronize");
}

/* Next batch size from the last one's time per kernel and the time left. */
static uint64_t next_batch(uint64_t batch, double batch_s, double left_s) {
  if (batch_s <= 0.0) return batch * 8 < BURN_BATCH_MAX ? batch * 8 : BURN_BATCH_MAX;
  double per_kernel = batch_s / (double)batch;
  double want = BURN_BATCH_TARGET_S / per_kernel;
  double fit = left_s / per_kernel + 1.0;
  if (want > fit) want = fit;
  if (want > (double)(batch * 8)) want = (double)(batch * 8);
  if (want > (double)BURN_BATCH_MAX) want = (double)BURN_BATCH_MAX;
  return want < 1.0 ? 1 : (uint64_t)want;
}

int burn_kernel_run(struct burn_kernel *k, double seconds, struct burn_kernel_result *r) {
  memset(r, 0, sizeof(*r));
  double start = burn_now(), deadline = start + seconds, end = start;
  uint64_t batch = 1;
  while (!burn_stop) {
    double t0 = burn_now();
    if (launch_batch(k, batch) != 0) return -1;
    end = burn_now();
    r->kernels += batch;
    if (end >= deadline) break;
    batch = next_batch(batch, end - t0, deadline - end);
  }
  r->seconds = end - start;
  if (r->seconds > 0.0) {
    double flops = (double)r->kernels * k->n * k->iters * VG_BURN_FLOPS_PER_ITER;
    r->kernels_per_s = (double)r->kernels / r->seconds;
    r->gflops = flops / r->seconds * 1e-9;
  }
  return 0;
}

void burn_kernel_release(struct burn_kernel *k) {
  if (k->stream != NULL) burn_check(cuStreamDestroy_v2(k->stream), "cuStreamDestroy_v2");
  if (k->buf != 0) burn_check(cuMemFree_v2(k->buf), "cuMemFree_v2 (kernel buffer)");
  if (k->module != NULL) burn_check(cuModuleUnload(k->module), "cuModuleUnload");
  memset(k, 0, sizeof(*k));
}
