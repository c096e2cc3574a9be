/* agent.c -- see agent.h. */
#include "agent.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit.h"
#include "binder.h"
#include "gate.h"
#include "health.h"
#include "inventory.h"
#include "k8s.h"
#include "log.h"
#include "metrics_http.h"
#include "podresources.h"
#include "slot_gc.h"
#include "steer.h"

struct vg_agent {
  struct vg_plugin *plugin;
  const struct vg_plugin_config *cfg;
  pthread_mutex_t lock; /* guards gpus[] and states[] */
  struct vg_gpu gpus[VG_MAX_GPUS];
  unsigned ngpus;
  /* The checker's latest states: why a GPU is Unhealthy (inventory `reason`). */
  struct vg_gpu_health states[VG_MAX_GPUS];
  unsigned nstates;
  char node[256];
  struct vg_k8s_config kcfg;
  struct vg_k8s_client *k8s;
  struct vg_binder *binder;
  struct vg_health *health;
  struct vg_inventory *inventory;
  struct vg_steer *steer;
  struct vg_gate *gate;
  struct vg_slot_gc *slot_gc;
  struct vg_audit *audit;
  char state_dir[VG_CONFIG_PATH_MAX];
  char podresources[1024];
  struct vg_metrics_sources metrics_src;
  struct vg_metrics_server *metrics;
};

/* Lock held. Hands the current GPU list, with each GPU's health and the
 * reason it is Unhealthy, to the inventory publisher. */
static void publish_inventory(struct vg_agent *a) {
  if (a->inventory == NULL) return;
  json_object *doc = vg_inventory_build(a->cfg, a->node, a->gpus, a->ngpus, a->states, a->nstates);
  if (doc != NULL) vg_inventory_set(a->inventory, doc);
}

/* Lock held. Keeps the checker's states and marks the GPU list with them. */
static void take_health(struct vg_agent *a, const struct vg_gpu_health *states, unsigned n) {
  a->nstates = n < VG_MAX_GPUS ? n : VG_MAX_GPUS;
  memcpy(a->states, states, a->nstates * sizeof(a->states[0]));
  for (unsigned i = 0; i < a->ngpus; i++)
    for (unsigned j = 0; j < a->nstates; j++)
      if (strcmp(a->gpus[i].uuid, a->states[j].uuid) == 0)
        a->gpus[i].healthy = a->states[j].healthy;
}

/* Lock not held. The kubelet gets a new ListAndWatch snapshot and the
 * scheduler a new inventory. */
static void republish(struct vg_agent *a) {
  struct vg_gpu copy[VG_MAX_GPUS];
  pthread_mutex_lock(&a->lock);
  memcpy(copy, a->gpus, a->ngpus * sizeof(copy[0]));
  unsigned ngpus = a->ngpus;
  publish_inventory(a);
  pthread_mutex_unlock(&a->lock);
  vg_plugin_set_gpus(a->plugin, copy, ngpus);
}

/* Health changed. Runs on the health thread (or in vg_health_clear's caller). */
static void on_health(const struct vg_gpu_health *states, unsigned n, void *arg) {
  struct vg_agent *a = arg;
  pthread_mutex_lock(&a->lock);
  take_health(a, states, n);
  pthread_mutex_unlock(&a->lock);
  republish(a);
}

static void start_k8s(struct vg_agent *a, const struct vg_agent_opts *o) {
  struct vg_err err;
  if (vg_k8s_config_load(&a->kcfg, o->kubeconfig, &err) != 0) {
    vg_info(
        "Kubernetes API: %s; the Node inventory is not published and pod limits cannot be "
        "bound (such containers fail closed)",
        err.msg);
    return;
  }
  a->k8s = vg_k8s_client_new(&a->kcfg, &err);
  if (a->k8s == NULL) vg_info("Kubernetes API: %s", err.msg);
}

static void start_binder(struct vg_agent *a, const struct vg_agent_opts *o) {
  if (!a->cfg->vgpu.enabled && !a->cfg->cce.enabled) return; /* nothing is bound late */
  struct vg_err err;
  a->binder = vg_binder_new(a->cfg, a->k8s, o->podresources_socket, o->state_dir, &err);
  if (a->binder == NULL) {
    vg_info("binder: %s; vgpu/cce containers will fail closed", err.msg);
    return;
  }
  vg_binder_set_gpus(a->binder, a->gpus, a->ngpus);
  vg_binder_set_node(a->binder, a->node);
  vg_binder_set_assignment_key(a->binder, o->assignment_key);
  if (vg_binder_start(a->binder, &err) != 0) {
    vg_info("binder: %s", err.msg);
    return;
  }
  vg_plugin_set_allocate_observer(a->plugin, vg_binder_wake_fn, a->binder);
}

