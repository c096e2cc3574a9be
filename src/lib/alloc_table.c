/* alloc_table.c -- see alloc_table.h. Linear probing with backward-shift
 * deletion (no tombstones), grown at 50 % load. One process-local mutex: the
 * critical sections are a few dozen instructions. */
#include "alloc_table.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

struct slot {
  uint64_t key;
  uint32_t kind; /* 0: empty */
  int32_t dev;
  uint64_t bytes;
  uint64_t ctx;
  uint64_t link;
  uint32_t refs, maps;
};

static struct vg_alloc value_of(const struct slot *s) {
  return (struct vg_alloc){.dev = s->dev,
                           .bytes = s->bytes,
                           .ctx = s->ctx,
                           .link = s->link,
                           .refs = s->refs,
                           .maps = s->maps};
}

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static struct slot *g_slots;
static size_t g_cap, g_count;

static size_t hash(uint32_t kind, uint64_t key) {
  uint64_t h = (key ^ ((uint64_t)kind << 59)) * 0x9E3779B97F4A7C15ULL;
  return (size_t)(h >> 20);
}

/* mmap, not malloc: this runs inside the host program, whose allocator we
 * neither want to disturb nor re-enter. */
static struct slot *new_array(size_t cap) {
  void *p = mmap(NULL, cap * sizeof(struct slot), PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? NULL : p;
}

static void insert_raw(struct slot *slots, size_t cap, struct slot s) {
  size_t i = hash(s.kind, s.key) & (cap - 1);
  while (slots[i].kind != 0) i = (i + 1) & (cap - 1);
  slots[i] = s;
}

static bool grow(void) {
  size_t cap = g_cap ? g_cap * 2 : 1024;
  struct slot *slots = new_array(cap);
  if (slots == NULL) return false;
  for (size_t i = 0; i < g_cap; i++)
    if (g_slots[i].kind != 0) insert_raw(slots, cap, g_slots[i]);
  if (g_slots != NULL) munmap(g_slots, g_cap * sizeof(struct slot));
  g_slots = slots;
  g_cap = cap;
  return true;
}

static struct slot *find(uint32_t kind, uint64_t key) {
  if (g_cap == 0) return NULL;
  size_t i = hash(kind, key) & (g_cap - 1);
  while (g_slots[i].kind != 0) {
    if (g_slots[i].key == key && g_slots[i].kind == kind) return &g_slots[i];
    i = (i + 1) & (g_cap - 1);
  }
  return NULL;
}

/* Backward-shift deletion keeps every probe chain unbroken. */
static void erase(struct slot *s) {
  size_t hole = (size_t)(s - g_slots), i = hole;
  for (;;) {
    i = (i + 1) & (g_cap - 1);
    if (g_slots[i].kind == 0) break;
    size_t home = hash(g_slots[i].kind, g_slots[i].key) & (g_cap - 1);
    if (((i - home) & (g_cap - 1)) >= ((i - hole) & (g_cap - 1))) {
      g_slots[hole] = g_slots[i];
      hole = i;
    }
  }
  g_slots[hole].kind = 0;
  g_count--;
}

int vg_alloc_put(enum vg_alloc_kind kind, uint64_t key, struct vg_alloc value,
                 struct vg_alloc *replaced) {
  struct slot s = {.key = key,
                   .kind = (uint32_t)kind,
                   .dev = value.dev,
                   .bytes = value.bytes,
                   .ctx = value.ctx,
                   .link = value.link,
                   .refs = value.refs,
                   .maps = value.maps};
  int rc = 0;
  pthread_mutex_lock(&g_lock);
  struct slot *old = find(s.kind, key);
  if (old != NULL) {
    *replaced = value_of(old);
    *old = s;
    rc = 1;
  } else if ((g_count + 1) * 2 > g_cap && !grow()) {
    rc = -1;
  } else {
    insert_raw(g_slots, g_cap, s);
    g_count++;
  }
  pthread_mutex_unlock(&g_lock);
  return rc;
}

static bool lookup(enum vg_alloc_kind kind, uint64_t key, struct vg_alloc *value, bool remove) {
  pthread_mutex_lock(&g_lock);
  struct slot *s = find((uint32_t)kind, key);
  if (s != NULL) {
    *value = value_of(s);
    if (remove) erase(s);
  }
  pthread_mutex_unlock(&g_lock);
  return s != NULL;
}

bool vg_alloc_take(enum vg_alloc_kind kind, uint64_t key, struct vg_alloc *value) {
  return lookup(kind, key, value, true);
}

bool vg_alloc_get(enum vg_alloc_kind kind, uint64_t key, struct vg_alloc *value) {
  return lookup(kind, key, value, false);
}

static bool dies_with_context(const struct slot *s, uint64_t ctx) {
  return s->ctx == ctx &&
         (s->kind == VG_ALLOC_MEMORY || s->kind == VG_ALLOC_ARRAY || s->kind == VG_ALLOC_MIPMAP);
}

void vg_alloc_drop_context(uint64_t ctx, uint64_t freed[], int ndev) {
  if (ctx == 0) return;
  pthread_mutex_lock(&g_lock);
  for (size_t i = 0; i < g_cap;) {
    struct slot *s = &g_slots[i];
    if (s->kind == 0 || !dies_with_context(s, ctx)) {
      i++;
      continue;
    }
    if (s->dev >= 0 && s->dev < ndev) freed[s->dev] += s->bytes;
    erase(s); /* shifts a later entry into i: look at i again */
  }
  pthread_mutex_unlock(&g_lock);
}

int vg_alloc_take_range(enum vg_alloc_kind kind, uint64_t lo, uint64_t hi, struct vg_alloc *out,
                        int max) {
  int n = 0;
  pthread_mutex_lock(&g_lock);
  for (size_t i = 0; i < g_cap && n < max;) {
    struct slot *s = &g_slots[i];
    if (s->kind != (uint32_t)kind || s->key < lo || s->key >= hi) {
      i++;
      continue;
    }
    out[n++] = value_of(s);
    erase(s); /* shifts a later entry into i: look at i again */
  }
  pthread_mutex_unlock(&g_lock);
  return n;
}

uint64_t vg_alloc_sum_linked(enum vg_alloc_kind kind, uint64_t link) {
  uint64_t sum = 0;
  pthread_mutex_lock(&g_lock);
  for (size_t i = 0; i < g_cap; i++)
    if (g_slots[i].kind == (uint32_t)kind && g_slots[i].link == link) sum += g_slots[i].bytes;
  pthread_mutex_unlock(&g_lock);
  return sum;
}

void vg_alloc_reset(void) {
  pthread_mutex_init(&g_lock, NULL);
  if (g_slots != NULL) memset(g_slots, 0, g_cap * sizeof(struct slot));
  g_count = 0;
}
