/*
 * extender_store.c -- the cluster as the watches deliver it: every Node's
 * inventory annotation and every bound Pod that may hold GPUs, kept from one
 * list plus the events after it (what an informer keeps in Go).
 *
 * Issue 27: at --cache-ttl-ms 0 every /filter listed the cluster: 7.4 MB of
 * Nodes for 5,000 nodes, ~170 ms for the API server to serve and most of the
 * rest of half a second for json-c to parse, per request. A view built from
 * this store is what a list would give as of the last event the watches
 * delivered, so while both watches are synced a filter needs no API request
 * at all (extender_view.c says when views come from here, docs/scheduler.md
 * "Freshness" what that promises).
 *
 * Only what a view is built from is kept: a Node's inventory text and
 * allocatable CPU, memory and nvidia.com/gpu; of each Pod that is bound and
 * not finished, its CPU, memory and nvidia.com/gpu requests, and the Pod
 * itself only when it carries vgpu.io/assigned or requests nvidia.com/gpu
 * (any other Pod holds no GPU, see hold_pod in extender_view.c; the
 * nvidia.com/gpu counts serve foreign GPU nodes, extender_foreign.c, and
 * keeping those Pods lets a reservation there be dropped like any other). So a Node's status
 * heartbeat, or an event about a Pod without GPUs whose node and requests stay the same, changes
 * nothing here and drops no view.
 *
 * Locking: a read-write lock of its own. The watch threads write; the filter
 * threads read while they build a view, and may take x->lock meanwhile
 * (ext_note_bad_pod); nobody takes this lock while holding x->lock.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "extender_int.h"
#include "log.h"
#include "requests.h"

struct sent { /* a hash map entry, the first member of snode and spod */
  struct sent *hnext;
  char *key;
  uint32_t h;
};

struct smap { /* chained, doubled when fuller than one entry per bucket */
  struct sent **b;
  size_t mask, n;
};

struct spod;

struct snode {
  struct sent e;   /* key: the node's name */
  char *inventory; /* its vgpu.io/gpu-inventory, or NULL */
  /* The view parsed from it when it came (json-c parsing every inventory
   * of 5,000 nodes was most of a cold filter), or NULL with why. */
  struct node_view *base;
  char *why;
  enum ext_reason why_rc; /* the class of why */
  bool present;           /* the Node exists (else kept only for pods bound to it) */
  bool has_alloc;
  struct vg_cpu_mem alloc; /* status.allocatable, when has_alloc */
  struct vg_cpu_mem req;   /* the sum of its pods' requests */
  int64_t gpu_alloc;       /* allocatable nvidia.com/gpu, -1: not named */
  int64_t gpu_req;         /* the sum of its pods' nvidia.com/gpu requests */
  struct spod *pods;
};

struct spod {
  struct sent e;         /* key: "namespace/name" */
  struct snode *on;      /* the node it is bound to */
  struct vg_cpu_mem req; /* its CPU and memory requests */
  int64_t gpus;          /* its nvidia.com/gpu request */
  json_object *obj;      /* the Pod (owned) when it carries vgpu.io/assigned or gpus > 0 */
  int has;               /* its vgpu.io/assigned, parsed when it came: vg_assign_from_pod's */
  struct vg_assignment a;
  char *error; /* has < 0: why */
  struct spod *prev, *next;
};

struct ext_store {
  pthread_rwlock_t lock;
  struct smap nodes, pods;
};

static int smap_init(struct smap *m) {
  m->mask = 1023;
  m->n = 0;
  m->b = calloc(m->mask + 1, sizeof(*m->b));
  return m->b ? 0 : -1;
}

static struct sent *smap_get(const struct smap *m, const char *key) {
  uint32_t h = ext_hash(key);
  for (struct sent *e = m->b[h & m->mask]; e; e = e->hnext)
    if (e->h == h && strcmp(e->key, key) == 0) return e;
  return NULL;
}

