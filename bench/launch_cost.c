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
 * The batches go through the non-inlined bench_timed(), so `valgrind
 * --tool=callgrind --toggle-collect=bench_timed vgpu-bench-launch --case
 * NAME` counts the instructions of exactly the timed launches; the JSON's
 * <case>_ops says how many there were.
 */
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cuda_abi.h"

static const char g_nop_ptx[] =
    ".version 7.0\n"
    ".target sm_50\n"
    ".address_size 64\n"
    "\n"
    ".visible .entry vg_nop()\n"
    "{\n"
    "\tret;\n"
    "}\n";

/* Set when a launch inside a loop fails; checked after the round so the
 * loops stay as thin as the calls they measure. */
static CUresult g_loop_error = CUDA_SUCCESS;
static CUfunction g_func;
static CUstream g_stream;

__attribute__((noinline)) void bench_loop_launch(uint64_t n) {
  for (uint64_t i = 0; i < n; i++) {
    CUresult r = cuLaunchKernel(g_func, 1, 1, 1, 1, 1, 1, 0, g_stream, NULL, NULL);
    if (r != CUDA_SUCCESS) g_loop_error = r;
  }
}

__attribute__((noinline)) void bench_loop_launch_ex(uint64_t n) {
  CUlaunchConfig cfg;
  memset(&cfg, 0, sizeof(cfg));
  cfg.gridDimX = cfg.gridDimY = cfg.gridDimZ = 1;
  cfg.blockDimX = cfg.blockDimY = cfg.blockDimZ = 1;
  cfg.hStream = g_stream;
  for (uint64_t i = 0; i < n; i++) {
    CUresult r = cuLaunchKernelEx(&cfg, g_func, NULL, NULL);
    if (r != CUDA_SUCCESS) g_loop_error = r;
  }
}

struct bench_case {
  const char *name;
  const char *what;
  void (*loop)(uint64_t n);
  double best_ns;
  uint64_t ops; /* launches done in timed rounds */
};

static struct bench_case g_cases[] = {
    {"launch", "cuLaunchKernel(<<<1,1>>>)", bench_loop_launch, 0.0, 0},
    {"launch_ex", "cuLaunchKernelEx(<<<1,1>>>)", bench_loop_launch_ex, 0.0, 0},
};
#define N_CASES (sizeof(g_cases) / sizeof(g_cases[0]))

