/*
 * cuda_device.c -- device queries: count, name, UUID, memory, attributes.
 *
 * Devices are what CUDA_VISIBLE_DEVICES lets the process see (cuda_init.c),
 * renumbered from 0; their properties come from the shared state file. The
 * attribute table describes an A100-like part (compute capability 8.0) with
 * the configured SM count; attributes the simulator does not model but the
 * driver knows read as 0, as an unsupported feature does.
 */
#include <stdio.h>
#include <string.h>

#include "cuda_internal.h"

/* Attributes beyond cuda_abi.h that frameworks commonly query (cuda.h values). */
enum {
  ATTR_MAX_SHARED_MEMORY_PER_BLOCK = 8,
  ATTR_TOTAL_CONSTANT_MEMORY = 9,
  ATTR_MAX_PITCH = 11,
  ATTR_MAX_REGISTERS_PER_BLOCK = 12,
  ATTR_CLOCK_RATE = 13,
  ATTR_TEXTURE_ALIGNMENT = 14,
  ATTR_GPU_OVERLAP = 15,
  ATTR_CAN_MAP_HOST_MEMORY = 19,
  ATTR_CONCURRENT_KERNELS = 31,
  ATTR_ECC_ENABLED = 32,
  ATTR_MEMORY_CLOCK_RATE = 36,
  ATTR_GLOBAL_MEMORY_BUS_WIDTH = 37,
  ATTR_L2_CACHE_SIZE = 38,
  ATTR_ASYNC_ENGINE_COUNT = 40,
  ATTR_UNIFIED_ADDRESSING = 41,
  ATTR_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR = 81,
  ATTR_MAX_REGISTERS_PER_MULTIPROCESSOR = 82,
  ATTR_CONCURRENT_MANAGED_ACCESS = 89,
  ATTR_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97,
  ATTR_MAX_BLOCKS_PER_MULTIPROCESSOR = 106,
  ATTR_LAST_KNOWN = 150 /* beyond this the driver reports an invalid attribute */
};

struct attr_value {
  int attr;
  int value;
};

static const struct attr_value g_attrs[] = {
    {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 1024},
    {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, 1024},
    {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, 1024},
    {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, 64},
    {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, 2147483647},
    {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, 65535},
    {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, 65535},
    {CU_DEVICE_ATTRIBUTE_WARP_SIZE, 32},
    {CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, 0},
    {CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, 0},
    {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, 2048},
    {CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT, 512},
    {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 8},
    {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0},
    {CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, 1},
    {CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH, 1},
    {CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 1},
    {CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, 1},
    {ATTR_MAX_SHARED_MEMORY_PER_BLOCK, 49152},
    {ATTR_TOTAL_CONSTANT_MEMORY, 65536},
    {ATTR_MAX_PITCH, 2147483647},
    {ATTR_MAX_REGISTERS_PER_BLOCK, 65536},
    {ATTR_CLOCK_RATE, 1410000},
    {ATTR_TEXTURE_ALIGNMENT, 512},
    {ATTR_GPU_OVERLAP, 1},
    {ATTR_CAN_MAP_HOST_MEMORY, 1},
    {ATTR_CONCURRENT_KERNELS, 1},
    {ATTR_ECC_ENABLED, 1},
    {ATTR_MEMORY_CLOCK_RATE, 1215000},
    {ATTR_GLOBAL_MEMORY_BUS_WIDTH, 5120},
    {ATTR_L2_CACHE_SIZE, 41943040},
    {ATTR_ASYNC_ENGINE_COUNT, 3},
    {ATTR_UNIFIED_ADDRESSING, 1},
    {ATTR_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, 167936},
    {ATTR_MAX_REGISTERS_PER_MULTIPROCESSOR, 65536},
    {ATTR_CONCURRENT_MANAGED_ACCESS, 1},
    {ATTR_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, 166912},
    {ATTR_MAX_BLOCKS_PER_MULTIPROCESSOR, 32},
};

static const struct vg_sim_device *device_of(unsigned phys) { return &g_cu.sim.st->dev[phys]; }

CUresult cuDeviceGet(CUdevice *device, int ordinal) {
  CUresult rc = cu_ready();
  if (rc != CUDA_SUCCESS) return rc;
  if (device == NULL) return CUDA_ERROR_INVALID_VALUE;
  unsigned phys;
  if ((rc = cu_device(ordinal, &phys)) != CUDA_SUCCESS) return rc;
  *device = ordinal;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *count) {
  CUresult rc = cu_ready();
  if (rc != CUDA_SUCCESS) return rc;
  if (count == NULL) return CUDA_ERROR_INVALID_VALUE;
  *count = g_cu.nvisible;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice dev) {
  CUresult rc = cu_ready();
  if (rc != CUDA_SUCCESS) return rc;
  if (name == NULL || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  unsigned phys;
  if ((rc = cu_device(dev, &phys)) != CUDA_SUCCESS) return rc;
  snprintf(name, (size_t)len, "%s", device_of(phys)->name);
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev) {
  CUresult rc = cu_ready();
  if (rc != CUDA_SUCCESS) return rc;
  if (uuid == NULL) return CUDA_ERROR_INVALID_VALUE;
  unsigned phys;
  if ((rc = cu_device(dev, &phys)) != CUDA_SUCCESS) return rc;
  vg_sim_device_uuid_bytes(phys, (unsigned char *)uuid->bytes);
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev) { return cuDeviceGetUuid(uuid, dev); }

CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev) {
  CUresult rc = cu_ready();
  if (rc != CUDA_SUCCESS) return rc;
  if (bytes == NULL) return CUDA_ERROR_INVALID_VALUE;
  unsigned phys;
  if ((rc = cu_device(dev, &phys)) != CUDA_SUCCESS) return rc;
  *bytes = (size_t)device_of(phys)->mem_total;
  return CUDA_SUCCESS;
}

static bool attr_value(int attrib, unsigned phys, int *value) {
  if (attrib == CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT) {
    *value = (int)device_of(phys)->sms;
    return true;
  }
  if (attrib == CU_DEVICE_ATTRIBUTE_PCI_BUS_ID) {
    *value = (int)vg_sim_device_pci_bus(phys);
    return true;
  }
  for (size_t i = 0; i < sizeof(g_attrs) / sizeof(g_attrs[0]); i++) {
    if (g_attrs[i].attr != attrib) continue;
    *value = g_attrs[i].value;
    return true;
  }
  *value = 0;
  return attrib >= 1 && attrib <= ATTR_LAST_KNOWN;
}

CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev) {
  CUresult rc = cu_ready();
  if (rc != CUDA_SUCCESS) return rc;
  if (pi == NULL) return CUDA_ERROR_INVALID_VALUE;
  unsigned phys;
  if ((rc = cu_device(dev, &phys)) != CUDA_SUCCESS) return rc;
  int value;
  if (!attr_value((int)attrib, phys, &value)) return CUDA_ERROR_INVALID_VALUE;
  *pi = value;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetPCIBusId(char *pciBusId, int len, CUdevice dev) {
  CUresult rc = cu_ready();
  if (rc != CUDA_SUCCESS) return rc;
  if (pciBusId == NULL || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  unsigned phys;
  if ((rc = cu_device(dev, &phys)) != CUDA_SUCCESS) return rc;
  snprintf(pciBusId, (size_t)len, "0000:%02X:00.0", vg_sim_device_pci_bus(phys));
  return CUDA_SUCCESS;
}
