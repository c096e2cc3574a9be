/*
 * test_sim_device.c -- initialisation, configuration, devices and their
 * identity, CUDA_VISIBLE_DEVICES, error strings.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "sim_test.h"

static void before_init(void) {
  int n = 0, v = 0;
  CUdeviceptr p;
  CUcontext ctx;
  CHECK_CU(cuDeviceGetCount(&n), CUDA_ERROR_NOT_INITIALIZED);
  CHECK_CU(cuMemAlloc_v2(&p, 1), CUDA_ERROR_NOT_INITIALIZED);
  CHECK_CU(cuCtxGetCurrent(&ctx), CUDA_ERROR_NOT_INITIALIZED);
  CHECK_CU(cuDevicePrimaryCtxRetain(&ctx, 0), CUDA_ERROR_NOT_INITIALIZED);
  OK(cuDriverGetVersion(&v));
  CHECK(v == 13000);
  CHECK_CU(cuDriverGetVersion(NULL), CUDA_ERROR_INVALID_VALUE);
  CHECK_CU(cuInit(1), CUDA_ERROR_INVALID_VALUE);
  OK(cuInit(0));
  OK(cuInit(0));
  OK(cuDeviceGetCount(&n));
  CHECK(n == 1);
  CHECK_CU(cuDeviceGetCount(NULL), CUDA_ERROR_INVALID_VALUE);
}

static void test_before_init(void **state) {
  (void)state;
  sim_run(before_init, NULL);
}

static void defaults(void) {
  char name[128];
  size_t total = 0;
  int sms = 0;
  OK(cuInit(0));
  OK(cuDeviceGetName(name, sizeof(name), 0));
  CHECK(strcmp(name, "NVIDIA A100-SXM4-16GB (vgpu-sim)") == 0);
  OK(cuDeviceTotalMem_v2(&total, 0));
  CHECK(total == 16 * GiB);
  OK(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0));
  CHECK(sms == 108);
  /* the name is truncated to the buffer, like the driver does */
  OK(cuDeviceGetName(name, 7, 0));
  CHECK(strcmp(name, "NVIDIA") == 0);
  CHECK_CU(cuDeviceGetName(name, 0, 0), CUDA_ERROR_INVALID_VALUE);
}

static void test_defaults(void **state) {
  (void)state;
  sim_run(defaults, NULL);
}

static int attr(CUdevice_attribute a, CUdevice dev) {
  int v = -1;
  OK(cuDeviceGetAttribute(&v, a, dev));
  return v;
}

static void configured(void) {
  OK(cuInit(0));
  int n = 0;
  OK(cuDeviceGetCount(&n));
  CHECK(n == 3);
  size_t total = 0;
  OK(cuDeviceTotalMem_v2(&total, 0));
  CHECK(total == 8 * GiB);
  OK(cuDeviceTotalMem_v2(&total, 1));
  CHECK(total == 1536 * MiB);
  char name[64];
  OK(cuDeviceGetName(name, sizeof(name), 2));
  CHECK(strcmp(name, "Test GPU") == 0);
  CHECK(attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 1) == 80);
  CHECK(attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 0) == 1024);
  CHECK(attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, 0) == 2048);
  CHECK(attr(CU_DEVICE_ATTRIBUTE_WARP_SIZE, 0) == 32);
  CHECK(attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0) == 8);
  CHECK(attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0) == 0);
  CHECK(attr(CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT, 0) == 512);
  CHECK(attr(CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, 1) == 0x11);
  CHECK(attr(CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, 1) == 0);
  CHECK(attr(CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, 1) == 0);
  CHECK(attr(CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, 0) == 1);
  CHECK(attr(CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH, 0) == 1);
  CHECK(attr(CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 0) == 1);
  CHECK(attr(CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, 0) == 1);
  int v;
  CHECK_CU(cuDeviceGetAttribute(&v, (CUdevice_attribute)9999, 0), CUDA_ERROR_INVALID_VALUE);
  CHECK_CU(cuDeviceGetAttribute(NULL, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 0), CUDA_ERROR_INVALID_VALUE);
  CHECK_CU(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 3), CUDA_ERROR_INVALID_DEVICE);
  CUdevice d;
  OK(cuDeviceGet(&d, 2));
  CHECK(d == 2);
  CHECK_CU(cuDeviceGet(&d, 3), CUDA_ERROR_INVALID_DEVICE);
  CHECK_CU(cuDeviceGet(&d, -1), CUDA_ERROR_INVALID_DEVICE);
  CHECK_CU(cuDeviceGet(NULL, 0), CUDA_ERROR_INVALID_VALUE);
  CHECK_CU(cuDeviceTotalMem_v2(&total, 7), CUDA_ERROR_INVALID_DEVICE);
}

