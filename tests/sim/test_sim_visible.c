/*
 * test_sim_visible.c -- NVIDIA_VISIBLE_DEVICES: the GPUs a container has.
 *
 * The container toolkit mounts only the listed GPUs, so the driver inside
 * enumerates only those, from 0, in physical order -- CUDA and NVML alike --
 * while the memory they use is the physical GPU's. Each case runs on four
 * simulated GPUs and checks both libraries' enumeration against the
 * physical devices expected (identified by the last byte of their UUID).
 */
#include <stdlib.h>
#include <string.h>

#include "sim_test.h"

#define UUID(i) "GPU-5a1a0000-0000-4000-8000-00000000000" #i

struct visible_case {
  const char *nvidia;  /* NVIDIA_VISIBLE_DEVICES; NULL: unset */
  const char *cuda;    /* CUDA_VISIBLE_DEVICES on top; NULL: unset */
  int nvml_count;      /* devices NVML lists */
  int nvml_phys[4];    /* ... physical index of each */
  int cuda_count;      /* CUDA devices; 0: cuInit says CUDA_ERROR_NO_DEVICE */
  int cuda_phys[4];    /* ... physical index of each ordinal */
  const char *warning; /* text stderr must contain, or NULL for silence */
};

static const struct visible_case *g_case;

static void check_cuda(void) {
  CUresult rc = cuInit(0);
  if (g_case->cuda_count == 0) {
    CHECK_CU(rc, CUDA_ERROR_NO_DEVICE);
    return;
  }
  OK(rc);
  int n = 0;
  OK(cuDeviceGetCount(&n));
  CHECK(n == g_case->cuda_count);
  for (int i = 0; i < n; i++) {
    CUuuid u;
    OK(cuDeviceGetUuid(&u, i));
    CHECK(u.bytes[15] == g_case->cuda_phys[i]);
  }
  CUdevice d;
  CHECK_CU(cuDeviceGet(&d, n), CUDA_ERROR_INVALID_DEVICE);
}

static void check_nvml(void) {
  NV_OK(nvmlInit_v2());
  unsigned n = 99;
  NV_OK(nvmlDeviceGetCount_v2(&n));
  CHECK(n == (unsigned)g_case->nvml_count);
  bool shown[4] = {false};
  for (unsigned i = 0; i < n; i++) {
    int phys = g_case->nvml_phys[i];
    nvmlDevice_t d, again;
    char uuid[96], bus[32];
    unsigned index = 99, minor = 99;
    NV_OK(nvmlDeviceGetHandleByIndex_v2(i, &d));
    NV_OK(nvmlDeviceGetUUID(d, uuid, sizeof(uuid)));
    CHECK(uuid[strlen(uuid) - 1] == '0' + phys);
    NV_OK(nvmlDeviceGetIndex(d, &index));
    CHECK(index == i); /* renumbered */
    NV_OK(nvmlDeviceGetMinorNumber(d, &minor));
    CHECK(minor == (unsigned)phys); /* /dev/nvidia<minor> is the host's node */
    NV_OK(nvmlDeviceGetHandleByUUID(uuid, &again));
    CHECK(again == d);
    snprintf(bus, sizeof(bus), "00000000:%02X:00.0", 0x10 + phys);
    NV_OK(nvmlDeviceGetHandleByPciBusId_v2(bus, &again));
    CHECK(again == d);
    shown[phys] = true;
  }
  nvmlDevice_t d;
  CHECK_NV(nvmlDeviceGetHandleByIndex_v2(n, &d), NVML_ERROR_INVALID_ARGUMENT);
  for (int phys = 0; phys < 4; phys++) {
    if (shown[phys]) continue;
    char uuid[96], bus[32];
    snprintf(uuid, sizeof(uuid), "GPU-5a1a0000-0000-4000-8000-%012x", phys);
    CHECK_NV(nvmlDeviceGetHandleByUUID(uuid, &d), NVML_ERROR_NOT_FOUND);
    snprintf(bus, sizeof(bus), "00000000:%02X:00.0", 0x10 + phys);
    CHECK_NV(nvmlDeviceGetHandleByPciBusId_v2(bus, &d), NVML_ERROR_NOT_FOUND);
  }
}

static void visible(void) {
  sim_capture_stderr();
  check_cuda();
  check_nvml();
  const char *text = sim_stderr_text();
  if (g_case->warning == NULL ? text[0] != '\0' : strstr(text, g_case->warning) == NULL) {
    fprintf(stdout, "NVIDIA_VISIBLE_DEVICES=%s: stderr was: %s\n", g_case->nvidia, text);
    CHECK(!"the expected warning (or none)");
  }
}

