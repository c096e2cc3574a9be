/*
 * grant.h -- what the node agent granted a container, in a file the
 * container can read but not write.
 *
 * The region file (region.h) must be writable by the container's processes:
 * they charge their allocations there. So it cannot also be the authority
 * on the limits -- a tenant that rewrites it, or starts a process with
 * CUDA_DEVICE_MEMORY_LIMIT=10g, would lift its own limit. The grant is that
 * authority: the node agent writes it into <slot>/grant/grant, and the
 * device plugin mounts <slot>/grant read-only at /usr/local/vgpu/grant.
 * libvgpu clamps every limit it is given (environment, vgpu set, another
 * process) to the grant; lowering below it stays allowed.
 *
 * The file is text, so that `cat` explains it:
 *
 *   vgpu-grant 1
 *   gpu GPU-8f2c... memory 3145728000 cores 25 policy hard
 *   gpu GPU-1a0b... memory 0 cores 0 policy hard
 *
 * one line per GPU the container was given: memory in bytes (0: the whole
 * GPU), cores in percent (0 or 100: the whole GPU), the SM policy (hard or
 * share). Lines starting with '#' are comments. Anything else is refused
 * with a message naming the line: a grant that parsed as something else
 * would be a limit silently lifted. The agent replaces the file by rename,
 * so a reader sees the old grant or the new one, never half of each.
 */
#ifndef VG_GRANT_H
#define VG_GRANT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "region.h"

#define VG_GRANT_VERSION 1
/* Where the device plugin mounts the grant directory in a container. */
#define VG_GRANT_DIR "/usr/local/vgpu/grant"
#define VG_GRANT_FILE "grant"
#define VG_GRANT_MAX_BYTES 8192

struct vg_grant_gpu {
  char uuid[VG_UUID_LEN];
  uint64_t memory; /* bytes; 0: the whole GPU */
  unsigned cores;  /* percent; 0: the whole GPU (100 is stored as 0) */
  unsigned policy; /* VG_SM_POLICY_* */
};

struct vg_grant {
  unsigned count;
  struct vg_grant_gpu gpu[VG_MAX_DEVICES];
};

/* Where this process's grant lives: VG_GRANT_DIR when that directory exists
 * (inside a container of the device plugin, where the tenant can neither
 * remove nor redirect it), else $VGPU_GRANT_DIR if set (tests, and hosts
 * that place grants elsewhere). Returns true with the directory in out;
 * false when there is no grant (vgpu run, a plain host): nothing is
 * clamped then. */
bool vg_grant_dir(char *out, size_t len);

/* Parses the text of a grant (len bytes, need not be NUL-terminated). */
int vg_grant_parse(const char *text, size_t len, struct vg_grant *g, struct vg_err *err);

/* Reads and parses dir/grant. Returns 0; 1 when the file does not exist
 * (the agent has not written it yet); -1 with err otherwise. */
int vg_grant_load(const char *dir, struct vg_grant *g, struct vg_err *err);

/* Writes g as text into buf; returns its length, or -1 if buf is too small. */
int vg_grant_format(const struct vg_grant *g, char *buf, size_t len);

/* Replaces dir/grant with g: written to a temporary file in dir, synced and
 * renamed over, so readers never see a partial grant. */
int vg_grant_write(const char *dir, const struct vg_grant *g, struct vg_err *err);

/* The entry for uuid, or NULL. */
const struct vg_grant_gpu *vg_grant_find(const struct vg_grant *g, const char *uuid);

/* The limit that applies when `asked` is requested under a grant of
 * `granted` (both: 0 means none): the lower of the two. */
static inline uint64_t vg_grant_clamp(uint64_t asked, uint64_t granted) {
  if (granted == 0) return asked;
  if (asked == 0 || asked > granted) return granted;
  return asked;
}

/* A pod's compute share as the grant stores it: 100 % or more, or none
 * (0 or less), is the whole GPU, stored as 0 (no limit). */
static inline unsigned vg_grant_cores_of(long long percent) {
  return percent <= 0 || percent >= 100 ? 0 : (unsigned)percent;
}

/* The memory (bytes) and compute (percent) that apply when `asked` is
 * requested on a GPU granted g (NULL: no grant). 0 means no limit; so does
 * 100 percent, which comes back as 0. */
static inline uint64_t vg_grant_memory(const struct vg_grant_gpu *g, uint64_t asked) {
  return g != NULL ? vg_grant_clamp(asked, g->memory) : asked;
}
static inline unsigned vg_grant_cores(const struct vg_grant_gpu *g, unsigned asked) {
  unsigned pct = vg_grant_cores_of(asked);
  return g != NULL ? (unsigned)vg_grant_clamp(pct, g->cores) : pct;
}

#endif
