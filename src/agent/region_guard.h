/*
 * region_guard.h -- the node agent outlives a container that truncates its
 * region file while the agent writes to it.
 *
 * The binder and the resizer write a container's limits through a shared
 * mapping of its region, under the region's mutex. The container can
 * truncate that file at any moment, and touching a page of a mapping past
 * the end of its file raises SIGBUS, which would kill the agent and with
 * it every pod's Allocate on the node. While a mapping is guarded, a SIGBUS
 * inside it swaps the mapping for anonymous zeroed memory at the same
 * address and lets the faulting access run again: the agent finishes its
 * work on a dead copy (what it wrote is lost, to nobody's harm but the
 * tenant's) and learns afterwards that the region was lost. A lost mapping
 * is never unmapped: glibc's list of robust mutexes this thread held may
 * still point into it. One per offending container, about 300 KiB.
 *
 * A SIGBUS anywhere else goes to the handler that was there before (the
 * sanitizer's, or the default: the process dies as it would have).
 */
#ifndef VG_AGENT_REGION_GUARD_H
#define VG_AGENT_REGION_GUARD_H

#include <stdbool.h>

#include "shmfile.h"

#define VG_REGION_GUARDS 64 /* mappings guarded at once, all threads together */

/* Guards shm's mapping; -1 when every guard is in use or the handler could
 * not be installed (then the caller must not write through it). */
int vg_region_guard(struct vg_shm *shm);

/* Has the region been lost (truncated under the agent) since it was guarded? */
bool vg_region_guard_lost(const struct vg_shm *shm);

/* Ends the guard and closes shm. True when the region was lost (truncated
 * under the agent): then its mapping is left in place, as above. */
bool vg_region_guard_close(struct vg_shm *shm);

#endif