/* Adds e (key set, not in m); growing is skipped when out of memory (the
 * chains just get longer). */
static void smap_add(struct smap *m, struct sent *e) {
  if (m->n > m->mask) {
    size_t mask = m->mask * 2 + 1;
    struct sent **b = calloc(mask + 1, sizeof(*b));
    for (size_t i = 0; b && i <= m->mask; i++)
      for (struct sent *x = m->b[i], *next; x; x = next) {
        next = x->hnext;
        x->hnext = b[x->h & mask];
        b[x->h & mask] = x;
      }
    if (b) {
      free(m->b);
      m->b = b;
      m->mask = mask;
    }
  }
  e->h = ext_hash(e->key);
  e->hnext = m->b[e->h & m->mask];
  m->b[e->h & m->mask] = e;
  m->n++;
}

static void smap_del(struct smap *m, struct sent *e) {
  for (struct sent **p = &m->b[e->h & m->mask]; *p; p = &(*p)->hnext)
    if (*p == e) {
      *p = e->hnext;
      m->n--;
      return;
    }
}

struct ext_store *ext_store_new(void) {
  struct ext_store *s = calloc(1, sizeof(*s));
  if (!s) return NULL;
  if (smap_init(&s->nodes) != 0 || smap_init(&s->pods) != 0) {
    free(s->nodes.b);
    free(s->pods.b);
    free(s);
    return NULL;
  }
  pthread_rwlock_init(&s->lock, NULL);
  return s;
}

static void forget_inventory(struct snode *n) {
  free(n->inventory);
  free(n->base);
  free(n->why);
  n->inventory = n->why = NULL;
  n->base = NULL;
}

static void free_node(struct snode *n) {
  forget_inventory(n);
  free(n->e.key);
  free(n);
}

/* A node entry nothing refers to any more goes. */
static void gc_node(struct ext_store *s, struct snode *n) {
  if (n->present || n->pods) return;
  smap_del(&s->nodes, &n->e);
  free_node(n);
}

static struct snode *node_get(struct ext_store *s, const char *name, bool create) {
  struct snode *n = (struct snode *)smap_get(&s->nodes, name);
  if (n || !create) return n;
  n = calloc(1, sizeof(*n));
  if (n && !(n->e.key = strdup(name))) {
    free(n);
    n = NULL;
  }
  if (n) n->gpu_alloc = -1;
  if (n) smap_add(&s->nodes, &n->e);
  return n;
}

static void pod_del(struct ext_store *s, struct spod *p) {
  if (p->prev)
    p->prev->next = p->next;
  else
    p->on->pods = p->next;
  if (p->next) p->next->prev = p->prev;
  p->on->req.cpu -= p->req.cpu;
  p->on->req.mem -= p->req.mem;
  p->on->gpu_req -= p->gpus;
  smap_del(&s->pods, &p->e);
  gc_node(s, p->on);
  json_object_put(p->obj);
  if (p->has > 0) vg_assign_free(&p->a);
  free(p->error);
  free(p->e.key);
  free(p);
}

void ext_store_free(struct ext_store *s) {
  if (!s) return;
  for (size_t i = 0; i <= s->pods.mask; i++)
    while (s->pods.b[i]) pod_del(s, (struct spod *)s->pods.b[i]);
  for (size_t i = 0; i <= s->nodes.mask; i++)
    for (struct sent *e = s->nodes.b[i], *next; e; e = next) {
      next = e->hnext;
      free_node((struct snode *)e);
    }
  free(s->nodes.b);
  free(s->pods.b);
  pthread_rwlock_destroy(&s->lock);
  free(s);
}

bool ext_pod_key(json_object *pod, char *key, size_t len) {
  json_object *meta = ext_get(pod, "metadata");
  const char *ns = ext_get_str(meta, "namespace"), *name = ext_get_str(meta, "name");
  if (!name) return false;
  snprintf(key, len, "%s/%s", ns ? ns : "", name);
  return true;
}

