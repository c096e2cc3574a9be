/* state.c -- see state.h. */
#include "state.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "alloc_table.h"
#include "hooks.h"
#include "log.h"
#include "pool.h"
#include "size.h"

extern char **environ;

struct vg_state vg_state;

static pthread_mutex_t g_init_lock = PTHREAD_MUTEX_INITIALIZER;
static int g_ready; /* 0: not yet, 1: done */

static void forget_devices(void) {
  for (int i = 0; i < VG_MAX_DEVICES; i++) vg_state.dev_map[i] = vg_state.nvml_map[i] = -1;
}

/* A forked child shares the mapping but holds none of its parent's slot
 * lock or memory: it starts with an empty table and joins on first use. */
static void after_fork_in_child(void) {
  pthread_mutex_init(&g_init_lock, NULL);
  vg_alloc_reset();
  vg_pool_reset();
  vg_state.shm.self_slot = -1;
  vg_state.slot = -1;
  forget_devices();
}

static void open_region(void) {
  struct vg_err err;
  if (vg_region_open(&vg_state.shm, vg_state.cfg.region_path, &err) == 0) return;
  vg_error("%s; limits are enforced for this process alone", err.msg);
  if (vg_shm_open_private(&vg_state.shm, &vg_region_spec, &err) != 0) vg_error("%s", err.msg);
}

static void init_locked(void) {
  struct vg_err err;
  vg_log_configure();
  vg_state.slot = -1;
  forget_devices();
  vg_state.config_ok = vg_config_load(&vg_state.cfg, environ, &err) == 0;
  if (!vg_state.config_ok) {
    snprintf(vg_state.config_error, sizeof(vg_state.config_error), "%s", err.msg);
    vg_error("%s; refusing GPU work rather than running without the intended limit", err.msg);
    return;
  }
  open_region();
}

static void register_fork_handler(void) { pthread_atfork(NULL, NULL, after_fork_in_child); }

bool vg_state_ready(void) {
  if (__atomic_load_n(&g_ready, __ATOMIC_ACQUIRE) == 0) {
    /* Before the init lock: a fork while another thread initialises must
     * find the handler that gives the child a fresh lock. */
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, register_fork_handler);
    pthread_mutex_lock(&g_init_lock);
    if (g_ready == 0) init_locked();
    __atomic_store_n(&g_ready, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&g_init_lock);
  }
  return vg_state.config_ok && vg_state.shm.base != NULL;
}

/* Joins the region on first need (the first reservation: processes that
 * only read, such as nvidia-smi, never take a slot); false when the slot
 * table is full. */
static bool joined(void) {
  if (__atomic_load_n(&vg_state.slot, __ATOMIC_ACQUIRE) >= 0) return true;
  pthread_mutex_lock(&g_init_lock);
  if (vg_state.slot < 0) {
    int slot = vg_region_join(&vg_state.shm, (int32_t)getpid());
    if (slot < 0) vg_error("region file %s has no free process slot", vg_state.shm.path);
    __atomic_store_n(&vg_state.slot, slot, __ATOMIC_RELEASE);
  }
  pthread_mutex_unlock(&g_init_lock);
  return vg_state.slot >= 0;
}

/* Writes this process's configured limits for ordinal into entry dev. A
 * limit below what the container already uses is refused, not applied. */
static void apply_limits_locked(int dev, int ordinal) {
  struct vg_region *r = vg_region_of(&vg_state.shm);
  if (ordinal < 0 || ordinal >= VG_MAX_DEVICES) return;
  if (vg_state.cfg.sm_set[ordinal] && r->dev[dev].sm_limit != vg_state.cfg.sm_limit[ordinal]) {
    r->dev[dev].sm_limit = vg_state.cfg.sm_limit[ordinal];
    __atomic_add_fetch(&r->generation, 1, __ATOMIC_RELEASE);
  }
  if (vg_state.cfg.sm_policy_set && r->dev[dev].sm_policy != vg_state.cfg.sm_policy) {
    r->dev[dev].sm_policy = vg_state.cfg.sm_policy;
    __atomic_add_fetch(&r->generation, 1, __ATOMIC_RELEASE);
  }
  uint64_t want = vg_state.cfg.mem_limit[ordinal];
  if (!vg_state.cfg.mem_set[ordinal] || r->dev[dev].mem_limit == want) return;
  if (want != 0 && want < r->dev[dev].mem_used) {
    char a[32], b[32];
    vg_error(
        "memory limit %s for CUDA device %d not applied: the container already uses %s "
        "(the limit stays %s)",
        vg_format_size(want, a, sizeof(a)), ordinal,
        vg_format_size(r->dev[dev].mem_used, b, sizeof(b)),
        r->dev[dev].mem_limit ? vg_format_size(r->dev[dev].mem_limit, b, sizeof(b)) : "unlimited");
    return;
  }
  __atomic_store_n(&r->dev[dev].mem_limit, want, __ATOMIC_RELAXED);
  __atomic_add_fetch(&r->generation, 1, __ATOMIC_RELEASE);
}

