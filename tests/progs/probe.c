/*
 * probe.c -- a small CUDA driver-API program the integration tests run under
 * libvgpu. Each subcommand does one thing and prints one JSON line, so a test
 * can assert on numbers rather than on text.
 *
 *   probe alloc KIND SIZE COUNT [HOLD]  allocate up to COUNT objects, report, (hold
 *                                 HOLD seconds,) free, report
 *   probe hold SIZE SECONDS       allocate SIZE, print "held", sleep
 *   probe meminfo                 CUDA and NVML views of memory
 *   probe procs                   NVML's compute processes (v1, v2, v3) and its
 *                                 size protocol
 *   probe dl SIZE COUNT           the same as alloc mem, through dlopen + dlsym
 *   probe gpa SIZE COUNT          through cuGetProcAddress, with variant checks
 *   probe freebad                 cuMemFree of a pointer nobody allocated
 *   probe teardown HOW SIZE N     allocate N, tear the context down (HOW: reset,
 *                                 release, destroy) without freeing, then
 *                                 allocate SIZE until out of memory
 *   probe threads T SIZE          T threads allocate SIZE until out of memory
 *   probe launch KIND SECONDS [MS] launch an empty kernel for SECONDS and report
 *                                 kernels/s (every MS ms too, if given); KIND:
 *                                 kernel ptsz ex coop graph capture
 * PROBE_DEVICE selects the CUDA device (default 0), PROBE_NVML_INDEX the
 * NVML device meminfo reads (default 0).
 * KIND: mem pitch managed async xasync pool vmm vmmmap array array3d mipmap
 * (vmmmap: create, map, then release the handle at once -- the VMM idiom;
 * xasync: cuMemAllocAsync on a stream of device PROBE_STREAM_DEVICE while
 * PROBE_DEVICE's context is current)
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cuda_abi.h"
#include "nvml_abi.h"
#include "probe_util.h"
#include "size.h"

#define MAX_OBJECTS 4096

/* Allocates size until out of memory (at most 1000); returns how many. */
static int fill(size_t size, CUresult *last) {
  CUdeviceptr p;
  int n = 0;
  while (n < 1000 && (*last = cuMemAlloc_v2(&p, size)) == CUDA_SUCCESS) n++;
  return n;
}

struct object {
  unsigned long long value;
};

static size_t g_vmm_size; /* vmmmap: every mapping has this size */

/* xasync: a stream of device PROBE_STREAM_DEVICE's primary context, while
 * PROBE_DEVICE's stays current. */
static CUstream g_foreign;

static CUstream foreign_stream(void) {
  if (g_foreign != NULL) return g_foreign;
  CUcontext ctx, popped;
  CUresult rc = cuDevicePrimaryCtxRetain(&ctx, env_int("PROBE_STREAM_DEVICE"));
  if (rc != CUDA_SUCCESS) fail("retain stream device", rc);
  if ((rc = cuCtxPushCurrent_v2(ctx)) != CUDA_SUCCESS) fail("push", rc);
  if ((rc = cuStreamCreate(&g_foreign, 0)) != CUDA_SUCCESS) fail("stream", rc);
  if ((rc = cuCtxPopCurrent_v2(&popped)) != CUDA_SUCCESS) fail("pop", rc);
  return g_foreign;
}

