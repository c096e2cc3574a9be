/* state.c -- see state.h. */
#include "state.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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
static pthread_mutex_t g_grant_lock = PTHREAD_MUTEX_INITIALIZER; /* loading the grant */
static int g_ready;                                              /* 0: not yet, 1: done */

/* What this process itself holds per region entry, in its own memory. The
 * region's figures are writable by every process of the container; this is
 * not, so no scribbling on the region lets one process pass its grant. */
static uint64_t g_own[VG_MAX_DEVICES];
/* Region entry -> index in vg_state.grant: -2 not looked up yet, -1 none;
 * valid for grant version g_entry_version[entry]. */
static int g_entry_grant[VG_MAX_DEVICES];
static unsigned g_entry_version[VG_MAX_DEVICES];
/* The region generation the grant was last checked at, and the identity of
 * the grant file read (a new one is renamed in: a new inode). */
static uint64_t g_grant_gen;
static struct stat g_grant_file;

static void forget_devices(void) {
  for (int i = 0; i < VG_MAX_DEVICES; i++) {
    vg_state.dev_map[i] = vg_state.nvml_map[i] = -1;
    g_entry_grant[i] = -2;
    g_own[i] = 0;
  }
}

/* A forked child shares the mapping but holds none of its parent's slot
 * lock or memory: it starts with an empty table and joins on first use. */
static void after_fork_in_child(void) {
  pthread_mutex_init(&g_init_lock, NULL);
  pthread_mutex_init(&g_grant_lock, NULL);
  vg_alloc_reset();
  vg_pool_reset();
  vg_state.shm.self_slot = -1;
  vg_state.slot = -1;
  forget_devices();
}

/* Under a grant the region is the node agent's, beside the grant directory
 * (<slot>/region.cache next to <slot>/grant): a tenant that points
 * CUDA_DEVICE_MEMORY_SHARED_CACHE at a fresh file must not get a fresh,
 * unassigned budget. */
static void use_granted_region(void) {
  char path[sizeof(vg_state.cfg.region_path)];
  const char *slash = strrchr(vg_state.grant_dir, '/');
  int base = slash != NULL ? (int)(slash - vg_state.grant_dir) : 0;
  snprintf(path, sizeof(path), "%.*s/region.cache", base, vg_state.grant_dir);
  if (strcmp(path, vg_state.cfg.region_path) != 0 && getenv("CUDA_DEVICE_MEMORY_SHARED_CACHE"))
    vg_warn(
        "CUDA_DEVICE_MEMORY_SHARED_CACHE=%s ignored: this container's grant (%s) comes with "
        "the region %s",
        vg_state.cfg.region_path, vg_state.grant_dir, path);
  snprintf(vg_state.cfg.region_path, sizeof(vg_state.cfg.region_path), "%s", path);
}

/* Under a grant the region is the only budget the container's processes
 * share: one that cannot be opened (held, forged, replaced by the tenant)
 * must not become a private budget per process, each as large as the
 * grant. Elsewhere (vgpu run, a plain preload) a private budget still
 * limits the process. */
