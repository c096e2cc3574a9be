/*
 * extender.c -- the extender verbs: filter and prioritize evaluate every
 * candidate node (request from extender_request.c, node view from
 * extender_view.c, fit from extender_fit.c) and prioritize scores the nodes
 * that fit with the placement core's policy (--policy, or the pod's
 * vgpu.io/node-scheduler-policy); bind re-checks the fit under the node's
 * lock on fresh state and posts the Binding carrying the assignment. The
 * split into files is described in extender_int.h. See docs/scheduler.md.
 *
 * Status codes follow what kube-scheduler does with them: it drops the body
 * of any answer but 200 and tells the user only "code 400". So a pod we
 * refuse -- it asks for something no node can give, or no node fits it now --
 * is a 200 whose failed nodes carry the reason, which reaches the pod's
 * events; a bind that fails is a 200 with ExtenderBindingResult.Error. Only
 * a body that is not the verb's arguments at all (not JSON, no Pod) is a
 * 4xx, and that is kube-scheduler's bug or ours, not the user's.
 */
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "extender_int.h"
#include "json_get.h"
#include "log.h"

/* {"Error": msg}, msg through ext_out_reason like every text we send; NULL
 * when out of memory. */
static char *json_error(const char *msg) {
  struct ext_out o = {0};
  ext_out_lit(&o, "{\"Error\":");
  ext_out_reason(&o, msg);
  ext_out_lit(&o, "}");
  return ext_out_take(&o);
}

/* An ExtenderFilterResult failing the whole request with msg (its Error):
 * kube-scheduler fails the scheduling cycle and shows msg in the pod's
 * events. NULL when out of memory. */
static char *filter_error(const char *msg) {
  struct ext_out o = {0};
  ext_out_lit(&o,
              "{\"Nodes\":null,\"NodeNames\":null,\"FailedNodes\":{},"
              "\"FailedAndUnresolvableNodes\":{},\"Error\":");
  ext_out_reason(&o, msg);
  ext_out_lit(&o, "}");
  return ext_out_take(&o);
}

/* The text written into o, or an error (status 500) when memory ran out. */
static char *answer(struct ext_out *o, int *status) {
  char *text = ext_out_take(o);
  if (text) return text;
  *status = 500;
  return json_error("out of memory writing the answer");
}

/* The known fields of o into vals, matched case-insensitively as Go's
 * encoding/json does (the last of two spellings wins, as there). Unknown
 * fields are skipped, as Go's decoder skips them: a kube-scheduler release
 * that adds a field to ExtenderArgs must not fail every GPU pod. Known
 * fields are still checked by their readers, so a malformed one gets its
 * clear 400. */
static int read_fields(json_object *o, const char *const *known, json_object **vals, char *why,
                       size_t len) {
  if (!o || !json_object_is_type(o, json_type_object)) {
    snprintf(why, len, "request body is not a JSON object");
    return -1;
  }
  json_object_object_foreach(o, key, val) {
    for (int k = 0; known[k]; k++)
      if (strcasecmp(key, known[k]) == 0) {
        vals[k] = val;
        break;
      }
  }
  return 0;
}

/* ---- verbs ---- */

struct candidates {
  int n;
  char **names;
  json_object **objs; /* per name, the Node from Nodes.items, or NULL */
  bool cache_capable;
};

static int parse_args(json_object *root, json_object **pod, struct candidates *cs, char *why,
                      size_t len) {
  static const char *const keys[] = {"Pod", "Nodes", "NodeNames", NULL};
  json_object *vals[3] = {NULL, NULL, NULL};
  memset(cs, 0, sizeof(*cs));
  if (read_fields(root, keys, vals, why, len) != 0) return -1;
  *pod = vals[0];
  if (!*pod || !json_object_is_type(*pod, json_type_object)) {
    snprintf(why, len, "Pod is missing or not an object");
    return -1;
  }
  json_object *nodes = vals[1], *names = vals[2];
  if (names && json_object_is_type(names, json_type_array)) {
    cs->cache_capable = true;
    cs->n = (int)json_object_array_length(names);
    cs->names = calloc((size_t)cs->n + 1, sizeof(char *));
    cs->objs = calloc((size_t)cs->n + 1, sizeof(json_object *));
    for (int i = 0; i < cs->n; i++) {
      json_object *s = json_object_array_get_idx(names, (size_t)i);
      if (!json_object_is_type(s, json_type_string)) {
        snprintf(why, len, "NodeNames[%d] is not a string", i);
        return -1;
      }
      cs->names[i] = (char *)json_object_get_string(s);
    }
    return 0;
  }
  if (names && !json_object_is_type(names, json_type_null)) {
    snprintf(why, len, "NodeNames is not an array");
    return -1;
  }
  json_object *items = ext_get(nodes, "items");
  if (!nodes || json_object_is_type(nodes, json_type_null)) {
    snprintf(why, len, "neither NodeNames nor Nodes is set");
    return -1;
  }
  if (!items || !json_object_is_type(items, json_type_array)) {
    snprintf(why, len, "Nodes.items is missing or not an array");
    return -1;
  }
  cs->n = (int)json_object_array_length(items);
  cs->names = calloc((size_t)cs->n + 1, sizeof(char *));
  cs->objs = calloc((size_t)cs->n + 1, sizeof(json_object *));
  for (int i = 0; i < cs->n; i++) {
    json_object *o = json_object_array_get_idx(items, (size_t)i);
    const char *name = ext_get_str(ext_get(o, "metadata"), "name");
    if (!name) {
      snprintf(why, len, "Nodes.items[%d] has no metadata.name", i);
      return -1;
    }
    cs->names[i] = (char *)name;
    cs->objs[i] = o;
  }
  return 0;
}

