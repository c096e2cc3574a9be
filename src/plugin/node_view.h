/*
 * node_view.h -- this node's pods as the kubelet and the API server see
 * them, read together.
 *
 * The kubelet's PodResources List says which pods it has (from the moment
 * it starts admitting one) and which device IDs each container holds; the
 * API server says what each pod is: its spec, phase and the scheduler's
 * `vgpu.io/assigned` annotation. Steering (GetPreferredAllocation), the
 * Allocate gate and the slot collector all need both, so one read fills one
 * view: PodResources first, then the pods bound to the node.
 */
#ifndef VG_PLUGIN_NODE_VIEW_H
#define VG_PLUGIN_NODE_VIEW_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include <json-c/json.h>

#include "err.h"

struct vg_k8s_client;

/* One container the kubelet lists, with the resource it holds IDs of (NULL:
 * it holds none) and the slot directory those IDs name (slot.h; "" when
 * none). */
struct vg_node_held {
  char *ns, *pod, *container, *resource;
  char slot[17];
};

struct vg_node_view {
  struct vg_node_held *held;
  size_t nheld, cap;
  json_object *pods; /* the PodList of the node; NULL when read without the API */
};

/* Fills v (zeroed first); k8s NULL reads PodResources alone. 0, or -1 with
 * err naming the source that failed (v is then empty). */
int vg_node_view_read(struct vg_node_view *v, struct vg_k8s_client *k8s, const char *node,
                      const char *podresources_socket, int timeout_ms, struct vg_err *err);
void vg_node_view_free(struct vg_node_view *v);

/* Where a view comes from, for a reader that asks again and again
 * (steering, the gate): its failures are said once, not on every call. */
struct vg_node_source {
  struct vg_k8s_client *k8s;
  char node[256];
  char socket[1024];
  const char *who;       /* log prefix, e.g. "steer" */
  const char *meanwhile; /* what happens while the sources fail */
  pthread_mutex_t lock;  /* last_error */
  char last_error[VG_ERR_MAX];
};

/* k8s is borrowed. podresources_socket: NULL for the kubelet's default. who
 * and meanwhile are kept (string literals). 0, or -1 with err without a
 * client, or when the node name is missing or too long. */
int vg_node_source_init(struct vg_node_source *src, struct vg_k8s_client *k8s, const char *node,
                        const char *podresources_socket, const char *who, const char *meanwhile,
                        struct vg_err *err);
void vg_node_source_destroy(struct vg_node_source *src);

/* vg_node_view_read from src. A failure is logged once, as
 * "<who>: <reason>; <meanwhile>", until the sources answer again (said once
 * too). 0, or -1 with v empty. */
int vg_node_view_fetch(struct vg_node_source *src, struct vg_node_view *v, int timeout_ms);

/* The pods of the PodList (borrowed). */
size_t vg_node_view_npods(const struct vg_node_view *v);
json_object *vg_node_view_pod(const struct vg_node_view *v, size_t i);

/* Does the kubelet list the pod at all (its admission started)? Does the
 * container hold IDs of the resource (its allocation is done)? container and
 * resource may be NULL when only *listed is wanted. */
void vg_node_view_held(const struct vg_node_view *v, const char *ns, const char *pod,
                       const char *container, const char *resource, bool *listed, bool *holds);

/* o[a][b] as a string, "" when absent or not a string. */
const char *vg_json_str_at(json_object *o, const char *a, const char *b);
/* Phase Succeeded or Failed: the pod holds nothing and never will again. */
bool vg_pod_finished(json_object *pod);

#endif