static CUresult alloc_one(const char *kind, size_t size, struct object *o) {
  CUdeviceptr p = 0;
  CUresult rc;
  if (strcmp(kind, "mem") == 0)
    rc = cuMemAlloc_v2(&p, size);
  else if (strcmp(kind, "pitch") == 0) {
    size_t pitch;
    rc = cuMemAllocPitch_v2(&p, &pitch, size / 64, 64, 4);
  } else if (strcmp(kind, "managed") == 0)
    rc = cuMemAllocManaged(&p, size, CU_MEM_ATTACH_GLOBAL);
  else if (strcmp(kind, "async") == 0)
    rc = cuMemAllocAsync(&p, size, NULL);
  else if (strcmp(kind, "xasync") == 0)
    rc = cuMemAllocAsync(&p, size, foreign_stream());
  else if (strcmp(kind, "pool") == 0) {
    CUmemoryPool pool;
    rc = cuDeviceGetDefaultMemPool(&pool, 0);
    if (rc == CUDA_SUCCESS) rc = cuMemAllocFromPoolAsync(&p, size, pool, NULL);
  } else if (strcmp(kind, "vmm") == 0) {
    CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0}};
    CUmemGenericAllocationHandle h = 0;
    rc = cuMemCreate(&h, size, &prop, 0);
    p = h;
  } else if (strcmp(kind, "vmmmap") == 0) {
    CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0}};
    CUmemGenericAllocationHandle h = 0;
    rc = cuMemCreate(&h, size, &prop, 0);
    if (rc == CUDA_SUCCESS && (rc = cuMemAddressReserve(&p, size, 0, 0, 0)) == CUDA_SUCCESS &&
        (rc = cuMemMap(p, size, 0, h, 0)) == CUDA_SUCCESS)
      rc = cuMemRelease(h); /* still mapped: the memory stays */
    g_vmm_size = size;
  } else if (strcmp(kind, "array") == 0) {
    CUDA_ARRAY_DESCRIPTOR d = {
        .Width = size / 4 / 1024, .Height = 1024, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 1};
    CUarray a = NULL;
    rc = cuArrayCreate_v2(&a, &d);
    p = (CUdeviceptr)(uintptr_t)a;
  } else if (strcmp(kind, "array3d") == 0) {
    CUDA_ARRAY3D_DESCRIPTOR d = {.Width = 256,
                                 .Height = 256,
                                 .Depth = size / 4 / 65536,
                                 .Format = CU_AD_FORMAT_UNSIGNED_INT8,
                                 .NumChannels = 4};
    CUarray a = NULL;
    rc = cuArray3DCreate_v2(&a, &d);
    p = (CUdeviceptr)(uintptr_t)a;
  } else if (strcmp(kind, "mipmap") == 0) {
    CUDA_ARRAY3D_DESCRIPTOR d = {
        .Width = 1024, .Height = size / 4 / 1024, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 1};
    CUmipmappedArray m = NULL;
    rc = cuMipmappedArrayCreate(&m, &d, 1);
    p = (CUdeviceptr)(uintptr_t)m;
  } else {
    fprintf(stderr, "probe: unknown kind %s\n", kind);
    exit(2);
  }
  o->value = p;
  return rc;
}

static CUresult free_one(const char *kind, struct object *o) {
  if (strcmp(kind, "vmmmap") == 0) {
    CUresult rc = cuMemUnmap(o->value, g_vmm_size);
    return rc != CUDA_SUCCESS ? rc : cuMemAddressFree(o->value, g_vmm_size);
  }
  if (strcmp(kind, "async") == 0 || strcmp(kind, "pool") == 0)
    return cuMemFreeAsync(o->value, NULL);
  if (strcmp(kind, "xasync") == 0) return cuMemFreeAsync(o->value, g_foreign);
  if (strcmp(kind, "vmm") == 0) return cuMemRelease(o->value);
  if (strncmp(kind, "array", 5) == 0) return cuArrayDestroy((CUarray)(uintptr_t)o->value);
  if (strcmp(kind, "mipmap") == 0)
    return cuMipmappedArrayDestroy((CUmipmappedArray)(uintptr_t)o->value);
  return cuMemFree_v2(o->value);
}

static int cmd_alloc(const char *kind, size_t size, int count, int hold) {
  static struct object objs[MAX_OBJECTS];
  setup();
  int n = 0;
  CUresult rc = CUDA_SUCCESS;
  while (n < count && n < MAX_OBJECTS && (rc = alloc_one(kind, size, &objs[n])) == CUDA_SUCCESS)
    n++;
  size_t free_b = 0, total_b = 0, free_after = 0;
  cuMemGetInfo_v2(&free_b, &total_b);
  if (hold > 0) {
    printf("{\"holding\":%d}\n", n);
    fflush(stdout);
    sleep((unsigned)hold);
  }
  CUresult frc = CUDA_SUCCESS;
  for (int i = 0; i < n; i++) {
    CUresult r = free_one(kind, &objs[i]);
    if (r != CUDA_SUCCESS) frc = r;
  }
  cuCtxSynchronize();
  cuMemGetInfo_v2(&free_after, &total_b);
  printf(
      "{\"kind\":\"%s\",\"allocated\":%d,\"last_rc\":%d,\"free\":%zu,\"total\":%zu,"
      "\"free_rc\":%d,\"free_after\":%zu}\n",
      kind, n, (int)rc, free_b, total_b, (int)frc, free_after);
  return 0;
}

