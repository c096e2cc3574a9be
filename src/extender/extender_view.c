/*
 * extender_view.c -- a node's GPUs as the scheduler sees them: the inventory
 * the device plugin publishes (the Node annotation vgpu.io/gpu-inventory,
 * docs/inventory.md) minus what the assignments (vgpu.io/assigned) of the
 * pods bound to the node hold.
 *
 * All dialects share one account per GPU: memory (bytes), cores (percent),
 * slices (assignment entries), plus per advertised resource the device IDs
 * and slices its assignments took. A GPU advertises every enabled dialect at
 * once (docs/configuration.md, "Several dialects on one node"), so keeping
 * their sum within the GPU is only possible here, from the assignments, which
 * is why every dialect's assignment carries the bytes it may use.
 *
 * State lives only in the API: a restarted scheduler rebuilds exactly this
 * from the Node and the node's pods. Filter and prioritize build a view from
 * the watch-fed store while both watches are synced (extender_store.c), else
 * from the API, and reuse it while it is current (ext_view_ttl_ms); bind
 * always reads fresh, under the node's bind lock.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "extender_int.h"
#include "log.h"
#include "gpu_inventory.h"
#include "requests.h"

/* The resources of GPU g this scheduler places (a dialect it does not know
 * is skipped) onto gv, with the defaults docs/inventory.md gives for the
 * fields only some dialects write. */
static enum ext_reason view_resources(const struct vg_inv_gpu *g, struct gpu_view *gv, char *why,
                                      size_t len) {
  for (int k = 0; k < g->nres; k++) {
    const struct vg_inv_resource *r = &g->res[k];
    enum vg_dialect d = vg_dialect_from_name(r->dialect);
    if (d == VG_DIALECT_NONE) continue; /* a dialect this scheduler does not place */
    if (gv->nres == EXT_MAX_RES) {
      snprintf(why, len, "annotation %s: GPU %s advertises more than %d resources",
               VG_INVENTORY_ANNOTATION, gv->uuid, EXT_MAX_RES);
      return EXT_R_BAD_INVENTORY;
    }
    struct res_view *rv = &gv->res[gv->nres++];
    snprintf(rv->name, sizeof(rv->name), "%s", r->name);
    rv->dialect = d;
    rv->count = (int)r->count;
    rv->unit = d == VG_DIALECT_CCE ? EXT_CCE_UNIT : r->unit;
    rv->memory = r->memory >= 0 ? r->memory : gv->mem;
    rv->cores = r->cores >= 0 ? (int)r->cores : 100;
    rv->max_vgpus = r->max_vgpus >= 0 ? (int)r->max_vgpus : EXT_CCE_MAX_VGPUS;
  }
  return EXT_R_NONE;
}

static void view_reset(struct node_view *v) {
  v->n = 0;
  v->reserve = 0;
  v->cpu_alloc = v->mem_alloc = -1;
  v->cpu_req = v->mem_req = 0;
  v->foreign = false;
  v->gpu_alloc = -1;
  v->gpu_req = 0;
}

enum ext_reason ext_parse_inventory(const char *text, struct node_view *v, char *why, size_t len) {
  view_reset(v);
  struct vg_inv inv;
  struct vg_err err = {""};
  enum ext_reason rc = EXT_R_NONE;
  if (vg_inv_parse(text, &inv, &err) != 0) {
    snprintf(why, len, "annotation %s: %s", VG_INVENTORY_ANNOTATION, err.msg);
    rc = EXT_R_BAD_INVENTORY;
  } else {
    v->reserve = inv.context_reserve;
  }
  for (int i = 0; rc == 0 && i < inv.ngpus && v->n < VG_SCHED_MAX_GPUS; i++) {
    const struct vg_inv_gpu *g = &inv.gpu[i];
    struct gpu_view *gv = &v->g[v->n++];
    memset(gv, 0, sizeof(*gv));
    snprintf(gv->uuid, sizeof(gv->uuid), "%s", g->uuid);
    snprintf(gv->type, sizeof(gv->type), "%.63s", g->type); /* as long as the view keeps */
    gv->index = (int)g->index;
    gv->mem = g->memory;
    /* A GPU without memory cannot be accounted: never placed on. */
    gv->healthy = g->healthy && gv->mem > 0;
    rc = view_resources(g, gv, why, len);
  }
  vg_inv_free(&inv);
  return rc;
}

