/*
 * nvml_system.c -- system-wide NVML queries: driver versions, error strings.
 *
 * The simulator reports driver "580.00-sim" (so logs show at a glance
 * that no real GPU was involved) and CUDA driver version 13000, the same as
 * cuDriverGetVersion.
 */
#include <stdio.h>
#include <string.h>

#include "nvml_internal.h"

#define DRIVER_VERSION "580.00-sim" /* as long as a real one: nvidia-smi's box is 79 wide */

struct nv_error_text {
  nvmlReturn_t code;
  const char *text;
};

static const struct nv_error_text g_errors[] = {
    {NVML_SUCCESS, "Success"},
    {NVML_ERROR_UNINITIALIZED, "Uninitialized"},
    {NVML_ERROR_INVALID_ARGUMENT, "Invalid Argument"},
    {NVML_ERROR_NOT_SUPPORTED, "Not Supported"},
    {NVML_ERROR_NO_PERMISSION, "Insufficient Permissions"},
    {NVML_ERROR_ALREADY_INITIALIZED, "Already Initialized"},
    {NVML_ERROR_NOT_FOUND, "Not Found"},
    {NVML_ERROR_INSUFFICIENT_SIZE, "Insufficient Size"},
    {NVML_ERROR_DRIVER_NOT_LOADED, "Driver Not Loaded"},
    {NVML_ERROR_GPU_IS_LOST, "GPU is lost"},
    {NVML_ERROR_ARGUMENT_VERSION_MISMATCH, "Argument version mismatch"},
    {NVML_ERROR_UNKNOWN, "Unknown Error"},
};

const char *nvmlErrorString(nvmlReturn_t result) {
  for (size_t i = 0; i < sizeof(g_errors) / sizeof(g_errors[0]); i++)
    if (g_errors[i].code == result) return g_errors[i].text;
  return "Unknown Error";
}

nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length) {
  nvmlReturn_t rc = nv_ready();
  if (rc != NVML_SUCCESS) return rc;
  if (version == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  if (length < sizeof(DRIVER_VERSION)) return NVML_ERROR_INSUFFICIENT_SIZE;
  memcpy(version, DRIVER_VERSION, sizeof(DRIVER_VERSION));
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *cudaDriverVersion) {
  nvmlReturn_t rc = nv_ready();
  if (rc != NVML_SUCCESS) return rc;
  if (cudaDriverVersion == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  *cudaDriverVersion = VG_CUDA_API_VERSION;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *cudaDriverVersion) {
  return nvmlSystemGetCudaDriverVersion(cudaDriverVersion);
}
