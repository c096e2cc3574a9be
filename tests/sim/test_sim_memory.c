/*
 * test_sim_memory.c -- every way of taking device memory: what it costs
 * (2 MiB granule), what it returns, capacity, copies, and context memory.
 */
#include <stdlib.h>
#include <string.h>

#include "sim_test.h"

static void basics(void) {
  CUdeviceptr p, q;
  OK(cuInit(0));
  CHECK_CU(cuMemAlloc_v2(&p, 1), CUDA_ERROR_INVALID_CONTEXT);
  size_t f, t;
  CHECK_CU(cuMemGetInfo_v2(&f, &t), CUDA_ERROR_INVALID_CONTEXT);
  sim_primary(0);
  CHECK_CU(cuMemGetInfo_v2(NULL, &t), CUDA_ERROR_INVALID_VALUE);
  CHECK(sim_used() == 0);
  CHECK_CU(cuMemAlloc_v2(&p, 0), CUDA_ERROR_INVALID_VALUE);
  CHECK_CU(cuMemAlloc_v2(NULL, 16), CUDA_ERROR_INVALID_VALUE);
  OK(cuMemAlloc_v2(&p, 1));
  CHECK(p != 0 && p % (2 * MiB) == 0);
  CHECK(sim_used() == 2 * MiB);
  OK(cuMemAlloc_v2(&q, 3 * MiB));
  CHECK(sim_used() == 6 * MiB);
  CHECK_CU(cuMemFree_v2(q + 16), CUDA_ERROR_INVALID_VALUE);
  CHECK_CU(cuMemFree_v2(0x1234), CUDA_ERROR_INVALID_VALUE);
  OK(cuMemFree_v2(q));
  CHECK_CU(cuMemFree_v2(q), CUDA_ERROR_INVALID_VALUE);
  CHECK(sim_used() == 2 * MiB);
  OK(cuMemFree_v2(p));
  CHECK(sim_used() == 0);
  OK(cuMemGetInfo_v2(&f, &t));
  CHECK(f == 16 * GiB && t == 16 * GiB);
}

static void test_basics(void **state) {
  (void)state;
  sim_run(basics, NULL);
}

static void capacity(void) {
  sim_primary(0);
  CUdeviceptr p[32], extra;
  for (int i = 0; i < 32; i++) OK(cuMemAlloc_v2(&p[i], 2 * MiB - 100));
  CHECK_CU(cuMemAlloc_v2(&extra, 1), CUDA_ERROR_OUT_OF_MEMORY);
  size_t f, t;
  OK(cuMemGetInfo_v2(&f, &t));
  CHECK(f == 0 && t == 64 * MiB);
  OK(cuMemFree_v2(p[7]));
  CHECK_CU(cuMemAlloc_v2(&extra, 2 * MiB + 1), CUDA_ERROR_OUT_OF_MEMORY);
  OK(cuMemAlloc_v2(&extra, 2 * MiB));
  for (int i = 0; i < 32; i++)
    if (i != 7) OK(cuMemFree_v2(p[i]));
  OK(cuMemFree_v2(extra));
  CHECK_CU(cuMemAlloc_v2(&extra, 65 * MiB), CUDA_ERROR_OUT_OF_MEMORY);
  OK(cuMemAlloc_v2(&extra, 64 * MiB)); /* the whole device, in one piece */
  CHECK(sim_used() == 64 * MiB);
}

static void test_capacity(void **state) {
  (void)state;
  const char *env[] = {"VGPU_SIM_MEMORY=64m", NULL};
  sim_run(capacity, env);
}

