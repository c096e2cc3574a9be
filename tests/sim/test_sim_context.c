/*
 * test_sim_context.c -- primary and created contexts, the per-thread context
 * stack, streams, events and modules.
 */
#include <pthread.h>
#include <string.h>

#include "sim_test.h"

static void primary(void) {
  OK(cuInit(0));
  CUcontext a, b;
  unsigned flags = 99;
  int active = 99;
  OK(cuDevicePrimaryCtxGetState(0, &flags, &active));
  CHECK(flags == 0 && active == 0);
  OK(cuDevicePrimaryCtxRetain(&a, 0));
  OK(cuDevicePrimaryCtxRetain(&b, 0));
  CHECK(a == b && a != NULL);
  OK(cuDevicePrimaryCtxGetState(0, &flags, &active));
  CHECK(active == 1);
  OK(cuDevicePrimaryCtxSetFlags_v2(0, 4));
  CHECK_CU(cuDevicePrimaryCtxSetFlags_v2(0, 3), CUDA_ERROR_INVALID_VALUE);
  OK(cuDevicePrimaryCtxGetState(0, &flags, &active));
  CHECK(flags == 4);
  OK(cuDevicePrimaryCtxRelease_v2(0));
  OK(cuDevicePrimaryCtxGetState(0, &flags, &active));
  CHECK(active == 1);
  OK(cuDevicePrimaryCtxRelease_v2(0));
  OK(cuDevicePrimaryCtxGetState(0, &flags, &active));
  CHECK(active == 0);
  CHECK_CU(cuDevicePrimaryCtxRelease_v2(0), CUDA_ERROR_INVALID_CONTEXT);
  /* a released primary context is no longer usable */
  CHECK_CU(cuCtxSetCurrent(a), CUDA_ERROR_INVALID_CONTEXT);
  CHECK_CU(cuDevicePrimaryCtxRetain(NULL, 0), CUDA_ERROR_INVALID_VALUE);
  CHECK_CU(cuDevicePrimaryCtxRetain(&a, 1), CUDA_ERROR_INVALID_DEVICE);
  CHECK_CU(cuDevicePrimaryCtxGetState(0, NULL, &active), CUDA_ERROR_INVALID_VALUE);
  CHECK_CU(cuCtxDestroy_v2(b), CUDA_ERROR_INVALID_CONTEXT); /* primaries are not destroyed */
}

static void test_primary(void **state) {
  (void)state;
  sim_run(primary, NULL);
}

static void *other_thread(void *arg) {
  CUcontext cur = (CUcontext)arg;
  CUdevice dev;
  if (cuCtxGetCurrent(&cur) != CUDA_SUCCESS || cur != NULL) return "stack not empty";
  if (cuCtxGetDevice(&dev) != CUDA_ERROR_INVALID_CONTEXT) return "device without context";
  return NULL;
}

