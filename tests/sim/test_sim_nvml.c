/*
 * test_sim_nvml.c -- the simulated NVML: init refcount, enumeration,
 * identity, NUMA nodes, memory (v1/v2), process lists and utilisation.
 */
#include <string.h>
#include <time.h>

#include "sim_test.h"

static void init_refcount(void) {
  unsigned n = 0;
  CHECK_NV(nvmlDeviceGetCount_v2(&n), NVML_ERROR_UNINITIALIZED);
  CHECK_NV(nvmlShutdown(), NVML_ERROR_UNINITIALIZED);
  CHECK(strcmp(nvmlErrorString(NVML_ERROR_UNINITIALIZED), "Uninitialized") == 0);
  CHECK(strcmp(nvmlErrorString((nvmlReturn_t)4242), "Unknown Error") == 0);
  NV_OK(nvmlInit_v2());
  NV_OK(nvmlInit());
  NV_OK(nvmlInitWithFlags(0));
  NV_OK(nvmlDeviceGetCount_v2(&n));
  CHECK(n == 2);
  NV_OK(nvmlShutdown());
  NV_OK(nvmlShutdown());
  NV_OK(nvmlDeviceGetCount(&n));
  NV_OK(nvmlShutdown());
  CHECK_NV(nvmlDeviceGetCount(&n), NVML_ERROR_UNINITIALIZED);
  NV_OK(nvmlInit_v2()); /* again after a full shutdown */
  NV_OK(nvmlDeviceGetCount(&n));
  CHECK_NV(nvmlDeviceGetCount(NULL), NVML_ERROR_INVALID_ARGUMENT);
}

static void test_init_refcount(void **state) {
  (void)state;
  const char *env[] = {"VGPU_SIM_DEVICES=2", NULL};
  sim_run(init_refcount, env);
}

