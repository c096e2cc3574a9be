/*
 * cuda_procaddr.c -- cuGetProcAddress and cuGetProcAddress_v2.
 *
 * Since CUDA 11.3 the runtime fetches every driver entry point through
 * cuGetProcAddress(base name, cudaVersion, flags). The driver keeps a table
 * of (base name, first CUDA version, symbol, per-thread-stream symbol) and
 * answers with the newest variant the caller's version knows: asking for
 * "cuMemAlloc" at 12000 gives cuMemAlloc_v2, "cuCtxCreate" at 12050 gives
 * cuCtxCreate_v4; with CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM the
 * _ptsz variant where one exists. A name the table lacks is SYMBOL_NOT_FOUND;
 * a name whose first version is newer than asked is VERSION_NOT_SUFFICIENT.
 *
 * The pointers are the exported functions themselves (the library is linked
 * -Bsymbolic), so they equal what dlsym on this library returns -- an
 * LD_PRELOADed interposer cannot hide in them.
 */
#include <string.h>

#include "cuda_internal.h"

struct proc_entry {
  const char *name;
  int version;
  void *fn;
  void *ptsz; /* per-thread default stream variant, or NULL */
};

#define E(name, version, fn) \
  { name, version, (void *)fn, NULL }
#define P(name, version, fn, ptsz) \
  { name, version, (void *)fn, (void *)ptsz }

static const struct proc_entry g_table[] = {
    E("cuInit", 2000, cuInit),
    E("cuDriverGetVersion", 2000, cuDriverGetVersion),
    E("cuGetErrorString", 2000, cuGetErrorString),
    E("cuGetErrorName", 2000, cuGetErrorName),
    E("cuGetProcAddress", 11030, cuGetProcAddress),
    E("cuGetProcAddress", 12000, cuGetProcAddress_v2),
    E("cuDeviceGet", 2000, cuDeviceGet),
    E("cuDeviceGetCount", 2000, cuDeviceGetCount),
    E("cuDeviceGetName", 2000, cuDeviceGetName),
    E("cuDeviceGetUuid", 2000, cuDeviceGetUuid),
    E("cuDeviceGetUuid", 11040, cuDeviceGetUuid_v2),
    E("cuDeviceTotalMem", 3020, cuDeviceTotalMem_v2),
    E("cuDeviceGetAttribute", 2000, cuDeviceGetAttribute),
    E("cuDeviceGetPCIBusId", 2000, cuDeviceGetPCIBusId),
    E("cuDevicePrimaryCtxRetain", 2000, cuDevicePrimaryCtxRetain),
    E("cuDevicePrimaryCtxRelease", 11000, cuDevicePrimaryCtxRelease_v2),
    E("cuDevicePrimaryCtxReset", 11000, cuDevicePrimaryCtxReset_v2),
    E("cuDevicePrimaryCtxGetState", 2000, cuDevicePrimaryCtxGetState),
    E("cuDevicePrimaryCtxSetFlags", 11000, cuDevicePrimaryCtxSetFlags_v2),
    E("cuCtxCreate", 3020, cuCtxCreate_v2),
    E("cuCtxCreate", 12050, cuCtxCreate_v4),
    E("cuCtxDestroy", 4000, cuCtxDestroy_v2),
    E("cuCtxSetCurrent", 2000, cuCtxSetCurrent),
    E("cuCtxGetCurrent", 2000, cuCtxGetCurrent),
    E("cuCtxPushCurrent", 4000, cuCtxPushCurrent_v2),
    E("cuCtxPopCurrent", 4000, cuCtxPopCurrent_v2),
    E("cuCtxGetDevice", 2000, cuCtxGetDevice),
    E("cuCtxSynchronize", 2000, cuCtxSynchronize),
    E("cuMemGetInfo", 3020, cuMemGetInfo_v2),
    E("cuMemAlloc", 3020, cuMemAlloc_v2),
    E("cuMemAllocPitch", 3020, cuMemAllocPitch_v2),
    E("cuMemAllocManaged", 6000, cuMemAllocManaged),
    E("cuMemFree", 3020, cuMemFree_v2),
    E("cuMemAllocHost", 3020, cuMemAllocHost_v2),
    E("cuMemFreeHost", 2000, cuMemFreeHost),
    E("cuMemcpyHtoD", 3020, cuMemcpyHtoD_v2),
    E("cuMemcpyDtoH", 3020, cuMemcpyDtoH_v2),
    E("cuMemsetD8", 3020, cuMemsetD8_v2),
    E("cuMemsetD32", 3020, cuMemsetD32_v2),
    P("cuMemAllocAsync", 11020, cuMemAllocAsync, cuMemAllocAsync_ptsz),
    P("cuMemAllocFromPoolAsync", 11020, cuMemAllocFromPoolAsync, cuMemAllocFromPoolAsync_ptsz),
    P("cuMemFreeAsync", 11020, cuMemFreeAsync, cuMemFreeAsync_ptsz),
    E("cuMemPoolCreate", 11020, cuMemPoolCreate),
    E("cuMemPoolDestroy", 11020, cuMemPoolDestroy),
    E("cuDeviceGetDefaultMemPool", 11020, cuDeviceGetDefaultMemPool),
    E("cuDeviceGetMemPool", 11020, cuDeviceGetMemPool),
    E("cuDeviceSetMemPool", 11020, cuDeviceSetMemPool),
    E("cuMemPoolSetAttribute", 11020, cuMemPoolSetAttribute),
    E("cuMemPoolGetAttribute", 11020, cuMemPoolGetAttribute),
    E("cuMemPoolTrimTo", 11020, cuMemPoolTrimTo),
    E("cuMemCreate", 10020, cuMemCreate),
    E("cuMemRelease", 10020, cuMemRelease),
    E("cuMemAddressReserve", 10020, cuMemAddressReserve),
    E("cuMemAddressFree", 10020, cuMemAddressFree),
    E("cuMemMap", 10020, cuMemMap),
    E("cuMemUnmap", 10020, cuMemUnmap),
    E("cuMemSetAccess", 10020, cuMemSetAccess),
    E("cuMemGetAllocationGranularity", 10020, cuMemGetAllocationGranularity),
    E("cuArrayCreate", 3020, cuArrayCreate_v2),
    E("cuArray3DCreate", 3020, cuArray3DCreate_v2),
    E("cuArrayDestroy", 2000, cuArrayDestroy),
    E("cuMipmappedArrayCreate", 2000, cuMipmappedArrayCreate),
    E("cuMipmappedArrayDestroy", 2000, cuMipmappedArrayDestroy),
    E("cuStreamCreate", 2000, cuStreamCreate),
    E("cuStreamDestroy", 4000, cuStreamDestroy_v2),
    P("cuStreamGetCtx", 9020, cuStreamGetCtx, cuStreamGetCtx_ptsz),
    P("cuStreamSynchronize", 2000, cuStreamSynchronize, cuStreamSynchronize_ptsz),
    E("cuEventCreate", 2000, cuEventCreate),
    P("cuEventRecord", 2000, cuEventRecord, cuEventRecord_ptsz),
    E("cuEventSynchronize", 2000, cuEventSynchronize),
    E("cuEventElapsedTime", 2000, cuEventElapsedTime),
    E("cuEventElapsedTime", 12080, cuEventElapsedTime_v2),
    E("cuEventDestroy", 4000, cuEventDestroy_v2),
    E("cuModuleLoadData", 2000, cuModuleLoadData),
    E("cuModuleGetFunction", 2000, cuModuleGetFunction),
    E("cuModuleUnload", 2000, cuModuleUnload),
    P("cuLaunchKernel", 4000, cuLaunchKernel, cuLaunchKernel_ptsz),
    P("cuLaunchKernelEx", 11060, cuLaunchKernelEx, cuLaunchKernelEx_ptsz),
    P("cuLaunchCooperativeKernel", 9000, cuLaunchCooperativeKernel, cuLaunchCooperativeKernel_ptsz),
    E("cuEventQuery", 2000, cuEventQuery),
    P("cuStreamQuery", 2000, cuStreamQuery, cuStreamQuery_ptsz),
    E("cuGraphCreate", 10000, cuGraphCreate),
    E("cuGraphAddKernelNode", 10000, cuGraphAddKernelNode),
    E("cuGraphAddKernelNode", 12000, cuGraphAddKernelNode_v2),
    E("cuGraphInstantiateWithFlags", 11040, cuGraphInstantiateWithFlags),
    P("cuGraphLaunch", 10000, cuGraphLaunch, cuGraphLaunch_ptsz),
    E("cuGraphExecDestroy", 10000, cuGraphExecDestroy),
    E("cuGraphDestroy", 10000, cuGraphDestroy),
    P("cuStreamBeginCapture", 10010, cuStreamBeginCapture_v2, cuStreamBeginCapture_v2_ptsz),
    P("cuStreamEndCapture", 10000, cuStreamEndCapture, cuStreamEndCapture_ptsz),
    P("cuStreamIsCapturing", 10000, cuStreamIsCapturing, cuStreamIsCapturing_ptsz),
};

