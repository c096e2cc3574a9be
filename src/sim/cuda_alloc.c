/*
 * cuda_alloc.c -- device memory: what it costs, and the pointers behind it.
 *
 * Cost: every allocation takes round_up(size, 2 MiB) of the device's memory
 * in the shared state (libvgpu charges the same granule), so what one process
 * allocates is gone for every other process on the machine.
 *
 * Pointers: for each device the process reserves, on first use, an address
 * range of twice the device's memory (PROT_READ|PROT_WRITE, MAP_NORESERVE, so
 * untouched pages cost nothing) and carves it into 2 MiB pages with a
 * first-fit bitmap allocator. Device pointers are therefore real addresses:
 * cuMemcpy and cuMemset really move bytes, and a pointer can be checked
 * against the allocation that owns its page. Freed ranges are returned to the
 * kernel with MADV_DONTNEED, so a new allocation reads as zeroes.
 *
 * Fault injection: with VGPU_SIM_FAIL_ALLOC_AFTER=N the allocation after N
 * successful ones in this process fails once with CUDA_ERROR_OUT_OF_MEMORY,
 * so callers can test their refund paths.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "cuda_internal.h"
#include "log.h"

struct va_space {
  uint8_t *base;
  uint64_t pages;
  uint64_t *bitmap; /* 1: page in use */
  uint32_t *owner;  /* page -> record index + 1 */
  uint64_t hint;    /* where the next search starts */
};

struct alloc_rec {
  CUdeviceptr base;
  uint64_t size; /* as requested: the valid byte range */
  uint64_t charged;
  uint64_t first, npages;
  struct CUctx_st *ctx;
  struct CUmemPoolHandle_st *pool; /* NULL: not from a pool */
  unsigned phys;
  bool live;
  uint32_t next_free;
};

static pthread_mutex_t g_alloc_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t g_fault_lock = PTHREAD_MUTEX_INITIALIZER;
static struct va_space g_va[VG_SIM_MAX_DEVICES];
static struct alloc_rec *g_recs;
static uint32_t g_nrecs, g_caprecs, g_free_head; /* free list of records, index + 1 */
static bool g_fault_fired;

/* ---- fault injection and charges ---- */

static bool fault_due(void) {
  if (!g_cu.fail_alloc_set) return false;
  pthread_mutex_lock(&g_fault_lock);
  bool due = !g_fault_fired && g_cu.allocs_done == g_cu.fail_alloc_after;
  if (due) g_fault_fired = true;
  pthread_mutex_unlock(&g_fault_lock);
  return due;
}