static void free_candidates(struct candidates *cs) {
  free(cs->names);
  free(cs->objs);
}

/* Filter and prioritize share this: which candidates fit and, for
 * prioritize, each fitting node and the pod in the placement core's terms. */
struct evaluated {
  bool *fits;
  char (*why)[512];     /* room for the longest misfit (a CCE slot cap names a UUID too) */
  enum ext_reason *cls; /* filter: each misfit's class */
  struct vg_node *core; /* prioritize only */
  struct vg_pod *pod;   /* prioritize only */
  /* Prioritize: per candidate, the nvidia.com/gpu a foreign GPU node has
   * left once the pod is there (extender_foreign.c); -1: a vgpu node. */
  int64_t *foreign_left;
  /* The pod's request itself is refused (a quantity that is not a whole
   * number, two dialects, ...): no node was looked at, every one fails with
   * this reason, and no node ever could take the pod. */
  bool refused;
  char refusal[512];
  /* Per candidate, its name's first position: a name given twice is looked
   * at once and answered the same each time (kube-scheduler never sends
   * one twice; a client that does must not make us read it twice). */
  int *first;
  /* The pod in core form on the first usable view (filter: what the
   * learned workload counts; its GPU share depends on the GPU's memory). */
  struct vg_pod seen;
  bool have_seen;
  char uid[EXT_POD_KEY_MAX]; /* metadata.uid, else "namespace/name" */
};

struct eval_one {
  const struct pod_req *req;
  bool *fits;
  enum ext_reason *cls; /* a misfit's class */
  char *why;
  size_t len;
  struct vg_node *core; /* NULL: filter */
  struct vg_pod *pod;
  int64_t *foreign_left; /* prioritize only */
  struct evaluated *ev;
};

static void eval_view(void *ctx, const struct node_view *v) {
  struct eval_one *o = ctx;
  ext_picks picks;
  *o->cls = ext_pod_misfit(o->req, v, picks, o->why, o->len);
  *o->fits = *o->cls == EXT_R_NONE;
  if (v->foreign && o->req->n > 0) { /* not the core's to score; not a GPU shape to learn */
    int64_t left = v->gpu_alloc - v->gpu_req - ext_foreign_ask(o->req);
    if (o->foreign_left) *o->foreign_left = left > 0 ? left : 0; /* < 0: it does not fit */
    return;
  }
  if (*o->fits && o->core) ext_to_core(v, o->req, o->core, o->pod);
  if (!o->ev->have_seen) {
    struct vg_node unused;
    ext_to_core(v, o->req, &unused, &o->ev->seen);
    o->ev->have_seen = true;
  }
}

/* A node without a usable GPU view, for a pod that asks for no GPU: a node
 * without GPUs to the core (its CPU and memory unknown: unlimited). */
static void gpu_less_core(const struct pod_req *r, struct vg_node *n, struct vg_pod *p) {
  memset(n, 0, sizeof(*n));
  memset(p, 0, sizeof(*p));
  n->cpu_cap = n->cpu_free = n->mem_cap = n->mem_free = EXT_UNREPORTED;
  n->model = -1;
  p->cpu = r->cpu;
  p->mem = r->mem;
}

/* Fills ev->first and, when views are to be read (look) and at least
 * EXT_BATCH_MIN distinct names miss the cache, lists the cluster into batch
 * (else it stays empty: each miss is read on its own). 0, or -1 with why. */
static int first_names(struct vg_ext *x, const struct candidates *cs, struct evaluated *ev,
                       bool look, struct ext_batch *batch, char *why, size_t len) {
  struct ext_index ix;
  ev->first = malloc(((size_t)cs->n + 1) * sizeof(int));
  if (!ev->first || ext_index_init(&ix, (size_t)cs->n) != 0) {
    snprintf(why, len, "out of memory");
    return -1;
  }
  int misses = 0;
  pthread_mutex_lock(&x->lock);
  if (ext_synced_store(x) != NULL) look = false; /* misses come from the store: no list */
  pthread_mutex_unlock(&x->lock);
  for (int i = 0; i < cs->n; i++) {
    ev->first[i] = ext_index_put(&ix, cs->names[i], i);
    if (look && ev->first[i] == i && misses < EXT_BATCH_MIN &&
        !ext_view_cached(x, cs->names[i], cs->objs[i]))
      misses++;
  }
  ext_index_free(&ix);
  struct vg_err err = {{0}};
  if (misses >= EXT_BATCH_MIN && ext_batch_fetch(x, cs->cache_capable, batch, &err) != 0)
    vg_warn("listing the cluster for %d candidates failed, reading them one by one: %s", cs->n,
            err.msg);
  return 0;
}

