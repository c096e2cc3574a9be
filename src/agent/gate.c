/* gate.c -- see gate.h and docs/device-plugin.md ("Pods not placed by vgpu-scheduler"). */
#include "gate.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>

#include "assignment.h"
#include "assignment_mac.h"
#include "k8s.h"
#include "log.h"
#include "node_view.h"
#include "plugin.h"
#include "pod_quantity.h"
#include "routing.h"

#define GATE_LIST_TIMEOUT_MS 3000
#define SCHEDULER_NAME VG_SCHEDULER_NAME

struct vg_gate {
  struct vg_node_source src;
  struct vg_assign_key *key; /* borrowed; NULL: assignments are not signed */
  pthread_mutex_t lock;      /* stats */
  struct vg_gate_stats stats;
};

/* The container's quantity of resource: its limits, else its requests; NULL
 * when it names none. */
static json_object *quantity_json(json_object *ctr, const char *resource) {
  json_object *res, *list, *q;
  if (!json_object_object_get_ex(ctr, "resources", &res)) return NULL;
  if (json_object_object_get_ex(res, "limits", &list) &&
      json_object_object_get_ex(list, resource, &q))
    return q;
  if (json_object_object_get_ex(res, "requests", &list) &&
      json_object_object_get_ex(list, resource, &q))
    return q;
  return NULL;
}

/* Does the container ask for the resource (a zero quantity gets no Allocate
 * from the kubelet)? Read with the one quantity parser; a value it refuses
 * counts as asking. */
static bool asks_for(json_object *ctr, const char *resource) {
  json_object *q = quantity_json(ctr, resource);
  int64_t n;
  return q != NULL && (vg_pod_quantity(q, VG_QTY_COUNT, &n, NULL) != 0 || n != 0);
}

/* What one candidate container's pod says about its placement. */
enum verdict { PLACED, MISSING, NO_ENTRY, OTHER_NODE, UNSIGNED };

/* Why a placement that names this node and container is not vgpu-scheduler's. */
struct distrust {
  enum vg_assign_trust trust;
  struct vg_err detail;
};

/* A placement for this node is the scheduler's only when its MAC verifies
 * (assignment_mac.h): else anyone who can create a pod with spec.nodeName
 * and the annotation while the webhook is down names their own grant. */
static enum verdict signed_placement(const struct vg_gate *g, json_object *pod,
                                     struct distrust *d) {
  if (g->key == NULL) return PLACED;
  d->trust = vg_assign_verify_pod(g->key, pod, g->src.node, &d->detail);
  return d->trust == VG_ASSIGN_SIGNED ? PLACED : UNSIGNED;
}

static enum verdict placement(const struct vg_gate *g, json_object *pod, const char *ctr,
                              const char *resource, char *other, size_t len, struct distrust *d) {
  const char *node = g->src.node;
  struct vg_assignment a;
  struct vg_err err;
  int has = vg_assign_from_pod(pod, &a, &err);
  /* A malformed annotation was written by someone who meant to place the
   * pod: steering skips it and the binder fails it closed, naming the field
   * (if its writer could sign it). */
  if (has < 0) return signed_placement(g, pod, d);
  if (has == 0) return MISSING;
  enum verdict v = PLACED;
  if (strcmp(a.node, node) != 0) {
    snprintf(other, len, "%s", a.node);
    v = OTHER_NODE;
  } else if (vg_assign_find(&a, ctr, resource) == NULL) {
    v = NO_ENTRY;
  }
  vg_assign_free(&a);
  return v == PLACED ? signed_placement(g, pod, d) : v;
}

struct refusal {
  const char *stamp, *ns, *pod, *ctr; /* the oldest unplaced candidate */
  enum verdict verdict;
  char other[VG_ASSIGN_RESOURCE_MAX];
  struct distrust distrust; /* UNSIGNED: why */
};

/* The container's quantity of resource; 0 when it asks for none or the value
 * is refused (the extender refused such a pod). */
static uint64_t quantity_of(json_object *ctr, const char *resource) {
  json_object *q = quantity_json(ctr, resource);
  int64_t n;
  return q != NULL && vg_pod_quantity(q, VG_QTY_COUNT, &n, NULL) == 0 && n > 0 ? (uint64_t)n : 0;
}