/* Under the node agent the region lists the container's GPUs and no other
 * may be used (VG_REGION_ASSIGNED); elsewhere every GPU the process sees is
 * registered on first use. The assignment is complete before the agent
 * marks the region, so this never waits for pending limits. */
static bool outside_assignment(const char *uuid) {
  const struct vg_region *r = vg_region_of(&vg_state.shm);
  return vg_region_assigned(r) && vg_region_find_device(r, uuid) < 0;
}

static int register_device(const char *uuid, uint64_t total, int ordinal) {
  if (outside_assignment(uuid)) return VG_STATE_NOT_ASSIGNED;
  if (vg_region_lock(&vg_state.shm) != 0) {
    vg_error("the lock of region file %s is unusable; recreate the file", vg_state.shm.path);
    return -1;
  }
  vg_region_reap_locked(&vg_state.shm);
  int dev = vg_region_device_locked(&vg_state.shm, uuid, total);
  if (dev >= 0) apply_limits_locked(dev, ordinal);
  vg_region_unlock(&vg_state.shm);
  if (dev < 0) vg_error("region file %s has no room for device %s", vg_state.shm.path, uuid);
  return dev;
}

static void format_uuid(const CUuuid *u, char *out, size_t len) {
  const unsigned char *b = (const unsigned char *)u->bytes;
  snprintf(out, len, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
           b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
           b[14], b[15]);
}

/* Waits (bounded) while the node agent has not written this container's
 * limits yet; false on timeout -- the caller then fails closed. */
static bool limits_ready(void) {
  static int ready; /* once seen ready, never waits again */
  const struct vg_region *r = vg_region_of(&vg_state.shm);
  if (__atomic_load_n(&ready, __ATOMIC_ACQUIRE) || !vg_region_pending(r)) return true;
  unsigned waited_ms = 0, limit_ms = vg_state.cfg.limits_timeout_s * 1000;
  while (vg_region_pending(r) && waited_ms < limit_ms) {
    struct timespec ts = {.tv_sec = 0, .tv_nsec = 50 * 1000 * 1000};
    nanosleep(&ts, NULL);
    waited_ms += 50;
  }
  if (vg_region_pending(r)) {
    vg_error(
        "the node agent has not written this container's limits to %s within %u s "
        "(VGPU_LIMITS_TIMEOUT); refusing GPU work rather than running without them",
        vg_state.shm.path, vg_state.cfg.limits_timeout_s);
    return false;
  }
  __atomic_store_n(&ready, 1, __ATOMIC_RELEASE);
  return true;
}

static bool ordinal_uuid(int ordinal, char *text, size_t len) {
  CUuuid uuid;
  CUresult rc = vg_cuda.cuDeviceGetUuid_v2 != NULL
                    ? vg_cuda.cuDeviceGetUuid_v2(&uuid, (CUdevice)ordinal)
                    : VG_CU(cuDeviceGetUuid, &uuid, (CUdevice)ordinal); /* drivers before 11.4 */
  if (rc != CUDA_SUCCESS) return false;
  format_uuid(&uuid, text, len);
  return true;
}

/* Records that ordinal is outside the assignment; the first to record it
 * says so, once per process, naming the GPU, the assignment and the way out. */
