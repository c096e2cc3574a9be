/*
 * distrust.h -- container regions the node agent will not wait on again.
 *
 * A container can write its region file: it can forge the lock's owner, or
 * hold the lock for ever. The agent waits for a region's lock at most
 * VG_REGION_AGENT_LOCK_WAIT_MS (region.h); a region whose lock was not
 * given in that time is remembered here by its file (device and inode), so
 * that every later pass gives up on it at once instead of paying the wait
 * again. The container stays held to its grant, which is not in the region;
 * what it loses is a resize, or limits that were still pending. A new
 * container of the same IDs gets a new file (Allocate makes it afresh), so
 * nothing here outlives the container that earned it.
 *
 * The same kind of set, with the time each file was first seen, tells how
 * long a region has been held under flock (flock_holders.h).
 *
 * Used by the binder thread only: no lock.
 */
#ifndef VG_AGENT_DISTRUST_H
#define VG_AGENT_DISTRUST_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define VG_DISTRUST_MAX 256 /* more than a node's containers: the oldest is forgotten first */

struct vg_distrust {
  struct {
    dev_t dev;
    ino_t ino;
    uint64_t since_ms; /* CLOCK_MONOTONIC when added */
  } file[VG_DISTRUST_MAX];
  unsigned n, next;
};

/* Is the open file fd one remembered? */
bool vg_distrust_has(const struct vg_distrust *t, int fd);
/* Remembers fd's file; true when it was not remembered before. */
bool vg_distrust_add(struct vg_distrust *t, int fd);
/* Milliseconds since fd's file was remembered; -1 when it is not. */
long long vg_distrust_age_ms(const struct vg_distrust *t, int fd);
/* Forgets fd's file. */
void vg_distrust_remove(struct vg_distrust *t, int fd);

#endif
