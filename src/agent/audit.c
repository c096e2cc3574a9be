/* audit.c -- see audit.h and audit_rules.h (the decision itself). */
#include "audit.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "audit_rules.h"
#include "backstop.h"
#include "config.h"
#include "device_id.h"
#include "devices.h"
#include "gpu_usage.h"
#include "log.h"
#include "podresources.h"
#include "slot.h"
#include "ticker.h"

#define AUDIT_LIST_TIMEOUT_MS 5000
#define MIB (1024.0 * 1024.0)

typedef char slot_name[17];

/* A container the kubelet lists with device IDs (one per resource). */
struct listed {
  slot_name slot;
  char who[600]; /* namespace/pod/container, for the log */
  char ns[256], pod[256], ctr[64];
  char gpus[VG_MAX_DEVICES][VG_UUID_LEN];
  unsigned ngpus;
  bool has_region, joined;
  double age_s; /* since Allocate handed the slot out */
};

struct pass {
  struct listed *v;
  size_t n, cap;
};

struct gpu_state {
  char uuid[VG_UUID_LEN];
  struct vg_audit_gpu_state st;
  bool auditable;
};

struct vg_audit {
  char slots_dir[VG_CONFIG_PATH_MAX + 8];
  char socket[1024];
  uint64_t tolerance, context_allowance;
  unsigned grace_s, interval_ms;
  struct vg_ticker *ticker;
  bool last_failed;             /* the thread's own */
  struct vg_backstop *backstop; /* per container against its grant */

  pthread_mutex_t lock; /* everything below */
  struct gpu_state gpus[VG_MAX_GPUS];
  unsigned ngpus;
  slot_name *unenforced; /* the last pass's */
  size_t nunenforced;
  struct vg_audit_stats stats;
};

static int on_listed(const struct vg_pod_devices *d, void *arg) {
  struct pass *p = arg;
  slot_name slot;
  if (vg_slot_name(d->ids, d->n_ids, slot) != 0) return 0;
  if (p->n == p->cap) {
    size_t cap = p->cap ? p->cap * 2 : 32;
    struct listed *v = realloc(p->v, cap * sizeof(*v));
    if (v == NULL) return -1;
    p->v = v, p->cap = cap;
  }
  struct listed *c = &p->v[p->n++];
  memset(c, 0, sizeof(*c));
  memcpy(c->slot, slot, sizeof(slot));
  snprintf(c->who, sizeof(c->who), "%s/%s/%s", d->ns, d->pod, d->container);
  snprintf(c->ns, sizeof(c->ns), "%s", d->ns);
  snprintf(c->pod, sizeof(c->pod), "%s", d->pod);
  snprintf(c->ctr, sizeof(c->ctr), "%s", d->container);
  for (size_t i = 0; i < d->n_ids; i++) {
    size_t len;
    uint64_t n;
    if (!vg_device_id_parse(d->ids[i], &len, &n) || len >= VG_UUID_LEN) continue;
    bool seen = false;
    for (unsigned g = 0; g < c->ngpus && !seen; g++)
      seen = strncmp(c->gpus[g], d->ids[i], len) == 0 && c->gpus[g][len] == '\0';
    if (!seen && c->ngpus < VG_MAX_DEVICES)
      snprintf(c->gpus[c->ngpus++], VG_UUID_LEN, "%.*s", (int)len, d->ids[i]);
  }
  return 0;
}

static int usage_index(const struct vg_gpu_usage *u, unsigned n, const char *uuid) {
  for (unsigned i = 0; i < n; i++)
    if (strcmp(u[i].uuid, uuid) == 0) return (int)i;
  return -1;
}

/* Adds a listed container's region (if it has one) to the GPUs' readings. */
static void add_region(const struct vg_audit *a, struct listed *c, const struct vg_gpu_usage *u,
                       unsigned nu, struct vg_audit_reading *r) {
  char dir[sizeof(a->slots_dir) + 20];
  snprintf(dir, sizeof(dir), "%s/%s", a->slots_dir, c->slot);
  struct stat st;
  struct vg_shm shm;
  struct vg_err err;
  if (stat(dir, &st) != 0 || vg_region_open_slot(&shm, dir, true, &err) != 0) return;
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  c->age_s =
      (double)(now.tv_sec - st.st_mtim.tv_sec) + (double)(now.tv_nsec - st.st_mtim.tv_nsec) / 1e9;
  const struct vg_region *reg = vg_region_of(&shm);
  c->has_region = true;
  c->joined = vg_region_joined(reg);
  for (uint32_t d = 0; d < reg->device_count && d < VG_MAX_DEVICES; d++) {
    char uuid[VG_UUID_LEN];
    snprintf(uuid, sizeof(uuid), "%.*s", VG_UUID_LEN - 1, reg->dev[d].uuid);
    int g = usage_index(u, nu, uuid);
    if (g < 0) continue;
    /* The live processes' charges: a dead one's stay in the file until the
     * next locker reaps them, but are no longer on the GPU. */
    for (unsigned i = 0; i < VG_MAX_PROCS; i++) {
      if (__atomic_load_n(&reg->proc[i].pid, __ATOMIC_ACQUIRE) == 0 || !vg_shm_slot_alive(&shm, i))
        continue;
      r[g].charged += __atomic_load_n(&reg->proc[i].mem_used[d], __ATOMIC_RELAXED);
      r[g].procs++;
    }
  }
  vg_shm_close(&shm);
}

