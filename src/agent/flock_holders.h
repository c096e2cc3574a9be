/*
 * flock_holders.h -- the files someone holds flock(2) on, from /proc/locks.
 *
 * A container can hold flock on its region for ever: the node agent never
 * takes that lock (it opens regions without it), so nothing of the agent
 * waits, but the container's own new processes cannot open the region and
 * refuse GPU work. To report it like the other forged regions, the binder
 * reads /proc/locks once a pass (the agent shares the host's PID namespace,
 * so it sees every process's locks) and asks about each region it opens.
 */
#ifndef VG_AGENT_FLOCK_HOLDERS_H
#define VG_AGENT_FLOCK_HOLDERS_H

#include <stdbool.h>
#include <stddef.h>

#include "err.h"

struct vg_flock_file {
  unsigned major, minor;
  unsigned long inode;
};

struct vg_flock_set {
  struct vg_flock_file *file;
  size_t n;
};

/* Reads path (/proc/locks) into set: every FLOCK held (not waited for). */
int vg_flock_read(const char *path, struct vg_flock_set *set, struct vg_err *err);
/* Is a flock held on the file open as fd? */
bool vg_flock_held(const struct vg_flock_set *set, int fd);
void vg_flock_free(struct vg_flock_set *set);

#endif
