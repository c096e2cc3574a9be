/*
 * cuda_array.c -- CUDA arrays and mipmapped arrays.
 *
 * Arrays have no pointer the program can see, but they occupy device memory:
 * round_up(width * max(height,1) * max(depth,1) * element size * channels,
 * 2 MiB), and for a mipmapped array the sum of its levels (each level halves
 * width, height and -- unless layered -- depth, never below 1) rounded the
 * same way. The memory is charged to the device while the array exists, and
 * the array belongs to the context that created it.
 */
#include <stdlib.h>

#include "cuda_internal.h"

/* Flags beyond CUDA_ARRAY3D_LAYERED/CUBEMAP that the driver accepts
 * (surface, texture gather, depth, colour attachment, sparse, ...). */
#define ARRAY3D_KNOWN_FLAGS 0xFFu

/* Both array kinds use this object; CUmipmappedArray handles point to one
 * with obj.kind == CU_OBJ_MIPMAP. */
struct CUarray_st {
  struct cu_obj obj;
  unsigned phys;
  uint64_t charged;
};

static uint64_t format_bytes(CUarray_format f) {
  switch (f) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8:
      return 1;
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF:
      return 2;
    case CU_AD_FORMAT_UNSIGNED_INT32:
    case CU_AD_FORMAT_SIGNED_INT32:
    case CU_AD_FORMAT_FLOAT:
      return 4;
  }
  return 0;
}

/* Bytes per element, 0 if format or channel count is invalid. */
static uint64_t element_bytes(CUarray_format f, unsigned channels) {
  if (channels != 1 && channels != 2 && channels != 4) return 0;
  return format_bytes(f) * channels;
}

/* a * b, saturating. */
static uint64_t mul_sat(uint64_t a, uint64_t b) {
  if (a != 0 && b > UINT64_MAX / a) return UINT64_MAX;
  return a * b;
}

static uint64_t at_least_1(uint64_t v) { return v == 0 ? 1 : v; }

static uint64_t extent_bytes(uint64_t w, uint64_t h, uint64_t d, uint64_t elem) {
  return mul_sat(mul_sat(mul_sat(w, at_least_1(h)), at_least_1(d)), elem);
}

