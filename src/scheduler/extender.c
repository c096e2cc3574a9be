/*
 * extender.c -- the extender verbs: request parsing (vgpu dialect), each
 * node's GPU view (inventory annotation minus the assignments of the pods
 * already on it), GPU-level fit, scoring through the placement core's policy
 * and binding with the assignment annotation. See docs/scheduler.md.
 */
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "assignment.h"
#include "extender.h"
#include "log.h"
#include "vg_sched.h"

#define RES_VGPU "nvidia.com/vgpu"
#define RES_MEM "nvidia.com/gpumem"
#define RES_CORES "nvidia.com/gpucores"
#define MAX_CTRS 16
#define MIB (1024LL * 1024LL)

/* ---- requests ---- */

struct ctr_req {
  char name[64];
  int count;   /* GPUs */
  int64_t mem; /* bytes per GPU; 0 = the whole GPU's memory */
  int cores;   /* percent per GPU; 0 = no compute share */
};

struct pod_req {
  int n; /* containers asking for GPUs */
  struct ctr_req c[MAX_CTRS];
};

/* ---- a node's GPUs as the scheduler sees them ---- */

struct gpu_view {
  char uuid[96];
  int index;
  bool usable; /* Healthy and advertises nvidia.com/vgpu */
  int slots, slots_used;
  int64_t mem, mem_used; /* bytes */
  int cores, cores_used; /* percent */
  bool exclusive;        /* holds a 100 % cores slice */
};

struct node_view {
  int n;
  struct gpu_view g[VG_SCHED_MAX_GPUS];
};

struct node_entry {
  char name[VG_SCHED_NAME_MAX * 2];
  pthread_mutex_t bind_lock; /* one bind at a time per node */
  struct timespec at;        /* when view was read; 0 = never/stale */
  int rc;                    /* 0, or why the view is unusable (why) */
  char why[256];
  struct node_view view;
  struct node_entry *next;
};

struct vg_ext {
  struct vg_k8s_client *client;
  const struct vg_policy *policy;
  struct vg_workload workload;
  long ttl_ms;
  pthread_mutex_t lock; /* nodes list and cached views */
  struct node_entry *nodes;
  unsigned long requests[5], errors; /* filter prioritize bind healthz metrics */
  unsigned long binds_ok, binds_failed;
};

static char *dupf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *dupf(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *s = NULL;
  if (vasprintf(&s, fmt, ap) < 0) s = NULL;
  va_end(ap);
  return s;
}

static char *json_error(const char *msg) {
  json_object *o = json_object_new_object();
  json_object_object_add(o, "Error", json_object_new_string(msg));
  char *s = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
  json_object_put(o);
  return s;
}

static char *json_take(json_object *o) {
  char *s = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
  json_object_put(o);
  return s;
}

static json_object *get(json_object *o, const char *key) {
  json_object *v = NULL;
  if (o && json_object_is_type(o, json_type_object) && json_object_object_get_ex(o, key, &v))
    return v;
  return NULL;
}