static void open_region(void) {
  struct vg_err err;
  if (vg_region_open(&vg_state.shm, vg_state.cfg.region_path, &err) == 0) return;
  if (vg_state.granted) {
    vg_state.config_ok = false;
    snprintf(vg_state.config_error, sizeof(vg_state.config_error), "%s", err.msg);
    vg_error("%s; refusing GPU work rather than giving each process the whole grant", err.msg);
    return;
  }
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
  if (vg_state.cfg.note[0] != '\0') vg_warn("%s", vg_state.cfg.note);
  vg_state.granted = vg_grant_dir(vg_state.grant_dir, sizeof(vg_state.grant_dir));
  if (vg_state.granted) use_granted_region();
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

static const struct vg_grant_gpu *entry_grant(int dev);

/* The environment's limits for ordinal, clamped to the grant of uuid;
 * whatever the grant cut is said once (this runs once per process and GPU). */
static uint64_t granted_mem(int ordinal, const struct vg_grant_gpu *g) {
  uint64_t want = vg_state.cfg.mem_limit[ordinal];
  if (vg_grant_memory(g, want) == want) return want;
  char a[32], b[32];
  vg_warn(
      "a memory limit of %s for CUDA device %d is above this container's grant of %s "
      "(%s/%s, set by the node agent): %s applies",
      want ? vg_format_size(want, a, sizeof(a)) : "unlimited", ordinal,
      vg_format_size(g->memory, b, sizeof(b)), vg_state.grant_dir, VG_GRANT_FILE, b);
  return g->memory;
}

static unsigned granted_sm(int ordinal, const struct vg_grant_gpu *g) {
  unsigned want = vg_state.cfg.sm_limit[ordinal];
  if (vg_grant_cores(g, want) == vg_grant_cores(NULL, want)) return want;
  char asked[16] = "unlimited"; /* 0 and 100 both mean no limit */
  if (want != 0 && want < 100) snprintf(asked, sizeof(asked), "%u %%", want);
  vg_warn(
      "a compute limit of %s for CUDA device %d is above this container's grant of %u %% "
      "(%s/%s, set by the node agent): %u %% applies",
      asked, ordinal, g->cores, vg_state.grant_dir, VG_GRANT_FILE, g->cores);
  return g->cores;
}

static bool policy_allowed(const struct vg_grant_gpu *g) {
  if (g == NULL || vg_state.cfg.sm_policy == g->policy) return true;
  vg_warn("VGPU_SM_POLICY ignored: this container's grant (%s/%s) sets the policy",
          vg_state.grant_dir, VG_GRANT_FILE);
  return false;
}

/* Writes this process's configured limits for ordinal into entry dev,
 * clamped to the grant. A limit below what the container already uses is
 * refused, not applied. */
static void apply_limits_locked(int dev, int ordinal) {
  struct vg_region *r = vg_region_of(&vg_state.shm);
  if (ordinal < 0 || ordinal >= VG_MAX_DEVICES) return;
  const struct vg_grant_gpu *g = entry_grant(dev);
  unsigned sm = vg_state.cfg.sm_set[ordinal] ? granted_sm(ordinal, g) : 0;
  if (vg_state.cfg.sm_set[ordinal] && r->dev[dev].sm_limit != sm) {
    r->dev[dev].sm_limit = sm;
    __atomic_add_fetch(&r->generation, 1, __ATOMIC_RELEASE);
  }
  if (vg_state.cfg.sm_policy_set && r->dev[dev].sm_policy != vg_state.cfg.sm_policy &&
      policy_allowed(g)) {
    r->dev[dev].sm_policy = vg_state.cfg.sm_policy;
    __atomic_add_fetch(&r->generation, 1, __ATOMIC_RELEASE);
  }
  if (!vg_state.cfg.mem_set[ordinal]) return;
  uint64_t want = granted_mem(ordinal, g);
  if (r->dev[dev].mem_limit == want) return;
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

static bool same_file(const struct stat *a, const struct stat *b) {
  return a->st_ino == b->st_ino && a->st_dev == b->st_dev && a->st_size == b->st_size &&
         a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

/* Lock held. Reads the grant file into the buffer not in force and switches
 * to it: 0 switched, 1 nothing new (no file yet, or the file in force), -1
 * with err. Once a grant is in force, a file is read once, a bad one too
 * (the agent replaces the grant by rename: a new file). Readers holding the
 * old buffer finish with it. */
static int switch_grant_locked(struct vg_err *err) {
  char path[sizeof(vg_state.grant_dir) + 8];
  snprintf(path, sizeof(path), "%s/%s", vg_state.grant_dir, VG_GRANT_FILE);
  struct stat st;
  bool seen = stat(path, &st) == 0;
  if (seen && vg_state.grant != NULL && same_file(&st, &g_grant_file)) return 1;
  struct vg_grant *next =
      vg_state.grant == &vg_state.grant_buf[0] ? &vg_state.grant_buf[1] : &vg_state.grant_buf[0];
  int rc = vg_grant_load(vg_state.grant_dir, next, err);
  if (seen) g_grant_file = st;
  if (rc != 0) return rc;
  __atomic_store_n(&vg_state.grant, next, __ATOMIC_RELEASE);
  __atomic_add_fetch(&vg_state.grant_version, 1, __ATOMIC_RELEASE);
  return 0;
}

/* Reads the grant once it exists: 0 read (now or before), 1 not written
 * yet, -1 with err. Serialised, and published only whole. */
static int try_load_grant(struct vg_err *err) {
  if (__atomic_load_n(&vg_state.grant_loaded, __ATOMIC_ACQUIRE)) return 0;
  pthread_mutex_lock(&g_grant_lock);
  int rc = 0;
  if (!vg_state.grant_loaded) {
    g_grant_gen = __atomic_load_n(&vg_region_of(&vg_state.shm)->generation, __ATOMIC_ACQUIRE);
    rc = switch_grant_locked(err);
    if (rc == 0) __atomic_store_n(&vg_state.grant_loaded, true, __ATOMIC_RELEASE);
  }
  pthread_mutex_unlock(&g_grant_lock);
  return rc;
}

/* Under a grant, the grant is the container's assignment too. It is read
 * here without waiting: the checks also serve NVML's enumeration and
 * context creation, which never wait for the agent; until the grant is
 * there the region's assignment (ASSIGNED, set at Allocate) decides. */
static bool outside_grant(const char *uuid) {
  struct vg_err err;
  if (!vg_state.granted || try_load_grant(&err) != 0) return false;
  return vg_grant_find(vg_state.grant, uuid) == NULL;
}

/* Under the node agent the region lists the container's GPUs and no other
 * may be used (VG_REGION_ASSIGNED), and a grant lists them too; elsewhere
 * every GPU the process sees is registered on first use. The assignment is
 * complete before the agent marks the region, so this never waits for
 * pending limits. */
static bool outside_assignment(const char *uuid) {
  const struct vg_region *r = vg_region_of(&vg_state.shm);
  if (outside_grant(uuid)) return true;
  return vg_region_assigned(r) && vg_region_find_device(r, uuid) < 0;
}

static int register_device(const char *uuid, uint64_t total, int ordinal) {
  if (outside_assignment(uuid)) return VG_STATE_NOT_ASSIGNED;
  if (vg_region_lock(&vg_state.shm) != 0) {
    vg_error("region file %s: %s", vg_state.shm.path, vg_shm_lock_strerror(vg_state.shm.last_lock));
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

/* Under a grant: loads it. 1 while the agent has not written it yet, -1
 * (said) when it cannot be used -- GPU work is then refused. */
static int load_grant(void) {
  if (!vg_state.granted) return 0;
  struct vg_err err;
  int rc = try_load_grant(&err);
  if (rc < 0)
    vg_error("%s; refusing GPU work rather than running without this container's grant", err.msg);
  return rc;
}

static bool waiting_for_agent(const struct vg_region *r, int *grant_rc) {
  if (vg_region_pending(r)) return true;
  *grant_rc = load_grant();
  return *grant_rc == 1;
}

/* Waits (bounded) while the node agent has not written this container's
 * limits (and, under a grant, the grant) yet; false on timeout or an
 * unusable grant -- the caller then fails closed. The agent writes the
 * grant before it clears the pending mark, so a tenant that clears the
 * mark itself only gets the wait. */
static bool limits_ready(void) {
  static int ready; /* once seen ready, never waits again */
  const struct vg_region *r = vg_region_of(&vg_state.shm);
  int grant_rc = 0;
  if (__atomic_load_n(&ready, __ATOMIC_ACQUIRE)) return true;
  unsigned waited_ms = 0, limit_ms = vg_state.cfg.limits_timeout_s * 1000;
  bool waiting;
  while ((waiting = waiting_for_agent(r, &grant_rc)) && grant_rc >= 0 && waited_ms < limit_ms) {
    struct timespec ts = {.tv_sec = 0, .tv_nsec = 50 * 1000 * 1000};
    nanosleep(&ts, NULL);
    waited_ms += 50;
  }
  if (grant_rc < 0) return false;
  if (waiting) {
    bool pending = vg_region_pending(r);
    vg_error(
        "the node agent has not written this container's %s %s within %u s "
        "(VGPU_LIMITS_TIMEOUT); refusing GPU work rather than running without them",
        pending ? "limits to" : "grant to", pending ? vg_state.shm.path : vg_state.grant_dir,
        vg_state.cfg.limits_timeout_s);
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
  bool by_grant = __atomic_load_n(&vg_state.grant_loaded, __ATOMIC_ACQUIRE);
  char gpus[700] = "", where[sizeof(vg_state.shm.path) + 32];
  size_t off = 0;
  uint32_t n =
      by_grant ? vg_state.grant->count : __atomic_load_n(&r->device_count, __ATOMIC_ACQUIRE);
  for (uint32_t i = 0; i < n && i < VG_MAX_DEVICES && off < sizeof(gpus); i++)
    off += (size_t)snprintf(gpus + off, sizeof(gpus) - off, "%s%s", i ? ", " : "",
                            by_grant ? vg_state.grant->gpu[i].uuid : r->dev[i].uuid);
  snprintf(where, sizeof(where), "%s %s%s", by_grant ? "grant" : "region file",
           by_grant ? vg_state.grant_dir : vg_state.shm.path, by_grant ? "/" VG_GRANT_FILE : "");
  vg_error(
      "CUDA device %d (%s) is not one of this container's GPUs: the node agent assigned %s "
      "(%s). Contexts and memory on it are refused with CUDA_ERROR_INVALID_DEVICE "
      "instead of being used without limits; keep the NVIDIA_VISIBLE_DEVICES the device "
      "plugin set",
      ordinal, uuid, n ? gpus : "none", where);
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
  if (!vg_region_assigned(vg_region_of(&vg_state.shm)) && !vg_state.granted) return false;
  char text[VG_UUID_LEN];
  if (!ordinal_uuid(ordinal, text, sizeof(text)) || !outside_assignment(text)) return false;
  refuse_ordinal(ordinal, text);
  return true;
}

bool vg_state_has_assignment(void) {
  return vg_state.granted || vg_region_assigned(vg_region_of(&vg_state.shm));
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

int vg_state_find_by_uuid(const char *uuid) {
  if (!vg_state_ready()) return -1;
  if (outside_assignment(uuid)) return VG_STATE_NOT_ASSIGNED;
  return vg_region_find_device(vg_region_of(&vg_state.shm), uuid);
}

bool vg_state_join(void) { return joined(); }

void vg_state_refresh_grant(void) {
  if (!__atomic_load_n(&vg_state.grant_loaded, __ATOMIC_ACQUIRE)) return;
  uint64_t gen = __atomic_load_n(&vg_region_of(&vg_state.shm)->generation, __ATOMIC_ACQUIRE);
  if (gen == __atomic_load_n(&g_grant_gen, __ATOMIC_ACQUIRE)) return;
  pthread_mutex_lock(&g_grant_lock);
  if (gen != g_grant_gen) {
    struct vg_err err;
    int rc = switch_grant_locked(&err);
    if (rc < 0) vg_error("%s; the grant in force stays", err.msg);
    if (rc == 0) vg_info("the node agent changed this container's grant (%s)", vg_state.grant_dir);
    __atomic_store_n(&g_grant_gen, gen, __ATOMIC_RELEASE);
  }
  pthread_mutex_unlock(&g_grant_lock);
}

/* The grant of region entry dev, or NULL; looked up once per entry and
 * grant version (entries are append-only; a new grant bumps the version). */
static const struct vg_grant_gpu *entry_grant(int dev) {
  if (dev < 0 || dev >= VG_MAX_DEVICES ||
      !__atomic_load_n(&vg_state.grant_loaded, __ATOMIC_ACQUIRE))
    return NULL;
  vg_state_refresh_grant();
  unsigned version = __atomic_load_n(&vg_state.grant_version, __ATOMIC_ACQUIRE);
  const struct vg_grant *grant = __atomic_load_n(&vg_state.grant, __ATOMIC_ACQUIRE);
  int i = __atomic_load_n(&g_entry_grant[dev], __ATOMIC_RELAXED);
  if (i == -2 || __atomic_load_n(&g_entry_version[dev], __ATOMIC_RELAXED) != version) {
    const struct vg_grant_gpu *g = vg_grant_find(grant, vg_region_of(&vg_state.shm)->dev[dev].uuid);
    i = g != NULL ? (int)(g - grant->gpu) : -1;
    __atomic_store_n(&g_entry_grant[dev], i, __ATOMIC_RELAXED);
    __atomic_store_n(&g_entry_version[dev], version, __ATOMIC_RELAXED);
  }
  return i >= 0 ? &grant->gpu[i] : NULL;
}

uint64_t vg_state_mem_limit(int dev) {
  return vg_grant_memory(entry_grant(dev), vg_region_mem_limit(vg_region_of(&vg_state.shm), dev));
}

unsigned vg_state_sm_limit(int dev) {
  return vg_grant_cores(
      entry_grant(dev),
      __atomic_load_n(&vg_region_of(&vg_state.shm)->dev[dev].sm_limit, __ATOMIC_RELAXED));
}

unsigned vg_state_sm_policy(int dev) {
  const struct vg_grant_gpu *g = entry_grant(dev);
  return g != NULL ? g->policy : vg_region_of(&vg_state.shm)->dev[dev].sm_policy;
}

bool vg_state_grant_limits_sm(void) {
  if (!__atomic_load_n(&vg_state.grant_loaded, __ATOMIC_ACQUIRE)) return false;
  for (unsigned i = 0; i < vg_state.grant->count; i++)
    if (vg_state.grant->gpu[i].cores != 0) return true;
  return false;
}

/* Adds bytes to what this process holds on dev unless that passes cap
 * (0: no cap). Lock-free: threads of the process race here. */
static bool own_take(int dev, uint64_t bytes, uint64_t cap) {
  uint64_t cur = __atomic_load_n(&g_own[dev], __ATOMIC_ACQUIRE);
  do {
    if (cap != 0 && (bytes > cap || cur > cap - bytes)) return false;
  } while (!__atomic_compare_exchange_n(&g_own[dev], &cur, cur + bytes, true, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE));
  return true;
}

static void own_give(int dev, uint64_t bytes) {
  uint64_t cur = __atomic_load_n(&g_own[dev], __ATOMIC_ACQUIRE);
  while (!__atomic_compare_exchange_n(&g_own[dev], &cur, bytes < cur ? cur - bytes : 0, true,
                                      __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
  }
}

/* Under a grant the container-wide check runs against the lower of the
 * region's limit and the grant, and this process's own total -- kept where
 * no other process can write -- must stay within the grant too. */
enum vg_reserve_rc vg_state_reserve(int dev, uint64_t bytes) {
  if (!joined()) return VG_RESERVE_NO_SLOT;
  const struct vg_grant_gpu *g = entry_grant(dev);
  uint64_t cap = g != NULL ? g->memory : 0;
  if (!own_take(dev, bytes, cap)) return VG_RESERVE_OVER;
  if (vg_region_reserve_capped(&vg_state.shm, vg_state.slot, dev, bytes, cap)) return VG_RESERVE_OK;
  own_give(dev, bytes);
  return VG_RESERVE_OVER;
}

void vg_state_charge(int dev, uint64_t bytes) {
  if (!joined()) return;
  own_take(dev, bytes, 0);
  vg_region_charge(&vg_state.shm, vg_state.slot, dev, bytes);
}

void vg_state_release(int dev, uint64_t bytes) {
  own_give(dev, bytes);
  vg_region_release(&vg_state.shm, vg_state.slot, dev, bytes);
}