/* The request body as a JSON object, or NULL with why; *nul: it is JSON
 * but a string holds a NUL (json_get.h) -- maybe a user's pod annotation,
 * so filter and bind say so where the pod's events show it. */
static json_object *parse_body(const char *body, size_t blen, bool *nul, char *why, size_t len) {
  enum vg_json_bad bad;
  json_object *root = vg_json_parse_object(body, blen, "request body", &bad, why, len);
  *nul = !root && bad == VG_JSON_NUL;
  return root;
}

static int evaluate(struct vg_ext *x, const char *body, size_t blen, bool score, json_object **root,
                    struct pod_req *req, struct candidates *cs, struct evaluated *ev, bool *nul,
                    char *why, size_t len) {
  json_object *pod = NULL;
  memset(ev, 0, sizeof(*ev));
  memset(cs, 0, sizeof(*cs));
  if (!(*root = parse_body(body, blen, nul, why, len))) return -1;
  if (parse_args(*root, &pod, cs, why, len) != 0) return -1;
  size_t n = (size_t)cs->n + 1;
  ev->fits = calloc(n, sizeof(bool));
  ev->why = malloc(n * sizeof(*ev->why)); /* each set before it is read */
  ev->cls = calloc(n, sizeof(*ev->cls));
  if (score) {
    ev->core = malloc(n * sizeof(*ev->core));
    ev->pod = malloc(n * sizeof(*ev->pod));
    ev->foreign_left = malloc(n * sizeof(*ev->foreign_left));
  }
  if (!ev->fits || !ev->why || !ev->cls ||
      (score && (!ev->core || !ev->pod || !ev->foreign_left))) {
    snprintf(why, len, "out of memory");
    return -1;
  }
  ev->refused = ext_parse_pod(pod, req, ev->refusal, sizeof(ev->refusal)) != 0;
  const char *uid = ext_get_str(ext_get(pod, "metadata"), "uid");
  if (uid)
    snprintf(ev->uid, sizeof(ev->uid), "%s", uid);
  else if (!ext_pod_key(pod, ev->uid, sizeof(ev->uid)))
    ev->uid[0] = '\0';
  struct ext_batch batch = {0};
  if (first_names(x, cs, ev, !ev->refused && req->n > 0, &batch, why, len) != 0) return -1;
  for (int i = 0; !ev->refused && i < cs->n; i++) {
    ev->why[i][0] = '\0';
    if (score) ev->foreign_left[i] = -1;
    if (ev->first[i] != i) {
      int f = ev->first[i];
      ev->fits[i] = ev->fits[f];
      ev->cls[i] = ev->cls[f];
      memcpy(ev->why[i], ev->why[f], sizeof(ev->why[i]));
      if (score)
        ev->core[i] = ev->core[f], ev->pod[i] = ev->pod[f],
        ev->foreign_left[i] = ev->foreign_left[f];
      continue;
    }
    if (req->n == 0 && !score) {
      ev->fits[i] = true; /* no GPU asked: nothing for us to check */
      continue;
    }
    struct eval_one o = {req,
                         &ev->fits[i],
                         &ev->cls[i],
                         ev->why[i],
                         sizeof(ev->why[i]),
                         score ? &ev->core[i] : NULL,
                         score ? &ev->pod[i] : NULL,
                         score ? &ev->foreign_left[i] : NULL,
                         ev};
    enum ext_reason rc = ext_with_view(x, cs->names[i], cs->objs[i], &batch, EXT_CACHED, eval_view,
                                       &o, ev->why[i], sizeof(ev->why[i]));
    if (rc != EXT_R_NONE) ev->cls[i] = rc; /* no view: the view's reason */
    if (rc != EXT_R_NONE && req->n == 0) { /* prioritize scores where a GPU-less pod goes */
      ev->fits[i] = true;
      gpu_less_core(req, &ev->core[i], &ev->pod[i]);
    }
  }
  if (!ev->have_seen && !ev->refused && req->n == 0) {
    struct vg_node unused;
    gpu_less_core(req, &unused, &ev->seen);
    ev->have_seen = true;
  }
  ext_batch_free(&batch);
  return 0;
}

static void free_evaluated(struct evaluated *ev) {
  free(ev->fits);
  free(ev->why);
  free(ev->cls);
  free(ev->core);
  free(ev->pod);
  free(ev->foreign_left);
  free(ev->first);
}

/* Preemption cannot make these fit: the node has no GPUs of ours, too few,
 * or too small ones. kube-scheduler then does not try to evict pods there. */
static bool unresolvable(enum ext_reason r) {
  return r == EXT_R_NO_INVENTORY || r == EXT_R_BAD_INVENTORY || r == EXT_R_NODE_GONE ||
         r == EXT_R_NOT_ADVERTISED || r == EXT_R_TOO_FEW_GPUS || r == EXT_R_TOO_LARGE ||
         r == EXT_R_FOREIGN_ASK;
}

/* The failed candidates as a FailedNodesMap; with only_unresolvable, those
 * that no preemption could help. kube-scheduler 1.20 knows FailedNodes only
 * (FailedAndUnresolvableNodes came in 1.21; 1.20's decoder skips it), so
 * every failed node is written there; from 1.21 a node in both maps counts
 * as unresolvable. */
