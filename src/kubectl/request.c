/*
 * request.c -- opening a resize request on a pod (src/k8s/resize.h).
 *
 * The pod is read, the request checked against it (the container must have
 * a GPU slice in vgpu.io/assigned; no other request may be open), and then
 * the request annotation and the vgpu.io/resize=requested label are written
 * in ONE merge patch carrying the resourceVersion that was read. One patch,
 * so that nobody ever sees the label without the request or the reverse;
 * the precondition, so that the checks hold for the pod as written: if
 * anyone changed the pod in between (another resize, the scheduler moving
 * the assignment), the API server answers 409 and everything is read and
 * checked again.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_get.h"
#include "kubectl_vgpu.h"

#define MAX_ATTEMPTS 5

/* "a, b, c": the containers an assignment names, for messages. */
static void ctr_names(const struct vg_assignment *a, char *buf, size_t len) {
  size_t used = 0;
  buf[0] = '\0';
  for (int i = 0; i < a->nctrs && used < len; i++)
    used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? ", " : "", a->ctr[i].name);
}

/* The container's entry: the one named, else the only one. */
static int pick_container(const struct vg_assignment *a, const char *want, const struct kv_sent *s,
                          struct vg_assign_ctr *out, struct vg_err *err) {
  char names[512];
  ctr_names(a, names, sizeof(names));
  if (want == NULL && a->nctrs == 1) want = a->ctr[0].name;
  if (want == NULL)
    return vg_err_set(err, "pod %s/%s has %d containers with GPUs (%s): choose one with -c", s->ns,
                      s->pod, a->nctrs, names);
  for (int i = 0; i < a->nctrs; i++)
    if (strcmp(a->ctr[i].name, want) == 0) return *out = a->ctr[i], 0;
  return vg_err_set(err,
                    "container %s has no GPU slice placed by vgpu-scheduler in pod %s/%s "
                    "(vgpu.io/assigned has: %s)",
                    want, s->ns, s->pod, a->nctrs ? names : "no containers");
}

static int container_of(json_object *pod, const char *want, struct kv_sent *s, struct vg_err *err) {
  struct vg_assignment a;
  struct vg_err e = {""};
  int rc = vg_assign_from_pod(pod, &a, &e);
  if (rc < 0) return vg_err_set(err, "pod %s/%s: %s", s->ns, s->pod, e.msg);
  if (rc == 0)
    return vg_err_set(err,
                      "pod %s/%s has no " VG_ASSIGNED_ANNOTATION
                      " annotation: vgpu-scheduler has not placed it (not bound yet, or "
                      "scheduled by another scheduler), so there is no GPU slice to resize",
                      s->ns, s->pod);
  rc = pick_container(&a, want, s, &s->was, err);
  if (rc == 0) {
    snprintf(s->req.container, sizeof(s->req.container), "%s", s->was.name);
    const char *node = vg_json_get_str(vg_json_get(pod, "spec"), "nodeName");
    snprintf(s->node, sizeof(s->node), "%s", node != NULL ? node : a.node);
  }
  vg_assign_free(&a);
  return rc;
}

/* Refuses while another request is open: the label says so, and that
 * request has no final answer yet (Accepted is not final). A label without
 * a readable request is left over and does not block: our patch replaces
 * both. */
static int check_none_open(json_object *pod, struct vg_err *err) {
  struct vg_resize_view v;
  vg_resize_view_of(pod, &v, NULL);
  if (!v.open || !v.has_request || v.bad_request) return 0;
  bool ended = v.has_status && !v.bad_status && strcmp(v.status.id, v.request.id) == 0 &&
               v.status.phase != VG_RESIZE_ACCEPTED;
  if (ended) return 0;
  return vg_err_set(err, "a resize (id %s, container %s) is still in progress; wait for it",
                    v.request.id, v.request.container);
}

static int check_pod(json_object *pod, const struct kv_resize_opts *o, struct kv_sent *s,
                     struct vg_err *err) {
  const char *phase = vg_json_get_str(vg_json_get(pod, "status"), "phase");
  if (phase != NULL && (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0))
    return vg_err_set(err, "pod %s/%s has ended (phase %s): nothing to resize", s->ns, s->pod,
                      phase);
  if (container_of(pod, o->container, s, err) != 0) return -1;
  return check_none_open(pod, err);
}

static int write_request(struct vg_k8s_client *c, json_object *pod, const struct kv_sent *s,
                         struct vg_err *err) {
  const char *rv = vg_json_get_str(vg_json_get(pod, "metadata"), "resourceVersion");
  if (rv == NULL) return vg_err_set(err, "pod %s/%s has no resourceVersion", s->ns, s->pod);
  char *text = vg_resize_request_format(&s->req);
  if (text == NULL) return vg_err_set(err, "out of memory");
  json_object *labels = json_object_new_object(), *ann = json_object_new_object();
  json_object_object_add(labels, VG_RESIZE_LABEL, json_object_new_string(VG_RESIZE_LABEL_OPEN));
  json_object_object_add(ann, VG_RESIZE_REQUEST_ANNOTATION, json_object_new_string(text));
  free(text);
  int rc = vg_k8s_patch_pod_metadata(c, s->ns, s->pod, labels, ann, rv, NULL, err);
  json_object_put(labels);
  json_object_put(ann);
  return rc;
}

int kv_request_send(struct vg_k8s_client *c, const struct kv_resize_opts *o, struct kv_sent *s,
                    struct vg_err *err) {
  vg_resize_new_id(s->req.id);
  s->req.memory = o->memory;
  s->req.cores = o->cores;
  for (int attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    json_object *pod = NULL;
    int rc = vg_k8s_get_pod(c, s->ns, s->pod, &pod, err);
    if (rc != 0) return rc;
    rc = check_pod(pod, o, s, err);
    if (rc == 0) rc = write_request(c, pod, s, err);
    json_object_put(pod);
    if (rc != VG_K8S_ECONFLICT) return rc;
  }
  return vg_err_set(err,
                    "pod %s/%s changed %d times while the request was being written "
                    "(409 Conflict each time); try again",
                    s->ns, s->pod, MAX_ATTEMPTS);
}