static const char *inventory_text(json_object *node);

static enum ext_reason view_from_inventory(const char *text, struct node_view *v, char *why,
                                           size_t len) {
  if (!text) {
    snprintf(why, len, "no %s annotation (is vgpu-device-plugin running there?)",
             VG_INVENTORY_ANNOTATION);
    return EXT_R_NO_INVENTORY;
  }
  return ext_parse_inventory(text, v, why, len);
}

/* What a view starts from: the inventory inv, or, for a Node without one
 * whose allocatable names nvidia.com/gpu (gpus >= 0), a foreign GPU node
 * when --foreign-gpu-nodes allows them (extender_foreign.c). */
static enum ext_reason base_view(const struct vg_ext *x, const char *inv, int64_t gpus,
                                 struct node_view *v, char *why, size_t len) {
  if (inv || gpus < 0) return view_from_inventory(inv, v, why, len);
  if (x->foreign_gpu_nodes) {
    ext_foreign_view(v, gpus);
    return EXT_R_NONE;
  }
  snprintf(why, len,
           "no %s annotation (is vgpu-device-plugin running there?); its %s are another device "
           "plugin's, and --foreign-gpu-nodes deny keeps GPU pods off such nodes",
           VG_INVENTORY_ANNOTATION, EXT_FOREIGN_RESOURCE);
  return EXT_R_NO_INVENTORY;
}

/* The Node's allocatable nvidia.com/gpu, -1 when it names none. */
static int64_t node_gpus(json_object *node) {
  int64_t gpus = -1;
  struct vg_err err = {{0}};
  int k = vg_node_allocatable_count(node, EXT_FOREIGN_RESOURCE, &gpus, &err);
  if (k < 0) vg_warn("allocatable %s not read: %s", EXT_FOREIGN_RESOURCE, err.msg);
  return k > 0 ? gpus : -1;
}

/* Device IDs an assignment entry of `memory` bytes holds of resource r. */
static int ids_of(const struct res_view *r, const struct gpu_view *g, int64_t memory) {
  int64_t per = r->unit;
  if (r->dialect == VG_DIALECT_VGPU) return 1;
  if (r->dialect == VG_DIALECT_TIMESLICING && per == 0 && r->count > 0) per = g->mem / r->count;
  if (per <= 0) return 1;
  int64_t n = memory / per;
  return n < 1 ? 1 : n > (1 << 20) ? (1 << 20) : (int)n;
}

void ext_gpu_hold(struct gpu_view *g, const char *resource, int64_t memory, int cores) {
  g->slices++;
  /* Saturating: assignments are parsed up to INT64_MAX bytes each. */
  g->mem_used = memory > INT64_MAX - g->mem_used ? INT64_MAX : g->mem_used + memory;
  g->cores_used += cores;
  if (cores >= 100) g->exclusive = true;
  for (int k = 0; k < g->nres; k++) {
    struct res_view *r = &g->res[k];
    if (strcmp(r->name, resource) != 0) continue;
    r->slices_used++;
    r->ids_used += ids_of(r, g, memory);
    if (r->dialect == VG_DIALECT_CCE) g->cce_mode = cores > 0 ? EXT_CCE_MEM_CORES : EXT_CCE_MEM;
  }
}

/* One assignment entry onto the GPU it names (none: a GPU gone from the
 * inventory holds nothing the scheduler could place on). */
static void hold(struct node_view *v, const char *resource, const struct vg_assign_gpu *a) {
  for (int j = 0; j < v->n; j++)
    if (strcmp(v->g[j].uuid, a->uuid) == 0) ext_gpu_hold(&v->g[j], resource, a->memory, a->cores);
}

static bool uuid_char(char c) {
  return c == '-' || c == '_' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
         (c >= 'A' && c <= 'Z');
}