static void copies(void) {
  sim_primary(0);
  const size_t n = 3 * MiB + 5;
  unsigned char *src = malloc(n), *dst = malloc(n);
  for (size_t i = 0; i < n; i++) src[i] = (unsigned char)(i * 7 + 3);
  CUdeviceptr d;
  OK(cuMemAlloc_v2(&d, n));
  OK(cuMemcpyHtoD_v2(d, src, n));
  OK(cuMemcpyDtoH_v2(dst, d, n));
  CHECK(memcmp(src, dst, n) == 0);
  OK(cuMemsetD8_v2(d + 10, 0xAB, 100));
  OK(cuMemcpyDtoH_v2(dst, d, 200));
  CHECK(dst[9] == src[9] && dst[10] == 0xAB && dst[109] == 0xAB && dst[110] == src[110]);
  OK(cuMemsetD32_v2(d + 4, 0xDEADBEEF, 3));
  uint32_t words[5];
  OK(cuMemcpyDtoH_v2(words, d, sizeof(words)));
  CHECK(words[1] == 0xDEADBEEF && words[3] == 0xDEADBEEF && words[4] != 0xDEADBEEF);
  /* ranges must stay inside the allocation */
  CHECK_CU(cuMemcpyHtoD_v2(d, src, n + 1), CUDA_ERROR_INVALID_VALUE);
  CHECK_CU(cuMemcpyDtoH_v2(dst, d + n - 4, 8), CUDA_ERROR_INVALID_VALUE);
  CHECK_CU(cuMemsetD8_v2(d + 4 * MiB, 0, 1), CUDA_ERROR_INVALID_VALUE);
  CHECK_CU(cuMemsetD32_v2(d + 2, 0, 1), CUDA_ERROR_INVALID_VALUE);
  CHECK_CU(cuMemcpyHtoD_v2((CUdeviceptr)(uintptr_t)src, src, 1), CUDA_ERROR_INVALID_VALUE);
  OK(cuMemFree_v2(d));
  CHECK_CU(cuMemcpyHtoD_v2(d, src, 1), CUDA_ERROR_INVALID_VALUE);
  /* a new allocation reads as zeroes */
  OK(cuMemAlloc_v2(&d, 64));
  OK(cuMemcpyDtoH_v2(dst, d, 64));
  for (int i = 0; i < 64; i++) CHECK(dst[i] == 0);
  free(src);
  free(dst);
}

static void test_copies(void **state) {
  (void)state;
  sim_run(copies, NULL);
}

static void pitch(void) {
  sim_primary(0);
  CUdeviceptr p;
  size_t pitch = 0;
  OK(cuMemAllocPitch_v2(&p, &pitch, 1000, 10, 4));
  CHECK(pitch == 1024);
  CHECK(sim_used() == 2 * MiB);
  OK(cuMemsetD8_v2(p, 1, 1024 * 10));
  CHECK_CU(cuMemsetD8_v2(p, 1, 1024 * 10 + 1), CUDA_ERROR_INVALID_VALUE);
  OK(cuMemFree_v2(p));
  OK(cuMemAllocPitch_v2(&p, &pitch, MiB + 1, 4, 16));
  CHECK(pitch == MiB + 512);
  CHECK(sim_used() == 6 * MiB); /* 4 MiB + 2 KiB rounds up to 6 MiB */
  CHECK_CU(cuMemAllocPitch_v2(&p, &pitch, 0, 4, 4), CUDA_ERROR_INVALID_VALUE);
  CHECK_CU(cuMemAllocPitch_v2(&p, &pitch, 64, 0, 4), CUDA_ERROR_INVALID_VALUE);
  CHECK_CU(cuMemAllocPitch_v2(&p, &pitch, 64, 4, 3), CUDA_ERROR_INVALID_VALUE);
  CHECK_CU(cuMemAllocPitch_v2(&p, NULL, 64, 4, 4), CUDA_ERROR_INVALID_VALUE);
}

static void test_pitch(void **state) {
  (void)state;
  sim_run(pitch, NULL);
}

