/* steer.c -- see steer.h and docs/allocation.md ("Steering"). */
#include "steer.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "assignment.h"
#include "device_id.h"
#include "k8s.h"
#include "log.h"
#include "node_view.h"
#include "once.h"
#include "plugin.h"
#include "podresources.h"

#define STEER_LIST_TIMEOUT_MS 3000

struct vg_steer {
  struct vg_node_source src;
  bool debug;
  pthread_mutex_t lock; /* stats, logged */
  struct vg_steer_stats stats;
  struct vg_once logged; /* malformed assignments said once */
};

/* ---- the request's IDs per GPU ---- */

static size_t count_on(const char *const *ids, size_t n, const char *uuid) {
  size_t c = 0;
  for (size_t i = 0; i < n; i++) c += vg_device_id_on(ids[i], uuid);
  return c;
}

static bool assigned_gpu(const struct vg_assign_ctr *c, const char *id) {
  for (int k = 0; k < c->ngpus; k++)
    if (vg_device_id_on(id, c->gpu[k].uuid)) return true;
  return false;
}

/* Can the request be answered with IDs on exactly c's GPUs? */
static bool feasible(const struct vg_steer_request *rq, const struct vg_assign_ctr *c) {
  for (size_t i = 0; i < rq->n_must; i++)
    if (!assigned_gpu(c, rq->must[i])) return false;
  if (rq->one_gpu) {
    if (c->ngpus != 1) return false;
    return count_on(rq->available, rq->n_available, c->gpu[0].uuid) >= rq->size;
  }
  if ((size_t)c->ngpus != rq->size) return false;
  for (int k = 0; k < c->ngpus; k++)
    if (count_on(rq->available, rq->n_available, c->gpu[k].uuid) == 0 &&
        count_on(rq->must, rq->n_must, c->gpu[k].uuid) == 0)
      return false;
  return true;
}

static bool contains(const char **ids, size_t n, const char *id) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(ids[i], id) == 0) return true;
  return false;
}

/* must_include first; then for count dialects one ID on each assigned GPU
 * the must list does not cover, for memory dialects IDs of the one GPU. */
static size_t answer(const struct vg_steer_request *rq, const struct vg_assign_ctr *c,
                     const char **out) {
  size_t n = 0;
  for (size_t i = 0; i < rq->n_must && n < rq->size; i++) out[n++] = rq->must[i];
  for (int k = 0; k < c->ngpus && n < rq->size; k++) {
    if (!rq->one_gpu && count_on(out, n, c->gpu[k].uuid) > 0) continue;
    for (size_t i = 0; i < rq->n_available && n < rq->size; i++) {
      const char *id = rq->available[i];
      if (!vg_device_id_on(id, c->gpu[k].uuid) || contains(out, n, id)) continue;
      out[n++] = id;
      if (!rq->one_gpu) break;
    }
  }
  return n;
}

/* ---- choosing the container under admission ---- */

struct candidate {
  int rank;          /* 0: its pod is listed by the kubelet (admitting); 1: not yet */
  const char *stamp; /* creationTimestamp (RFC 3339 sorts as text) */
  const char *ns, *pod;
  int ctr; /* position in the assignment: the kubelet goes in spec order */
  struct vg_assign_ctr gpus;
};

static bool better(const struct candidate *a, const struct candidate *b) {
  if (a->rank != b->rank) return a->rank < b->rank;
  int c = strcmp(a->stamp, b->stamp);
  if (c != 0) return c < 0;
  if ((c = strcmp(a->ns, b->ns)) != 0) return c < 0;
  if ((c = strcmp(a->pod, b->pod)) != 0) return c < 0;
  return a->ctr < b->ctr;
}

static bool same_gpus(const struct vg_assign_ctr *a, const struct vg_assign_ctr *b) {
  if (a->ngpus != b->ngpus) return false;
  for (int k = 0; k < a->ngpus; k++) {
    bool found = false;
    for (int j = 0; j < b->ngpus && !found; j++)
      found = strcmp(a->gpu[k].uuid, b->gpu[j].uuid) == 0;
    if (!found) return false;
  }
  return true;
}

static void note_malformed(struct vg_steer *s, const char *ns, const char *pod, const char *why) {
  char key[600];
  snprintf(key, sizeof(key), "%s/%s", ns, pod);
  pthread_mutex_lock(&s->lock);
  s->stats.malformed++;
  bool first = vg_once_first(&s->logged, key);
  pthread_mutex_unlock(&s->lock);
  if (first)
    vg_info("steer: pod %s: %s; its GPUs cannot be steered (the binder refuses it)", key, why);
}

struct candidates {
  struct candidate *v;
  size_t n, cap;
  size_t no_room; /* waiting containers whose GPUs lack free IDs */
};

/* Adds every assigned container of one pod that could be the one under
 * admission for the request. */