/* The node a pod's requests count on, or NULL when it holds nothing
 * anywhere (the same rules as hold_pod in extender_view.c). */
static const char *holding_node(json_object *pod) {
  const char *node = ext_get_str(ext_get(pod, "spec"), "nodeName");
  const char *phase = ext_get_str(ext_get(pod, "status"), "phase");
  if (!node || !node[0]) return NULL;
  if (phase && (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0)) return NULL;
  return node;
}

/* Does the pod hold GPUs? vgpu.io/assigned present in any form: an
 * unreadable one still counts (hold_unreadable in extender_view.c). */
static bool holds_gpus(json_object *pod) {
  return ext_get(ext_get(ext_get(pod, "metadata"), "annotations"), VG_ANN_ASSIGNED) != NULL;
}

/* The pod's CPU and memory requests, and its nvidia.com/gpu in *gpus; one
 * that cannot be read (the API server validates them) counts nothing and
 * is logged. */
static struct vg_cpu_mem requests_of(json_object *pod, const char *key, int64_t *gpus) {
  struct vg_cpu_mem r = {0, 0};
  struct vg_err err = {{0}};
  if (vg_pod_requests(pod, &r, &err) != 0) {
    vg_warn("watch store: pod %s: CPU and memory requests not counted: %s", key, err.msg);
    r.cpu = r.mem = 0;
  }
  if (vg_pod_request_count(pod, EXT_FOREIGN_RESOURCE, gpus, &err) != 0) {
    vg_warn("watch store: pod %s: %s request not counted: %s", key, EXT_FOREIGN_RESOURCE, err.msg);
    *gpus = 0;
  }
  return r;
}

/* pod as it is now (gone when deleted). Write lock held. The nodes whose
 * views change are copied to changed[0..1] ("" when none); true when
 * anything changed. */
static bool put_pod(struct ext_store *s, json_object *pod, bool deleted,
                    char changed[2][VG_SCHED_NAME_MAX * 2]) {
  char key[EXT_POD_KEY_MAX];
  changed[0][0] = changed[1][0] = '\0';
  if (!ext_pod_key(pod, key, sizeof(key))) return false;
  struct spod *p = (struct spod *)smap_get(&s->pods, key);
  const char *node = deleted ? NULL : holding_node(pod);
  /* A pod the store holds as bound that an event shows unbound: the event
   * is older than what we put here ourselves (a reservation or our own
   * bind, extender_reserve.c): spec.nodeName never goes back once set.
   * Deletion and finishing still remove it. */
  const char *bound_to = ext_get_str(ext_get(pod, "spec"), "nodeName");
  if (p && !deleted && (!bound_to || !bound_to[0])) return false;
  if (p && node && !p->obj && !holds_gpus(pod) && strcmp(p->on->e.key, node) == 0) {
    int64_t gpus;
    struct vg_cpu_mem r = requests_of(pod, key, &gpus); /* a status update, most likely */
    if (r.cpu == p->req.cpu && r.mem == p->req.mem && gpus == p->gpus) return false;
  }
  if (p) {
    snprintf(changed[0], sizeof(changed[0]), "%s", p->on->e.key);
    pod_del(s, p);
  }
  if (!node) return changed[0][0] != '\0';
  struct snode *n = node_get(s, node, true);
  p = n ? calloc(1, sizeof(*p)) : NULL;
  if (p && !(p->e.key = strdup(key))) {
    free(p);
    p = NULL;
  }
  if (!p) { /* out of memory: the store is incomplete; say so loudly, once per pod */
    vg_error("watch store: out of memory keeping pod %s; node %s may look emptier than it is", key,
             node);
    if (n) gc_node(s, n);
    return true;
  }
  p->req = requests_of(pod, key, &p->gpus);
  n->req.cpu += p->req.cpu;
  n->req.mem += p->req.mem;
  n->gpu_req += p->gpus;
  if (holds_gpus(pod) || p->gpus > 0) p->obj = json_object_get(pod);
  if (holds_gpus(pod)) {
    struct vg_err err = {{0}};
    p->has = vg_assign_from_pod(pod, &p->a, &err);
    p->error = p->has < 0 ? strdup(err.msg) : NULL;
  }
  p->on = n;
  p->next = n->pods;
  if (n->pods) n->pods->prev = p;
  n->pods = p;
  smap_add(&s->pods, &p->e);
  snprintf(changed[1], sizeof(changed[1]), "%s", node);
  return true;
}