static void managed_and_host(void) {
  sim_primary(0);
  CUdeviceptr m;
  OK(cuMemAllocManaged(&m, 5 * MiB, CU_MEM_ATTACH_GLOBAL));
  CHECK(sim_used() == 6 * MiB);
  OK(cuMemsetD8_v2(m, 7, 5 * MiB));
  CHECK(((unsigned char *)(uintptr_t)m)[5 * MiB - 1] == 7); /* host-accessible */
  CHECK_CU(cuMemAllocManaged(&m, MiB, 0), CUDA_ERROR_INVALID_VALUE);
  CHECK_CU(cuMemAllocManaged(&m, 0, CU_MEM_ATTACH_HOST), CUDA_ERROR_INVALID_VALUE);
  OK(cuMemFree_v2(m));
  void *h;
  OK(cuMemAllocHost_v2(&h, 10 * MiB));
  memset(h, 1, 10 * MiB);
  CHECK(sim_used() == 0); /* host memory costs the device nothing */
  CHECK_CU(cuMemFreeHost((char *)h + 1), CUDA_ERROR_INVALID_VALUE);
  OK(cuMemFreeHost(h));
  CHECK_CU(cuMemFreeHost(h), CUDA_ERROR_INVALID_VALUE);
  CHECK_CU(cuMemAllocHost_v2(&h, 0), CUDA_ERROR_INVALID_VALUE);
}

static void test_managed_and_host(void **state) {
  (void)state;
  sim_run(managed_and_host, NULL);
}

static void arrays(void) {
  sim_primary(0);
  CUarray a, b;
  CUDA_ARRAY_DESCRIPTOR d2 = {1024, 1024, CU_AD_FORMAT_FLOAT, 4};
  OK(cuArrayCreate_v2(&a, &d2));
  CHECK(sim_used() == 16 * MiB);
  CUDA_ARRAY_DESCRIPTOR d1 = {100, 0, CU_AD_FORMAT_UNSIGNED_INT8, 1};
  OK(cuArrayCreate_v2(&b, &d1));
  CHECK(sim_used() == 18 * MiB);
  OK(cuArrayDestroy(b));
  CHECK_CU(cuArrayDestroy(b), CUDA_ERROR_INVALID_HANDLE);
  OK(cuArrayDestroy(a));
  CHECK(sim_used() == 0);
  CUDA_ARRAY3D_DESCRIPTOR d3 = {256, 256, 33, CU_AD_FORMAT_HALF, 2, 0};
  OK(cuArray3DCreate_v2(&a, &d3)); /* 256*256*33*4 = 8.25 MiB -> 10 MiB */
  CHECK(sim_used() == 10 * MiB);
  OK(cuArrayDestroy(a));
  CUmipmappedArray mm;
  CUDA_ARRAY3D_DESCRIPTOR dm = {1024, 1024, 0, CU_AD_FORMAT_FLOAT, 4, 0};
  OK(cuMipmappedArrayCreate(&mm, &dm, 3)); /* 16 + 4 + 1 MiB -> 22 MiB */
  CHECK(sim_used() == 22 * MiB);
  CHECK_CU(cuArrayDestroy((CUarray)(void *)mm), CUDA_ERROR_INVALID_HANDLE);
  OK(cuMipmappedArrayDestroy(mm));
  CHECK(sim_used() == 0);
  CHECK_CU(cuMipmappedArrayCreate(&mm, &dm, 12), CUDA_ERROR_INVALID_VALUE); /* max 11 */
  CHECK_CU(cuMipmappedArrayCreate(&mm, &dm, 0), CUDA_ERROR_INVALID_VALUE);
  CUDA_ARRAY_DESCRIPTOR bad = {16, 16, CU_AD_FORMAT_FLOAT, 3};
  CHECK_CU(cuArrayCreate_v2(&a, &bad), CUDA_ERROR_INVALID_VALUE);
  bad.NumChannels = 1;
  bad.Format = (CUarray_format)0x77;
  CHECK_CU(cuArrayCreate_v2(&a, &bad), CUDA_ERROR_INVALID_VALUE);
  bad.Format = CU_AD_FORMAT_FLOAT;
  bad.Width = 0;
  CHECK_CU(cuArrayCreate_v2(&a, &bad), CUDA_ERROR_INVALID_VALUE);
  CUDA_ARRAY3D_DESCRIPTOR cube = {64, 64, 5, CU_AD_FORMAT_FLOAT, 1, CUDA_ARRAY3D_CUBEMAP};
  CHECK_CU(cuArray3DCreate_v2(&a, &cube), CUDA_ERROR_INVALID_VALUE);
  cube.Depth = 6;
  OK(cuArray3DCreate_v2(&a, &cube));
  CHECK(sim_used() == 2 * MiB);
  CHECK_CU(cuArrayCreate_v2(NULL, &d2), CUDA_ERROR_INVALID_VALUE);
}

