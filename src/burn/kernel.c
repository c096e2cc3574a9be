/*
 * kernel.c -- the --seconds loop (see kernel.h).
 *
 * Launches are queued in batches on one stream and each batch ends with a
 * cuStreamSynchronize, so the count of kernels reflects work the GPU
 * finished, not work merely queued. The batch size adapts: after each batch
 * the measured time per kernel sets the next batch to about 10 ms of work
 * (growing at most 8x at a time, and shrinking near the deadline), which
 * keeps the queue full without overshooting --seconds by much. With
 * --series the batches are at most a fifth of the interval, so each line's
 * count is of kernels finished within (about) that interval.
 */
#include "kernel.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ptx.h"

#define BURN_BATCH_TARGET_S 0.010
#define BURN_BATCH_MAX 1000000ULL

static int choose_shape(const struct burn_opts *o, const struct burn_gpu *g,
                        struct burn_kernel *k) {
  unsigned sms = (unsigned)(g->sm_count > 0 ? g->sm_count : 1);
  unsigned grid = sms * 4, block = 256;
  if (o->shape == BURN_SHAPE_BIG || o->shape == BURN_SHAPE_MIX) {
    grid = sms * BURN_BIG_BLOCKS_PER_SM;
    block = BURN_BIG_BLOCK;
  } else if (o->shape == BURN_SHAPE_SMALL) {
    grid = BURN_SMALL_GRID;
    block = BURN_SMALL_BLOCK;
  }
  k->block = o->block ? o->block : block;
  k->grid = o->grid ? o->grid : grid;
  k->iters = o->iters;
  k->mix = o->shape == BURN_SHAPE_MIX;
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
  if (burn_check(vg_cu.cuModuleLoadData(&k->module, vg_burn_ptx), "cuModuleLoadData")) return -1;
  if (burn_check(vg_cu.cuModuleGetFunction(&k->func, k->module, VG_BURN_KERNEL),
                 "cuModuleGetFunction(" VG_BURN_KERNEL ")"))
    return -1;
  if (burn_check(vg_cu.cuMemAlloc_v2(&k->buf, (size_t)k->n * sizeof(float)),
                 "cuMemAlloc_v2 (kernel buffer)"))
    return -1;
  if (burn_check(vg_cu.cuMemsetD32_v2(k->buf, 0, k->n), "cuMemsetD32_v2")) return -1;
  return burn_check(vg_cu.cuStreamCreate(&k->stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
}

static int launch_batch(struct burn_kernel *k, uint64_t batch) {
  void *params[] = {&k->buf, &k->n, &k->iters};
  for (uint64_t i = 0; i < batch; i++) {
    bool small = k->mix && k->launched++ % 2 == 1;
    unsigned grid = small ? BURN_SMALL_GRID : k->grid, block = small ? BURN_SMALL_BLOCK : k->block;
    if (burn_check(
            vg_cu.cuLaunchKernel(k->func, grid, 1, 1, block, 1, 1, 0, k->stream, params, NULL),
            "cuLaunchKernel"))
      return -1;
  }
  return burn_check(vg_cu.cuStreamSynchronize(k->stream), "cuStreamSynchronize");
}

/* Next batch size from the last one's time per kernel and the time left:
 * about target_s of work, at most 8x the last batch. */
static uint64_t next_batch(uint64_t batch, double batch_s, double left_s, double target_s) {
  if (batch_s <= 0.0) return batch * 8 < BURN_BATCH_MAX ? batch * 8 : BURN_BATCH_MAX;
  double per_kernel = batch_s / (double)batch;
  double want = target_s / per_kernel;
  double fit = left_s / per_kernel + 1.0;
  if (want > fit) want = fit;
  if (want > (double)(batch * 8)) want = (double)(batch * 8);
  if (want > (double)BURN_BATCH_MAX) want = (double)BURN_BATCH_MAX;
  return want < 1.0 ? 1 : (uint64_t)want;
}

static double realtime_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Where the current --series interval began. */
struct series_mark {
  double every;      /* interval length in seconds; 0: no series */
  double next;       /* CLOCK_MONOTONIC time at which the interval is due */
  double since;      /* CLOCK_MONOTONIC time it began */
  uint64_t kernels0; /* r->kernels when it began */
};

/* Closes the interval at `end`: records, prints, starts the next one at the
 * next multiple of `every` after the start (so lines do not drift). */
static int series_close(struct burn_kernel_result *r, struct series_mark *m, double start,
                        double end) {
  if (r->series_len == r->series_cap) {
    size_t cap = r->series_cap ? r->series_cap * 2 : 64;
    struct burn_series_point *p = realloc(r->series, cap * sizeof(*p));
    if (p == NULL) {
      fprintf(stderr, "vgpu-burn: out of host memory for --series\n");
      return -1;
    }
    r->series = p;
    r->series_cap = cap;
  }
  struct burn_series_point *pt = &r->series[r->series_len++];
  pt->t = end - start;
  pt->kernels = r->kernels - m->kernels0;
  pt->kps = end > m->since ? (double)pt->kernels / (end - m->since) : 0.0;
  printf("t=%.3f kernels=%" PRIu64 " kps=%.1f\n", pt->t, pt->kernels, pt->kps);
  fflush(stdout);
  m->since = end;
  m->kernels0 = r->kernels;
  m->next = start + (floor(pt->t / m->every) + 1.0) * m->every;
  return 0;
}

/* The uncounted warm-up; leaves *batch adapted to the kernel's speed. */
static int warm_up(struct burn_kernel *k, double seconds, double target_s, uint64_t *batch) {
  double deadline = burn_now() + seconds;
  while (!burn_stop) {
    double t0 = burn_now();
    if (launch_batch(k, *batch) != 0) return -1;
    double end = burn_now();
    if (end >= deadline) break;
    *batch = next_batch(*batch, end - t0, deadline - end, target_s);
  }
  return 0;
}

int burn_kernel_run(struct burn_kernel *k, const struct burn_opts *o,
                    struct burn_kernel_result *r) {
  memset(r, 0, sizeof(*r));
  struct series_mark m = {(double)o->series_ms / 1000.0, 0.0, 0.0, 0};
  double target_s = BURN_BATCH_TARGET_S;
  if (m.every > 0.0 && m.every / 5.0 < target_s) target_s = m.every / 5.0;
  uint64_t batch = 1;
  if (o->warmup_s > 0.0 && warm_up(k, o->warmup_s, target_s, &batch) != 0) return -1;
  double start = burn_now(), deadline = start + o->seconds, end = start;
  r->start_epoch = realtime_now();
  m.next = start + m.every;
  m.since = start;
  while (!burn_stop) {
    double t0 = burn_now();
    if (launch_batch(k, batch) != 0) return -1;
    end = burn_now();
    r->kernels += batch;
    if (m.every > 0.0 && end >= m.next && series_close(r, &m, start, end) != 0) return -1;
    if (end >= deadline) break;
    batch = next_batch(batch, end - t0, deadline - end, target_s);
  }
  /* A last partial interval is kept only if it is long enough to mean something. */
  if (m.every > 0.0 && end - m.since >= m.every / 2.0 && series_close(r, &m, start, end) != 0)
    return -1;
  r->seconds = end - start;
  if (r->seconds > 0.0) {
    double flops = (double)r->kernels * k->n * k->iters * VG_BURN_FLOPS_PER_ITER;
    r->kernels_per_s = (double)r->kernels / r->seconds;
    r->gflops = flops / r->seconds * 1e-9;
  }
  return 0;
}

void burn_kernel_result_free(struct burn_kernel_result *r) {
  free(r->series);
  r->series = NULL;
  r->series_len = r->series_cap = 0;
}

void burn_kernel_release(struct burn_kernel *k) {
  if (k->stream != NULL) burn_check(vg_cu.cuStreamDestroy_v2(k->stream), "cuStreamDestroy_v2");
  if (k->buf != 0) burn_check(vg_cu.cuMemFree_v2(k->buf), "cuMemFree_v2 (kernel buffer)");
  if (k->module != NULL) burn_check(vg_cu.cuModuleUnload(k->module), "cuModuleUnload");
  memset(k, 0, sizeof(*k));
}