static void test_configured(void **state) {
  (void)state;
  const char *env[] = {"VGPU_SIM_DEVICES=3", "VGPU_SIM_MEMORY=8g",     "VGPU_SIM_MEMORY_1=1.5g",
                       "VGPU_SIM_SMS=80",    "VGPU_SIM_NAME=Test GPU", NULL};
  sim_run(configured, env);
}

static void identity(void) {
  OK(cuInit(0));
  for (int i = 0; i < 2; i++) {
    CUuuid u, u2;
    OK(cuDeviceGetUuid(&u, i));
    OK(cuDeviceGetUuid_v2(&u2, i));
    CHECK(memcmp(&u, &u2, sizeof(u)) == 0);
    unsigned char want[16] = {0x5a, 0x1a, 0, 0, 0, 0, 0x40, 0,
                              0x80, 0,    0, 0, 0, 0, 0,    (unsigned char)i};
    CHECK(memcmp(u.bytes, want, 16) == 0);
    char bus[32];
    OK(cuDeviceGetPCIBusId(bus, sizeof(bus), i));
    char expect[32];
    snprintf(expect, sizeof(expect), "0000:%02X:00.0", 0x10 + i);
    CHECK(strcmp(bus, expect) == 0);
  }
  CUuuid u;
  CHECK_CU(cuDeviceGetUuid(NULL, 0), CUDA_ERROR_INVALID_VALUE);
  CHECK_CU(cuDeviceGetUuid(&u, 2), CUDA_ERROR_INVALID_DEVICE);
}

static void test_identity(void **state) {
  (void)state;
  const char *env[] = {"VGPU_SIM_DEVICES=2", NULL};
  sim_run(identity, env);
}

/* CUDA_VISIBLE_DEVICES cases: the list and the expected physical order. */
struct visible_case {
  const char *value;
  int count;
  int phys[4];
};

static const struct visible_case *g_case;

static void visible(void) {
  CUresult rc = cuInit(0);
  if (g_case->count == 0) {
    CHECK_CU(rc, CUDA_ERROR_NO_DEVICE);
    return;
  }
  OK(rc);
  int n = 0;
  OK(cuDeviceGetCount(&n));
  CHECK(n == g_case->count);
  for (int i = 0; i < n; i++) {
    CUuuid u;
    OK(cuDeviceGetUuid(&u, i));
    CHECK(u.bytes[15] == g_case->phys[i]);
    int bus = 0;
    OK(cuDeviceGetAttribute(&bus, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, i));
    CHECK(bus == 0x10 + g_case->phys[i]);
  }
}

static void test_visible_devices(void **state) {
  (void)state;
  static const struct visible_case cases[] = {
      {"2,0", 2, {2, 0}},
      {"1,9,0", 1, {1}},
      {"1,1", 1, {1}},
      {"3, 2", 2, {3, 2}},
      {"GPU-5a1a0000-0000-4000-8000-000000000003,1", 2, {3, 1}},
      {"GPU-5a1a0000-0000-4000-8000-00000000000", 0, {0}}, /* ambiguous prefix */
      {"", 0, {0}},
      {"abc,0", 0, {0}},
      {"-1", 0, {0}},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    char var[128];
    snprintf(var, sizeof(var), "CUDA_VISIBLE_DEVICES=%s", cases[i].value);
    const char *env[] = {"VGPU_SIM_DEVICES=4", var, NULL};
    g_case = &cases[i];
    sim_run(visible, env);
  }
}