/* Does text name uuid as a whole (not "GPU-x-1" inside "GPU-x-10")? */
static bool names_uuid(const char *text, const char *uuid) {
  size_t n = strlen(uuid);
  for (const char *p = text; n && (p = strstr(p, uuid)) != NULL; p++)
    if ((p == text || !uuid_char(p[-1])) && !uuid_char(p[n])) return true;
  return false;
}

/* A pod bound here whose vgpu.io/assigned cannot be read still holds what
 * the device plugin gave it; which GPUs, and how much, is unknown. Failing
 * the node for every GPU pod (as before) let one bad annotation take a whole
 * node out; counting the pod as nothing could hand its GPUs out twice. So it
 * costs what it might hold, and no more:
 *   - the node's GPUs whose UUID the text still names: wholly used;
 *   - none named: its request (the pod spec) on every GPU that could serve
 *     it, since any of them might be the one;
 *   - its request unreadable too: every GPU wholly used.
 * What was counted is logged once per pod, and counted in /metrics. */
static void hold_unreadable(struct vg_ext *x, const char *node, json_object *pod,
                            struct node_view *v, const char *error) {
  json_object *meta = ext_get(pod, "metadata");
  const char *text = ext_get_str(ext_get(meta, "annotations"), VG_ANN_ASSIGNED);
  char counted[256] = "";
  size_t used = 0;
  for (int j = 0; text && j < v->n; j++) {
    if (!names_uuid(text, v->g[j].uuid)) continue;
    ext_gpu_hold(&v->g[j], "", v->g[j].mem, 100); /* 100 percent cores: nothing joins it */
    if (used < sizeof(counted))
      used += (size_t)snprintf(counted + used, sizeof(counted) - used, "%s%s",
                               used ? ", " : "counted wholly used: GPUs ", v->g[j].uuid);
  }
  struct pod_req req;
  char why[512];
  int parsed = used ? 0 : ext_parse_pod(pod, &req, why, sizeof(why));
  if (used == 0 && parsed == 0) {
    ext_hold_anywhere(&req, v);
    snprintf(counted, sizeof(counted), "%s",
             req.n ? "it names no GPU of the node: its request is counted on each GPU that "
                     "could serve it"
                   : "it asks for no GPU: nothing counted");
  } else if (used == 0) {
    for (int j = 0; j < v->n; j++) ext_gpu_hold(&v->g[j], "", v->g[j].mem, 100);
    snprintf(counted, sizeof(counted),
             "neither its GPUs nor its request (%.160s) readable: every GPU counted wholly used",
             why);
  }
  const char *uid = ext_get_str(meta, "uid"), *ns = ext_get_str(meta, "namespace");
  const char *name = ext_get_str(meta, "name");
  char key[400];
  snprintf(key, sizeof(key), "%.150s/%.150s/%.90s", ns ? ns : "", name ? name : "", uid ? uid : "");
  if (ext_note_bad_pod(x, key))
    vg_warn("pod %s/%s on node %s: %s; %s", ns ? ns : "?", name ? name : "?", node, error, counted);
}

void ext_hold_assignment(struct vg_ext *x, const char *node, json_object *pod, int has,
                         const struct vg_assignment *a, const char *error, struct node_view *v) {
  if (has < 0) {
    hold_unreadable(x, node, pod, v, error);
    return;
  }
  for (int c = 0; has && c < a->nctrs; c++)
    for (int k = 0; k < a->ctr[c].ngpus; k++) hold(v, a->ctr[c].resource, &a->ctr[c].gpu[k]);
}

/* What pod requests of CPU and memory, counted on v. A request that cannot
 * be read (the API server validates them: our bug, not the user's) counts
 * nothing and is logged. */
static void add_requests(struct node_view *v, json_object *pod) {
  struct vg_cpu_mem r;
  int64_t gpus = 0;
  struct vg_err err = {{0}};
  if (vg_pod_requests(pod, &r, &err) != 0 ||
      vg_pod_request_count(pod, EXT_FOREIGN_RESOURCE, &gpus, &err) != 0) {
    const char *name = ext_get_str(ext_get(pod, "metadata"), "name");
    vg_warn("pod %s: its requests are not counted: %s", name ? name : "?", err.msg);
    return;
  }
  v->cpu_req += r.cpu;
  v->mem_req += r.mem;
  v->gpu_req += gpus;
}

