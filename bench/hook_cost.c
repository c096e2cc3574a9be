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
 * The timed rounds (not the warm-up) go through the non-inlined
 * bench_timed(), so `valgrind --tool=callgrind --toggle-collect=bench_timed
 * vgpu-bench-hook --case NAME` counts the instructions of exactly the timed
 * operations of one case; the JSON's <case>_ops says how many there were
 * (run-hook-bench.sh --callgrind divides by it).
 */
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cuda_abi.h"

#define BENCH_ALLOC_BYTES (1ULL << 20)

/* Set when a call inside a loop fails; checked after the loop so the loops
 * stay as thin as the calls they measure. */
static CUresult g_loop_error = CUDA_SUCCESS;
static CUdevice g_dev;

__attribute__((noinline)) void bench_loop_alloc_free(uint64_t iters) {
  for (uint64_t i = 0; i < iters; i++) {
    CUdeviceptr p = 0;
    CUresult r = cuMemAlloc_v2(&p, BENCH_ALLOC_BYTES);
    if (r == CUDA_SUCCESS) r = cuMemFree_v2(p);
    if (r != CUDA_SUCCESS) g_loop_error = r;
  }
}

__attribute__((noinline)) void bench_loop_device_total_mem(uint64_t iters) {
  for (uint64_t i = 0; i < iters; i++) {
    size_t bytes = 0;
    CUresult r = cuDeviceTotalMem_v2(&bytes, g_dev);
    if (r != CUDA_SUCCESS) g_loop_error = r;
  }
}

__attribute__((noinline)) void bench_loop_driver_version(uint64_t iters) {
  for (uint64_t i = 0; i < iters; i++) {
    int v = 0;
    CUresult r = cuDriverGetVersion(&v);
    if (r != CUDA_SUCCESS) g_loop_error = r;
  }
}

__attribute__((noinline)) void bench_loop_ctx_get_device(uint64_t iters) {
  for (uint64_t i = 0; i < iters; i++) {
    CUdevice d = 0;
    CUresult r = cuCtxGetDevice(&d);
    if (r != CUDA_SUCCESS) g_loop_error = r;
  }
}

struct bench_case {
  const char *name; /* also the suffix of the loop function's name */
  const char *what;
  void (*loop)(uint64_t iters);
  int is_alloc; /* uses --alloc-iters */
  double best_ns;
  uint64_t ops; /* operations done in timed rounds */
};

static struct bench_case g_cases[] = {
    {"alloc_free", "cuMemAlloc_v2(1 MiB)+cuMemFree_v2", bench_loop_alloc_free, 1, 0.0, 0},
    {"device_total_mem", "cuDeviceTotalMem_v2", bench_loop_device_total_mem, 0, 0.0, 0},
    {"driver_version", "cuDriverGetVersion", bench_loop_driver_version, 0, 0.0, 0},
    {"ctx_get_device", "cuCtxGetDevice", bench_loop_ctx_get_device, 0, 0.0, 0},
};
#define N_CASES (sizeof(g_cases) / sizeof(g_cases[0]))

struct bench_opts {
  uint64_t iters;       /* per round, cheap calls */
  uint64_t alloc_iters; /* per round, alloc/free pairs */
  unsigned rounds;
  const char *only; /* run just this case (callgrind mode) */
  int json;
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

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int check(CUresult r, const char *call) {
  if (r == CUDA_SUCCESS) return 0;
  const char *name = NULL;
  if (cuGetErrorName(r, &name) != CUDA_SUCCESS || name == NULL) name = "unknown CUresult";
  fprintf(stderr, "vgpu-bench-hook: %s failed: %s (%d)\n", call, name, (int)r);
  return -1;
}

static int parse_count(const char *opt, const char *value, uint64_t *out) {
  char *end = NULL;
  unsigned long long v = strtoull(value, &end, 10);
  if (value[0] < '0' || value[0] > '9' || *end != '\0' || v == 0 || v > (1ULL << 40)) {
    fprintf(stderr, "vgpu-bench-hook: %s: invalid value '%s': expected a whole number > 0\n", opt,
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
  fprintf(stderr, "vgpu-bench-hook: --case: unknown case '%s'\n", name);
  return -1;
}

/* Returns 0 to run, 1 after --help, 2 on a bad command line. */
static int parse_options(int argc, char **argv, struct bench_opts *o) {
  static const struct option longs[] = {{"iters", required_argument, NULL, 'i'},
                                        {"alloc-iters", required_argument, NULL, 'a'},
                                        {"rounds", required_argument, NULL, 'r'},
                                        {"case", required_argument, NULL, 'c'},
                                        {"json", no_argument, NULL, 'j'},
                                        {"help", no_argument, NULL, 'h'},
                                        {NULL, 0, NULL, 0}};
  *o = (struct bench_opts){200000, 20000, 7, NULL, 0};
  uint64_t rounds = o->rounds;
  int c;
  while ((c = getopt_long(argc, argv, "h", longs, NULL)) != -1) {
    int rc = 0;
    switch (c) {
      case 'i':
        rc = parse_count("--iters", optarg, &o->iters);
        break;
      case 'a':
        rc = parse_count("--alloc-iters", optarg, &o->alloc_iters);
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
  CUcontext ctx = NULL;
  if (check(cuInit(0), "cuInit") || check(cuDeviceGet(&g_dev, 0), "cuDeviceGet")) return -1;
  if (check(cuDevicePrimaryCtxRetain(&ctx, g_dev), "cuDevicePrimaryCtxRetain")) return -1;
  return check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
}

/* One timed round; the only place callgrind collects (see the top). */
__attribute__((noinline)) double bench_timed(void (*loop)(uint64_t), uint64_t iters) {
  double t0 = now_ns();
  loop(iters);
  return (now_ns() - t0) / (double)iters;
}

/* Warm-up (first-call set-up in the driver and the hook is not measured),
 * then the best of o->rounds timed rounds. */
static int run_case(struct bench_case *c, const struct bench_opts *o) {
  uint64_t iters = c->is_alloc ? o->alloc_iters : o->iters;
  c->loop(iters / 10 + 1);
  double best = 0.0;
  for (unsigned r = 0; r < o->rounds; r++) {
    double ns = bench_timed(c->loop, iters);
    if (r == 0 || ns < best) best = ns;
  }
  c->best_ns = best;
  c->ops = iters * o->rounds;
  if (g_loop_error != CUDA_SUCCESS) return check(g_loop_error, c->what);
  return 0;
}

static void print_results(const struct bench_opts *o) {
  printf("%-18s %-36s %10s\n", "case", "call", "ns/op");
  for (size_t i = 0; i < N_CASES; i++) {
    if (o->only && strcmp(o->only, g_cases[i].name) != 0) continue;
    printf("%-18s %-36s %10.1f\n", g_cases[i].name, g_cases[i].what, g_cases[i].best_ns);
  }
  if (!o->json) return;
  printf("{\"iters\":%llu,\"alloc_iters\":%llu,\"rounds\":%u", (unsigned long long)o->iters,
         (unsigned long long)o->alloc_iters, o->rounds);
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
