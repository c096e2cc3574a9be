/*
 * extender_watch.c -- keeps the extender's node views current by watching
 * the API, so that a filter needs no API request.
 *
 * Each watch (Pods, Nodes) lists its collection once, keeps what it listed
 * in the store (extender_store.c), then watches from the list's
 * resourceVersion and applies every event to the store, in order: the store
 * is then what a list would return as of the last event delivered (an
 * informer, as kube-scheduler's own cache is). Every event that changes what
 * a node's view is built from (a GPU pod bound there, changed or gone; the
 * node's inventory changed or the node gone) drops that node's cached view,
 * and the next filter rebuilds it from the store, without an API request.
 *
 * While both watches are synced a view is used until an event drops it, at
 * any --cache-ttl-ms, 0 included, with no time limit: rebuilding it from the
 * store would give the same view (the 5-minute limit this had when views
 * came from the API only made the first filter after a quiet spell rebuild
 * every view, 50 ms and more at 5,000 nodes). While either is down or not yet synced the
 * store is not used, views live --cache-ttl-ms and are read from the API,
 * and every view is dropped whenever a watch comes up or goes down (events
 * may have been missed in between). On 410 Gone the collection is listed
 * again and the store replaced. A view read while an event for its node
 * arrives is used once and not kept (the generation in node_entry).
 *
 * The store lags the API server by the watch's delivery time (milliseconds).
 * For our own binds that lag is closed (read-your-writes: node_entry.pending,
 * extender.c); for other writers it is kube-scheduler's own freshness. Nothing
 * here decides a placement: bind still re-reads the node under its lock, so a
 * late event can cost a wasted filter, never a double booking.
 */
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "extender_int.h"
#include "log.h"

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
  struct ext_store *store;
  struct ext_unrouted unrouted; /* the pods watch's thread only */
  struct ext_notices notices;   /* what the watch tells pods, posted by its own thread */
};

struct ext_store *ext_synced_store(const struct vg_ext *x) {
  const struct ext_watch *w = x->watch;
  return w != NULL && w->pods.up && w->nodes.up ? w->store : NULL;
}

struct ext_store *ext_current_store(struct vg_ext *x) {
  pthread_mutex_lock(&x->lock);
  struct ext_store *s = ext_synced_store(x);
  pthread_mutex_unlock(&x->lock);
  return s;
}

long ext_view_ttl_ms(const struct vg_ext *x) { return ext_synced_store(x) ? LONG_MAX : x->ttl_ms; }

static const char *node_of(const struct watcher *r, json_object *obj) {
  if (r->pod) return ext_get_str(ext_get(obj, "spec"), "nodeName");
  return ext_get_str(ext_get(obj, "metadata"), "name");
}

static int on_event(enum vg_k8s_event type, json_object *obj, void *arg) {
  struct watcher *r = arg;
  if (type == VG_K8S_BOOKMARK || type == VG_K8S_ERROR) return 0;
  struct vg_ext *x = r->w->x;
  char changed[2][VG_SCHED_NAME_MAX * 2];
  /* The store first, then the drops: a view rebuilt after a drop sees the event. */
  if (ext_store_apply(r->w->store, r->pod, type == VG_K8S_DELETED, obj, changed))
    for (int i = 0; i < 2; i++)
      if (changed[i][0]) ext_invalidate_known(x, changed[i]);
  const char *node = node_of(r, obj);
  char key[EXT_POD_KEY_MAX]; /* a bind of ours has arrived: the store has it now */
  if (r->pod && node && node[0] && ext_pod_key(obj, key, sizeof(key)))
    ext_pending_seen(x, key, node);
  if (r->pod && type != VG_K8S_DELETED) ext_unrouted_note(&r->w->notices, &r->w->unrouted, obj);
  pthread_mutex_lock(&x->lock);
  x->m.watch_events[r->pod ? 0 : 1]++;
  pthread_mutex_unlock(&x->lock);
  return 0;
}

static void nothing(void *ctx, const struct node_view *v) {
  (void)ctx;
  (void)v;
}

/* Once both watches are synced, every node's view is built from the store
 * here, off the request path: building 5,000 (their cache entries touched
 * for the first time) took a cold filter 50-140 ms of its 100 ms budget. */
