/*
 * probe_paths.c -- a second CUDA driver-API program for the integration
 * tests, for what probe.c does not reach: the per-thread-default-stream
 * launch entry points fetched each way a program can fetch them, the
 * version-1 cuGetProcAddress, and a process that keeps allocating after its
 * limit changed under it. Each subcommand prints JSON lines.
 *
 *   probe_paths launch VIA KIND SECONDS  launch an empty kernel through the
 *        _ptsz entry point of KIND (ex: cuLaunchKernelEx, coop:
 *        cuLaunchCooperativeKernel, graph: cuGraphLaunch of a 4-kernel graph)
 *        on the per-thread default stream for SECONDS; report kernels/s and
 *        whether the pointer used is libvgpu's export. VIA: direct (linked
 *        symbol), gpa2 (cuGetProcAddress_v2), gpa1 (cuGetProcAddress), both
 *        with CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
 *   probe_paths gpa1 SIZE COUNT          what cuGetProcAddress (v1) answers for
 *        several versions and flags; allocate up to COUNT x SIZE through its
 *        cuMemAlloc, free them, then the same through its per-thread
 *        cuMemAllocAsync
 *   probe_paths regrow SIZE COUNT FILE   allocate up to COUNT x SIZE, report,
 *        wait (at most 30 s) until FILE exists, allocate up to COUNT x SIZE
 *        more, report
 * PROBE_DEVICE selects the CUDA device (default 0).
 */
#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cuda_abi.h"
#include "probe_util.h"
#include "size.h"

#define PTSZ CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM

static const char *json_bool(bool b) { return b ? "true" : "false"; }

/* The per-thread entry point of base, fetched as via says. */
static void *fetch(const char *via, const char *base, void *direct) {
  void *fn = NULL;
  CUresult rc = CUDA_SUCCESS;
  CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SUCCESS;
  if (strcmp(via, "direct") == 0)
    fn = direct;
  else if (strcmp(via, "gpa2") == 0)
    rc = cuGetProcAddress_v2(base, &fn, 12000, PTSZ, &st);
  else if (strcmp(via, "gpa1") == 0)
    rc = cuGetProcAddress(base, &fn, 12000, PTSZ);
  else {
    fprintf(stderr, "probe_paths: unknown way %s\n", via);
    exit(2);
  }
  if (rc != CUDA_SUCCESS || fn == NULL) fail(via, rc);
  return fn;
}

static int cmd_launch(const char *via, const char *kind, double seconds) {
  setup();
  CUfunction f = nop_kernel();
  __typeof__(cuLaunchKernelEx_ptsz) *ex = NULL;
  __typeof__(cuLaunchCooperativeKernel_ptsz) *coop = NULL;
  __typeof__(cuGraphLaunch_ptsz) *graph = NULL;
  void *fn;
  const char *export;
  CUgraphExec exec = NULL;
  if (strcmp(kind, "ex") == 0) {
    ex = (__typeof__(ex))fetch(via, "cuLaunchKernelEx", (void *)cuLaunchKernelEx_ptsz);
    fn = (void *)ex, export = "cuLaunchKernelEx_ptsz";
  } else if (strcmp(kind, "coop") == 0) {
    coop = (__typeof__(coop))fetch(via, "cuLaunchCooperativeKernel",
                                   (void *)cuLaunchCooperativeKernel_ptsz);
    fn = (void *)coop, export = "cuLaunchCooperativeKernel_ptsz";
  } else if (strcmp(kind, "graph") == 0) {
    graph = (__typeof__(graph))fetch(via, "cuGraphLaunch", (void *)cuGraphLaunch_ptsz);
    fn = (void *)graph, export = "cuGraphLaunch_ptsz";
    exec = make_graph(f, false, NULL);
  } else {
    fprintf(stderr, "probe_paths: unknown kind %s\n", kind);
    return 2;
  }
  CUlaunchConfig cfg = {.gridDimX = 432,
                        .gridDimY = 1,
                        .gridDimZ = 1,
                        .blockDimX = 256,
                        .blockDimY = 1,
                        .blockDimZ = 1,
                        .hStream = NULL};
  double start = now_s();
  long total = 0;
  for (int i = 1; now_s() - start < seconds; i++) {
    CUresult rc;
    if (ex != NULL)
      rc = ex(&cfg, f, NULL, NULL), total += 1;
    else if (coop != NULL)
      rc = coop(f, 108, 1, 1, 256, 1, 1, 0, NULL, NULL), total += 1;
    else
      rc = graph(exec, NULL), total += GRAPH_NODES;
    if (rc != CUDA_SUCCESS) fail(kind, rc);
    if (i % 16 == 0) cuCtxSynchronize();
  }
  cuCtxSynchronize();
  printf("{\"via\":\"%s\",\"kind\":\"%s\",\"is_hook\":%s,\"kernels\":%ld,\"per_s\":%.1f}\n", via,
         kind, json_bool(fn == dlsym(RTLD_DEFAULT, export)), total, total / (now_s() - start));
  return 0;
}

