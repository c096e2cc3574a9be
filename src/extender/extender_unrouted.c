/*
 * extender_unrouted.c -- says so, on the pod, when a GPU pod will never
 * reach vgpu-scheduler.
 *
 * vgpu-webhook's route is failurePolicy Ignore (docs/admission.md, "When
 * vgpu-webhook is down"): a GPU pod created while no replica answers keeps
 * the scheduler it named. The node agent refuses it if the default scheduler
 * places it, but a pod asking for what no node advertises to the default
 * scheduler (vgpu's memory or cores, ...) just stays Pending with
 * "Insufficient <that resource>", which does not say why. (A pod asking
 * for whole GPUs alone is not told: on a mixed cluster another
 * device plugin may serve it under the default scheduler.) The pod
 * watch sees every pod, so it notices such a pod and records a Warning Event
 * NotRouted on it, naming the cause and the fix -- once per pod (by UID), and
 * at most EXT_UNROUTED_RATE a second, so that a flood of such pods costs the
 * API server a bounded stream of Events. The Event is queued, not posted
 * here (extender_notice.c): the watch never waits for the API server.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "extender_int.h"
#include "log.h"
#include "routing.h"

#define SCHEDULER VG_SCHEDULER_NAME

static bool opted_out(json_object *pod) {
  json_object *meta = ext_get(pod, "metadata");
  const char *skip = ext_get_str(ext_get(meta, "annotations"), VG_OPT_OUT_ANNOTATION);
  const char *ignore = ext_get_str(ext_get(meta, "labels"), VG_ADMISSION_LABEL);
  const char *ns = ext_get_str(meta, "namespace");
  return (skip != NULL && strcmp(skip, VG_OPT_OUT_VALUE) == 0) ||
         (ignore != NULL && strcmp(ignore, VG_ADMISSION_IGNORE) == 0) ||
         (ns != NULL &&
          (strcmp(ns, VG_KUBE_SYSTEM_NAMESPACE) == 0 || strcmp(ns, VG_SYSTEM_NAMESPACE) == 0));
}

bool ext_unrouted_why(json_object *pod, char *why, size_t len) {
  json_object *spec = ext_get(pod, "spec");
  const char *node = ext_get_str(spec, "nodeName");
  const char *phase = ext_get_str(ext_get(pod, "status"), "phase");
  const char *sched = ext_get_str(spec, "schedulerName");
  if ((node != NULL && *node != '\0') || (phase != NULL && strcmp(phase, "Pending") != 0) ||
      (sched != NULL && strcmp(sched, SCHEDULER) == 0) || opted_out(pod))
    return false;
  struct pod_req r;
  char bad[256];
  /* Whole nvidia.com/gpu alone may rightly stay with the default scheduler
   * (a mixed cluster: NVIDIA's plugin serves it; docs/install.md). */
  if (ext_parse_pod(pod, &r, bad, sizeof(bad)) != 0 || r.n == 0 || ext_plain_gpus(&r)) return false;
  snprintf(why, len,
           "this pod asks for GPUs but names scheduler %s, not " SCHEDULER
           ": vgpu-webhook did not route it (it was unreachable when the pod was created, or "
           "the namespace is labelled vgpu.io/admission=ignore). "
           "vgpu's GPU nodes do not run unrouted pods; delete the pod and create it again "
           "(docs/admission.md, \"When vgpu-webhook is down\")",
           sched != NULL && *sched != '\0' ? sched : "default-scheduler");
  return true;
}

/* Said on this UID already? Remembers it if not (a ring: the oldest goes). */
static bool seen(struct ext_unrouted *u, const char *uid) {
  for (int i = 0; i < EXT_UNROUTED_SEEN; i++)
    if (strcmp(u->seen[i], uid) == 0) return true;
  snprintf(u->seen[u->next], sizeof(u->seen[0]), "%s", uid);
  u->next = (u->next + 1) % EXT_UNROUTED_SEEN;
  return false;
}

/* A token bucket: EXT_UNROUTED_RATE a second, bursts of as many. */
static bool take_token(struct ext_unrouted *u) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  double t = (double)now.tv_sec + (double)now.tv_nsec / 1e9;
  u->tokens += (t - u->last) * EXT_UNROUTED_RATE;
  if (u->tokens > EXT_UNROUTED_RATE) u->tokens = EXT_UNROUTED_RATE;
  u->last = t;
  if (u->tokens < 1.0) return false;
  u->tokens -= 1.0;
  return true;
}

void ext_unrouted_note(struct ext_notices *q, struct ext_unrouted *u, json_object *pod) {
  char why[512];
  const char *uid = ext_get_str(ext_get(pod, "metadata"), "uid");
  if (uid == NULL || *uid == '\0' || !ext_unrouted_why(pod, why, sizeof(why)) || seen(u, uid))
    return;
  if (!take_token(u) || !ext_notice_pod(q, pod, "NotRouted", why)) u->dropped++;
}
