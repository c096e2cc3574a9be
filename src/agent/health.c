/* health.c -- see health.h. */
#include "health.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "deadline.h"
#include "log.h"
#include "nvml_abi.h"

/* NVML's event API, declared as in nvml.h (kept out of src/common on purpose). */
typedef struct nvmlEventSet_st *nvmlEventSet_t;
typedef struct nvmlEventData_st {
  nvmlDevice_t device;
  unsigned long long eventType;
  unsigned long long eventData;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
} nvmlEventData_t;
#define VG_NVML_EVENT_XID 0x0000000000000008ULL /* nvmlEventTypeXidCriticalError */
#define VG_NVML_ERROR_TIMEOUT 10

/* XIDs that are the application's fault, not the GPU's. The same list as
 * NVIDIA's k8s-device-plugin (internal/rm/health.go, applicationErrorXids):
 * 13 graphics engine exception, 31 GPU memory page fault, 43 GPU stopped
 * processing, 45 preemptive cleanup due to previous errors, 68 video processor
 * exception, 109 context switch timeout. Every other XID is critical. */
const unsigned vg_health_default_ignored_xid[] = {13, 31, 43, 45, 68, 109};
const size_t vg_health_default_n_ignored_xid =
    sizeof(vg_health_default_ignored_xid) / sizeof(vg_health_default_ignored_xid[0]);

#define MAX_IGNORED 64

struct nvml_fns {
  nvmlReturn_t (*init)(void);
  nvmlReturn_t (*shutdown)(void);
  nvmlReturn_t (*by_uuid)(const char *, nvmlDevice_t *);
  nvmlReturn_t (*get_uuid)(nvmlDevice_t, char *, unsigned);
  nvmlReturn_t (*set_create)(nvmlEventSet_t *);
  nvmlReturn_t (*reg)(nvmlDevice_t, unsigned long long, nvmlEventSet_t);
  nvmlReturn_t (*wait)(nvmlEventSet_t, nvmlEventData_t *, unsigned);
  nvmlReturn_t (*set_free)(nvmlEventSet_t);
};

struct vg_health {
  void *lib;
  struct nvml_fns nv;
  nvmlEventSet_t set; /* NULL without the event API */
  unsigned interval_ms;
  unsigned ignored[MAX_IGNORED];
  size_t n_ignored;
  vg_health_fn fn;
  void *arg;

  pthread_mutex_t check_lock; /* one checker at a time (NVML calls) */
  pthread_mutex_t lock;       /* the states below, stop */
  pthread_cond_t cond;
  unsigned n;
  struct vg_gpu_health st[VG_MAX_GPUS];
  nvmlDevice_t handle[VG_MAX_GPUS]; /* NULL until the UUID was found */
  bool registered[VG_MAX_GPUS];
  bool logged_error[VG_MAX_GPUS];

  pthread_t thread;
  bool running;
  bool stop;
};

int vg_health_parse_xids(const char *s, unsigned *out, size_t max, size_t *n, char *err,
                         size_t err_len) {
  *n = 0;
  const char *p = s;
  while (*p != '\0') {
    while (*p == ' ' || *p == ',') p++;
    if (*p == '\0') break;
    char *end;
    errno = 0;
    unsigned long v = strtoul(p, &end, 10);
    if (end == p || errno != 0 || v == 0 || v > 0xffff ||
        (*end != '\0' && *end != ',' && *end != ' ')) {
      snprintf(err, err_len, "bad XID list '%s': '%.*s' is not a number 1..65535", s,
               (int)strcspn(p, ", "), p);
      return -1;
    }
    if (*n == max) {
      snprintf(err, err_len, "bad XID list '%s': more than %zu entries", s, max);
      return -1;
    }
    out[(*n)++] = (unsigned)v;
    p = end;
  }
  return 0;
}

static bool ignored(const struct vg_health *h, unsigned long long xid) {
  for (size_t i = 0; i < h->n_ignored; i++)
    if (h->ignored[i] == xid) return true;
  return false;
}

#define SYM(field, name) h->nv.field = (__typeof__(h->nv.field))dlsym(h->lib, name)