static int cmd_hold(size_t size, int seconds) {
  setup();
  CUdeviceptr p;
  CUresult rc = cuMemAlloc_v2(&p, size);
  printf("{\"held_rc\":%d}\n", (int)rc);
  fflush(stdout);
  sleep((unsigned)seconds);
  return 0;
}

static int cmd_meminfo(void) {
  setup();
  size_t free_b = 0, total_b = 0, dev_total = 0;
  CUresult rc = cuMemGetInfo_v2(&free_b, &total_b);
  cuDeviceTotalMem_v2(&dev_total, 0);
  nvmlDevice_t d;
  nvmlMemory_t m1 = {0};
  nvmlMemory_v2_t m2 = {.version = nvmlMemory_v2};
  nvmlInit_v2();
  nvmlDeviceGetHandleByIndex_v2((unsigned)env_int("PROBE_NVML_INDEX"), &d);
  nvmlReturn_t r1 = nvmlDeviceGetMemoryInfo(d, &m1);
  nvmlReturn_t r2 = nvmlDeviceGetMemoryInfo_v2(d, &m2);
  printf(
      "{\"rc\":%d,\"free\":%zu,\"total\":%zu,\"device_total\":%zu,\"nvml_rc\":%d,"
      "\"nvml_total\":%llu,\"nvml_used\":%llu,\"nvml_free\":%llu,\"nvml2_rc\":%d,"
      "\"nvml2_total\":%llu,\"nvml2_used\":%llu,\"nvml2_free\":%llu}\n",
      (int)rc, free_b, total_b, dev_total, (int)r1, m1.total, m1.used, m1.free, (int)r2, m2.total,
      m2.used, m2.free);
  return 0;
}

/* The first process of each NVML listing, and the size protocol: a NULL
 * buffer, then a count of 0. */
static int cmd_procs(void) {
  nvmlDevice_t d;
  nvmlInit_v2();
  nvmlDeviceGetHandleByIndex_v2((unsigned)env_int("PROBE_NVML_INDEX"), &d);
  nvmlProcessInfo_t v3[8] = {0}, v2[8] = {0};
  nvmlProcessInfo_v1_t v1[8] = {0};
  unsigned n3 = 8, n2 = 8, n1 = 8, nnull = 0, nsmall = 0;
  nvmlReturn_t r3 = nvmlDeviceGetComputeRunningProcesses_v3(d, &n3, v3);
  nvmlReturn_t r2 = nvmlDeviceGetComputeRunningProcesses_v2(d, &n2, v2);
  nvmlReturn_t r1 = nvmlDeviceGetComputeRunningProcesses(d, &n1, v1);
  nvmlReturn_t rnull = nvmlDeviceGetComputeRunningProcesses_v3(d, &nnull, NULL);
  nvmlReturn_t rsmall = nvmlDeviceGetComputeRunningProcesses_v3(d, &nsmall, v3 + 4);
  printf(
      "{\"rc3\":%d,\"count3\":%u,\"pid3\":%u,\"used3\":%llu,\"gi3\":%u,\"ci3\":%u,"
      "\"rc2\":%d,\"count2\":%u,\"pid2\":%u,\"used2\":%llu,\"gi2\":%u,"
      "\"rc1\":%d,\"count1\":%u,\"pid1\":%u,\"used1\":%llu,"
      "\"null_rc\":%d,\"null_count\":%u,\"small_rc\":%d,\"small_count\":%u}\n",
      (int)r3, n3, v3[0].pid, v3[0].usedGpuMemory, v3[0].gpuInstanceId, v3[0].computeInstanceId,
      (int)r2, n2, v2[0].pid, v2[0].usedGpuMemory, v2[0].gpuInstanceId, (int)r1, n1, v1[0].pid,
      v1[0].usedGpuMemory, (int)rnull, nnull, (int)rsmall, nsmall);
  return 0;
}

/* The dlopen + dlsym path, as frameworks that load the driver lazily do. */
static int cmd_dl(size_t size, int count) {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW);
  if (lib == NULL) return 4;
  __typeof__(cuMemAlloc_v2) *alloc = (__typeof__(alloc))dlsym(lib, "cuMemAlloc_v2");
  __typeof__(cuMemGetInfo_v2) *info = (__typeof__(info))dlsym(lib, "cuMemGetInfo_v2");
  setup();
  int n = 0;
  CUresult rc = CUDA_SUCCESS;
  CUdeviceptr p;
  while (n < count && (rc = alloc(&p, size)) == CUDA_SUCCESS) n++;
  size_t free_b = 0, total_b = 0;
  info(&free_b, &total_b);
  printf("{\"allocated\":%d,\"last_rc\":%d,\"total\":%zu,\"hooked\":%s}\n", n, (int)rc, total_b,
         (void *)alloc == dlsym(RTLD_DEFAULT, "cuMemAlloc_v2") ? "true" : "false");
  return 0;
}