static void test_arrays(void **state) {
  (void)state;
  sim_run(arrays, NULL);
}

static void vmm(void) {
  sim_primary(0);
  CUmemAllocationProp prop;
  memset(&prop, 0, sizeof(prop));
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  size_t gran = 0;
  OK(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  CHECK(gran == 2 * MiB);
  OK(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
  CHECK(gran == 2 * MiB);
  CUmemGenericAllocationHandle h;
  CHECK_CU(cuMemCreate(&h, 3 * MiB, &prop, 0), CUDA_ERROR_INVALID_VALUE);
  CHECK_CU(cuMemCreate(&h, 0, &prop, 0), CUDA_ERROR_INVALID_VALUE);
  prop.location.type = CU_MEM_LOCATION_TYPE_HOST;
  CHECK_CU(cuMemCreate(&h, 2 * MiB, &prop, 0), CUDA_ERROR_INVALID_VALUE);
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 5;
  CHECK_CU(cuMemCreate(&h, 2 * MiB, &prop, 0), CUDA_ERROR_INVALID_DEVICE);
  prop.location.id = 0;
  OK(cuMemCreate(&h, 4 * MiB, &prop, 0));
  CHECK(sim_used() == 4 * MiB);
  CUdeviceptr va;
  CHECK_CU(cuMemAddressReserve(&va, 3 * MiB, 0, 0, 0), CUDA_ERROR_INVALID_VALUE);
  OK(cuMemAddressReserve(&va, 8 * MiB, 0, 0, 0));
  CHECK(va % (2 * MiB) == 0);
  CHECK_CU(cuMemMap(va, 6 * MiB, 0, h, 0), CUDA_ERROR_INVALID_VALUE); /* beyond the handle */
  CHECK_CU(cuMemMap(va + 8 * MiB, 2 * MiB, 0, h, 0), CUDA_ERROR_INVALID_VALUE); /* outside */
  OK(cuMemMap(va + 2 * MiB, 4 * MiB, 0, h, 0));
  CHECK_CU(cuMemMap(va, 4 * MiB, 0, h, 0), CUDA_ERROR_INVALID_VALUE); /* overlaps */
  /* not accessible until cuMemSetAccess */
  CHECK_CU(cuMemsetD8_v2(va + 2 * MiB, 1, 16), CUDA_ERROR_INVALID_VALUE);
  CUmemAccessDesc access = {{CU_MEM_LOCATION_TYPE_DEVICE, 0}, 3};
  CHECK_CU(cuMemSetAccess(va, 4 * MiB, &access, 1), CUDA_ERROR_INVALID_VALUE); /* a hole */
  OK(cuMemSetAccess(va + 2 * MiB, 4 * MiB, &access, 1));
  OK(cuMemsetD8_v2(va + 2 * MiB, 0x5A, 4 * MiB));
  unsigned char byte = 0;
  OK(cuMemcpyDtoH_v2(&byte, va + 6 * MiB - 1, 1));
  CHECK(byte == 0x5A);
  CHECK_CU(cuMemsetD8_v2(va + 5 * MiB, 0, 2 * MiB), CUDA_ERROR_INVALID_VALUE);
  /* released while mapped: the memory stays until the unmap */
  OK(cuMemRelease(h));
  CHECK_CU(cuMemRelease(h), CUDA_ERROR_INVALID_VALUE);
  CHECK(sim_used() == 4 * MiB);
  CHECK_CU(cuMemUnmap(va + 2 * MiB, 2 * MiB), CUDA_ERROR_INVALID_VALUE); /* half a mapping */
  OK(cuMemUnmap(va + 2 * MiB, 4 * MiB));
  CHECK(sim_used() == 0);
  CHECK_CU(cuMemUnmap(va + 2 * MiB, 4 * MiB), CUDA_ERROR_INVALID_VALUE);
  /* freeing a reservation unmaps what is still mapped */
  OK(cuMemCreate(&h, 2 * MiB, &prop, 0));
  OK(cuMemMap(va, 2 * MiB, 0, h, 0));
  OK(cuMemRelease(h));
  CHECK_CU(cuMemAddressFree(va, 4 * MiB), CUDA_ERROR_INVALID_VALUE);
  OK(cuMemAddressFree(va, 8 * MiB));
  CHECK(sim_used() == 0);
}

static void test_vmm(void **state) {
  (void)state;
  sim_run(vmm, NULL);
}

static void pools(void) {
  sim_primary(0);
  CUmemoryPool def, def2, pool;
  OK(cuDeviceGetDefaultMemPool(&def, 0));
  OK(cuDeviceGetDefaultMemPool(&def2, 0));
  CHECK(def == def2);
  CHECK_CU(cuDeviceGetDefaultMemPool(&def, 1), CUDA_ERROR_INVALID_DEVICE);
  CUdeviceptr a, b, c;
  OK(cuMemAllocAsync(&a, 1, NULL));
  OK(cuMemAllocAsync_ptsz(&b, 3 * MiB, CU_STREAM_PER_THREAD));
  CHECK(sim_used() == 6 * MiB);
  CHECK_CU(cuMemAllocAsync(&c, 0, NULL), CUDA_ERROR_INVALID_VALUE);
  CHECK_CU(cuMemAllocAsync(&c, 1, (CUstream)(uintptr_t)0x999), CUDA_ERROR_INVALID_HANDLE);
  OK(cuMemFreeAsync(a, NULL));
  OK(cuMemFree_v2(b)); /* a pool pointer may be freed synchronously too */
  CHECK(sim_used() == 0);
  CHECK_CU(cuMemFreeAsync(a, NULL), CUDA_ERROR_INVALID_VALUE);
  CUmemPoolProps props;
  memset(&props, 0, sizeof(props));
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = 0;
  OK(cuMemPoolCreate(&pool, &props));
  CUstream s;
  OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  OK(cuMemAllocFromPoolAsync(&c, 5 * MiB, pool, s));
  OK(cuMemAllocFromPoolAsync_ptsz(&a, 1, def, s));
  CHECK(sim_used() == 8 * MiB);
  CHECK_CU(cuMemAllocFromPoolAsync(&b, 1, NULL, s), CUDA_ERROR_INVALID_VALUE);
  OK(cuMemFreeAsync_ptsz(c, s));
  OK(cuMemFreeAsync(a, s));
  CHECK(sim_used() == 0);
  CHECK_CU(cuMemPoolDestroy(def), CUDA_ERROR_INVALID_VALUE);
  OK(cuMemPoolDestroy(pool));
  CHECK_CU(cuMemPoolDestroy(pool), CUDA_ERROR_INVALID_VALUE);
  props.location.id = 3;
  CHECK_CU(cuMemPoolCreate(&pool, &props), CUDA_ERROR_INVALID_VALUE);
}

static void test_pools(void **state) {
  (void)state;
  sim_run(pools, NULL);
}

static void fault_injection(void) {
  sim_primary(0);
  CUdeviceptr p[4];
  OK(cuMemAlloc_v2(&p[0], 1));
  OK(cuMemAlloc_v2(&p[1], 1));
  CHECK_CU(cuMemAlloc_v2(&p[2], 1), CUDA_ERROR_OUT_OF_MEMORY);
  CHECK(sim_used() == 4 * MiB); /* the failed one took nothing */
  OK(cuMemAlloc_v2(&p[2], 1));  /* one failure only */
  CHECK(sim_used() == 6 * MiB);
}

static void test_fault_injection(void **state) {
  (void)state;
  const char *env[] = {"VGPU_SIM_FAIL_ALLOC_AFTER=2", NULL};
  sim_run(fault_injection, env);
}

static void context_memory(void) {
  CUcontext primary = sim_primary(0);
  CHECK(sim_used() == 300 * MiB);
  CUcontext extra, third;
  OK(cuCtxCreate_v2(&extra, 0, 0));
  CHECK(sim_used() == 600 * MiB);
  CHECK_CU(cuCtxCreate_v2(&third, 0, 0), CUDA_ERROR_OUT_OF_MEMORY); /* 900 > 800 MiB */
  CUdeviceptr p;
  OK(cuMemAlloc_v2(&p, 100 * MiB)); /* made in `extra`, freed with it */
  CHECK(sim_used() == 700 * MiB);
  OK(cuCtxDestroy_v2(extra));
  OK(cuCtxSetCurrent(primary));
  CHECK(sim_used() == 300 * MiB);
  CHECK_CU(cuMemFree_v2(p), CUDA_ERROR_INVALID_VALUE);
  OK(cuMemAlloc_v2(&p, 100 * MiB));
  OK(cuDevicePrimaryCtxReset_v2(0)); /* frees the context and its memory */
  CUcontext again;
  OK(cuDevicePrimaryCtxRetain(&again, 0));
  CHECK(again == primary);
  CHECK(sim_used() == 300 * MiB);
  OK(cuDevicePrimaryCtxRelease_v2(0));
  OK(cuCtxCreate_v2(&extra, 0, 0));
  CHECK(sim_used() == 300 * MiB); /* only the created context is left */
}

static void test_context_memory(void **state) {
  (void)state;
  const char *env[] = {"VGPU_SIM_MEMORY=800m", "VGPU_SIM_CONTEXT_MEM=300m", NULL};
  sim_run(context_memory, env);
}

static uint64_t pool_attr(CUmemoryPool pool, CUmemPool_attribute attr) {
  uint64_t v = 0;
  OK(cuMemPoolGetAttribute(pool, attr, &v));
  return v;
}

/* A pool keeps freed memory up to its release threshold: charged to the
 * device, reused by the pool, released at synchronisation and on trim. */
static void pool_cache(void) {
  sim_primary(0);
  CUmemoryPool def, cur;
  OK(cuDeviceGetDefaultMemPool(&def, 0));
  OK(cuDeviceGetMemPool(&cur, 0));
  CHECK(cur == def);
  CHECK(pool_attr(def, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD) == 0);
  int reuse = 0;
  OK(cuMemPoolGetAttribute(def, CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, &reuse));
  CHECK(reuse == 1);
  uint64_t max = UINT64_MAX, zero = 0, four = 4 * MiB;
  OK(cuMemPoolSetAttribute(def, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &max));
  CHECK_CU(cuMemPoolSetAttribute(def, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &zero),
           CUDA_ERROR_INVALID_VALUE);
  CUdeviceptr a, b;
  OK(cuMemAllocAsync(&a, 10 * MiB, NULL));
  CHECK(pool_attr(def, CU_MEMPOOL_ATTR_USED_MEM_CURRENT) == 10 * MiB);
  OK(cuMemFreeAsync(a, NULL));
  /* cached: still in use on the device, and after any synchronisation */
  CHECK(sim_used() == 10 * MiB);
  CHECK(pool_attr(def, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) == 10 * MiB);
  CHECK(pool_attr(def, CU_MEMPOOL_ATTR_USED_MEM_CURRENT) == 0);
  OK(cuCtxSynchronize());
  CHECK(sim_used() == 10 * MiB);
  /* reused: a smaller allocation takes no new memory, a larger one the rest */
  OK(cuMemAllocAsync(&a, 6 * MiB, NULL));
  CHECK(sim_used() == 10 * MiB);
  OK(cuMemAllocAsync(&b, 8 * MiB, NULL));
  CHECK(sim_used() == 14 * MiB);
  CHECK(pool_attr(def, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH) == 14 * MiB);
  OK(cuMemFreeAsync(a, NULL));
  OK(cuMemFreeAsync(b, NULL));
  CHECK(sim_used() == 14 * MiB);
  /* trimming keeps at least what is asked, never less than live memory */
  OK(cuMemPoolTrimTo(def, 5 * MiB));
  CHECK(sim_used() == 5 * MiB);
  OK(cuMemPoolTrimTo(def, 0));
  CHECK(sim_used() == 0);
  CHECK(pool_attr(def, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) == 0);
  /* a threshold: synchronisation releases down to it */
  OK(cuMemPoolSetAttribute(def, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &four));
  OK(cuMemAllocAsync(&a, 16 * MiB, NULL));
  OK(cuMemFreeAsync(a, NULL));
  CHECK(sim_used() == 16 * MiB);
  CUstream s;
  OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  OK(cuStreamSynchronize(s));
  CHECK(sim_used() == 4 * MiB);
  /* cuMemFree of a pool pointer synchronises: down to the threshold */
  OK(cuMemAllocAsync(&a, 10 * MiB, NULL));
  CHECK(sim_used() == 10 * MiB);
  OK(cuMemFree_v2(a));
  CHECK(sim_used() == 4 * MiB);
  /* threshold 0: nothing stays cached */
  OK(cuMemPoolSetAttribute(def, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &zero));
  CUevent e;
  OK(cuEventCreate(&e, 0));
  OK(cuEventRecord(e, s));
  OK(cuEventSynchronize(e));
  CHECK(sim_used() == 0);
  /* a created pool made current serves cuMemAllocAsync; destroying it with
   * an allocation outstanding keeps the allocation valid until its free */
  CUmemPoolProps props;
  memset(&props, 0, sizeof(props));
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  CUmemoryPool pool;
  OK(cuMemPoolCreate(&pool, &props));
  OK(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &max));
  OK(cuDeviceSetMemPool(0, pool));
  OK(cuDeviceGetMemPool(&cur, 0));
  CHECK(cur == pool);
  OK(cuMemAllocAsync(&a, 2 * MiB, NULL));
  OK(cuMemAllocAsync(&b, 2 * MiB, NULL));
  OK(cuMemFreeAsync(b, NULL));
  CHECK(pool_attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) == 4 * MiB);
  CHECK(pool_attr(def, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) == 0);
  OK(cuMemPoolDestroy(pool));
  CHECK(sim_used() == 2 * MiB);
  OK(cuDeviceGetMemPool(&cur, 0));
  CHECK(cur == def);
  OK(cuMemFreeAsync(a, NULL));
  CHECK(sim_used() == 0);
}