static struct gpu_state *state_of(struct vg_audit *a, const char *uuid) {
  for (unsigned i = 0; i < a->ngpus; i++)
    if (strcmp(a->gpus[i].uuid, uuid) == 0) return &a->gpus[i];
  if (a->ngpus == VG_MAX_GPUS) return NULL;
  struct gpu_state *s = &a->gpus[a->ngpus++];
  memset(s, 0, sizeof(*s));
  snprintf(s->uuid, sizeof(s->uuid), "%.*s", (int)sizeof(s->uuid) - 1, uuid);
  return s;
}

static bool in(const slot_name *v, size_t n, const char *name) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(v[i], name) == 0) return true;
  return false;
}

/* Lock held. Judges the GPUs and says what changed. */
static void judge_gpus(struct vg_audit *a, const struct vg_gpu_usage *u, unsigned nu,
                       const struct vg_audit_reading *r) {
  for (unsigned i = 0; i < nu; i++) {
    struct gpu_state *s = state_of(a, u[i].uuid);
    if (s == NULL) continue;
    s->auditable = r[i].auditable;
    enum vg_audit_change ch = vg_audit_assess(&r[i], a->context_allowance, a->tolerance, &s->st);
    if (ch == VG_AUDIT_FLAGGED) {
      a->stats.detections++;
      vg_warn(
          "GPU %s: %.0f MiB in use that no container's region accounts for (NVML %.0f MiB in "
          "use, %.0f MiB idle baseline, %.0f MiB charged by %u processes under libvgpu): a "
          "container is likely running without libvgpu, unlimited",
          s->uuid, s->st.unaccounted / MIB, r[i].used / MIB, s->st.baseline / MIB,
          r[i].charged / MIB, r[i].procs);
    } else if (ch == VG_AUDIT_CLEARED) {
      vg_info("GPU %s: its memory in use is accounted for again", s->uuid);
    }
  }
}

/* Lock held. Replaces the unenforced set with this pass's. */
static void judge_containers(struct vg_audit *a, const struct pass *p) {
  slot_name *now = calloc(p->n ? p->n : 1, sizeof(*now));
  if (now == NULL) return; /* the last pass's set stays */
  size_t nnow = 0;
  for (size_t i = 0; i < p->n; i++) {
    const struct listed *c = &p->v[i];
    if (!c->has_region || in(now, nnow, c->slot)) continue;
    bool flagged = false;
    for (unsigned g = 0; g < c->ngpus && !flagged; g++) {
      const struct gpu_state *s = state_of(a, c->gpus[g]);
      flagged = s != NULL && s->st.flagged;
    }
    if (!vg_audit_unenforced(flagged, c->joined, c->age_s, a->grace_s)) continue;
    if (!in(a->unenforced, a->nunenforced, c->slot))
      vg_warn(
          "container %s (slot %s): no process ever joined its region while its GPU holds "
          "memory no region accounts for; libvgpu most likely did not load there (an image "
          "with an old glibc, a static binary, a preload bypassed), so its GPU use is not limited",
          c->who, c->slot);
    memcpy(now[nnow++], c->slot, sizeof(slot_name));
  }
  free(a->unenforced);
  a->unenforced = now, a->nunenforced = nnow;
}

/* Each container with a region, once, against its grant (backstop.h). */
static void run_backstop(struct vg_audit *a, const struct vg_gpu_usage *u, unsigned nu,
                         const struct pass *p) {
  struct vg_backstop_ctr *c = calloc(p->n ? p->n : 1, sizeof(*c));
  if (c == NULL) return;
  size_t n = 0;
  for (size_t i = 0; i < p->n; i++) {
    if (!p->v[i].has_region) continue;
    memcpy(c[n].slot, p->v[i].slot, sizeof(c[n].slot));
    c[n].ns = p->v[i].ns, c[n].pod = p->v[i].pod, c[n].container = p->v[i].ctr;
    n++;
  }
  vg_backstop_pass(a->backstop, u, nu, c, n);
  free(c);
}