CUresult cu_charge(unsigned phys, uint64_t bytes) {
  if (fault_due()) {
    vg_info("simulated GPU: VGPU_SIM_FAIL_ALLOC_AFTER=%llu: failing this allocation",
            (unsigned long long)g_cu.fail_alloc_after);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  if (!vg_sim_charge(&g_cu.sim, phys, bytes)) return CUDA_ERROR_OUT_OF_MEMORY;
  pthread_mutex_lock(&g_fault_lock);
  g_cu.allocs_done++;
  pthread_mutex_unlock(&g_fault_lock);
  return CUDA_SUCCESS;
}

void cu_refund(unsigned phys, uint64_t bytes) { vg_sim_refund(&g_cu.sim, phys, bytes); }

/* ---- the page bitmap ---- */

static bool page_used(const struct va_space *va, uint64_t p) {
  return (va->bitmap[p / 64] >> (p % 64)) & 1u;
}

static void mark_pages(struct va_space *va, uint64_t first, uint64_t n, uint32_t owner) {
  for (uint64_t p = first; p < first + n; p++) {
    if (owner != 0)
      va->bitmap[p / 64] |= 1ull << (p % 64);
    else
      va->bitmap[p / 64] &= ~(1ull << (p % 64));
    va->owner[p] = owner;
  }
}

/* First page of a run of n free pages in [from, to), or UINT64_MAX. */
static uint64_t find_run(const struct va_space *va, uint64_t from, uint64_t to, uint64_t n) {
  uint64_t i = from;
  while (i + n <= to) {
    if (i % 64 == 0 && va->bitmap[i / 64] == UINT64_MAX) {
      i += 64;
      continue;
    }
    uint64_t j = i;
    while (j < i + n && !page_used(va, j)) j++;
    if (j == i + n) return i;
    i = j + 1;
  }
  return UINT64_MAX;
}

static bool reserve_va(struct va_space *va, unsigned phys) {
  if (va->base != NULL) return true;
  uint64_t pages = 2 * cu_round_up(g_cu.sim.st->dev[phys].mem_total, CU_GRANULE) / CU_GRANULE;
  void *base = mmap(NULL, pages * CU_GRANULE, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (base == MAP_FAILED) {
    vg_error("simulated GPU: cannot reserve %llu bytes of address space for device %u",
             (unsigned long long)(pages * CU_GRANULE), phys);
    return false;
  }
  va->bitmap = calloc((pages + 63) / 64, sizeof(uint64_t));
  va->owner = calloc(pages, sizeof(uint32_t));
  if (va->bitmap == NULL || va->owner == NULL) abort();
  va->base = base;
  va->pages = pages;
  return true;
}

/* ---- the record table ---- */

static uint32_t new_record(void) {
  if (g_free_head != 0) {
    uint32_t i = g_free_head - 1;
    g_free_head = g_recs[i].next_free;
    return i;
  }
  if (g_nrecs == g_caprecs) {
    g_caprecs = g_caprecs == 0 ? 256 : g_caprecs * 2;
    g_recs = realloc(g_recs, g_caprecs * sizeof(*g_recs));
    if (g_recs == NULL) abort();
  }
  return g_nrecs++;
}

static void drop_record(uint32_t i) {
  g_recs[i].live = false;
  g_recs[i].next_free = g_free_head;
  g_free_head = i + 1;
}

/* The record whose page holds ptr, or NULL. Caller holds g_alloc_lock. */
static struct alloc_rec *lookup(CUdeviceptr ptr) {
  for (unsigned d = 0; d < VG_SIM_MAX_DEVICES; d++) {
    const struct va_space *va = &g_va[d];
    uintptr_t base = (uintptr_t)va->base;
    if (va->base == NULL || ptr < base || ptr >= base + va->pages * CU_GRANULE) continue;
    uint32_t owner = va->owner[(ptr - base) / CU_GRANULE];
    return owner != 0 && g_recs[owner - 1].live ? &g_recs[owner - 1] : NULL;
  }
  return NULL;
}

/* Places an allocation of npages; false if the address space is exhausted. */
static bool place(struct CUctx_st *ctx, unsigned phys, uint64_t size, uint64_t npages,
                  CUdeviceptr *out) {
  struct va_space *va = &g_va[phys];
  if (!reserve_va(va, phys)) return false;
  uint64_t first = find_run(va, va->hint, va->pages, npages);
  if (first == UINT64_MAX) first = find_run(va, 0, va->pages, npages);
  if (first == UINT64_MAX) return false;
  uint32_t i = new_record();
  struct alloc_rec *r = &g_recs[i];
  *r = (struct alloc_rec){(uintptr_t)(va->base + first * CU_GRANULE),
                          size,
                          npages * CU_GRANULE,
                          first,
                          npages,
                          ctx,
                          NULL,
                          phys,
                          true,
                          0};
  mark_pages(va, first, npages, i + 1);
  va->hint = first + npages;
  *out = r->base;
  return true;
}

CUresult cu_alloc(struct CUctx_st *ctx, unsigned phys, uint64_t size, CUdeviceptr *out) {
  uint64_t charged = cu_round_up(size, CU_GRANULE);
  CUresult rc = cu_charge(phys, charged);
  if (rc != CUDA_SUCCESS) return rc;
  pthread_mutex_lock(&g_alloc_lock);
  bool ok = place(ctx, phys, size, charged / CU_GRANULE, out);
  pthread_mutex_unlock(&g_alloc_lock);
  if (!ok) {
    cu_refund(phys, charged);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  return CUDA_SUCCESS;
}

CUresult cu_alloc_pooled(struct CUctx_st *ctx, struct CUmemPoolHandle_st *pool, uint64_t size,
                         CUdeviceptr *out) {
  uint64_t charged = cu_round_up(size, CU_GRANULE);
  pthread_mutex_lock(&g_alloc_lock);
  bool ok = place(ctx, pool->phys, size, charged / CU_GRANULE, out);
  if (ok) lookup(*out)->pool = pool;
  pthread_mutex_unlock(&g_alloc_lock);
  return ok ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

/* Gives a released record's bytes back: to its pool, or to the device. */
static void give_back(struct CUmemPoolHandle_st *pool, unsigned phys, uint64_t bytes, bool keep) {
  if (pool != NULL)
    cu_pool_return(pool, bytes, keep);
  else
    cu_refund(phys, bytes);
}

/* Releases a live record; returns what to refund. Caller holds the lock. */
static uint64_t release(struct alloc_rec *r) {
  struct va_space *va = &g_va[r->phys];
  madvise((void *)(uintptr_t)r->base, r->npages * CU_GRANULE, MADV_DONTNEED);
  mark_pages(va, r->first, r->npages, 0);
  if (r->first < va->hint) va->hint = r->first;
  drop_record((uint32_t)(r - g_recs));
  return r->charged;
}

CUresult cu_free(CUdeviceptr ptr) { return cu_free_to_pool(ptr, false); }

CUresult cu_free_to_pool(CUdeviceptr ptr, bool keep) {
  pthread_mutex_lock(&g_alloc_lock);
  struct alloc_rec *r = lookup(ptr);
  if (r == NULL || r->base != ptr) {
    pthread_mutex_unlock(&g_alloc_lock);
    return CUDA_ERROR_INVALID_VALUE;
  }
  unsigned phys = r->phys;
  struct CUmemPoolHandle_st *pool = r->pool;
  uint64_t bytes = release(r);
  pthread_mutex_unlock(&g_alloc_lock);
  give_back(pool, phys, bytes, keep);
  return CUDA_SUCCESS;
}

void cu_free_ctx_allocs(struct CUctx_st *ctx) {
  pthread_mutex_lock(&g_alloc_lock);
  for (uint32_t i = 0; i < g_nrecs; i++) {
    if (!g_recs[i].live || g_recs[i].ctx != ctx) continue;
    unsigned phys = g_recs[i].phys;
    struct CUmemPoolHandle_st *pool = g_recs[i].pool;
    give_back(pool, phys, release(&g_recs[i]), false);
  }
  pthread_mutex_unlock(&g_alloc_lock);
}

bool cu_range_ok(CUdeviceptr ptr, uint64_t n) {
  pthread_mutex_lock(&g_alloc_lock);
  const struct alloc_rec *r = lookup(ptr);
  bool ok = r != NULL && n <= r->size && ptr - r->base <= r->size - n;
  pthread_mutex_unlock(&g_alloc_lock);
  return ok || cu_vmm_range_ok(ptr, n);
}
