/* binder.c -- see binder.h and docs/allocation.md ("Binder"). */
#include "binder.h"

#include "slot.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <json-c/json.h>

#include "deadline.h"
#include "assignment.h"
#include "assignment_mac.h"
#include "device_id.h"
#include "distrust.h"
#include "flock_holders.h"
#include "region_guard.h"
#include "grant.h"
#include "k8s.h"
#include "log.h"
#include "once.h"
#include "pod_quantity.h"
#include "podresources.h"
#include "region.h"
#include "resizer.h"

#define BINDER_INTERVAL_MS 2000 /* the safety net */
#define BINDER_FAST_MS 25       /* first retry after a wake; doubles up to the interval */
#define BINDER_LIST_TIMEOUT_MS 5000
#define BINDER_GPUS_MAX 64
/* A flock held this long on a region is no open in progress (those take
 * microseconds): a process of the container holds it on purpose. */
#define BINDER_FLOCK_REPORT_MS 3000
#define BINDER_LOCKS_FILE "/proc/locks"

struct binder_gpu {
  char uuid[96];
  uint64_t memory;
};

struct vg_binder {
  struct vg_plugin_config cfg;
  struct vg_k8s_client *k8s;
  char socket[1024];
  char state_dir[VG_CONFIG_PATH_MAX];
  char node[256];             /* for resizes; "" = none handled */
  struct vg_assign_key *akey; /* borrowed; NULL: assignments are not signed */

  pthread_mutex_t lock; /* everything below */
  pthread_cond_t cond;
  pthread_t thread;
  bool started, stopping;
  uint64_t wakes;
  struct binder_gpu gpus[BINDER_GPUS_MAX];
  unsigned ngpus;
  struct vg_binder_stats stats;

  /* Binder thread only (or the vg_binder_run_once caller). */
  struct vg_once logged;         /* "what|ns/pod/container/resource" said once */
  struct vg_distrust distrusted; /* regions whose lock a container held or forged */
  struct vg_distrust flocked;    /* regions seen under flock, and since when */
  char last_logged_error[VG_ERR_MAX];
  uint64_t pass_unbindable;
  uint64_t pass_bound;
  bool pass_error;
};

