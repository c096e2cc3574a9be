/*
 * nvml_device.c -- NVML device enumeration and identity: count, handles by
 * index / UUID / PCI bus id, index, name, UUID, minor number, PCI info.
 *
 * Strings follow NVML's rule: a buffer too small for the whole string is
 * NVML_ERROR_INSUFFICIENT_SIZE, never a truncated answer. PCI bus ids are
 * "00000000:<0x10+i>:00.0"; lookups by bus id compare the numbers, so
 * "0000:10:00.0" finds the same device. GPU i is on NUMA node
 * i % VGPU_SIM_NUMA_NODES (default 1 node: all on node 0). Indices count the
 * devices NVIDIA_VISIBLE_DEVICES shows (nvml_internal.h); identities -- UUID,
 * bus id, minor number, NUMA node -- are the physical device's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nvml_internal.h"

#define PCI_DEVICE_ID 0x20B010DEu /* A100 SXM4, NVIDIA vendor id */
#define PCI_SUBSYSTEM_ID 0x134F10DEu

static unsigned device_count(void) { return g_nv.nvisible; }

/* The handle of the device at NVML index v. */
static nvmlDevice_t handle_of(unsigned v) { return &g_nv.dev[g_nv.phys[v]]; }

static nvmlReturn_t copy_string(char *out, unsigned length, const char *s) {
  if (out == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  size_t n = strlen(s) + 1;
  if (length < n) return NVML_ERROR_INSUFFICIENT_SIZE;
  memcpy(out, s, n);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount) {
  nvmlReturn_t rc = nv_ready();
  if (rc != NVML_SUCCESS) return rc;
  if (deviceCount == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  *deviceCount = device_count();
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCount(unsigned int *deviceCount) {
  return nvmlDeviceGetCount_v2(deviceCount);
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device) {
  nvmlReturn_t rc = nv_ready();
  if (rc != NVML_SUCCESS) return rc;
  if (device == NULL || index >= device_count()) return NVML_ERROR_INVALID_ARGUMENT;
  *device = handle_of(index);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t *device) {
  return nvmlDeviceGetHandleByIndex_v2(index, device);
}

nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *device) {
  nvmlReturn_t rc = nv_ready();
  if (rc != NVML_SUCCESS) return rc;
  if (uuid == NULL || device == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  for (unsigned v = 0; v < device_count(); v++) {
    if (strcmp(g_nv.sim.st->dev[g_nv.phys[v]].uuid, uuid) != 0) continue;
    *device = handle_of(v);
    return NVML_SUCCESS;
  }
  return NVML_ERROR_NOT_FOUND;
}

/* Parses "[domain:]bus:device[.function]" (hex). */
static bool parse_bus_id(const char *s, unsigned *domain, unsigned *bus, unsigned *dev) {
  unsigned fn = 0;
  int used = 0;
  if (sscanf(s, "%x:%x:%x%n", domain, bus, dev, &used) == 3) {
    if (s[used] == '.' && sscanf(s + used, ".%x%n", &fn, &used) == 1) return true;
    return s[used] == '\0';
  }
  *domain = 0;
  return sscanf(s, "%x:%x.%x", bus, dev, &fn) >= 2;
}

nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *pciBusId, nvmlDevice_t *device) {
  nvmlReturn_t rc = nv_ready();
  if (rc != NVML_SUCCESS) return rc;
  unsigned domain, bus, dev;
  if (pciBusId == NULL || device == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  if (!parse_bus_id(pciBusId, &domain, &bus, &dev)) return NVML_ERROR_INVALID_ARGUMENT;
  for (unsigned v = 0; v < device_count(); v++) {
    if (domain != 0 || dev != 0 || bus != vg_sim_device_pci_bus(g_nv.phys[v])) continue;
    *device = handle_of(v);
    return NVML_SUCCESS;
  }
  return NVML_ERROR_NOT_FOUND;
}

nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int *index) {
  struct vg_sim_device *d;
  unsigned i;
  nvmlReturn_t rc = nv_device(device, &d, &i);
  if (rc != NVML_SUCCESS) return rc;
  if (index == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  *index = g_nv.dev[i].visible;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length) {
  struct vg_sim_device *d;
  unsigned i;
  nvmlReturn_t rc = nv_device(device, &d, &i);
  return rc != NVML_SUCCESS ? rc : copy_string(name, length, d->name);
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length) {
  struct vg_sim_device *d;
  unsigned i;
  nvmlReturn_t rc = nv_device(device, &d, &i);
  return rc != NVML_SUCCESS ? rc : copy_string(uuid, length, d->uuid);
}

/* The minor number names /dev/nvidia<minor> on the host, so it stays
 * physical inside a container too. */
nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int *minorNumber) {
  struct vg_sim_device *d;
  unsigned i;
  nvmlReturn_t rc = nv_device(device, &d, &i);
  if (rc != NVML_SUCCESS) return rc;
  if (minorNumber == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  *minorNumber = i;
  return NVML_SUCCESS;
}

/* Not in nvml_abi.h (the device plugin looks it up with dlsym); exported
 * like the rest of the driver's API (sim_api.h). */
__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetNumaNodeId(nvmlDevice_t device,
                                                                            unsigned int *node);

nvmlReturn_t nvmlDeviceGetNumaNodeId(nvmlDevice_t device, unsigned int *node) {
  unsigned i;
  nvmlReturn_t rc = nvmlDeviceGetMinorNumber(device, &i); /* physical: the GPU's own slot */
  if (rc != NVML_SUCCESS) return rc;
  if (node == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  unsigned long nodes = 1;
  const char *v = getenv("VGPU_SIM_NUMA_NODES");
  if (v != NULL && *v != '\0') {
    char *end;
    nodes = strtoul(v, &end, 10);
    if (*end != '\0' || nodes < 1 || nodes > 64) nodes = 1; /* invalid: one node */
  }
  *node = (unsigned)(i % nodes);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t *pci) {
  struct vg_sim_device *d;
  unsigned i;
  nvmlReturn_t rc = nv_device(device, &d, &i);
  if (rc != NVML_SUCCESS) return rc;
  if (pci == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  memset(pci, 0, sizeof(*pci));
  pci->domain = 0;
  pci->bus = vg_sim_device_pci_bus(i);
  pci->device = 0;
  pci->pciDeviceId = PCI_DEVICE_ID;
  pci->pciSubSystemId = PCI_SUBSYSTEM_ID;
  snprintf(pci->busId, sizeof(pci->busId), "%s", d->bus_id);
  snprintf(pci->busIdLegacy, sizeof(pci->busIdLegacy), "0000:%02X:00.0", pci->bus);
  return NVML_SUCCESS;
}