/* The newest entry for name usable at version; *known says if name exists. */
static const struct proc_entry *lookup(const char *name, int version, bool *known) {
  const struct proc_entry *best = NULL;
  *known = false;
  for (size_t i = 0; i < sizeof(g_table) / sizeof(g_table[0]); i++) {
    const struct proc_entry *e = &g_table[i];
    if (strcmp(e->name, name) != 0) continue;
    *known = true;
    if (e->version <= version && (best == NULL || e->version > best->version)) best = e;
  }
  return best;
}

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                             unsigned long long flags,
                             CUdriverProcAddressQueryResult *symbolStatus) {
  if (symbol == NULL || pfn == NULL) return CUDA_ERROR_INVALID_VALUE;
  if ((flags & ~(unsigned long long)(CU_GET_PROC_ADDRESS_LEGACY_STREAM |
                                     CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)) != 0)
    return CUDA_ERROR_INVALID_VALUE;
  bool known;
  const struct proc_entry *e = lookup(symbol, cudaVersion, &known);
  if (e == NULL) {
    *pfn = NULL;
    if (symbolStatus != NULL)
      *symbolStatus =
          known ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return CUDA_ERROR_NOT_FOUND;
  }
  bool per_thread = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
  *pfn = per_thread && e->ptsz != NULL ? e->ptsz : e->fn;
  if (symbolStatus != NULL) *symbolStatus = CU_GET_PROC_ADDRESS_SUCCESS;
  return CUDA_SUCCESS;
}

CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
                          unsigned long long flags) {
  return cuGetProcAddress_v2(symbol, pfn, cudaVersion, flags, NULL);
}
