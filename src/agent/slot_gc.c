/* slot_gc.c -- see slot_gc.h and docs/device-plugin.md ("Slot directories"). */
#include "slot_gc.h"

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "config.h"
#include "log.h"
#include "node_view.h"
#include "once.h"
#include "podresources.h"
#include "region.h"
#include "slot.h"
#include "ticker.h"

#define GC_LIST_TIMEOUT_MS 5000
#define GC_INTERVAL_MAX_MS 10000
#define GC_INTERVAL_MIN_MS 100

typedef char slot_name[17];

struct vg_slot_gc {
  char slots_dir[VG_CONFIG_PATH_MAX + 8];
  char socket[1024];
  struct vg_k8s_client *k8s;
  char node[256];
  unsigned grace_s, interval_ms;
  pthread_rwlock_t *slots_lock;

  pthread_mutex_t lock; /* stats */
  struct vg_ticker *ticker;
  struct vg_slot_gc_stats stats;

  /* Pass only (the thread, or the vg_slot_gc_run_once caller). */
  slot_name *unlisted; /* slots no listed container held in the last pass */
  size_t nunlisted;
  struct vg_once logged; /* "what|key" said once */
  char last_error[VG_ERR_MAX];
};

static void count(struct vg_slot_gc *g, uint64_t *field) {
  pthread_mutex_lock(&g->lock);
  (*field)++;
  pthread_mutex_unlock(&g->lock);
}

static bool first_time(struct vg_slot_gc *g, const char *what, const char *key) {
  char k[600];
  snprintf(k, sizeof(k), "%s|%s", what, key);
  return vg_once_first(&g->logged, k);
}

static bool in(const slot_name *v, size_t n, const char *name) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(v[i], name) == 0) return true;
  return false;
}

static bool held(const struct vg_node_view *v, const char *name) {
  for (size_t i = 0; i < v->nheld; i++)
    if (strcmp(v->held[i].slot, name) == 0) return true;
  return false;
}

/* The first unfinished pod of the node, not being deleted, that the kubelet
 * does not list (written to out), or false: then the kubelet knows every pod
 * that runs. */
static bool kubelet_behind(const struct vg_node_view *v, char *out, size_t len) {
  for (size_t i = 0; i < vg_node_view_npods(v); i++) {
    json_object *pod = vg_node_view_pod(v, i);
    const char *ns = vg_json_str_at(pod, "metadata", "namespace");
    const char *name = vg_json_str_at(pod, "metadata", "name");
    bool listed;
    vg_node_view_held(v, ns, name, NULL, NULL, &listed, NULL);
    /* A pod being deleted that the kubelet no longer lists has stopped here. */
    bool deleting = vg_json_str_at(pod, "metadata", "deletionTimestamp")[0] != '\0';
    if (listed || deleting || vg_pod_finished(pod)) continue;
    snprintf(out, len, "%s/%s", ns, name);
    return true;
  }
  return false;
}

/* Live processes of the slot's region file (0 when there is none). */
static int live_processes(const char *dir) {
  struct vg_shm shm;
  struct vg_err err;
  if (vg_region_open_slot(&shm, dir, true, &err) != 0) return 0;
  const struct vg_region *r = vg_region_of(&shm);
  int n = 0;
  for (unsigned i = 0; i < VG_MAX_PROCS; i++)
    if (r->proc[i].pid != 0 && vg_shm_slot_alive(&shm, i)) n++;
  vg_shm_close(&shm);
  return n;
}

/* Seconds since Allocate last stamped the slot, or -1 when it is not a
 * directory (never ours to remove). */
static long long age_s(const char *dir) {
  struct stat st;
  if (lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) return -1;
  return (long long)time(NULL) - (long long)st.st_mtime;
}

/* nftw: depth first, links not followed (a container may have written into its slot). */
static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st, (void)flag, (void)ftw;
  return remove(path) == 0 ? 0 : -1;
}