static void stack(void) {
  OK(cuInit(0));
  CUcontext cur = (CUcontext)1, p, c1, c2, popped;
  OK(cuCtxGetCurrent(&cur));
  CHECK(cur == NULL);
  CHECK_CU(cuCtxGetCurrent(NULL), CUDA_ERROR_INVALID_VALUE);
  CHECK_CU(cuCtxPopCurrent_v2(&popped), CUDA_ERROR_INVALID_CONTEXT);
  CUdevice dev;
  CHECK_CU(cuCtxGetDevice(&dev), CUDA_ERROR_INVALID_CONTEXT);
  CHECK_CU(cuCtxSynchronize(), CUDA_ERROR_INVALID_CONTEXT);
  OK(cuDevicePrimaryCtxRetain(&p, 1));
  OK(cuCtxPushCurrent_v2(p));
  OK(cuCtxGetDevice(&dev));
  CHECK(dev == 1);
  OK(cuCtxCreate_v2(&c1, 0, 0)); /* pushed */
  OK(cuCtxGetCurrent(&cur));
  CHECK(cur == c1);
  OK(cuCtxGetDevice(&dev));
  CHECK(dev == 0);
  CUctxCreateParams params = {NULL, 0, NULL};
  OK(cuCtxCreate_v4(&c2, &params, 0, 1));
  OK(cuCtxGetCurrent(&cur));
  CHECK(cur == c2);
  params.numExecAffinityParams = 1;
  CHECK_CU(cuCtxCreate_v4(&cur, &params, 0, 1), CUDA_ERROR_NOT_SUPPORTED);
  CHECK_CU(cuCtxCreate_v2(&cur, 0, 7), CUDA_ERROR_INVALID_DEVICE);
  CHECK_CU(cuCtxCreate_v2(NULL, 0, 0), CUDA_ERROR_INVALID_VALUE);
  OK(cuCtxPopCurrent_v2(&popped));
  CHECK(popped == c2);
  OK(cuCtxGetCurrent(&cur));
  CHECK(cur == c1);
  OK(cuCtxSetCurrent(c2)); /* replaces the top */
  OK(cuCtxPopCurrent_v2(&popped));
  CHECK(popped == c2);
  OK(cuCtxGetCurrent(&cur));
  CHECK(cur == p);
  OK(cuCtxPushCurrent_v2(c1));
  OK(cuCtxDestroy_v2(c1)); /* current: popped */
  OK(cuCtxGetCurrent(&cur));
  CHECK(cur == p);
  CHECK_CU(cuCtxDestroy_v2(c1), CUDA_ERROR_CONTEXT_IS_DESTROYED);
  CHECK_CU(cuCtxSetCurrent(c1), CUDA_ERROR_CONTEXT_IS_DESTROYED);
  CHECK_CU(cuCtxPushCurrent_v2(NULL), CUDA_ERROR_INVALID_VALUE);
  CHECK_CU(cuCtxPushCurrent_v2((CUcontext)(uintptr_t)0x42), CUDA_ERROR_INVALID_CONTEXT);
  OK(cuCtxSetCurrent(NULL)); /* pops */
  OK(cuCtxGetCurrent(&cur));
  CHECK(cur == NULL);
  OK(cuCtxSetCurrent(c2));
  pthread_t t;
  void *why = NULL;
  CHECK(pthread_create(&t, NULL, other_thread, NULL) == 0);
  CHECK(pthread_join(t, &why) == 0);
  if (why != NULL) fprintf(stderr, "other thread: %s\n", (const char *)why);
  CHECK(why == NULL);
  OK(cuCtxSynchronize());
  OK(cuCtxDestroy_v2(c2));
}

static void test_stack(void **state) {
  (void)state;
  const char *env[] = {"VGPU_SIM_DEVICES=2", NULL};
  sim_run(stack, env);
}

static void streams_events(void) {
  CUstream s;
  CUevent a, b, notiming;
  OK(cuInit(0));
  CHECK_CU(cuStreamCreate(&s, 0), CUDA_ERROR_INVALID_CONTEXT);
  sim_primary(0);
  CHECK_CU(cuStreamCreate(&s, 8), CUDA_ERROR_INVALID_VALUE);
  CHECK_CU(cuStreamCreate(NULL, 0), CUDA_ERROR_INVALID_VALUE);
  OK(cuStreamCreate(&s, CU_STREAM_DEFAULT));
  OK(cuStreamSynchronize(s));
  OK(cuStreamSynchronize(NULL));
  OK(cuStreamSynchronize(CU_STREAM_LEGACY));
  OK(cuStreamSynchronize_ptsz(CU_STREAM_PER_THREAD));
  OK(cuEventCreate(&a, CU_EVENT_DEFAULT));
  OK(cuEventCreate(&b, CU_EVENT_DEFAULT));
  OK(cuEventCreate(&notiming, CU_EVENT_DISABLE_TIMING));
  CHECK_CU(cuEventCreate(&a, 0x4), CUDA_ERROR_INVALID_VALUE); /* interprocess needs no timing */
  CHECK_CU(cuEventCreate(&a, 0x40), CUDA_ERROR_INVALID_VALUE);
  float ms = -1;
  CHECK_CU(cuEventElapsedTime(&ms, a, b), CUDA_ERROR_INVALID_HANDLE); /* not recorded */
  OK(cuEventSynchronize(a));                                          /* never recorded: ok */
  OK(cuEventRecord(a, s));
  OK(cuEventRecord_ptsz(b, NULL));
  OK(cuEventRecord(notiming, CU_STREAM_LEGACY));
  OK(cuEventSynchronize(b));
  OK(cuEventElapsedTime(&ms, a, b));
  CHECK(ms >= 0 && ms < 100);
  OK(cuEventElapsedTime_v2(&ms, a, b));
  CHECK_CU(cuEventElapsedTime(&ms, a, notiming), CUDA_ERROR_INVALID_HANDLE);
  CHECK_CU(cuEventElapsedTime(NULL, a, b), CUDA_ERROR_INVALID_VALUE);
  CHECK_CU(cuEventRecord(a, (CUstream)(uintptr_t)0x77), CUDA_ERROR_INVALID_HANDLE);
  OK(cuStreamDestroy_v2(s));
  CHECK_CU(cuStreamDestroy_v2(s), CUDA_ERROR_INVALID_HANDLE);
  CHECK_CU(cuStreamSynchronize(s), CUDA_ERROR_INVALID_HANDLE);
  OK(cuEventDestroy_v2(a));
  CHECK_CU(cuEventDestroy_v2(a), CUDA_ERROR_INVALID_HANDLE);
  CHECK_CU(cuEventSynchronize(a), CUDA_ERROR_INVALID_HANDLE);
  /* objects die with their context */
  OK(cuStreamCreate(&s, 0));
  OK(cuDevicePrimaryCtxReset_v2(0));
  CHECK_CU(cuStreamDestroy_v2(s), CUDA_ERROR_INVALID_HANDLE);
  CHECK_CU(cuEventDestroy_v2(b), CUDA_ERROR_INVALID_HANDLE);
}