static void run_case(const struct visible_case *c) {
  char nvidia[160], cuda[160];
  const char *env[4] = {"VGPU_SIM_DEVICES=4", NULL, NULL, NULL};
  int n = 1;
  if (c->nvidia != NULL) {
    snprintf(nvidia, sizeof(nvidia), "NVIDIA_VISIBLE_DEVICES=%s", c->nvidia);
    env[n++] = nvidia;
  }
  if (c->cuda != NULL) {
    snprintf(cuda, sizeof(cuda), "CUDA_VISIBLE_DEVICES=%s", c->cuda);
    env[n++] = cuda;
  }
  g_case = c;
  sim_run(visible, env);
}

/* Unset (outside a container) and "all": every GPU. */
static void test_all(void **state) {
  (void)state;
  static const struct visible_case cases[] = {
      {NULL, NULL, 4, {0, 1, 2, 3}, 4, {0, 1, 2, 3}, NULL},
      {"all", NULL, 4, {0, 1, 2, 3}, 4, {0, 1, 2, 3}, NULL},
      {"ALL", NULL, 4, {0, 1, 2, 3}, 4, {0, 1, 2, 3}, NULL},
      {"1,all", NULL, 4, {0, 1, 2, 3}, 4, {0, 1, 2, 3}, NULL},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) run_case(&cases[i]);
}

/* "none" (driver without GPUs), "void" and empty: no GPU. cuInit says
 * CUDA_ERROR_NO_DEVICE; nvmlInit succeeds with a count of 0. */
static void test_none(void **state) {
  (void)state;
  static const struct visible_case cases[] = {
      {"none", NULL, 0, {0}, 0, {0}, NULL},
      {"void", NULL, 0, {0}, 0, {0}, NULL},
      {"", NULL, 0, {0}, 0, {0}, NULL},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) run_case(&cases[i]);
}

/* Indices, UUIDs (any case) and PCI bus ids select a set: renumbered from
 * 0 in physical order whatever the order of the list. */
static void test_list(void **state) {
  (void)state;
  static const struct visible_case cases[] = {
      {"2", NULL, 1, {2}, 1, {2}, NULL},
      {"3,1", NULL, 2, {1, 3}, 2, {1, 3}, NULL},
      {"1,1", NULL, 1, {1}, 1, {1}, NULL},
      {" 0,,2, ", NULL, 2, {0, 2}, 2, {0, 2}, NULL},
      {UUID(3), NULL, 1, {3}, 1, {3}, NULL},
      {"gpu-5A1A0000-0000-4000-8000-000000000002," UUID(0), NULL, 2, {0, 2}, 2, {0, 2}, NULL},
      {"0000:12:00.0,00000000:11:00.0", NULL, 2, {1, 2}, 2, {1, 2}, NULL},
      {"3," UUID(1), NULL, 2, {1, 3}, 2, {1, 3}, NULL},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) run_case(&cases[i]);
}

/* An entry that names no GPU (where the toolkit would not start the
 * container) leaves that GPU out, with a warning naming the entry. */
static void test_unknown_entries(void **state) {
  (void)state;
  static const struct visible_case cases[] = {
      {"7", NULL, 0, {0}, 0, {0}, "'7' (no GPU has this index)"},
      {"1,7", NULL, 1, {1}, 1, {1}, "'7' (no GPU has this index)"},
      {"GPU-ffff,2", NULL, 1, {2}, 1, {2}, "'GPU-ffff' (no GPU has this UUID)"},
      {"0000:1f:00.0", NULL, 0, {0}, 0, {0}, "no GPU has this PCI bus id"},
      {"MIG-5a1a0000-0000-4000-8000-000000000000", NULL, 0, {0}, 0, {0}, "MIG devices"},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) run_case(&cases[i]);
}

/* CUDA_VISIBLE_DEVICES applies on top, to the container's GPUs: its indices
 * count them, and a GPU the container does not have cannot be named. NVML
 * ignores it. */