/* Charges bytes and wraps them in a new array object of the given kind. */
static CUresult make_array(struct CUctx_st *ctx, uint64_t bytes, enum cu_kind kind, void **out) {
  uint64_t charged = cu_round_up(bytes, CU_GRANULE);
  struct CUarray_st *a = calloc(1, sizeof(*a));
  if (a == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  CUresult rc = cu_charge(ctx->phys, charged);
  if (rc != CUDA_SUCCESS) {
    free(a);
    return rc;
  }
  *a = (struct CUarray_st){{kind, ctx}, ctx->phys, charged};
  cu_handle_add(a);
  *out = a;
  return CUDA_SUCCESS;
}

CUresult cuArrayCreate_v2(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR *pAllocateArray) {
  struct CUctx_st *ctx;
  CUresult rc = cu_current(&ctx);
  if (rc != CUDA_SUCCESS) return rc;
  if (pHandle == NULL || pAllocateArray == NULL) return CUDA_ERROR_INVALID_VALUE;
  const CUDA_ARRAY_DESCRIPTOR *d = pAllocateArray;
  uint64_t elem = element_bytes(d->Format, d->NumChannels);
  if (elem == 0 || d->Width == 0) return CUDA_ERROR_INVALID_VALUE;
  void *out;
  rc = make_array(ctx, extent_bytes(d->Width, d->Height, 1, elem), CU_OBJ_ARRAY, &out);
  if (rc == CUDA_SUCCESS) *pHandle = out;
  return rc;
}

static bool desc3d_valid(const CUDA_ARRAY3D_DESCRIPTOR *d, uint64_t *elem) {
  *elem = element_bytes(d->Format, d->NumChannels);
  if (*elem == 0 || d->Width == 0 || (d->Flags & ~ARRAY3D_KNOWN_FLAGS) != 0) return false;
  if (d->Depth > 0 && d->Height == 0) return false;
  if (d->Flags & CUDA_ARRAY3D_CUBEMAP) {
    bool layered = d->Flags & CUDA_ARRAY3D_LAYERED;
    if (d->Width != d->Height || d->Depth == 0) return false;
    if (layered ? d->Depth % 6 != 0 : d->Depth != 6) return false;
  }
  return true;
}

CUresult cuArray3DCreate_v2(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *pAllocateArray) {
  struct CUctx_st *ctx;
  CUresult rc = cu_current(&ctx);
  if (rc != CUDA_SUCCESS) return rc;
  if (pHandle == NULL || pAllocateArray == NULL) return CUDA_ERROR_INVALID_VALUE;
  const CUDA_ARRAY3D_DESCRIPTOR *d = pAllocateArray;
  uint64_t elem;
  if (!desc3d_valid(d, &elem)) return CUDA_ERROR_INVALID_VALUE;
  void *out;
  rc = make_array(ctx, extent_bytes(d->Width, d->Height, d->Depth, elem), CU_OBJ_ARRAY, &out);
  if (rc == CUDA_SUCCESS) *pHandle = out;
  return rc;
}

static unsigned max_levels(const CUDA_ARRAY3D_DESCRIPTOR *d) {
  uint64_t m = d->Width;
  if (d->Height > m) m = d->Height;
  if (!(d->Flags & CUDA_ARRAY3D_LAYERED) && d->Depth > m) m = d->Depth;
  unsigned levels = 1;
  while (m > 1) {
    m >>= 1;
    levels++;
  }
  return levels;
}

static uint64_t halve(uint64_t v, unsigned level) {
  if (v == 0) return 0;
  uint64_t h = v >> level;
  return h == 0 ? 1 : h;
}

static uint64_t mipmap_bytes(const CUDA_ARRAY3D_DESCRIPTOR *d, unsigned levels, uint64_t elem) {
  bool layered = d->Flags & CUDA_ARRAY3D_LAYERED;
  uint64_t total = 0;
  for (unsigned l = 0; l < levels; l++) {
    uint64_t depth = layered ? d->Depth : halve(d->Depth, l);
    uint64_t b = extent_bytes(halve(d->Width, l), halve(d->Height, l), depth, elem);
    total = b > UINT64_MAX - total ? UINT64_MAX : total + b;
  }
  return total;
}

CUresult cuMipmappedArrayCreate(CUmipmappedArray *pHandle,
                                const CUDA_ARRAY3D_DESCRIPTOR *pMipmappedArrayDesc,
                                unsigned int numMipmapLevels) {
  struct CUctx_st *ctx;
  CUresult rc = cu_current(&ctx);
  if (rc != CUDA_SUCCESS) return rc;
  if (pHandle == NULL || pMipmappedArrayDesc == NULL) return CUDA_ERROR_INVALID_VALUE;
  const CUDA_ARRAY3D_DESCRIPTOR *d = pMipmappedArrayDesc;
  uint64_t elem;
  if (!desc3d_valid(d, &elem) || numMipmapLevels == 0 || numMipmapLevels > max_levels(d))
    return CUDA_ERROR_INVALID_VALUE;
  void *out;
  rc = make_array(ctx, mipmap_bytes(d, numMipmapLevels, elem), CU_OBJ_MIPMAP, &out);
  if (rc == CUDA_SUCCESS) *pHandle = out;
  return rc;
}

/* Frees an array already taken out of the handle set. */
static void free_array(struct CUarray_st *a) {
  cu_refund(a->phys, a->charged);
  free(a);
}

void cu_array_destroy(struct cu_obj *obj) {
  if (cu_handle_take(obj, obj->kind) != NULL) free_array((struct CUarray_st *)obj);
}

CUresult cuArrayDestroy(CUarray hArray) {
  CUresult rc = cu_ready();
  if (rc != CUDA_SUCCESS) return rc;
  struct CUarray_st *a = cu_handle_take(hArray, CU_OBJ_ARRAY);
  if (a == NULL) return CUDA_ERROR_INVALID_HANDLE;
  free_array(a);
  return CUDA_SUCCESS;
}

CUresult cuMipmappedArrayDestroy(CUmipmappedArray hMipmappedArray) {
  CUresult rc = cu_ready();
  if (rc != CUDA_SUCCESS) return rc;
  struct CUarray_st *a = cu_handle_take(hMipmappedArray, CU_OBJ_MIPMAP);
  if (a == NULL) return CUDA_ERROR_INVALID_HANDLE;
  free_array(a);
  return CUDA_SUCCESS;
}
