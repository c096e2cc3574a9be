/*
 * test_sim_procaddr.c -- cuGetProcAddress / cuGetProcAddress_v2: version
 * selection, per-thread-stream variants, not-found statuses, and pointers
 * identical to the library's exported symbols.
 */
#include <dlfcn.h>
#include <string.h>

#include "sim_test.h"

static void *g_lib;

static void *sym(const char *name) {
  void *p = dlsym(g_lib, name);
  if (p == NULL) fprintf(stderr, "dlsym %s failed\n", name);
  CHECK(p != NULL);
  return p;
}

static void *lookup(const char *name, int version, unsigned long long flags) {
  void *fn = (void *)1;
  CUdriverProcAddressQueryResult status = 99;
  CUresult rc = cuGetProcAddress_v2(name, &fn, version, flags, &status);
  if (rc != CUDA_SUCCESS || status != CU_GET_PROC_ADDRESS_SUCCESS) {
    fprintf(stderr, "lookup %s @%d flags %llu: rc %d status %d\n", name, version, flags, rc,
            status);
    CHECK(0);
  }
  return fn;
}

#define PTDS CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM

static void versions(void) {
  g_lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  CHECK(g_lib != NULL);
  /* works before cuInit: the runtime resolves cuInit itself this way */
  CHECK(lookup("cuInit", 12000, 0) == sym("cuInit"));
  CHECK(lookup("cuMemAlloc", 12000, 0) == sym("cuMemAlloc_v2"));
  CHECK(lookup("cuMemAlloc", 3020, 0) == sym("cuMemAlloc_v2"));
  CHECK(lookup("cuCtxCreate", 12000, 0) == sym("cuCtxCreate_v2"));
  CHECK(lookup("cuCtxCreate", 12050, 0) == sym("cuCtxCreate_v4"));
  CHECK(lookup("cuCtxCreate", 13000, 0) == sym("cuCtxCreate_v4"));
  CHECK(lookup("cuGetProcAddress", 11030, 0) == sym("cuGetProcAddress"));
  CHECK(lookup("cuGetProcAddress", 12000, 0) == sym("cuGetProcAddress_v2"));
  CHECK(lookup("cuDeviceGetUuid", 11000, 0) == sym("cuDeviceGetUuid"));
  CHECK(lookup("cuDeviceGetUuid", 11040, 0) == sym("cuDeviceGetUuid_v2"));
  CHECK(lookup("cuEventElapsedTime", 12000, 0) == sym("cuEventElapsedTime"));
  CHECK(lookup("cuEventElapsedTime", 12080, 0) == sym("cuEventElapsedTime_v2"));
  CHECK(lookup("cuDevicePrimaryCtxRelease", 11000, 0) == sym("cuDevicePrimaryCtxRelease_v2"));
  CHECK(lookup("cuStreamDestroy", 4000, 0) == sym("cuStreamDestroy_v2"));
  /* per-thread default stream */
  CHECK(lookup("cuLaunchKernel", 12000, 0) == sym("cuLaunchKernel"));
  CHECK(lookup("cuLaunchKernel", 12000, PTDS) == sym("cuLaunchKernel_ptsz"));
  CHECK(lookup("cuLaunchKernel", 12000, CU_GET_PROC_ADDRESS_LEGACY_STREAM) ==
        sym("cuLaunchKernel"));
  CHECK(lookup("cuLaunchKernelEx", 12000, PTDS) == sym("cuLaunchKernelEx_ptsz"));
  CHECK(lookup("cuLaunchCooperativeKernel", 12000, PTDS) == sym("cuLaunchCooperativeKernel_ptsz"));
  CHECK(lookup("cuMemAllocAsync", 12000, PTDS) == sym("cuMemAllocAsync_ptsz"));
  CHECK(lookup("cuMemAllocFromPoolAsync", 12000, PTDS) == sym("cuMemAllocFromPoolAsync_ptsz"));
  CHECK(lookup("cuMemFreeAsync", 12000, PTDS) == sym("cuMemFreeAsync_ptsz"));
  CHECK(lookup("cuStreamSynchronize", 12000, PTDS) == sym("cuStreamSynchronize_ptsz"));
  CHECK(lookup("cuEventRecord", 12000, PTDS) == sym("cuEventRecord_ptsz"));
  CHECK(lookup("cuMemcpyHtoD", 12000, PTDS) == sym("cuMemcpyHtoD_v2")); /* no variant */
  /* completion queries, graphs and stream capture */
  CHECK(lookup("cuEventQuery", 2000, 0) == sym("cuEventQuery"));
  CHECK(lookup("cuStreamQuery", 2000, 0) == sym("cuStreamQuery"));
  CHECK(lookup("cuStreamQuery", 12000, PTDS) == sym("cuStreamQuery_ptsz"));
  CHECK(lookup("cuGraphCreate", 10000, 0) == sym("cuGraphCreate"));
  CHECK(lookup("cuGraphAddKernelNode", 11080, 0) == sym("cuGraphAddKernelNode"));
  CHECK(lookup("cuGraphAddKernelNode", 12000, 0) == sym("cuGraphAddKernelNode_v2"));
  CHECK(lookup("cuGraphInstantiateWithFlags", 11040, 0) == sym("cuGraphInstantiateWithFlags"));
  CHECK(lookup("cuGraphLaunch", 12000, 0) == sym("cuGraphLaunch"));
  CHECK(lookup("cuGraphLaunch", 12000, PTDS) == sym("cuGraphLaunch_ptsz"));
  CHECK(lookup("cuGraphExecDestroy", 10000, 0) == sym("cuGraphExecDestroy"));
  CHECK(lookup("cuGraphDestroy", 10000, 0) == sym("cuGraphDestroy"));
  CHECK(lookup("cuStreamBeginCapture", 10010, 0) == sym("cuStreamBeginCapture_v2"));
  CHECK(lookup("cuStreamBeginCapture", 12000, PTDS) == sym("cuStreamBeginCapture_v2_ptsz"));
  CHECK(lookup("cuStreamEndCapture", 10000, 0) == sym("cuStreamEndCapture"));
  CHECK(lookup("cuStreamEndCapture", 12000, PTDS) == sym("cuStreamEndCapture_ptsz"));
  CHECK(lookup("cuStreamIsCapturing", 10000, 0) == sym("cuStreamIsCapturing"));
  CHECK(lookup("cuStreamIsCapturing", 12000, PTDS) == sym("cuStreamIsCapturing_ptsz"));
  /* the v1 entry point answers the same */
  void *fn = NULL;
  OK(cuGetProcAddress("cuMemFree", &fn, 12000, 0));
  CHECK(fn == sym("cuMemFree_v2"));
}

