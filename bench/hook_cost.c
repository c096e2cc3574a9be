/*
 * hook_cost.c -- vgpu-bench-hook: what libvgpu adds to a driver call.
 *
 * The same program runs with and without LD_PRELOAD=libvgpu.so (see
 * run-hook-bench.sh); the difference of its timings is the hook's cost.
 * Each case is a tight loop of one driver-API operation:
 *   alloc_free        cuMemAlloc_v2(1 MiB) + cuMemFree_v2, the accounted path
 *   device_total_mem  cuDeviceTotalMem_v2, hooked (virtualised under a limit,
 *                     passed through without one)
 *   driver_version    cuDriverGetVersion, not hooked
 *   ctx_get_device    cuCtxGetDevice, not hooked
 * Timing: CLOCK_MONOTONIC around `iters` calls, repeated `rounds` times, the
 * best round kept (the least disturbed by the scheduler), divided by iters.
 *
 * The command line, timing and output are bench_harness.c's. The timed
 * rounds (not the warm-up) go through its non-inlined bench_timed(), so `valgrind --tool=callgrind
 * --toggle-collect=bench_timed vgpu-bench-hook --case NAME` counts the instructions of exactly the
 * timed operations of one case; the JSON's <case>_ops says how many there were (run-hook-bench.sh
 * --callgrind divides by it).
 */
#include <stddef.h>
#include <stdint.h>

#include "bench_harness.h"

#define BENCH_ALLOC_BYTES (1ULL << 20)

static CUdevice g_dev;

__attribute__((noinline)) void bench_loop_alloc_free(uint64_t iters) {
  for (uint64_t i = 0; i < iters; i++) {
    CUdeviceptr p = 0;
    CUresult r = vg_cu.cuMemAlloc_v2(&p, BENCH_ALLOC_BYTES);
    if (r == CUDA_SUCCESS) r = vg_cu.cuMemFree_v2(p);
    if (r != CUDA_SUCCESS) bench_loop_error = r;
  }
}

__attribute__((noinline)) void bench_loop_device_total_mem(uint64_t iters) {
  for (uint64_t i = 0; i < iters; i++) {
    size_t bytes = 0;
    CUresult r = vg_cu.cuDeviceTotalMem_v2(&bytes, g_dev);
    if (r != CUDA_SUCCESS) bench_loop_error = r;
  }
}

__attribute__((noinline)) void bench_loop_driver_version(uint64_t iters) {
  for (uint64_t i = 0; i < iters; i++) {
    int v = 0;
    CUresult r = vg_cu.cuDriverGetVersion(&v);
    if (r != CUDA_SUCCESS) bench_loop_error = r;
  }
}

__attribute__((noinline)) void bench_loop_ctx_get_device(uint64_t iters) {
  for (uint64_t i = 0; i < iters; i++) {
    CUdevice d = 0;
    CUresult r = vg_cu.cuCtxGetDevice(&d);
    if (r != CUDA_SUCCESS) bench_loop_error = r;
  }
}

static struct bench_case g_cases[] = {
    {"alloc_free", "cuMemAlloc_v2(1 MiB)+cuMemFree_v2", bench_loop_alloc_free, 1, 0.0, 0},
    {"device_total_mem", "cuDeviceTotalMem_v2", bench_loop_device_total_mem, 0, 0.0, 0},
    {"driver_version", "cuDriverGetVersion", bench_loop_driver_version, 0, 0.0, 0},
    {"ctx_get_device", "cuCtxGetDevice", bench_loop_ctx_get_device, 0, 0.0, 0},
};

static const char g_usage[] =
    "usage: vgpu-bench-hook [--iters N] [--alloc-iters N] [--rounds N] [--case NAME] [--json]\n"
    "Times driver-API calls (ns per operation, best of --rounds rounds).\n"
    "  --iters N        calls per round for the cheap cases (default 200000)\n"
    "  --alloc-iters N  alloc/free pairs per round (default 20000)\n"
    "  --rounds N       rounds per case, the best is kept (default 7)\n"
    "  --case NAME      run one case: alloc_free, device_total_mem, driver_version,\n"
    "                   ctx_get_device\n"
    "  --json           also print one JSON object on the last line\n";

static int setup(void) {
  CUcontext ctx = NULL;
  if (bench_check(vg_cu.cuInit(0), "cuInit") ||
      bench_check(vg_cu.cuDeviceGet(&g_dev, 0), "cuDeviceGet"))
    return -1;
  if (bench_check(vg_cu.cuDevicePrimaryCtxRetain(&ctx, g_dev), "cuDevicePrimaryCtxRetain"))
    return -1;
  return bench_check(vg_cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
}

int main(int argc, char **argv) {
  static const struct bench_spec spec = {
      .prog = "vgpu-bench-hook",
      .usage = g_usage,
      .extra_opt = "alloc-iters",
      .extra_key = "alloc_iters",
      .iters_default = 200000,
      .extra_default = 20000,
      .name_width = 18,
      .what_width = 36,
      .cases = g_cases,
      .n_cases = sizeof(g_cases) / sizeof(g_cases[0]),
      .setup = setup,
  };
  return bench_main(&spec, argc, argv);
}