/* The cuGetProcAddress path, as the CUDA runtime (>= 11.3) does. */
static int cmd_gpa(size_t size, int count) {
  void *fn = NULL, *ptsz = NULL, *legacy = NULL;
  CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SUCCESS, st_old = 0;
  setup();
  CUresult rc = cuGetProcAddress_v2("cuMemAlloc", &fn, 12000, 0, &st);
  if (rc != CUDA_SUCCESS) fail("cuGetProcAddress_v2", rc);
  cuGetProcAddress_v2("cuMemAllocAsync", &ptsz, 12000,
                      CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &st);
  CUresult rc_old = cuGetProcAddress_v2("cuMemAlloc", &legacy, 3010, 0, &st_old);
  __typeof__(cuMemAlloc_v2) *alloc = (__typeof__(alloc))fn;
  int n = 0;
  CUdeviceptr p;
  while (n < count && (rc = alloc(&p, size)) == CUDA_SUCCESS) n++;
  printf(
      "{\"allocated\":%d,\"last_rc\":%d,\"is_hook\":%s,\"ptsz_is_hook\":%s,"
      "\"old_rc\":%d,\"old_status\":%d}\n",
      n, (int)rc, fn == dlsym(RTLD_DEFAULT, "cuMemAlloc_v2") ? "true" : "false",
      ptsz == dlsym(RTLD_DEFAULT, "cuMemAllocAsync_ptsz") ? "true" : "false", (int)rc_old,
      (int)st_old);
  return 0;
}

static int cmd_freebad(void) {
  setup();
  CUresult rc = cuMemFree_v2((CUdeviceptr)0x1234500ULL);
  printf("{\"rc\":%d}\n", (int)rc);
  return 0;
}

/* The driver frees a context's memory with it; libvgpu must refund it. */
static int cmd_teardown(const char *how, size_t size, int count) {
  setup();
  CUcontext made = NULL, primary = NULL;
  cuCtxGetCurrent(&primary);
  if (strcmp(how, "destroy") == 0 && cuCtxCreate_v2(&made, 0, env_int("PROBE_DEVICE")) != 0)
    fail("cuCtxCreate_v2", CUDA_ERROR_UNKNOWN);
  CUdeviceptr p;
  int before = 0;
  while (before < count && cuMemAlloc_v2(&p, size) == CUDA_SUCCESS) before++;
  CUresult rc = CUDA_SUCCESS;
  if (strcmp(how, "reset") == 0)
    rc = cuDevicePrimaryCtxReset_v2(env_int("PROBE_DEVICE"));
  else if (strcmp(how, "release") == 0)
    rc = cuDevicePrimaryCtxRelease_v2(env_int("PROBE_DEVICE"));
  else
    rc = cuCtxDestroy_v2(made);
  if (rc != CUDA_SUCCESS) fail(how, rc);
  setup(); /* a fresh primary context */
  size_t free_now = 0, total = 0;
  cuMemGetInfo_v2(&free_now, &total);
  CUresult last;
  int after = fill(size, &last);
  printf("{\"before\":%d,\"free_after_teardown\":%zu,\"after\":%d,\"last_rc\":%d}\n", before,
         free_now, after, (int)last);
  return 0;
}

struct thread_arg {
  CUcontext ctx;
  size_t size;
  int got;
};

static void *thread_fill(void *p) {
  struct thread_arg *a = p;
  CUresult last;
  cuCtxSetCurrent(a->ctx);
  a->got = fill(a->size, &last);
  return NULL;
}

static int cmd_threads(int threads, size_t size) {
  enum { MAX_THREADS = 32 };
  pthread_t tid[MAX_THREADS];
  struct thread_arg args[MAX_THREADS];
  setup();
  CUcontext ctx;
  cuCtxGetCurrent(&ctx);
  if (threads > MAX_THREADS) threads = MAX_THREADS;
  for (int i = 0; i < threads; i++) {
    args[i] = (struct thread_arg){.ctx = ctx, .size = size};
    pthread_create(&tid[i], NULL, thread_fill, &args[i]);
  }
  int total = 0;
  for (int i = 0; i < threads; i++) {
    pthread_join(tid[i], NULL);
    total += args[i].got;
  }
  printf("{\"allocated\":%d}\n", total);
  return 0;
}