/* The version-1 cuGetProcAddress: its answers, then allocations through it. */
static int cmd_gpa1(size_t size, int count) {
  enum { MAX = 1000 };
  static CUdeviceptr ptrs[MAX];
  void *alloc = NULL, *async_ptsz = NULL, *async_legacy = NULL, *gpa_11030 = NULL,
       *gpa_12000 = NULL, *old = NULL;
  setup();
  CUresult rc = cuGetProcAddress("cuMemAlloc", &alloc, 12000, 0);
  if (rc != CUDA_SUCCESS) fail("cuGetProcAddress", rc);
  cuGetProcAddress("cuMemAllocAsync", &async_ptsz, 12000, PTSZ);
  cuGetProcAddress("cuMemAllocAsync", &async_legacy, 12000, 0);
  cuGetProcAddress("cuGetProcAddress", &gpa_11030, 11030, 0);
  cuGetProcAddress("cuGetProcAddress", &gpa_12000, 12000, 0);
  CUresult rc_old = cuGetProcAddress("cuCtxDestroy", &old, 3020, 0);
  if (count > MAX) count = MAX;
  int n = 0;
  CUresult last = CUDA_SUCCESS;
  while (n < count && (last = ((__typeof__(cuMemAlloc_v2) *)alloc)(&ptrs[n], size)) == 0) n++;
  for (int i = 0; i < n; i++) cuMemFree_v2(ptrs[i]);
  int m = 0;
  CUresult last_async = CUDA_SUCCESS;
  while (m < count &&
         (last_async = ((__typeof__(cuMemAllocAsync_ptsz) *)async_ptsz)(&ptrs[m], size, NULL)) == 0)
    m++;
  printf(
      "{\"is_hook\":%s,\"ptsz_is_hook\":%s,\"legacy_is_hook\":%s,\"gpa_11030_is_hook\":%s,"
      "\"gpa_12000_is_hook_v2\":%s,\"old_rc\":%d,\"allocated\":%d,\"last_rc\":%d,"
      "\"allocated_async\":%d,\"last_async_rc\":%d}\n",
      json_bool(alloc == dlsym(RTLD_DEFAULT, "cuMemAlloc_v2")),
      json_bool(async_ptsz == dlsym(RTLD_DEFAULT, "cuMemAllocAsync_ptsz")),
      json_bool(async_legacy == dlsym(RTLD_DEFAULT, "cuMemAllocAsync")),
      json_bool(gpa_11030 == dlsym(RTLD_DEFAULT, "cuGetProcAddress")),
      json_bool(gpa_12000 == dlsym(RTLD_DEFAULT, "cuGetProcAddress_v2")), (int)rc_old, n, (int)last,
      m, (int)last_async);
  return 0;
}

/* Allocates size until out of memory or count; returns how many. */
static int fill(size_t size, int count, CUresult *last) {
  CUdeviceptr p;
  int n = 0;
  *last = CUDA_SUCCESS;
  while (n < count && (*last = cuMemAlloc_v2(&p, size)) == CUDA_SUCCESS) n++;
  return n;
}

static int cmd_regrow(size_t size, int count, const char *file) {
  setup();
  CUresult last;
  size_t free_b = 0, total_b = 0;
  int first = fill(size, count, &last);
  cuMemGetInfo_v2(&free_b, &total_b);
  printf("{\"first\":%d,\"first_rc\":%d,\"first_total\":%zu}\n", first, (int)last, total_b);
  fflush(stdout);
  int waited_ms = 0;
  while (access(file, F_OK) != 0) {
    if (waited_ms >= 30000) fail("no go-ahead file", 0);
    usleep(20000);
    waited_ms += 20;
  }
  int second = fill(size, count, &last);
  cuMemGetInfo_v2(&free_b, &total_b);
  printf("{\"second\":%d,\"second_rc\":%d,\"second_total\":%zu}\n", second, (int)last, total_b);
  return 0;
}

int main(int argc, char **argv) {
  if (argc >= 5 && strcmp(argv[1], "launch") == 0)
    return cmd_launch(argv[2], argv[3], atof(argv[4]));
  if (argc >= 4 && strcmp(argv[1], "gpa1") == 0) return cmd_gpa1(arg_size(argv[2]), atoi(argv[3]));
  if (argc >= 5 && strcmp(argv[1], "regrow") == 0)
    return cmd_regrow(arg_size(argv[2]), atoi(argv[3]), argv[4]);
  fprintf(stderr, "usage: probe_paths launch|gpa1|regrow ...\n");
  return 2;
}
