/* agent.c -- see agent.h. */
#include "agent.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "binder.h"
#include "health.h"
#include "inventory.h"
#include "k8s.h"
#include "steer.h"

struct vg_agent {
  struct vg_plugin *plugin;
  const struct vg_plugin_config *cfg;
  pthread_mutex_t lock; /* guards gpus[] */
  struct vg_gpu gpus[VG_MAX_GPUS];
  unsigned ngpus;
  char node[256];
  struct vg_k8s_config kcfg;
  struct vg_k8s_client *k8s;
  struct vg_binder *binder;
  struct vg_health *health;
  struct vg_inventory *inventory;
  struct vg_steer *steer;
};

/* Lock held. Hands the current GPU list to the inventory publisher. */
static void publish_inventory(struct vg_agent *a) {
  if (a->inventory == NULL) return;
  json_object *doc = vg_inventory_build(a->cfg, a->node, a->gpus, a->ngpus, NULL, 0);
  if (doc != NULL) vg_inventory_set(a->inventory, doc);
}

/* Health changed: the kubelet gets a new ListAndWatch snapshot and the
 * scheduler a new inventory. Runs on the health thread. */
static void on_health(const struct vg_gpu_health *states, unsigned n, void *arg) {
  struct vg_agent *a = arg;
  struct vg_gpu copy[VG_MAX_GPUS];
  pthread_mutex_lock(&a->lock);
  for (unsigned i = 0; i < a->ngpus; i++)
    for (unsigned j = 0; j < n; j++)
      if (strcmp(a->gpus[i].uuid, states[j].uuid) == 0) a->gpus[i].healthy = states[j].healthy;
  memcpy(copy, a->gpus, a->ngpus * sizeof(copy[0]));
  unsigned ngpus = a->ngpus;
  publish_inventory(a);
  pthread_mutex_unlock(&a->lock);
  for (unsigned j = 0; j < n; j++)
    if (!states[j].healthy)
      vg_plog("GPU %s is Unhealthy (%s)", states[j].uuid, states[j].lost ? "lost" : "critical XID");
  vg_plugin_set_gpus(a->plugin, copy, ngpus);
}

static void start_k8s(struct vg_agent *a, const struct vg_agent_opts *o) {
  struct vg_err err;
  if (vg_k8s_config_load(&a->kcfg, o->kubeconfig, &err) != 0) {
    vg_plog(
        "Kubernetes API: %s; the Node inventory is not published and pod limits cannot be "
        "bound (such containers fail closed)",
        err.msg);
    return;
  }
  a->k8s = vg_k8s_client_new(&a->kcfg, &err);
  if (a->k8s == NULL) vg_plog("Kubernetes API: %s", err.msg);
}

static void start_binder(struct vg_agent *a, const struct vg_agent_opts *o) {
  if (!a->cfg->vgpu.enabled && !a->cfg->cce.enabled) return; /* nothing is bound late */
  struct vg_err err;
  a->binder = vg_binder_new(a->cfg, a->k8s, o->podresources_socket, o->state_dir, &err);
  if (a->binder == NULL) {
    vg_plog("binder: %s; vgpu/cce containers will fail closed", err.msg);
    return;
  }
  vg_binder_set_gpus(a->binder, a->gpus, a->ngpus);
  if (vg_binder_start(a->binder, &err) != 0) {
    vg_plog("binder: %s", err.msg);
    return;
  }
  vg_plugin_set_allocate_observer(a->plugin, vg_binder_wake_fn, a->binder);
}

static void start_inventory(struct vg_agent *a, const struct vg_agent_opts *o) {
  const char *node = o->node_name != NULL ? o->node_name : getenv("NODE_NAME");
  if (a->k8s == NULL) return;
  if (node == NULL || *node == '\0') {
    vg_plog("no --node-name (nor NODE_NAME): the Node inventory is not published");
    return;
  }
  snprintf(a->node, sizeof(a->node), "%s", node);
  a->inventory = vg_inventory_new(a->k8s, a->node, 0);
  if (a->inventory == NULL) return;
  pthread_mutex_lock(&a->lock);
  publish_inventory(a);
  pthread_mutex_unlock(&a->lock);
  vg_inventory_start(a->inventory);
}

/* GetPreferredAllocation follows the scheduler's assignment (steer.h). */
static void start_steer(struct vg_agent *a, const struct vg_agent_opts *o) {
  if (a->k8s == NULL || a->node[0] == '\0') return; /* said by start_k8s / start_inventory */
  struct vg_err err;
  a->steer = vg_steer_new(a->k8s, a->node, o->podresources_socket, a->plugin->debug, &err);
  if (a->steer == NULL) {
    vg_plog("%s; device choice ignores the scheduler's assignment", err.msg);
    return;
  }
  vg_plugin_set_preference_source(a->plugin, vg_steer_prefer_fn, a->steer);
}

static void start_health(struct vg_agent *a) {
  char err[256];
  a->health = vg_health_new(a->gpus, a->ngpus, NULL, on_health, a, err, sizeof(err));
  if (a->health == NULL || vg_health_start(a->health) != 0)
    vg_plog("health checks: %s; every GPU stays Healthy", a->health == NULL ? err : "no thread");
}

struct vg_agent *vg_agent_start(struct vg_plugin *plugin, const struct vg_plugin_config *cfg,
                                const struct vg_gpu *gpus, unsigned ngpus,
                                const struct vg_agent_opts *opts) {
  struct vg_agent *a = calloc(1, sizeof(*a));
  if (a == NULL) return NULL;
  a->plugin = plugin;
  a->cfg = cfg;
  pthread_mutex_init(&a->lock, NULL);
  a->ngpus = ngpus > VG_MAX_GPUS ? VG_MAX_GPUS : ngpus;
  memcpy(a->gpus, gpus, a->ngpus * sizeof(a->gpus[0]));
  start_k8s(a, opts);
  start_binder(a, opts);
  start_inventory(a, opts);
  start_steer(a, opts);
  start_health(a);
  return a;
}

void vg_agent_stop(struct vg_agent *a) {
  if (a == NULL) return;
  if (a->steer != NULL) vg_plugin_set_preference_source(a->plugin, NULL, NULL);
  vg_steer_free(a->steer);
  if (a->health != NULL) vg_health_free(a->health);
  if (a->binder != NULL) vg_binder_stop(a->binder);
  if (a->inventory != NULL) vg_inventory_free(a->inventory);
  if (a->k8s != NULL) vg_k8s_client_free(a->k8s);
  vg_k8s_config_free(&a->kcfg);
  pthread_mutex_destroy(&a->lock);
  free(a);
}