/* One submission of kind; returns the kernels it carries. */
static int submit(const char *kind, CUfunction f, CUgraphExec exec, CUstream stream) {
  CUresult rc;
  int kernels = 1;
  if (strcmp(kind, "kernel") == 0) {
    rc = cuLaunchKernel(f, 432, 1, 1, 256, 1, 1, 0, NULL, NULL, NULL);
  } else if (strcmp(kind, "ptsz") == 0) {
    rc = cuLaunchKernel_ptsz(f, 432, 1, 1, 256, 1, 1, 0, NULL, NULL, NULL);
  } else if (strcmp(kind, "ex") == 0) {
    CUlaunchConfig cfg = {.gridDimX = 432,
                          .gridDimY = 1,
                          .gridDimZ = 1,
                          .blockDimX = 256,
                          .blockDimY = 1,
                          .blockDimZ = 1,
                          .hStream = NULL};
    rc = cuLaunchKernelEx(&cfg, f, NULL, NULL);
  } else if (strcmp(kind, "coop") == 0) {
    rc = cuLaunchCooperativeKernel(f, 108, 1, 1, 256, 1, 1, 0, NULL, NULL);
  } else {
    rc = cuGraphLaunch(exec, stream);
    kernels = GRAPH_NODES;
  }
  if (rc != CUDA_SUCCESS) fail(kind, rc);
  return kernels;
}

static int cmd_launch(const char *kind, double seconds, int interval_ms) {
  setup();
  CUfunction f = nop_kernel();
  CUstream stream = NULL;
  bool graph = strcmp(kind, "graph") == 0, capture = strcmp(kind, "capture") == 0;
  if ((graph || capture) && cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING) != 0) fail("stream", 0);
  CUgraphExec exec = (graph || capture) ? make_graph(f, capture, stream) : NULL;
  double start = now_s(), mark = start;
  long total = 0, since_mark = 0;
  for (int i = 1; now_s() - start < seconds; i++) {
    int k = submit(kind, f, exec, stream);
    total += k;
    since_mark += k;
    if (i % 16 == 0) cuCtxSynchronize();
    if (interval_ms > 0 && now_s() - mark >= interval_ms / 1000.0) {
      printf("{\"t\":%.2f,\"interval_per_s\":%.1f}\n", now_s() - start,
             since_mark / (now_s() - mark));
      fflush(stdout);
      mark = now_s();
      since_mark = 0;
    }
  }
  cuCtxSynchronize();
  printf("{\"kind\":\"%s\",\"kernels\":%ld,\"per_s\":%.1f}\n", kind, total,
         total / (now_s() - start));
  return 0;
}

int main(int argc, char **argv) {
  if (argc >= 5 && strcmp(argv[1], "alloc") == 0)
    return cmd_alloc(argv[2], arg_size(argv[3]), atoi(argv[4]), argc > 5 ? atoi(argv[5]) : 0);
  if (argc >= 4 && strcmp(argv[1], "hold") == 0) return cmd_hold(arg_size(argv[2]), atoi(argv[3]));
  if (argc >= 2 && strcmp(argv[1], "meminfo") == 0) return cmd_meminfo();
  if (argc >= 2 && strcmp(argv[1], "procs") == 0) return cmd_procs();
  if (argc >= 4 && strcmp(argv[1], "dl") == 0) return cmd_dl(arg_size(argv[2]), atoi(argv[3]));
  if (argc >= 4 && strcmp(argv[1], "gpa") == 0) return cmd_gpa(arg_size(argv[2]), atoi(argv[3]));
  if (argc >= 2 && strcmp(argv[1], "freebad") == 0) return cmd_freebad();
  if (argc >= 5 && strcmp(argv[1], "teardown") == 0)
    return cmd_teardown(argv[2], arg_size(argv[3]), atoi(argv[4]));
  if (argc >= 4 && strcmp(argv[1], "threads") == 0)
    return cmd_threads(atoi(argv[2]), arg_size(argv[3]));
  if (argc >= 4 && strcmp(argv[1], "launch") == 0)
    return cmd_launch(argv[2], atof(argv[3]), argc > 4 ? atoi(argv[4]) : 0);
  fprintf(stderr, "usage: probe alloc|hold|meminfo|dl|gpa|freebad|teardown|threads|launch ...\n");
  return 2;
}