/* node as it is now (deleted: gone). Write lock held. True when its
 * inventory or existence changed. */
static bool put_node(struct ext_store *s, json_object *node, bool deleted) {
  const char *name = ext_get_str(ext_get(node, "metadata"), "name");
  if (!name) return false;
  const char *inv =
      ext_get_str(ext_get(ext_get(node, "metadata"), "annotations"), VG_ANN_INVENTORY);
  struct snode *n = node_get(s, name, !deleted);
  if (!n) return !deleted; /* out of memory: the node reads as not found */
  bool same_inv =
      inv == NULL ? n->inventory == NULL : n->inventory != NULL && strcmp(inv, n->inventory) == 0;
  struct vg_cpu_mem alloc = {0, 0};
  struct vg_err err = {{0}};
  int has_alloc = deleted ? 0 : vg_node_allocatable(node, &alloc, &err);
  if (has_alloc < 0) vg_warn("watch store: node %s: allocatable not read: %s", name, err.msg);
  has_alloc = has_alloc > 0;
  int64_t gpus = -1;
  int k = deleted ? 0 : vg_node_allocatable_count(node, EXT_FOREIGN_RESOURCE, &gpus, &err);
  if (k < 0)
    vg_warn("watch store: node %s: allocatable %s not read: %s", name, EXT_FOREIGN_RESOURCE,
            err.msg);
  if (k <= 0) gpus = -1; /* not named (or not readable): not a foreign GPU node */
  bool same_alloc = (bool)has_alloc == n->has_alloc && gpus == n->gpu_alloc &&
                    (!has_alloc || (alloc.cpu == n->alloc.cpu && alloc.mem == n->alloc.mem));
  if (n->present == !deleted && (deleted || (same_inv && same_alloc)))
    return false; /* a heartbeat, say */
  n->has_alloc = has_alloc;
  n->alloc = alloc;
  n->gpu_alloc = gpus;
  forget_inventory(n);
  n->present = !deleted;
  if (!deleted && inv && !(n->inventory = strdup(inv)))
    vg_error("watch store: out of memory keeping node %s's inventory", name);
  if (!deleted) { /* parse failures are kept to be answered; out of memory: parsed per view */
    char why[256];
    n->base = ext_base_view(n->inventory, &n->why_rc, why, sizeof(why));
    n->why = n->base ? NULL : strdup(why);
  }
  gc_node(s, n);
  return true;
}

int ext_store_reset(struct ext_store *s, bool pods, json_object *list) {
  json_object *items = ext_get(list, "items");
  size_t n =
      items && json_object_is_type(items, json_type_array) ? json_object_array_length(items) : 0;
  char changed[2][VG_SCHED_NAME_MAX * 2];
  pthread_rwlock_wrlock(&s->lock);
  if (pods) {
    for (size_t i = 0; i <= s->pods.mask; i++)
      while (s->pods.b[i]) pod_del(s, (struct spod *)s->pods.b[i]);
    for (size_t i = 0; i < n; i++) put_pod(s, json_object_array_get_idx(items, i), false, changed);
  } else {
    /* Every node absent, then the listed ones present: those not listed go. */
    for (size_t i = 0; i <= s->nodes.mask; i++)
      for (struct sent *e = s->nodes.b[i], *next; e; e = next) {
        next = e->hnext;
        struct snode *sn = (struct snode *)e;
        forget_inventory(sn);
        sn->present = false;
        gc_node(s, sn);
      }
    for (size_t i = 0; i < n; i++) put_node(s, json_object_array_get_idx(items, i), false);
  }
  pthread_rwlock_unlock(&s->lock);
  return (int)n;
}

