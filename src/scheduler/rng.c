/*
 * rng.c -- a small seeded generator (splitmix64) for shuffles and clone
 * draws, so that a replay is reproducible from its seed alone. (The paper's
 * artifact uses Go's math/rand; its exact sequence is not reproduced.)
 */
#include <string.h>

#include "trace.h"

void vg_rng_seed(struct vg_rng *r, uint64_t seed) { r->state = seed; }

uint64_t vg_rng_next(struct vg_rng *r) {
  uint64_t z = (r->state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint32_t vg_rng_below(struct vg_rng *r, uint32_t n) {
  return (uint32_t)(((vg_rng_next(r) >> 32) * (uint64_t)n) >> 32);
}

void vg_rng_shuffle(struct vg_rng *r, void *base, int n, size_t sz) {
  unsigned char *a = base, tmp[256];
  if (sz > sizeof(tmp)) return;
  for (int i = n - 1; i > 0; i--) {
    int j = (int)vg_rng_below(r, (uint32_t)i + 1);
    memcpy(tmp, a + (size_t)i * sz, sz);
    memcpy(a + (size_t)i * sz, a + (size_t)j * sz, sz);
    memcpy(a + (size_t)j * sz, tmp, sz);
  }
}