/* The Node's allocatable onto v (unknown: -1, as ext_parse_inventory left it). */
static void set_allocatable(struct node_view *v, json_object *node) {
  struct vg_cpu_mem a;
  struct vg_err err = {{0}};
  int k = node ? vg_node_allocatable(node, &a, &err) : 0;
  if (k < 0) {
    const char *name = ext_get_str(ext_get(node, "metadata"), "name");
    vg_warn("node %s: allocatable not read: %s", name ? name : "?", err.msg);
  }
  if (k > 0) v->cpu_alloc = a.cpu, v->mem_alloc = a.mem;
}

static void hold_pod(struct vg_ext *x, const char *node, json_object *pod, struct node_view *v) {
  const char *phase = ext_get_str(ext_get(pod, "status"), "phase");
  if (phase && (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0)) return;
  add_requests(v, pod);
  struct vg_assignment a;
  struct vg_err aerr = {{0}};
  int has = vg_assign_from_pod(pod, &a, &aerr);
  ext_hold_assignment(x, node, pod, has, &a, aerr.msg, v);
  if (has > 0) vg_assign_free(&a);
}

struct hold_ctx {
  struct vg_ext *x;
  const char *node;
  struct node_view *v;
  const char *exclude; /* a pod ("ns/name") left out, or NULL */
};

static void hold_stored(void *ctx, json_object *pod, int has, const struct vg_assignment *a,
                        const char *error) {
  struct hold_ctx *h = ctx;
  char key[EXT_POD_KEY_MAX];
  if (h->exclude && ext_pod_key(pod, key, sizeof(key)) && strcmp(key, h->exclude) == 0) {
    struct vg_cpu_mem r; /* the store's sums count it: take its requests back */
    int64_t gpus = 0;
    struct vg_err err = {{0}};
    if (vg_pod_requests(pod, &r, &err) == 0) h->v->cpu_req -= r.cpu, h->v->mem_req -= r.mem;
    if (vg_pod_request_count(pod, EXT_FOREIGN_RESOURCE, &gpus, &err) == 0) h->v->gpu_req -= gpus;
    return;
  }
  ext_hold_assignment(h->x, h->node, pod, has, a, error, h->v);
}

/* Subtracts what the pods bound to the node hold: from batch's list when
 * given, else from a list of the node's pods (the store's views are built
 * by from_store). */
static enum ext_reason subtract_pods(struct vg_ext *x, const char *node,
                                     const struct ext_batch *batch, struct node_view *v, char *why,
                                     size_t len) {
  if (batch) {
    json_object *items;
    for (int i = ext_batch_pods(batch, node, &items); i >= 0; i = ext_batch_next(batch, i))
      hold_pod(x, node, json_object_array_get_idx(items, (size_t)i), v);
    return EXT_R_NONE;
  }
  json_object *list = NULL;
  struct vg_err err = {{0}};
  char rv[64];
  if (vg_k8s_list_pods(x->client, node, &list, rv, sizeof(rv), &err) != 0) {
    snprintf(why, len, "cannot list the node's pods: %.400s", err.msg);
    return EXT_R_API;
  }
  json_object *items = ext_get(list, "items");
  size_t n =
      items && json_object_is_type(items, json_type_array) ? json_object_array_length(items) : 0;
  for (size_t i = 0; i < n; i++) hold_pod(x, node, json_object_array_get_idx(items, i), v);
  json_object_put(list);
  return EXT_R_NONE;
}

static double elapsed_ms(const struct timespec *a, const struct timespec *b) {
  return (double)(b->tv_sec - a->tv_sec) * 1e3 + (double)(b->tv_nsec - a->tv_nsec) / 1e6;
}

void ext_view_copy(struct node_view *dst, const struct node_view *src) {
  dst->n = src->n;
  dst->reserve = src->reserve;
  dst->cpu_alloc = src->cpu_alloc;
  dst->mem_alloc = src->mem_alloc;
  dst->cpu_req = src->cpu_req;
  dst->mem_req = src->mem_req;
  dst->foreign = src->foreign;
  dst->gpu_alloc = src->gpu_alloc;
  dst->gpu_req = src->gpu_req;
  memcpy(dst->g, src->g, (size_t)src->n * sizeof(src->g[0]));
}

