/*
 * nvml_init.c -- nvmlInit*, nvmlShutdown and handle validation.
 *
 * Init is reference counted, as in NVML: every successful nvmlInit needs an
 * nvmlShutdown, and calls made while the count is zero return
 * NVML_ERROR_UNINITIALIZED. The first init attaches to the shared state file
 * (creating it from VGPU_SIM_* if it does not exist) and fixes the devices
 * NVIDIA_VISIBLE_DEVICES lets the process see; a malformed variable is
 * reported on stderr and init fails with NVML_ERROR_UNKNOWN. No visible
 * device is not an error: init succeeds with a count of 0, as NVIDIA's NVML
 * does in a container without GPUs. The mapping and the selection are kept
 * after shutdown (see sim_state.c for why the file is never closed).
 */
#include "log.h"
#include "nvml_internal.h"

struct nv_process g_nv = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* NVML stays usable in a forked child (it only observes), but a lock held by
 * another parent thread at fork time would never be released there. */
static void on_fork_child(void) { pthread_mutex_init(&g_nv.lock, NULL); }

__attribute__((constructor)) static void register_fork_handler(void) {
  pthread_atfork(NULL, NULL, on_fork_child);
}

nvmlReturn_t nv_ready(void) {
  return __atomic_load_n(&g_nv.refcount, __ATOMIC_ACQUIRE) > 0 ? NVML_SUCCESS
                                                               : NVML_ERROR_UNINITIALIZED;
}

nvmlReturn_t nv_device(nvmlDevice_t device, struct vg_sim_device **dev, unsigned *index) {
  nvmlReturn_t rc = nv_ready();
  if (rc != NVML_SUCCESS) return rc;
  unsigned count = g_nv.sim.st->config.devices;
  uintptr_t p = (uintptr_t)device, base = (uintptr_t)g_nv.dev;
  if (p < base || p >= base + count * sizeof(g_nv.dev[0]) || (p - base) % sizeof(g_nv.dev[0]))
    return NVML_ERROR_INVALID_ARGUMENT;
  if (!device->shown) return NVML_ERROR_INVALID_ARGUMENT;
  *index = device->index;
  *dev = &g_nv.sim.st->dev[*index];
  if ((*dev)->fault & VG_SIM_FAULT_LOST) return NVML_ERROR_GPU_IS_LOST;
  return NVML_SUCCESS;
}

static nvmlReturn_t attach(void) {
  struct vg_err err;
  if (vg_sim_attach(&g_nv.sim, false, &err) != 0) {
    vg_error("simulated GPU (NVML): %s", err.msg);
    return NVML_ERROR_UNKNOWN;
  }
  struct vg_err ignored;
  if (vg_sim_visible_devices(g_nv.sim.st, g_nv.phys, &g_nv.nvisible, &ignored, &err) != 0) {
    vg_error("simulated GPU (NVML): %s", err.msg);
    return NVML_ERROR_UNKNOWN;
  }
  if (ignored.msg[0] != '\0')
    vg_warn("simulated GPU (NVML): NVIDIA_VISIBLE_DEVICES names no GPU in %s; not visible",
            ignored.msg);
  for (unsigned i = 0; i < VG_SIM_MAX_DEVICES; i++) g_nv.dev[i].index = i;
  for (unsigned v = 0; v < g_nv.nvisible; v++) {
    g_nv.dev[g_nv.phys[v]].visible = v;
    g_nv.dev[g_nv.phys[v]].shown = true;
  }
  g_nv.attached = true;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlInitWithFlags(unsigned int flags) {
  (void)flags; /* NO_GPUS / NO_ATTACH change nothing here */
  pthread_mutex_lock(&g_nv.lock);
  nvmlReturn_t rc = g_nv.attached ? NVML_SUCCESS : attach();
  if (rc == NVML_SUCCESS) __atomic_add_fetch(&g_nv.refcount, 1, __ATOMIC_ACQ_REL);
  pthread_mutex_unlock(&g_nv.lock);
  return rc;
}

nvmlReturn_t nvmlInit_v2(void) { return nvmlInitWithFlags(0); }

nvmlReturn_t nvmlInit(void) { return nvmlInitWithFlags(0); }

nvmlReturn_t nvmlShutdown(void) {
  pthread_mutex_lock(&g_nv.lock);
  nvmlReturn_t rc = NVML_ERROR_UNINITIALIZED;
  if (g_nv.refcount > 0) {
    __atomic_sub_fetch(&g_nv.refcount, 1, __ATOMIC_ACQ_REL);
    rc = NVML_SUCCESS;
  }
  pthread_mutex_unlock(&g_nv.lock);
  return rc;
}
