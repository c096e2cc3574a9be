/*
 * cuda_init.c -- cuInit, the driver version, visible devices and fork.
 *
 * cuInit attaches the process to the shared device state (claiming a process
 * slot, so the process's memory is reclaimed when it dies) and builds the
 * ordinal -> device map in two steps, as a container on a real node does:
 * NVIDIA_VISIBLE_DEVICES picks the GPUs the container has at all
 * (sim_visible.c, the toolkit's part), then CUDA_VISIBLE_DEVICES selects and
 * orders among those the way NVIDIA's driver reads it: a comma list of
 * indices (into that set) or GPU-UUIDs (unique prefixes allowed); the first
 * invalid, unknown or repeated entry ends the list. The outcome of the first
 * cuInit is kept, as the real driver keeps it.
 *
 * A child forked from a process that had initialised CUDA cannot use it (the
 * real driver's rule too): every call there returns
 * CUDA_ERROR_NOT_INITIALIZED. That also keeps the child from charging memory
 * to its parent's slot.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cuda_internal.h"
#include "log.h"

struct cu_process g_cu = {.lock = PTHREAD_MUTEX_INITIALIZER};
static bool g_ready; /* atomic: cuInit succeeded in this process */

static void on_fork_child(void) {
  if (__atomic_load_n(&g_ready, __ATOMIC_ACQUIRE)) {
    g_cu.forked = true;
    __atomic_store_n(&g_ready, false, __ATOMIC_RELEASE);
  }
  pthread_mutex_init(&g_cu.lock, NULL);
}

__attribute__((constructor)) static void register_fork_handler(void) {
  pthread_atfork(NULL, NULL, on_fork_child);
}

uint64_t cu_max_u64(uint64_t a, uint64_t b) { return a > b ? a : b; }

static void spin_until(uint64_t t) {
  while (vg_sim_now_ns() < t) {
  }
}

/* Spins: a driver call's host time is CPU time, not a sleep, and a sleep
 * of microseconds would overshoot by the timer slack. */
void cu_host_cost(uint64_t ns) {
  if (ns != 0) spin_until(vg_sim_now_ns() + ns);
}

/* Sleeps to within SPIN_NS of the end, then spins: a sleep wakes up to the
 * timer slack (50 us) late, which made a synchronise on a short kernel take
 * 140 us where NVIDIA's driver, which spins too, takes a few. */
#define SPIN_NS (100ull * 1000)

void cu_wait_until(uint64_t end) {
  uint64_t now = vg_sim_now_ns();
  if (end <= now) return; /* done already: nothing to wake from */
  end += g_cu.sim.st->config.sync_ns;
  if (end - now > SPIN_NS) vg_sim_sleep_until(end - SPIN_NS);
  spin_until(end);
}

uint64_t cu_round_up(uint64_t v, uint64_t to) {
  if (v > UINT64_MAX - (to - 1)) return UINT64_MAX - (UINT64_MAX % to);
  return (v + to - 1) / to * to;
}

CUresult cu_ready(void) {
  return __atomic_load_n(&g_ready, __ATOMIC_ACQUIRE) ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
}

CUresult cu_device(CUdevice dev, unsigned *phys) {
  if (dev < 0 || dev >= g_cu.nvisible) return CUDA_ERROR_INVALID_DEVICE;
  *phys = g_cu.phys[dev];
  return CUDA_SUCCESS;
}

/* Position in the container's set (host[0..nhost)) that a CUDA_VISIBLE_DEVICES
 * entry names, or -1. */
static int parse_visible_entry(const char *token, size_t len, const unsigned *host,
                               unsigned nhost) {
  if (len >= 4 && strncasecmp(token, "GPU-", 4) == 0) {
    int pos = vg_sim_match_uuid(g_cu.sim.st, host, nhost, token, len);
    return pos >= 0 ? pos : -1; /* an ambiguous prefix ends the list too */
  }
  if (len == 0 || len > 6) return -1;
  unsigned v = 0;
  for (size_t i = 0; i < len; i++) {
    if (!isdigit((unsigned char)token[i])) return -1;
    v = v * 10 + (unsigned)(token[i] - '0');
  }
  return v < nhost ? (int)v : -1;
}

static bool already_visible(unsigned phys) {
  for (int i = 0; i < g_cu.nvisible; i++)
    if (g_cu.phys[i] == phys) return true;
  return false;
}

