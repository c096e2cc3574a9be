/*
 * hook_objects.c -- device memory that is not a plain pointer: CUDA arrays
 * (VMM allocations are in hook_vmm.c).
 *
 * Arrays are charged by their texel footprint rounded
 * to the 2 MiB page (the driver's exact tiling is private; this errs on the
 * side of charging more). A format we do not know is charged at 16 bytes per
 * element, the largest of the classic formats with 4 channels.
 */
#include <stdint.h>

#include "charge.h"
#include "hooks.h"
#include "state.h"

static uint64_t element_bytes(CUarray_format format, unsigned channels) {
  uint64_t size = 16; /* unknown format: the largest classic element */
  switch (format) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8:
      size = 1;
      break;
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF:
      size = 2;
      break;
    case CU_AD_FORMAT_UNSIGNED_INT32:
    case CU_AD_FORMAT_SIGNED_INT32:
    case CU_AD_FORMAT_FLOAT:
      size = 4;
      break;
    default:
      return size;
  }
  return size * (channels == 0 ? 1 : channels);
}

static uint64_t dim(size_t v) { return v == 0 ? 1 : (uint64_t)v; }

/* Bytes of one mip level; saturates instead of overflowing. */
static uint64_t level_bytes(uint64_t w, uint64_t h, uint64_t d, uint64_t elem) {
  uint64_t bytes = elem;
  uint64_t dims[3] = {w, h, d};
  for (int i = 0; i < 3; i++) {
    if (bytes > UINT64_MAX / dims[i]) return UINT64_MAX;
    bytes *= dims[i];
  }
  return bytes;
}

static uint64_t array3d_bytes(const CUDA_ARRAY3D_DESCRIPTOR *d, unsigned levels) {
  uint64_t elem = element_bytes(d->Format, d->NumChannels), total = 0;
  uint64_t w = dim(d->Width), h = dim(d->Height), depth = dim(d->Depth);
  /* Layers and cube faces do not shrink with the mip level. */
  bool layered = (d->Flags & (CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_CUBEMAP)) != 0;
  unsigned count = levels == 0 ? 1 : (levels > 32 ? 32 : levels); /* 2^32 texels is past any GPU */
  for (unsigned l = 0; l < count; l++) {
    uint64_t lw = w >> l ? w >> l : 1, lh = h >> l ? h >> l : 1;
    uint64_t ld = layered ? depth : (depth >> l ? depth >> l : 1);
    uint64_t b = level_bytes(lw, lh, ld, elem);
    total = total > UINT64_MAX - b ? UINT64_MAX : total + b;
  }
  return vg_charge_bytes(total);
}

#define VG_OBJECT_CREATE(kind, handle, bytes, call, destroy)                       \
  do {                                                                             \
    struct vg_charge c;                                                            \
    enum vg_charge_rc cr = vg_charge_begin(-1, bytes, &c);                         \
    if (vg_charge_error(cr) != CUDA_SUCCESS) return (CUresult)vg_charge_error(cr); \
    CUresult rc = (call);                                                          \
    if (rc != CUDA_SUCCESS) {                                                      \
      vg_charge_cancel(&c);                                                        \
      return rc;                                                                   \
    }                                                                              \
    if (!vg_charge_commit(&c, kind, (uint64_t)(uintptr_t) * (handle))) {           \
      destroy(*(handle));                                                          \
      return CUDA_ERROR_OUT_OF_MEMORY;                                             \
    }                                                                              \
    return rc;                                                                     \
  } while (0)

static void destroy_array(CUarray a) { VG_CU(cuArrayDestroy, a); }
static void destroy_mipmap(CUmipmappedArray m) { VG_CU(cuMipmappedArrayDestroy, m); }

VG_EXPORT CUresult cuArrayCreate_v2(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR *desc) {
  VG_ENTER();
  if (pHandle == NULL || desc == NULL) return VG_CU(cuArrayCreate_v2, pHandle, desc);
  CUDA_ARRAY3D_DESCRIPTOR d3 = {.Width = desc->Width,
                                .Height = desc->Height,
                                .Depth = 0,
                                .Format = desc->Format,
                                .NumChannels = desc->NumChannels};
  VG_OBJECT_CREATE(VG_ALLOC_ARRAY, pHandle, array3d_bytes(&d3, 1),
                   VG_CU(cuArrayCreate_v2, pHandle, desc), destroy_array);
}

VG_EXPORT CUresult cuArray3DCreate_v2(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *desc) {
  VG_ENTER();
  if (pHandle == NULL || desc == NULL) return VG_CU(cuArray3DCreate_v2, pHandle, desc);
  VG_OBJECT_CREATE(VG_ALLOC_ARRAY, pHandle, array3d_bytes(desc, 1),
                   VG_CU(cuArray3DCreate_v2, pHandle, desc), destroy_array);
}

VG_EXPORT CUresult cuMipmappedArrayCreate(CUmipmappedArray *pHandle,
                                          const CUDA_ARRAY3D_DESCRIPTOR *desc,
                                          unsigned int numMipmapLevels) {
  VG_ENTER();
  if (pHandle == NULL || desc == NULL)
    return VG_CU(cuMipmappedArrayCreate, pHandle, desc, numMipmapLevels);
  VG_OBJECT_CREATE(VG_ALLOC_MIPMAP, pHandle, array3d_bytes(desc, numMipmapLevels),
                   VG_CU(cuMipmappedArrayCreate, pHandle, desc, numMipmapLevels), destroy_mipmap);
}

VG_EXPORT CUresult cuArrayDestroy(CUarray hArray) {
  VG_ENTER();
  VG_FREE_AND_REFUND(VG_ALLOC_ARRAY, (uint64_t)(uintptr_t)hArray, VG_CU(cuArrayDestroy, hArray));
}

VG_EXPORT CUresult cuMipmappedArrayDestroy(CUmipmappedArray hMipmappedArray) {
  VG_ENTER();
  VG_FREE_AND_REFUND(VG_ALLOC_MIPMAP, (uint64_t)(uintptr_t)hMipmappedArray,
                     VG_CU(cuMipmappedArrayDestroy, hMipmappedArray));
}
