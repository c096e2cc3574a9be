/*
 * alloc.c -- the --alloc loop (see alloc.h).
 *
 * Chunks are requested one at a time and recorded in a growing array so they
 * can all be freed at the end (or held with --hold while another process
 * looks at the usage). With --touch each chunk is written once, which on a
 * real GPU makes the pages resident; a final cuCtxSynchronize surfaces any
 * asynchronous error from those writes.
 */
#include "alloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu.h"

static int remember(struct burn_alloc *a, CUdeviceptr p) {
  if (a->count == a->cap) {
    size_t cap = a->cap ? a->cap * 2 : 64;
    CUdeviceptr *grown = realloc(a->ptrs, cap * sizeof(*grown));
    if (grown == NULL) {
      fprintf(stderr, "vgpu-burn: out of host memory recording chunk %zu\n", a->count);
      return -1;
    }
    a->ptrs = grown;
    a->cap = cap;
  }
  a->ptrs[a->count++] = p;
  return 0;
}

/* One chunk. Returns 0 on success, 1 on OOM, -1 on any other failure. */
static int alloc_chunk(struct burn_alloc *a, size_t size, int touch) {
  CUdeviceptr p = 0;
  CUresult r = vg_cu.cuMemAlloc_v2(&p, size);
  if (r == CUDA_ERROR_OUT_OF_MEMORY) return 1;
  if (burn_check(r, "cuMemAlloc_v2")) return -1;
  if (remember(a, p) != 0) {
    vg_cu.cuMemFree_v2(p);
    return -1;
  }
  a->bytes += size;
  if (touch && burn_check(vg_cu.cuMemsetD8_v2(p, 0xa5, size), "cuMemsetD8_v2")) return -1;
  return 0;
}

int burn_alloc_run(const struct burn_opts *o, struct burn_alloc *a) {
  memset(a, 0, sizeof(*a));
  if (o->chunk_bytes > SIZE_MAX) {
    fprintf(stderr, "vgpu-burn: --chunk is larger than this machine's size_t\n");
    return -1;
  }
  while (a->bytes < o->alloc_bytes && !burn_stop) {
    uint64_t left = o->alloc_bytes - a->bytes;
    size_t size = (size_t)(left < o->chunk_bytes ? left : o->chunk_bytes);
    int rc = alloc_chunk(a, size, o->touch);
    if (rc < 0) return -1;
    if (rc > 0) {
      a->oom = 1;
      break;
    }
  }
  if (o->touch && a->count > 0 && burn_check(vg_cu.cuCtxSynchronize(), "cuCtxSynchronize"))
    return -1;
  return 0;
}

int burn_alloc_free(struct burn_alloc *a) {
  int rc = 0;
  for (size_t i = 0; i < a->count; i++) {
    if (burn_check(vg_cu.cuMemFree_v2(a->ptrs[i]), "cuMemFree_v2")) rc = -1;
  }
  free(a->ptrs);
  memset(a, 0, sizeof(*a));
  return rc;
}