struct vg_health *vg_health_new(const struct vg_gpu *gpus, unsigned n,
                                const struct vg_health_opts *opts, vg_health_fn fn, void *arg,
                                char *err, size_t err_len) {
  struct vg_health *h = calloc(1, sizeof(*h));
  if (h == NULL) {
    snprintf(err, err_len, "out of memory");
    return NULL;
  }
  h->lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (h->lib == NULL) {
    snprintf(err, err_len, "cannot load libnvidia-ml.so.1: %s", dlerror());
    free(h);
    return NULL;
  }
  SYM(init, "nvmlInit_v2");
  SYM(shutdown, "nvmlShutdown");
  SYM(by_uuid, "nvmlDeviceGetHandleByUUID");
  SYM(get_uuid, "nvmlDeviceGetUUID");
  SYM(set_create, "nvmlEventSetCreate");
  SYM(reg, "nvmlDeviceRegisterEvents");
  SYM(wait, "nvmlEventSetWait_v2");
  SYM(set_free, "nvmlEventSetFree");
  nvmlReturn_t rc = NVML_ERROR_UNKNOWN;
  if (!h->nv.init || !h->nv.shutdown || !h->nv.by_uuid || !h->nv.get_uuid ||
      (rc = h->nv.init()) != NVML_SUCCESS) {
    snprintf(err, err_len, "NVML unusable for health checks (error %d)", (int)rc);
    dlclose(h->lib);
    free(h);
    return NULL;
  }
  if (h->nv.set_create && h->nv.reg && h->nv.wait && h->nv.set_free) {
    if (h->nv.set_create(&h->set) != NVML_SUCCESS) h->set = NULL;
  }
  if (h->set == NULL) vg_warn("NVML has no event API: XID errors are not detected, lost GPUs are");

  h->interval_ms = opts && opts->interval_ms ? opts->interval_ms : 1000;
  const unsigned *ign =
      opts && opts->ignored_xid ? opts->ignored_xid : vg_health_default_ignored_xid;
  size_t n_ign = opts && opts->ignored_xid ? opts->n_ignored_xid : vg_health_default_n_ignored_xid;
  h->n_ignored = n_ign < MAX_IGNORED ? n_ign : MAX_IGNORED;
  memcpy(h->ignored, ign, h->n_ignored * sizeof(unsigned));
  h->fn = fn;
  h->arg = arg;
  pthread_mutex_init(&h->check_lock, NULL);
  pthread_mutex_init(&h->lock, NULL);
  pthread_cond_init(&h->cond, NULL);
  h->n = n < VG_MAX_GPUS ? n : VG_MAX_GPUS;
  for (unsigned i = 0; i < h->n; i++) {
    h->st[i].index = gpus[i].index;
    snprintf(h->st[i].uuid, sizeof(h->st[i].uuid), "%s", gpus[i].uuid);
    h->st[i].healthy = true;
  }
  return h;
}

static void notify(struct vg_health *h) {
  struct vg_gpu_health copy[VG_MAX_GPUS];
  pthread_mutex_lock(&h->lock);
  unsigned n = h->n;
  memcpy(copy, h->st, n * sizeof(copy[0]));
  pthread_mutex_unlock(&h->lock);
  if (h->fn != NULL) h->fn(copy, n, h->arg);
}

/* Recomputes healthy from lost/xid (h->lock held); true if it changed. */
static bool settle(struct vg_gpu_health *g) {
  bool healthy = !g->lost && g->xid == 0;
  if (healthy == g->healthy) return false;
  g->healthy = healthy;
  if (healthy)
    vg_info("GPU %u (%s) is healthy again", g->index, g->uuid);
  else if (g->lost)
    vg_warn("GPU %u (%s) is lost: Unhealthy", g->index, g->uuid);
  else
    vg_warn("GPU %u (%s) had critical XID %u: Unhealthy", g->index, g->uuid, g->xid);
  return true;
}

/* XID events, for up to wait_ms; true if a state changed. */
static bool take_events(struct vg_health *h, unsigned wait_ms) {
  bool changed = false;
  nvmlEventData_t e;
  unsigned timeout = wait_ms;
  for (;;) {
    memset(&e, 0, sizeof(e));
    nvmlReturn_t rc = h->nv.wait(h->set, &e, timeout);
    if (rc != NVML_SUCCESS) {
      if ((int)rc != VG_NVML_ERROR_TIMEOUT && timeout > 0) {
        /* Not a timeout: do not spin on a broken event set. */
        struct timespec ts = {(time_t)(timeout / 1000), (long)(timeout % 1000) * 1000000L};
        nanosleep(&ts, NULL);
      }
      return changed;
    }
    timeout = 0; /* drain what else is pending, then go on */
    if (!(e.eventType & VG_NVML_EVENT_XID)) continue;
    pthread_mutex_lock(&h->lock);
    for (unsigned i = 0; i < h->n; i++) {
      if (h->handle[i] != e.device) continue;
      if (ignored(h, e.eventData)) {
        vg_info("GPU %u (%s): XID %llu (an application error, ignored)", h->st[i].index,
                h->st[i].uuid, e.eventData);
      } else if (h->st[i].xid == 0) {
        h->st[i].xid = (unsigned)e.eventData;
        changed |= settle(&h->st[i]);
      }
    }
    pthread_mutex_unlock(&h->lock);
  }
}