static void failed_nodes(struct ext_out *o, const struct candidates *cs, const struct evaluated *ev,
                         bool only_unresolvable) {
  for (int i = 0, k = 0; i < cs->n; i++) {
    if (ev->fits[i] || ev->first[i] != i) continue; /* a map: each name once */
    if (only_unresolvable && !ev->refused && !unresolvable(ev->cls[i])) continue;
    if (k++) ext_out_lit(o, ",");
    ext_out_str(o, cs->names[i]);
    ext_out_lit(o, ":");
    ext_out_reason(o, ev->refused ? ev->refusal : ev->why[i]);
  }
}

/* Counts the filtered pod in the learned workload (once per pod). */
static void observe(struct vg_ext *x, const struct pod_req *req, struct evaluated *ev) {
  if (ev->refused || !ev->have_seen || !ev->uid[0]) return;
  pthread_mutex_lock(&x->lock);
  ev->seen.models =
      ext_models_mask(req, (const char(*)[VG_SCHED_NAME_MAX])x->models.models, x->models.nmodels);
  pthread_mutex_unlock(&x->lock);
  ext_learner_observe(x->learner, ev->uid, &ev->seen);
}

static void reserve_top(struct vg_ext *x, json_object *pod, const struct pod_req *req,
                        const struct candidates *cs, const long long *ranked);

/* kube-scheduler skips prioritize when one node fits (1.20's
 * generic_scheduler): then filter's one node is where the pod goes, and
 * what it will hold is reserved there (extender_reserve.c). Only when
 * filter narrowed several candidates to one: a request naming one node is
 * a probe as often as kube-scheduler's (kubectl vgpu, tests, other
 * clients), and a reservation for a pod never bound holds its GPUs for
 * EXT_RESERVE_MS. */
static void reserve_sole_fit(struct vg_ext *x, json_object *root, const struct pod_req *req,
                             const struct candidates *cs, const struct evaluated *ev) {
  int sole = -1, fitting = 0, distinct = 0;
  for (int i = 0; !ev->refused && i < cs->n; i++) {
    distinct += ev->first[i] == i;
    if (ev->fits[i] && ev->first[i] == i) sole = i, fitting++;
  }
  if (fitting != 1 || distinct < 2) return;
  long long *ranked = calloc((size_t)cs->n + 1, sizeof(*ranked));
  if (!ranked) return;
  ranked[sole] = 1;
  reserve_top(x, ext_get(root, "Pod"), req, cs, ranked);
  free(ranked);
}

static int do_filter(struct vg_ext *x, const char *body, size_t len, char **out) {
  json_object *root = NULL;
  struct pod_req req;
  struct candidates cs;
  struct evaluated ev;
  char why[512];
  int status = 200;
  bool nul = false;
  if (evaluate(x, body, len, false, &root, &req, &cs, &ev, &nul, why, sizeof(why)) != 0) {
    /* A NUL in a string is answered in ExtenderFilterResult.Error, which
     * kube-scheduler puts in the pod's events (a 400 shows only its code). */
    *out = nul ? filter_error(why) : json_error(why);
    status = nul ? 200 : 400;
    goto done;
  }
  observe(x, &req, &ev);
  reserve_sole_fit(x, root, &req, &cs, &ev);
  pthread_mutex_lock(&x->lock);
  if (ev.refused) x->m.refused_pods++;
  for (int i = 0; !ev.refused && i < cs.n; i++)
    if (!ev.fits[i] && ev.first[i] == i) x->m.node_failures[ev.cls[i]]++;
  pthread_mutex_unlock(&x->lock);
  struct ext_out o = {0};
  ext_out_lit(&o, cs.cache_capable ? "{\"Nodes\":null,\"NodeNames\":["
                                   : "{\"Nodes\":{\"metadata\":{},\"items\":[");
  for (int i = 0, k = 0; i < cs.n; i++) {
    if (!ev.fits[i]) continue;
    if (k++) ext_out_lit(&o, ",");
    if (cs.cache_capable)
      ext_out_str(&o, cs.names[i]);
    else
      ext_out_lit(&o, json_object_to_json_string_ext(cs.objs[i], JSON_C_TO_STRING_PLAIN));
  }
  ext_out_lit(&o,
              cs.cache_capable ? "],\"FailedNodes\":{" : "]},\"NodeNames\":null,\"FailedNodes\":{");
  failed_nodes(&o, &cs, &ev, false);
  ext_out_lit(&o, "},\"FailedAndUnresolvableNodes\":{");
  failed_nodes(&o, &cs, &ev, true);
  ext_out_lit(&o, "},\"Error\":\"\"}");
  *out = answer(&o, &status);
done:
  free_evaluated(&ev);
  free_candidates(&cs);
  json_object_put(root);
  return status;
}

struct ranked {
  bool vgpu; /* a vgpu node: every one ranks above every foreign GPU node */
  double score;
  uint32_t tie; /* the node name's hash: equal scores in a fixed, arbitrary order */
  int i;
};

static int by_score(const void *pa, const void *pb) {
  const struct ranked *a = pa, *b = pb;
  if (a->vgpu != b->vgpu) return a->vgpu ? 1 : -1;
  if (a->score != b->score) return a->score < b->score ? -1 : 1;
  if (a->tie != b->tie) return a->tie < b->tie ? -1 : 1;
  return a->i - b->i;
}

