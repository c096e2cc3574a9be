/*
 * extender_notice.c -- Events on pods, recorded off the thread that noticed
 * them.
 *
 * The pod watch notices what a pod's owner must be told (NotRouted,
 * extender_unrouted.c). Posting the Event from the watch's own thread tied
 * the watch to the API server's answer: on a bad day (a slow or flooded
 * kube-apiserver) each Event held every later pod event -- and with it the
 * node views every filter is answered from -- for up to the client's
 * timeout. So the watch only queues a notice, and one thread of its own
 * posts them in order. The queue is bounded: when it is full a notice is
 * dropped and counted rather than waited for (the watch never waits), and
 * what is still queued at shutdown is not posted.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "extender_int.h"
#include "log.h"
#include "routing.h"

static void post(struct ext_notices *q, const struct ext_notice *n) {
  json_object *pod = json_object_new_object(), *meta = json_object_new_object();
  json_object_object_add(meta, "namespace", json_object_new_string(n->ns));
  json_object_object_add(meta, "name", json_object_new_string(n->name));
  json_object_object_add(meta, "uid", json_object_new_string(n->uid));
  json_object_object_add(pod, "metadata", meta);
  struct vg_err err = {{0}};
  if (vg_k8s_pod_event(q->client, pod, "Warning", n->reason, n->message, VG_SCHEDULER_NAME, &err) !=
      0)
    vg_warn("pod %s/%s: %s; its Event %s failed: %s", n->ns, n->name, n->message, n->reason,
            err.msg);
  else
    vg_info("pod %s/%s: %s", n->ns, n->name, n->message);
  json_object_put(pod);
}

static void *run(void *arg) {
  struct ext_notices *q = arg;
  pthread_mutex_lock(&q->lock);
  for (;;) {
    while (q->count == 0 && !q->stop) pthread_cond_wait(&q->cond, &q->lock);
    if (q->stop) break;
    struct ext_notice n = q->items[q->head];
    q->head = (q->head + 1) % EXT_NOTICE_QUEUE;
    q->count--;
    pthread_mutex_unlock(&q->lock);
    post(q, &n);
    pthread_mutex_lock(&q->lock);
  }
  pthread_mutex_unlock(&q->lock);
  return NULL;
}

int ext_notices_start(struct ext_notices *q, struct vg_k8s_client *client, struct vg_err *err) {
  memset(q, 0, sizeof(*q));
  q->client = client;
  pthread_mutex_init(&q->lock, NULL);
  pthread_cond_init(&q->cond, NULL);
  if (pthread_create(&q->thread, NULL, run, q) != 0)
    return vg_err_set(err, "cannot start the thread that records Events"), -1;
  q->started = true;
  return 0;
}

void ext_notices_stop(struct ext_notices *q) {
  if (!q->started) return;
  pthread_mutex_lock(&q->lock);
  q->stop = true;
  pthread_cond_signal(&q->cond);
  pthread_mutex_unlock(&q->lock);
  pthread_join(q->thread, NULL);
  q->started = false;
}

bool ext_notice_pod(struct ext_notices *q, json_object *pod, const char *reason,
                    const char *message) {
  json_object *meta = ext_get(pod, "metadata");
  const char *ns = ext_get_str(meta, "namespace"), *name = ext_get_str(meta, "name");
  const char *uid = ext_get_str(meta, "uid");
  if (ns == NULL || name == NULL) return false;
  pthread_mutex_lock(&q->lock);
  bool room = q->started && q->count < EXT_NOTICE_QUEUE;
  if (room) {
    struct ext_notice *n = &q->items[(q->head + q->count++) % EXT_NOTICE_QUEUE];
    snprintf(n->ns, sizeof(n->ns), "%s", ns);
    snprintf(n->name, sizeof(n->name), "%s", name);
    snprintf(n->uid, sizeof(n->uid), "%s", uid != NULL ? uid : "");
    snprintf(n->reason, sizeof(n->reason), "%s", reason);
    snprintf(n->message, sizeof(n->message), "%s", message);
    pthread_cond_signal(&q->cond);
  } else {
    q->dropped++;
  }
  pthread_mutex_unlock(&q->lock);
  return room;
}