static unsigned bucket_of(const char *name) { return ext_hash(name) % EXT_BUCKETS; }

struct node_entry *ext_find_entry(struct vg_ext *x, const char *name) {
  struct node_entry *e = x->buckets[bucket_of(name)];
  while (e && strcmp(e->name, name) != 0) e = e->bucket;
  return e;
}

struct node_entry *ext_entry(struct vg_ext *x, const char *name) {
  unsigned b = bucket_of(name);
  pthread_mutex_lock(&x->lock);
  struct node_entry *e = ext_find_entry(x, name);
  if (!e && (e = calloc(1, sizeof(*e)))) {
    snprintf(e->name, sizeof(e->name), "%s", name);
    e->model = -1;
    pthread_mutex_init(&e->bind_lock, NULL);
    e->next = x->nodes;
    x->nodes = e;
    e->bucket = x->buckets[b];
    x->buckets[b] = e;
  }
  pthread_mutex_unlock(&x->lock);
  return e;
}

static const char *inventory_text(json_object *node) {
  return ext_get_str(ext_get(ext_get(node, "metadata"), "annotations"), VG_INVENTORY_ANNOTATION);
}

/* Is e's view fresh at now (and, for a Node from the request, built from
 * its inventory inv)? Lock held. */
static bool fresh_at(const struct vg_ext *x, const struct node_entry *e, const struct timespec *now,
                     bool from_request, const char *inv) {
  if (!e->at.tv_sec || elapsed_ms(&e->at, now) >= (double)ext_view_ttl_ms(x)) return false;
  return !from_request || (inv && e->inventory && strcmp(e->inventory, inv) == 0);
}

/* The cached view when fresh; with a Node from the request (inv: its
 * inventory text, maybe NULL) only if it was built from the same inventory,
 * so that a full NodeList does not cost a pod list per node per request.
 * On a hit, use (when the view is usable) runs under the lock. use NULL (a
 * fresh read is wanted): never a hit; only *gen is read. */
/* Where a view of e (NULL: never seen) is built from, now: the synced store,
 * unless a bind of ours to the node is not in it yet; NULL: the API. Lock
 * held. */
static struct ext_store *store_for(const struct vg_ext *x, const struct node_entry *e,
                                   const struct timespec *now) {
  bool pending = e && e->pending > 0 && elapsed_ms(now, &e->pending_until) > 0;
  return pending ? NULL : ext_synced_store(x);
}

/* *store: where a miss is to be built from (store_for). */
static bool cached(struct vg_ext *x, struct node_entry *e, const struct timespec *now,
                   bool from_request, const char *inv, ext_view_fn use, void *ctx, char *why,
                   size_t len, enum ext_reason *rc, unsigned *gen, struct ext_store **store) {
  pthread_mutex_lock(&x->lock);
  *gen = e->gen;
  *store = store_for(x, e, now);
  bool hit = use != NULL && fresh_at(x, e, now, from_request, inv);
  if (hit) {
    *rc = (enum ext_reason)e->rc;
    if (e->rc != 0) /* a fitting node's why is empty: no formatting per node and request */
      snprintf(why, len, "%s", e->why);
    else if (len > 0)
      why[0] = '\0';
    if (e->rc == 0) use(ctx, &e->view);
  }
  pthread_mutex_unlock(&x->lock);
  return hit;
}

/* Caches what was read, unless an invalidation came in since the read began
 * (gen; for a batch, any drop since its lists were read): the view may
 * predate that change, so it is used once, not kept. */
static void store_view(struct vg_ext *x, struct node_entry *e, const struct timespec *now,
                       unsigned gen, const struct ext_batch *batch, int rc, const char *inv,
                       const struct node_view *v, const char *why) {
  char *copy = inv ? strdup(inv) : NULL;
  pthread_mutex_lock(&x->lock);
  bool keep = e->gen == gen && (!batch || batch->drops == x->drops);
  e->at = keep ? *now : (struct timespec){0, 0};
  e->rc = rc;
  ext_view_copy(&e->view, v);
  ext_gaps_note(x, e, v, rc == 0);
  snprintf(e->why, sizeof(e->why), "%s", rc ? why : "");
  free(e->inventory);
  e->inventory = copy;
  pthread_mutex_unlock(&x->lock);
}

