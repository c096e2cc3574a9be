/*
 * timing_probe.c -- vgpu-bench-timing: the driver's own timing, the figures
 * the simulator's "h200" timing profile is made of (docs/simulator.md).
 *
 * libvgpu's compute limiter charges kernels what event pairs around them
 * measure, so what an event costs the GPU decides how right short kernels
 * are charged (docs/compute.md). This program measures, on whatever driver
 * libcuda.so.1 is (NVIDIA's, or build/sim with VGPU_SIM_TIMING=h200 to see
 * that the profile gives its own figures back):
 *
 *   event_ns        two events recorded back to back behind other work: the
 *                   GPU time of one event record
 *   small_span_ns   start event, vgpu-burn's small kernel (4 x 64), end
 *                   event, behind other work: the kernel plus one event --
 *                   what libvgpu samples
 *   small_ns        small kernels queued back to back, per kernel
 *   big_ns          the same for the big shape (SMs x 32 blocks of 256)
 *   round_trip_ns   one small kernel on an idle stream, launch to the return
 *                   of cuStreamSynchronize, host clock
 *
 * The spans are the least of --trials tries (the driver can only make them
 * longer), the per-kernel figures the least of --trials batches of --batch,
 * the round trip the median. Without a preload: it measures the driver.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ptx.h"
#include "cuda_dl.h"
#include "opt.h"

#define PROG "vgpu-bench-timing"

static const char g_usage[] =
    "usage: " PROG
    " [--trials N] [--batch N] [--json]\n"
    "  the driver's own timing: the GPU time of an event record, a small and a big\n"
    "  kernel's time queued back to back, a small kernel's sampled span, and the\n"
    "  launch-to-synchronise round trip of one small kernel (docs/simulator.md,\n"
    "  \"Timing profiles\")\n"
    "  --trials N   tries per figure (default 50)\n"
    "  --batch N    kernels per back-to-back batch (default 200)\n"
    "  --json       also print the figures as one JSON object\n"
    "  -h, --help   this text;  --version  the version\n";

struct probe {
  CUfunction f;
  CUstream s;
  CUdeviceptr buf;
  unsigned n, iters, sms;
  CUevent ev[3];
};

static int check(CUresult rc, const char *what) {
  if (rc == CUDA_SUCCESS) return 0;
  const char *name = "?";
  vg_cu.cuGetErrorName(rc, &name);
  fprintf(stderr, PROG ": %s failed: %s\n", what, name);
  return -1;
}

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int launch(struct probe *p, unsigned grid, unsigned block) {
  void *params[] = {&p->buf, &p->n, &p->iters};
  return check(vg_cu.cuLaunchKernel(p->f, grid, 1, 1, block, 1, 1, 0, p->s, params, NULL),
               "cuLaunchKernel");
}

static int small(struct probe *p) { return launch(p, 4, 64); }
static int big(struct probe *p) { return launch(p, p->sms * 32, 256); }

static int record(struct probe *p, int i) {
  return check(vg_cu.cuEventRecord(p->ev[i], p->s), "cuEventRecord");
}

static int span_ns(struct probe *p, int from, int to, double *ns) {
  float ms = 0;
  if (check(vg_cu.cuEventSynchronize(p->ev[to]), "cuEventSynchronize") != 0) return -1;
  if (check(vg_cu.cuEventElapsedTime(&ms, p->ev[from], p->ev[to]), "cuEventElapsedTime") != 0)
    return -1;
  *ns = (double)ms * 1e6;
  return 0;
}

/* Behind a big kernel (so the stream is busy): ev0, ev1, small, ev2. */
static int sampled_spans(struct probe *p, double *event, double *span) {
  if (big(p) || record(p, 0) || record(p, 1) || small(p) || record(p, 2)) return -1;
  return span_ns(p, 0, 1, event) || span_ns(p, 1, 2, span) ? -1 : 0;
}

/* ev0, batch kernels of one shape back to back (behind a big one), ev1. */
static int per_kernel(struct probe *p, int (*shape)(struct probe *), unsigned batch, double *ns) {
  if (big(p) || record(p, 0)) return -1;
  for (unsigned i = 0; i < batch; i++)
    if (shape(p) != 0) return -1;
  if (record(p, 1) || span_ns(p, 0, 1, ns)) return -1;
  *ns /= batch;
  return 0;
}

static int round_trip(struct probe *p, double *ns) {
  if (check(vg_cu.cuStreamSynchronize(p->s), "cuStreamSynchronize") != 0) return -1;
  double t0 = now_ns();
  if (small(p) || check(vg_cu.cuStreamSynchronize(p->s), "cuStreamSynchronize")) return -1;
  *ns = now_ns() - t0;
  return 0;
}