int vg_audit_run_once(struct vg_audit *a, struct vg_err *err) {
  struct vg_gpu_usage u[VG_MAX_GPUS];
  unsigned nu = 0;
  char msg[256];
  struct pass p = {0};
  int rc = 0;
  if (vg_gpu_usage_read(u, VG_MAX_GPUS, &nu, msg, sizeof(msg)) != 0) {
    rc = vg_err_set(err, "memory audit: %s", msg);
  } else {
    struct vg_err e;
    if (vg_podresources_list(a->socket, AUDIT_LIST_TIMEOUT_MS, on_listed, &p, &e) != 0)
      rc = vg_err_set(err, "memory audit: %s", e.msg);
  }
  if (rc != 0) {
    free(p.v);
    pthread_mutex_lock(&a->lock);
    a->stats.errors++;
    pthread_mutex_unlock(&a->lock);
    return rc;
  }
  struct vg_audit_reading r[VG_MAX_GPUS];
  memset(r, 0, sizeof(r));
  for (unsigned i = 0; i < nu; i++)
    r[i].nvml_ok = true, r[i].used = u[i].memory_used, r[i].auditable = true;
  for (size_t i = 0; i < p.n; i++) {
    struct listed *c = &p.v[i];
    add_region(a, c, u, nu, r);
    for (unsigned g = 0; g < c->ngpus; g++) {
      int k = usage_index(u, nu, c->gpus[g]);
      if (k < 0) continue;
      r[k].held = true;
      if (!c->has_region) r[k].auditable = false; /* time-sliced without isolation */
    }
  }
  pthread_mutex_lock(&a->lock);
  judge_gpus(a, u, nu, r);
  judge_containers(a, &p);
  a->stats.passes++;
  pthread_mutex_unlock(&a->lock);
  run_backstop(a, u, nu, &p);
  free(p.v);
  return 0;
}

/* ---- the thread and the readers ---- */

/* A source that stays down is said once, not every interval. */
static void audit_pass(void *arg) {
  struct vg_audit *a = arg;
  struct vg_err err;
  bool failed = vg_audit_run_once(a, &err) != 0;
  if (failed && !a->last_failed) vg_warn("%s; GPU memory is not audited meanwhile", err.msg);
  a->last_failed = failed;
}

struct vg_audit *vg_audit_new(const struct vg_audit_opts *o, struct vg_err *err) {
  if (o->state_dir == NULL || o->state_dir[0] == '\0' ||
      strlen(o->state_dir) >= VG_CONFIG_PATH_MAX || o->interval_ms == 0) {
    vg_err_set(err, "memory audit: a state directory and an interval are needed");
    return NULL;
  }
  struct vg_audit *a = calloc(1, sizeof(*a));
  if (a == NULL) {
    vg_err_set(err, "memory audit: out of memory");
    return NULL;
  }
  snprintf(a->slots_dir, sizeof(a->slots_dir), "%s/slots", o->state_dir);
  snprintf(a->socket, sizeof(a->socket), "%s",
           o->podresources_socket != NULL && o->podresources_socket[0] != '\0'
               ? o->podresources_socket
               : VG_PODRESOURCES_SOCKET);
  a->tolerance = o->tolerance, a->context_allowance = o->context_allowance;
  a->grace_s = o->grace_s, a->interval_ms = o->interval_ms;
  struct vg_backstop_opts bo = {a->slots_dir,
                                o->proc_root,
                                o->k8s,
                                o->policy,
                                o->tolerance,
                                o->context_allowance,
                                o->compute_tolerance,
                                o->compute_sustain_s,
                                NULL};
  a->backstop = vg_backstop_new(&bo, err);
  if (a->backstop == NULL) {
    free(a);
    return NULL;
  }
  pthread_mutex_init(&a->lock, NULL);
  return a;
}

int vg_audit_start(struct vg_audit *a, struct vg_err *err) {
  a->ticker = vg_ticker_start(a->interval_ms, audit_pass, a, "memory audit", err);
  return a->ticker != NULL ? 0 : -1;
}

void vg_audit_stop(struct vg_audit *a) {
  if (a == NULL) return;
  vg_ticker_stop(a->ticker);
  vg_backstop_free(a->backstop);
  free(a->unenforced);
  pthread_mutex_destroy(&a->lock);
  free(a);
}

unsigned vg_audit_gpus(struct vg_audit *a, struct vg_audit_gpu *out, unsigned max) {
  pthread_mutex_lock(&a->lock);
  unsigned n = 0;
  for (unsigned i = 0; i < a->ngpus && n < max; i++, n++) {
    snprintf(out[n].uuid, sizeof(out[n].uuid), "%s", a->gpus[i].uuid);
    out[n].unaccounted = a->gpus[i].st.unaccounted;
    out[n].flagged = a->gpus[i].st.flagged;
    out[n].auditable = a->gpus[i].auditable;
  }
  pthread_mutex_unlock(&a->lock);
  return n;
}

bool vg_audit_slot_unenforced(struct vg_audit *a, const char *slot) {
  pthread_mutex_lock(&a->lock);
  bool yes = in(a->unenforced, a->nunenforced, slot);
  pthread_mutex_unlock(&a->lock);
  return yes;
}

struct vg_backstop *vg_audit_backstop(struct vg_audit *a) {
  return a->backstop;
}

void vg_audit_get_stats(struct vg_audit *a, struct vg_audit_stats *st) {
  pthread_mutex_lock(&a->lock);
  *st = a->stats;
  pthread_mutex_unlock(&a->lock);
}
