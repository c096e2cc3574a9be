/* resizer.c -- see resizer.h and docs/resize.md. */
#include "resizer.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "assignment.h"
#include "assignment_mac.h"
#include "grant.h"
#include "json_get.h"
#include "k8s.h"
#include "log.h"
#include "resize.h"
#include "size.h"

#define COMPONENT "vgpu-device-plugin"

struct open_pod {
  json_object *pod; /* borrowed from the list */
  struct vg_resize_view v;
  char bad[VG_ERR_MAX]; /* why a malformed key is malformed */
  bool seen;            /* its container was handed to us this pass */
  bool done;            /* nothing more to do this pass */
};

struct vg_resizer {
  struct vg_k8s_client *k8s;
  struct vg_assign_key *key; /* borrowed; NULL: assignments are not signed */
  char node[256];
  json_object *list;
  size_t n;
  struct open_pod *p;
  int changed;
};

struct vg_resizer *vg_resizer_begin(struct vg_k8s_client *k8s, const char *node,
                                    struct vg_assign_key *key, struct vg_err *err) {
  if (k8s == NULL || node == NULL || node[0] == '\0') return NULL;
  json_object *list = NULL;
  if (vg_k8s_list_pods_selected(k8s, node, VG_RESIZE_LABEL "=" VG_RESIZE_LABEL_OPEN, &list, NULL, 0,
                                err) != 0)
    return NULL;
  json_object *items = vg_json_get(list, "items");
  size_t n = json_object_array_length(items);
  struct vg_resizer *r = n > 0 ? calloc(1, sizeof(*r)) : NULL;
  if (r != NULL) r->p = calloc(n, sizeof(*r->p));
  if (r == NULL || r->p == NULL) {
    if (n > 0) vg_err_set(err, "resize: out of memory");
    free(r);
    json_object_put(list);
    return NULL;
  }
  r->k8s = k8s;
  r->key = key;
  snprintf(r->node, sizeof(r->node), "%s", node);
  r->list = list;
  r->n = n;
  for (size_t i = 0; i < n; i++) {
    struct vg_err e = {""};
    r->p[i].pod = json_object_array_get_idx(items, i);
    vg_resize_view_of(r->p[i].pod, &r->p[i].v, &e);
    snprintf(r->p[i].bad, sizeof(r->p[i].bad), "%s", e.msg);
  }
  return r;
}

static const char *meta_str(json_object *pod, const char *key) {
  return vg_json_get_str(vg_json_get(pod, "metadata"), key);
}

/* ---- answering on the pod ---- */

/* One patch: status (may be NULL), the acknowledgement (may be NULL), and
 * the label removed when `end`. The pod's resourceVersion is a precondition,
 * so that a request written since the list is never ended unseen. */
static int answer(struct vg_resizer *r, struct open_pod *op, const struct vg_resize_status *st,
                  const char *ack_id, bool end) {
  json_object *ann = json_object_new_object(), *labels = NULL;
  if (st) vg_resize_status_put(ann, st->id, st->phase, st->reason);
  char *text = ack_id ? vg_resize_node_format(ack_id) : NULL;
  if (text) json_object_object_add(ann, VG_RESIZE_NODE_ANNOTATION, json_object_new_string(text));
  free(text);
  if (end) {
    labels = json_object_new_object();
    json_object_object_add(labels, VG_RESIZE_LABEL, NULL);
  }
  struct vg_err err = {""};
  int rc = vg_k8s_patch_pod_status_metadata(r->k8s, meta_str(op->pod, "namespace"),
                                            meta_str(op->pod, "name"), labels, ann,
                                            meta_str(op->pod, "resourceVersion"), NULL, &err);
  json_object_put(ann);
  json_object_put(labels);
  if (rc != 0 && rc != VG_K8S_ECONFLICT)
    vg_warn("resize: pod %s/%s: %s", meta_str(op->pod, "namespace"), meta_str(op->pod, "name"),
            err.msg);
  op->done = true;
  if (rc == 0) r->changed++;
  return rc;
}