/* A malformed variable: cuInit and nvmlInit fail with a message naming it. */
static const char *g_bad_var;
static const char *g_bad_value;

static void bad_config(void) {
  sim_capture_stderr();
  CHECK_CU(cuInit(0), CUDA_ERROR_INVALID_VALUE);
  CHECK_CU(cuInit(0), CUDA_ERROR_INVALID_VALUE); /* the outcome is kept */
  int n;
  CHECK_CU(cuDeviceGetCount(&n), CUDA_ERROR_NOT_INITIALIZED);
  if (strcmp(g_bad_var, "VGPU_SIM_FAIL_ALLOC_AFTER") != 0)
    CHECK_NV(nvmlInit_v2(), NVML_ERROR_UNKNOWN);
  const char *text = sim_stderr_text();
  if (strstr(text, g_bad_var) == NULL || strstr(text, g_bad_value) == NULL) {
    fprintf(stdout, "stderr was: %s\n", text);
    CHECK(!"message names the variable and the value");
  }
  CHECK(access(sim_state_path(), F_OK) != 0); /* nothing was created */
}

static void test_bad_config(void **state) {
  (void)state;
  static const char *const cases[][2] = {
      {"VGPU_SIM_DEVICES", "abc"},   {"VGPU_SIM_DEVICES", "17"},
      {"VGPU_SIM_DEVICES", "0"},     {"VGPU_SIM_DEVICES", "-1"},
      {"VGPU_SIM_MEMORY", "1Gx"},    {"VGPU_SIM_MEMORY", "-5"},
      {"VGPU_SIM_MEMORY", "1k"},     {"VGPU_SIM_MEMORY_0", "lots"},
      {"VGPU_SIM_SMS", "0"},         {"VGPU_SIM_SMS", "12x"},
      {"VGPU_SIM_WAVE_US", "fast"},  {"VGPU_SIM_CONTEXT_MEM", "300q"},
      {"VGPU_SIM_NAME", ""},         {"VGPU_SIM_FAIL_ALLOC_AFTER", "x1"},
      {"VGPU_SIM_TIMING", "h300"},   {"VGPU_SIM_TIMING", ""},
      {"VGPU_SIM_LAUNCH_NS", "3us"}, {"VGPU_SIM_EVENT_NS", "-1"},
      {"VGPU_SIM_SYNC_NS", "1e3"},   {"VGPU_SIM_MIN_WAVE_PCT", "101"},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    char var[128];
    snprintf(var, sizeof(var), "%s=%s", cases[i][0], cases[i][1]);
    const char *env[] = {var, NULL};
    g_bad_var = cases[i][0];
    g_bad_value = cases[i][1][0] != '\0' ? cases[i][1] : "''";
    sim_run(bad_config, env);
  }
}

/* The first process fixes the configuration; later ones with other values
 * see the existing device. */
static void create_two(void *arg) {
  (void)arg;
  setenv("VGPU_SIM_DEVICES", "2", 1);
  OK(cuInit(0));
}

static void existing_file_wins(void) {
  CHECK(sim_wait(sim_spawn(create_two, NULL)) == 0);
  setenv("VGPU_SIM_DEVICES", "3", 1);
  OK(cuInit(0));
  int n = 0;
  OK(cuDeviceGetCount(&n));
  CHECK(n == 2);
}

static void test_existing_file_wins(void **state) {
  (void)state;
  sim_run(existing_file_wins, NULL);
}