static void test_versions(void **state) {
  (void)state;
  sim_run(versions, NULL);
}

static void not_found(void) {
  void *fn = (void *)1;
  CUdriverProcAddressQueryResult status = 99;
  CHECK_CU(cuGetProcAddress_v2("cuNoSuchThing", &fn, 13000, 0, &status), CUDA_ERROR_NOT_FOUND);
  CHECK(status == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND && fn == NULL);
  /* versioned names are not base names */
  CHECK_CU(cuGetProcAddress_v2("cuMemAlloc_v2", &fn, 13000, 0, &status), CUDA_ERROR_NOT_FOUND);
  CHECK(status == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
  /* the legacy 32-bit cuMemAlloc is not exported */
  fn = (void *)1;
  CHECK_CU(cuGetProcAddress_v2("cuMemAlloc", &fn, 2000, 0, &status), CUDA_ERROR_NOT_FOUND);
  CHECK(status == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT && fn == NULL);
  CHECK_CU(cuGetProcAddress_v2("cuLaunchKernelEx", &fn, 11050, 0, &status), CUDA_ERROR_NOT_FOUND);
  CHECK(status == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
  CHECK_CU(cuGetProcAddress_v2("cuMemCreate", &fn, 10010, 0, NULL), CUDA_ERROR_NOT_FOUND);
  /* the first cuStreamBeginCapture (no mode argument) is not simulated */
  CHECK_CU(cuGetProcAddress_v2("cuStreamBeginCapture", &fn, 10000, 0, &status),
           CUDA_ERROR_NOT_FOUND);
  CHECK(status == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
  CHECK_CU(cuGetProcAddress_v2("cuGraphInstantiateWithFlags", &fn, 11030, 0, &status),
           CUDA_ERROR_NOT_FOUND);
  CHECK(status == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
  CHECK_CU(cuGetProcAddress("cuNoSuchThing", &fn, 13000, 0), CUDA_ERROR_NOT_FOUND);
  CHECK_CU(cuGetProcAddress_v2(NULL, &fn, 13000, 0, &status), CUDA_ERROR_INVALID_VALUE);
  CHECK_CU(cuGetProcAddress_v2("cuInit", NULL, 13000, 0, &status), CUDA_ERROR_INVALID_VALUE);
  CHECK_CU(cuGetProcAddress_v2("cuInit", &fn, 13000, 8, &status), CUDA_ERROR_INVALID_VALUE);
}

static void test_not_found(void **state) {
  (void)state;
  sim_run(not_found, NULL);
}

/* Every exported entry point is reachable through cuGetProcAddress at some
 * version, and a resolved pointer works when called. */
static const char *const g_exports[] = {"cuInit",
                                        "cuDriverGetVersion",
                                        "cuGetErrorString",
                                        "cuGetErrorName",
                                        "cuGetProcAddress",
                                        "cuGetProcAddress_v2",
                                        "cuDeviceGet",
                                        "cuDeviceGetCount",
                                        "cuDeviceGetName",
                                        "cuDeviceGetUuid",
                                        "cuDeviceGetUuid_v2",
                                        "cuDeviceTotalMem_v2",
                                        "cuDeviceGetAttribute",
                                        "cuDeviceGetPCIBusId",
                                        "cuDevicePrimaryCtxRetain",
                                        "cuDevicePrimaryCtxRelease_v2",
                                        "cuDevicePrimaryCtxReset_v2",
                                        "cuDevicePrimaryCtxGetState",
                                        "cuDevicePrimaryCtxSetFlags_v2",
                                        "cuCtxCreate_v2",
                                        "cuCtxCreate_v4",
                                        "cuCtxDestroy_v2",
                                        "cuCtxSetCurrent",
                                        "cuCtxGetCurrent",
                                        "cuCtxPushCurrent_v2",
                                        "cuCtxPopCurrent_v2",
                                        "cuCtxGetDevice",
                                        "cuCtxSynchronize",
                                        "cuMemGetInfo_v2",
                                        "cuMemAlloc_v2",
                                        "cuMemAllocPitch_v2",
                                        "cuMemAllocManaged",
                                        "cuMemFree_v2",
                                        "cuMemAllocHost_v2",
                                        "cuMemFreeHost",
                                        "cuMemcpyHtoD_v2",
                                        "cuMemcpyDtoH_v2",
                                        "cuMemsetD8_v2",
                                        "cuMemsetD32_v2",
                                        "cuMemAllocAsync",
                                        "cuMemAllocAsync_ptsz",
                                        "cuMemAllocFromPoolAsync",
                                        "cuMemAllocFromPoolAsync_ptsz",
                                        "cuMemFreeAsync",
                                        "cuMemFreeAsync_ptsz",
                                        "cuMemPoolCreate",
                                        "cuMemPoolDestroy",
                                        "cuDeviceGetDefaultMemPool",
                                        "cuMemCreate",
                                        "cuMemRelease",
                                        "cuMemAddressReserve",
                                        "cuMemAddressFree",
                                        "cuMemMap",
                                        "cuMemUnmap",
                                        "cuMemSetAccess",
                                        "cuMemGetAllocationGranularity",
                                        "cuArrayCreate_v2",
                                        "cuArray3DCreate_v2",
                                        "cuArrayDestroy",
                                        "cuMipmappedArrayCreate",
                                        "cuMipmappedArrayDestroy",
                                        "cuStreamCreate",
                                        "cuStreamDestroy_v2",
                                        "cuStreamSynchronize",
                                        "cuStreamSynchronize_ptsz",
                                        "cuEventCreate",
                                        "cuEventRecord",
                                        "cuEventRecord_ptsz",
                                        "cuEventSynchronize",
                                        "cuEventElapsedTime",
                                        "cuEventElapsedTime_v2",
                                        "cuEventDestroy_v2",
                                        "cuModuleLoadData",
                                        "cuModuleGetFunction",
                                        "cuModuleUnload",
                                        "cuLaunchKernel",
                                        "cuLaunchKernel_ptsz",
                                        "cuLaunchKernelEx",
                                        "cuLaunchKernelEx_ptsz",
                                        "cuLaunchCooperativeKernel",
                                        "cuLaunchCooperativeKernel_ptsz",
                                        "cuEventQuery",
                                        "cuStreamQuery",
                                        "cuStreamQuery_ptsz",
                                        "cuGraphCreate",
                                        "cuGraphAddKernelNode",
                                        "cuGraphAddKernelNode_v2",
                                        "cuGraphInstantiateWithFlags",
                                        "cuGraphLaunch",
                                        "cuGraphLaunch_ptsz",
                                        "cuGraphExecDestroy",
                                        "cuGraphDestroy",
                                        "cuStreamBeginCapture_v2",
                                        "cuStreamBeginCapture_v2_ptsz",
                                        "cuStreamEndCapture",
                                        "cuStreamEndCapture_ptsz",
                                        "cuStreamIsCapturing",
                                        "cuStreamIsCapturing_ptsz",
                                        NULL};

static const int g_versions[] = {2000,  3020,  4000,  6000,  9000,  10000, 10010, 10020, 11000,
                                 11020, 11030, 11040, 11060, 12000, 12050, 12080, 13000};

static void base_name(const char *name, char *base, size_t len) {
  snprintf(base, len, "%s", name);
  static const char *const suffixes[] = {"_ptsz", "_v2", "_v4"};
  for (int again = 0; again < 2; again++)
    for (size_t i = 0; i < 3; i++) {
      size_t n = strlen(base), s = strlen(suffixes[i]);
      if (n > s && strcmp(base + n - s, suffixes[i]) == 0) base[n - s] = '\0';
    }
}

static bool reachable(const char *name) {
  char base[64];
  base_name(name, base, sizeof(base));
  void *want = sym(name);
  for (size_t v = 0; v < sizeof(g_versions) / sizeof(g_versions[0]); v++)
    for (unsigned long long flags = 0; flags <= PTDS; flags += PTDS) {
      void *fn = NULL;
      if (cuGetProcAddress_v2(base, &fn, g_versions[v], flags, NULL) == CUDA_SUCCESS && fn == want)
        return true;
    }
  return false;
}

static void table_complete(void) {
  g_lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  CHECK(g_lib != NULL);
  for (int i = 0; g_exports[i] != NULL; i++) {
    if (!reachable(g_exports[i])) fprintf(stderr, "%s is not reachable\n", g_exports[i]);
    CHECK(reachable(g_exports[i]));
  }
  CUresult (*init)(unsigned) = NULL;
  CUresult (*alloc)(CUdeviceptr *, size_t) = NULL;
  OK(cuGetProcAddress("cuInit", (void **)&init, 13000, 0));
  OK(cuGetProcAddress("cuMemAlloc", (void **)&alloc, 13000, 0));
  OK(init(0));
  CUcontext ctx;
  OK(cuDevicePrimaryCtxRetain(&ctx, 0));
  OK(cuCtxSetCurrent(ctx));
  CUdeviceptr p;
  OK(alloc(&p, 100));
  CHECK(sim_used() == 2 * MiB);
}

static void test_table_complete(void **state) {
  (void)state;
  sim_run(table_complete, NULL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_versions),
      cmocka_unit_test(test_not_found),
      cmocka_unit_test(test_table_complete),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