static int refuse_ordinal(int ordinal, const char *uuid) {
  int unknown = -1;
  if (!__atomic_compare_exchange_n(&vg_state.dev_map[ordinal], &unknown, VG_STATE_NOT_ASSIGNED,
                                   false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
    return VG_STATE_NOT_ASSIGNED;
  const struct vg_region *r = vg_region_of(&vg_state.shm);
  char gpus[700] = "";
  size_t off = 0;
  uint32_t n = __atomic_load_n(&r->device_count, __ATOMIC_ACQUIRE);
  for (uint32_t i = 0; i < n && i < VG_MAX_DEVICES && off < sizeof(gpus); i++)
    off += (size_t)snprintf(gpus + off, sizeof(gpus) - off, "%s%s", i ? ", " : "", r->dev[i].uuid);
  vg_error(
      "CUDA device %d (%s) is not one of this container's GPUs: the node agent assigned %s "
      "(region file %s). Contexts and memory on it are refused with CUDA_ERROR_INVALID_DEVICE "
      "instead of being used without limits; keep the NVIDIA_VISIBLE_DEVICES the device "
      "plugin set",
      ordinal, uuid, n ? gpus : "none", vg_state.shm.path);
  return VG_STATE_NOT_ASSIGNED;
}

int vg_state_device(int ordinal) {
  if (ordinal < 0 || ordinal >= VG_MAX_DEVICES || !vg_state_ready()) return -1;
  int dev = __atomic_load_n(&vg_state.dev_map[ordinal], __ATOMIC_ACQUIRE);
  if (dev != -1) return dev;
  if (!limits_ready()) return -1;
  size_t total = 0;
  char text[VG_UUID_LEN];
  if (!ordinal_uuid(ordinal, text, sizeof(text))) return -1;
  if (VG_CU(cuDeviceTotalMem_v2, &total, (CUdevice)ordinal) != CUDA_SUCCESS) total = 0;
  dev = register_device(text, total, ordinal);
  if (dev == VG_STATE_NOT_ASSIGNED) return refuse_ordinal(ordinal, text);
  __atomic_store_n(&vg_state.dev_map[ordinal], dev, __ATOMIC_RELEASE);
  return dev;
}

bool vg_state_refuses(int ordinal) {
  if (ordinal < 0 || ordinal >= VG_MAX_DEVICES || !vg_state_ready()) return false;
  int dev = __atomic_load_n(&vg_state.dev_map[ordinal], __ATOMIC_ACQUIRE);
  if (dev != -1) return dev == VG_STATE_NOT_ASSIGNED;
  /* Outside the node agent (vgpu run) nothing is refused: no driver query. */
  if (!vg_region_assigned(vg_region_of(&vg_state.shm))) return false;
  char text[VG_UUID_LEN];
  if (!ordinal_uuid(ordinal, text, sizeof(text)) || !outside_assignment(text)) return false;
  refuse_ordinal(ordinal, text);
  return true;
}

bool vg_state_hides(const char *uuid) { return vg_state_ready() && outside_assignment(uuid); }

int vg_state_current_device(void) {
  CUdevice d;
  if (VG_CU(cuCtxGetDevice, &d) != CUDA_SUCCESS) return -1;
  return vg_state_device((int)d);
}

/* The CUDA ordinal an NVML device has in this process: its position in
 * CUDA_VISIBLE_DEVICES (indices or GPU-UUID prefixes), or its NVML index
 * when the variable is unset. -1 if CUDA cannot see it. */
static int cuda_ordinal_of(const char *uuid, int nvml_index) {
  const char *list = getenv("CUDA_VISIBLE_DEVICES");
  if (list == NULL) return nvml_index;
  int pos = 0;
  for (const char *p = list; *p != '\0'; pos++) {
    size_t n = strcspn(p, ",");
    char item[VG_UUID_LEN];
    snprintf(item, sizeof(item), "%.*s", (int)(n < sizeof(item) - 1 ? n : sizeof(item) - 1), p);
    char *end;
    long idx = strtol(item, &end, 10);
    if (end != item && *end == '\0') {
      if (idx == nvml_index) return pos;
    } else if (strncmp(item, "GPU-", 4) == 0 && strncmp(uuid, item, strlen(item)) == 0) {
      return pos;
    } else {
      return -1; /* the driver stops at an entry it cannot parse */
    }
    p += n;
    if (*p == ',') p++;
  }
  return -1;
}

int vg_state_device_by_uuid(const char *uuid, uint64_t mem_total, int nvml_index) {
  if (nvml_index < 0 || nvml_index >= VG_MAX_DEVICES || !vg_state_ready()) return -1;
  int dev = __atomic_load_n(&vg_state.nvml_map[nvml_index], __ATOMIC_ACQUIRE);
  if (dev != -1) return dev;
  dev = register_device(uuid, mem_total, cuda_ordinal_of(uuid, nvml_index));
  __atomic_store_n(&vg_state.nvml_map[nvml_index], dev, __ATOMIC_RELEASE);
  return dev;
}

bool vg_state_join(void) { return joined(); }

enum vg_reserve_rc vg_state_reserve(int dev, uint64_t bytes) {
  if (!joined()) return VG_RESERVE_NO_SLOT;
  return vg_region_reserve(&vg_state.shm, vg_state.slot, dev, bytes) ? VG_RESERVE_OK
                                                                     : VG_RESERVE_OVER;
}

void vg_state_charge(int dev, uint64_t bytes) {
  if (joined()) vg_region_charge(&vg_state.shm, vg_state.slot, dev, bytes);
}

void vg_state_release(int dev, uint64_t bytes) {
  vg_region_release(&vg_state.shm, vg_state.slot, dev, bytes);
}