static void consider_pod(struct vg_steer *s, json_object *pod, const struct vg_node_view *view,
                         const struct vg_steer_request *rq, struct candidates *cs) {
  const char *ns = vg_json_str_at(pod, "metadata", "namespace");
  const char *name = vg_json_str_at(pod, "metadata", "name");
  if (vg_pod_finished(pod)) return;
  struct vg_assignment a;
  struct vg_err err = {""};
  int has = vg_assign_from_pod(pod, &a, &err);
  if (has < 0) note_malformed(s, ns, name, err.msg);
  if (has <= 0) return;
  for (int i = 0; i < a.nctrs; i++) {
    const struct vg_assign_ctr *c = &a.ctr[i];
    if (strcmp(c->resource, rq->resource) != 0) continue;
    bool listed, holds;
    vg_node_view_held(view, ns, name, c->name, rq->resource, &listed, &holds);
    if (holds) continue;
    if (!feasible(rq, c)) {
      cs->no_room++;
      continue;
    }
    if (cs->n == cs->cap) {
      size_t cap = cs->cap ? cs->cap * 2 : 16;
      struct candidate *v = realloc(cs->v, cap * sizeof(*v));
      if (v == NULL) break;
      cs->v = v, cs->cap = cap;
    }
    cs->v[cs->n++] = (struct candidate){
        listed ? 0 : 1, vg_json_str_at(pod, "metadata", "creationTimestamp"), ns, name, i, *c};
  }
  vg_assign_free(&a);
}

/* The best candidate; *ambiguous when another of the same rank wants other GPUs. */
static const struct candidate *pick(const struct candidates *cs, bool *ambiguous) {
  const struct candidate *best = NULL;
  for (size_t i = 0; i < cs->n; i++)
    if (best == NULL || better(&cs->v[i], best)) best = &cs->v[i];
  *ambiguous = false;
  for (size_t i = 0; best != NULL && i < cs->n; i++)
    if (cs->v[i].rank == best->rank && !same_gpus(&cs->v[i].gpus, &best->gpus)) *ambiguous = true;
  return best;
}

static void count(struct vg_steer *s, uint64_t *field) {
  pthread_mutex_lock(&s->lock);
  (*field)++;
  pthread_mutex_unlock(&s->lock);
}

size_t vg_steer_prefer(struct vg_steer *s, const struct vg_steer_request *rq, const char **out) {
  count(s, &s->stats.calls);
  if (rq->size == 0) return 0;
  struct vg_node_view view;
  if (vg_node_view_fetch(&s->src, &view, STEER_LIST_TIMEOUT_MS) != 0) {
    count(s, &s->stats.errors);
    return 0;
  }
  struct candidates cs = {NULL, 0, 0, 0};
  for (size_t i = 0; i < vg_node_view_npods(&view); i++)
    consider_pod(s, vg_node_view_pod(&view, i), &view, rq, &cs);
  bool ambiguous;
  const struct candidate *best = pick(&cs, &ambiguous);
  size_t got = best != NULL ? answer(rq, &best->gpus, out) : 0;
  if (got == rq->size && s->debug)
    vg_info("steer: %s for %s/%s container %s%s", rq->resource, best->ns, best->pod,
            best->gpus.name, ambiguous ? " (ambiguous: oldest pod first)" : "");
  pthread_mutex_lock(&s->lock);
  if (best == NULL && cs.no_room == 0)
    s->stats.unassigned++;
  else if (got != rq->size)
    s->stats.no_room++;
  else
    s->stats.steered++, s->stats.decisive += best->rank == 0 && !ambiguous;
  pthread_mutex_unlock(&s->lock);
  free(cs.v);
  vg_node_view_free(&view);
  return got == rq->size ? got : 0;
}

size_t vg_steer_prefer_fn(void *steer, const struct vg_steer_request *rq, const char **out) {
  return vg_steer_prefer(steer, rq, out);
}

struct vg_steer *vg_steer_new(struct vg_k8s_client *k8s, const char *node,
                              const char *podresources_socket, bool debug, struct vg_err *err) {
  struct vg_steer *s = calloc(1, sizeof(*s));
  if (s == NULL) {
    vg_err_set(err, "steer: out of memory");
    return NULL;
  }
  if (vg_node_source_init(&s->src, k8s, node, podresources_socket, "steer",
                          "the plugin's own preference applies meanwhile", err) != 0) {
    free(s);
    return NULL;
  }
  s->debug = debug;
  pthread_mutex_init(&s->lock, NULL);
  return s;
}

void vg_steer_get_stats(struct vg_steer *s, struct vg_steer_stats *st) {
  pthread_mutex_lock(&s->lock);
  *st = s->stats;
  pthread_mutex_unlock(&s->lock);
}

void vg_steer_free(struct vg_steer *s) {
  if (s == NULL) return;
  vg_once_free(&s->logged);
  vg_node_source_destroy(&s->src);
  pthread_mutex_destroy(&s->lock);
  free(s);
}