static void blog(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void blog(const char *fmt, ...) {
  char line[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof(line), fmt, ap);
  va_end(ap);
  vg_info("binder: %s", line);
}

/* True the first time (what, key) is seen: say it once, not every pass. */
static bool first_time(struct vg_binder *b, const char *what, const char *key) {
  char k[1400];
  snprintf(k, sizeof(k), "%s|%s", what, key);
  return vg_once_first(&b->logged, k);
}

static void set_error(struct vg_binder *b, const char *msg) {
  pthread_mutex_lock(&b->lock);
  /* The precision keeps -O3's -Wformat-truncation quiet: cutting is meant. */
  snprintf(b->stats.last_error, sizeof(b->stats.last_error), "%.*s", VG_ERR_MAX - 1, msg);
  pthread_mutex_unlock(&b->lock);
  b->pass_error = true;
  if (strcmp(b->last_logged_error, msg) != 0) {
    snprintf(b->last_logged_error, sizeof(b->last_logged_error), "%.*s", VG_ERR_MAX - 1, msg);
    blog("%s", msg);
  }
}

/* ---- limits from the pod ---- */

/* The container's resources.limits (or requests: extended resources must
 * have both equal, so either says it), NULL if the pod has no such container. */
static json_object *container_limits(json_object *pod, const char *container) {
  json_object *spec, *list;
  if (!json_object_object_get_ex(pod, "spec", &spec)) return NULL;
  static const char *const lists[] = {"containers", "initContainers"};
  for (size_t l = 0; l < 2; l++) {
    if (!json_object_object_get_ex(spec, lists[l], &list) ||
        !json_object_is_type(list, json_type_array))
      continue;
    for (size_t i = 0; i < json_object_array_length(list); i++) {
      json_object *c = json_object_array_get_idx(list, i), *name, *res, *lim;
      if (!json_object_object_get_ex(c, "name", &name) ||
          strcmp(json_object_get_string(name), container) != 0)
        continue;
      if (!json_object_object_get_ex(c, "resources", &res)) return json_object_new_object();
      if (json_object_object_get_ex(res, "limits", &lim)) return json_object_get(lim);
      if (json_object_object_get_ex(res, "requests", &lim)) return json_object_get(lim);
      return json_object_new_object();
    }
  }
  return NULL;
}

/* 1 with *v set, 0 when absent, -1 when malformed (pod_quantity.h: the one
 * reading of a pod's quantities, the extender's too). */
static int get_quantity(json_object *limits, const char *name, enum vg_pod_quantity_unit unit,
                        uint64_t *v) {
  json_object *q;
  int64_t x;
  if (name[0] == '\0' || !json_object_object_get_ex(limits, name, &q)) return 0;
  if (vg_pod_quantity(q, unit, &x, NULL) != 0) return -1;
  *v = (uint64_t)x;
  return 1;
}

struct gpu_limit {
  char uuid[96];
  uint64_t ids;     /* the container's IDs on this GPU */
  uint64_t memory;  /* bytes; 0 unlimited */
  unsigned percent; /* SM; 0 unlimited */
};

static uint64_t gpu_memory(struct vg_binder *b, const char *uuid, const struct vg_region *r) {
  uint64_t m = 0;
  pthread_mutex_lock(&b->lock);
  for (unsigned i = 0; i < b->ngpus; i++)
    if (strcmp(b->gpus[i].uuid, uuid) == 0) m = b->gpus[i].memory;
  pthread_mutex_unlock(&b->lock);
  if (m != 0) return m;
  for (uint32_t i = 0; i < r->device_count && i < VG_MAX_DEVICES; i++)
    if (strncmp(r->dev[i].uuid, uuid, VG_UUID_LEN) == 0) return r->dev[i].mem_total;
  return 0;
}

/* ---- one container ---- */

struct pass {
  struct vg_binder *b;
  struct vg_resizer *resizer; /* open resize requests on this node, or NULL */
  struct vg_flock_set flocks; /* the node's flocks at the start of the pass */
  bool have_flocks;
};

/* Leaves the region pending and says why, once per container and reason. */
static void leave_pending(struct vg_binder *b, const char *key, const char *what, const char *fmt,
                          ...) __attribute__((format(printf, 4, 5)));
static void leave_pending(struct vg_binder *b, const char *key, const char *what, const char *fmt,
                          ...) {
  b->pass_unbindable++;
  if (!first_time(b, what, key)) return;
  char msg[900];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  blog("%s: %s; its limits stay pending (libvgpu fails closed after its timeout)", key, msg);
}

/* The GPUs the IDs name ("<GPU-UUID>::<slot>"), with how many IDs each.
 * Returns how many, or -1 after leaving the container pending. */
static int gpus_of_ids(struct vg_binder *b, const struct vg_pod_devices *d, const char *key,
                       struct gpu_limit gl[VG_MAX_DEVICES]) {
  size_t ng = 0;
  for (size_t i = 0; i < d->n_ids; i++) {
    size_t len;
    uint64_t n;
    if (!vg_device_id_parse(d->ids[i], &len, &n) || len >= sizeof(gl[0].uuid)) {
      leave_pending(b, key, "bad-id", "device ID \"%s\" names no GPU", d->ids[i]);
      return -1;
    }
    size_t g = 0;
    while (g < ng && !(strlen(gl[g].uuid) == len && strncmp(gl[g].uuid, d->ids[i], len) == 0)) g++;
    if (g == ng) {
      if (ng == VG_MAX_DEVICES) {
        leave_pending(b, key, "too-many", "more than %d GPUs", VG_MAX_DEVICES);
        return -1;
      }
      memset(&gl[ng], 0, sizeof(gl[ng]));
      memcpy(gl[ng].uuid, d->ids[i], len);
      ng++;
    }
    gl[g].ids++;
  }
  return (int)ng;
}

/* Appends ",uuid" (or "uuid" first) when it fits. */
static void append_uuid(char *buf, size_t len, const char *uuid) {
  size_t n = strlen(buf), u = strlen(uuid);
  if (n + u + 2 > len) return;
  if (n > 0) buf[n++] = ',';
  memcpy(buf + n, uuid, u + 1);
}

/* Limits from the scheduler's assignment: the kubelet must have given the
 * container exactly the GPUs the scheduler accounted it on, else its limits
 * stay pending (running it on another GPU could overcommit that GPU). */
static int limits_from_assignment(struct vg_binder *b, const struct vg_pod_devices *d,
                                  const char *key, const struct vg_assign_ctr *ac,
                                  struct gpu_limit *gl, int ng) {
  bool same = ng == ac->ngpus;
  for (int g = 0; g < ng && same; g++) {
    same = false;
    for (int k = 0; k < ac->ngpus; k++) {
      if (strcmp(gl[g].uuid, ac->gpu[k].uuid) != 0) continue;
      same = true;
      gl[g].memory = (uint64_t)ac->gpu[k].memory;
      gl[g].percent = vg_grant_cores_of(ac->gpu[k].cores);
    }
  }
  if (same) return 0;
  char got[512] = "", want[512] = "";
  for (int g = 0; g < ng; g++) append_uuid(got, sizeof(got), gl[g].uuid);
  for (int k = 0; k < ac->ngpus; k++) append_uuid(want, sizeof(want), ac->gpu[k].uuid);
  leave_pending(b, key, "mismatch",
                "the kubelet gave container %s of pod %s/%s GPU(s) %s, but the scheduler assigned "
                "%s (%s)",
                d->container, d->ns, d->pod, got, want, VG_ASSIGNED_ANNOTATION);
  return -1;
}

/* Limits from the container's own resources (pods placed without our
 * scheduler, or dialects it does not assign). */
static int limits_from_resources(struct vg_binder *b, const struct vg_pod_devices *d,
                                 enum vg_dialect dialect, const char *key, json_object *limits,
                                 const struct vg_region *r, struct gpu_limit *gl, int ng) {
  const char *missing = NULL, *malformed = NULL;
  uint64_t mem = 0, pct = 0, cores = 0, units = 0;
  int has_mem = 0, has_pct = 0, has_cores = 0;
  if (dialect == VG_DIALECT_VGPU) {
    const struct vg_dialect_vgpu *v = &b->cfg.vgpu;
    uint64_t count;
    int has_count = get_quantity(limits, v->resource_count, VG_QTY_COUNT, &count);
    has_mem = get_quantity(limits, v->resource_mem, VG_QTY_MIB, &mem);
    has_pct = get_quantity(limits, v->resource_mem_percentage, VG_QTY_COUNT, &pct);
    has_cores = get_quantity(limits, v->resource_cores, VG_QTY_COUNT, &cores);
    if (has_count == 0) missing = v->resource_count;
    if (has_count < 0) malformed = v->resource_count;
    if (has_mem < 0) malformed = v->resource_mem;
    if (has_pct < 0 || (has_pct > 0 && pct > 100)) malformed = v->resource_mem_percentage;
    if (has_cores < 0 || (has_cores > 0 && cores > 100)) malformed = v->resource_cores;
  } else {
    const struct vg_dialect_cce *c = &b->cfg.cce;
    int has_units = get_quantity(limits, c->resource_mem, VG_QTY_COUNT, &units);
    has_cores = get_quantity(limits, c->resource_core, VG_QTY_COUNT, &cores);
    if (has_units == 0) missing = c->resource_mem;
    if (has_units < 0) malformed = c->resource_mem;
    if (has_cores < 0 || (has_cores > 0 && cores > 100)) malformed = c->resource_core;
    if (has_units > 0 && units != d->n_ids && first_time(b, "cce-count", key))
      blog("%s: %s is %" PRIu64 " but the kubelet gave %zu IDs; using the IDs", key,
           c->resource_mem, units, d->n_ids);
  }
  if (missing != NULL) {
    leave_pending(b, key, "no-resource", "container %s of pod %s/%s has no %s in its limits",
                  d->container, d->ns, d->pod, missing);
    return -1;
  }
  if (malformed != NULL) {
    leave_pending(b, key, "malformed", "container %s of pod %s/%s: malformed %s", d->container,
                  d->ns, d->pod, malformed);
    return -1;
  }
  for (int g = 0; g < ng; g++) {
    gl[g].percent = has_cores > 0 ? (unsigned)cores : 0;
    if (dialect == VG_DIALECT_CCE) {
      gl[g].memory = gl[g].ids * VG_CCE_UNIT;
    } else if (has_mem > 0 && mem > 0) {
      gl[g].memory = mem << 20; /* MiB per GPU */
    } else if (has_pct > 0 && pct > 0 && pct < 100) {
      uint64_t total = gpu_memory(b, gl[g].uuid, r);
      if (total == 0) {
        leave_pending(b, key, "no-memory", "the memory of %s is unknown (for %s)", gl[g].uuid,
                      b->cfg.vgpu.resource_mem_percentage);
        return -1;
      }
      gl[g].memory = (total / 100 * pct + total % 100 * pct / 100) & ~((1ull << 20) - 1);
    } else {
      gl[g].memory = 0; /* HAMi's default: the whole GPU (100 %) */
    }
  }
  return 0;
}

/* The grant (grant.h) beside the region: <slot>/grant/grant. Written before
 * the pending mark is cleared, so that a process never finds the limits
 * ready and the grant missing (libvgpu would wait for it, then refuse). */
static int write_grant(struct vg_binder *b, const struct vg_shm *shm, const char *key,
                       const struct gpu_limit *gl, int ng) {
  struct vg_grant g = {.count = (unsigned)ng};
  for (int i = 0; i < ng; i++) {
    snprintf(g.gpu[i].uuid, sizeof(g.gpu[i].uuid), "%.95s", gl[i].uuid);
    g.gpu[i].memory = gl[i].memory;
    g.gpu[i].cores = vg_grant_cores_of(gl[i].percent);
  }
  char dir[sizeof(shm->path) + 8];
  const char *slash = strrchr(shm->path, '/');
  snprintf(dir, sizeof(dir), "%.*s/grant", slash ? (int)(slash - shm->path) : 1,
           slash ? shm->path : ".");
  struct vg_err e = {""};
  /* A slot an older agent made has no grant directory: its container has no
   * grant mount either, so the grant is harmless there, and its absence must
   * not keep the container pending. */
  if (mkdir(dir, 0755) != 0 && errno != EEXIST)
    vg_err_set(&e, "cannot create %s: %s", dir, strerror(errno));
  else if (vg_grant_write(dir, &g, &e) == 0)
    return 0;
  leave_pending(b, key, "grant", "%s", e.msg);
  return -1;
}

/* Writes every GPU's limits and the grant, then clears the pending mark, so
 * libvgpu never sees half-written limits. */
static void write_limits(struct vg_binder *b, struct vg_shm *shm, const char *key,
                         const struct gpu_limit *gl, int ng) {
  const struct vg_region *r = vg_region_of(shm);
  for (int g = 0; g < ng; g++) {
    if (vg_region_lock(shm) != 0) {
      leave_pending(b, key, "lock", "%s: %s", shm->path, vg_shm_lock_strerror(shm->last_lock));
      return;
    }
    int dev = vg_region_device_locked(shm, gl[g].uuid, gpu_memory(b, gl[g].uuid, r));
    vg_region_unlock(shm);
    if (dev < 0) {
      leave_pending(b, key, "full", "%s has no room for another GPU", shm->path);
      return;
    }
    struct vg_err e = {""};
    if (vg_region_set_mem_limit(shm, dev, gl[g].memory, &e) != 0) {
      leave_pending(b, key, "set-limit", "%s", e.msg);
      return;
    }
    if (vg_region_set_sm_limit(shm, dev, gl[g].percent, &e) != 0) {
      leave_pending(b, key, "set-limit", "%s", e.msg);
      return;
    }
  }
  if (write_grant(b, shm, key, gl, ng) != 0) return;
  vg_region_set_pending(shm, false);
  b->pass_bound++;
  pthread_mutex_lock(&b->lock);
  b->stats.bound++;
  pthread_mutex_unlock(&b->lock);
}

/* Reads the pod; NULL after leaving the container pending or noting an error. */
static json_object *read_pod(struct vg_binder *b, const struct vg_pod_devices *d, const char *key) {
  if (b->k8s == NULL) {
    leave_pending(b, key, "no-api", "no Kubernetes API client to read the pod from");
    return NULL;
  }
  json_object *pod = NULL;
  struct vg_err err = {""};
  int rc = vg_k8s_get_pod(b->k8s, d->ns, d->pod, &pod, &err);
  if (rc == VG_K8S_ENOTFOUND) {
    leave_pending(b, key, "no-pod", "pod %s/%s is not in the API server", d->ns, d->pod);
    return NULL;
  }
  if (rc != 0) {
    pthread_mutex_lock(&b->lock);
    b->stats.api_errors++;
    pthread_mutex_unlock(&b->lock);
    b->pass_unbindable++;
    char msg[VG_ERR_MAX + 200];
    snprintf(msg, sizeof(msg), "cannot read pod %s/%s (limits stay pending, retrying): %s", d->ns,
             d->pod, err.msg);
    set_error(b, msg);
    return NULL;
  }
  return pod;
}

/* With an assignment key: did vgpu-scheduler sign pod's assignment for
 * this node (assignment_mac.h)? Else why not, in why. */
static bool signed_by_scheduler(struct vg_binder *b, json_object *pod,
                                const struct vg_pod_devices *d, char *why, size_t len) {
  if (b->akey == NULL) return true;
  struct vg_err detail = {""};
  enum vg_assign_trust t =
      vg_assign_verify_pod(b->akey, pod, b->node[0] != '\0' ? b->node : NULL, &detail);
  if (t == VG_ASSIGN_SIGNED) return true;
  vg_assign_trust_refusal(t, d->ns, d->pod, &detail, why, len);
  return false;
}

static void bind_container(struct vg_binder *b, const struct vg_pod_devices *d,
                           enum vg_dialect dialect, struct vg_shm *shm, const char *key) {
  json_object *pod = read_pod(b, d, key);
  if (pod == NULL) return;
  struct vg_assignment asg;
  struct vg_err aerr = {""};
  int has = vg_assign_from_pod(pod, &asg, &aerr);
  json_object *limits = container_limits(pod, d->container);
  struct gpu_limit gl[VG_MAX_DEVICES];
  int ng = -1;
  char unsigned_why[VG_ERR_MAX + 400];
  if (has != 0 && !signed_by_scheduler(b, pod, d, unsigned_why, sizeof(unsigned_why))) {
    /* Not the scheduler's: its grant must not be written, nor the pod's own
     * resources used (the gate refuses such a pod at Allocate; this is for
     * one that got past it). */
    leave_pending(b, key, "unsigned-assignment", "%s", unsigned_why);
  } else if (has < 0) {
    /* The scheduler's accounting of this pod is unreadable: fail closed. */
    leave_pending(b, key, "bad-assignment", "pod %s/%s: %s", d->ns, d->pod, aerr.msg);
  } else if (limits == NULL) {
    leave_pending(b, key, "no-container", "pod %s/%s has no container %s", d->ns, d->pod,
                  d->container);
  } else if ((ng = gpus_of_ids(b, d, key, gl)) >= 0) {
    const struct vg_assign_ctr *ac = has ? vg_assign_find(&asg, d->container, d->resource) : NULL;
    int rc = ac != NULL
                 ? limits_from_assignment(b, d, key, ac, gl, ng)
                 : limits_from_resources(b, d, dialect, key, limits, vg_region_of(shm), gl, ng);
    if (rc == 0) write_limits(b, shm, key, gl, ng);
  }
  json_object_put(limits);
  json_object_put(pod);
  if (has > 0) vg_assign_free(&asg);
}

/* What a distrusted region costs its container, in the report. */
static const char GIVEN_UP[] =
    "the node agent no longer waits on this region (the container stays held to its grant; "
    "pending limits and resizes of it are refused)";
static const char SELF_BLOCKED[] =
    "its own new processes cannot open it and refuse GPU work (the node agent takes no flock and "
    "is not held up; the container stays held to its grant)";

/* A region the container forged, replaced or holds: said once in the log
 * and as a Warning Event on the pod, and counted. */
static void report_untrusted(struct vg_binder *b, const struct vg_pod_devices *d, const char *slot,
                             const char *why, const char *cost) {
  char key[1200];
  snprintf(key, sizeof(key), "%s/%s/%s", d->ns, d->pod, slot);
  if (!first_time(b, "untrusted", key)) return;
  pthread_mutex_lock(&b->lock);
  b->stats.untrusted++;
  pthread_mutex_unlock(&b->lock);
  char msg[VG_ERR_MAX + 300];
  snprintf(msg, sizeof(msg), "container %s: %s; %s", d->container, why, cost);
  blog("pod %s/%s: %s", d->ns, d->pod, msg);
  if (b->k8s == NULL) return;
  struct vg_err err = {""};
  if (vg_k8s_pod_event_named(b->k8s, d->ns, d->pod, "Warning", "RegionUntrusted", msg,
                             "vgpu-device-plugin", &err) != 0)
    blog("pod %s/%s: the RegionUntrusted Event could not be recorded: %s", d->ns, d->pod, err.msg);
}

/* A flock the container has held on its region past BINDER_FLOCK_REPORT_MS
 * (flock_holders.h): seen in one pass, reported in a later one. */
static void check_flock(struct pass *p, const struct vg_pod_devices *d, const struct vg_shm *shm,
                        const char *slot) {
  struct vg_binder *b = p->b;
  if (!p->have_flocks) return;
  if (!vg_flock_held(&p->flocks, shm->fd)) {
    vg_distrust_remove(&b->flocked, shm->fd);
    return;
  }
  long long age = vg_distrust_age_ms(&b->flocked, shm->fd);
  if (age < 0) vg_distrust_add(&b->flocked, shm->fd);
  if (age < BINDER_FLOCK_REPORT_MS) return;
  char why[VG_ERR_MAX];
  snprintf(why, sizeof(why),
           "region file %.300s: a process of the container has held its flock "
           "for %lld s",
           shm->path, age / 1000);
  report_untrusted(b, d, slot, why, SELF_BLOCKED);
}

/* Binds and resizes one container through its region, waiting at most
 * VG_REGION_AGENT_LOCK_WAIT_MS for the lock, and not at all once the
 * region has been found held or forged (distrust.h). */
static void use_region(struct pass *p, const struct vg_pod_devices *d, enum vg_dialect dialect,
                       struct vg_shm *shm, const char *slot) {
  struct vg_binder *b = p->b;
  if (vg_distrust_has(&b->distrusted, shm->fd)) shm->lock_wait_ms = 0;
  if (dialect != VG_DIALECT_COUNT && vg_region_pending(vg_region_of(shm))) {
    char key[1200];
    snprintf(key, sizeof(key), "%s/%s/%s/%s", d->ns, d->pod, d->container, d->resource);
    bind_container(b, d, dialect, shm, key);
  }
  int failed = shm->last_lock;
  if (failed == VG_SHM_LOCKED) {
    vg_resizer_container(p->resizer, d, shm, slot);
    failed = shm->last_lock;
  }
  bool lost = vg_region_guard_lost(shm);
  if (failed == VG_SHM_LOCKED && !lost) return;
  vg_distrust_add(&b->distrusted, shm->fd);
  char why[VG_ERR_MAX];
  snprintf(
      why, sizeof(why), "region file %.300s: %s", shm->path,
      lost ? "it was truncated while the node agent wrote to it" : vg_shm_lock_strerror(failed));
  report_untrusted(b, d, slot, why, GIVEN_UP);
}

static int on_devices(const struct vg_pod_devices *d, void *arg) {
  struct pass *p = arg;
  struct vg_binder *b = p->b;
  enum vg_dialect dialect = VG_DIALECT_COUNT; /* none of the pod-bound ones */
  if (b->cfg.vgpu.enabled && strcmp(d->resource, b->cfg.vgpu.resource_count) == 0)
    dialect = VG_DIALECT_VGPU;
  else if (b->cfg.cce.enabled && strcmp(d->resource, b->cfg.cce.resource_mem) == 0)
    dialect = VG_DIALECT_CCE;
  else if (p->resizer == NULL)
    return 0; /* not ours, or limits that the IDs alone give at Allocate */
  char hash[17], slot[VG_CONFIG_PATH_MAX + 32], path[VG_CONFIG_PATH_MAX + 64];
  if (vg_slot_name((const char *const *)d->ids, d->n_ids, hash) != 0) return 0; /* no IDs */
  snprintf(slot, sizeof(slot), "%s/slots/%s", b->state_dir, hash);
  snprintf(path, sizeof(path), "%s/%s", slot, VG_REGION_FILE);
  struct stat st;
  if (lstat(path, &st) != 0) return 0; /* not allocated by this plugin (yet) */
  struct vg_shm shm;
  struct vg_err err = {""};
  if (vg_region_open_slot(&shm, slot, false, &err) != 0) {
    /* Allocate made a plain file there: whatever it is now, the container
     * put it there. */
    report_untrusted(b, d, slot, err.msg, GIVEN_UP);
    if (dialect != VG_DIALECT_COUNT) leave_pending(b, path, "open", "%s", err.msg);
    return 0;
  }
  /* A container that truncates its region under the agent must cost it the
   * region, not its life (region_guard.h). */
  if (vg_region_guard(&shm) != 0) {
    report_untrusted(b, d, slot, "no guard left for its region (the agent's table is full)",
                     GIVEN_UP);
    vg_shm_close(&shm);
    return 0;
  }
  check_flock(p, d, &shm, slot);
  use_region(p, d, dialect, &shm, slot);
  vg_region_guard_close(&shm);
  return 0;
}

int vg_binder_run_once(struct vg_binder *b, struct vg_err *err) {
  b->pass_unbindable = 0;
  b->pass_bound = 0;
  b->pass_error = false;
  struct pass p = {b, NULL, {NULL, 0}, false};
  struct vg_err e = {""};
  /* Unreadable (no procfs): the flock report is lost, nothing else. */
  p.have_flocks = vg_flock_read(BINDER_LOCKS_FILE, &p.flocks, &e) == 0;
  e = (struct vg_err){""};
  p.resizer = vg_resizer_begin(b->k8s, b->node, b->akey, &e);
  if (e.msg[0] != '\0') set_error(b, e.msg); /* resizes wait; binding goes on */
  e = (struct vg_err){""};
  int rc = vg_podresources_list(b->socket, BINDER_LIST_TIMEOUT_MS, on_devices, &p, &e);
  vg_resizer_end(p.resizer, rc == 0);
  vg_flock_free(&p.flocks);
  pthread_mutex_lock(&b->lock);
  b->stats.passes++;
  b->stats.unbindable = b->pass_unbindable;
  if (rc != 0) b->stats.list_errors++;
  pthread_mutex_unlock(&b->lock);
  if (rc != 0) {
    char msg[VG_ERR_MAX + 100];
    snprintf(msg, sizeof(msg), "%s (retrying)", e.msg);
    set_error(b, msg);
    if (err != NULL) *err = e;
    return -1;
  }
  if (!b->pass_error && b->last_logged_error[0] != '\0') {
    blog("the kubelet and the API server answer again");
    b->last_logged_error[0] = '\0';
  }
  return (int)b->pass_bound;
}

/* ---- the thread ---- */

static void *binder_main(void *arg) {
  struct vg_binder *b = arg;
  unsigned delay_ms = BINDER_FAST_MS; /* a restarted plugin binds what is pending soon */
  pthread_mutex_lock(&b->lock);
  uint64_t seen = b->wakes;
  while (!b->stopping) {
    pthread_mutex_unlock(&b->lock);
    vg_binder_run_once(b, NULL);
    pthread_mutex_lock(&b->lock);
    struct timespec until = vg_deadline_after(CLOCK_MONOTONIC, delay_ms);
    while (!b->stopping && b->wakes == seen &&
           pthread_cond_timedwait(&b->cond, &b->lock, &until) != ETIMEDOUT) {
    }
    if (b->wakes != seen) {
      seen = b->wakes;
      delay_ms = BINDER_FAST_MS; /* the kubelet records the IDs once Allocate returns */
    } else {
      delay_ms = delay_ms * 2 < BINDER_INTERVAL_MS ? delay_ms * 2 : BINDER_INTERVAL_MS;
    }
  }
  pthread_mutex_unlock(&b->lock);
  return NULL;
}

struct vg_binder *vg_binder_new(const struct vg_plugin_config *cfg, struct vg_k8s_client *k8s,
                                const char *podresources_socket, const char *state_dir,
                                struct vg_err *err) {
  if (state_dir == NULL || state_dir[0] == '\0') state_dir = cfg->state_dir;
  if (state_dir[0] == '\0') state_dir = VG_DEFAULT_STATE_DIR;
  if (podresources_socket == NULL || podresources_socket[0] == '\0')
    podresources_socket = VG_PODRESOURCES_SOCKET;
  if (strlen(state_dir) >= VG_CONFIG_PATH_MAX) {
    vg_err_set(err, "binder: state directory path too long");
    return NULL;
  }
  struct vg_binder *b = calloc(1, sizeof(*b));
  if (b == NULL) {
    vg_err_set(err, "binder: out of memory");
    return NULL;
  }
  b->cfg = *cfg;
  b->k8s = k8s;
  snprintf(b->socket, sizeof(b->socket), "%s", podresources_socket);
  snprintf(b->state_dir, sizeof(b->state_dir), "%s", state_dir);
  pthread_mutex_init(&b->lock, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&b->cond, &ca);
  pthread_condattr_destroy(&ca);
  return b;
}

void vg_binder_set_assignment_key(struct vg_binder *b, struct vg_assign_key *key) {
  pthread_mutex_lock(&b->lock);
  b->akey = key;
  pthread_mutex_unlock(&b->lock);
}

void vg_binder_set_node(struct vg_binder *b, const char *node) {
  pthread_mutex_lock(&b->lock);
  snprintf(b->node, sizeof(b->node), "%s", node ? node : "");
  pthread_mutex_unlock(&b->lock);
}

void vg_binder_set_gpus(struct vg_binder *b, const struct vg_gpu *gpus, unsigned n) {
  pthread_mutex_lock(&b->lock);
  b->ngpus = 0;
  for (unsigned i = 0; i < n && i < BINDER_GPUS_MAX; i++) {
    snprintf(b->gpus[i].uuid, sizeof(b->gpus[i].uuid), "%s", gpus[i].uuid);
    b->gpus[i].memory = gpus[i].memory;
    b->ngpus++;
  }
  pthread_mutex_unlock(&b->lock);
}

int vg_binder_start(struct vg_binder *b, struct vg_err *err) {
  pthread_mutex_lock(&b->lock);
  int rc = 0;
  if (!b->started) {
    rc = pthread_create(&b->thread, NULL, binder_main, b);
    if (rc == 0) b->started = true;
  }
  pthread_mutex_unlock(&b->lock);
  if (rc != 0) return vg_err_set(err, "binder: cannot start its thread: %s", strerror(rc));
  return 0;
}

void vg_binder_wake(struct vg_binder *b) {
  pthread_mutex_lock(&b->lock);
  b->wakes++;
  pthread_cond_signal(&b->cond);
  pthread_mutex_unlock(&b->lock);
}

void vg_binder_wake_fn(void *binder) { vg_binder_wake(binder); }

void vg_binder_get_stats(struct vg_binder *b, struct vg_binder_stats *st) {
  pthread_mutex_lock(&b->lock);
  *st = b->stats;
  pthread_mutex_unlock(&b->lock);
}

void vg_binder_stop(struct vg_binder *b) {
  if (b == NULL) return;
  pthread_mutex_lock(&b->lock);
  bool started = b->started;
  b->stopping = true;
  pthread_cond_broadcast(&b->cond);
  pthread_mutex_unlock(&b->lock);
  if (started) pthread_join(b->thread, NULL);
  vg_once_free(&b->logged);
  pthread_cond_destroy(&b->cond);
  pthread_mutex_destroy(&b->lock);
  free(b);
}