bool ext_view_cached(struct vg_ext *x, const char *name, json_object *node_obj) {
  const char *inv = inventory_text(node_obj);
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  pthread_mutex_lock(&x->lock);
  struct node_entry *e = ext_find_entry(x, name);
  bool hit = e && fresh_at(x, e, &now, node_obj != NULL, inv);
  pthread_mutex_unlock(&x->lock);
  return hit;
}

/* The view of node name as the store has it (read lock held), without the
 * pod exclude (or NULL); *inv: the inventory text it was built from. */
static enum ext_reason from_store(struct vg_ext *x, struct ext_store *store, const char *name,
                                  json_object *node_obj, const char *exclude, struct node_view *v,
                                  const char **inv, char *why, size_t len) {
  const char *base_why = NULL;
  enum ext_reason base_rc = EXT_R_NONE;
  const struct node_view *base = NULL;
  *inv = inventory_text(node_obj);
  bool found = node_obj || ext_store_node(store, name, inv, &base, &base_rc, &base_why);
  enum ext_reason rc = found ? EXT_R_NONE : EXT_R_NODE_GONE;
  if (!found)
    snprintf(why, len, "node not found");
  else if (!*inv) /* a foreign GPU node, or a node without GPUs of ours */
    rc = base_view(x, NULL, node_obj ? node_gpus(node_obj) : ext_store_gpu_alloc(store, name), v,
                   why, len);
  else if (node_obj || !base_why) /* the store parsed the inventory as the event came */
    rc = view_from_inventory(*inv, v, why, len);
  else if ((rc = base ? EXT_R_NONE : base_rc) != EXT_R_NONE)
    snprintf(why, len, "%s", base_why);
  else
    ext_view_copy(v, base);
  if (rc != 0) return rc;
  ext_store_cpu_mem(store, name, v);
  struct hold_ctx h = {x, name, v, exclude};
  ext_store_pods(store, name, hold_stored, &h);
  if (node_obj) set_allocatable(v, node_obj);
  return EXT_R_NONE;
}

enum ext_reason ext_bind_view(struct vg_ext *x, const char *name, const char *exclude,
                              struct node_view *v, char *why, size_t len) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  pthread_mutex_lock(&x->lock);
  struct node_entry *e = ext_find_entry(x, name);
  struct ext_store *store = store_for(x, e, &now);
  pthread_mutex_unlock(&x->lock);
  if (!store) return ext_node_view(x, name, NULL, EXT_FROM_API, v, why, len);
  const char *inv = NULL;
  v->n = 0;
  ext_store_read(store);
  enum ext_reason rc = from_store(x, store, name, NULL, exclude, v, &inv, why, len);
  ext_store_done(store);
  pthread_mutex_lock(&x->lock); /* the node's model and free shares, as any view read */
  if ((e = ext_find_entry(x, name)) != NULL) ext_gaps_note(x, e, v, rc == 0);
  pthread_mutex_unlock(&x->lock);
  return rc;
}