static void start_inventory(struct vg_agent *a) {
  if (a->k8s == NULL) return;
  if (a->node[0] == '\0') {
    vg_info("no --node-name (nor NODE_NAME): the Node inventory is not published");
    return;
  }
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
    vg_info("%s; device choice ignores the scheduler's assignment", err.msg);
    return;
  }
  vg_plugin_set_preference_source(a->plugin, vg_steer_prefer_fn, a->steer);
}

/* Allocate refuses pods vgpu-scheduler did not place (gate.h). */
static void start_gate(struct vg_agent *a, const struct vg_agent_opts *o) {
  struct vg_err err;
  a->gate = vg_gate_new(a->k8s, a->node, o->podresources_socket, &err);
  if (a->gate == NULL) {
    vg_warn("%s; Allocate cannot refuse pods that vgpu-scheduler did not place", err.msg);
    return;
  }
  vg_gate_set_key(a->gate, o->assignment_key);
  vg_plugin_set_admission_check(a->plugin, vg_gate_check_fn, a->gate);
}

/* Slot directories of containers that are gone are removed (slot_gc.h). */
static void start_slot_gc(struct vg_agent *a, const struct vg_agent_opts *o) {
  if (o->slot_grace_s == 0) {
    vg_info("slot directories of gone containers are kept (--slot-grace 0)");
    return;
  }
  bool api = a->k8s != NULL && a->node[0] != '\0';
  struct vg_slot_gc_opts go = {a->plugin->state_dir,  o->podresources_socket,
                               api ? a->k8s : NULL,   a->node,
                               o->slot_grace_s,       0,
                               &a->plugin->slots_lock};
  struct vg_err err;
  a->slot_gc = vg_slot_gc_new(&go, &err);
  if (a->slot_gc == NULL || vg_slot_gc_start(a->slot_gc, &err) != 0) {
    vg_warn("%s; slot directories of gone containers are kept", err.msg);
    vg_slot_gc_stop(a->slot_gc);
    a->slot_gc = NULL;
    return;
  }
  if (!api)
    vg_info(
        "slot collector: without the API server and --node-name it trusts the kubelet's "
        "PodResources alone");
}

/* GPU memory no container's region accounts for is reported (audit.h). */
static void start_audit(struct vg_agent *a, const struct vg_agent_opts *o) {
  if (o->audit_interval_s == 0) {
    vg_info(
        "memory audit off (--audit-interval 0): a container running without libvgpu "
        "goes unnoticed");
    return;
  }
  struct vg_audit_opts ao = {a->plugin->state_dir,
                             o->podresources_socket,
                             o->audit_tolerance,
                             a->cfg->context_reserve,
                             o->audit_grace_s,
                             o->audit_interval_s * 1000,
                             a->k8s,
                             o->backstop_policy,
                             NULL,
                             o->compute_tolerance,
                             o->compute_sustain_s};
  struct vg_err err;
  a->audit = vg_audit_new(&ao, &err);
  if (a->audit == NULL || vg_audit_start(a->audit, &err) != 0) {
    vg_warn("%s; a container running without libvgpu goes unnoticed", err.msg);
    vg_audit_stop(a->audit);
    a->audit = NULL;
  }
}

static void start_health(struct vg_agent *a) {
  char err[256];
  a->health = vg_health_new(a->gpus, a->ngpus, NULL, on_health, a, err, sizeof(err));
  if (a->health == NULL || vg_health_start(a->health) != 0)
    vg_info("health checks: %s; every GPU stays Healthy", a->health == NULL ? err : "no thread");
}

