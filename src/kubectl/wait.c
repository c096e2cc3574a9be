/*
 * wait.c -- waiting for the answer to our resize request.
 *
 * The pod is read every 250 ms until vgpu.io/resize-status carries our id
 * with a final phase (Applied or Refused). Only the id ties an answer to a
 * request: a status or acknowledgement with another id is about an earlier
 * request and is ignored, however final it looks. Polling rather than a
 * watch keeps the permissions to `get` on one pod, and a resize takes
 * seconds, so four reads a second cost nothing.
 *
 * A failed read is retried until the deadline when it may pass (server
 * unreachable, 5xx); a deleted pod, refused credentials and the like end
 * the wait at once, as does our request being replaced by another one.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "kubectl_vgpu.h"

#define POLL_S 0.25

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_s(double s) {
  struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  nanosleep(&ts, NULL);
}

/* Updates *p from the pod. Returns 1 when our request has a final answer,
 * 0 when not yet, -1 with err when it never will. */
static int look(json_object *pod, const struct kv_sent *s, struct kv_progress *p,
                struct vg_err *err) {
  struct vg_resize_view v;
  vg_resize_view_of(pod, &v, NULL);
  if (v.has_node && !v.bad_node && strcmp(v.node_id, s->req.id) == 0) p->acked = true;
  if (v.has_status && !v.bad_status && strcmp(v.status.id, s->req.id) == 0) {
    p->answered = true;
    p->status = v.status;
    if (v.status.phase != VG_RESIZE_ACCEPTED) return 1;
  }
  if (!v.has_request)
    return vg_err_set(err,
                      "the " VG_RESIZE_REQUEST_ANNOTATION
                      " annotation was removed before resize %s was answered",
                      s->req.id);
  if (!v.bad_request && strcmp(v.request.id, s->req.id) != 0)
    return vg_err_set(err,
                      "resize %s was replaced by another request (id %s) before it was answered",
                      s->req.id, v.request.id);
  return 0;
}

/* One line on stderr when the scheduler has accepted, so that a slow node
 * agent is not mistaken for a hung command. */
static void progress(const struct kv_sent *s, const struct kv_progress *p, bool *told) {
  if (*told || !p->answered || p->status.phase != VG_RESIZE_ACCEPTED) return;
  fprintf(stderr,
          KV_RESIZE_PREFIX
          "resize %s accepted by vgpu-scheduler; waiting for the node agent "
          "on %s to apply it\n",
          s->req.id, s->node);
  *told = true;
}

/* One read of the pod: 1 final, 0 go on, <0 give up (err set). */
static int poll_once(struct vg_k8s_client *c, const struct kv_sent *s, struct kv_progress *p,
                     struct vg_err *err) {
  json_object *pod = NULL;
  struct vg_err e = {""};
  int rc = vg_k8s_get_pod(c, s->ns, s->pod, &pod, &e);
  if (rc == 0) {
    rc = look(pod, s, p, err);
    json_object_put(pod);
    return rc;
  }
  if (rc == VG_K8S_ENOTFOUND)
    return vg_err_set(err, "pod %s/%s was deleted before resize %s was answered", s->ns, s->pod,
                      s->req.id);
  if (rc != VG_K8S_EUNREACHABLE && rc != VG_K8S_EFAIL) return *err = e, rc;
  p->last_error = e; /* may pass: try again until the deadline */
  return 0;
}

int kv_wait(struct vg_k8s_client *c, const struct kv_sent *s, int timeout_s, struct kv_progress *p,
            struct vg_err *err) {
  memset(p, 0, sizeof(*p));
  double deadline = now_s() + timeout_s;
  bool told = false;
  for (;;) {
    int rc = poll_once(c, s, p, err);
    if (rc != 0) return rc > 0 ? 0 : rc;
    progress(s, p, &told);
    double left = deadline - now_s();
    if (left <= 0) return KV_EXIT_TIMEOUT;
    sleep_s(left < POLL_S ? left : POLL_S);
  }
}