static void warm(struct ext_watch *w) {
  struct vg_ext *x = w->x;
  struct ext_store *s = ext_current_store(x);
  if (!s) return;
  char **names = NULL;
  size_t n = ext_store_names(s, &names);
  for (size_t i = 0; i < n; i++) {
    char why[256];
    if (!w->stop)
      ext_with_view(x, names[i], NULL, NULL, EXT_CACHED, nothing, NULL, why, sizeof(why));
    free(names[i]);
  }
  free(names);
}

/* up: the list is in the store, the watch about to stream. The metric
 * says 1 only after the views are warm, so that "both up" in /metrics
 * means ready. */
static void set_up(struct watcher *r, int up) {
  struct vg_ext *x = r->w->x;
  /* Whatever happened while not watching is unknown: every view goes, before
   * the store is trusted (a view read from the API while the watch was down
   * must not then live the watch's long TTL) and after it no longer is. */
  if (up) ext_invalidate_all(x);
  pthread_mutex_lock(&x->lock);
  r->up = up;
  if (!up) x->m.watch_up[r->pod ? 0 : 1] = 0;
  pthread_mutex_unlock(&x->lock);
  if (!up) ext_invalidate_all(x);
  if (!up) return;
  warm(r->w);
  pthread_mutex_lock(&x->lock);
  x->m.watch_up[r->pod ? 0 : 1] = r->up;
  pthread_mutex_unlock(&x->lock);
}

/* Lists the collection into the store; rv: the list's resourceVersion,
 * where the watch starts. */
static int list_all(struct watcher *r, char *rv, size_t len, struct vg_err *err) {
  json_object *list = NULL;
  int rc = vg_k8s_call(r->w->x->client, "GET", r->path, NULL, NULL, &list, err);
  if (rc != 0) return rc;
  const char *v = ext_get_str(ext_get(list, "metadata"), "resourceVersion");
  snprintf(rv, len, "%s", v ? v : "");
  if (rv[0] == '\0') {
    json_object_put(list);
    return vg_err_set(err, "GET %s: no resourceVersion", r->path), -1;
  }
  int n = ext_store_reset(r->w->store, r->pod, list);
  json_object_put(list);
  if (r->pod) ext_pending_reapply(r->w->x, r->w->store); /* the list may predate our binds */
  vg_debug("listed %d %s at resourceVersion %s", n, r->what, rv);
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
    int rc = list_all(r, rv, sizeof(rv), &err);
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

static int start_one(struct watcher *r, struct vg_err *err) {
  if (pthread_create(&r->thread, NULL, run, r) != 0)
    return vg_err_set(err, "cannot start the %s watch thread", r->what), -1;
  r->started = true;
  return 0;
}

int vg_ext_watch_start(struct vg_ext *x, struct vg_err *err) {
  if (x->watch != NULL) return 0;
  struct ext_watch *w = calloc(1, sizeof(*w));
  if (w == NULL) return vg_err_set(err, "out of memory"), -1;
  w->x = x;
  if ((w->store = ext_store_new()) == NULL) {
    free(w);
    return vg_err_set(err, "out of memory"), -1;
  }
  /* Both set up before either thread runs: each reads the other's up
   * (ext_synced_store) as soon as its list is in. */
  if (ext_notices_start(&w->notices, x->client, err) != 0) {
    ext_store_free(w->store);
    free(w);
    return -1;
  }
  w->pods = (struct watcher){.w = w, .what = "pods", .path = "/api/v1/pods", .pod = true};
  w->nodes = (struct watcher){.w = w, .what = "nodes", .path = "/api/v1/nodes", .pod = false};
  pthread_mutex_lock(&x->lock); /* filters may be running already */
  x->watch = w;
  pthread_mutex_unlock(&x->lock);
  if (start_one(&w->pods, err) != 0 || start_one(&w->nodes, err) != 0) {
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
  ext_notices_stop(&w->notices); /* after the pods watch: nothing queues any more */
  pthread_mutex_lock(&x->lock);
  x->watch = NULL;
  pthread_mutex_unlock(&x->lock);
  ext_store_free(w->store);
  free(w);
}
