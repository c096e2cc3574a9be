/*
 * cuda_launch.c -- kernel launches and their cost model.
 *
 * A launch is validated like the driver does (function handle, context,
 * dimensions, 1024 threads per block) and then costs simulated time on the
 * device's shared timeline:
 *
 *   resident blocks per SM = max(1, min(32, 2048 / threads per block))
 *   waves                  = ceil(total blocks / (SMs * resident))
 *   duration               = waves * VGPU_SIM_WAVE_US
 *
 * capped at one hour. The launch returns at once (launches are asynchronous)
 * unless the device's queue already reaches more than 50 ms ahead, in which
 * case it waits, as a real driver's bounded queue does. A cooperative launch
 * must fit in one wave (CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE otherwise).
 *
 * A launch into a capturing stream is validated the same way and then
 * recorded into the capture graph instead of running (cuda_graph.c); graph
 * kernels are costed by cu_launch_cost too.
 */
#include <string.h>

#include "cuda_internal.h"

#define LAUNCH_ATTRIBUTE_COOPERATIVE 2
#define MAX_THREADS_PER_BLOCK 1024u
#define MAX_THREADS_PER_SM 2048u
#define MAX_BLOCKS_PER_SM 32u
#define MAX_DYNAMIC_SHARED 166912u
#define MAX_DURATION_NS (3600ull * 1000000000ull)

static uint64_t threads_of(const struct cu_launch *l) {
  return (uint64_t)l->block[0] * l->block[1] * l->block[2];
}

static bool dims_valid(const struct cu_launch *l) {
  for (int i = 0; i < 3; i++)
    if (l->grid[i] == 0 || l->block[i] == 0) return false;
  if (l->block[0] > 1024 || l->block[1] > 1024 || l->block[2] > 64) return false;
  if (l->grid[1] > 65535 || l->grid[2] > 65535 || l->grid[0] > 0x7fffffffu) return false;
  return threads_of(l) <= MAX_THREADS_PER_BLOCK && l->shared <= MAX_DYNAMIC_SHARED;
}

static uint64_t resident_per_sm(const struct cu_launch *l) {
  uint64_t r = MAX_THREADS_PER_SM / threads_of(l);
  if (r > MAX_BLOCKS_PER_SM) r = MAX_BLOCKS_PER_SM;
  return r == 0 ? 1 : r;
}

static uint64_t blocks_of(const struct cu_launch *l) {
  return (uint64_t)l->grid[0] * l->grid[1] * l->grid[2];
}

static uint64_t waves_of(const struct cu_launch *l, uint64_t sms) {
  uint64_t per_wave = sms * resident_per_sm(l);
  return (blocks_of(l) + per_wave - 1) / per_wave;
}

/* The time of a wave whose busiest SM holds `blocks` blocks: the whole wave
 * time, or with VGPU_SIM_MIN_WAVE_PCT its fill of the SM's 2048 threads, at
 * least that percentage (a few threads per SM are bound by latency, not by
 * the SM's throughput). */
static uint64_t wave_time(const struct cu_launch *l, uint64_t blocks, uint64_t wave_ns,
                          unsigned min_pct) {
  if (min_pct == 0) return wave_ns;
  uint64_t threads = blocks * threads_of(l);
  uint64_t pct = threads >= MAX_THREADS_PER_SM ? 100 : threads * 100 / MAX_THREADS_PER_SM;
  if (pct < min_pct) pct = min_pct;
  return wave_ns * pct / 100;
}

static uint64_t duration_of(const struct cu_launch *l, uint64_t sms, uint64_t wave_ns,
                            unsigned min_pct) {
  uint64_t waves = waves_of(l, sms), resident = resident_per_sm(l);
  uint64_t rest = blocks_of(l) - (waves - 1) * sms * resident; /* in the last wave */
  uint64_t last = wave_time(l, (rest + sms - 1) / sms, wave_ns, min_pct);
  uint64_t full = wave_time(l, resident, wave_ns, min_pct);
  if (full != 0 && waves - 1 > (MAX_DURATION_NS - last) / full) return MAX_DURATION_NS;
  return (waves - 1) * full + last;
}

