/*
 * extender_reserve.c -- what a pod holds between prioritize and bind.
 *
 * kube-scheduler binds asynchronously: while pod N's bind is in flight, it
 * already filters and scores pod N+1 -- on a cluster that does not yet hold
 * N. Both then rank the same node first, and N+1's bind finds its GPUs taken
 * ("no fit"); kube-scheduler parks it for up to a minute, and the cluster
 * fills without it. Through the real kube-scheduler 7 % of binds failed so
 * (issue 28, bench/kube-replay.sh at 100 nodes) and the unallocated GPU
 * share doubled against the same pods placed in process.
 *
 * kube-scheduler cannot pick any node but the one prioritize ranked first:
 * ranks are unique and one rank outweighs all its own plugins
 * (extender.c, rank_scores). So prioritize reserves there what bind would
 * write -- the pod, as bound, with the assignment of the node policy's pick
 * -- in the watch-fed store, which every view is built from; the next
 * filter sees it. Bind drops the pod's reservation before it reads the node
 * (its own GPUs must not count against it), and replaces it with the pod as
 * bound. A reservation bind never comes for (the pod was deleted, another
 * plugin failed it) is dropped after EXT_RESERVE_MS, and only if the store
 * still holds that reservation and not a newer object for the pod.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "assignment_mac.h"
#include "extender_int.h"
#include "log.h"

#define EXT_RESERVE_MS 10000

struct ext_reservation {
  char key[EXT_POD_KEY_MAX]; /* "namespace/name" */
  char node[VG_SCHED_NAME_MAX * 2];
  json_object *obj; /* what was put in the store (owned) */
  struct timespec until;
};

json_object *ext_pod_as_bound(json_object *pod, const char *node, json_object *annotations) {
  json_object *bound = NULL;
  if (json_object_deep_copy(pod, &bound, NULL) != 0) return NULL;
  json_object *spec = ext_get(bound, "spec"), *meta = ext_get(bound, "metadata");
  json_object *ann = ext_get(meta, "annotations");
  if (meta && !ann) json_object_object_add(meta, "annotations", ann = json_object_new_object());
  if (!spec || !ann || !json_object_is_type(spec, json_type_object) ||
      !json_object_is_type(ann, json_type_object)) {
    json_object_put(bound);
    return NULL;
  }
  json_object_object_add(spec, "nodeName", json_object_new_string(node));
  if (annotations) {
    json_object_object_foreach(annotations, k, v)
        json_object_object_add(ann, k, json_object_get(v));
  }
  return bound;
}

/* Removes reservation i from the list (lock held); its object is handed to
 * *obj (the caller drops it from the store and puts it), its node to node. */
static void take(struct vg_ext *x, int i, json_object **obj, char *node, size_t len) {
  *obj = x->reserved[i].obj;
  snprintf(node, len, "%s", x->reserved[i].node);
  x->reserved[i] = x->reserved[--x->nreserved];
}

/* Drops obj from the store if it is still what the store holds for its
 * pod, and the node's cached view with it. */
static void unstore(struct vg_ext *x, json_object *obj, const char *node) {
  struct ext_store *store = ext_current_store(x);
  if (store && ext_store_drop_if(store, obj)) ext_invalidate_known(x, node);
  json_object_put(obj);
}

void ext_unreserve(struct vg_ext *x, const char *key) {
  json_object *obj = NULL;
  char node[VG_SCHED_NAME_MAX * 2];
  pthread_mutex_lock(&x->lock);
  for (int i = 0; i < x->nreserved && !obj; i++)
    if (strcmp(x->reserved[i].key, key) == 0) take(x, i, &obj, node, sizeof(node));
  pthread_mutex_unlock(&x->lock);
  if (obj) vg_debug("reservation of %s on %s dropped for its bind", key, node);
  if (obj) unstore(x, obj, node);
}

/* Drops the reservations past their time. */
static void sweep(struct vg_ext *x, const struct timespec *now) {
  for (;;) {
    json_object *obj = NULL;
    char node[VG_SCHED_NAME_MAX * 2];
    pthread_mutex_lock(&x->lock);
    for (int i = 0; i < x->nreserved && !obj; i++) {
      const struct timespec *u = &x->reserved[i].until;
      if (u->tv_sec < now->tv_sec || (u->tv_sec == now->tv_sec && u->tv_nsec <= now->tv_nsec))
        take(x, i, &obj, node, sizeof(node));
    }
    pthread_mutex_unlock(&x->lock);
    if (!obj) return;
    unstore(x, obj, node);
  }
}