bool ext_store_apply(struct ext_store *s, bool pod, bool deleted, json_object *obj,
                     char changed[2][VG_SCHED_NAME_MAX * 2]) {
  pthread_rwlock_wrlock(&s->lock);
  bool any;
  if (pod) {
    any = put_pod(s, obj, deleted, changed);
  } else {
    any = put_node(s, obj, deleted);
    const char *name = ext_get_str(ext_get(obj, "metadata"), "name");
    snprintf(changed[0], sizeof(changed[0]), "%s", any && name ? name : "");
    changed[1][0] = '\0';
  }
  pthread_rwlock_unlock(&s->lock);
  return any;
}

bool ext_store_drop_if(struct ext_store *s, json_object *obj) {
  char key[EXT_POD_KEY_MAX];
  if (!ext_pod_key(obj, key, sizeof(key))) return false;
  pthread_rwlock_wrlock(&s->lock);
  struct spod *p = (struct spod *)smap_get(&s->pods, key);
  bool drop = p && p->obj == obj;
  if (drop) pod_del(s, p);
  pthread_rwlock_unlock(&s->lock);
  return drop;
}

void ext_store_read(struct ext_store *s) { pthread_rwlock_rdlock(&s->lock); }
void ext_store_done(struct ext_store *s) { pthread_rwlock_unlock(&s->lock); }

bool ext_store_node(struct ext_store *s, const char *name, const char **inventory,
                    const struct node_view **base, enum ext_reason *rc, const char **why) {
  const struct snode *n = (const struct snode *)smap_get(&s->nodes, name);
  *inventory = n ? n->inventory : NULL;
  *base = n ? n->base : NULL;
  *why = n && n->base ? "" : n ? n->why : NULL;
  *rc = n && !n->base ? n->why_rc : EXT_R_NONE;
  return n && n->present;
}

void ext_store_pods(struct ext_store *s, const char *name, ext_store_pod_fn fn, void *ctx) {
  const struct snode *n = (const struct snode *)smap_get(&s->nodes, name);
  for (const struct spod *p = n ? n->pods : NULL; p; p = p->next)
    if (p->obj) fn(ctx, p->obj, p->has, &p->a, p->error ? p->error : "");
}

void ext_store_cpu_mem(struct ext_store *s, const char *name, struct node_view *v) {
  const struct snode *n = (const struct snode *)smap_get(&s->nodes, name);
  if (!n) return;
  if (n->has_alloc) v->cpu_alloc = n->alloc.cpu, v->mem_alloc = n->alloc.mem;
  v->cpu_req = n->req.cpu;
  v->mem_req = n->req.mem;
  v->gpu_req = n->gpu_req;
}

int64_t ext_store_gpu_alloc(struct ext_store *s, const char *name) {
  const struct snode *n = (const struct snode *)smap_get(&s->nodes, name);
  return n && n->present ? n->gpu_alloc : -1;
}

size_t ext_store_names(struct ext_store *s, char ***names) {
  pthread_rwlock_rdlock(&s->lock);
  *names = calloc(s->nodes.n + 1, sizeof(char *));
  size_t k = 0;
  for (size_t i = 0; *names && i <= s->nodes.mask; i++)
    for (struct sent *e = s->nodes.b[i]; e; e = e->hnext)
      if (((struct snode *)e)->present && ((*names)[k] = strdup(e->key))) k++;
  pthread_rwlock_unlock(&s->lock);
  return k;
}
