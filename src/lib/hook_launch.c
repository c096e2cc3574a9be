/*
 * hook_launch.c -- every way work is submitted to the GPU goes through the
 * compute limiter: cuLaunchKernel, cuLaunchKernelEx, cooperative launches,
 * CUDA graphs, each in its legacy-stream and per-thread-stream (_ptsz) form.
 *
 * Without a compute limit anywhere in the container the hooks cost a few
 * loads and a direct call. With one, a submission is charged its estimated
 * GPU time before it goes to the driver (limiter.h, estimate.h). Launches
 * into a stream that is being captured into a graph do not run, so they are
 * not charged: the graph is, when it is launched.
 */
#include "charge.h"
#include "estimate.h"
#include "hooks.h"
#include "limiter.h"
#include "state.h"

struct submit {
  bool limited;
  bool refused; /* not submitted: the region's lock could not be had (limiter.h) */
  int dev;
  CUstream stream;
  bool ptsz;
  struct vg_sample sample;
};

static bool capturing(CUstream stream, bool ptsz) {
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  CUresult rc = ptsz ? VG_CU(cuStreamIsCapturing_ptsz, stream, &status)
                     : VG_CU(cuStreamIsCapturing, stream, &status);
  return rc == CUDA_SUCCESS && status != CU_STREAM_CAPTURE_STATUS_NONE;
}

/* Waits for the container's turn; false when this submission is unlimited
 * or, with s->refused, must not be made. */
static bool submit_begin(struct submit *s, const struct vg_shape *shape, CUstream stream,
                         bool ptsz) {
  s->limited = false;
  s->refused = false;
  if (!vg_limiter_engaged()) return false;
  int dev = vg_state_current_device();
  /* A device that could not be registered for a lock held or forged in the
   * container is no unlimited one. */
  if (dev < 0) return !(s->refused = vg_limiter_lock_refused());
  if (vg_limiter_percent(dev) == 0 || capturing(stream, ptsz)) return false;
  vg_state_join(); /* the share policy tells our processes from others' by slot */
  vg_estimate_poll();
  uint64_t cost = vg_estimate_before(shape, &s->sample);
  if (!vg_limiter_admit(dev, cost)) return !(s->refused = true);
  vg_estimate_start(&s->sample, stream, ptsz);
  *s = (struct submit){
      .limited = true, .dev = dev, .stream = stream, .ptsz = ptsz, .sample = s->sample};
  return true;
}

/* A shape seen for the first time was measured on the spot: charge it now. */
static CUresult submit_end(struct submit *s, CUresult rc) {
  if (!s->limited) return rc;
  uint64_t measured = vg_estimate_after(&s->sample, s->stream, s->ptsz, rc == CUDA_SUCCESS);
  if (measured > 0) vg_limiter_charge(s->dev, measured);
  return rc;
}

static struct vg_shape kernel_shape(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                    unsigned bx, unsigned by, unsigned bz) {
  return (struct vg_shape){
      .object = (uint64_t)(uintptr_t)f, .blocks = (uint64_t)gx * gy * gz, .threads = bx * by * bz};
}

#define VG_LAUNCH(fn, ptsz, ...)                                                      \
  VG_ENTER();                                                                         \
  struct submit s;                                                                    \
  struct vg_shape shape =                                                             \
      kernel_shape(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ); \
  if (!submit_begin(&s, &shape, hStream, ptsz))                                       \
    return s.refused ? CUDA_ERROR_NOT_PERMITTED : VG_CU(fn, __VA_ARGS__);             \
  return submit_end(&s, VG_CU(fn, __VA_ARGS__))

VG_EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                  unsigned int gridDimZ, unsigned int blockDimX,
                                  unsigned int blockDimY, unsigned int blockDimZ,
                                  unsigned int sharedMemBytes, CUstream hStream,
                                  void **kernelParams, void **extra) {
  VG_LAUNCH(cuLaunchKernel, false, f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,
            sharedMemBytes, hStream, kernelParams, extra);
}

VG_EXPORT CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                       unsigned int gridDimZ, unsigned int blockDimX,
                                       unsigned int blockDimY, unsigned int blockDimZ,
                                       unsigned int sharedMemBytes, CUstream hStream,
                                       void **kernelParams, void **extra) {
  VG_LAUNCH(cuLaunchKernel_ptsz, true, f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY,
            blockDimZ, sharedMemBytes, hStream, kernelParams, extra);
}

VG_EXPORT CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned int gridDimX,
                                             unsigned int gridDimY, unsigned int gridDimZ,
                                             unsigned int blockDimX, unsigned int blockDimY,
                                             unsigned int blockDimZ, unsigned int sharedMemBytes,
                                             CUstream hStream, void **kernelParams) {
  VG_LAUNCH(cuLaunchCooperativeKernel, false, f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY,
            blockDimZ, sharedMemBytes, hStream, kernelParams);
}

VG_EXPORT CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int gridDimX,
                                                  unsigned int gridDimY, unsigned int gridDimZ,
                                                  unsigned int blockDimX, unsigned int blockDimY,
                                                  unsigned int blockDimZ,
                                                  unsigned int sharedMemBytes, CUstream hStream,
                                                  void **kernelParams) {
  VG_LAUNCH(cuLaunchCooperativeKernel_ptsz, true, f, gridDimX, gridDimY, gridDimZ, blockDimX,
            blockDimY, blockDimZ, sharedMemBytes, hStream, kernelParams);
}

#define VG_LAUNCH_EX(fn, ptsz)                                                                   \
  VG_ENTER();                                                                                    \
  if (config == NULL) return VG_CU(fn, config, f, kernelParams, extra);                          \
  struct submit s;                                                                               \
  struct vg_shape shape = kernel_shape(f, config->gridDimX, config->gridDimY, config->gridDimZ,  \
                                       config->blockDimX, config->blockDimY, config->blockDimZ); \
  if (!submit_begin(&s, &shape, config->hStream, ptsz))                                          \
    return s.refused ? CUDA_ERROR_NOT_PERMITTED : VG_CU(fn, config, f, kernelParams, extra);     \
  return submit_end(&s, VG_CU(fn, config, f, kernelParams, extra))

VG_EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **kernelParams,
                                    void **extra) {
  VG_LAUNCH_EX(cuLaunchKernelEx, false);
}

VG_EXPORT CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f,
                                         void **kernelParams, void **extra) {
  VG_LAUNCH_EX(cuLaunchKernelEx_ptsz, true);
}

/* A graph is one submission: charged the GPU time of all its work. */
#define VG_GRAPH_LAUNCH(fn, ptsz)                                                 \
  VG_ENTER();                                                                     \
  struct submit s;                                                                \
  struct vg_shape shape = {.object = (uint64_t)(uintptr_t)hGraphExec};            \
  if (!submit_begin(&s, &shape, hStream, ptsz))                                   \
    return s.refused ? CUDA_ERROR_NOT_PERMITTED : VG_CU(fn, hGraphExec, hStream); \
  return submit_end(&s, VG_CU(fn, hGraphExec, hStream))

VG_EXPORT CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream) {
  VG_GRAPH_LAUNCH(cuGraphLaunch, false);
}

VG_EXPORT CUresult cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream) {
  VG_GRAPH_LAUNCH(cuGraphLaunch_ptsz, true);
}