/* The pod's total of resource over its containers, as Aliyun's
 * ALIYUN_COM_GPU_MEM_POD counts it (init containers may ask for no GPU). */
static uint64_t pod_total(json_object *pod, const char *resource) {
  json_object *spec, *list;
  uint64_t sum = 0;
  if (!json_object_object_get_ex(pod, "spec", &spec) ||
      !json_object_object_get_ex(spec, "containers", &list) ||
      !json_object_is_type(list, json_type_array))
    return 0;
  for (size_t i = 0; i < json_object_array_length(list); i++)
    sum += quantity_of(json_object_array_get_idx(list, i), resource);
  return sum;
}

/* Aliyun's handshake, for the tools that read it: its extender writes
 * ASSIGNED "false" at bind (vgpu-scheduler does too, for pods asking
 * gpushare memory) and its device plugin "true", with its own
 * ASSUME_TIME (Unix nanoseconds), when it allocates. Only a pod marked
 * "false" is patched, so a pod's later containers cost no request. */
static void mark_assigned(const struct vg_gate *g, json_object *pod) {
  json_object *meta, *ann, *v;
  if (!json_object_object_get_ex(pod, "metadata", &meta) ||
      !json_object_object_get_ex(meta, "annotations", &ann) ||
      !json_object_object_get_ex(ann, VG_ALIYUN_ASSIGNED, &v) ||
      strcmp(json_object_get_string(v), "false") != 0)
    return;
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  char stamp[32];
  snprintf(stamp, sizeof(stamp), "%lld", (long long)now.tv_sec * 1000000000LL + now.tv_nsec);
  json_object *patch = json_object_new_object();
  json_object_object_add(patch, VG_ALIYUN_ASSIGNED, json_object_new_string("true"));
  json_object_object_add(patch, VG_ALIYUN_ASSUME_TIME, json_object_new_string(stamp));
  const char *ns = vg_json_str_at(pod, "metadata", "namespace");
  const char *name = vg_json_str_at(pod, "metadata", "name");
  struct vg_err err;
  /* pods/status: the node agent may not patch Pods (docs/install.md, "Privileges"). */
  if (vg_k8s_patch_pod_status_metadata(g->src.k8s, ns, name, NULL, patch, NULL, NULL, &err) != 0)
    vg_warn("gate: pod %s/%s: cannot set %s=true (informational, the Allocate goes on): %s", ns,
            name, VG_ALIYUN_ASSIGNED, err.msg);
  json_object_put(patch);
}

/* Candidates of one pod; true when one of them was placed by the scheduler. */
static bool consider_pod(const struct vg_gate *g, const struct vg_node_view *view, json_object *pod,
                         const char *resource, struct refusal *r) {
  const char *ns = vg_json_str_at(pod, "metadata", "namespace");
  const char *name = vg_json_str_at(pod, "metadata", "name");
  const char *stamp = vg_json_str_at(pod, "metadata", "creationTimestamp");
  bool listed;
  vg_node_view_held(view, ns, name, NULL, NULL, &listed, NULL);
  if (vg_pod_finished(pod) || !listed) return false;
  json_object *spec, *list;
  if (!json_object_object_get_ex(pod, "spec", &spec)) return false;
  static const char *const lists[] = {"initContainers", "containers"};
  for (size_t l = 0; l < 2; l++) {
    if (!json_object_object_get_ex(spec, lists[l], &list) ||
        !json_object_is_type(list, json_type_array))
      continue;
    for (size_t i = 0; i < json_object_array_length(list); i++) {
      json_object *c = json_object_array_get_idx(list, i), *jn;
      const char *ctr = json_object_object_get_ex(c, "name", &jn) ? json_object_get_string(jn) : "";
      bool holds;
      vg_node_view_held(view, ns, name, ctr, resource, &listed, &holds);
      if (!asks_for(c, resource) || holds) continue;
      char other[VG_ASSIGN_RESOURCE_MAX] = "";
      struct distrust d = {VG_ASSIGN_SIGNED, {""}};
      enum verdict v = placement(g, pod, ctr, resource, other, sizeof(other), &d);
      if (v == PLACED) return true;
      int age = r->stamp == NULL ? -1 : strcmp(stamp, r->stamp);
      if (age == 0) age = strcmp(ns, r->ns);
      if (age == 0) age = strcmp(name, r->pod);
      if (age < 0) {
        *r = (struct refusal){stamp, ns, name, ctr, v, "", d};
        snprintf(r->other, sizeof(r->other), "%s", other);
      }
    }
  }
  return false;
}

