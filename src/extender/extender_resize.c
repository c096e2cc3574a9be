/*
 * extender_resize.c -- vgpu-scheduler's half of a live resize
 * (docs/resize.md, the protocol in src/k8s/resize.h).
 *
 * A thread lists, every --resize-poll-ms, the pods labelled
 * vgpu.io/resize=requested (one label-selected list; the API server answers
 * it from its watch cache) and takes up each request that the node agent
 * has acknowledged and nobody has answered yet. The decision is a placement
 * decision, so it is made like bind's: under the node's bind lock, on a view
 * read fresh, with the same per-GPU rules (memory, contexts, compute,
 * exclusivity); a bind and a resize on one node never interleave. A request
 * that fits is written into vgpu.io/assigned together with the status
 * Accepted, in one patch conditioned on the pod's resourceVersion: the
 * record of what is held changes exactly when the answer is given. One
 * that does not fit gets the status Refused, with the reason, and a Warning
 * Event on the pod; the node agent then restores the grant and ends it.
 *
 * Decreases need no room, but they too pass here: the node agent has
 * already put them in force (that is what its acknowledgement says), so the
 * capacity they free is really free when vgpu.io/assigned says so.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "assignment_mac.h"
#include "extender_int.h"
#include "log.h"
#include "routing.h"
#include "size.h"

#define COMPONENT VG_SCHEDULER_NAME /* the Events' source */

struct ext_resizer {
  struct vg_ext *x;
  long poll_ms;
  volatile sig_atomic_t stop;
  pthread_t thread;
};

static const struct vg_assign_ctr *ctr_named(const struct vg_assignment *a, const char *name) {
  for (int i = 0; i < a->nctrs; i++)
    if (strcmp(a->ctr[i].name, name) == 0) return &a->ctr[i];
  return NULL;
}

/* Is this request the scheduler's to answer now? */
static bool ours(const struct vg_resize_view *v) {
  return v->has_request && !v->bad_request && v->has_node && !v->bad_node &&
         strcmp(v->node_id, v->request.id) == 0 &&
         !(v->has_status && !v->bad_status && strcmp(v->status.id, v->request.id) == 0);
}

/* The assignment with container c's GPUs at the requested amounts. */
static json_object *resized(struct vg_assignment *a, const struct vg_assign_ctr *c,
                            const struct vg_resize_request *q, struct vg_err *err) {
  struct vg_assign_ctr *w = &a->ctr[c - a->ctr];
  for (int k = 0; k < w->ngpus; k++) {
    int64_t mem = vg_resize_memory(q, &w->gpu[k]);
    int cores = vg_resize_cores(q, &w->gpu[k]);
    w->gpu[k].memory = mem;
    w->gpu[k].cores = cores;
  }
  return vg_assign_to_json(a, err);
}

/* With a key, a resize starts only from an assignment this scheduler
 * signed: accepting one into a forged assignment would sign the forgery.
 * 0 (signed, or no key), 1 with why (refuse), -1 with err (the key file
 * cannot be read: try again). */
static int check_signed(struct vg_ext *x, json_object *pod, const char *node, char *why, size_t len,
                        struct vg_err *err) {
  if (x->akey == NULL) return 0;
  struct vg_err detail = {{0}};
  enum vg_assign_trust t = vg_assign_verify_pod(x->akey, pod, node, &detail);
  if (t == VG_ASSIGN_SIGNED) return 0;
  if (t == VG_ASSIGN_NO_KEY) return vg_err_set(err, "%s", detail.msg), -1;
  snprintf(why, len, "its %s was not signed by vgpu-scheduler (%.200s); recreate the pod",
           VG_ASSIGNED_ANNOTATION, detail.msg);
  return 1;
}

/* The answer to the request on pod (read fresh under the bind lock): 0 when
 * written, -1 with err when it is to be tried again. */