/* The answer's scores: each scored node's rank by the policy's score, lowest
 * 1, times EXT_RANK_STEP; a node that fits but was not scored, 0. Equal
 * scores are ordered by a hash of the node's name, as vgpu-replay orders
 * them by seeded node ranks: no two nodes tie, so kube-scheduler neither
 * picks among them at random nor lets its own plugins choose (0..10, as
 * before, made near scores tie). The step makes one rank outweigh what
 * kube-scheduler's default score plugins can add (docs/scheduler.md).
 * Foreign GPU nodes (foreign[i] >= 0) rank below every vgpu node: a plain
 * GPU pod goes to another plugin's node only when vgpu's cannot take it. */
static void rank_scores(const double *score, const int64_t *foreign, char **names, const int *first,
                        int n, long long *out) {
  struct ranked *r = malloc(((size_t)n + 1) * sizeof(*r));
  int k = 0;
  for (int i = 0; i < n; i++) {
    out[i] = 0;
    if (r && !isnan(score[i]) && first[i] == i)
      r[k++] = (struct ranked){foreign[i] < 0, score[i], ext_hash(names[i]), i};
  }
  if (r) qsort(r, (size_t)k, sizeof(*r), by_score);
  for (int j = 0; j < k; j++) out[r[j].i] = (long long)(j + 1) * EXT_RANK_STEP;
  for (int i = 0; i < n; i++) out[i] = out[first[i]]; /* a name given twice: its first answer */
  free(r);
}

/* The policy's score of every fitting candidate (NAN: not scored). */
static void score_candidates(struct vg_ext *x, const struct pod_req *req,
                             const struct candidates *cs, const struct evaluated *ev,
                             double *score) {
  for (int i = 0; i < cs->n; i++) score[i] = NAN;
  if (ev->refused) return; /* filter failed every node and said why */
  struct ext_model m;
  struct vg_err err = {{0}};
  if (ext_model_begin(x, req, &m, &err) != 0) {
    vg_warn("prioritize: %s; every node scores 0", err.msg);
    ext_model_end(&m);
    return;
  }
  const struct vg_policy *pol = req->node_policy ? req->node_policy : x->policy;
  int *idx = malloc(((size_t)cs->n + 1) * sizeof(int));
  for (int i = 0; idx && i < cs->n; i++) /* every node first: then one vg_sched for all */
    idx[i] = ev->fits[i] && ev->first[i] == i && ev->foreign_left[i] < 0
                 ? ext_model_add(x, &m, cs->names[i], &ev->core[i], &err)
                 : -1;
  for (int i = 0; idx && i < cs->n; i++) {
    struct vg_pick pick;
    struct vg_pod p = ev->pod[i];
    if (idx[i] >= 0) score[i] = ext_model_score(&m, pol, idx[i], &p, &pick, &err);
    /* A foreign GPU node: the fewer GPUs it has left after the pod, the
     * higher (whole nodes stay whole for pods asking many GPUs). */
    if (ev->fits[i] && ev->foreign_left[i] >= 0) score[i] = -(double)ev->foreign_left[i];
    if (ev->first[i] != i) score[i] = score[ev->first[i]]; /* each node once in the model */
  }
  free(idx);
  ext_model_end(&m);
}

static int do_prioritize(struct vg_ext *x, const char *body, size_t len, char **out) {
  json_object *root = NULL;
  struct pod_req req;
  struct candidates cs;
  struct evaluated ev;
  char why[512];
  int status = 200;
  double *score = NULL;
  long long *ranked = NULL;
  bool nul = false; /* kube-scheduler ignores a prioritize error: a 400 as for the rest */
  if (evaluate(x, body, len, true, &root, &req, &cs, &ev, &nul, why, sizeof(why)) != 0) {
    *out = json_error(why);
    status = 400;
    goto done;
  }
  score = malloc(((size_t)cs.n + 1) * sizeof(double));
  ranked = malloc(((size_t)cs.n + 1) * sizeof(long long));
  if (!score || !ranked) {
    *out = json_error("out of memory");
    status = 500;
    goto done;
  }
  score_candidates(x, &req, &cs, &ev, score);
  rank_scores(score, ev.foreign_left, cs.names, ev.first, cs.n, ranked);
  if (!ev.refused) reserve_top(x, ext_get(root, "Pod"), &req, &cs, ranked);
  struct ext_out o = {0};
  ext_out_lit(&o, "[");
  for (int i = 0; i < cs.n; i++) {
    ext_out_lit(&o, i ? ",{\"Host\":" : "{\"Host\":");
    ext_out_str(&o, cs.names[i]);
    ext_out_lit(&o, ",\"Score\":");
    ext_out_int(&o, ranked[i]);
    ext_out_lit(&o, "}");
  }
  ext_out_lit(&o, "]");
  *out = answer(&o, &status);
done:
  free(score);
  free(ranked);
  free_evaluated(&ev);
  free_candidates(&cs);
  json_object_put(root);
  return status;
}

/* The GPUs the node policy picks for req on the node's fresh view v, as
 * prioritize scored it, into picks (when req leaves the choice to it). */
