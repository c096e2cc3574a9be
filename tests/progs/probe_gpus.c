/*
 * probe_gpus.c -- what a process may do with each GPU it sees, for the
 * integration tests of GPUs outside a container's assignment.
 *
 * Prints one JSON line. For every CUDA ordinal d: the result of retaining
 * its primary context ("retain<d>"), cuCtxCreate_v2 ("ctx<d>"), the default
 * and current memory pools ("defpool<d>", "mempool<d>"), cuMemPoolCreate
 * ("poolcreate<d>") and a 2 MiB cuMemCreate ("vmm<d>", made while the
 * first ordinal that can be retained is current). Then NVML's view: the
 * device count ("nvml_count"), per index i the last hex digit of its UUID
 * (the simulated GPU's physical index, "nvml_phys<i>"), what
 * nvmlDeviceGetIndex says of it ("nvml_index<i>") and its memory total
 * ("nvml_total<i>"); per physical GPU p (0..3) whether a lookup by UUID
 * finds it ("nvml_byuuid<p>": the return code). Everything made is freed.
 */
#include <stdio.h>
#include <string.h>

#include "cuda_abi.h"
#include "nvml_abi.h"

static void cuda_view(void) {
  int n = 0;
  CUresult rc = cuInit(0);
  if (rc == CUDA_SUCCESS) rc = cuDeviceGetCount(&n);
  printf("{\"cuda_rc\":%d,\"cuda_count\":%d", (int)rc, n);
  CUcontext current = NULL;
  for (int d = 0; d < n && current == NULL; d++)
    if (cuDevicePrimaryCtxRetain(&current, d) == CUDA_SUCCESS) cuCtxSetCurrent(current);
  for (int d = 0; d < n; d++) {
    CUcontext ctx;
    CUmemoryPool pool;
    rc = cuDevicePrimaryCtxRetain(&ctx, d);
    printf(",\"retain%d\":%d", d, (int)rc);
    if (rc == CUDA_SUCCESS) cuDevicePrimaryCtxRelease_v2(d);
    rc = cuCtxCreate_v2(&ctx, 0, d);
    printf(",\"ctx%d\":%d", d, (int)rc);
    if (rc == CUDA_SUCCESS) {
      cuCtxDestroy_v2(ctx);
      cuCtxSetCurrent(current);
    }
    printf(",\"defpool%d\":%d", d, (int)cuDeviceGetDefaultMemPool(&pool, d));
    printf(",\"mempool%d\":%d", d, (int)cuDeviceGetMemPool(&pool, d));
    CUmemPoolProps props = {.allocType = CU_MEM_ALLOCATION_TYPE_PINNED,
                            .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = d}};
    rc = cuMemPoolCreate(&pool, &props);
    printf(",\"poolcreate%d\":%d", d, (int)rc);
    if (rc == CUDA_SUCCESS) cuMemPoolDestroy(pool);
    CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = d}};
    CUmemGenericAllocationHandle h;
    rc = cuMemCreate(&h, 2u << 20, &prop, 0);
    printf(",\"vmm%d\":%d", d, (int)rc);
    if (rc == CUDA_SUCCESS) cuMemRelease(h);
  }
}

static void nvml_view(void) {
  unsigned n = 0;
  nvmlReturn_t rc = nvmlInit_v2();
  if (rc == NVML_SUCCESS) rc = nvmlDeviceGetCount_v2(&n);
  printf(",\"nvml_rc\":%d,\"nvml_count\":%u", (int)rc, n);
  for (unsigned i = 0; i < n; i++) {
    nvmlDevice_t d;
    char uuid[96] = "";
    unsigned index = 99;
    nvmlMemory_t m = {0};
    nvmlDeviceGetHandleByIndex_v2(i, &d);
    nvmlDeviceGetUUID(d, uuid, sizeof(uuid));
    nvmlDeviceGetIndex(d, &index);
    nvmlDeviceGetMemoryInfo(d, &m);
    printf(",\"nvml_phys%u\":%d,\"nvml_index%u\":%u,\"nvml_total%u\":%llu", i,
           uuid[0] ? uuid[strlen(uuid) - 1] - '0' : -1, i, index, i, m.total);
  }
  for (int p = 0; p < 4; p++) {
    char uuid[96];
    nvmlDevice_t d;
    snprintf(uuid, sizeof(uuid), "GPU-5a1a0000-0000-4000-8000-%012x", p);
    printf(",\"nvml_byuuid%d\":%d", p, (int)nvmlDeviceGetHandleByUUID(uuid, &d));
  }
}

int main(void) {
  cuda_view();
  nvml_view();
  printf("}\n");
  return 0;
}
