/*
 * metrics.h -- the node agent's Prometheus metrics (text format 0.0.4).
 *
 * Everything is read at scrape time, never cached: the GPUs from the plugin
 * (health) and from NVML (memory in use, utilisation); the containers from
 * their region files on the host (<stateDir>/slots/<hash>/region.cache: the
 * limits, the memory charged, the GPU time used in the last second, the live
 * processes), named by the kubelet's PodResources API (which pod and
 * container holds the device IDs whose hash names the slot); and the agent's
 * own counters (binder, steering, the Allocate gate, the slot collector) and the memory audit's
 * last pass (audit.h). Label names join with
 * kube-state-metrics: node, namespace, pod, container. docs/metrics.md lists every family.
 */
#ifndef VG_PLUGIN_METRICS_H
#define VG_PLUGIN_METRICS_H

#include <stddef.h>

struct vg_plugin;
struct vg_binder;
struct vg_steer;
struct vg_gate;
struct vg_slot_gc;
struct vg_audit;

struct vg_metrics_sources {
  const char *node;                /* may be empty */
  const char *state_dir;           /* where the slot directories are */
  const char *podresources_socket; /* NULL: the kubelet's default */
  struct vg_plugin *plugin;        /* the GPUs and their health */
  struct vg_binder *binder;        /* NULL when not running */
  struct vg_steer *steer;          /* NULL when not running */
  struct vg_gate *gate;            /* NULL when not running */
  struct vg_slot_gc *slot_gc;      /* NULL when not running */
  struct vg_audit *audit;          /* NULL when not running */
};

/* The exposition text (malloc'd, NUL-terminated; *len without the NUL), or
 * NULL when memory runs out. Sources that fail (NVML, PodResources) are
 * reported by their *_up gauge, not by failing the scrape. */
char *vg_metrics_render(const struct vg_metrics_sources *src, size_t *len);

#endif
