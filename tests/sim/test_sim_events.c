/*
 * test_sim_events.c -- fault injection with build/bin/vgpu-sim and what the
 * simulated NVML reports for it: XID events through the event API
 * (nvmlEventSetCreate / nvmlDeviceRegisterEvents / nvmlEventSetWait_v2 /
 * nvmlEventSetFree) and NVML_ERROR_GPU_IS_LOST for a lost device.
 */
#include <stdlib.h>
#include <string.h>

#include "sim_test.h"

/* The event API's types, declared here as in nvml.h (not in nvml_abi.h). */
typedef struct nvmlEventSet_st *nvmlEventSet_t;
typedef struct nvmlEventData_st {
  nvmlDevice_t device;
  unsigned long long eventType;
  unsigned long long eventData;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
} nvmlEventData_t;
#define XID_CRITICAL 0x8ULL
#define NV_TIMEOUT ((nvmlReturn_t)10)
nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t *set);
nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device, unsigned long long eventTypes,
                                      nvmlEventSet_t set);
nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t device, unsigned long long *types);
nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t *data, unsigned int ms);
nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set);

static int tool(const char *args) {
  char cmd[1024];
  snprintf(cmd, sizeof(cmd), "%s/bin/vgpu-sim %s", getenv("VGPU_BUILD_DIR"), args);
  int rc = system(cmd);
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : 128;
}

static void events(void) {
  NV_OK(nvmlInit_v2());
  nvmlDevice_t d0, d1;
  NV_OK(nvmlDeviceGetHandleByIndex_v2(0, &d0));
  NV_OK(nvmlDeviceGetHandleByIndex_v2(1, &d1));
  unsigned long long types = 0;
  NV_OK(nvmlDeviceGetSupportedEventTypes(d0, &types));
  CHECK(types == XID_CRITICAL);
  CHECK(tool("fault --device 1 --xid 48") == 0); /* before registration: never delivered */
  nvmlEventSet_t set;
  NV_OK(nvmlEventSetCreate(&set));
  CHECK_NV(nvmlDeviceRegisterEvents(d0, 0x1ULL, set), NVML_ERROR_NOT_SUPPORTED);
  NV_OK(nvmlDeviceRegisterEvents(d0, XID_CRITICAL, set));
  NV_OK(nvmlDeviceRegisterEvents(d1, XID_CRITICAL, set));
  nvmlEventData_t e;
  CHECK_NV(nvmlEventSetWait_v2(set, &e, 50), NV_TIMEOUT);
  CHECK(tool("fault --device 1 --xid 79") == 0);
  NV_OK(nvmlEventSetWait_v2(set, &e, 1000));
  CHECK(e.device == d1 && e.eventType == XID_CRITICAL && e.eventData == 79);
  CHECK_NV(nvmlEventSetWait_v2(set, &e, 30), NV_TIMEOUT); /* delivered once */
  CHECK(tool("fault --device 0 --xid 13") == 0);
  NV_OK(nvmlEventSetWait_v2(set, &e, 1000));
  CHECK(e.device == d0 && e.eventData == 13);

  /* Lost: handle calls fail with GPU_IS_LOST; clear brings it back. */
  char uuid[96];
  CHECK(tool("fault --device 0 --lost") == 0);
  CHECK_NV(nvmlDeviceGetUUID(d0, uuid, sizeof(uuid)), NVML_ERROR_GPU_IS_LOST);
  NV_OK(nvmlDeviceGetUUID(d1, uuid, sizeof(uuid)));
  CHECK(tool("fault --device 0 --clear") == 0);
  NV_OK(nvmlDeviceGetUUID(d0, uuid, sizeof(uuid)));
  CHECK_NV(nvmlEventSetWait_v2(set, &e, 30), NV_TIMEOUT); /* clear is no event */
  NV_OK(nvmlEventSetFree(set));

  /* Bad usage. */
  CHECK(tool("fault --device 7 --lost 2>/dev/null") == 1);
  CHECK(tool("fault --device 0 --xid 0 2>/dev/null") == 2);
  CHECK(tool("fault --device 0 2>/dev/null") == 2);
  CHECK(tool("status >/dev/null") == 0);
}

static void test_events(void **state) {
  (void)state;
  const char *env[] = {"VGPU_SIM_DEVICES=2", NULL};
  sim_run(events, env);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_events)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