enum ext_reason ext_with_view(struct vg_ext *x, const char *name, json_object *node_obj,
                              const struct ext_batch *batch, enum ext_fresh fresh, ext_view_fn use,
                              void *ctx, char *why, size_t len) {
  if (batch && !batch->ok) batch = NULL;
  struct node_entry *e = ext_entry(x, name);
  if (!e) {
    snprintf(why, len, "out of memory");
    return EXT_R_OTHER;
  }
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  enum ext_reason rc;
  unsigned gen = 0;
  struct ext_store *store = NULL;
  bool hit = cached(x, e, &now, node_obj != NULL, inventory_text(node_obj),
                    fresh == EXT_CACHED ? use : NULL, ctx, why, len, &rc, &gen, &store);
  if (hit) return rc;
  struct node_view v;
  v.n = 0; /* every path below leaves a valid (maybe empty) view to cache */
  v.foreign = false;
  if (store && fresh != EXT_FROM_API) { /* no API request: a list as of the last event */
    ext_store_read(store);
    const char *inv = NULL;
    rc = from_store(x, store, name, node_obj, NULL, &v, &inv, why, len);
    store_view(x, e, &now, gen, NULL, rc, inv, &v, why);
    ext_store_done(store);
    if (rc == 0) use(ctx, &v);
    return rc;
  }
  json_object *fetched = NULL;
  if (!node_obj && batch) {
    node_obj = ext_batch_node(batch, name);
    if (!node_obj) {
      snprintf(why, len, "node not found");
      store_view(x, e, &now, gen, batch, EXT_R_NODE_GONE, NULL, &v, why);
      return EXT_R_NODE_GONE;
    }
  } else if (!node_obj) {
    struct vg_err err = {{0}};
    int k = vg_k8s_get_node(x->client, name, &fetched, &err);
    if (k != 0) { /* the API server answered something else, or nothing */
      snprintf(why, len, "%s", k == VG_K8S_ENOTFOUND ? "node not found" : err.msg);
      rc = k == VG_K8S_ENOTFOUND ? EXT_R_NODE_GONE : EXT_R_API;
      store_view(x, e, &now, gen, NULL, rc, NULL, &v, why);
      return rc;
    }
    node_obj = fetched;
  }
  rc = base_view(x, inventory_text(node_obj), node_gpus(node_obj), &v, why, len);
  if (rc == EXT_R_NONE) rc = subtract_pods(x, name, batch, &v, why, len);
  if (rc == 0) set_allocatable(&v, node_obj);
  store_view(x, e, &now, gen, batch, rc, inventory_text(node_obj), &v, why);
  json_object_put(fetched);
  if (rc == 0) use(ctx, &v);
  return rc;
}

static void copy_out(void *ctx, const struct node_view *v) { ext_view_copy(ctx, v); }

enum ext_reason ext_node_view(struct vg_ext *x, const char *name, json_object *node_obj,
                              enum ext_fresh fresh, struct node_view *v, char *why, size_t len) {
  v->n = 0;
  return ext_with_view(x, name, node_obj, NULL, fresh, copy_out, v, why, len);
}

static void drop(struct vg_ext *x, struct node_entry *e) {
  e->at = (struct timespec){0, 0};
  e->gen++;
  x->drops++;
}

void ext_invalidate(struct vg_ext *x, const char *name) {
  struct node_entry *e = ext_entry(x, name);
  if (!e) return;
  pthread_mutex_lock(&x->lock);
  drop(x, e);
  pthread_mutex_unlock(&x->lock);
}

void ext_invalidate_known(struct vg_ext *x, const char *name) {
  pthread_mutex_lock(&x->lock);
  struct node_entry *e = ext_find_entry(x, name);
  if (e) drop(x, e);
  pthread_mutex_unlock(&x->lock);
}

void ext_invalidate_all(struct vg_ext *x) {
  pthread_mutex_lock(&x->lock);
  for (struct node_entry *e = x->nodes; e; e = e->next) drop(x, e);
  pthread_mutex_unlock(&x->lock);
}

bool ext_note_bad_pod(struct vg_ext *x, const char *key) {
  pthread_mutex_lock(&x->lock);
  bool first = ext_index_get(&x->bad_pods, key) < 0;
  if (first) {
    x->m.bad_assignments++;
    char *copy = x->nbad_pods < EXT_BAD_PODS_MAX ? strdup(key) : NULL;
    if (copy && (x->bad_pods.keys || ext_index_init(&x->bad_pods, EXT_BAD_PODS_MAX) == 0)) {
      ext_index_put(&x->bad_pods, copy, 1);
      x->nbad_pods++;
    } else {
      free(copy);
    }
  }
  pthread_mutex_unlock(&x->lock);
  return first;
}

void ext_forget_bad_pods(struct vg_ext *x) {
  for (size_t i = 0; x->bad_pods.keys && i <= x->bad_pods.mask; i++)
    free((char *)x->bad_pods.keys[i]);
  ext_index_free(&x->bad_pods);
  x->nbad_pods = 0;
}

