/*
 * cuda_vmm.c -- virtual memory management: cuMemCreate, address reservations,
 * mappings and access.
 *
 * A physical allocation (cuMemCreate) is charged to the device at creation, in
 * multiples of the 2 MiB granularity. As in the real driver its memory is
 * returned only when the handle has been released AND every mapping of it
 * unmapped: the handle is reference counted by its creation and its mappings.
 *
 * A reservation is a PROT_NONE range of the process's address space; mapping
 * records which handle backs a part of it, and cuMemSetAccess makes that part
 * readable and writable so copies and sets work on it. Simplification: each
 * mapping is its own private memory, so two mappings of one handle do not
 * alias, and any non-zero access grants read and write.
 */
#include <stdlib.h>
#include <sys/mman.h>

#include "cuda_internal.h"

#define ACCESS_NONE 0
#define ACCESS_READ 1
#define ACCESS_READWRITE 3

struct vmm_handle {
  struct cu_obj obj;
  unsigned phys;
  uint64_t size;
  int refs; /* creation + mappings */
  bool released;
};

struct vmm_reservation {
  CUdeviceptr base;
  uint64_t size;
  void *map_base; /* what mmap returned (before alignment) */
  size_t map_len;
  struct vmm_reservation *next;
};

struct vmm_mapping {
  CUdeviceptr ptr;
  uint64_t size;
  struct vmm_handle *handle;
  bool accessible;
  struct vmm_mapping *next;
};

static pthread_mutex_t g_vmm_lock = PTHREAD_MUTEX_INITIALIZER;
static struct vmm_reservation *g_reservations;
static struct vmm_mapping *g_mappings;

static bool aligned(uint64_t v) { return v % CU_GRANULE == 0; }

/* Drops one reference; the last one gives the memory back. Lock held. */
static void handle_unref(struct vmm_handle *h) {
  if (--h->refs > 0) return;
  cu_refund(h->phys, h->size);
  cu_handle_del(h);
  free(h);
}

static CUresult check_location(const CUmemLocation *loc, unsigned *phys) {
  if (loc->type != CU_MEM_LOCATION_TYPE_DEVICE) return CUDA_ERROR_INVALID_VALUE;
  return cu_device(loc->id, phys);
}

CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                     const CUmemAllocationProp *prop, unsigned long long flags) {
  CUresult rc = cu_ready();
  if (rc != CUDA_SUCCESS) return rc;
  if (handle == NULL || prop == NULL || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (prop->type != CU_MEM_ALLOCATION_TYPE_PINNED || size == 0 || !aligned(size))
    return CUDA_ERROR_INVALID_VALUE;
  unsigned phys;
  if ((rc = check_location(&prop->location, &phys)) != CUDA_SUCCESS) return rc;
  struct vmm_handle *h = calloc(1, sizeof(*h));
  if (h == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  if ((rc = cu_charge(phys, size)) != CUDA_SUCCESS) {
    free(h);
    return rc;
  }
  *h = (struct vmm_handle){{CU_OBJ_VMM, NULL}, phys, size, 1, false};
  cu_handle_add(h);
  *handle = (CUmemGenericAllocationHandle)(uintptr_t)h;
  return CUDA_SUCCESS;
}

CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
  CUresult rc = cu_ready();
  if (rc != CUDA_SUCCESS) return rc;
  pthread_mutex_lock(&g_vmm_lock);
  struct vmm_handle *h = cu_handle_get((void *)(uintptr_t)handle, CU_OBJ_VMM);
  if (h == NULL || h->released) {
    rc = CUDA_ERROR_INVALID_VALUE;
  } else {
    h->released = true;
    handle_unref(h);
  }
  pthread_mutex_unlock(&g_vmm_lock);
  return rc;
}

CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr,
                             unsigned long long flags) {
  (void)addr; /* a hint only, as in CUDA */
  CUresult rc = cu_ready();
  if (rc != CUDA_SUCCESS) return rc;
  if (ptr == NULL || size == 0 || !aligned(size) || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if ((alignment & (alignment - 1)) != 0) return CUDA_ERROR_INVALID_VALUE;
  size_t align = alignment > CU_GRANULE ? alignment : CU_GRANULE;
  if (size > SIZE_MAX - align) return CUDA_ERROR_OUT_OF_MEMORY;
  struct vmm_reservation *r = calloc(1, sizeof(*r));
  if (r == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  r->map_len = size + align;
  r->map_base =
      mmap(NULL, r->map_len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (r->map_base == MAP_FAILED) {
    free(r);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  r->base = cu_round_up((uintptr_t)r->map_base, align);
  r->size = size;
  pthread_mutex_lock(&g_vmm_lock);
  r->next = g_reservations;
  g_reservations = r;
  pthread_mutex_unlock(&g_vmm_lock);
  *ptr = r->base;
  return CUDA_SUCCESS;
}

static void unmap_one(struct vmm_mapping **link) {
  struct vmm_mapping *m = *link;
  void *p = (void *)(uintptr_t)m->ptr;
  mprotect(p, m->size, PROT_NONE);
  madvise(p, m->size, MADV_DONTNEED);
  handle_unref(m->handle);
  *link = m->next;
  free(m);
}

/* Unmaps every mapping inside [ptr, ptr+size). Lock held. */
static void unmap_inside(CUdeviceptr ptr, uint64_t size) {
  for (struct vmm_mapping **link = &g_mappings; *link != NULL;) {
    if ((*link)->ptr >= ptr && (*link)->ptr + (*link)->size <= ptr + size)
      unmap_one(link);
    else
      link = &(*link)->next;
  }
}

CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size) {
  CUresult rc = cu_ready();
  if (rc != CUDA_SUCCESS) return rc;
  pthread_mutex_lock(&g_vmm_lock);
  struct vmm_reservation **link = &g_reservations;
  while (*link != NULL && ((*link)->base != ptr || (*link)->size != size)) link = &(*link)->next;
  struct vmm_reservation *r = *link;
  if (r != NULL) {
    unmap_inside(r->base, r->size);
    *link = r->next;
    munmap(r->map_base, r->map_len);
    free(r);
  }
  pthread_mutex_unlock(&g_vmm_lock);
  return r != NULL ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

static bool inside_reservation(CUdeviceptr ptr, uint64_t size) {
  for (const struct vmm_reservation *r = g_reservations; r != NULL; r = r->next)
    if (ptr >= r->base && size <= r->size && ptr - r->base <= r->size - size) return true;
  return false;
}

static bool overlaps_mapping(CUdeviceptr ptr, uint64_t size) {
  for (const struct vmm_mapping *m = g_mappings; m != NULL; m = m->next)
    if (ptr < m->ptr + m->size && m->ptr < ptr + size) return true;
  return false;
}

static CUresult map_locked(CUdeviceptr ptr, size_t size, size_t offset, struct vmm_handle *h) {
  if (h == NULL || h->released) return CUDA_ERROR_INVALID_VALUE;
  if (offset > h->size || size > h->size - offset) return CUDA_ERROR_INVALID_VALUE;
  if (!inside_reservation(ptr, size) || overlaps_mapping(ptr, size))
    return CUDA_ERROR_INVALID_VALUE;
  struct vmm_mapping *m = calloc(1, sizeof(*m));
  if (m == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  *m = (struct vmm_mapping){ptr, size, h, false, g_mappings};
  g_mappings = m;
  h->refs++;
  return CUDA_SUCCESS;
}

CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                  unsigned long long flags) {
  CUresult rc = cu_ready();
  if (rc != CUDA_SUCCESS) return rc;
  if (flags != 0 || size == 0 || !aligned(size) || !aligned(offset) || !aligned(ptr))
    return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&g_vmm_lock);
  rc = map_locked(ptr, size, offset, cu_handle_get((void *)(uintptr_t)handle, CU_OBJ_VMM));
  pthread_mutex_unlock(&g_vmm_lock);
  return rc;
}

/* True if some mapping straddles an edge of [ptr, ptr+size). Lock held. */
static bool straddles(CUdeviceptr ptr, uint64_t size) {
  for (const struct vmm_mapping *m = g_mappings; m != NULL; m = m->next) {
    bool overlap = ptr < m->ptr + m->size && m->ptr < ptr + size;
    if (overlap && (m->ptr < ptr || m->ptr + m->size > ptr + size)) return true;
  }
  return false;
}

CUresult cuMemUnmap(CUdeviceptr ptr, size_t size) {
  CUresult rc = cu_ready();
  if (rc != CUDA_SUCCESS) return rc;
  if (size == 0) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&g_vmm_lock);
  if (!overlaps_mapping(ptr, size) || straddles(ptr, size))
    rc = CUDA_ERROR_INVALID_VALUE;
  else
    unmap_inside(ptr, size);
  pthread_mutex_unlock(&g_vmm_lock);
  return rc;
}

static struct vmm_mapping *mapping_at(CUdeviceptr p) {
  for (struct vmm_mapping *m = g_mappings; m != NULL; m = m->next)
    if (p >= m->ptr && p < m->ptr + m->size) return m;
  return NULL;
}

/* True if mappings cover [ptr, ptr+n) without holes (and, if need_access,
 * all of them are accessible). Lock held. */
static bool covered(CUdeviceptr ptr, uint64_t n, bool need_access) {
  if (n == 0 || ptr > UINT64_MAX - n) return false;
  for (CUdeviceptr p = ptr; p < ptr + n;) {
    const struct vmm_mapping *m = mapping_at(p);
    if (m == NULL || (need_access && !m->accessible)) return false;
    p = m->ptr + m->size;
  }
  return true;
}

bool cu_vmm_range_ok(CUdeviceptr ptr, uint64_t n) {
  pthread_mutex_lock(&g_vmm_lock);
  bool ok = covered(ptr, n, true);
  pthread_mutex_unlock(&g_vmm_lock);
  return ok;
}

static CUresult check_access(const CUmemAccessDesc *desc, size_t count, bool *grant) {
  if (desc == NULL || count == 0) return CUDA_ERROR_INVALID_VALUE;
  *grant = false;
  for (size_t i = 0; i < count; i++) {
    unsigned phys;
    if (check_location(&desc[i].location, &phys) != CUDA_SUCCESS) return CUDA_ERROR_INVALID_VALUE;
    int f = desc[i].flags;
    if (f != ACCESS_NONE && f != ACCESS_READ && f != ACCESS_READWRITE)
      return CUDA_ERROR_INVALID_VALUE;
    if (f != ACCESS_NONE) *grant = true;
  }
  return CUDA_SUCCESS;
}

CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count) {
  CUresult rc = cu_ready();
  if (rc != CUDA_SUCCESS) return rc;
  bool grant;
  if ((rc = check_access(desc, count, &grant)) != CUDA_SUCCESS) return rc;
  pthread_mutex_lock(&g_vmm_lock);
  if (!covered(ptr, size, false)) {
    rc = CUDA_ERROR_INVALID_VALUE;
  } else {
    for (CUdeviceptr p = ptr; p < ptr + size;) {
      struct vmm_mapping *m = mapping_at(p);
      m->accessible = grant;
      mprotect((void *)(uintptr_t)m->ptr, m->size, grant ? PROT_READ | PROT_WRITE : PROT_NONE);
      p = m->ptr + m->size;
    }
  }
  pthread_mutex_unlock(&g_vmm_lock);
  return rc;
}

CUresult cuMemGetAllocationGranularity(size_t *granularity, const CUmemAllocationProp *prop,
                                       CUmemAllocationGranularity_flags option) {
  CUresult rc = cu_ready();
  if (rc != CUDA_SUCCESS) return rc;
  if (granularity == NULL || prop == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM && option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED)
    return CUDA_ERROR_INVALID_VALUE;
  unsigned phys;
  if ((rc = check_location(&prop->location, &phys)) != CUDA_SUCCESS) return rc;
  *granularity = CU_GRANULE;
  return CUDA_SUCCESS;
}