/* rc and err from recording Event `reason` on op's pod: a failure is logged. */
static void event_recorded(struct open_pod *op, const char *reason, int rc,
                           const struct vg_err *err) {
  if (rc != 0)
    vg_warn("resize: cannot record event %s on pod %s/%s: %s", reason,
            meta_str(op->pod, "namespace"), meta_str(op->pod, "name"), err->msg);
}

static void event(struct vg_resizer *r, struct open_pod *op, const char *type, const char *reason,
                  const char *msg) {
  struct vg_err err = {""};
  event_recorded(op, reason, vg_k8s_pod_event(r->k8s, op->pod, type, reason, msg, COMPONENT, &err),
                 &err);
}

static void refuse(struct vg_resizer *r, struct open_pod *op, const char *why) {
  struct vg_resize_status st = {.phase = VG_RESIZE_REFUSED};
  snprintf(st.id, sizeof(st.id), "%s", op->v.has_request ? op->v.request.id : "?");
  snprintf(st.reason, sizeof(st.reason), "node %s: %s", r->node, why);
  if (answer(r, op, &st, NULL, true) != 0) return;
  char msg[VG_RESIZE_REASON_MAX + VG_RESIZE_ID_MAX + 32];
  struct vg_err err = {""};
  int rc =
      vg_resize_refusal_event(r->k8s, op->pod, st.id, st.reason, COMPONENT, msg, sizeof(msg), &err);
  event_recorded(op, "ResizeRefused", rc, &err);
  vg_info("resize: pod %s/%s: %s", meta_str(op->pod, "namespace"), meta_str(op->pod, "name"), msg);
}

/* ---- the container's limits ---- */

/* For comparing compute: 0 (no limit) is the most. */
static unsigned as_share(unsigned cores) { return cores == 0 ? 100 : cores; }

/* Puts g in force: every decrease in the region first (the region refuses a
 * limit below what is charged there: err), then the grant, then the
 * increases. A process reads the grant as the ceiling of the region, so at
 * no point may either exceed what the container is being given. */
static int put_in_force(struct vg_shm *shm, const char *grant_dir, const struct vg_grant *g,
                        struct vg_err *err) {
  const struct vg_region *reg = vg_region_of(shm);
  if (vg_region_lock(shm) != 0)
    return vg_err_set(err, "%s: %s", shm->path, vg_shm_lock_strerror(shm->last_lock));
  vg_region_reap_locked(shm); /* charges of processes gone must not block a decrease */
  vg_region_unlock(shm);
  for (unsigned i = 0; i < g->count; i++) {
    int dev = vg_region_find_device(reg, g->gpu[i].uuid);
    uint64_t now = dev < 0 ? 0 : vg_region_mem_limit(reg, dev);
    if (dev >= 0 && (now == 0 || g->gpu[i].memory < now) &&
        vg_region_set_mem_limit(shm, dev, g->gpu[i].memory, err) != 0)
      return -1;
  }
  if (vg_grant_write(grant_dir, g, err) != 0) return -1;
  for (unsigned i = 0; i < g->count; i++) {
    int dev = vg_region_find_device(reg, g->gpu[i].uuid);
    if (dev < 0) continue;
    if (vg_region_set_mem_limit(shm, dev, g->gpu[i].memory, err) != 0) return -1;
    if (vg_region_set_sm_limit(shm, dev, g->gpu[i].cores, err) != 0) return -1;
  }
  return 0;
}

/* Did vgpu-scheduler sign pod's assignment (with a key; assignment_mac.h)?
 * Else err says why: a resize Accepted into a forged assignment grants
 * nothing. */
static bool signed_assignment(const struct vg_resizer *r, json_object *pod,
                              const struct vg_pod_devices *d, struct vg_err *err) {
  if (r->key == NULL) return true;
  struct vg_err detail = {""};
  enum vg_assign_trust t = vg_assign_verify_pod(r->key, pod, r->node, &detail);
  if (t == VG_ASSIGN_SIGNED) return true;
  char why[VG_ERR_MAX + 400];
  vg_assign_trust_refusal(t, d->ns, d->pod, &detail, why, sizeof(why));
  vg_err_set(err, "%s", why);
  return false;
}