struct ext_pending {
  char pod[EXT_POD_KEY_MAX]; /* "ns/name" */
  struct node_entry *e;
  struct timespec until;
  /* The Pod as we bound it, put in the store at once (owned); NULL: not
   * in the store, so e's views are read from the API until it arrives. */
  json_object *obj;
};

static void pending_del(struct vg_ext *x, int i) {
  if (x->pending[i].obj)
    json_object_put(x->pending[i].obj);
  else
    x->pending[i].e->pending--;
  x->pending[i] = x->pending[--x->npending];
}

/* Room for one more entry, after dropping the expired ones. Lock held. */
static bool pending_room(struct vg_ext *x, const struct timespec *now) {
  for (int i = x->npending; i-- > 0;)
    if (elapsed_ms(now, &x->pending[i].until) <= 0) pending_del(x, i); /* waited long enough */
  if (x->npending == x->cap_pending) {
    int cap = x->cap_pending ? 2 * x->cap_pending : 16;
    struct ext_pending *p = realloc(x->pending, (size_t)cap * sizeof(*p));
    if (p) x->pending = p, x->cap_pending = cap;
  }
  return x->npending < x->cap_pending;
}

void ext_pending_add(struct vg_ext *x, struct node_entry *e, const char *pod, json_object *obj) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  pthread_mutex_lock(&x->lock);
  if (x->watch != NULL) { /* without a watch nothing would clear it, nor is the store used */
    struct timespec until = {now.tv_sec + EXT_PENDING_MS / 1000, now.tv_nsec};
    if (pending_room(x, &now)) {
      struct ext_pending *p = &x->pending[x->npending++];
      snprintf(p->pod, sizeof(p->pod), "%s", pod);
      p->e = e;
      p->until = until;
      p->obj = obj ? json_object_get(obj) : NULL;
    }
    if (!obj || x->pending[x->npending - 1].obj != obj) { /* not in the store, or no room */
      e->pending++;
      e->pending_until = until;
    }
  }
  pthread_mutex_unlock(&x->lock);
}

void ext_pending_seen(struct vg_ext *x, const char *pod, const char *node) {
  pthread_mutex_lock(&x->lock);
  for (int i = x->npending; i-- > 0;)
    if (strcmp(x->pending[i].pod, pod) == 0 && strcmp(x->pending[i].e->name, node) == 0)
      pending_del(x, i);
  pthread_mutex_unlock(&x->lock);
}

void ext_pending_reapply(struct vg_ext *x, struct ext_store *store) {
  pthread_mutex_lock(&x->lock);
  int n = 0;
  json_object **objs = malloc(((size_t)x->npending + 1) * sizeof(*objs));
  for (int i = 0; objs && i < x->npending; i++)
    if (x->pending[i].obj) objs[n++] = json_object_get(x->pending[i].obj);
  pthread_mutex_unlock(&x->lock);
  for (int i = 0; i < n; i++) {
    char changed[2][VG_SCHED_NAME_MAX * 2];
    ext_store_apply(store, true, false, objs[i], changed);
    json_object_put(objs[i]);
  }
  free(objs);
}

void ext_pending_free(struct vg_ext *x) {
  while (x->npending > 0) pending_del(x, x->npending - 1);
  free(x->pending);
  x->pending = NULL;
  x->cap_pending = 0;
}

struct node_view *ext_base_view(const char *inventory, enum ext_reason *rc, char *why, size_t len) {
  struct node_view *v = malloc(sizeof(*v));
  *rc = EXT_R_OTHER;
  if (!v) {
    snprintf(why, len, "out of memory");
    return NULL;
  }
  if ((*rc = view_from_inventory(inventory, v, why, len)) != EXT_R_NONE) {
    free(v);
    return NULL;
  }
  /* Most nodes have far fewer GPUs than VG_SCHED_MAX_GPUS: keep what it has. */
  size_t used = offsetof(struct node_view, g) + (size_t)v->n * sizeof(v->g[0]);
  struct node_view *small = realloc(v, used ? used : 1);
  return small ? small : v;
}