static void policy_pick(struct vg_ext *x, const char *node, const struct pod_req *req,
                        const struct node_view *v, ext_picks picks) {
  if (req->n != 1 || req->gpu_policy != EXT_GPU_NODE_POLICY) return;
  struct ext_model m;
  struct vg_err err = {{0}};
  struct vg_node core;
  struct vg_pod p;
  struct vg_pick pick = {0};
  ext_to_core(v, req, &core, &p);
  const struct vg_policy *pol = req->node_policy ? req->node_policy : x->policy;
  if (ext_model_begin(x, req, &m, &err) == 0) {
    int idx = ext_model_add(x, &m, node, &core, &err);
    if (idx >= 0 && !isnan(ext_model_score(&m, pol, idx, &p, &pick, &err)))
      ext_adopt_pick(req, v, &pick, picks);
  }
  ext_model_end(&m);
}

/* Read-your-writes: until the watch delivers this bind, the store lacks it
 * and the next filter (or bind: they read the store too) would offer what
 * we just gave away. So the Pod as bound goes into the store now, still
 * under the node's bind lock; the watch event replaces it. Without a synced
 * store (or memory for the copy), the node is read from the API until the
 * event comes instead. */
static void note_bound(struct vg_ext *x, struct node_entry *e, const char *ns, const char *name,
                       json_object *pod, json_object *annotations) {
  char key[EXT_POD_KEY_MAX];
  snprintf(key, sizeof(key), "%s/%s", ns, name);
  struct ext_store *store = ext_current_store(x);
  json_object *bound = store ? ext_pod_as_bound(pod, e->name, annotations) : NULL;
  char changed[2][VG_SCHED_NAME_MAX * 2];
  if (bound) ext_store_apply(store, true, false, bound, changed);
  ext_pending_add(x, e, key, bound);
  json_object_put(bound);
}

/* The vgpu.io/assigned object for req on node's view v: the fit, then the
 * node policy's GPUs where the pod leaves the choice to it; NULL with why
 * and its class *cls. */
static json_object *assign_on(struct vg_ext *x, const char *node, const struct pod_req *req,
                              const struct node_view *v, enum ext_reason *cls, char *why,
                              size_t len) {
  ext_picks picks;
  if ((*cls = ext_pod_misfit(req, v, picks, why, len)) != EXT_R_NONE) return NULL;
  policy_pick(x, node, req, v, picks);
  struct vg_err err = {{0}};
  json_object *a = ext_assignment(node, req, v, picks, &err);
  if (!a) snprintf(why, len, "%s", err.msg), *cls = EXT_R_OTHER;
  return a;
}

/* Reserves for the pod on the node prioritize ranked first (the one
 * kube-scheduler will bind: extender_reserve.c) what bind would write. */
static void reserve_top(struct vg_ext *x, json_object *pod, const struct pod_req *req,
                        const struct candidates *cs, const long long *ranked) {
  int top = -1;
  for (int i = 0; i < cs->n; i++)
    if (ranked[i] > 0 && (top < 0 || ranked[i] > ranked[top])) top = i;
  if (top < 0 || req->n == 0) return;
  struct node_view v;
  char why[512];
  if (ext_node_view(x, cs->names[top], cs->objs[top], EXT_CACHED, &v, why, sizeof(why)) != 0)
    return;
  if (v.foreign) { /* its nvidia.com/gpu request is what the store counts there */
    if (ext_foreign_fits(req, &v, why, sizeof(why))) ext_reserve(x, pod, cs->names[top], NULL);
    return;
  }
  enum ext_reason cls;
  json_object *a = assign_on(x, cs->names[top], req, &v, &cls, why, sizeof(why));
  json_object *ann = a ? ext_assigned_annotations(a) : NULL;
  if (ann) ext_reserve(x, pod, cs->names[top], ann);
  json_object_put(ann);
  json_object_put(a);
}

/* The arguments of a bind (PodUID may be absent). */
struct bind_args {
  const char *name, *ns, *uid, *node;
};

/* Reads body into *root and a; 0, or the HTTP status with *out set (a NUL in
 * the body: a 200 with Error, as for any bind that fails, the pod's events). */
static int read_bind_args(const char *body, size_t len, json_object **root, struct bind_args *a,
                          char **out) {
  static const char *const keys[] = {"PodName", "PodNamespace", "PodUID", "Node", NULL};
  json_object *vals[4] = {NULL, NULL, NULL, NULL};
  const char *s[4];
  char why[512];
  bool nul = false;
  *root = parse_body(body, len, &nul, why, sizeof(why));
  if (!*root) {
    if (nul) vg_warn("bind: %s", why);
    *out = json_error(why);
    return nul ? 200 : 400;
  }
  int bad = read_fields(*root, keys, vals, why, sizeof(why));
  for (int i = 0; bad == 0 && i < 4; i++) {
    s[i] = vals[i] && json_object_is_type(vals[i], json_type_string)
               ? json_object_get_string(vals[i])
               : NULL;
    if (!s[i] && i != 2) {
      snprintf(why, sizeof(why), "%s is missing or not a string", keys[i]);
      bad = -1;
    }
  }
  if (bad != 0) {
    json_object_put(*root);
    *root = NULL;
    *out = json_error(why);
    return 400;
  }
  *a = (struct bind_args){s[0], s[1], s[2], s[3]};
  return 0;
}