/* The grant with this container's entry of vgpu.io/assigned. */
static int grant_of_assignment(const struct vg_resizer *r, json_object *pod,
                               const struct vg_pod_devices *d, const struct vg_grant *now,
                               struct vg_grant *g, struct vg_err *err) {
  struct vg_assignment a;
  int has = vg_assign_from_pod(pod, &a, err);
  if (has <= 0) return has == 0 ? vg_err_set(err, "the pod has no %s", VG_ASSIGNED_ANNOTATION) : -1;
  if (!signed_assignment(r, pod, d, err)) {
    vg_assign_free(&a);
    return -1;
  }
  const struct vg_assign_ctr *c = vg_assign_find(&a, d->container, d->resource);
  int rc = c ? 0 : vg_err_set(err, "%s has no container %s", VG_ASSIGNED_ANNOTATION, d->container);
  *g = *now;
  for (unsigned i = 0; rc == 0 && i < g->count; i++) {
    int k = 0;
    while (k < c->ngpus && strcmp(c->gpu[k].uuid, g->gpu[i].uuid) != 0) k++;
    if (k == c->ngpus) {
      rc = vg_err_set(err, "%s does not name %s", VG_ASSIGNED_ANNOTATION, g->gpu[i].uuid);
      break;
    }
    g->gpu[i].memory = (uint64_t)c->gpu[k].memory;
    g->gpu[i].cores = vg_grant_cores_of(c->gpu[k].cores);
  }
  vg_assign_free(&a);
  return rc;
}

/* The grant with every amount the request lowers lowered, the rest kept. */
static void lowered(const struct vg_grant *now, const struct vg_resize_request *q,
                    struct vg_grant *g) {
  *g = *now;
  for (unsigned i = 0; i < g->count; i++) {
    struct vg_grant_gpu *x = &g->gpu[i];
    if (q->memory >= 0 && (x->memory == 0 || (uint64_t)q->memory < x->memory))
      x->memory = (uint64_t)q->memory;
    unsigned want = vg_grant_cores_of(q->cores);
    if (q->cores >= 0 && as_share(want) < as_share(x->cores)) x->cores = want;
  }
}

/* ---- one request ---- */

static void check_new(struct vg_resizer *r, struct open_pod *op, const struct vg_pod_devices *d,
                      struct vg_shm *shm, const char *dir, const struct vg_grant *now) {
  struct vg_grant low;
  lowered(now, &op->v.request, &low);
  struct vg_err err = {""};
  if (put_in_force(shm, dir, &low, &err) != 0) {
    struct vg_err ignored = {""};
    put_in_force(shm, dir, now, &ignored); /* what was lowered before the failure */
    char why[VG_ERR_MAX + 200];
    if (shm->last_lock != VG_SHM_LOCKED) /* a stuck or forged lock, not a lack of memory */
      snprintf(why, sizeof(why), "container %s: its region cannot be changed: %s", d->container,
               err.msg);
    else
      snprintf(why, sizeof(why),
               "container %s holds more than it would be given (%s); free GPU memory in the "
               "workload first",
               d->container, err.msg);
    refuse(r, op, why);
    return;
  }
  answer(r, op, NULL, op->v.request.id, false);
}

static void apply_answer(struct vg_resizer *r, struct open_pod *op, const struct vg_pod_devices *d,
                         struct vg_shm *shm, const char *dir, const struct vg_grant *now) {
  struct vg_grant g;
  struct vg_err err = {""};
  bool ok = grant_of_assignment(r, op->pod, d, now, &g, &err) == 0 &&
            put_in_force(shm, dir, &g, &err) == 0;
  const struct vg_resize_status *st = &op->v.status;
  if (st->phase != VG_RESIZE_ACCEPTED) { /* Refused or Applied: end it, the grant restored */
    if (!ok)
      vg_warn("resize %s: cannot restore the grant of %s: %s", st->id, d->container, err.msg);
    answer(r, op, NULL, NULL, true);
    return;
  }
  if (!ok) {
    vg_warn("resize %s: cannot apply to %s (retrying): %s", st->id, d->container, err.msg);
    op->done = true;
    return;
  }
  struct vg_resize_status applied = {.phase = VG_RESIZE_APPLIED};
  snprintf(applied.id, sizeof(applied.id), "%s", st->id);
  char m[32], c[16] = "unlimited";
  if (as_share(g.gpu[0].cores) < 100) snprintf(c, sizeof(c), "%u %%", g.gpu[0].cores);
  snprintf(applied.reason, sizeof(applied.reason), "container %s: memory %s, cores %s per GPU",
           d->container, vg_format_size(g.gpu[0].memory, m, sizeof(m)), c);
  if (answer(r, op, &applied, NULL, true) != 0) return;
  char msg[VG_RESIZE_REASON_MAX + VG_RESIZE_ID_MAX + 32];
  snprintf(msg, sizeof(msg), "resize %s applied: %s", applied.id, applied.reason);
  event(r, op, "Normal", "Resized", msg);
  vg_info("resize: pod %s/%s: %s", d->ns, d->pod, msg);
}