struct bench_opts {
  uint64_t iters; /* launches per round */
  uint64_t batch; /* launches between synchronisations */
  unsigned rounds;
  const char *only; /* run just this case (callgrind mode) */
  int json;
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

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int check(CUresult r, const char *call) {
  if (r == CUDA_SUCCESS) return 0;
  const char *name = NULL;
  if (cuGetErrorName(r, &name) != CUDA_SUCCESS || name == NULL) name = "unknown CUresult";
  fprintf(stderr, "vgpu-bench-launch: %s failed: %s (%d)\n", call, name, (int)r);
  return -1;
}

static int parse_count(const char *opt, const char *value, uint64_t *out) {
  char *end = NULL;
  unsigned long long v = strtoull(value, &end, 10);
  if (value[0] < '0' || value[0] > '9' || *end != '\0' || v == 0 || v > (1ULL << 40)) {
    fprintf(stderr, "vgpu-bench-launch: %s: invalid value '%s': expected a whole number > 0\n", opt,
            value);
    return -1;
  }
  *out = v;
  return 0;
}

static int find_case(const char *name) {
  for (size_t i = 0; i < N_CASES; i++) {
    if (strcmp(g_cases[i].name, name) == 0) return 0;
  }
  fprintf(stderr, "vgpu-bench-launch: --case: unknown case '%s'\n", name);
  return -1;
}

/* Returns 0 to run, 1 after --help, 2 on a bad command line. */
static int parse_options(int argc, char **argv, struct bench_opts *o) {
  static const struct option longs[] = {{"iters", required_argument, NULL, 'i'},
                                        {"batch", required_argument, NULL, 'b'},
                                        {"rounds", required_argument, NULL, 'r'},
                                        {"case", required_argument, NULL, 'c'},
                                        {"json", no_argument, NULL, 'j'},
                                        {"help", no_argument, NULL, 'h'},
                                        {NULL, 0, NULL, 0}};
  *o = (struct bench_opts){100000, 256, 7, NULL, 0};
  uint64_t rounds = o->rounds;
  int c;
  while ((c = getopt_long(argc, argv, "h", longs, NULL)) != -1) {
    int rc = 0;
    switch (c) {
      case 'i':
        rc = parse_count("--iters", optarg, &o->iters);
        break;
      case 'b':
        rc = parse_count("--batch", optarg, &o->batch);
        break;
      case 'r':
        rc = parse_count("--rounds", optarg, &rounds);
        break;
      case 'c':
        rc = find_case(optarg);
        o->only = optarg;
        break;
      case 'j':
        o->json = 1;
        break;
      case 'h':
        fputs(g_usage, stdout);
        return 1;
      default:
        rc = -1;
        break;
    }
    if (rc != 0) return 2;
  }
  if (optind < argc || rounds > 1000) {
    fputs(g_usage, stderr);
    return 2;
  }
  o->rounds = (unsigned)rounds;
  return 0;
}

static int setup(void) {
  CUdevice dev;
  CUcontext ctx = NULL;
  CUmodule mod = NULL;
  if (check(cuInit(0), "cuInit") || check(cuDeviceGet(&dev, 0), "cuDeviceGet")) return -1;
  if (check(cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain")) return -1;
  if (check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent")) return -1;
  if (check(cuModuleLoadData(&mod, g_nop_ptx), "cuModuleLoadData")) return -1;
  if (check(cuModuleGetFunction(&g_func, mod, "vg_nop"), "cuModuleGetFunction(vg_nop)")) return -1;
  return check(cuStreamCreate(&g_stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
}

/* One timed batch; the only place callgrind collects (see the top). */
__attribute__((noinline)) double bench_timed(void (*loop)(uint64_t), uint64_t n) {
  double t0 = now_ns();
  loop(n);
  return now_ns() - t0;
}

/* One round of `iters` launches in batches; returns the launch time in ns,
 * or a negative value when a synchronisation failed. */
static double run_round(const struct bench_case *c, uint64_t iters, uint64_t batch, int timed) {
  double total = 0.0;
  for (uint64_t done = 0; done < iters;) {
    uint64_t n = iters - done < batch ? iters - done : batch;
    if (timed)
      total += bench_timed(c->loop, n);
    else
      c->loop(n);
    done += n;
    if (check(cuStreamSynchronize(g_stream), "cuStreamSynchronize")) return -1.0;
  }
  return total;
}

/* Warm-up (first-launch set-up in the driver and the hook is not measured),
 * then the best of o->rounds timed rounds. */
static int run_case(struct bench_case *c, const struct bench_opts *o) {
  if (run_round(c, o->iters / 10 + 1, o->batch, 0) < 0.0) return -1;
  double best = 0.0;
  for (unsigned r = 0; r < o->rounds; r++) {
    double ns = run_round(c, o->iters, o->batch, 1);
    if (ns < 0.0) return -1;
    ns /= (double)o->iters;
    if (r == 0 || ns < best) best = ns;
  }
  c->best_ns = best;
  c->ops = o->iters * o->rounds;
  if (g_loop_error != CUDA_SUCCESS) return check(g_loop_error, c->what);
  return 0;
}

static void print_results(const struct bench_opts *o) {
  printf("%-10s %-30s %10s\n", "case", "call", "ns/op");
  for (size_t i = 0; i < N_CASES; i++) {
    if (o->only && strcmp(o->only, g_cases[i].name) != 0) continue;
    printf("%-10s %-30s %10.1f\n", g_cases[i].name, g_cases[i].what, g_cases[i].best_ns);
  }
  if (!o->json) return;
  printf("{\"iters\":%llu,\"batch\":%llu,\"rounds\":%u", (unsigned long long)o->iters,
         (unsigned long long)o->batch, o->rounds);
  for (size_t i = 0; i < N_CASES; i++) {
    if (o->only && strcmp(o->only, g_cases[i].name) != 0) continue;
    printf(",\"%s_ns\":%.2f,\"%s_ops\":%llu", g_cases[i].name, g_cases[i].best_ns, g_cases[i].name,
           (unsigned long long)g_cases[i].ops);
  }
  printf("}\n");
}

int main(int argc, char **argv) {
  struct bench_opts o;
  int prc = parse_options(argc, argv, &o);
  if (prc != 0) return prc == 1 ? 0 : 2;
  if (setup() != 0) return 1;
  for (size_t i = 0; i < N_CASES; i++) {
    if (o.only && strcmp(o.only, g_cases[i].name) != 0) continue;
    if (run_case(&g_cases[i], &o) != 0) return 1;
  }
  print_results(&o);
  return 0;
}