static void sleep_interruptible(struct vg_health *h, unsigned ms) {
  struct timespec ts = vg_deadline_after(CLOCK_REALTIME, ms);
  pthread_mutex_lock(&h->lock);
  while (!h->stop && pthread_cond_timedwait(&h->cond, &h->lock, &ts) == 0) {
  }
  pthread_mutex_unlock(&h->lock);
}

int vg_health_check(struct vg_health *h, unsigned wait_ms) {
  pthread_mutex_lock(&h->check_lock);
  bool changed = false;
  if (h->set != NULL)
    changed |= take_events(h, wait_ms);
  else if (wait_ms > 0)
    sleep_interruptible(h, wait_ms);

  for (unsigned i = 0; i < h->n; i++) {
    char uuid[96];
    nvmlDevice_t d = NULL;
    nvmlReturn_t rc = h->nv.by_uuid(h->st[i].uuid, &d);
    if (rc == NVML_SUCCESS) rc = h->nv.get_uuid(d, uuid, sizeof(uuid));
    if (rc == NVML_SUCCESS && strcmp(uuid, h->st[i].uuid) != 0) rc = NVML_ERROR_NOT_FOUND;
    pthread_mutex_lock(&h->lock);
    struct vg_gpu_health *g = &h->st[i];
    if (rc == NVML_SUCCESS) {
      h->handle[i] = d;
      h->logged_error[i] = false;
      if (g->lost) {
        g->lost = false;
        g->xid = 0; /* back after a reset */
      }
    } else if (rc == NVML_ERROR_GPU_IS_LOST || rc == NVML_ERROR_NOT_FOUND) {
      g->lost = true;
    } else if (!h->logged_error[i]) {
      vg_warn("GPU %u (%s): NVML error %d while checking health; state kept", g->index, g->uuid,
              (int)rc);
      h->logged_error[i] = true;
    }
    changed |= settle(g);
    bool want_reg = h->set != NULL && !h->registered[i] && rc == NVML_SUCCESS;
    pthread_mutex_unlock(&h->lock);
    if (want_reg) {
      nvmlReturn_t r = h->nv.reg(d, VG_NVML_EVENT_XID, h->set);
      if (r == NVML_SUCCESS)
        h->registered[i] = true;
      else if (!h->logged_error[i]) {
        vg_warn("GPU %u: cannot register for XID events (NVML error %d)", g->index, (int)r);
        h->logged_error[i] = true;
      }
    }
  }
  pthread_mutex_unlock(&h->check_lock);
  if (changed) notify(h);
  return changed ? 1 : 0;
}

static void *run(void *arg) {
  struct vg_health *h = arg;
  for (;;) {
    pthread_mutex_lock(&h->lock);
    bool stop = h->stop;
    pthread_mutex_unlock(&h->lock);
    if (stop) break;
    vg_health_check(h, h->interval_ms);
  }
  return NULL;
}

int vg_health_start(struct vg_health *h) {
  if (h->running) return 0;
  vg_health_check(h, 0); /* registers for events before the thread waits on them */
  if (pthread_create(&h->thread, NULL, run, h) != 0) return -1;
  h->running = true;
  return 0;
}

void vg_health_free(struct vg_health *h) {
  if (h == NULL) return;
  pthread_mutex_lock(&h->lock);
  h->stop = true;
  pthread_cond_broadcast(&h->cond);
  pthread_mutex_unlock(&h->lock);
  if (h->running) pthread_join(h->thread, NULL);
  if (h->set != NULL) h->nv.set_free(h->set);
  h->nv.shutdown();
  dlclose(h->lib);
  pthread_cond_destroy(&h->cond);
  pthread_mutex_destroy(&h->lock);
  pthread_mutex_destroy(&h->check_lock);
  free(h);
}

unsigned vg_health_get(struct vg_health *h, struct vg_gpu_health *out, unsigned n) {
  pthread_mutex_lock(&h->lock);
  unsigned count = h->n;
  memcpy(out, h->st, (n < count ? n : count) * sizeof(out[0]));
  pthread_mutex_unlock(&h->lock);
  return count;
}

void vg_health_apply(struct vg_health *h, struct vg_gpu *gpus, unsigned n) {
  pthread_mutex_lock(&h->lock);
  for (unsigned i = 0; i < n; i++)
    for (unsigned k = 0; k < h->n; k++)
      if (strcmp(gpus[i].uuid, h->st[k].uuid) == 0) gpus[i].healthy = h->st[k].healthy;
  pthread_mutex_unlock(&h->lock);
}

void vg_health_clear(struct vg_health *h, int index) {
  bool changed = false;
  pthread_mutex_lock(&h->lock);
  for (unsigned i = 0; i < h->n; i++) {
    if (index >= 0 && h->st[i].index != (unsigned)index) continue;
    h->st[i].xid = 0;
    changed |= settle(&h->st[i]);
  }
  pthread_mutex_unlock(&h->lock);
  if (changed) notify(h);
}
