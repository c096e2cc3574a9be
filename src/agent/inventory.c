/* inventory.c -- see inventory.h; the schema is in docs/inventory.md. */
#include "inventory.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "deadline.h"
#include "advertise.h"
#include "log.h"

/* One resource r of GPU g, as the inventory describes it. */
static void fill_resource(const struct vg_plugin_config *cfg, const struct vg_gpu *g,
                          const struct vg_advertised *a, struct vg_inv_resource *r) {
  snprintf(r->name, sizeof(r->name), "%s", a->name);
  snprintf(r->dialect, sizeof(r->dialect), "%s", vg_dialect_name(a->dialect));
  r->count = (int64_t)a->ids;
  /* Bytes one device ID stands for (0: the IDs carry no memory). */
  struct vg_container_limits lim;
  struct vg_err err;
  if (a->ids > 0 && vg_dialect_container_limits(cfg, a->name, 1, g->memory, &lim, &err) == 0 &&
      !lim.unlimited)
    r->unit = (int64_t)lim.memory_per_id;
  if (a->dialect == VG_DIALECT_VGPU) {
    r->memory = (int64_t)vg_dialect_vgpu_memory(cfg, g->memory);
    r->cores = vg_dialect_vgpu_cores(cfg);
  } else if (a->dialect == VG_DIALECT_CCE) {
    r->max_vgpus = cfg->cce.max_vgpus_per_gpu;
  }
}

/* GPU g's health and its reason from the checker's states (by UUID). */
static void fill_health(const struct vg_gpu *g, const struct vg_gpu_health *health,
                        unsigned n_health, struct vg_inv_gpu *o) {
  o->healthy = g->healthy;
  for (unsigned k = 0; health != NULL && k < n_health; k++) {
    if (strcmp(health[k].uuid, g->uuid) != 0) continue;
    o->healthy = health[k].healthy;
    if (health[k].lost)
      snprintf(o->reason, sizeof(o->reason), "lost");
    else if (health[k].xid != 0)
      snprintf(o->reason, sizeof(o->reason), "xid %u", health[k].xid);
  }
}

static int fill_gpu(const struct vg_plugin_config *cfg, const struct vg_gpu *g,
                    const struct vg_gpu_health *health, unsigned n_health, struct vg_inv_gpu *o,
                    struct vg_err *err) {
  o->index = g->index;
  snprintf(o->uuid, sizeof(o->uuid), "%s", g->uuid);
  snprintf(o->type, sizeof(o->type), "%s", g->name);
  o->memory = (int64_t)g->memory;
  o->numa = g->numa_node >= 0 ? g->numa_node : -1;
  fill_health(g, health, n_health, o);
  struct vg_advertised adv[VG_ADVERTISED_MAX];
  int na = vg_dialect_advertise(cfg, g->memory, g->index, adv);
  for (int k = 0; k < na; k++) {
    struct vg_inv_resource *r = vg_inv_add_resource(o);
    if (r == NULL)
      return vg_err_set(err, "GPU %s: more than %d resources", g->uuid, VG_INV_MAX_RES);
    fill_resource(cfg, g, &adv[k], r);
  }
  return 0;
}

json_object *vg_inventory_build(const struct vg_plugin_config *cfg, const char *node,
                                const struct vg_gpu *gpus, unsigned n,
                                const struct vg_gpu_health *health, unsigned n_health) {
  struct vg_inv inv = {.context_reserve = (int64_t)cfg->context_reserve};
  struct vg_err err = {""};
  snprintf(inv.node, sizeof(inv.node), "%s", node ? node : "");
  int rc = 0;
  for (unsigned i = 0; rc == 0 && i < n; i++) {
    struct vg_inv_gpu *o = vg_inv_add_gpu(&inv);
    rc = o == NULL ? vg_err_set(&err, "more than %d GPUs, or out of memory", VG_INV_MAX_GPUS)
                   : fill_gpu(cfg, &gpus[i], health, n_health, o, &err);
  }
  json_object *doc = rc == 0 ? vg_inv_to_json(&inv, &err) : NULL;
  if (doc == NULL) vg_error("GPU inventory not published: %s", err.msg);
  vg_inv_free(&inv);
  return doc;
}

/* ---- publisher ---- */

struct vg_inventory {
  struct vg_k8s_client *client;
  char *node;
  unsigned retry_ms;

  pthread_mutex_t publish_lock; /* one publish at a time */
  pthread_mutex_t lock;         /* everything below */
  pthread_cond_t cond;
  char *desired;   /* serialized latest document */
  char *published; /* what the Node is known to carry */
  bool failing;
  unsigned long failures;
  unsigned long patches;
  bool stop;
  bool running;
  pthread_t thread;
};

struct vg_inventory *vg_inventory_new(struct vg_k8s_client *client, const char *node,
                                      unsigned retry_ms) {
  struct vg_inventory *inv = calloc(1, sizeof(*inv));
  if (inv == NULL) return NULL;
  inv->client = client;
  inv->node = strdup(node);
  inv->retry_ms = retry_ms ? retry_ms : 5000;
  pthread_mutex_init(&inv->publish_lock, NULL);
  pthread_mutex_init(&inv->lock, NULL);
  pthread_cond_init(&inv->cond, NULL);
  return inv;
}