static void test_pool_cache(void **state) {
  (void)state;
  sim_run(pool_cache, NULL);
}

/* Memory of device 1 is separate from device 0's. */
static void two_devices(void) {
  sim_primary(1);
  CUdeviceptr p;
  OK(cuMemAlloc_v2(&p, 10 * MiB));
  CHECK(sim_used() == 10 * MiB);
  CUcontext c0;
  OK(cuDevicePrimaryCtxRetain(&c0, 0));
  OK(cuCtxPushCurrent_v2(c0));
  CHECK(sim_used() == 0);
  OK(cuMemFree_v2(p)); /* a pointer of device 1, freed while device 0 is current */
  OK(cuCtxPopCurrent_v2(NULL));
  CHECK(sim_used() == 0);
}

static void test_two_devices(void **state) {
  (void)state;
  const char *env[] = {"VGPU_SIM_DEVICES=2", NULL};
  sim_run(two_devices, env);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_basics),
      cmocka_unit_test(test_capacity),
      cmocka_unit_test(test_copies),
      cmocka_unit_test(test_pitch),
      cmocka_unit_test(test_managed_and_host),
      cmocka_unit_test(test_arrays),
      cmocka_unit_test(test_vmm),
      cmocka_unit_test(test_pools),
      cmocka_unit_test(test_pool_cache),
      cmocka_unit_test(test_fault_injection),
      cmocka_unit_test(test_context_memory),
      cmocka_unit_test(test_two_devices),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