/* Removes one unlisted slot if nothing keeps it; true when removed. */
static bool collect_slot(struct vg_slot_gc *g, const char *name) {
  char dir[sizeof(g->slots_dir) + 20];
  snprintf(dir, sizeof(dir), "%s/%.16s", g->slots_dir, name); /* a slot name */
  long long age = age_s(dir);
  if (age < (long long)g->grace_s) return false;
  int procs = live_processes(dir);
  if (procs > 0) {
    if (first_time(g, "busy", name))
      vg_info(
          "slot collector: %s: no container the kubelet lists holds its device IDs, but %d "
          "processes still use its region; kept",
          dir, procs);
    return false;
  }
  pthread_rwlock_wrlock(g->slots_lock);
  int rc = 1; /* an Allocate stamped it meanwhile: it is handed out again */
  if ((age = age_s(dir)) >= (long long)g->grace_s)
    rc = nftw(dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
  int saved = errno;
  pthread_rwlock_unlock(g->slots_lock);
  if (rc < 0) {
    count(g, &g->stats.errors);
    if (first_time(g, "remove", name))
      vg_warn("slot collector: cannot remove %s: %s", dir, strerror(saved));
    return false;
  }
  if (rc > 0) return false;
  vg_info(
      "slot collector: removed %s (no container the kubelet lists holds its device IDs; "
      "last allocated %lld s ago)",
      dir, age);
  pthread_mutex_lock(&g->lock);
  g->stats.removed++;
  pthread_mutex_unlock(&g->lock);
  return true;
}

/* A source failed: said once per distinct message; nothing is remembered as
 * unlisted, so the next good pass starts over. */
static int pass_failed(struct vg_slot_gc *g, const char *msg, struct vg_err *err) {
  count(g, &g->stats.errors);
  g->nunlisted = 0;
  if (strncmp(g->last_error, msg, VG_ERR_MAX - 1) != 0) {
    snprintf(g->last_error, sizeof(g->last_error), "%.*s", VG_ERR_MAX - 1, msg);
    vg_info("slot collector: %s; no slot is removed meanwhile", msg);
  }
  if (err != NULL) vg_err_set(err, "%s", msg);
  return -1;
}

int vg_slot_gc_run_once(struct vg_slot_gc *g, struct vg_err *err) {
  struct vg_node_view view;
  struct vg_err e = {""};
  int rc = vg_node_view_read(&view, g->k8s, g->node, g->socket, GC_LIST_TIMEOUT_MS, &e);
  count(g, &g->stats.passes);
  if (rc != 0) return pass_failed(g, e.msg, err);
  DIR *d = opendir(g->slots_dir);
  if (d == NULL && errno != ENOENT) {
    char msg[sizeof(g->slots_dir) + 200];
    snprintf(msg, sizeof(msg), "cannot read %s: %s", g->slots_dir, strerror(errno));
    vg_node_view_free(&view);
    return pass_failed(g, msg, err);
  }
  if (g->last_error[0] != '\0') vg_info("slot collector: its sources answer again");
  g->last_error[0] = '\0';
  char behind[600] = "";
  bool wait = kubelet_behind(&view, behind, sizeof(behind));
  slot_name *now = NULL;
  size_t nnow = 0, cap = 0;
  int removed = 0;
  struct dirent *ent;
  while (d != NULL && (ent = readdir(d)) != NULL) {
    const char *name = ent->d_name;
    if (!vg_slot_name_valid(name) || held(&view, name)) continue;
    bool again = in(g->unlisted, g->nunlisted, name);
    if (again && !wait && collect_slot(g, name)) {
      removed++;
      continue;
    }
    if (again && wait && first_time(g, "behind", behind))
      vg_info(
          "slot collector: the kubelet does not list pod %s (yet); no slot is removed until "
          "it lists every pod of the node",
          behind);
    if (nnow == cap) {
      size_t c = cap ? cap * 2 : 16;
      slot_name *v = realloc(now, c * sizeof(*v));
      if (v == NULL) break; /* forgotten: seen as new next pass */
      now = v, cap = c;
    }
    memcpy(now[nnow++], name, sizeof(slot_name));
  }
  if (d != NULL) closedir(d);
  free(g->unlisted);
  g->unlisted = now, g->nunlisted = nnow;
  vg_node_view_free(&view);
  return removed;
}

/* ---- the thread ---- */

static void gc_pass(void *arg) { vg_slot_gc_run_once(arg, NULL); }

static const char *bad_opts(const struct vg_slot_gc_opts *o) {
  if (o->state_dir == NULL || o->state_dir[0] == '\0' || strlen(o->state_dir) >= VG_CONFIG_PATH_MAX)
    return "no state directory, or a path too long";
  if (o->grace_s == 0 || o->slots_lock == NULL)
    return "a grace period and the slots lock are needed";
  if (o->k8s != NULL && (o->node == NULL || o->node[0] == '\0' || strlen(o->node) >= 256))
    return "a node name (1..255 bytes) is needed to list the node's pods";
  return NULL;
}

struct vg_slot_gc *vg_slot_gc_new(const struct vg_slot_gc_opts *o, struct vg_err *err) {
  const char *bad = bad_opts(o);
  if (bad != NULL) {
    vg_err_set(err, "slot collector: %s", bad);
    return NULL;
  }
  struct vg_slot_gc *g = calloc(1, sizeof(*g));
  if (g == NULL) {
    vg_err_set(err, "slot collector: out of memory");
    return NULL;
  }
  snprintf(g->slots_dir, sizeof(g->slots_dir), "%s/slots", o->state_dir);
  snprintf(g->socket, sizeof(g->socket), "%s",
           o->podresources_socket != NULL && o->podresources_socket[0] != '\0'
               ? o->podresources_socket
               : VG_PODRESOURCES_SOCKET);
  g->k8s = o->k8s;
  if (o->k8s != NULL) snprintf(g->node, sizeof(g->node), "%s", o->node);
  g->grace_s = o->grace_s;
  /* A few passes per grace period: a slot goes soon after it may. */
  unsigned iv = o->interval_ms;
  if (iv == 0) iv = g->grace_s > GC_INTERVAL_MAX_MS / 250 ? GC_INTERVAL_MAX_MS : g->grace_s * 250;
  g->interval_ms = iv < GC_INTERVAL_MIN_MS ? GC_INTERVAL_MIN_MS : iv;
  g->slots_lock = o->slots_lock;
  pthread_mutex_init(&g->lock, NULL);
  return g;
}

int vg_slot_gc_start(struct vg_slot_gc *g, struct vg_err *err) {
  g->ticker = vg_ticker_start(g->interval_ms, gc_pass, g, "slot collector", err);
  return g->ticker != NULL ? 0 : -1;
}

void vg_slot_gc_get_stats(struct vg_slot_gc *g, struct vg_slot_gc_stats *st) {
  pthread_mutex_lock(&g->lock);
  *st = g->stats;
  pthread_mutex_unlock(&g->lock);
}

void vg_slot_gc_stop(struct vg_slot_gc *g) {
  if (g == NULL) return;
  vg_ticker_stop(g->ticker);
  vg_once_free(&g->logged);
  free(g->unlisted);
  pthread_mutex_destroy(&g->lock);
  free(g);
}