static void test_streams_events(void **state) {
  (void)state;
  sim_run(streams_events, NULL);
}

static const char g_ptx[] =
    "//\n// Generated by hand\n//\n"
    ".version 7.0\n"
    ".target sm_80\n"
    ".address_size 64\n"
    "\n"
    ".visible .entry burn_kernel(\n"
    "\t.param .u64 burn_kernel_param_0\n"
    ")\n"
    "{\n\tret;\n}\n"
    ".entry helper_2 (\n)\n{\n\tret;\n}\n"
    ".func not_a_kernel()\n{\n\tret;\n}\n";

static void modules(void) {
  CUmodule m;
  CUfunction f, g, h;
  OK(cuInit(0));
  CHECK_CU(cuModuleLoadData(&m, g_ptx), CUDA_ERROR_INVALID_CONTEXT);
  sim_primary(0);
  CHECK_CU(cuModuleLoadData(&m, NULL), CUDA_ERROR_INVALID_VALUE);
  CHECK_CU(cuModuleLoadData(&m, "hello"), CUDA_ERROR_INVALID_IMAGE);
  CHECK_CU(cuModuleLoadData(&m, ".version 7.0\n"), CUDA_ERROR_INVALID_IMAGE);
  CHECK_CU(cuModuleLoadData(&m,
                            "\x7f"
                            "ELF\x02\x01\x01"),
           CUDA_ERROR_INVALID_IMAGE);
  CHECK_CU(cuModuleLoadData(&m, ""), CUDA_ERROR_INVALID_IMAGE);
  OK(cuModuleLoadData(&m, g_ptx));
  OK(cuModuleGetFunction(&f, m, "burn_kernel"));
  OK(cuModuleGetFunction(&g, m, "helper_2"));
  OK(cuModuleGetFunction(&h, m, "burn_kernel"));
  CHECK(f != g && f == h);
  CHECK_CU(cuModuleGetFunction(&h, m, "not_a_kernel"), CUDA_ERROR_NOT_FOUND);
  CHECK_CU(cuModuleGetFunction(&h, m, "burn"), CUDA_ERROR_NOT_FOUND);
  CHECK_CU(cuModuleGetFunction(NULL, m, "burn_kernel"), CUDA_ERROR_INVALID_VALUE);
  CHECK_CU(cuModuleGetFunction(&h, NULL, "burn_kernel"), CUDA_ERROR_INVALID_HANDLE);
  OK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL));
  OK(cuModuleUnload(m));
  CHECK_CU(cuModuleUnload(m), CUDA_ERROR_INVALID_HANDLE);
  CHECK_CU(cuModuleGetFunction(&h, m, "burn_kernel"), CUDA_ERROR_INVALID_HANDLE);
  CHECK_CU(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL), CUDA_ERROR_INVALID_HANDLE);
}

static void test_modules(void **state) {
  (void)state;
  sim_run(modules, NULL);
}