void vg_inventory_set(struct vg_inventory *inv, json_object *doc) {
  char *s = strdup(json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PLAIN));
  json_object_put(doc);
  pthread_mutex_lock(&inv->lock);
  free(inv->desired);
  inv->desired = s;
  pthread_cond_broadcast(&inv->cond);
  pthread_mutex_unlock(&inv->lock);
}

struct update_arg {
  const char *want;
  bool patched; /* the last call asked for a PATCH */
};

static int update_fn(json_object *current, json_object **annotations, void *arg,
                     struct vg_err *err) {
  (void)err;
  struct update_arg *u = arg;
  u->patched = false;
  json_object *meta, *ann, *val;
  if (json_object_object_get_ex(current, "metadata", &meta) &&
      json_object_object_get_ex(meta, "annotations", &ann) &&
      json_object_object_get_ex(ann, VG_INVENTORY_ANNOTATION, &val) &&
      json_object_is_type(val, json_type_string) &&
      strcmp(json_object_get_string(val), u->want) == 0)
    return 1; /* the Node already carries it */
  *annotations = json_object_new_object();
  json_object_object_add(*annotations, VG_INVENTORY_ANNOTATION, json_object_new_string(u->want));
  u->patched = true;
  return 0;
}

int vg_inventory_publish(struct vg_inventory *inv, struct vg_err *err) {
  pthread_mutex_lock(&inv->publish_lock);
  pthread_mutex_lock(&inv->lock);
  char *want = NULL;
  if (inv->desired != NULL && (inv->published == NULL || strcmp(inv->desired, inv->published) != 0))
    want = strdup(inv->desired);
  pthread_mutex_unlock(&inv->lock);
  int rc = 0;
  if (want != NULL) {
    struct update_arg u = {want, false};
    rc = vg_k8s_update_node_annotations(inv->client, inv->node, update_fn, &u, 5, err);
    pthread_mutex_lock(&inv->lock);
    if (rc == 0) {
      free(inv->published);
      inv->published = want;
      want = NULL;
      if (inv->failing)
        vg_info("GPU inventory published on node %s after %lu failed attempts", inv->node,
                inv->failures);
      else if (u.patched)
        vg_info("GPU inventory published on node %s", inv->node);
      if (u.patched) inv->patches++;
      inv->failing = false;
      inv->failures = 0;
    } else {
      if (!inv->failing)
        vg_warn("cannot publish the GPU inventory on node %s: %s (retrying every %u ms)", inv->node,
                err->msg, inv->retry_ms);
      inv->failing = true;
      inv->failures++;
    }
    pthread_mutex_unlock(&inv->lock);
    free(want);
  }
  pthread_mutex_unlock(&inv->publish_lock);
  return rc;
}

static void *run(void *arg) {
  struct vg_inventory *inv = arg;
  pthread_mutex_lock(&inv->lock);
  while (!inv->stop) {
    bool need = inv->desired != NULL &&
                (inv->published == NULL || strcmp(inv->desired, inv->published) != 0);
    if (!need) {
      pthread_cond_wait(&inv->cond, &inv->lock);
      continue;
    }
    pthread_mutex_unlock(&inv->lock);
    struct vg_err err;
    int rc = vg_inventory_publish(inv, &err);
    pthread_mutex_lock(&inv->lock);
    if (rc != 0 && !inv->stop) {
      struct timespec ts = vg_deadline_after(CLOCK_REALTIME, inv->retry_ms);
      pthread_cond_timedwait(&inv->cond, &inv->lock, &ts);
    }
  }
  pthread_mutex_unlock(&inv->lock);
  return NULL;
}

int vg_inventory_start(struct vg_inventory *inv) {
  if (inv->running) return 0;
  if (pthread_create(&inv->thread, NULL, run, inv) != 0) return -1;
  inv->running = true;
  return 0;
}

void vg_inventory_free(struct vg_inventory *inv) {
  if (inv == NULL) return;
  pthread_mutex_lock(&inv->lock);
  inv->stop = true;
  pthread_cond_broadcast(&inv->cond);
  pthread_mutex_unlock(&inv->lock);
  if (inv->running) pthread_join(inv->thread, NULL);
  pthread_cond_destroy(&inv->cond);
  pthread_mutex_destroy(&inv->lock);
  pthread_mutex_destroy(&inv->publish_lock);
  free(inv->desired);
  free(inv->published);
  free(inv->node);
  free(inv);
}

unsigned long vg_inventory_patches(struct vg_inventory *inv) {
  pthread_mutex_lock(&inv->lock);
  unsigned long n = inv->patches;
  pthread_mutex_unlock(&inv->lock);
  return n;
}

bool vg_inventory_current(struct vg_inventory *inv) {
  pthread_mutex_lock(&inv->lock);
  bool cur =
      inv->desired != NULL && inv->published != NULL && strcmp(inv->desired, inv->published) == 0;
  pthread_mutex_unlock(&inv->lock);
  return cur;
}
