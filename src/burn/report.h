/*
 * report.h -- what vgpu-burn prints.
 *
 * Human-readable lines go to stdout as each phase finishes (flushed, so a
 * watcher sees the allocation result while --hold is still running); with
 * --json one object with every number follows on the last line, for scripts
 * and tests to parse without scraping the text.
 */
#ifndef VG_BURN_REPORT_H
#define VG_BURN_REPORT_H

#include "alloc.h"
#include "gpu.h"
#include "kernel.h"
#include "options.h"

/* Everything the run measured, gathered for the JSON line. */
struct burn_summary {
  const struct burn_opts *opts;
  const struct burn_gpu *gpu;
  uint64_t allocated_bytes;
  uint64_t chunks;
  int oom;
  const struct burn_kernel *kernel; /* NULL without --seconds */
  struct burn_kernel_result kres;
  struct burn_meminfo mem;
};

void burn_report_device(const struct burn_gpu *g);
void burn_report_alloc(const struct burn_alloc *a);
void burn_report_meminfo(const struct burn_meminfo *m);
void burn_report_kernel(const struct burn_kernel *k, const struct burn_kernel_result *r);
void burn_report_hold(uint64_t bytes, double seconds);
void burn_report_json(const struct burn_summary *s);

#endif