static void launch_checks(void) {
  CUmodule m;
  CUfunction f;
  sim_primary(0);
  OK(cuModuleLoadData(&m, g_ptx));
  OK(cuModuleGetFunction(&f, m, "burn_kernel"));
  CHECK_CU(cuLaunchKernel(NULL, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL), CUDA_ERROR_INVALID_HANDLE);
  CHECK_CU(cuLaunchKernel(f, 1, 1, 1, 1025, 1, 1, 0, NULL, NULL, NULL), CUDA_ERROR_INVALID_VALUE);
  CHECK_CU(cuLaunchKernel(f, 1, 1, 1, 64, 32, 1, 0, NULL, NULL, NULL), CUDA_ERROR_INVALID_VALUE);
  CHECK_CU(cuLaunchKernel(f, 0, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL), CUDA_ERROR_INVALID_VALUE);
  CHECK_CU(cuLaunchKernel(f, 1, 1, 1, 32, 0, 1, 0, NULL, NULL, NULL), CUDA_ERROR_INVALID_VALUE);
  CHECK_CU(cuLaunchKernel(f, 1, 70000, 1, 32, 1, 1, 0, NULL, NULL, NULL), CUDA_ERROR_INVALID_VALUE);
  void *params[1] = {NULL}, *extra[1] = {NULL};
  CHECK_CU(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, params, extra), CUDA_ERROR_INVALID_VALUE);
  CHECK_CU(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, (CUstream)(uintptr_t)0x5, NULL, NULL),
           CUDA_ERROR_INVALID_HANDLE);
  OK(cuLaunchKernel(f, 1, 1, 1, 1024, 1, 1, 0, CU_STREAM_LEGACY, params, NULL));
  OK(cuLaunchKernel_ptsz(f, 1, 1, 1, 8, 8, 16, 0, CU_STREAM_PER_THREAD, NULL, NULL));
  CUlaunchConfig cfg;
  memset(&cfg, 0, sizeof(cfg));
  cfg.gridDimX = cfg.gridDimY = cfg.gridDimZ = 1;
  cfg.blockDimX = 128;
  cfg.blockDimY = cfg.blockDimZ = 1;
  OK(cuLaunchKernelEx(&cfg, f, NULL, NULL));
  OK(cuLaunchKernelEx_ptsz(&cfg, f, NULL, NULL));
  cfg.blockDimX = 2048;
  CHECK_CU(cuLaunchKernelEx(&cfg, f, NULL, NULL), CUDA_ERROR_INVALID_VALUE);
  CHECK_CU(cuLaunchKernelEx(NULL, f, NULL, NULL), CUDA_ERROR_INVALID_VALUE);
  /* a cooperative grid must be co-resident: 108 SMs * 2 blocks of 1024 */
  OK(cuLaunchCooperativeKernel(f, 216, 1, 1, 1024, 1, 1, 0, NULL, NULL));
  CHECK_CU(cuLaunchCooperativeKernel(f, 217, 1, 1, 1024, 1, 1, 0, NULL, NULL), (CUresult)720);
  OK(cuLaunchCooperativeKernel_ptsz(f, 10, 1, 1, 32, 1, 1, 0, NULL, NULL));
  /* a function (and a stream) may only be used in its own context */
  CUstream s;
  OK(cuStreamCreate(&s, 0));
  CUcontext other;
  OK(cuCtxCreate_v2(&other, 0, 0));
  CHECK_CU(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL), CUDA_ERROR_INVALID_HANDLE);
  CUmodule m2;
  CUfunction f2;
  OK(cuModuleLoadData(&m2, g_ptx));
  OK(cuModuleGetFunction(&f2, m2, "burn_kernel"));
  OK(cuLaunchKernel(f2, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL));
  CHECK_CU(cuLaunchKernel(f2, 1, 1, 1, 32, 1, 1, 0, s, NULL, NULL), CUDA_ERROR_INVALID_HANDLE);
  OK(cuCtxDestroy_v2(other));
  CHECK_CU(cuModuleUnload(m2), CUDA_ERROR_INVALID_HANDLE); /* died with its context */
  OK(cuCtxSetCurrent(NULL));
  CHECK_CU(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL), CUDA_ERROR_INVALID_CONTEXT);
  OK(cuDevicePrimaryCtxRelease_v2(0));
  CHECK_CU(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL), CUDA_ERROR_INVALID_CONTEXT);
}

static void test_launch_checks(void **state) {
  (void)state;
  sim_run(launch_checks, NULL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_primary),        cmocka_unit_test(test_stack),
      cmocka_unit_test(test_streams_events), cmocka_unit_test(test_modules),
      cmocka_unit_test(test_launch_checks),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