static void keep_least(double *least, double v) {
  if (*least == 0 || v < *least) *least = v;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

struct figures {
  double event, small_span, small, big, round_trip;
};

static int measure(struct probe *p, unsigned trials, unsigned batch, struct figures *f) {
  double *trips = calloc(trials, sizeof(*trips));
  if (trips == NULL) return fprintf(stderr, PROG ": out of memory\n"), -1;
  memset(f, 0, sizeof(*f));
  int rc = 0;
  for (unsigned t = 0; t < trials && rc == 0; t++) {
    double ev, span, s, b;
    rc = sampled_spans(p, &ev, &span) || per_kernel(p, small, batch, &s) ||
         per_kernel(p, big, batch / 20 + 1, &b) || round_trip(p, &trips[t]);
    keep_least(&f->event, ev);
    keep_least(&f->small_span, span);
    keep_least(&f->small, s);
    keep_least(&f->big, b);
  }
  qsort(trips, trials, sizeof(*trips), cmp_double);
  f->round_trip = trips[trials / 2];
  free(trips);
  return rc;
}

static int setup(struct probe *p) {
  CUdevice dev;
  CUcontext ctx;
  CUmodule m;
  int sms = 0;
  if (check(vg_cu.cuInit(0), "cuInit") || check(vg_cu.cuDeviceGet(&dev, 0), "cuDeviceGet") ||
      check(vg_cu.cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev),
            "cuDeviceGetAttribute") ||
      check(vg_cu.cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain") ||
      check(vg_cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent") ||
      check(vg_cu.cuModuleLoadData(&m, vg_burn_ptx), "cuModuleLoadData") ||
      check(vg_cu.cuModuleGetFunction(&p->f, m, VG_BURN_KERNEL), "cuModuleGetFunction") ||
      check(vg_cu.cuStreamCreate(&p->s, CU_STREAM_NON_BLOCKING), "cuStreamCreate"))
    return -1;
  p->sms = (unsigned)sms;
  p->n = p->sms * 32 * 256;
  p->iters = 1000; /* vgpu-burn's default */
  if (check(vg_cu.cuMemAlloc_v2(&p->buf, (size_t)p->n * sizeof(float)), "cuMemAlloc_v2") ||
      check(vg_cu.cuMemsetD32_v2(p->buf, 0, p->n), "cuMemsetD32_v2"))
    return -1;
  for (int i = 0; i < 3; i++)
    if (check(vg_cu.cuEventCreate(&p->ev[i], CU_EVENT_DEFAULT), "cuEventCreate")) return -1;
  return 0;
}

static int parse_count(const char *name, const char *text, unsigned *out) {
  char *end;
  unsigned long v = strtoul(text, &end, 10);
  if (*text < '0' || *text > '9' || *end != '\0' || v < 1 || v > 100000) {
    fprintf(stderr, PROG ": --%s: '%s' is not a whole number from 1 to 100000\n", name, text);
    return -1;
  }
  *out = (unsigned)v;
  return 0;
}

/* 0 to run, 1 after --help/--version, 2 on a bad command line. */
static int parse(int argc, char **argv, unsigned *trials, unsigned *batch, int *json) {
  const struct option longs[] = {
      {"trials", required_argument, NULL, 't'}, {"batch", required_argument, NULL, 'b'},
      {"json", no_argument, NULL, 'j'},         {"help", no_argument, NULL, 'h'},
      {"version", no_argument, NULL, 'V'},      {NULL, 0, NULL, 0}};
  int c;
  while ((c = vg_getopt_long(argc, argv, "h", longs, PROG)) != -1) {
    if (c == 'h') return fputs(g_usage, stdout), 1;
    if (c == 'V') return printf(PROG " %s\n", VG_VERSION), 1;
    if (c == 'j') *json = 1;
    if (c == 't' && parse_count("trials", optarg, trials) != 0) return 2;
    if (c == 'b' && parse_count("batch", optarg, batch) != 0) return 2;
    if (c == '?') return 2;
  }
  if (optind < argc) {
    fprintf(stderr, PROG ": unexpected argument '%s'; try '" PROG " --help'\n", argv[optind]);
    return 2;
  }
  return 0;
}

int main(int argc, char **argv) {
  unsigned trials = 50, batch = 200;
  int json = 0;
  int rc = parse(argc, argv, &trials, &batch, &json);
  if (rc != 0) return rc == 1 ? 0 : 2;
  if (vg_cuda_dl_open(PROG) != 0) return 1;
  struct probe p;
  struct figures f;
  if (setup(&p) != 0 || measure(&p, trials, batch, &f) != 0) return 1;
  printf("event record           %10.0f ns  (GPU time, two events back to back)\n", f.event);
  printf("small kernel, sampled  %10.0f ns  (start event -> small kernel -> end event)\n",
         f.small_span);
  printf("small kernel           %10.0f ns  (4 x 64 threads, back to back)\n", f.small);
  printf("big kernel             %10.0f ns  (%u x 256 threads, back to back)\n", f.big, p.sms * 32);
  printf("round trip             %10.0f ns  (launch + cuStreamSynchronize, idle stream, host)\n",
         f.round_trip);
  printf("sampled / small        %10.3f     (what charging the span would give: small / span)\n",
         f.small_span > 0 ? f.small / f.small_span : 0.0);
  if (json)
    printf(
        "{\"sms\":%u,\"event_ns\":%.0f,\"small_span_ns\":%.0f,\"small_ns\":%.0f,\"big_ns\":%.0f,"
        "\"round_trip_ns\":%.0f}\n",
        p.sms, f.event, f.small_span, f.small, f.big, f.round_trip);
  return 0;
}
