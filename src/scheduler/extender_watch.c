/*
 * extender_watch.c -- keeps the extender's node views honest by watching the
 * API, so that they can be kept instead of re-read.
 *
 * Filter and prioritize reuse each node's view (extender_view.c). Without a
 * watch a view can only be trusted for --cache-ttl-ms (1 s by default): the
 * first filter after that re-reads every candidate node and its pods, two
 * requests per node -- seconds on a 1,000-node cluster, for every pod that
 * arrives more than a second after the last one. With a watch on Pods and on
 * Nodes, every event that can change a node's GPU account (a pod bound to it,
 * changed or gone; the node's inventory changed) drops that node's view at
 * once, so a view stays valid until something happens (WATCH_TTL_MS, a
 * safety net). While either watch is down the short TTL applies again, and
 * every view is dropped whenever a watch starts or ends (events may have been
 * missed in between). A view read while an event for its node arrives is
 * used once and not kept (the generation in node_entry).
 *
 * Nothing here decides a placement: bind still re-reads the node under its
 * lock, so a late event can cost a wasted filter, never a double booking.
 * --cache-ttl-ms 0 means "never reuse" and stays so.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "extender_int.h"
#include "log.h"

#define WATCH_TTL_MS (5L * 60 * 1000)
#define RETRY_MS 1000

struct watcher {
  struct ext_watch *w;
  const char *what; /* "pods", "nodes" */
  const char *path; /* the collection */
  bool pod;         /* events name their node in spec.nodeName, else metadata.name */
  int up;           /* the watch is streaming (under x->lock) */
  pthread_t thread;
  bool started;
};

struct ext_watch {
  struct vg_ext *x;
  volatile sig_atomic_t stop;
  struct watcher pods, nodes;
};

long ext_view_ttl_ms(const struct vg_ext *x) {
  const struct ext_watch *w = x->watch;
  if (x->ttl_ms <= 0 || w == NULL || !w->pods.up || !w->nodes.up) return x->ttl_ms;
  return x->ttl_ms > WATCH_TTL_MS ? x->ttl_ms : WATCH_TTL_MS;
}

static const char *node_of(const struct watcher *r, json_object *obj) {
  if (r->pod) return ext_get_str(ext_get(obj, "spec"), "nodeName");
  return ext_get_str(ext_get(obj, "metadata"), "name");
}

static int on_event(enum vg_k8s_event type, json_object *obj, void *arg) {
  struct watcher *r = arg;
  if (type == VG_K8S_BOOKMARK || type == VG_K8S_ERROR) return 0;
  struct vg_ext *x = r->w->x;
  pthread_mutex_lock(&x->lock);
  x->m.watch_events[r->pod ? 0 : 1]++;
  pthread_mutex_unlock(&x->lock);
  const char *node = node_of(r, obj);
  if (node != NULL && node[0] != '\0') ext_invalidate_known(r->w->x, node);
  return 0;
}

static void set_up(struct watcher *r, int up) {
  struct vg_ext *x = r->w->x;
  pthread_mutex_lock(&x->lock);
  r->up = up;
  x->m.watch_up[r->pod ? 0 : 1] = up;
  pthread_mutex_unlock(&x->lock);
  ext_invalidate_all(x); /* whatever happened while not watching is unknown */
}

/* The collection's current resourceVersion, where the watch starts. */
static int list_rv(struct watcher *r, char *rv, size_t len, struct vg_err *err) {
  char path[128];
  snprintf(path, sizeof(path), "%s?limit=1", r->path);
  json_object *list = NULL;
  int rc = vg_k8s_call(r->w->x->client, "GET", path, NULL, NULL, &list, err);
  if (rc != 0) return rc;
  const char *v = ext_get_str(ext_get(list, "metadata"), "resourceVersion");
  snprintf(rv, len, "%s", v ? v : "");
  json_object_put(list);
  if (rv[0] == '\0') return vg_err_set(err, "GET %s: no resourceVersion", path), -1;
  return 0;
}

static void pause_ms(struct ext_watch *w, long ms) {
  for (long t = 0; t < ms && !w->stop; t += 100) nanosleep(&(struct timespec){0, 100000000L}, NULL);
}

static void *run(void *arg) {
  struct watcher *r = arg;
  struct ext_watch *w = r->w;
  bool said = false; /* a failing watch is reported once, and its recovery */
  while (!w->stop) {
    char rv[128];
    struct vg_err err = {{0}};
    int rc = list_rv(r, rv, sizeof(rv), &err);
    if (rc == 0) {
      if (said) vg_info("watching %s again", r->what);
      said = false;
      set_up(r, 1);
      struct vg_k8s_watch_opts o = {
          .path = r->path, .timeout_seconds = 300, .bookmarks = true, .stop = &w->stop};
      rc = vg_k8s_watch(w->x->client, &o, rv, sizeof(rv), on_event, r, &err);
      set_up(r, 0);
    }
    if (w->stop || rc == VG_K8S_EEXPIRED) continue; /* expired: list again at once */
    if (!said)
      vg_warn("cannot watch %s (%s); node views live --cache-ttl-ms until it recovers", r->what,
              err.msg);
    said = true;
    pause_ms(w, RETRY_MS);
  }
  return NULL;
}

static int start_one(struct ext_watch *w, struct watcher *r, const char *what, const char *path,
                     bool pod, struct vg_err *err) {
  *r = (struct watcher){.w = w, .what = what, .path = path, .pod = pod};
  if (pthread_create(&r->thread, NULL, run, r) != 0)
    return vg_err_set(err, "cannot start the %s watch thread", what), -1;
  r->started = true;
  return 0;
}

int vg_ext_watch_start(struct vg_ext *x, struct vg_err *err) {
  if (x->watch != NULL) return 0;
  struct ext_watch *w = calloc(1, sizeof(*w));
  if (w == NULL) return vg_err_set(err, "out of memory"), -1;
  w->x = x;
  x->watch = w;
  if (start_one(w, &w->pods, "pods", "/api/v1/pods", true, err) != 0 ||
      start_one(w, &w->nodes, "nodes", "/api/v1/nodes", false, err) != 0) {
    vg_ext_watch_stop(x);
    return -1;
  }
  return 0;
}

void vg_ext_watch_stop(struct vg_ext *x) {
  struct ext_watch *w = x->watch;
  if (w == NULL) return;
  w->stop = 1;
  if (w->pods.started) pthread_join(w->pods.thread, NULL);
  if (w->nodes.started) pthread_join(w->nodes.thread, NULL);
  pthread_mutex_lock(&x->lock);
  x->watch = NULL;
  pthread_mutex_unlock(&x->lock);
  free(w);
}
