/*
 * procaddr.c -- cuGetProcAddress, the third way programs reach the driver.
 *
 * Since CUDA 11.3 the runtime fetches every driver entry point through
 * cuGetProcAddress(symbol, &fn, cudaVersion, flags). The driver alone knows
 * which exported variant answers a base name for a given CUDA version and
 * default-stream mode (cuMemAlloc -> cuMemAlloc_v2; cuMemAllocAsync with
 * per-thread default stream -> cuMemAllocAsync_ptsz), so we let it decide:
 * we call the real cuGetProcAddress with the caller's exact arguments and,
 * if the pointer it returns is the driver's export of a function we replace,
 * hand back our hook for *that same export*. The requested version and the
 * flags are therefore honoured by construction.
 *
 * Should a driver return an internal pointer that is not one of its exports,
 * we fall back to our own table of (base name, first CUDA version, export,
 * per-thread export) for the functions we replace.
 */
#include <string.h>

#include "hooks.h"
#include "log.h"

struct variant {
  const char *base;
  int since;        /* first cudaVersion served by this export */
  const char *name; /* the export */
  const char *ptsz; /* per-thread-default-stream export, if any */
};

static const struct variant g_variants[] = {
    {"cuArray3DCreate", 3020, "cuArray3DCreate_v2", NULL},
    {"cuArrayCreate", 3020, "cuArrayCreate_v2", NULL},
    {"cuArrayDestroy", 2000, "cuArrayDestroy", NULL},
    {"cuCtxCreate", 3020, "cuCtxCreate_v2", NULL},
    {"cuCtxCreate", 11040, "cuCtxCreate_v3", NULL},
    {"cuCtxCreate", 12050, "cuCtxCreate_v4", NULL},
    {"cuCtxDestroy", 4000, "cuCtxDestroy_v2", NULL},
    {"cuCtxSynchronize", 2000, "cuCtxSynchronize", NULL},
    {"cuDeviceGetDefaultMemPool", 11020, "cuDeviceGetDefaultMemPool", NULL},
    {"cuDeviceGetMemPool", 11020, "cuDeviceGetMemPool", NULL},
    {"cuDevicePrimaryCtxRelease", 11000, "cuDevicePrimaryCtxRelease_v2", NULL},
    {"cuDevicePrimaryCtxReset", 11000, "cuDevicePrimaryCtxReset_v2", NULL},
    {"cuDevicePrimaryCtxRetain", 7000, "cuDevicePrimaryCtxRetain", NULL},
    {"cuDeviceTotalMem", 3020, "cuDeviceTotalMem_v2", NULL},
    {"cuGetProcAddress", 11030, "cuGetProcAddress", NULL},
    {"cuGetProcAddress", 12000, "cuGetProcAddress_v2", NULL},
    {"cuGraphLaunch", 10000, "cuGraphLaunch", "cuGraphLaunch_ptsz"},
    {"cuEventSynchronize", 2000, "cuEventSynchronize", NULL},
    {"cuInit", 2000, "cuInit", NULL},
    {"cuLaunchCooperativeKernel", 9000, "cuLaunchCooperativeKernel",
     "cuLaunchCooperativeKernel_ptsz"},
    {"cuLaunchKernel", 4000, "cuLaunchKernel", "cuLaunchKernel_ptsz"},
    {"cuLaunchKernelEx", 11060, "cuLaunchKernelEx", "cuLaunchKernelEx_ptsz"},
    {"cuMemAlloc", 3020, "cuMemAlloc_v2", NULL},
    {"cuMemAllocAsync", 11020, "cuMemAllocAsync", "cuMemAllocAsync_ptsz"},
    {"cuMemAllocFromPoolAsync", 11020, "cuMemAllocFromPoolAsync", "cuMemAllocFromPoolAsync_ptsz"},
    {"cuMemAllocManaged", 6000, "cuMemAllocManaged", NULL},
    {"cuMemAllocPitch", 3020, "cuMemAllocPitch_v2", NULL},
    {"cuMemCreate", 10020, "cuMemCreate", NULL},
    {"cuMemFree", 3020, "cuMemFree_v2", NULL},
    {"cuMemFreeAsync", 11020, "cuMemFreeAsync", "cuMemFreeAsync_ptsz"},
    {"cuMemGetInfo", 3020, "cuMemGetInfo_v2", NULL},
    {"cuMemMap", 10020, "cuMemMap", NULL},
    {"cuMemPoolCreate", 11020, "cuMemPoolCreate", NULL},
    {"cuMemPoolDestroy", 11020, "cuMemPoolDestroy", NULL},
    {"cuMemPoolTrimTo", 11020, "cuMemPoolTrimTo", NULL},
    {"cuMemRelease", 10020, "cuMemRelease", NULL},
    {"cuMemRetainAllocationHandle", 11000, "cuMemRetainAllocationHandle", NULL},
    {"cuMemUnmap", 10020, "cuMemUnmap", NULL},
    {"cuMipmappedArrayCreate", 5000, "cuMipmappedArrayCreate", NULL},
    {"cuMipmappedArrayDestroy", 5000, "cuMipmappedArrayDestroy", NULL},
    {"cuStreamSynchronize", 2000, "cuStreamSynchronize", "cuStreamSynchronize_ptsz"},
};

/* The export our table says serves (symbol, version, flags), or NULL. */
static const char *table_choice(const char *symbol, int version, unsigned long long flags) {
  const struct variant *best = NULL;
  for (size_t i = 0; i < sizeof(g_variants) / sizeof(g_variants[0]); i++) {
    const struct variant *v = &g_variants[i];
    if (strcmp(v->base, symbol) != 0 || v->since > version) continue;
    if (best == NULL || v->since > best->since) best = v;
  }
  if (best == NULL) return NULL;
  if ((flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) && best->ptsz != NULL)
    return best->ptsz;
  return best->name;
}

static void *redirect(const char *symbol, void *fn, int version, unsigned long long flags) {
  if (fn == NULL) return fn;
  void *hook = vg_hook_by_real(fn);
  if (hook != NULL) return hook;
  const char *name = table_choice(symbol, version, flags);
  if (name == NULL) return fn;
  vg_debug("cuGetProcAddress(%s, %d) returned a non-exported entry; using our %s", symbol, version,
           name);
  return vg_hook_by_name(name);
}

/* What both hooks do with the driver's answer. */
static CUresult finish(CUresult rc, const char *symbol, void **pfn, int version,
                       unsigned long long flags) {
  if (rc == CUDA_SUCCESS && pfn != NULL && symbol != NULL)
    *pfn = redirect(symbol, *pfn, version, flags);
  return rc;
}

VG_EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
                                    unsigned long long flags) {
  if (!vg_cuda_load()) return CUDA_ERROR_NOT_INITIALIZED;
  CUresult rc = VG_CU(cuGetProcAddress, symbol, pfn, cudaVersion, flags);
  return finish(rc, symbol, pfn, cudaVersion, flags);
}

VG_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                                       unsigned long long flags,
                                       CUdriverProcAddressQueryResult *symbolStatus) {
  if (!vg_cuda_load()) return CUDA_ERROR_NOT_INITIALIZED;
  CUresult rc = VG_CU(cuGetProcAddress_v2, symbol, pfn, cudaVersion, flags, symbolStatus);
  return finish(rc, symbol, pfn, cudaVersion, flags);
}
