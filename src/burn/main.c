/*
 * main.c -- vgpu-burn: a driver-API GPU workload for limits and demos.
 *
 * The phases run in a fixed order so each observation means one thing:
 *   1. open the device (primary context) and, with --seconds, prepare the
 *      kernel -- before --alloc, so the kernel's own buffer is never what
 *      hits the limit;
 *   2. --alloc: take memory until the total or out-of-memory;
 *   3. read cuMemGetInfo/cuDeviceTotalMem while the allocations are held;
 *   4. --seconds: run kernels;  5. --hold: keep everything for a while;
 *   6. free, print the JSON line, release the context.
 */
#include <stdio.h>

#include "alloc.h"
#include "cuda_dl.h"
#include "gpu.h"
#include "kernel.h"
#include "options.h"
#include "report.h"

struct burn_run {
  struct burn_opts opts;
  struct burn_gpu gpu;
  struct burn_alloc alloc;
  struct burn_kernel kernel;
  struct burn_summary sum;
};

/* Phases 2-5; returns 0 or -1 (message printed). */
static int run_phases(struct burn_run *r) {
  const struct burn_opts *o = &r->opts;
  if (o->do_alloc) {
    if (burn_alloc_run(o, &r->alloc) != 0) return -1;
    burn_report_alloc(&r->alloc);
  }
  r->sum.allocated_bytes = r->alloc.bytes;
  r->sum.chunks = r->alloc.count;
  r->sum.oom = r->alloc.oom;
  if (burn_meminfo_query(&r->gpu, &r->sum.mem) != 0) return -1;
  int only_info = !o->do_alloc && o->seconds == 0.0 && o->hold_s == 0.0;
  if (o->meminfo || only_info) burn_report_meminfo(&r->sum.mem);
  if (o->seconds > 0.0) {
    if (burn_kernel_run(&r->kernel, o, &r->sum.kres) != 0) return -1;
    burn_report_kernel(&r->kernel, &r->sum.kres);
  }
  if (o->hold_s > 0.0) {
    burn_report_hold(r->alloc.bytes, o->hold_s);
    burn_sleep(o->hold_s);
  }
  return 0;
}

static int run(struct burn_run *r) {
  if (burn_gpu_open(r->opts.device, &r->gpu) != 0) return 1;
  burn_report_device(&r->gpu);
  r->sum.opts = &r->opts;
  r->sum.gpu = &r->gpu;
  int failed = 0;
  if (r->opts.seconds > 0.0) {
    failed = burn_kernel_prepare(&r->opts, &r->gpu, &r->kernel) != 0;
    r->sum.kernel = &r->kernel;
  }
  for (unsigned round = 0; !failed && round < r->opts.rounds && !burn_stop; round++) {
    if (round > 0) burn_sleep(r->opts.interval_s);
    failed = run_phases(r) != 0;
    if (burn_alloc_free(&r->alloc) != 0) failed = 1;
    if (!failed && r->opts.json) burn_report_json(&r->sum);
    burn_kernel_result_free(&r->sum.kres);
    fflush(stdout); /* a round's line is seen while the next one runs */
  }
  if (failed) burn_alloc_free(&r->alloc);
  burn_kernel_release(&r->kernel);
  burn_gpu_close(&r->gpu);
  return failed ? 1 : 0;
}

/* --driver: which libcuda.so.1 the loader picked, so that tests/gpu can
 * insist on NVIDIA's driver rather than the simulator. */
static int print_driver(void) {
  const char *path = vg_cuda_dl_path();
  if (path == NULL) {
    fputs("vgpu-burn: cannot tell where libcuda.so.1 was loaded from\n", stderr);
    return 1;
  }
  printf("%s\n", path);
  return 0;
}

int main(int argc, char **argv) {
  static struct burn_run r;
  switch (burn_parse_options(argc, argv, &r.opts)) {
    case BURN_PARSE_HELP:
      return 0;
    case BURN_PARSE_ERROR:
      return 2;
    case BURN_PARSE_OK:
      break;
  }
  /* Only now: --help and a bad command line need no driver (cuda_dl.h). */
  if (vg_cuda_dl_open("vgpu-burn") != 0) return 1;
  if (r.opts.driver_only) return print_driver();
  burn_install_signals();
  return run(&r);
}
