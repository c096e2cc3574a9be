/*
 * hook_nvml_devices.c -- which GPUs NVML lists inside a container.
 *
 * On a node set up as intended a container's NVML sees only the GPUs the
 * device plugin gave it: the container toolkit mounts no others. Should a
 * container see more -- NVIDIA_VISIBLE_DEVICES=all in its pod spec, a
 * privileged pod -- then under the node agent (state.h: the region lists the
 * container's GPUs) the others are left out here, so that nvidia-smi and
 * monitoring agents in the container show its GPUs only, numbered from 0 in
 * the driver's order, and never a neighbour's memory, processes or
 * utilisation. CUDA keeps its own numbering and refuses those GPUs instead
 * (hook_context.c), since a CUDA program may already hold their ordinals.
 *
 * Counting, handles by index, UUID and PCI bus id, and nvmlDeviceGetIndex
 * agree on the shortened list; a handle to a hidden GPU obtained another
 * way is refused as an invalid argument by the calls libvgpu interposes.
 * Outside the node agent every call passes straight through. The list is
 * recomputed at each call (a few driver queries per GPU): NVML is not on
 * any hot path, and nothing needs invalidating.
 */
#include <stdbool.h>

#include "hooks.h"
#include "region.h"
#include "state.h"

struct shown {
  bool filtered; /* false: no assignment, every GPU is shown */
  unsigned n;
  nvmlDevice_t dev[VG_MAX_DEVICES];
};

/* A GPU whose UUID cannot be read cannot be told to be the container's, so
 * it is not shown either. */
static bool hidden(nvmlDevice_t device) {
  char uuid[VG_UUID_LEN];
  return VG_NV(nvmlDeviceGetUUID, device, uuid, sizeof(uuid)) != NVML_SUCCESS ||
         vg_state_hides(uuid);
}

static bool assignment_applies(void) { return vg_state_ready() && vg_state_has_assignment(); }

static nvmlReturn_t list_shown(struct shown *s) {
  s->n = 0;
  s->filtered = assignment_applies();
  if (!s->filtered) return NVML_SUCCESS;
  unsigned count = 0;
  nvmlReturn_t rc = VG_NV(nvmlDeviceGetCount_v2, &count);
  if (rc != NVML_SUCCESS) return rc;
  for (unsigned i = 0; i < count && s->n < VG_MAX_DEVICES; i++) {
    nvmlDevice_t d;
    if (VG_NV(nvmlDeviceGetHandleByIndex_v2, i, &d) == NVML_SUCCESS && !hidden(d))
      s->dev[s->n++] = d;
  }
  return NVML_SUCCESS;
}

/* Position of device in the shown list, or -1. */
static int position(const struct shown *s, nvmlDevice_t device) {
  for (unsigned i = 0; i < s->n; i++)
    if (s->dev[i] == device) return (int)i;
  return -1;
}

VG_EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount) {
  if (!vg_nvml_load()) return NVML_ERROR_UNINITIALIZED;
  struct shown s;
  nvmlReturn_t rc = list_shown(&s);
  if (rc != NVML_SUCCESS || !s.filtered || deviceCount == NULL)
    return rc != NVML_SUCCESS ? rc : VG_NV(nvmlDeviceGetCount_v2, deviceCount);
  *deviceCount = s.n;
  return NVML_SUCCESS;
}

VG_EXPORT nvmlReturn_t nvmlDeviceGetCount(unsigned int *deviceCount) {
  return nvmlDeviceGetCount_v2(deviceCount);
}

VG_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device) {
  if (!vg_nvml_load()) return NVML_ERROR_UNINITIALIZED;
  struct shown s;
  nvmlReturn_t rc = list_shown(&s);
  if (rc != NVML_SUCCESS || !s.filtered || device == NULL)
    return rc != NVML_SUCCESS ? rc : VG_NV(nvmlDeviceGetHandleByIndex_v2, index, device);
  if (index >= s.n) return NVML_ERROR_INVALID_ARGUMENT;
  *device = s.dev[index];
  return NVML_SUCCESS;
}

VG_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t *device) {
  return nvmlDeviceGetHandleByIndex_v2(index, device);
}

VG_EXPORT nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *device) {
  if (!vg_nvml_load()) return NVML_ERROR_UNINITIALIZED;
  nvmlReturn_t rc = VG_NV(nvmlDeviceGetHandleByUUID, uuid, device);
  if (rc == NVML_SUCCESS && assignment_applies() && hidden(*device)) return NVML_ERROR_NOT_FOUND;
  return rc;
}

VG_EXPORT nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *pciBusId,
                                                        nvmlDevice_t *device) {
  if (!vg_nvml_load()) return NVML_ERROR_UNINITIALIZED;
  nvmlReturn_t rc = VG_NV(nvmlDeviceGetHandleByPciBusId_v2, pciBusId, device);
  if (rc == NVML_SUCCESS && assignment_applies() && hidden(*device)) return NVML_ERROR_NOT_FOUND;
  return rc;
}

VG_EXPORT nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int *index) {
  if (!vg_nvml_load()) return NVML_ERROR_UNINITIALIZED;
  struct shown s;
  nvmlReturn_t rc = list_shown(&s);
  if (rc != NVML_SUCCESS || !s.filtered || index == NULL)
    return rc != NVML_SUCCESS ? rc : VG_NV(nvmlDeviceGetIndex, device, index);
  int at = position(&s, device);
  if (at < 0) return NVML_ERROR_INVALID_ARGUMENT;
  *index = (unsigned)at;
  return NVML_SUCCESS;
}