static int answer(struct vg_ext *x, json_object *pod, const struct vg_resize_request *q,
                  const char *node, struct vg_err *err) {
  struct vg_assignment a;
  char why[VG_RESIZE_REASON_MAX] = "";
  struct node_view v;
  int has = vg_assign_from_pod(pod, &a, err);
  if (has < 0) snprintf(why, sizeof(why), "%s", err->msg);
  if (has == 0) snprintf(why, sizeof(why), "the pod has no %s", VG_ASSIGNED_ANNOTATION);
  int sig = has > 0 ? check_signed(x, pod, node, why, sizeof(why), err) : 0;
  if (sig != 0 && has > 0) {
    vg_assign_free(&a);
    has = 0;
  }
  if (sig < 0) return -1;
  const struct vg_assign_ctr *c = has > 0 ? ctr_named(&a, q->container) : NULL;
  if (has > 0 && c == NULL)
    snprintf(why, sizeof(why), "container %s holds no GPU slice of vgpu-scheduler's", q->container);
  if (c != NULL && ext_node_view(x, node, NULL, EXT_FROM_API, &v, why, sizeof(why)) != 0) {
    vg_err_set(err, "node %s: %s", node, why); /* the view is unreadable: try again */
    vg_assign_free(&a);
    return -1;
  }
  json_object *ann = json_object_new_object();
  if (c != NULL && ext_resize_fits(&v, c, q, why, sizeof(why))) {
    json_object *na = resized(&a, c, q, err);
    if (na == NULL) snprintf(why, sizeof(why), "%s", err->msg);
    if (na != NULL) {
      json_object_object_add(
          ann, VG_ASSIGNED_ANNOTATION,
          json_object_new_string(json_object_to_json_string_ext(na, JSON_C_TO_STRING_PLAIN)));
      json_object_put(na);
      json_object *meta = ext_get(pod, "metadata");
      if (ext_sign_annotations(x, ann, ext_get_str(meta, "uid"), ext_get_str(meta, "namespace"),
                               ext_get_str(meta, "name"), node, why, sizeof(why)) != 0) {
        json_object_put(ann);
        vg_assign_free(&a);
        return vg_err_set(err, "%s", why), -1; /* the key: try again */
      }
      vg_resize_status_put(ann, q->id, VG_RESIZE_ACCEPTED, "fits the pod's GPUs");
    }
  }
  if (why[0]) vg_resize_status_put(ann, q->id, VG_RESIZE_REFUSED, why);
  if (has > 0) vg_assign_free(&a);
  json_object *meta = ext_get(pod, "metadata");
  int rc = vg_k8s_patch_pod_status_metadata(x->client, ext_get_str(meta, "namespace"),
                                            ext_get_str(meta, "name"), NULL, ann,
                                            ext_get_str(meta, "resourceVersion"), NULL, err);
  json_object_put(ann);
  if (rc != 0) return -1;
  ext_invalidate(x, node);
  if (why[0]) {
    char msg[VG_RESIZE_REASON_MAX + VG_RESIZE_ID_MAX + 32];
    struct vg_err e = {{0}};
    if (vg_resize_refusal_event(x->client, pod, q->id, why, COMPONENT, msg, sizeof(msg), &e) != 0)
      vg_warn("resize: cannot record the refusal: %s", e.msg);
    vg_info("resize: pod %s/%s: %s", ext_get_str(meta, "namespace"), ext_get_str(meta, "name"),
            msg);
  }
  return 0;
}

/* One request, under its node's bind lock, on the pod read again. */
static int take_up(struct vg_ext *x, const char *ns, const char *name, const char *node) {
  struct node_entry *e = ext_entry(x, node);
  if (e == NULL) return -1;
  pthread_mutex_lock(&e->bind_lock);
  json_object *pod = NULL;
  struct vg_err err = {{0}};
  struct vg_resize_view v;
  int rc = vg_k8s_get_pod(x->client, ns, name, &pod, &err);
  if (rc == 0) vg_resize_view_of(pod, &v, NULL);
  if (rc == 0 && ours(&v)) rc = answer(x, pod, &v.request, node, &err);
  pthread_mutex_unlock(&e->bind_lock);
  if (rc != 0 && rc != VG_K8S_ENOTFOUND && rc != VG_K8S_ECONFLICT)
    vg_warn("resize: pod %s/%s: %s (trying again)", ns, name, err.msg);
  json_object_put(pod);
  return rc;
}

int vg_ext_resize_pass(struct vg_ext *x, struct vg_err *err) {
  json_object *list = NULL;
  if (vg_k8s_list_pods_selected(x->client, NULL, VG_RESIZE_LABEL "=" VG_RESIZE_LABEL_OPEN, &list,
                                NULL, 0, err) != 0)
    return -1;
  json_object *items = ext_get(list, "items");
  int answered = 0;
  for (size_t i = 0; i < json_object_array_length(items); i++) {
    json_object *pod = json_object_array_get_idx(items, i), *meta = ext_get(pod, "metadata");
    const char *node = ext_get_str(ext_get(pod, "spec"), "nodeName");
    struct vg_resize_view v;
    vg_resize_view_of(pod, &v, NULL);
    if (node == NULL || !ours(&v)) continue;
    if (take_up(x, ext_get_str(meta, "namespace"), ext_get_str(meta, "name"), node) == 0)
      answered++;
  }
  json_object_put(list);
  return answered;
}

static void *run(void *arg) {
  struct ext_resizer *r = arg;
  bool said = false; /* a failing list is reported once, and its recovery */
  while (!r->stop) {
    struct vg_err err = {{0}};
    if (vg_ext_resize_pass(r->x, &err) < 0) {
      if (!said) vg_warn("resize: cannot list open requests (%s); trying again", err.msg);
      said = true;
    } else if (said) {
      vg_info("resize: listing open requests again");
      said = false;
    }
    for (long t = 0; t < r->poll_ms && !r->stop; t += 50)
      nanosleep(&(struct timespec){0, 50000000L}, NULL);
  }
  return NULL;
}

int vg_ext_resize_start(struct vg_ext *x, long poll_ms, struct vg_err *err) {
  if (x->resizer != NULL || poll_ms <= 0) return 0;
  struct ext_resizer *r = calloc(1, sizeof(*r));
  if (r == NULL) return vg_err_set(err, "out of memory"), -1;
  r->x = x;
  r->poll_ms = poll_ms;
  if (pthread_create(&r->thread, NULL, run, r) != 0) {
    free(r);
    return vg_err_set(err, "cannot start the resize thread"), -1;
  }
  x->resizer = r;
  return 0;
}

void vg_ext_resize_stop(struct vg_ext *x) {
  struct ext_resizer *r = x->resizer;
  if (r == NULL) return;
  r->stop = 1;
  pthread_join(r->thread, NULL);
  x->resizer = NULL;
  free(r);
}