static void handle(struct vg_resizer *r, struct open_pod *op, const struct vg_pod_devices *d,
                   struct vg_shm *shm, const char *slot_dir) {
  const struct vg_resize_view *v = &op->v;
  char dir[VG_ERR_MAX];
  snprintf(dir, sizeof(dir), "%s/grant", slot_dir);
  struct vg_grant now;
  struct vg_err err = {""};
  int rc = vg_grant_load(dir, &now, &err);
  if (rc != 0) {
    char why[VG_ERR_MAX + 100];
    snprintf(why, sizeof(why), "container %s has no grant to resize (%s)", d->container,
             rc > 0 ? "its slot predates grants; recreate the pod" : err.msg);
    refuse(r, op, why);
  } else if (v->has_status && !v->bad_status && strcmp(v->status.id, v->request.id) == 0) {
    apply_answer(r, op, d, shm, dir, &now);
  } else if (v->has_node && !v->bad_node && strcmp(v->node_id, v->request.id) == 0) {
    op->done = true; /* acknowledged: vgpu-scheduler's turn */
  } else {
    check_new(r, op, d, shm, dir, &now);
  }
}

void vg_resizer_container(struct vg_resizer *r, const struct vg_pod_devices *d, struct vg_shm *shm,
                          const char *slot_dir) {
  for (size_t i = 0; r != NULL && i < r->n; i++) {
    struct open_pod *op = &r->p[i];
    const char *ns = meta_str(op->pod, "namespace"), *name = meta_str(op->pod, "name");
    if (op->done || ns == NULL || name == NULL || strcmp(ns, d->ns) != 0 ||
        strcmp(name, d->pod) != 0)
      continue;
    if (op->v.bad_request) {
      refuse(r, op, op->bad);
    } else if (strcmp(op->v.request.container, d->container) == 0) {
      op->seen = true;
      /* Limits still pending: the binder's job first; the next pass. */
      if (vg_region_pending(vg_region_of(shm)))
        op->done = true;
      else
        handle(r, op, d, shm, slot_dir);
    }
  }
}

/* A request whose container holds no GPU slot on this node. */
static void unseen(struct vg_resizer *r, struct open_pod *op) {
  const struct vg_resize_view *v = &op->v;
  if (!v->has_request) {
    answer(r, op, NULL, NULL, true); /* a stray label */
  } else if (v->has_status && !v->bad_status && strcmp(v->status.id, v->request.id) == 0 &&
             v->status.phase != VG_RESIZE_ACCEPTED) {
    answer(r, op, NULL, NULL, true); /* ended; nothing here to restore */
  } else {
    char why[300];
    snprintf(why, sizeof(why), "container %s holds no GPU of this node (is it running?)",
             v->request.container);
    refuse(r, op, why);
  }
}

int vg_resizer_end(struct vg_resizer *r, bool complete) {
  if (r == NULL) return 0;
  for (size_t i = 0; complete && i < r->n; i++) {
    struct open_pod *op = &r->p[i];
    if (op->done || op->seen) continue;
    if (op->v.bad_request)
      refuse(r, op, op->bad);
    else
      unseen(r, op);
  }
  int changed = r->changed;
  json_object_put(r->list);
  free(r->p);
  free(r);
  return changed;
}
