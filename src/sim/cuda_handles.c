/*
 * cuda_handles.c -- which handles are live.
 *
 * The driver API hands out opaque pointers (CUstream, CUevent, CUmodule...)
 * and a real driver rejects a handle it did not issue or has destroyed with
 * CUDA_ERROR_INVALID_HANDLE instead of crashing. The simulator keeps every
 * live handle object in one open-addressing hash set keyed by address, so a
 * lookup validates a handle without ever dereferencing a stale pointer. The
 * set has its own mutex and calls nothing while holding it.
 */
#include <stdlib.h>

#include "cuda_internal.h"

struct handle_set {
  pthread_mutex_t lock;
  struct cu_obj **slots; /* NULL: empty; TOMBSTONE: deleted */
  size_t cap;
  size_t used; /* live + tombstones */
};

static struct handle_set g_set = {.lock = PTHREAD_MUTEX_INITIALIZER};
static struct cu_obj g_tombstone;
#define TOMBSTONE (&g_tombstone)

static size_t hash_ptr(const void *p, size_t cap) {
  uintptr_t x = (uintptr_t)p;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  return (size_t)x & (cap - 1);
}

static void insert_raw(struct cu_obj **slots, size_t cap, struct cu_obj *obj) {
  size_t i = hash_ptr(obj, cap);
  while (slots[i] != NULL && slots[i] != TOMBSTONE) i = (i + 1) & (cap - 1);
  slots[i] = obj;
}

/* Rehashes without tombstones; doubles only when live handles need it. */
static void grow(void) {
  size_t live_before = 0;
  for (size_t i = 0; i < g_set.cap; i++)
    if (g_set.slots[i] != NULL && g_set.slots[i] != TOMBSTONE) live_before++;
  size_t cap = g_set.cap == 0 ? 256 : g_set.cap;
  if ((live_before + 1) * 4 > cap) cap *= 2;
  struct cu_obj **slots = calloc(cap, sizeof(*slots));
  if (slots == NULL) abort(); /* out of host memory in bookkeeping */
  size_t live = 0;
  for (size_t i = 0; i < g_set.cap; i++) {
    if (g_set.slots[i] == NULL || g_set.slots[i] == TOMBSTONE) continue;
    insert_raw(slots, cap, g_set.slots[i]);
    live++;
  }
  free(g_set.slots);
  g_set.slots = slots;
  g_set.cap = cap;
  g_set.used = live;
}

/* Index of p in the set, or SIZE_MAX. Caller holds the lock. */
static size_t find(const void *p) {
  if (g_set.cap == 0 || p == NULL) return SIZE_MAX;
  for (size_t i = hash_ptr(p, g_set.cap), n = 0; n < g_set.cap;
       n++, i = (i + 1) & (g_set.cap - 1)) {
    if (g_set.slots[i] == NULL) return SIZE_MAX;
    if (g_set.slots[i] == p) return i;
  }
  return SIZE_MAX;
}

void cu_handle_add(void *obj) {
  pthread_mutex_lock(&g_set.lock);
  if ((g_set.used + 1) * 2 > g_set.cap) grow();
  insert_raw(g_set.slots, g_set.cap, obj);
  g_set.used++;
  pthread_mutex_unlock(&g_set.lock);
}

void cu_handle_del(void *obj) {
  pthread_mutex_lock(&g_set.lock);
  size_t i = find(obj);
  if (i != SIZE_MAX) g_set.slots[i] = TOMBSTONE;
  pthread_mutex_unlock(&g_set.lock);
}

void *cu_handle_get(const void *p, enum cu_kind kind) {
  pthread_mutex_lock(&g_set.lock);
  size_t i = find(p);
  struct cu_obj *obj = i == SIZE_MAX ? NULL : g_set.slots[i];
  if (obj != NULL && obj->kind != kind) obj = NULL;
  pthread_mutex_unlock(&g_set.lock);
  return obj;
}

void *cu_handle_take(const void *p, enum cu_kind kind) {
  pthread_mutex_lock(&g_set.lock);
  size_t i = find(p);
  struct cu_obj *obj = i == SIZE_MAX ? NULL : g_set.slots[i];
  if (obj != NULL && obj->kind != kind) obj = NULL;
  if (obj != NULL) g_set.slots[i] = TOMBSTONE;
  pthread_mutex_unlock(&g_set.lock);
  return obj;
}

void cu_handles_of_ctx(struct CUctx_st *ctx, void (*fn)(struct cu_obj *)) {
  pthread_mutex_lock(&g_set.lock);
  struct cu_obj **found = calloc(g_set.cap + 1, sizeof(*found));
  size_t n = 0;
  for (size_t i = 0; found != NULL && i < g_set.cap; i++) {
    struct cu_obj *obj = g_set.slots[i];
    if (obj != NULL && obj != TOMBSTONE && obj->ctx == ctx) found[n++] = obj;
  }
  pthread_mutex_unlock(&g_set.lock);
  for (size_t i = 0; i < n; i++) fn(found[i]);
  free(found);
}
