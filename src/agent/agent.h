/*
 * agent.h -- the node agent's services around the device plugin.
 *
 * The gRPC side (plugin.c, registration.c) answers the kubelet; these run
 * beside it: the Kubernetes client, the binder that writes each pod's
 * limits into its region file after Allocate (docs/allocation.md), the GPU
 * health checker (Unhealthy devices are resent in ListAndWatch), and the
 * Node inventory annotation the scheduler reads (docs/inventory.md), the
 * gate that refuses pods vgpu-scheduler did not place (gate.h) and the
 * collector of slot directories of gone containers (slot_gc.h). Each
 * degrades on its own: without the API server, the plugin still serves and
 * containers whose limits cannot be bound fail closed in libvgpu.
 */
#ifndef VG_AGENT_H
#define VG_AGENT_H

#include <stdint.h>

#include "config.h"
#include "backstop.h"
#include "devices.h"
#include "plugin.h"

struct vg_assign_key;

struct vg_agent_opts {
  const char *node_name;           /* NULL: $NODE_NAME */
  const char *kubeconfig;          /* NULL: $KUBECONFIG, else in-cluster */
  const char *podresources_socket; /* NULL: the kubelet's default */
  const char *state_dir;           /* NULL: the config's stateDir (--state-dir overrides it) */
  const char *metrics;             /* "ADDR:PORT" to serve /metrics on, or NULL */
  unsigned slot_grace_s;           /* slot directories of gone containers: 0 keeps them */
  unsigned audit_interval_s;       /* the memory audit (audit.h): 0 turns it off */
  uint64_t audit_tolerance;        /* bytes a GPU may hold beyond what regions account for */
  unsigned audit_grace_s;          /* a slot younger than this is never called unenforced */
  enum vg_backstop_policy backstop_policy; /* a container over its grant: report or evict */
  unsigned compute_tolerance;              /* points a container may use above its compute grant */
  unsigned compute_sustain_s;              /* ... for this long before the backstop reports it */
  /* --assignment-key (borrowed, outlives the agent): the gate admits and the
   * binder grants only assignments vgpu-scheduler signed; NULL: any. */
  struct vg_assign_key *assignment_key;
};

struct vg_agent;

/* Starts what it can and logs what it cannot; never fails the plugin, except
 * that a --metrics address it cannot listen on is an error (NULL, with the
 * reason in err): asked-for metrics must not silently go missing. gpus is
 * copied. */
struct vg_agent *vg_agent_start(struct vg_plugin *plugin, const struct vg_plugin_config *cfg,
                                const struct vg_gpu *gpus, unsigned ngpus,
                                const struct vg_agent_opts *opts, struct vg_err *err);
void vg_agent_stop(struct vg_agent *agent);

/* The GPUs were discovered again (SIGUSR1): the list is replaced, XID marks
 * are forgotten (docs/inventory.md, health rules), and the kubelet and the
 * inventory get the result. */
void vg_agent_gpus_found(struct vg_agent *agent, const struct vg_gpu *gpus, unsigned ngpus);
/* The same with the agent as a void * (for vg_reg_opts.gpus_found). */
void vg_agent_gpus_found_fn(void *agent, const struct vg_gpu *gpus, unsigned ngpus);

#endif