static void test_cuda_visible_on_top(void **state) {
  (void)state;
  static const struct visible_case cases[] = {
      {"1,3", "1", 2, {1, 3}, 1, {3}, NULL},     {"1,3", "1,0", 2, {1, 3}, 2, {3, 1}, NULL},
      {"1,3", UUID(1), 2, {1, 3}, 1, {1}, NULL}, {"1,3", UUID(2), 2, {1, 3}, 0, {0}, NULL},
      {"1,3", "2", 2, {1, 3}, 0, {0}, NULL},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) run_case(&cases[i]);
}

/* A malformed entry or an ambiguous UUID prefix: cuInit and nvmlInit fail
 * with a message naming the variable and the entry. */
static const char *g_bad_token;

static void bad_value(void) {
  sim_capture_stderr();
  CHECK_CU(cuInit(0), CUDA_ERROR_INVALID_VALUE);
  CHECK_NV(nvmlInit_v2(), NVML_ERROR_UNKNOWN);
  const char *text = sim_stderr_text();
  if (strstr(text, "NVIDIA_VISIBLE_DEVICES") == NULL || strstr(text, g_bad_token) == NULL) {
    fprintf(stdout, "stderr was: %s\n", text);
    CHECK(!"message names the variable and the entry");
  }
}

static void test_malformed(void **state) {
  (void)state;
  static const char *const cases[][2] = {
      {"abc", "'abc' is not a GPU index"},
      {"0,-1", "'-1' is not"},
      {"1.5", "'1.5' is not"},
      {"GPU-", "'GPU-' is not"},
      {"none,1", "'none' is not"},
      {"GPU-5a1a", "'GPU-5a1a' is the beginning of several"},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    char var[128];
    snprintf(var, sizeof(var), "NVIDIA_VISIBLE_DEVICES=%s", cases[i][0]);
    const char *env[] = {"VGPU_SIM_DEVICES=4", var, NULL};
    g_bad_token = cases[i][1];
    sim_run(bad_value, env);
  }
}

/* Memory is the physical GPU's: what a container with GPU 2 allocates on
 * its ordinal 0 is GPU 2's, for the host (everything visible) as for the
 * container's own NVML index 0; GPU 0 stays untouched. */
static void host_view(void *arg) {
  struct sim_chan *c = arg;
  CHECK(sim_chan_recv(c->to_child[0]) == 'a'); /* the container has allocated */
  unsetenv("NVIDIA_VISIBLE_DEVICES");
  NV_OK(nvmlInit_v2());
  unsigned n = 0;
  NV_OK(nvmlDeviceGetCount_v2(&n));
  CHECK(n == 4);
  for (unsigned i = 0; i < n; i++) {
    nvmlDevice_t d;
    nvmlMemory_t m;
    unsigned count = 0;
    NV_OK(nvmlDeviceGetHandleByIndex_v2(i, &d));
    NV_OK(nvmlDeviceGetMemoryInfo(d, &m));
    CHECK(m.used == (i == 2 ? 64 * MiB : 0));
    CHECK_NV(nvmlDeviceGetComputeRunningProcesses_v3(d, &count, NULL),
             i == 2 ? NVML_ERROR_INSUFFICIENT_SIZE : NVML_SUCCESS);
    CHECK(count == (i == 2 ? 1u : 0u)); /* the container's process, on GPU 2 */
  }
}

static void charges_physical(void) {
  struct sim_chan c;
  sim_chan_init(&c);
  pid_t host = sim_spawn(host_view, &c); /* before any init: a process of its own */
  sim_primary(0);
  CUdeviceptr p;
  OK(cuMemAlloc_v2(&p, 64 * MiB));
  CHECK(sim_used() == 64 * MiB);
  NV_OK(nvmlInit_v2());
  nvmlDevice_t d;
  nvmlMemory_t m;
  NV_OK(nvmlDeviceGetHandleByIndex_v2(0, &d));
  NV_OK(nvmlDeviceGetMemoryInfo(d, &m));
  CHECK(m.used == 64 * MiB);
  sim_chan_send(c.to_child[1], 'a');
  CHECK(sim_wait(host) == 0);
}

static void test_charges_physical_gpu(void **state) {
  (void)state;
  const char *env[] = {"VGPU_SIM_DEVICES=4", "NVIDIA_VISIBLE_DEVICES=" UUID(2), NULL};
  sim_run(charges_physical, env);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_all),
      cmocka_unit_test(test_none),
      cmocka_unit_test(test_list),
      cmocka_unit_test(test_unknown_entries),
      cmocka_unit_test(test_cuda_visible_on_top),
      cmocka_unit_test(test_malformed),
      cmocka_unit_test(test_charges_physical_gpu),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