CUresult cu_launch_cost(const struct cu_launch *l, unsigned phys, uint64_t *duration) {
  if (!dims_valid(l)) return CUDA_ERROR_INVALID_VALUE;
  const struct vg_sim_state *st = g_cu.sim.st;
  uint64_t sms = st->dev[phys].sms;
  if (l->cooperative && waves_of(l, sms) > 1) return CU_ERR_COOPERATIVE_LAUNCH_TOO_LARGE;
  *duration = duration_of(l, sms, st->config.wave_ns, st->config.min_wave_pct);
  return CUDA_SUCCESS;
}

static CUresult launch(CUfunction f, const struct cu_launch *l, CUstream stream, void **params,
                       void **extra) {
  struct CUctx_st *ctx, *fctx;
  CUresult rc = cu_current(&ctx);
  if (rc != CUDA_SUCCESS) return rc;
  if ((rc = cu_function_ctx(f, &fctx)) != CUDA_SUCCESS) return rc;
  if (fctx != ctx) return CUDA_ERROR_INVALID_HANDLE;
  if (!dims_valid(l) || (params != NULL && extra != NULL)) return CUDA_ERROR_INVALID_VALUE;
  struct CUstream_st *s;
  struct CUctx_st *sctx;
  if ((rc = cu_stream_resolve(stream, &s, &sctx)) != CUDA_SUCCESS) return rc;
  if (sctx != ctx) return CUDA_ERROR_INVALID_HANDLE; /* a stream of another context */
  uint64_t duration;
  if ((rc = cu_launch_cost(l, ctx->phys, &duration)) != CUDA_SUCCESS) return rc;
  bool captured = false;
  if ((rc = cu_capture_kernel(s, f, l, duration, &captured)) != CUDA_SUCCESS || captured) return rc;
  cu_host_cost(g_cu.sim.st->config.launch_ns); /* the driver's side of a launch */
  uint64_t end = vg_sim_queue_work(&g_cu.sim, ctx->phys, cu_stream_last_end(s, sctx), duration);
  cu_stream_note_work(s, ctx, end);
  return CUDA_SUCCESS;
}

CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                        unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                        unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
                        void **kernelParams, void **extra) {
  struct cu_launch l = {
      {gridDimX, gridDimY, gridDimZ}, {blockDimX, blockDimY, blockDimZ}, sharedMemBytes, false};
  return launch(f, &l, hStream, kernelParams, extra);
}

CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                             unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                             unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
                             void **kernelParams, void **extra) {
  return cuLaunchKernel(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,
                        sharedMemBytes, hStream, kernelParams, extra);
}

static bool wants_cooperative(const CUlaunchConfig *c) {
  for (unsigned i = 0; i < c->numAttrs; i++) {
    int value;
    memcpy(&value, c->attrs[i].value, sizeof(value));
    if (c->attrs[i].id == LAUNCH_ATTRIBUTE_COOPERATIVE && value != 0) return true;
  }
  return false;
}

CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **kernelParams,
                          void **extra) {
  CUresult rc = cu_ready();
  if (rc != CUDA_SUCCESS) return rc;
  if (config == NULL || (config->numAttrs > 0 && config->attrs == NULL))
    return CUDA_ERROR_INVALID_VALUE;
  struct cu_launch l = {{config->gridDimX, config->gridDimY, config->gridDimZ},
                        {config->blockDimX, config->blockDimY, config->blockDimZ},
                        config->sharedMemBytes,
                        wants_cooperative(config)};
  return launch(f, &l, config->hStream, kernelParams, extra);
}

CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f, void **kernelParams,
                               void **extra) {
  return cuLaunchKernelEx(config, f, kernelParams, extra);
}

CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                   unsigned int gridDimZ, unsigned int blockDimX,
                                   unsigned int blockDimY, unsigned int blockDimZ,
                                   unsigned int sharedMemBytes, CUstream hStream,
                                   void **kernelParams) {
  struct cu_launch l = {
      {gridDimX, gridDimY, gridDimZ}, {blockDimX, blockDimY, blockDimZ}, sharedMemBytes, true};
  return launch(f, &l, hStream, kernelParams, NULL);
}

CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                        unsigned int gridDimZ, unsigned int blockDimX,
                                        unsigned int blockDimY, unsigned int blockDimZ,
                                        unsigned int sharedMemBytes, CUstream hStream,
                                        void **kernelParams) {
  return cuLaunchCooperativeKernel(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,
                                   sharedMemBytes, hStream, kernelParams);
}