/* /metrics (docs/metrics.md), reading the same sources as everything else. */
static int start_metrics(struct vg_agent *a, const struct vg_agent_opts *o, struct vg_err *err) {
  if (o->metrics == NULL) return 0;
  snprintf(a->state_dir, sizeof(a->state_dir), "%s",
           o->state_dir != NULL && o->state_dir[0] != '\0' ? o->state_dir
           : a->cfg->state_dir[0] != '\0'                  ? a->cfg->state_dir
                                                           : VG_DEFAULT_STATE_DIR);
  snprintf(a->podresources, sizeof(a->podresources), "%s",
           o->podresources_socket != NULL && o->podresources_socket[0] != '\0'
               ? o->podresources_socket
               : VG_PODRESOURCES_SOCKET);
  a->metrics_src =
      (struct vg_metrics_sources){a->node,  a->state_dir, a->podresources, a->plugin, a->binder,
                                  a->steer, a->gate,      a->slot_gc,      a->audit};
  a->metrics = vg_metrics_server_start(o->metrics, &a->metrics_src, err);
  if (a->metrics == NULL) return -1;
  vg_info("metrics on http://%s/metrics (port %d)", o->metrics, vg_metrics_server_port(a->metrics));
  return 0;
}

struct vg_agent *vg_agent_start(struct vg_plugin *plugin, const struct vg_plugin_config *cfg,
                                const struct vg_gpu *gpus, unsigned ngpus,
                                const struct vg_agent_opts *opts, struct vg_err *err) {
  struct vg_agent *a = calloc(1, sizeof(*a));
  if (a == NULL) {
    vg_err_set(err, "node agent: out of memory");
    return NULL;
  }
  a->plugin = plugin;
  a->cfg = cfg;
  pthread_mutex_init(&a->lock, NULL);
  a->ngpus = ngpus > VG_MAX_GPUS ? VG_MAX_GPUS : ngpus;
  memcpy(a->gpus, gpus, a->ngpus * sizeof(a->gpus[0]));
  start_k8s(a, opts);
  const char *node = opts->node_name != NULL ? opts->node_name : getenv("NODE_NAME");
  snprintf(a->node, sizeof(a->node), "%s", node != NULL ? node : "");
  start_binder(a, opts);
  start_inventory(a);
  start_steer(a, opts);
  start_gate(a, opts);
  start_slot_gc(a, opts);
  start_audit(a, opts);
  start_health(a);
  if (start_metrics(a, opts, err) != 0) {
    vg_agent_stop(a);
    return NULL;
  }
  return a;
}

void vg_agent_gpus_found(struct vg_agent *a, const struct vg_gpu *gpus, unsigned ngpus) {
  pthread_mutex_lock(&a->lock);
  a->ngpus = ngpus > VG_MAX_GPUS ? VG_MAX_GPUS : ngpus;
  memcpy(a->gpus, gpus, a->ngpus * sizeof(a->gpus[0]));
  pthread_mutex_unlock(&a->lock);
  if (a->binder != NULL) vg_binder_set_gpus(a->binder, gpus, a->ngpus);
  if (a->health != NULL) {
    /* NVML never says an XID condition is over: re-discovery is the
     * operator's word that it is, so the marks go (lost GPUs stay lost). */
    vg_health_clear(a->health, -1);
    struct vg_gpu_health states[VG_MAX_GPUS];
    unsigned n = vg_health_get(a->health, states, VG_MAX_GPUS);
    pthread_mutex_lock(&a->lock);
    take_health(a, states, n < VG_MAX_GPUS ? n : VG_MAX_GPUS);
    pthread_mutex_unlock(&a->lock);
  }
  republish(a);
}

void vg_agent_gpus_found_fn(void *agent, const struct vg_gpu *gpus, unsigned ngpus) {
  vg_agent_gpus_found(agent, gpus, ngpus);
}

void vg_agent_stop(struct vg_agent *a) {
  if (a == NULL) return;
  vg_metrics_server_stop(a->metrics); /* first: it reads everything below */
  if (a->steer != NULL) vg_plugin_set_preference_source(a->plugin, NULL, NULL);
  vg_steer_free(a->steer);
  vg_slot_gc_stop(a->slot_gc);
  vg_audit_stop(a->audit);
  if (a->gate != NULL) vg_plugin_set_admission_check(a->plugin, NULL, NULL);
  vg_gate_free(a->gate);
  if (a->health != NULL) vg_health_free(a->health);
  if (a->binder != NULL) vg_binder_stop(a->binder);
  if (a->inventory != NULL) vg_inventory_free(a->inventory);
  if (a->k8s != NULL) vg_k8s_client_free(a->k8s);
  vg_k8s_config_free(&a->kcfg);
  pthread_mutex_destroy(&a->lock);
  free(a);
}
