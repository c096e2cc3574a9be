/*
 * nvml_events.c -- NVML's event API, for XID errors only.
 *
 * nvmlEventSetCreate, nvmlDeviceRegisterEvents, nvmlEventSetWait(_v2),
 * nvmlEventSetFree and nvmlDeviceGetSupportedEventTypes, with the names,
 * numbers and struct layout of the public nvml.h. The only event type the
 * simulated device supports is nvmlEventTypeXidCriticalError (0x8): an XID
 * recorded with `vgpu-sim fault --device N --xid CODE` (sim_state.h packs
 * the XID count and the last code into vg_sim_device.fault) is delivered
 * once to every set that registered the device before it happened, with
 * eventData = the XID. Several XIDs recorded between two waits arrive as one
 * event carrying the last code. A lost device (VG_SIM_FAULT_LOST) cannot be
 * registered (NVML_ERROR_GPU_IS_LOST) and delivers no events; its handle
 * calls return NVML_ERROR_GPU_IS_LOST, as NVIDIA's do.
 *
 * These types are not in src/common/nvml_abi.h on purpose: only the
 * simulator and the device plugin's health check use them.
 */
#include <stdlib.h>
#include <time.h>

#include "nvml_internal.h"

typedef struct nvmlEventSet_st *nvmlEventSet_t;

typedef struct nvmlEventData_st {
  nvmlDevice_t device;
  unsigned long long eventType;
  unsigned long long eventData; /* the XID for nvmlEventTypeXidCriticalError */
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
} nvmlEventData_t;

#define nvmlEventTypeXidCriticalError 0x0000000000000008LL
#define NVML_ERROR_TIMEOUT_ ((nvmlReturn_t)10) /* NVML_ERROR_TIMEOUT */

#pragma GCC visibility push(default)
nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t *set);
nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device, unsigned long long eventTypes,
                                      nvmlEventSet_t set);
nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t device, unsigned long long *eventTypes);
nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t *data, unsigned int timeoutms);
nvmlReturn_t nvmlEventSetWait(nvmlEventSet_t set, nvmlEventData_t *data, unsigned int timeoutms);
nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set);
#pragma GCC visibility pop

#define SET_MAGIC 0x45565453u /* "STVE" */

struct nvmlEventSet_st {
  uint32_t magic;
  pthread_mutex_t lock;
  bool registered[VG_SIM_MAX_DEVICES];
  uint32_t seen[VG_SIM_MAX_DEVICES]; /* XID count at registration / last delivery */
  unsigned next;                     /* round robin start */
};

static uint32_t fault_of(unsigned i) {
  return __atomic_load_n(&g_nv.sim.st->dev[i].fault, __ATOMIC_ACQUIRE);
}

static uint32_t xid_seq(uint32_t fault) {
  return (fault & VG_SIM_FAULT_XID_SEQ_MASK) >> VG_SIM_FAULT_XID_SEQ_SHIFT;
}

nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t *set) {
  nvmlReturn_t rc = nv_ready();
  if (rc != NVML_SUCCESS) return rc;
  if (set == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  struct nvmlEventSet_st *s = calloc(1, sizeof(*s));
  if (s == NULL) return NVML_ERROR_UNKNOWN;
  s->magic = SET_MAGIC;
  pthread_mutex_init(&s->lock, NULL);
  *set = s;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t device, unsigned long long *eventTypes) {
  struct vg_sim_device *d;
  unsigned i;
  nvmlReturn_t rc = nv_device(device, &d, &i);
  if (rc != NVML_SUCCESS) return rc;
  if (eventTypes == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  *eventTypes = nvmlEventTypeXidCriticalError;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device, unsigned long long eventTypes,
                                      nvmlEventSet_t set) {
  struct vg_sim_device *d;
  unsigned i;
  nvmlReturn_t rc = nv_device(device, &d, &i);
  if (rc != NVML_SUCCESS) return rc;
  if (set == NULL || set->magic != SET_MAGIC) return NVML_ERROR_INVALID_ARGUMENT;
  if (eventTypes == 0 || (eventTypes & ~(unsigned long long)nvmlEventTypeXidCriticalError))
    return NVML_ERROR_NOT_SUPPORTED;
  pthread_mutex_lock(&set->lock);
  if (!set->registered[i]) {
    set->registered[i] = true;
    set->seen[i] = xid_seq(fault_of(i));
  }
  pthread_mutex_unlock(&set->lock);
  return NVML_SUCCESS;
}

/* One pending event, if any (set->lock held). */
static bool take_event(struct nvmlEventSet_st *set, nvmlEventData_t *data) {
  unsigned n = g_nv.sim.st->config.devices;
  for (unsigned k = 0; k < n; k++) {
    unsigned i = (set->next + k) % n;
    if (!set->registered[i]) continue;
    uint32_t f = fault_of(i);
    if (xid_seq(f) == set->seen[i]) continue;
    set->seen[i] = xid_seq(f);
    set->next = (i + 1) % n;
    data->device = &g_nv.dev[i];
    data->eventType = nvmlEventTypeXidCriticalError;
    data->eventData = f >> VG_SIM_FAULT_XID_SHIFT;
    data->gpuInstanceId = 0xFFFFFFFFu; /* not a MIG device */
    data->computeInstanceId = 0xFFFFFFFFu;
    return true;
  }
  return false;
}

nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t *data,
                                 unsigned int timeoutms) {
  nvmlReturn_t rc = nv_ready();
  if (rc != NVML_SUCCESS) return rc;
  if (set == NULL || set->magic != SET_MAGIC || data == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  uint64_t deadline = vg_sim_now_ns() + (uint64_t)timeoutms * 1000000ull;
  for (;;) {
    pthread_mutex_lock(&set->lock);
    bool got = take_event(set, data);
    pthread_mutex_unlock(&set->lock);
    if (got) return NVML_SUCCESS;
    uint64_t now = vg_sim_now_ns();
    if (now >= deadline) return NVML_ERROR_TIMEOUT_;
    uint64_t step = deadline - now < 10000000ull ? deadline - now : 10000000ull; /* 10 ms */
    struct timespec ts = {0, (long)step};
    nanosleep(&ts, NULL);
  }
}

nvmlReturn_t nvmlEventSetWait(nvmlEventSet_t set, nvmlEventData_t *data, unsigned int timeoutms) {
  return nvmlEventSetWait_v2(set, data, timeoutms);
}

nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set) {
  nvmlReturn_t rc = nv_ready();
  if (rc != NVML_SUCCESS) return rc;
  if (set == NULL || set->magic != SET_MAGIC) return NVML_ERROR_INVALID_ARGUMENT;
  set->magic = 0;
  pthread_mutex_destroy(&set->lock);
  free(set);
  return NVML_SUCCESS;
}