/* The reason the kubelet shows in the pod's events: one line, no '%'. */
static void refusal_text(const struct refusal *r, const char *resource, const char *node, char *why,
                         size_t len) {
  if (r->verdict == UNSIGNED) {
    vg_assign_trust_refusal(r->distrust.trust, r->ns, r->pod, &r->distrust.detail, why, len);
    return;
  }
  char detail[600];
  if (r->verdict == MISSING)
    snprintf(detail, sizeof(detail), "its %s annotation is missing", VG_ASSIGNED_ANNOTATION);
  else if (r->verdict == NO_ENTRY)
    snprintf(detail, sizeof(detail), "its %s annotation has no entry for container %s and %s",
             VG_ASSIGNED_ANNOTATION, r->ctr, resource);
  else
    snprintf(detail, sizeof(detail), "its %s annotation is for node %s, not %s",
             VG_ASSIGNED_ANNOTATION, r->other, node);
  snprintf(why, len, "pod %s/%s was not placed by %s (%s): set spec.schedulerName: %s", r->ns,
           r->pod, SCHEDULER_NAME, detail, SCHEDULER_NAME);
}

static void count(struct vg_gate *g, uint64_t *field) {
  pthread_mutex_lock(&g->lock);
  (*field)++;
  pthread_mutex_unlock(&g->lock);
}

int vg_gate_check(struct vg_gate *g, const char *resource, struct vg_admit_pod *pod, char *why,
                  size_t len) {
  *pod = (struct vg_admit_pod){false, 0};
  struct vg_node_view view;
  if (vg_node_view_fetch(&g->src, &view, GATE_LIST_TIMEOUT_MS) != 0) {
    count(g, &g->stats.errors);
    return 0;
  }
  struct refusal r = {NULL, NULL, NULL, NULL, MISSING, "", {VG_ASSIGN_SIGNED, {""}}};
  json_object *placed = NULL;
  for (size_t i = 0; i < vg_node_view_npods(&view) && !placed; i++)
    if (consider_pod(g, &view, vg_node_view_pod(&view, i), resource, &r))
      placed = vg_node_view_pod(&view, i);
  int rc = 0;
  if (placed) {
    *pod = (struct vg_admit_pod){true, pod_total(placed, resource)};
    mark_assigned(g, placed);
    count(g, &g->stats.assigned);
  } else if (r.pod == NULL) {
    count(g, &g->stats.unidentified);
  } else {
    refusal_text(&r, resource, g->src.node, why, len);
    count(g, &g->stats.refused);
    rc = 1;
  }
  vg_node_view_free(&view);
  return rc;
}

int vg_gate_check_fn(void *gate, const char *resource, struct vg_admit_pod *pod, char *why,
                     size_t len) {
  return vg_gate_check(gate, resource, pod, why, len);
}

struct vg_gate *vg_gate_new(struct vg_k8s_client *k8s, const char *node,
                            const char *podresources_socket, struct vg_err *err) {
  struct vg_gate *g = calloc(1, sizeof(*g));
  if (g == NULL) {
    vg_err_set(err, "gate: out of memory");
    return NULL;
  }
  if (vg_node_source_init(&g->src, k8s, node, podresources_socket, "gate",
                          "Allocate cannot check that pods were placed by " SCHEDULER_NAME
                          " meanwhile",
                          err) != 0) {
    free(g);
    return NULL;
  }
  pthread_mutex_init(&g->lock, NULL);
  return g;
}

void vg_gate_set_key(struct vg_gate *g, struct vg_assign_key *key) { g->key = key; }

void vg_gate_get_stats(struct vg_gate *g, struct vg_gate_stats *st) {
  pthread_mutex_lock(&g->lock);
  *st = g->stats;
  pthread_mutex_unlock(&g->lock);
}

void vg_gate_free(struct vg_gate *g) {
  if (g == NULL) return;
  vg_node_source_destroy(&g->src);
  pthread_mutex_destroy(&g->lock);
  free(g);
}
