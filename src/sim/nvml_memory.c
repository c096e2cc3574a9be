/*
 * nvml_memory.c -- device memory and the processes using the device.
 *
 * Memory is the shared state's device-wide view: used is what all live
 * processes hold (allocations and context memory), free = total - used,
 * reserved = 0. A process is listed on a device while it holds memory or a
 * context there; its usedGpuMemory is its bytes including context memory.
 * Every query first reaps dead processes, so a SIGKILLed process disappears
 * and its memory comes back, as with the real driver. The pids are those of
 * the caller's PID namespace, as the real driver reports them (nvml_pids.c).
 */
#include <stdlib.h>
#include <string.h>

#include "nvml_internal.h"

#define VALUE_NOT_AVAILABLE 0xFFFFFFFFu

/* The processes of one listing: ids translated after the lock is dropped. */
struct listing {
  struct nv_pid id[VG_SIM_MAX_PROCS];
  unsigned long long used[VG_SIM_MAX_PROCS];
};

static void memory_locked(struct vg_sim_device *d, unsigned long long *total,
                          unsigned long long *used) {
  vg_sim_reap_locked(&g_nv.sim);
  *total = d->mem_total;
  *used = d->mem_used < d->mem_total ? d->mem_used : d->mem_total;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory) {
  struct vg_sim_device *d;
  unsigned i;
  nvmlReturn_t rc = nv_device(device, &d, &i);
  if (rc != NVML_SUCCESS) return rc;
  if (memory == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  vg_sim_lock(&g_nv.sim);
  memory_locked(d, &memory->total, &memory->used);
  vg_sim_unlock(&g_nv.sim);
  memory->free = memory->total - memory->used;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t *memory) {
  struct vg_sim_device *d;
  unsigned i;
  nvmlReturn_t rc = nv_device(device, &d, &i);
  if (rc != NVML_SUCCESS) return rc;
  if (memory == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  if (memory->version != nvmlMemory_v2) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  vg_sim_lock(&g_nv.sim);
  memory_locked(d, &memory->total, &memory->used);
  vg_sim_unlock(&g_nv.sim);
  memory->reserved = 0;
  memory->free = memory->total - memory->used;
  return NVML_SUCCESS;
}

/* Live processes on device index; returns how many. */
static unsigned collect(unsigned index, struct listing *l) {
  unsigned n = 0;
  vg_sim_lock(&g_nv.sim);
  vg_sim_reap_locked(&g_nv.sim);
  for (unsigned s = 0; s < g_nv.sim.st->slots_hwm && s < VG_SIM_MAX_PROCS; s++) {
    const struct vg_sim_slot *slot = &g_nv.sim.st->slot[s];
    if (!slot->in_use || (slot->used[index] == 0 && slot->contexts[index] == 0)) continue;
    l->id[n] = (struct nv_pid){(unsigned)slot->pid, slot->pidns, slot->started};
    l->used[n++] = slot->used[index];
  }
  vg_sim_unlock(&g_nv.sim);
  return n;
}

/* The shared part of the three listing calls: fills l, or says why not. */
static nvmlReturn_t list(nvmlDevice_t device, unsigned *count, bool have_infos, struct listing *l,
                         unsigned *n) {
  struct vg_sim_device *d;
  unsigned index;
  nvmlReturn_t rc = nv_device(device, &d, &index);
  if (rc != NVML_SUCCESS) return rc;
  if (count == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  *n = collect(index, l);
  bool fits = *n == 0 || (have_infos && *count >= *n);
  *count = *n;
  return fits ? NVML_SUCCESS : NVML_ERROR_INSUFFICIENT_SIZE;
}

/* Runs list() with a scratch table, translates the pids of the rows it
 * will hand out and gives them to fill(). */
static nvmlReturn_t list_into(nvmlDevice_t device, unsigned *count, void *infos,
                              void (*fill)(void *infos, const struct listing *l, unsigned n)) {
  struct listing *l = malloc(sizeof(*l));
  if (l == NULL) return NVML_ERROR_UNKNOWN;
  unsigned n = 0;
  nvmlReturn_t rc = list(device, count, infos != NULL, l, &n);
  if (rc == NVML_SUCCESS) {
    nv_pids_to_caller(l->id, n);
    fill(infos, l, n);
  }
  free(l);
  return rc;
}

static void fill_v1(void *infos, const struct listing *l, unsigned n) {
  nvmlProcessInfo_v1_t *out = infos;
  for (unsigned i = 0; i < n; i++) out[i] = (nvmlProcessInfo_v1_t){l->id[i].pid, l->used[i]};
}

static void fill_v3(void *infos, const struct listing *l, unsigned n) {
  nvmlProcessInfo_t *out = infos;
  for (unsigned i = 0; i < n; i++)
    out[i] =
        (nvmlProcessInfo_t){l->id[i].pid, l->used[i], VALUE_NOT_AVAILABLE, VALUE_NOT_AVAILABLE};
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t device, unsigned int *count,
                                                  nvmlProcessInfo_v1_t *infos) {
  return list_into(device, count, infos, fill_v1);
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int *count,
                                                     nvmlProcessInfo_t *infos) {
  return list_into(device, count, infos, fill_v3);
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t device, unsigned int *count,
                                                     nvmlProcessInfo_t *infos) {
  return nvmlDeviceGetComputeRunningProcesses_v3(device, count, infos);
}
