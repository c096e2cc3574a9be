/*
 * report.c -- vgpu-burn's output (see report.h).
 *
 * Byte counts are printed exactly and, for reading, in MiB. The JSON is
 * written by hand: a flat object of numbers, booleans and one escaped
 * string needs no library.
 */
#include "report.h"

#include <inttypes.h>
#include <stdio.h>

#include "json_text.h"

/* "1024" for whole MiB, "1.5" otherwise. */
static const char *mib(uint64_t bytes, char *buf, size_t len) {
  if (bytes % (1ULL << 20) == 0)
    snprintf(buf, len, "%" PRIu64, bytes >> 20);
  else
    snprintf(buf, len, "%.1f", (double)bytes / (double)(1ULL << 20));
  return buf;
}

void burn_report_device(const struct burn_gpu *g) {
  printf("device %d: %s, %d SMs\n", g->ordinal, g->name, g->sm_count);
  fflush(stdout);
}

void burn_report_alloc(const struct burn_alloc *a) {
  char m[32];
  printf("allocated %" PRIu64 " bytes (%s MiB) in %zu chunks; out of memory: %s\n", a->bytes,
         mib(a->bytes, m, sizeof(m)), a->count, a->oom ? "yes" : "no");
  fflush(stdout);
}

void burn_report_meminfo(const struct burn_meminfo *m) {
  char f[32], t[32], d[32];
  printf("cuMemGetInfo: free %zu bytes (%s MiB), total %zu bytes (%s MiB)\n", m->free,
         mib(m->free, f, sizeof(f)), m->total, mib(m->total, t, sizeof(t)));
  printf("cuDeviceTotalMem: %zu bytes (%s MiB)\n", m->device_total,
         mib(m->device_total, d, sizeof(d)));
  fflush(stdout);
}

void burn_report_kernel(const struct burn_kernel *k, const struct burn_kernel_result *r) {
  printf("ran %" PRIu64
         " kernels in %.3f s: %.1f kernels/s (grid %u x block %u, %u iters; "
         "%.1f GFLOP/s)\n",
         r->kernels, r->seconds, r->kernels_per_s, k->grid, k->block, k->iters, r->gflops);
  fflush(stdout);
}

void burn_report_hold(uint64_t bytes, double seconds) {
  char m[32];
  printf("holding %" PRIu64 " bytes (%s MiB) for %.3g s\n", bytes, mib(bytes, m, sizeof(m)),
         seconds);
  fflush(stdout);
}

void burn_report_json(const struct burn_summary *s) {
  const struct burn_kernel *k = s->kernel;
  printf("{\"device\":%d,\"device_name\":", s->gpu->ordinal);
  vg_json_fputs(stdout, s->gpu->name);
  printf(",\"allocated_bytes\":%" PRIu64 ",\"chunks\":%" PRIu64 ",\"oom\":%s", s->allocated_bytes,
         s->chunks, s->oom ? "true" : "false");
  printf(",\"requested_bytes\":%" PRIu64 ",\"chunk_bytes\":%" PRIu64,
         s->opts->do_alloc ? s->opts->alloc_bytes : 0, s->opts->chunk_bytes);
  printf(",\"kernels\":%" PRIu64 ",\"kernels_per_s\":%.3f,\"seconds\":%.6f,\"gflops\":%.3f",
         s->kres.kernels, s->kres.kernels_per_s, s->kres.seconds, s->kres.gflops);
  printf(",\"grid\":%u,\"block\":%u,\"iters\":%u", k ? k->grid : 0, k ? k->block : 0,
         k ? k->iters : s->opts->iters);
  printf(",\"mem_free\":%zu,\"mem_total\":%zu,\"device_total\":%zu", s->mem.free, s->mem.total,
         s->mem.device_total);
  printf(",\"warmup\":%.3f,\"start_epoch\":%.6f,\"series_ms\":%u,\"series\":[", s->opts->warmup_s,
         s->kres.start_epoch, s->opts->series_ms);
  for (size_t i = 0; i < s->kres.series_len; i++)
    printf("%s[%.3f,%.1f]", i ? "," : "", s->kres.series[i].t, s->kres.series[i].kps);
  printf("]}\n");
  fflush(stdout);
}