/* Records obj as key's reservation on node (replacing an older one, which
 * goes into *old); false when out of memory. Lock held. */
static bool record(struct vg_ext *x, const char *key, const char *node, json_object *obj,
                   const struct timespec *now, json_object **old, char *old_node, size_t len) {
  *old = NULL;
  for (int i = 0; i < x->nreserved && !*old; i++)
    if (strcmp(x->reserved[i].key, key) == 0) take(x, i, old, old_node, len);
  if (x->nreserved == x->cap_reserved) {
    int cap = x->cap_reserved ? 2 * x->cap_reserved : 64;
    struct ext_reservation *r = realloc(x->reserved, (size_t)cap * sizeof(*r));
    if (!r) return false;
    x->reserved = r;
    x->cap_reserved = cap;
  }
  struct ext_reservation *r = &x->reserved[x->nreserved++];
  snprintf(r->key, sizeof(r->key), "%s", key);
  snprintf(r->node, sizeof(r->node), "%s", node);
  r->obj = json_object_get(obj);
  r->until = (struct timespec){now->tv_sec + EXT_RESERVE_MS / 1000, now->tv_nsec};
  return true;
}

json_object *ext_assigned_annotations(json_object *assignment) {
  json_object *ann = json_object_new_object();
  json_object_object_add(
      ann, VG_ANN_ASSIGNED,
      json_object_new_string(json_object_to_json_string_ext(assignment, JSON_C_TO_STRING_PLAIN)));
  return ann;
}

int ext_sign_annotations(struct vg_ext *x, json_object *annotations, const char *uid,
                         const char *ns, const char *name, const char *node, char *why,
                         size_t len) {
  if (x->akey == NULL) return 0;
  const char *assigned = ext_get_str(annotations, VG_ANN_ASSIGNED);
  struct vg_assign_subject s = {uid, ns, name, node, assigned};
  char mac[VG_ASSIGN_MAC_TEXT_MAX];
  struct vg_err err = {{0}};
  if (uid == NULL || uid[0] == '\0' || assigned == NULL) {
    snprintf(why, len, "cannot sign %s: the pod has no metadata.uid", VG_ANN_ASSIGNED);
    return -1;
  }
  if (vg_assign_sign(x->akey, &s, mac, &err) != 0) {
    snprintf(why, len, "cannot sign %s (node agents refuse an unsigned one): %s", VG_ANN_ASSIGNED,
             err.msg);
    return -1;
  }
  json_object_object_add(annotations, VG_ASSIGNED_MAC_ANNOTATION, json_object_new_string(mac));
  return 0;
}

void ext_reserve(struct vg_ext *x, json_object *pod, const char *node, json_object *annotations) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  sweep(x, &now);
  char key[EXT_POD_KEY_MAX];
  if (!ext_pod_key(pod, key, sizeof(key))) return;
  struct ext_store *store = ext_current_store(x);
  if (!store) return; /* views come from the API: nothing to reserve in */
  json_object *obj = ext_pod_as_bound(pod, node, annotations);
  if (!obj) return;
  json_object *old = NULL;
  char old_node[VG_SCHED_NAME_MAX * 2];
  pthread_mutex_lock(&x->lock);
  bool kept = record(x, key, node, obj, &now, &old, old_node, sizeof(old_node));
  pthread_mutex_unlock(&x->lock);
  if (old) unstore(x, old, old_node);
  char changed[2][VG_SCHED_NAME_MAX * 2];
  if (kept) ext_store_apply(store, true, false, obj, changed);
  if (kept) ext_invalidate_known(x, node);
  vg_debug("reserved %s on %s%s", key, node, kept ? "" : ": out of memory, not kept");
  json_object_put(obj);
}

void ext_reservations_free(struct vg_ext *x) {
  for (int i = 0; i < x->nreserved; i++) json_object_put(x->reserved[i].obj);
  free(x->reserved);
  x->reserved = NULL;
  x->nreserved = x->cap_reserved = 0;
}
