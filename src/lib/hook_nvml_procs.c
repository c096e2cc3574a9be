/*
 * hook_nvml_procs.c -- the processes NVML lists on a GPU inside a container.
 *
 * The driver lists every process on the GPU, the neighbours' included; a
 * tenant must not see other tenants' processes, and nvidia-smi in the
 * container should show the slice's own, as on a GPU of its own. The list
 * is therefore the container's region file: every live process charged on
 * that GPU, under the pid it recorded (its pid in the container's
 * namespace, the caller's too), with the bytes it is charged -- with or
 * without a memory limit (a `vgpu run` without --memory, a pod with only a
 * compute share is a container too). MIG instance ids are "not available",
 * as NVML reports them off MIG. A GPU outside the node agent's assignment is
 * refused, as hook_nvml.c does; only without a region (libvgpu could not
 * set up its state) does the driver's list pass through.
 * Listing only looks: unlike the memory queries it registers no GPU and
 * applies none of the lister's limit variables, so `vgpu status` or a
 * monitoring agent in the container never undoes a `vgpu set`.
 *
 * NVML's size protocol is kept: too small a *count (or no buffer while
 * there are processes) answers NVML_ERROR_INSUFFICIENT_SIZE with the count
 * needed. libvgpu's own callers (limiter.c) use the real functions through
 * vg_nvml, never these hooks.
 */
#include <stdlib.h>

#include "hooks.h"
#include "state.h"

#define NOT_AVAILABLE 0xFFFFFFFFu /* nvml.h: NVML_VALUE_NOT_AVAILABLE */

enum view { PASS, REFUSE, OWN };

/* How to answer for device; the region entry in *dev when OWN (-1: the
 * region has no entry for the GPU yet, so nothing is charged there). Only
 * looks: a listing registers nothing and applies no limit. */
static enum view view_of(nvmlDevice_t device, int *dev) {
  char uuid[VG_UUID_LEN];
  if (!vg_state_ready() || VG_NV(nvmlDeviceGetUUID, device, uuid, sizeof(uuid)) != NVML_SUCCESS)
    return PASS;
  *dev = vg_state_find_by_uuid(uuid);
  return *dev == VG_STATE_NOT_ASSIGNED ? REFUSE : OWN;
}

struct own {
  unsigned n;
  unsigned pid[VG_MAX_PROCS];
  unsigned long long used[VG_MAX_PROCS];
};

/* The live processes of the region charged on entry dev. */
static void collect(int dev, struct own *o) {
  struct vg_region *r = vg_region_of(&vg_state.shm);
  o->n = 0;
  for (unsigned i = 0; dev >= 0 && i < VG_MAX_PROCS; i++) {
    int32_t pid = __atomic_load_n(&r->proc[i].pid, __ATOMIC_ACQUIRE);
    uint64_t used = __atomic_load_n(&r->proc[i].mem_used[dev], __ATOMIC_RELAXED);
    if (pid <= 0 || used == 0 || !vg_shm_slot_alive(&vg_state.shm, i)) continue;
    o->pid[o->n] = (unsigned)pid;
    o->used[o->n++] = used;
  }
}

/* NVML's size protocol: success when the caller's buffer takes the list. */
static nvmlReturn_t fits(const struct own *o, unsigned *count, const void *infos) {
  bool ok = o->n == 0 || (infos != NULL && *count >= o->n);
  *count = o->n;
  return ok ? NVML_SUCCESS : NVML_ERROR_INSUFFICIENT_SIZE;
}

static void fill_v1(const struct own *o, void *infos) {
  nvmlProcessInfo_v1_t *out = infos;
  for (unsigned i = 0; i < o->n; i++) out[i] = (nvmlProcessInfo_v1_t){o->pid[i], o->used[i]};
}

static void fill_v2(const struct own *o, void *infos) {
  nvmlProcessInfo_t *out = infos;
  for (unsigned i = 0; i < o->n; i++)
    out[i] = (nvmlProcessInfo_t){o->pid[i], o->used[i], NOT_AVAILABLE, NOT_AVAILABLE};
}

/* The container's list for device; *pass instead when the driver's list is
 * the answer (a GPU without a limit, or no region to tell). */
static nvmlReturn_t own_list(nvmlDevice_t device, unsigned *count, void *infos,
                             void (*fill)(const struct own *, void *), bool *pass) {
  *pass = false;
  if (!vg_nvml_load()) return NVML_ERROR_UNINITIALIZED;
  int dev = -1;
  enum view v = view_of(device, &dev);
  if (v == REFUSE) return NVML_ERROR_INVALID_ARGUMENT;
  if (v == PASS) {
    *pass = true;
    return NVML_SUCCESS;
  }
  if (count == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  struct own *o = malloc(sizeof(*o)); /* 12 KiB: not on the caller's stack */
  if (o == NULL) return NVML_ERROR_UNKNOWN;
  collect(dev, o);
  nvmlReturn_t rc = fits(o, count, infos);
  if (rc == NVML_SUCCESS && o->n > 0) fill(o, infos);
  free(o);
  return rc;
}

VG_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t device,
                                                            unsigned int *count,
                                                            nvmlProcessInfo_v1_t *infos) {
  bool pass;
  nvmlReturn_t rc = own_list(device, count, infos, fill_v1, &pass);
  return pass ? VG_NV(nvmlDeviceGetComputeRunningProcesses, device, count, infos) : rc;
}

VG_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t device,
                                                               unsigned int *count,
                                                               nvmlProcessInfo_t *infos) {
  bool pass;
  nvmlReturn_t rc = own_list(device, count, infos, fill_v2, &pass);
  return pass ? VG_NV(nvmlDeviceGetComputeRunningProcesses_v2, device, count, infos) : rc;
}

VG_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device,
                                                               unsigned int *count,
                                                               nvmlProcessInfo_t *infos) {
  bool pass;
  nvmlReturn_t rc = own_list(device, count, infos, fill_v2, &pass);
  return pass ? VG_NV(nvmlDeviceGetComputeRunningProcesses_v3, device, count, infos) : rc;
}