static void foreign_file(void) {
  int fd = open(sim_state_path(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  CHECK(fd >= 0);
  CHECK(write(fd, "this is not a state file\n", 25) == 25);
  close(fd);
  sim_capture_stderr();
  CHECK_CU(cuInit(0), CUDA_ERROR_UNKNOWN);
  CHECK_NV(nvmlInit_v2(), NVML_ERROR_UNKNOWN);
  CHECK(strstr(sim_stderr_text(), sim_state_path()) != NULL);
}

static void test_foreign_file(void **state) {
  (void)state;
  sim_run(foreign_file, NULL);
}

static void error_strings(void) {
  const char *s = NULL;
  OK(cuGetErrorName(CUDA_ERROR_OUT_OF_MEMORY, &s));
  CHECK(strcmp(s, "CUDA_ERROR_OUT_OF_MEMORY") == 0);
  OK(cuGetErrorString(CUDA_ERROR_OUT_OF_MEMORY, &s));
  CHECK(strcmp(s, "out of memory") == 0);
  static const CUresult codes[] = {CUDA_SUCCESS,
                                   CUDA_ERROR_INVALID_VALUE,
                                   CUDA_ERROR_OUT_OF_MEMORY,
                                   CUDA_ERROR_NOT_INITIALIZED,
                                   CUDA_ERROR_DEINITIALIZED,
                                   CUDA_ERROR_NO_DEVICE,
                                   CUDA_ERROR_INVALID_DEVICE,
                                   CUDA_ERROR_INVALID_IMAGE,
                                   CUDA_ERROR_INVALID_CONTEXT,
                                   CUDA_ERROR_INVALID_PTX,
                                   CUDA_ERROR_INVALID_HANDLE,
                                   CUDA_ERROR_NOT_FOUND,
                                   CUDA_ERROR_NOT_READY,
                                   CUDA_ERROR_ILLEGAL_ADDRESS,
                                   CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES,
                                   CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE,
                                   CUDA_ERROR_CONTEXT_IS_DESTROYED,
                                   CUDA_ERROR_NOT_SUPPORTED,
                                   CUDA_ERROR_UNKNOWN};
  for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
    const char *name = NULL, *text = NULL;
    OK(cuGetErrorName(codes[i], &name));
    OK(cuGetErrorString(codes[i], &text));
    CHECK(strncmp(name, "CUDA_", 5) == 0 && text[0] != '\0');
  }
  s = "x";
  CHECK_CU(cuGetErrorName((CUresult)12345, &s), CUDA_ERROR_INVALID_VALUE);
  CHECK(s == NULL);
  CHECK_CU(cuGetErrorString(CUDA_SUCCESS, NULL), CUDA_ERROR_INVALID_VALUE);
}

static void test_error_strings(void **state) {
  (void)state;
  sim_run(error_strings, NULL);
}

/* A forked child of an initialised process cannot use CUDA. */
static void use_after_fork(void *arg) {
  (void)arg;
  CUdeviceptr p;
  CHECK_CU(cuInit(0), CUDA_ERROR_NOT_INITIALIZED);
  CHECK_CU(cuMemAlloc_v2(&p, 1), CUDA_ERROR_NOT_INITIALIZED);
}

static void fork_after_init(void) {
  sim_primary(0);
  CHECK(sim_wait(sim_spawn(use_after_fork, NULL)) == 0);
  CUdeviceptr p;
  OK(cuMemAlloc_v2(&p, 1)); /* the parent is unaffected */
}

static void test_fork_after_init(void **state) {
  (void)state;
  sim_run(fork_after_init, NULL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_before_init),        cmocka_unit_test(test_defaults),
      cmocka_unit_test(test_configured),         cmocka_unit_test(test_identity),
      cmocka_unit_test(test_visible_devices),    cmocka_unit_test(test_bad_config),
      cmocka_unit_test(test_existing_file_wins), cmocka_unit_test(test_foreign_file),
      cmocka_unit_test(test_error_strings),      cmocka_unit_test(test_fork_after_init),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
