/*
 * pool_steps.c -- runs a script of stream-ordered pool operations under
 * libvgpu (tests/integration/test_pool_cache.c) and prints one JSON line
 * {"r0":RC,"r1":RC,...}: each step's CUresult, in order (for `fill`, how
 * many allocations it made). Pointers are kept on two stacks (async, plain).
 *
 *   threshold V   release threshold of the current pool (V: bytes or max)
 *   newpool V     create a pool on device 0 with threshold V and make it
 *                 device 0's current pool (cuDeviceSetMemPool)
 *   delpool       destroy that pool
 *   aalloc SIZE   cuMemAllocAsync on the legacy stream
 *   palloc SIZE   cuMemAllocFromPoolAsync from the current pool
 *   afree         cuMemFreeAsync of the last async pointer
 *   alloc SIZE    cuMemAlloc
 *   free          cuMemFree of the last plain pointer
 *   fill SIZE     cuMemAlloc SIZE until it fails
 *   sync          cuStreamSynchronize(NULL)
 *   ctxsync       cuCtxSynchronize
 *   trim N        cuMemPoolTrimTo(current pool, N)
 *   threads N K   N threads each do K rounds of async alloc/free (2-8 MiB) and
 *                 a plain 2 MiB alloc/free; the result is how many calls
 *                 failed other than with out-of-memory
 *   ready         print {"ready":1} at once (for a test waiting on it)
 *   sleep S       sleep S seconds
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cuda_abi.h"
#include "size.h"

#define MAX_PTRS 4096

static CUdeviceptr g_async[MAX_PTRS], g_plain[MAX_PTRS];
static int g_nasync, g_nplain;

static uint64_t value(const char *s) {
  if (strcmp(s, "max") == 0) return UINT64_MAX;
  uint64_t v = 0;
  struct vg_err err;
  if (vg_parse_size(s, &v, &err) != 0) {
    fprintf(stderr, "%s\n", err.msg);
    exit(2);
  }
  return v;
}

static CUcontext g_ctx;
static int g_rounds;

static void *worker(void *arg) {
  long bad = 0;
  unsigned seed = (unsigned)(uintptr_t)arg;
  cuCtxSetCurrent(g_ctx);
  for (int i = 0; i < g_rounds; i++) {
    CUdeviceptr a = 0, b = 0;
    size_t size = (size_t)(1 + rand_r(&seed) % 4) * 2 * 1024 * 1024;
    CUresult rc = cuMemAllocAsync(&a, size, CU_STREAM_LEGACY);
    if (rc == CUDA_SUCCESS && cuMemFreeAsync(a, CU_STREAM_LEGACY) != CUDA_SUCCESS) bad++;
    if (rc != CUDA_SUCCESS && rc != CUDA_ERROR_OUT_OF_MEMORY) bad++;
    rc = cuMemAlloc_v2(&b, 2 * 1024 * 1024);
    if (rc == CUDA_SUCCESS && cuMemFree_v2(b) != CUDA_SUCCESS) bad++;
    if (rc != CUDA_SUCCESS && rc != CUDA_ERROR_OUT_OF_MEMORY) bad++;
    if (i % 16 == 0 && cuStreamSynchronize(NULL) != CUDA_SUCCESS) bad++;
  }
  return (void *)bad;
}

static long run_threads(int n, int rounds) {
  pthread_t t[64];
  long bad = 0;
  g_rounds = rounds;
  if (n > 64) n = 64;
  for (int i = 0; i < n; i++) pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)(i + 1));
  for (int i = 0; i < n; i++) {
    void *r;
    pthread_join(t[i], &r);
    bad += (long)r;
  }
  return bad;
}

static CUmemoryPool current_pool(void) {
  CUmemoryPool pool = NULL;
  cuDeviceGetMemPool(&pool, 0);
  return pool;
}

static long step(char **argv, int *i) {
  const char *op = argv[(*i)++];
  const char *arg = argv[*i];
  CUdeviceptr p = 0;
  CUresult rc;
  if (strcmp(op, "threshold") == 0) {
    uint64_t v = value(argv[(*i)++]);
    return cuMemPoolSetAttribute(current_pool(), CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &v);
  }
  if (strcmp(op, "newpool") == 0) {
    uint64_t v = value(argv[(*i)++]);
    CUmemPoolProps props;
    memset(&props, 0, sizeof(props));
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    CUmemoryPool pool;
    if ((rc = cuMemPoolCreate(&pool, &props)) != CUDA_SUCCESS) return rc;
    if ((rc = cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &v)) != CUDA_SUCCESS)
      return rc;
    return cuDeviceSetMemPool(0, pool);
  }
  if (strcmp(op, "delpool") == 0) return cuMemPoolDestroy(current_pool());
  if (strcmp(op, "aalloc") == 0 || strcmp(op, "palloc") == 0) {
    (*i)++;
    rc = op[0] == 'a' ? cuMemAllocAsync(&p, value(arg), CU_STREAM_LEGACY)
                      : cuMemAllocFromPoolAsync(&p, value(arg), current_pool(), CU_STREAM_LEGACY);
    if (rc == CUDA_SUCCESS && g_nasync < MAX_PTRS) g_async[g_nasync++] = p;
    return rc;
  }
  if (strcmp(op, "afree") == 0)
    return g_nasync > 0 ? (long)cuMemFreeAsync(g_async[--g_nasync], CU_STREAM_LEGACY) : -1L;
  if (strcmp(op, "alloc") == 0) {
    (*i)++;
    rc = cuMemAlloc_v2(&p, value(arg));
    if (rc == CUDA_SUCCESS && g_nplain < MAX_PTRS) g_plain[g_nplain++] = p;
    return rc;
  }
  if (strcmp(op, "free") == 0) return g_nplain > 0 ? (long)cuMemFree_v2(g_plain[--g_nplain]) : -1L;
  if (strcmp(op, "fill") == 0) {
    (*i)++;
    long n = 0;
    while (g_nplain < MAX_PTRS && cuMemAlloc_v2(&p, value(arg)) == CUDA_SUCCESS) {
      g_plain[g_nplain++] = p;
      n++;
    }
    return n;
  }
  if (strcmp(op, "sync") == 0) return cuStreamSynchronize(NULL);
  if (strcmp(op, "ctxsync") == 0) return cuCtxSynchronize();
  if (strcmp(op, "trim") == 0) return cuMemPoolTrimTo(current_pool(), value(argv[(*i)++]));
  if (strcmp(op, "threads") == 0) {
    int n = atoi(argv[(*i)++]);
    return run_threads(n, atoi(argv[(*i)++]));
  }
  if (strcmp(op, "ready") == 0) {
    printf("{\"ready\":1}\n");
    fflush(stdout);
    return 0;
  }
  if (strcmp(op, "sleep") == 0) {
    sleep((unsigned)atoi(argv[(*i)++]));
    return 0;
  }
  fprintf(stderr, "unknown step %s\n", op);
  exit(2);
}

int main(int argc, char **argv) {
  if (cuInit(0) != CUDA_SUCCESS || cuDevicePrimaryCtxRetain(&g_ctx, 0) != CUDA_SUCCESS ||
      cuCtxSetCurrent(g_ctx) != CUDA_SUCCESS) {
    printf("{\"error\":\"setup\"}\n");
    return 3;
  }
  char out[8192];
  size_t len = (size_t)snprintf(out, sizeof(out), "{");
  for (int i = 1, n = 0; i < argc; n++) {
    long r = step(argv, &i);
    len += (size_t)snprintf(out + len, sizeof(out) - len, "%s\"r%d\":%ld", n ? "," : "", n, r);
    if (len >= sizeof(out)) return 2;
  }
  printf("%s}\n", out);
  return 0;
}