/* CUDA_VISIBLE_DEVICES over the container's devices host[0..nhost). */
static void parse_visible_devices(const unsigned *host, unsigned nhost) {
  const char *list = getenv("CUDA_VISIBLE_DEVICES");
  g_cu.nvisible = 0;
  if (list == NULL) {
    for (unsigned i = 0; i < nhost; i++) g_cu.phys[g_cu.nvisible++] = host[i];
    return;
  }
  for (const char *p = list; g_cu.nvisible < (int)nhost;) {
    while (*p == ' ') p++;
    size_t len = strcspn(p, ",");
    size_t trimmed = len;
    while (trimmed > 0 && p[trimmed - 1] == ' ') trimmed--;
    int pos = parse_visible_entry(p, trimmed, host, nhost);
    if (pos < 0 || already_visible(host[pos])) break;
    g_cu.phys[g_cu.nvisible++] = host[pos];
    if (p[len] != ',') break;
    p += len + 1;
  }
}

static CUresult read_fault_env(void) {
  const char *v = getenv("VGPU_SIM_FAIL_ALLOC_AFTER");
  if (v == NULL) return CUDA_SUCCESS;
  char *end;
  unsigned long long n = strtoull(v, &end, 10);
  if (*v < '0' || *v > '9' || *end != '\0') {
    vg_error("VGPU_SIM_FAIL_ALLOC_AFTER='%s' is not valid: expected a whole number", v);
    return CUDA_ERROR_INVALID_VALUE;
  }
  g_cu.fail_alloc_set = true;
  g_cu.fail_alloc_after = n;
  return CUDA_SUCCESS;
}

static void setup_devices(void) {
  for (int i = 0; i < g_cu.nvisible; i++) {
    struct CUctx_st *p = &g_cu.primary[i];
    p->obj.kind = CU_OBJ_CTX;
    p->ordinal = i;
    p->phys = g_cu.phys[i];
    p->primary = true;
    cu_handle_add(p);
    struct CUmemPoolHandle_st *pool = &g_cu.default_pool[i];
    pool->obj.kind = CU_OBJ_POOL;
    pool->phys = g_cu.phys[i];
    pool->is_default = true;
    pool->reuse[0] = pool->reuse[1] = pool->reuse[2] = 1;
    cu_handle_add(pool);
  }
}

static CUresult do_init(void) {
  struct vg_err err;
  struct vg_sim_config cfg;
  if (vg_sim_config_from_env(&cfg, &err) != 0) {
    vg_error("simulated GPU: %s", err.msg);
    return CUDA_ERROR_INVALID_VALUE;
  }
  CUresult rc = read_fault_env();
  if (rc != CUDA_SUCCESS) return rc;
  if (vg_sim_attach(&g_cu.sim, true, &err) != 0) {
    vg_error("simulated GPU: %s", err.msg);
    return CUDA_ERROR_UNKNOWN;
  }
  unsigned host[VG_SIM_MAX_DEVICES], nhost;
  struct vg_err ignored;
  if (vg_sim_visible_devices(g_cu.sim.st, host, &nhost, &ignored, &err) != 0) {
    vg_error("simulated GPU: %s", err.msg);
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (ignored.msg[0] != '\0')
    vg_warn(
        "simulated GPU: NVIDIA_VISIBLE_DEVICES names no GPU in %s; not visible (the "
        "container toolkit would refuse to create such a container)",
        ignored.msg);
  parse_visible_devices(host, nhost);
  if (g_cu.nvisible == 0) return CUDA_ERROR_NO_DEVICE;
  setup_devices();
  return CUDA_SUCCESS;
}

CUresult cuInit(unsigned int flags) {
  if (g_cu.forked) return CUDA_ERROR_NOT_INITIALIZED;
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&g_cu.lock);
  if (!g_cu.initialized) {
    g_cu.init_rc = do_init();
    g_cu.initialized = true;
    if (g_cu.init_rc == CUDA_SUCCESS) __atomic_store_n(&g_ready, true, __ATOMIC_RELEASE);
  }
  CUresult rc = g_cu.init_rc;
  pthread_mutex_unlock(&g_cu.lock);
  return rc;
}

CUresult cuDriverGetVersion(int *version) {
  if (version == NULL) return CUDA_ERROR_INVALID_VALUE;
  *version = VG_CUDA_API_VERSION;
  return CUDA_SUCCESS;
}
