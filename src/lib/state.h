/*
 * state.h -- what one process of a container knows: its configuration, the
 * container's region file, its slot there, and which region entry each CUDA
 * device ordinal maps to.
 *
 * Set up lazily by the first hook that needs it (no constructor: libvgpu is
 * preloaded into every program of the container and must cost nothing to
 * programs that never use a GPU). A forked child starts over with a slot of
 * its own; CUDA state does not survive fork anyway.
 */
#ifndef VG_STATE_H
#define VG_STATE_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "grant.h"
#include "region.h"
#include "shmfile.h"

struct vg_state {
  struct vg_config cfg;
  bool config_ok;
  char config_error[VG_ERR_MAX];
  struct vg_shm shm;
  int slot;                     /* -1 until joined */
  int dev_map[VG_MAX_DEVICES];  /* CUDA ordinal -> region entry, -1 unknown, or NOT_ASSIGNED */
  int nvml_map[VG_MAX_DEVICES]; /* NVML index -> region entry, -1 unknown, or NOT_ASSIGNED */
  /* The node agent's grant (grant.h): when granted, every limit is clamped
   * to it. Loaded once the agent has written the limits (limits_ready). */
  bool granted;
  bool grant_loaded;
  char grant_dir[512];
  const struct vg_grant *grant; /* the grant in force once loaded: one of grant_buf */
  struct vg_grant grant_buf[2]; /* a new grant is read into the other, then switched to */
  unsigned grant_version;       /* bumped at each switch */
};

extern struct vg_state vg_state;

/* Reads config and opens the region (once). Returns false if the config is
 * malformed: callers must then refuse CUDA work. */
bool vg_state_ready(void);

/* What the lookups below return for a GPU the node agent did not give this
 * container: the region lists its GPUs (VG_REGION_ASSIGNED) and this one is
 * not among them. Such a GPU is refused, never used without limits. */
#define VG_STATE_NOT_ASSIGNED (-3)

/* Region entry for CUDA ordinal (registering the device and applying this
 * process's limits on first use), VG_STATE_NOT_ASSIGNED (said once per
 * process on stderr), or -1. */
int vg_state_device(int ordinal);
/* True if CUDA ordinal is a GPU outside the node agent's assignment (said
 * once, as above). Never waits for pending limits: the assignment is
 * complete before the agent marks the region. */
bool vg_state_refuses(int ordinal);
/* True under the node agent: the region lists the container's GPUs
 * (VG_REGION_ASSIGNED) or a grant does; other GPUs are then not its. */
bool vg_state_has_assignment(void);
/* True if the GPU with this UUID is outside the node agent's assignment:
 * NVML does not show it. */
bool vg_state_hides(const char *uuid);
/* Region entry of the current context's device, or -1. */
int vg_state_current_device(void);
/* Region entry for a GPU known by UUID (NVML side); applies env limits for
 * the CUDA ordinal the GPU has in this process, if any. VG_STATE_NOT_ASSIGNED
 * or -1 as above. */
int vg_state_device_by_uuid(const char *uuid, uint64_t mem_total, int nvml_index);

/* Read-only NVML queries (the process list): the region entry of the GPU
 * with this UUID, VG_STATE_NOT_ASSIGNED, or -1 when the region has none;
 * neither registers the GPU nor applies this process's limits, so that
 * looking never rewrites a limit `vgpu set` changed. */
int vg_state_find_by_uuid(const char *uuid);

/* The limits that apply on region entry dev: the region's, clamped to the
 * grant when there is one (a tenant may rewrite the region, never the
 * grant). Memory in bytes, 0: none; SM percent, 0: none; the SM policy. */
uint64_t vg_state_mem_limit(int dev);
unsigned vg_state_sm_limit(int dev);
unsigned vg_state_sm_policy(int dev);
/* Re-reads the grant if the node agent replaced it (a resize): checked
 * when the region's generation moved, which the agent bumps after writing
 * a grant. A grant that cannot be read leaves the old one in force. */
void vg_state_refresh_grant(void);
/* True if some granted GPU has a compute limit: the limiter stays engaged
 * whatever the region says. */
bool vg_state_grant_limits_sm(void);

/* Takes this process's slot in the region if it has none yet. */
bool vg_state_join(void);

/* Charge and refund bytes on a region entry for this process. NO_SLOT: the
 * region's process table is full, so nothing can be accounted. */
enum vg_reserve_rc { VG_RESERVE_OK, VG_RESERVE_OVER, VG_RESERVE_NO_SLOT };
enum vg_reserve_rc vg_state_reserve(int dev, uint64_t bytes);
void vg_state_release(int dev, uint64_t bytes);
/* Charges bytes the driver already holds, past the limit if need be. */
void vg_state_charge(int dev, uint64_t bytes);

/* Device memory a driver allocation of size bytes occupies (2 MiB pages). */
#define VG_ALLOC_GRANULE (2ULL << 20)
static inline uint64_t vg_charge_bytes(uint64_t size) {
  if (size > UINT64_MAX - (VG_ALLOC_GRANULE - 1)) return UINT64_MAX;
  return (size + VG_ALLOC_GRANULE - 1) & ~(VG_ALLOC_GRANULE - 1);
}

#endif