static void identity(void) {
  NV_OK(nvmlInit_v2());
  nvmlDevice_t d0, d1, d;
  NV_OK(nvmlDeviceGetHandleByIndex_v2(0, &d0));
  NV_OK(nvmlDeviceGetHandleByIndex(1, &d1));
  CHECK(d0 != d1);
  CHECK_NV(nvmlDeviceGetHandleByIndex_v2(2, &d), NVML_ERROR_INVALID_ARGUMENT);
  char buf[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
  NV_OK(nvmlDeviceGetUUID(d1, buf, sizeof(buf)));
  CHECK(strcmp(buf, "GPU-5a1a0000-0000-4000-8000-000000000001") == 0);
  CHECK_NV(nvmlDeviceGetUUID(d1, buf, 10), NVML_ERROR_INSUFFICIENT_SIZE);
  CHECK_NV(nvmlDeviceGetUUID(d1, buf, 40), NVML_ERROR_INSUFFICIENT_SIZE); /* no room for NUL */
  NV_OK(nvmlDeviceGetUUID(d1, buf, 41));
  NV_OK(nvmlDeviceGetHandleByUUID("GPU-5a1a0000-0000-4000-8000-000000000001", &d));
  CHECK(d == d1);
  CHECK_NV(nvmlDeviceGetHandleByUUID("GPU-nope", &d), NVML_ERROR_NOT_FOUND);
  NV_OK(nvmlDeviceGetHandleByPciBusId_v2("00000000:11:00.0", &d));
  CHECK(d == d1);
  NV_OK(nvmlDeviceGetHandleByPciBusId_v2("0000:10:00.0", &d));
  CHECK(d == d0);
  CHECK_NV(nvmlDeviceGetHandleByPciBusId_v2("0000:42:00.0", &d), NVML_ERROR_NOT_FOUND);
  CHECK_NV(nvmlDeviceGetHandleByPciBusId_v2("garbage", &d), NVML_ERROR_INVALID_ARGUMENT);
  unsigned index = 9, minor = 9;
  NV_OK(nvmlDeviceGetIndex(d1, &index));
  NV_OK(nvmlDeviceGetMinorNumber(d1, &minor));
  CHECK(index == 1 && minor == 1);
  CHECK_NV(nvmlDeviceGetIndex((nvmlDevice_t)(uintptr_t)0x10, &index), NVML_ERROR_INVALID_ARGUMENT);
  CHECK_NV(nvmlDeviceGetIndex(NULL, &index), NVML_ERROR_INVALID_ARGUMENT);
  NV_OK(nvmlDeviceGetName(d0, buf, sizeof(buf)));
  CHECK(strcmp(buf, "NVIDIA A100-SXM4-16GB (vgpu-sim)") == 0);
  CHECK_NV(nvmlDeviceGetName(d0, buf, 5), NVML_ERROR_INSUFFICIENT_SIZE);
  nvmlPciInfo_t pci;
  NV_OK(nvmlDeviceGetPciInfo_v3(d1, &pci));
  CHECK(strcmp(pci.busId, "00000000:11:00.0") == 0 && pci.bus == 0x11 && pci.domain == 0);
  CHECK(strcmp(pci.busIdLegacy, "0000:11:00.0") == 0);
  char version[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE];
  NV_OK(nvmlSystemGetDriverVersion(version, sizeof(version)));
  CHECK(strcmp(version, "580.00-sim") == 0);
  CHECK_NV(nvmlSystemGetDriverVersion(version, 4), NVML_ERROR_INSUFFICIENT_SIZE);
  int cuda = 0;
  NV_OK(nvmlSystemGetCudaDriverVersion(&cuda));
  CHECK(cuda == 13000);
  NV_OK(nvmlSystemGetCudaDriverVersion_v2(&cuda));
  CHECK(cuda == 13000);
}

static void test_identity(void **state) {
  (void)state;
  /* NVML ignores CUDA_VISIBLE_DEVICES */
  const char *env[] = {"VGPU_SIM_DEVICES=2", "CUDA_VISIBLE_DEVICES=1", NULL};
  sim_run(identity, env);
}

/* Not in nvml_abi.h (the device plugin finds it with dlsym). */
nvmlReturn_t nvmlDeviceGetNumaNodeId(nvmlDevice_t device, unsigned int *node);

/* GPU i is on node i % VGPU_SIM_NUMA_NODES; expect[i] for 3 GPUs. */
static unsigned g_numa_expect[3];
static void numa(void) {
  NV_OK(nvmlInit_v2());
  for (unsigned i = 0; i < 3; i++) {
    nvmlDevice_t d;
    NV_OK(nvmlDeviceGetHandleByIndex_v2(i, &d));
    unsigned node = 99;
    NV_OK(nvmlDeviceGetNumaNodeId(d, &node));
    CHECK(node == g_numa_expect[i]);
    CHECK_NV(nvmlDeviceGetNumaNodeId(d, NULL), NVML_ERROR_INVALID_ARGUMENT);
  }
  unsigned node;
  CHECK_NV(nvmlDeviceGetNumaNodeId(NULL, &node), NVML_ERROR_INVALID_ARGUMENT);
  NV_OK(nvmlShutdown());
}

static void test_numa(void **state) {
  (void)state;
  const char *one[] = {"VGPU_SIM_DEVICES=3", NULL};
  memset(g_numa_expect, 0, sizeof(g_numa_expect));
  sim_run(numa, one);
  const char *two[] = {"VGPU_SIM_DEVICES=3", "VGPU_SIM_NUMA_NODES=2", NULL};
  g_numa_expect[1] = 1;
  sim_run(numa, two);
  const char *bad[] = {"VGPU_SIM_DEVICES=3", "VGPU_SIM_NUMA_NODES=zero", NULL};
  g_numa_expect[1] = 0;
  sim_run(numa, bad);
}

static void memory(void) {
  NV_OK(nvmlInit_v2());
  nvmlDevice_t d;
  NV_OK(nvmlDeviceGetHandleByIndex_v2(0, &d));
  nvmlMemory_t m1;
  NV_OK(nvmlDeviceGetMemoryInfo(d, &m1));
  CHECK(m1.total == GiB && m1.used == 0 && m1.free == GiB);
  sim_primary(0);
  CUdeviceptr p;
  OK(cuMemAlloc_v2(&p, 99 * MiB));
  NV_OK(nvmlDeviceGetMemoryInfo(d, &m1));
  CHECK(m1.used == 200 * MiB && m1.free == GiB - 200 * MiB); /* context 100 MiB + 100 MiB */
  nvmlMemory_v2_t m2;
  memset(&m2, 0xff, sizeof(m2));
  m2.version = 1;
  CHECK_NV(nvmlDeviceGetMemoryInfo_v2(d, &m2), NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
  m2.version = nvmlMemory_v2;
  NV_OK(nvmlDeviceGetMemoryInfo_v2(d, &m2));
  CHECK(m2.total == GiB && m2.used == 200 * MiB && m2.reserved == 0 && m2.free == GiB - 200 * MiB);
  CHECK_NV(nvmlDeviceGetMemoryInfo(d, NULL), NVML_ERROR_INVALID_ARGUMENT);
  /* this very process is listed, with its context memory */
  unsigned count = 0;
  CHECK_NV(nvmlDeviceGetComputeRunningProcesses_v3(d, &count, NULL), NVML_ERROR_INSUFFICIENT_SIZE);
  CHECK(count == 1);
  nvmlProcessInfo_t infos[4];
  count = 4;
  NV_OK(nvmlDeviceGetComputeRunningProcesses_v3(d, &count, infos));
  CHECK(count == 1 && infos[0].pid == (unsigned)getpid() && infos[0].usedGpuMemory == 200 * MiB);
  CHECK(infos[0].gpuInstanceId == 0xFFFFFFFFu);
  count = 4;
  NV_OK(nvmlDeviceGetComputeRunningProcesses_v2(d, &count, infos));
  CHECK(count == 1);
  nvmlProcessInfo_v1_t v1[2];
  count = 2;
  NV_OK(nvmlDeviceGetComputeRunningProcesses(d, &count, v1));
  CHECK(count == 1 && v1[0].pid == (unsigned)getpid() && v1[0].usedGpuMemory == 200 * MiB);
  count = 0;
  CHECK_NV(nvmlDeviceGetComputeRunningProcesses(d, &count, v1), NVML_ERROR_INSUFFICIENT_SIZE);
  CHECK(count == 1);
  nvmlDevice_t d1;
  NV_OK(nvmlDeviceGetHandleByIndex_v2(1, &d1));
  count = 4;
  NV_OK(nvmlDeviceGetComputeRunningProcesses_v3(d1, &count, infos));
  CHECK(count == 0);
  CHECK_NV(nvmlDeviceGetComputeRunningProcesses_v3(d1, NULL, infos), NVML_ERROR_INVALID_ARGUMENT);
  /* a process holding only a context is listed too */
  OK(cuMemFree_v2(p));
  OK(cuDevicePrimaryCtxRelease_v2(0));
  count = 4;
  NV_OK(nvmlDeviceGetComputeRunningProcesses_v3(d, &count, infos));
  CHECK(count == 0);
  nvmlUtilization_t u;
  NV_OK(nvmlDeviceGetUtilizationRates(d, &u));
  CHECK(u.gpu == 0 && u.memory == 0);
}

static void test_memory(void **state) {
  (void)state;
  const char *env[] = {"VGPU_SIM_DEVICES=2", "VGPU_SIM_MEMORY=1g", "VGPU_SIM_CONTEXT_MEM=100m",
                       NULL};
  sim_run(memory, env);
}

static const char g_ptx[] = ".version 7.0\n.target sm_80\n.entry k()\n{\n\tret;\n}\n";

static void utilisation(void) {
  NV_OK(nvmlInit_v2());
  nvmlDevice_t d;
  NV_OK(nvmlDeviceGetHandleByIndex_v2(0, &d));
  sim_primary(0);
  CUmodule m;
  CUfunction f;
  OK(cuModuleLoadData(&m, g_ptx));
  OK(cuModuleGetFunction(&f, m, "k"));
  CUdeviceptr p;
  OK(cuMemAlloc_v2(&p, 256 * MiB));
  unsigned n = 8;
  nvmlProcessUtilizationSample_t samples[8];
  CHECK_NV(nvmlDeviceGetProcessUtilization(d, samples, &n, 0), NVML_ERROR_NOT_FOUND);
  /* keep the device busy for 300 ms: 30 kernels of 10 ms */
  for (int i = 0; i < 30; i++) OK(cuLaunchKernel(f, 20 * 5, 1, 1, 1024, 1, 1, 0, NULL, NULL, NULL));
  OK(cuCtxSynchronize());
  nvmlUtilization_t u;
  NV_OK(nvmlDeviceGetUtilizationRates(d, &u));
  /* 300 ms of work in the last second */
  CHECK(u.gpu >= 25 && u.gpu <= 35);
  CHECK(u.memory == 25);
  /* per process, over the last 200 ms: this process ran all the time */
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  unsigned long long now_us = (unsigned long long)ts.tv_sec * 1000000ull + ts.tv_nsec / 1000;
  n = 0;
  CHECK_NV(nvmlDeviceGetProcessUtilization(d, NULL, &n, now_us - 200000),
           NVML_ERROR_INSUFFICIENT_SIZE);
  CHECK(n == 1);
  n = 8;
  NV_OK(nvmlDeviceGetProcessUtilization(d, samples, &n, now_us - 200000));
  CHECK(n == 1 && samples[0].pid == (unsigned)getpid());
  CHECK(samples[0].smUtil >= 90 && samples[0].smUtil <= 100);
  CHECK(samples[0].timeStamp > now_us - 200000 && samples[0].timeStamp <= now_us + 1000000);
  /* nothing new since now */
  n = 8;
  CHECK_NV(nvmlDeviceGetProcessUtilization(d, samples, &n, now_us + 1000000), NVML_ERROR_NOT_FOUND);
}

static void test_utilisation(void **state) {
  (void)state;
  const char *env[] = {"VGPU_SIM_SMS=10", "VGPU_SIM_WAVE_US=2000", "VGPU_SIM_MEMORY=1g", NULL};
  sim_run(utilisation, env);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_init_refcount), cmocka_unit_test(test_identity),
      cmocka_unit_test(test_numa),          cmocka_unit_test(test_memory),
      cmocka_unit_test(test_utilisation),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