static const char *get_str(json_object *o, const char *key) {
  json_object *v = get(o, key);
  return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

/* Go's encoding/json matches keys case-insensitively; unknown keys are an
 * error here (a clear 400 beats silently scheduling on half a request). */
static int check_keys(json_object *o, const char *const *known, json_object **vals, char *why,
                      size_t len) {
  if (!o || !json_object_is_type(o, json_type_object)) {
    snprintf(why, len, "request body is not a JSON object");
    return -1;
  }
  json_object_object_foreach(o, key, val) {
    int k = 0;
    for (; known[k]; k++)
      if (strcasecmp(key, known[k]) == 0) break;
    if (!known[k]) {
      snprintf(why, len, "unknown field \"%s\"", key);
      return -1;
    }
    vals[k] = val;
  }
  return 0;
}

/* A quantity as an integer: JSON int, or a string of digits with an optional
 * binary suffix (Ki, Mi, Gi) scaled to unit. */
static int quantity(json_object *v, int64_t unit_mib, int64_t *out) {
  if (json_object_is_type(v, json_type_int)) {
    *out = json_object_get_int64(v);
    return 0;
  }
  if (!json_object_is_type(v, json_type_string)) return -1;
  const char *s = json_object_get_string(v);
  char *end;
  long long n = strtoll(s, &end, 10);
  if (end == s || n < 0) return -1;
  if (*end == 0) {
    *out = n;
    return 0;
  }
  if (!unit_mib) return -1; /* suffixes only for memory */
  if (strcmp(end, "Mi") == 0)
    *out = n;
  else if (strcmp(end, "Gi") == 0)
    *out = n * 1024;
  else
    return -1;
  return 0;
}

/* The GPU requests of a pod (limits, else requests, per container). */
static int parse_pod(json_object *pod, struct pod_req *r, char *why, size_t len) {
  memset(r, 0, sizeof(*r));
  if (!pod || !json_object_is_type(pod, json_type_object)) {
    snprintf(why, len, "Pod is missing or not an object");
    return -1;
  }
  json_object *ctrs = get(get(pod, "spec"), "containers");
  if (ctrs && !json_object_is_type(ctrs, json_type_array)) {
    snprintf(why, len, "Pod.spec.containers is not an array");
    return -1;
  }
  size_t nc = ctrs ? json_object_array_length(ctrs) : 0;
  for (size_t i = 0; i < nc; i++) {
    json_object *c = json_object_array_get_idx(ctrs, i);
    const char *cname = get_str(c, "name");
    json_object *res = get(c, "resources");
    json_object *lim = get(res, "limits"), *req = get(res, "requests");
    struct ctr_req cr = {0};
    snprintf(cr.name, sizeof(cr.name), "%s", cname ? cname : "");
    bool has_mem = false, has_cores = false;
    json_object *maps[2] = {req, lim}; /* limits win */
    for (int m = 0; m < 2; m++) {
      if (!maps[m]) continue;
      if (!json_object_is_type(maps[m], json_type_object)) {
        snprintf(why, len, "container %s: resources are not an object", cr.name);
        return -1;
      }
      json_object_object_foreach(maps[m], key, val) {
        int64_t q;
        bool vgpu_ns = strncmp(key, "nvidia.com/", 11) == 0 || strncmp(key, "vgpu.io/", 8) == 0;
        if (strcmp(key, RES_VGPU) == 0 || strcmp(key, RES_MEM) == 0 ||
            strcmp(key, RES_CORES) == 0) {
          if (quantity(val, strcmp(key, RES_MEM) == 0, &q) != 0) {
            snprintf(why, len, "container %s: %s is not a whole number: %s", cr.name, key,
                     json_object_to_json_string(val));
            return -1;
          }
          if (strcmp(key, RES_VGPU) == 0) cr.count = (int)(q > 1000 ? 1000 : q);
          if (strcmp(key, RES_MEM) == 0) cr.mem = q * MIB, has_mem = true;
          if (strcmp(key, RES_CORES) == 0) cr.cores = (int)(q > 1000 ? 1000 : q), has_cores = true;
        } else if (vgpu_ns) {
          snprintf(why, len,
                   "container %s: resource %s is not supported by vgpu-scheduler (this version "
                   "places the vgpu dialect: %s, %s, %s)",
                   cr.name, key, RES_VGPU, RES_MEM, RES_CORES);
          return -1;
        }
      }
    }
    if ((has_mem || has_cores) && cr.count == 0) {
      snprintf(why, len, "container %s: %s/%s need %s", cr.name, RES_MEM, RES_CORES, RES_VGPU);
      return -1;
    }
    if (cr.count == 0) continue;
    if (cr.count > VG_SCHED_MAX_GPUS) {
      snprintf(why, len, "container %s: %d GPUs asked, at most %d per container", cr.name, cr.count,
               VG_SCHED_MAX_GPUS);
      return -1;
    }
    if (cr.cores > 100) {
      snprintf(why, len, "container %s: %s is %d, at most 100 (percent of one GPU)", cr.name,
               RES_CORES, cr.cores);
      return -1;
    }
    if (has_mem && cr.mem == 0) {
      snprintf(why, len, "container %s: %s is 0", cr.name, RES_MEM);
      return -1;
    }
    if (r->n == MAX_CTRS) {
      snprintf(why, len, "more than %d containers ask for GPUs", MAX_CTRS);
      return -1;
    }
    r->c[r->n++] = cr;
  }
  return 0;
}

/* ---- node views ---- */

static int parse_inventory(const char *text, struct node_view *v, char *why, size_t len) {
  memset(v, 0, sizeof(*v));
  json_object *inv = json_tokener_parse(text);
  if (!inv || !json_object_is_type(inv, json_type_object)) {
    snprintf(why, len, "annotation %s is not a JSON object", VG_ANN_INVENTORY);
    json_object_put(inv);
    return -1;
  }
  json_object *ver = get(inv, "version"), *gpus = get(inv, "gpus");
  if (!ver || json_object_get_int(ver) != 1 || !gpus ||
      !json_object_is_type(gpus, json_type_array)) {
    snprintf(why, len, "annotation %s: unknown version or no gpus", VG_ANN_INVENTORY);
    json_object_put(inv);
    return -1;
  }
  size_t n = json_object_array_length(gpus);
  for (size_t i = 0; i < n && v->n < VG_SCHED_MAX_GPUS; i++) {
    json_object *g = json_object_array_get_idx(gpus, i);
    struct gpu_view *gv = &v->g[v->n++];
    snprintf(gv->uuid, sizeof(gv->uuid), "%s", get_str(g, "uuid") ? get_str(g, "uuid") : "");
    gv->index = get(g, "index") ? json_object_get_int(get(g, "index")) : (int)i;
    const char *health = get_str(g, "health");
    json_object *res = get(g, "resources");
    size_t nr =
        res && json_object_is_type(res, json_type_array) ? json_object_array_length(res) : 0;
    for (size_t k = 0; k < nr; k++) {
      json_object *r = json_object_array_get_idx(res, k);
      const char *name = get_str(r, "name");
      if (!name || strcmp(name, RES_VGPU) != 0) continue;
      gv->slots = json_object_get_int(get(r, "count"));
      gv->mem = get(r, "memory") ? json_object_get_int64(get(r, "memory"))
                                 : json_object_get_int64(get(g, "memory"));
      gv->cores = get(r, "cores") ? json_object_get_int(get(r, "cores")) : 100;
      gv->usable = health && strcmp(health, "Healthy") == 0 && gv->slots > 0 && gv->uuid[0];
    }
  }
  json_object_put(inv);
  return 0;
}

static int view_from_node(json_object *node, struct node_view *v, char *why, size_t len) {
  const char *text = get_str(get(get(node, "metadata"), "annotations"), VG_ANN_INVENTORY);
  if (!text) {
    snprintf(why, len, "no %s annotation (is vgpu-device-plugin running there?)", VG_ANN_INVENTORY);
    return -1;
  }
  return parse_inventory(text, v, why, len);
}

/* Subtracts what the pods bound to the node hold (their assignment annotations). */
static int subtract_pods(struct vg_ext *x, const char *node, struct node_view *v, char *why,
                         size_t len) {
  json_object *list = NULL;
  struct vg_err err = {{0}};
  char rv[64];
  if (vg_k8s_list_pods(x->client, node, &list, rv, sizeof(rv), &err) != 0) {
    snprintf(why, len, "cannot list the node's pods: %.400s", err.msg);
    return -1;
  }
  json_object *items = get(list, "items");
  size_t n = items ? json_object_array_length(items) : 0;
  for (size_t i = 0; i < n; i++) {
    json_object *pod = json_object_array_get_idx(items, i);
    const char *phase = get_str(get(pod, "status"), "phase");
    if (phase && (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0)) continue;
    struct vg_assignment a;
    struct vg_err aerr = {{0}};
    int has = vg_assign_from_pod(pod, &a, &aerr);
    if (has < 0) {
      /* What it holds is unknown: counting it as nothing could oversubscribe. */
      snprintf(why, len, "pod %.100s/%.100s: %.300s", get_str(get(pod, "metadata"), "namespace"),
               get_str(get(pod, "metadata"), "name"), aerr.msg);
      json_object_put(list);
      return -1;
    }
    for (int c = 0; has && c < a.nctrs; c++) {
      for (int k = 0; k < a.ctr[c].ngpus; k++) {
        const struct vg_assign_gpu *g = &a.ctr[c].gpu[k];
        for (int j = 0; j < v->n; j++) {
          if (strcmp(v->g[j].uuid, g->uuid) != 0) continue;
          v->g[j].slots_used++;
          v->g[j].mem_used += g->memory;
          v->g[j].cores_used += g->cores;
          if (g->cores >= 100) v->g[j].exclusive = true;
        }
      }
    }
    if (has) vg_assign_free(&a);
  }
  json_object_put(list);
  return 0;
}

static double elapsed_ms(const struct timespec *a, const struct timespec *b) {
  return (double)(b->tv_sec - a->tv_sec) * 1e3 + (double)(b->tv_nsec - a->tv_nsec) / 1e6;
}

static struct node_entry *entry(struct vg_ext *x, const char *name) {
  pthread_mutex_lock(&x->lock);
  struct node_entry *e = x->nodes;
  while (e && strcmp(e->name, name) != 0) e = e->next;
  if (!e && (e = calloc(1, sizeof(*e)))) {
    snprintf(e->name, sizeof(e->name), "%s", name);
    pthread_mutex_init(&e->bind_lock, NULL);
    e->next = x->nodes;
    x->nodes = e;
  }
  pthread_mutex_unlock(&x->lock);
  return e;
}

/* The node's GPU view: from node_obj when given (a full NodeList), else the
 * API (cached for ttl unless fresh). Returns 0, or -1 with why. */
static int node_view(struct vg_ext *x, const char *name, json_object *node_obj, bool fresh,
                     struct node_view *v, char *why, size_t len) {
  struct node_entry *e = entry(x, name);
  if (!e) {
    snprintf(why, len, "out of memory");
    return -1;
  }
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  if (!fresh && !node_obj) {
    pthread_mutex_lock(&x->lock);
    bool hit = e->at.tv_sec && elapsed_ms(&e->at, &now) < (double)x->ttl_ms;
    int rc = e->rc;
    if (hit) *v = e->view, snprintf(why, len, "%s", e->why);
    pthread_mutex_unlock(&x->lock);
    if (hit) return rc;
  }
  int rc;
  json_object *fetched = NULL;
  if (!node_obj) {
    struct vg_err err = {{0}};
    int k = vg_k8s_get_node(x->client, name, &fetched, &err);
    if (k != 0) {
      snprintf(why, len, "%s", k == VG_K8S_ENOTFOUND ? "node not found" : err.msg);
      rc = -1;
      goto store;
    }
    node_obj = fetched;
  }
  rc = view_from_node(node_obj, v, why, len);
  if (rc == 0) rc = subtract_pods(x, name, v, why, len);
store:
  json_object_put(fetched);
  pthread_mutex_lock(&x->lock);
  e->at = now;
  e->rc = rc;
  e->view = *v;
  snprintf(e->why, sizeof(e->why), "%s", rc ? why : "");
  pthread_mutex_unlock(&x->lock);
  return rc;
}

static void invalidate(struct vg_ext *x, const char *name) {
  struct node_entry *e = entry(x, name);
  if (!e) return;
  pthread_mutex_lock(&x->lock);
  e->at.tv_sec = 0;
  pthread_mutex_unlock(&x->lock);
}

/* ---- fit ---- */

static int64_t need_mem(const struct ctr_req *c, const struct gpu_view *g) {
  return c->mem ? c->mem : g->mem;
}

static bool gpu_fits(const struct ctr_req *c, const struct gpu_view *g) {
  if (!g->usable || g->exclusive || g->slots_used >= g->slots) return false;
  if (g->mem - g->mem_used < need_mem(c, g)) return false;
  if (g->cores_used + c->cores > g->cores) return false;
  if (c->cores >= 100 && g->slots_used > 0) return false;
  return true;
}

static void gpu_take(const struct ctr_req *c, struct gpu_view *g) {
  g->slots_used++;
  g->mem_used += need_mem(c, g);
  g->cores_used += c->cores;
  if (c->cores >= 100) g->exclusive = true;
}

/* Tightest fitting GPUs for one container: least cores, then memory, left. */
static bool pick_ctr(const struct ctr_req *c, const struct node_view *v, int *out) {
  int n = 0;
  bool used[VG_SCHED_MAX_GPUS] = {false};
  for (int k = 0; k < c->count; k++) {
    int best = -1;
    for (int j = 0; j < v->n; j++) {
      const struct gpu_view *g = &v->g[j];
      if (used[j] || !gpu_fits(c, g)) continue;
      if (best < 0) {
        best = j;
        continue;
      }
      const struct gpu_view *b = &v->g[best];
      int gc = g->cores - g->cores_used, bc = b->cores - b->cores_used;
      int64_t gm = g->mem - g->mem_used, bm = b->mem - b->mem_used;
      if (gc < bc || (gc == bc && gm < bm)) best = j;
    }
    if (best < 0) return false;
    used[best] = true;
    out[n++] = best;
  }
  return true;
}

/* Why container c does not fit view v (v unchanged). */
static void explain(const struct ctr_req *c, const struct node_view *v, char *why, size_t len) {
  int usable = 0, fit = 0;
  int64_t maxmem = 0;
  for (int j = 0; j < v->n; j++) {
    usable += v->g[j].usable;
    if (v->g[j].usable && v->g[j].mem > maxmem) maxmem = v->g[j].mem;
    fit += gpu_fits(c, &v->g[j]);
  }
  if (usable < c->count)
    snprintf(why, len, "container %s asks for %d GPUs, the node has %d healthy vgpu GPUs", c->name,
             c->count, usable);
  else if (c->mem > maxmem)
    snprintf(why, len, "container %s asks for %lld MiB per GPU, the largest GPU here has %lld MiB",
             c->name, (long long)(c->mem / MIB), (long long)(maxmem / MIB));
  else
    snprintf(why, len,
             "container %s needs %d GPUs each with %s%lld MiB, %d%% cores and a slot free; %d "
             "have",
             c->name, c->count, c->mem ? "" : "all ", (long long)(c->mem / MIB), c->cores, fit);
}

/* Places every container in turn on a copy of v; picks[i][k]: GPU (view index)
 * of container i's k-th GPU. */
static bool pod_fits(const struct pod_req *r, const struct node_view *v0, struct node_view *after,
                     int picks[MAX_CTRS][VG_SCHED_MAX_GPUS], char *why, size_t len) {
  *after = *v0;
  for (int i = 0; i < r->n; i++) {
    if (!pick_ctr(&r->c[i], after, picks[i])) {
      explain(&r->c[i], after, why, len);
      return false;
    }
    for (int k = 0; k < r->c[i].count; k++) gpu_take(&r->c[i], &after->g[picks[i][k]]);
  }
  return true;
}

/* ---- policy scoring through the placement core ---- */

/* The node and pod in the core's terms: GPUs of the view with free milli =
 * min(cores, memory) fraction left; the pod's first GPU container. */
static void to_core(const struct node_view *v, const struct pod_req *r, struct vg_node *n,
                    struct vg_pod *p) {
  memset(n, 0, sizeof(*n));
  memset(p, 0, sizeof(*p));
  n->cpu_cap = n->cpu_free = 1;
  n->mem_cap = n->mem_free = 1;
  n->model = 0;
  int64_t mem0 = 0;
  for (int j = 0; j < v->n; j++) {
    const struct gpu_view *g = &v->g[j];
    int milli = 0;
    if (g->usable && !g->exclusive && g->slots_used < g->slots && g->mem > 0 && g->cores > 0) {
      double fc = (double)(g->cores - g->cores_used) / g->cores;
      double fm = (double)(g->mem - g->mem_used) / (double)g->mem;
      milli = (int)floor(VG_MILLI * (fc < fm ? fc : fm));
      if (milli < 0) milli = 0;
    }
    if (g->usable && !mem0) mem0 = g->mem;
    n->gpu_free[n->ngpu++] = milli;
  }
  if (r->n == 0) return;
  const struct ctr_req *c = &r->c[0];
  double fc = c->cores / 100.0, fm = c->mem && mem0 ? (double)c->mem / (double)mem0 : 1.0;
  int milli = (int)ceil(VG_MILLI * (fc > fm ? fc : fm));
  p->num_gpu = c->count;
  p->gpu_milli = milli < 1 ? 1 : milli > VG_MILLI ? VG_MILLI : milli;
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
  if (check_keys(root, keys, vals, why, len) != 0) return -1;
  *pod = vals[0];
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
  json_object *items = get(nodes, "items");
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
    const char *name = get_str(get(o, "metadata"), "name");
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

/* Filter and prioritize share this: which candidates fit, their views. */
struct evaluated {
  bool *fits;
  char (*why)[256];
  struct node_view *views;
};

static int evaluate(struct vg_ext *x, const char *body, json_object **root, struct pod_req *req,
                    struct candidates *cs, struct evaluated *ev, char *why, size_t len) {
  json_object *pod = NULL;
  memset(ev, 0, sizeof(*ev));
  memset(cs, 0, sizeof(*cs));
  enum json_tokener_error jerr;
  *root = json_tokener_parse_verbose(body, &jerr);
  if (!*root) {
    snprintf(why, len, "request body is not JSON: %s", json_tokener_error_desc(jerr));
    return -1;
  }
  if (parse_args(*root, &pod, cs, why, len) != 0) return -1;
  if (parse_pod(pod, req, why, len) != 0) return -1;
  ev->fits = calloc((size_t)cs->n + 1, sizeof(bool));
  ev->why = calloc((size_t)cs->n + 1, sizeof(*ev->why));
  ev->views = calloc((size_t)cs->n + 1, sizeof(*ev->views));
  if (!ev->fits || !ev->why || !ev->views) {
    snprintf(why, len, "out of memory");
    return -1;
  }
  for (int i = 0; i < cs->n; i++) {
    if (req->n == 0) {
      ev->fits[i] = true; /* no GPU asked: nothing for us to check */
      continue;
    }
    struct node_view after;
    int picks[MAX_CTRS][VG_SCHED_MAX_GPUS];
    if (node_view(x, cs->names[i], cs->objs[i], false, &ev->views[i], ev->why[i],
                  sizeof(ev->why[i])) != 0)
      continue;
    ev->fits[i] = pod_fits(req, &ev->views[i], &after, picks, ev->why[i], sizeof(ev->why[i]));
  }
  return 0;
}

static void free_evaluated(struct evaluated *ev) {
  free(ev->fits);
  free(ev->why);
  free(ev->views);
}

static int do_filter(struct vg_ext *x, const char *body, char **out) {
  json_object *root = NULL;
  struct pod_req req;
  struct candidates cs;
  struct evaluated ev;
  char why[512];
  int status = 200;
  if (evaluate(x, body, &root, &req, &cs, &ev, why, sizeof(why)) != 0) {
    *out = json_error(why);
    status = 400;
    goto done;
  }
  json_object *res = json_object_new_object(), *failed = json_object_new_object();
  json_object *names = cs.cache_capable ? json_object_new_array() : NULL;
  json_object *nodes = NULL, *items = NULL;
  if (!cs.cache_capable) {
    nodes = json_object_new_object();
    items = json_object_new_array();
    json_object_object_add(nodes, "metadata", json_object_new_object());
    json_object_object_add(nodes, "items", items);
  }
  for (int i = 0; i < cs.n; i++) {
    if (!ev.fits[i]) {
      json_object_object_add(failed, cs.names[i], json_object_new_string(ev.why[i]));
      continue;
    }
    if (names) json_object_array_add(names, json_object_new_string(cs.names[i]));
    if (items) json_object_array_add(items, json_object_get(cs.objs[i]));
  }
  json_object_object_add(res, "Nodes", nodes);
  json_object_object_add(res, "NodeNames", names);
  json_object_object_add(res, "FailedNodes", failed);
  json_object_object_add(res, "FailedAndUnresolvableNodes", json_object_new_object());
  json_object_object_add(res, "Error", json_object_new_string(""));
  *out = json_take(res);
done:
  free_evaluated(&ev);
  free_candidates(&cs);
  json_object_put(root);
  return status;
}

static int do_prioritize(struct vg_ext *x, const char *body, char **out) {
  json_object *root = NULL;
  struct pod_req req;
  struct candidates cs;
  struct evaluated ev;
  char why[512];
  int status = 200;
  double *score = NULL;
  struct vg_cluster cl;
  vg_cluster_init(&cl);
  if (evaluate(x, body, &root, &req, &cs, &ev, why, sizeof(why)) != 0) {
    *out = json_error(why);
    status = 400;
    goto done;
  }
  score = calloc((size_t)cs.n + 1, sizeof(double));
  struct vg_err err = {{0}};
  struct vg_sched s = {0};
  bool core = req.n > 0 && vg_cluster_model(&cl, "gpu", &err) == 0;
  int *idx = calloc((size_t)cs.n + 1, sizeof(int));
  for (int i = 0; core && i < cs.n; i++) {
    idx[i] = -1;
    if (!ev.fits[i]) continue;
    struct vg_node n;
    struct vg_pod p;
    to_core(&ev.views[i], &req, &n, &p);
    snprintf(n.name, sizeof(n.name), "%.*s", VG_SCHED_NAME_MAX - 1, cs.names[i]);
    n.rank = (uint32_t)i;
    idx[i] = vg_cluster_add_node(&cl, &n, &err);
  }
  if (core && vg_sched_init(&s, &cl, x->policy, &x->workload, &err) != 0) core = false;
  double lo = INFINITY, hi = -INFINITY;
  for (int i = 0; i < cs.n; i++) {
    score[i] = NAN;
    if (!core || !ev.fits[i] || idx[i] < 0) continue;
    struct vg_pod p;
    struct vg_node tmp;
    to_core(&ev.views[i], &req, &tmp, &p);
    if (!vg_fit(&cl.nodes[idx[i]], &p)) continue;
    struct vg_pick pick = {0};
    score[i] = x->policy->score(&s, idx[i], &p, &pick);
    if (score[i] < lo) lo = score[i];
    if (score[i] > hi) hi = score[i];
  }
  json_object *list = json_object_new_array();
  for (int i = 0; i < cs.n; i++) {
    int sc = 0;
    if (!isnan(score[i]))
      sc = hi > lo ? (int)lround(VG_EXT_MAX_PRIORITY * (score[i] - lo) / (hi - lo))
                   : VG_EXT_MAX_PRIORITY;
    json_object *h = json_object_new_object();
    json_object_object_add(h, "Host", json_object_new_string(cs.names[i]));
    json_object_object_add(h, "Score", json_object_new_int(sc));
    json_object_array_add(list, h);
  }
  *out = json_take(list);
  if (core) vg_sched_free(&s);
  free(idx);
done:
  vg_cluster_free(&cl);
  free(score);
  free_evaluated(&ev);
  free_candidates(&cs);
  json_object_put(root);
  return status;
}

static json_object *assignment(const char *node, const struct pod_req *r, const struct node_view *v,
                               int picks[MAX_CTRS][VG_SCHED_MAX_GPUS], struct vg_err *err) {
  struct vg_assignment a = {{0}, 0, NULL};
  snprintf(a.node, sizeof(a.node), "%s", node);
  for (int i = 0; i < r->n; i++) {
    struct vg_assign_ctr *c = vg_assign_add_ctr(&a, r->c[i].name, RES_VGPU);
    if (c == NULL) {
      vg_assign_free(&a);
      vg_err_set(err, "assignment: out of memory");
      return NULL;
    }
    for (int k = 0; k < r->c[i].count; k++) {
      const struct gpu_view *g = &v->g[picks[i][k]];
      struct vg_assign_gpu *o = &c->gpu[c->ngpus++];
      snprintf(o->uuid, sizeof(o->uuid), "%s", g->uuid);
      o->index = g->index;
      o->memory = need_mem(&r->c[i], g);
      o->cores = r->c[i].cores;
    }
  }
  json_object *o = vg_assign_to_json(&a, err);
  vg_assign_free(&a);
  return o;
}

static int do_bind(struct vg_ext *x, const char *body, char **out) {
  static const char *const keys[] = {"PodName", "PodNamespace", "PodUID", "Node", NULL};
  json_object *vals[4] = {NULL, NULL, NULL, NULL};
  char why[512];
  enum json_tokener_error jerr;
  json_object *root = json_tokener_parse_verbose(body, &jerr);
  if (!root) {
    snprintf(why, sizeof(why), "request body is not JSON: %s", json_tokener_error_desc(jerr));
    *out = json_error(why);
    return 400;
  }
  if (check_keys(root, keys, vals, why, sizeof(why)) != 0) {
    json_object_put(root);
    *out = json_error(why);
    return 400;
  }
  const char *s[4];
  for (int i = 0; i < 4; i++) {
    s[i] = vals[i] && json_object_is_type(vals[i], json_type_string)
               ? json_object_get_string(vals[i])
               : NULL;
    if (!s[i] && i != 2) {
      snprintf(why, sizeof(why), "%s is missing or not a string", keys[i]);
      json_object_put(root);
      *out = json_error(why);
      return 400;
    }
  }
  const char *name = s[0], *ns = s[1], *uid = s[2], *node = s[3];
  json_object *pod = NULL, *annotations = NULL;
  struct vg_err err = {{0}};
  struct pod_req req;
  why[0] = 0;
  struct node_entry *e = entry(x, node);
  if (!e) {
    json_object_put(root);
    *out = json_error("out of memory");
    return 500;
  }
  pthread_mutex_lock(&e->bind_lock);
  if (vg_k8s_get_pod(x->client, ns, name, &pod, &err) != 0) {
    snprintf(why, sizeof(why), "%s", err.msg);
    goto done;
  }
  if (parse_pod(pod, &req, why, sizeof(why)) != 0) goto done;
  /* Already bound: no placement; the API server's 409 says so. */
  if (req.n > 0 && !get_str(get(pod, "spec"), "nodeName")) {
    struct node_view v, after;
    int picks[MAX_CTRS][VG_SCHED_MAX_GPUS];
    if (node_view(x, node, NULL, true, &v, why, sizeof(why)) != 0) goto done;
    if (!pod_fits(&req, &v, &after, picks, why, sizeof(why))) goto done;
    json_object *a = assignment(node, &req, &v, picks, &err);
    if (a == NULL) {
      snprintf(why, sizeof(why), "%s", err.msg);
      goto done;
    }
    annotations = json_object_new_object();
    json_object_object_add(
        annotations, VG_ANN_ASSIGNED,
        json_object_new_string(json_object_to_json_string_ext(a, JSON_C_TO_STRING_PLAIN)));
    json_object_put(a);
  }
  int rc = vg_k8s_bind_pod(x->client, ns, name, uid, node, annotations, &err);
  if (rc != 0)
    snprintf(why, sizeof(why), "%s%.480s", rc == VG_K8S_ECONFLICT ? "conflict: " : "", err.msg);
  invalidate(x, node);
done:
  pthread_mutex_unlock(&e->bind_lock);
  pthread_mutex_lock(&x->lock);
  if (why[0])
    x->binds_failed++;
  else
    x->binds_ok++;
  pthread_mutex_unlock(&x->lock);
  if (why[0]) vg_warn("bind %s/%s to %s: %s", ns, name, node, why);
  json_object_put(annotations);
  json_object_put(pod);
  json_object_put(root);
  *out = json_error(why);
  return 200;
}

/* ---- entry points ---- */

struct vg_ext *vg_ext_new(struct vg_k8s_client *client, const char *policy, long cache_ttl_ms,
                          struct vg_err *err) {
  const struct vg_policy *p = vg_policy_find(policy ? policy : "fgd");
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
  pthread_mutex_init(&x->lock, NULL);
  /* FGD's target workload without a trace: the vgpu shapes people ask for
   * (quarter, half, whole, two and four GPUs), equally likely. */
  static const int shapes[][2] = {{1, 250}, {1, 500}, {1, 1000}, {2, 1000}, {4, 1000}};
  struct vg_pod pods[5];
  for (int i = 0; i < 5; i++)
    pods[i] = (struct vg_pod){.num_gpu = shapes[i][0], .gpu_milli = shapes[i][1]};
  if (vg_workload_build(&x->workload, pods, 5, 100, err) != 0) {
    vg_ext_free(x);
    return NULL;
  }
  return x;
}

void vg_ext_free(struct vg_ext *x) {
  if (!x) return;
  for (struct node_entry *e = x->nodes, *next; e; e = next) {
    next = e->next;
    pthread_mutex_destroy(&e->bind_lock);
    free(e);
  }
  vg_workload_free(&x->workload);
  pthread_mutex_destroy(&x->lock);
  free(x);
}

int vg_ext_handle(struct vg_ext *x, const char *method, const char *path, const char *body,
                  size_t len, char **out, const char **content_type) {
  static const char *const verbs[] = {"/filter", "/prioritize", "/bind", "/healthz", "/metrics"};
  int v = 0;
  while (v < 5 && strcmp(path, verbs[v]) != 0) v++;
  *content_type = "application/json";
  int status;
  if (v == 5) {
    *out =
        json_error("no such endpoint (POST /filter, /prioritize, /bind; GET /healthz, /metrics)");
    status = 404;
  } else if ((v < 3) != (strcmp(method, "POST") == 0)) {
    *out = json_error(v < 3 ? "use POST" : "use GET");
    status = 405;
  } else if (v < 3 && (memchr(body, 0, len) || len == 0)) {
    *out = json_error(len ? "request body contains a NUL byte" : "request body is empty");
    status = 400;
  } else if (v == 0) {
    status = do_filter(x, body, out);
  } else if (v == 1) {
    status = do_prioritize(x, body, out);
  } else if (v == 2) {
    status = do_bind(x, body, out);
  } else if (v == 3) {
    *content_type = "text/plain";
    *out = strdup("ok\n");
    status = 200;
  } else {
    *content_type = "text/plain; version=0.0.4";
    pthread_mutex_lock(&x->lock);
    *out = dupf(
        "# TYPE vgpu_scheduler_requests_total counter\n"
        "vgpu_scheduler_requests_total{verb=\"filter\"} %lu\n"
        "vgpu_scheduler_requests_total{verb=\"prioritize\"} %lu\n"
        "vgpu_scheduler_requests_total{verb=\"bind\"} %lu\n"
        "# TYPE vgpu_scheduler_bad_requests_total counter\n"
        "vgpu_scheduler_bad_requests_total %lu\n"
        "# TYPE vgpu_scheduler_binds_total counter\n"
        "vgpu_scheduler_binds_total{result=\"ok\"} %lu\n"
        "vgpu_scheduler_binds_total{result=\"failed\"} %lu\n",
        x->requests[0], x->requests[1], x->requests[2], x->errors, x->binds_ok, x->binds_failed);
    pthread_mutex_unlock(&x->lock);
    status = 200;
  }
  pthread_mutex_lock(&x->lock);
  if (v < 5) x->requests[v]++;
  if (status >= 400) x->errors++;
  pthread_mutex_unlock(&x->lock);
  return status;
}
