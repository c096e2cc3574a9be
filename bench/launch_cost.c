/*
 * launch_cost.c -- vgpu-bench-launch: what libvgpu adds to a kernel launch.
 *
 * The same program runs with and without LD_PRELOAD=libvgpu.so (see
 * sm-accuracy.sh); the difference of its timings is the launch hook's cost.
 * Each case launches an empty kernel (one block of one thread, no
 * parameters) on one stream:
 *   launch     cuLaunchKernel
 *   launch_ex  cuLaunchKernelEx (no attributes)
 * Launches are queued in batches of --batch; only the launch calls are
 * timed, and the stream is synchronised between batches (untimed), so a
 * real driver's bounded launch queue never fills and blocks the timed loop.
 * On the simulator, run it with VGPU_SIM_WAVE_US=0 so kernels take no
 * simulated time and the simulator's backlog limit never waits either.
 *
 * Timing: CLOCK_MONOTONIC around each batch, summed over --iters launches
 * (a round), --rounds rounds, the best round kept, divided by --iters.
 * The command line, timing and output are bench_harness.c's. The batches
 * go through its non-inlined bench_timed(), so `valgrind
 * --tool=callgrind --toggle-collect=bench_timed vgpu-bench-launch --case
 * NAME` counts the instructions of exactly the timed launches; the JSON's
 * <case>_ops says how many there were.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>

#include "bench_harness.h"

static const char g_nop_ptx[] =
    ".version 7.0\n"
    ".target sm_50\n"
    ".address_size 64\n"
    "\n"
    ".visible .entry vg_nop()\n"
    "{\n"
    "\tret;\n"
    "}\n";

static CUfunction g_func;
static CUstream g_stream;

__attribute__((noinline)) void bench_loop_launch(uint64_t n) {
  for (uint64_t i = 0; i < n; i++) {
    CUresult r = vg_cu.cuLaunchKernel(g_func, 1, 1, 1, 1, 1, 1, 0, g_stream, NULL, NULL);
    if (r != CUDA_SUCCESS) bench_loop_error = r;
  }
}

__attribute__((noinline)) void bench_loop_launch_ex(uint64_t n) {
  CUlaunchConfig cfg;
  memset(&cfg, 0, sizeof(cfg));
  cfg.gridDimX = cfg.gridDimY = cfg.gridDimZ = 1;
  cfg.blockDimX = cfg.blockDimY = cfg.blockDimZ = 1;
  cfg.hStream = g_stream;
  for (uint64_t i = 0; i < n; i++) {
    CUresult r = vg_cu.cuLaunchKernelEx(&cfg, g_func, NULL, NULL);
    if (r != CUDA_SUCCESS) bench_loop_error = r;
  }
}

static struct bench_case g_cases[] = {
    {"launch", "cuLaunchKernel(<<<1,1>>>)", bench_loop_launch, 0, 0.0, 0},
    {"launch_ex", "cuLaunchKernelEx(<<<1,1>>>)", bench_loop_launch_ex, 0, 0.0, 0},
};

static const char g_usage[] =
    "usage: vgpu-bench-launch [--iters N] [--batch N] [--rounds N] [--case NAME] [--json]\n"
    "Times kernel launches of an empty kernel (ns per launch, best of --rounds rounds).\n"
    "  --iters N   launches per round (default 100000)\n"
    "  --batch N   launches between stream synchronisations, which are not timed\n"
    "              (default 256)\n"
    "  --rounds N  rounds per case, the best is kept (default 7)\n"
    "  --case NAME run one case: launch, launch_ex\n"
    "  --json      also print one JSON object on the last line\n"
    "On the simulator set VGPU_SIM_WAVE_US=0 so kernels take no simulated time.\n";

static int setup(void) {
  CUdevice dev;
  CUcontext ctx = NULL;
  CUmodule mod = NULL;
  if (vg_cu.cuLaunchKernelEx == NULL) { /* optional in cuda_dl.h: older drivers lack it */
    fprintf(stderr, "vgpu-bench-launch: this libcuda.so.1 lacks cuLaunchKernelEx\n");
    return -1;
  }
  if (bench_check(vg_cu.cuInit(0), "cuInit") ||
      bench_check(vg_cu.cuDeviceGet(&dev, 0), "cuDeviceGet"))
    return -1;
  if (bench_check(vg_cu.cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain")) return -1;
  if (bench_check(vg_cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")) return -1;
  if (bench_check(vg_cu.cuModuleLoadData(&mod, g_nop_ptx), "cuModuleLoadData")) return -1;
  if (bench_check(vg_cu.cuModuleGetFunction(&g_func, mod, "vg_nop"), "cuModuleGetFunction(vg_nop)"))
    return -1;
  return bench_check(vg_cu.cuStreamCreate(&g_stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
}

/* One round of `iters` launches in batches; returns the launch time in ns,
 * or a negative value when a synchronisation failed. */
static double run_round(const struct bench_case *c, uint64_t iters, const struct bench_opts *o,
                        int timed) {
  uint64_t batch = o->extra; /* --batch */
  double total = 0.0;
  for (uint64_t done = 0; done < iters;) {
    uint64_t n = iters - done < batch ? iters - done : batch;
    if (timed)
      total += bench_timed(c->loop, n);
    else
      c->loop(n);
    done += n;
    if (bench_check(vg_cu.cuStreamSynchronize(g_stream), "cuStreamSynchronize")) return -1.0;
  }
  return total;
}

int main(int argc, char **argv) {
  static const struct bench_spec spec = {
      .prog = "vgpu-bench-launch",
      .usage = g_usage,
      .extra_opt = "batch",
      .extra_key = "batch",
      .iters_default = 100000,
      .extra_default = 256,
      .name_width = 10,
      .what_width = 30,
      .cases = g_cases,
      .n_cases = sizeof(g_cases) / sizeof(g_cases[0]),
      .setup = setup,
      .round = run_round,
  };
  return bench_main(&spec, argc, argv);
}