/* The placement of an unbound GPU pod on a->node, under the node's bind lock:
 * *annotations to write with the Binding (NULL on a foreign node, whose own
 * plugin picks the devices). 0 when it may be bound, else -1 with why and
 * what the failure counts as in *failed. An already bound pod gets no
 * placement: the API server's 409 says so. Its own reservation must not count
 * against it; it stays in the store until the pod as bound replaces it, so
 * that no filter meanwhile sees the node without the pod (extender_reserve.c). */
static int place_for_bind(struct vg_ext *x, const struct bind_args *a, json_object *pod,
                          const struct pod_req *req, const char *key, json_object **annotations,
                          enum ext_bind_fail *failed, char *why, size_t len) {
  if (req->n == 0 || ext_get_str(ext_get(pod, "spec"), "nodeName")) return 0;
  struct node_view v;
  enum ext_reason cls = ext_bind_view(x, a->node, key, &v, why, len);
  if (cls == EXT_R_NONE && v.foreign) cls = ext_foreign_misfit(req, &v, why, len);
  json_object *assigned =
      cls == EXT_R_NONE && !v.foreign ? assign_on(x, a->node, req, &v, &cls, why, len) : NULL;
  *failed = ext_bind_fail_of(cls);
  if (cls != EXT_R_NONE || v.foreign) return cls != EXT_R_NONE ? -1 : 0;
  if (assigned == NULL) return -1;
  *annotations = ext_assigned_annotations(assigned);
  ext_aliyun_annotations(*annotations, req, &v, assigned);
  json_object_put(assigned);
  /* The pod's own UID, not the request's: the MAC must name the object the
   * agent will read (a differing PodUID fails the Binding anyway). */
  *failed = EXT_B_OTHER;
  return ext_sign_annotations(x, *annotations, ext_get_str(ext_get(pod, "metadata"), "uid"), a->ns,
                              a->name, a->node, why, len);
}

/* Counts a bind: a failure under its class (why set), else ok and its slices. */
static void count_bind(struct vg_ext *x, enum ext_bind_fail failed, const char *why,
                       const struct pod_req *req, bool assigned) {
  pthread_mutex_lock(&x->lock);
  if (why[0]) {
    x->m.bind_failures[failed]++;
  } else {
    x->m.binds_ok++;
    for (int i = 0; assigned && i < req->n; i++) x->m.assigned_gpus += req->c[i].count;
  }
  pthread_mutex_unlock(&x->lock);
}

static int do_bind(struct vg_ext *x, const char *body, size_t len, char **out) {
  json_object *root = NULL, *pod = NULL, *annotations = NULL;
  struct bind_args a;
  int status = read_bind_args(body, len, &root, &a, out);
  if (status != 0) return status;
  struct node_entry *e = ext_entry(x, a.node);
  if (!e) {
    json_object_put(root);
    *out = json_error("out of memory");
    return 500;
  }
  char key[EXT_POD_KEY_MAX], why[512] = "";
  snprintf(key, sizeof(key), "%s/%s", a.ns, a.name);
  struct vg_err err = {{0}};
  struct pod_req req = {0};
  enum ext_bind_fail failed = EXT_B_API; /* what a failure counts as: each step says */
  pthread_mutex_lock(&e->bind_lock);
  if (vg_k8s_get_pod(x->client, a.ns, a.name, &pod, &err) != 0) {
    snprintf(why, sizeof(why), "%s", err.msg);
  } else if (ext_parse_pod(pod, &req, why, sizeof(why)) != 0) {
    failed = EXT_B_OTHER;
  } else if (place_for_bind(x, &a, pod, &req, key, &annotations, &failed, why, sizeof(why)) == 0) {
    int rc = vg_k8s_bind_pod(x->client, a.ns, a.name, a.uid, a.node, annotations, &err);
    if (rc != 0)
      snprintf(why, sizeof(why), "%s%.480s", rc == VG_K8S_ECONFLICT ? "conflict: " : "", err.msg);
    failed = rc == VG_K8S_ECONFLICT ? EXT_B_CONFLICT : EXT_B_API;
    if (rc == 0) note_bound(x, e, a.ns, a.name, pod, annotations);
    ext_invalidate(x, a.node);
  }
  ext_unreserve(x, key); /* after note_bound replaced it: only a failed bind's leaves the store */
  pthread_mutex_unlock(&e->bind_lock);
  count_bind(x, failed, why, &req, annotations != NULL);
  if (why[0]) vg_warn("bind %s/%s to %s: %s", a.ns, a.name, a.node, why);
  json_object_put(annotations);
  json_object_put(pod);
  json_object_put(root);
  *out = json_error(why);
  return 200;
}

/* ---- entry points ---- */

void vg_ext_set_assignment_key(struct vg_ext *x, struct vg_assign_key *key) { x->akey = key; }

