/*
 * alloc_table.h -- what this process allocated, so frees can refund it.
 *
 * A small open-addressing hash table keyed by (kind, value): device
 * pointers, VMM handles, arrays and mipmapped arrays live in one table
 * without colliding. Each entry remembers the region entry and the bytes
 * charged, so a free refunds exactly what the allocation took. A free of
 * something not in the table is not ours to refund: it is passed to the
 * driver untouched.
 */
#ifndef VG_ALLOC_TABLE_H
#define VG_ALLOC_TABLE_H

#include <stdbool.h>
#include <stdint.h>

enum vg_alloc_kind {
  VG_ALLOC_MEMORY = 1, /* cuMemAlloc*, pitch, managed, async */
  VG_ALLOC_HANDLE = 2, /* cuMemCreate */
  VG_ALLOC_ARRAY = 3,
  VG_ALLOC_MIPMAP = 4,
  VG_ALLOC_MAPPING = 6 /* a cuMemMap of a handle: key = address, link = handle */
};

struct vg_alloc {
  int dev;        /* region entry */
  uint64_t bytes; /* charged */
  uint64_t ctx;   /* context it was made in (0: not tied to one) */
  uint64_t link;  /* mappings: the VMM handle they map; memory: the pool it came from */
  uint32_t refs;  /* handles: references the program holds (create, retain) */
  uint32_t maps;  /* handles: live mappings */
};

/* Records key. Returns 0, or 1 when key was already recorded (a free we did
 * not see: *replaced is what it held, for the caller to refund), or -1 when
 * no memory is left for the table. */
int vg_alloc_put(enum vg_alloc_kind kind, uint64_t key, struct vg_alloc value,
                 struct vg_alloc *replaced);
/* Removes and returns the entry; false if absent. */
bool vg_alloc_take(enum vg_alloc_kind kind, uint64_t key, struct vg_alloc *value);
bool vg_alloc_get(enum vg_alloc_kind kind, uint64_t key, struct vg_alloc *value);
/* Removes every memory/array record made in ctx -- the driver frees them
 * with the context -- and adds their bytes per region entry to freed[]. */
void vg_alloc_drop_context(uint64_t ctx, uint64_t freed[], int ndev);
/* Removes up to max records of kind with lo <= key < hi; returns how many
 * (call again while it returns max). */
int vg_alloc_take_range(enum vg_alloc_kind kind, uint64_t lo, uint64_t hi, struct vg_alloc *out,
                        int max);
/* The bytes of every record of kind whose link is link (a scan: rare use). */
uint64_t vg_alloc_sum_linked(enum vg_alloc_kind kind, uint64_t link);
/* Forgets everything (a forked child owns none of its parent's memory). */
void vg_alloc_reset(void);

#endif