struct vg_ext *vg_ext_new(struct vg_k8s_client *client, const char *policy, long cache_ttl_ms,
                          struct vg_err *err) {
  const struct vg_policy *p = vg_policy_find(policy ? policy : "vgpu");
  if (!p) {
    char names[256] = "";
    for (const struct vg_policy *const *a = vg_policy_all(); *a; a++)
      snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s", names[0] ? ", " : "",
               (*a)->name);
    vg_err_set(err, "unknown policy '%s' (known: %s)", policy, names);
    return NULL;
  }
  struct vg_ext *x = calloc(1, sizeof(*x));
  if (!x) {
    vg_err_set(err, "out of memory");
    return NULL;
  }
  x->client = client;
  x->policy = p;
  x->ttl_ms = cache_ttl_ms;
  x->foreign_gpu_nodes = true; /* docs/scheduler.md, "Foreign GPU nodes": why allow */
  pthread_mutex_init(&x->lock, NULL);
  vg_cluster_init(&x->models);
  x->learner = ext_learner_new(VG_EXT_WORKLOAD_HALF_LIFE, VG_EXT_WORKLOAD_PRIOR);
  if (!x->learner) {
    vg_err_set(err, "out of memory");
    vg_ext_free(x);
    return NULL;
  }
  return x;
}

void vg_ext_set_foreign_gpu_nodes(struct vg_ext *x, bool allow) {
  x->foreign_gpu_nodes = allow;
  ext_invalidate_all(x); /* views built under the other rule */
}

int vg_ext_set_workload_window(struct vg_ext *x, double half_life_pods, double prior_pods,
                               struct vg_err *err) {
  if (!(half_life_pods >= 1 && half_life_pods <= 1e9) || !(prior_pods >= 0 && prior_pods <= 1e9))
    return vg_err_set(err, "workload window: half-life %g pods (1..1e9), prior %g pods (0..1e9)",
                      half_life_pods, prior_pods);
  struct ext_learner *l = ext_learner_new(half_life_pods, prior_pods);
  if (!l) return vg_err_set(err, "out of memory");
  ext_learner_free(x->learner); /* before serving: nothing else holds it */
  x->learner = l;
  return 0;
}

void vg_ext_free(struct vg_ext *x) {
  if (!x) return;
  vg_ext_watch_stop(x);
  vg_ext_resize_stop(x);
  for (struct node_entry *e = x->nodes, *next; e; e = next) {
    next = e->next;
    pthread_mutex_destroy(&e->bind_lock);
    free(e->inventory);
    free(e);
  }
  ext_forget_bad_pods(x);
  ext_pending_free(x);
  ext_reservations_free(x);
  ext_learner_free(x->learner);
  vg_cluster_free(&x->models);
  pthread_mutex_destroy(&x->lock);
  free(x);
}

static char *metrics_text(struct vg_ext *x) {
  pthread_mutex_lock(&x->lock);
  char *t = ext_metrics_render(&x->m, x->nodes);
  pthread_mutex_unlock(&x->lock);
  return t;
}

/* GET /workload: what the node policy optimises for now. */
static char *workload_text(struct vg_ext *x) {
  char models[VG_SCHED_MAX_MODELS][VG_SCHED_NAME_MAX];
  pthread_mutex_lock(&x->lock);
  int n = x->models.nmodels;
  memcpy(models, x->models.models, sizeof(models));
  pthread_mutex_unlock(&x->lock);
  return ext_learner_json(x->learner, (const char(*)[VG_SCHED_NAME_MAX])models, n);
}

int vg_ext_handle(struct vg_ext *x, const char *method, const char *path, const char *body,
                  size_t len, char **out, const char **content_type) {
  static const char *const verbs[] = {"/filter",  "/prioritize", "/bind",
                                      "/healthz", "/metrics",    "/workload"};
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  int v = 0;
  while (v < 6 && strcmp(path, verbs[v]) != 0) v++;
  *content_type = "application/json";
  int status;
  if (v == 6) {
    *out = json_error(
        "no such endpoint (POST /filter, /prioritize, /bind; GET /healthz, /metrics, /workload)");
    status = 404;
  } else if ((v < 3) != (strcmp(method, "POST") == 0)) {
    *out = json_error(v < 3 ? "use POST" : "use GET");
    status = 405;
  } else if (v < 3 && (memchr(body, 0, len) || len == 0)) {
    *out = json_error(len ? "request body contains a NUL byte" : "request body is empty");
    status = 400;
  } else if (v == 0) {
    status = do_filter(x, body, len, out);
  } else if (v == 1) {
    status = do_prioritize(x, body, len, out);
  } else if (v == 2) {
    status = do_bind(x, body, len, out);
  } else if (v == 3) {
    *content_type = "text/plain";
    *out = strdup("ok\n");
    status = 200;
  } else if (v == 4) {
    *content_type = "text/plain; version=0.0.4";
    *out = metrics_text(x);
    status = 200;
  } else {
    *out = workload_text(x);
    status = *out ? 200 : 500;
    if (!*out) *out = json_error("out of memory");
  }
  struct timespec t1;
  clock_gettime(CLOCK_MONOTONIC, &t1);
  pthread_mutex_lock(&x->lock);
  if (v < 5) x->m.requests[v]++;
  if (v < 3)
    ext_metrics_observe(&x->m, v,
                        (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
  if (status >= 400 && status < 500) x->m.bad_requests++;
  pthread_mutex_unlock(&x->lock);
  return status;
}
