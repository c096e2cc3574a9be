/*
 * extender.h -- the kube-scheduler extender (vgpu-scheduler): the verbs
 * filter, prioritize and bind over the extender JSON protocol, GPU-level fit
 * for the vgpu dialect, and the HTTP server (libmicrohttpd). See
 * docs/scheduler.md.
 */
#ifndef VG_EXTENDER_H
#define VG_EXTENDER_H

#include <stdbool.h>
#include <stddef.h>

#include "err.h"
#include "assignment.h"
#include "gpu_inventory.h"
#include "k8s.h"

#define VG_ANN_INVENTORY VG_INVENTORY_ANNOTATION /* gpu_inventory.h */
#define VG_ANN_ASSIGNED VG_ASSIGNED_ANNOTATION   /* assignment.h */

struct vg_ext;

/* client: the API client (borrowed; must outlive the extender). policy: a
 * placement policy name (vg_policy_find), NULL = "vgpu". cache_ttl_ms: how long
 * a node's inventory and its pods' assignments are reused by filter and
 * prioritize (bind always reads them fresh). */
struct vg_ext *vg_ext_new(struct vg_k8s_client *client, const char *policy, long cache_ttl_ms,
                          struct vg_err *err);
void vg_ext_free(struct vg_ext *x);
#define VG_EXT_WORKLOAD_HALF_LIFE 5000.0 /* pods: a pod's weight halves after this many more */
#define VG_EXT_WORKLOAD_PRIOR 20.0       /* pods: the built-in list's weight at start */
/* The learned target workload's window (docs/scheduler.md, "What the policy
 * optimises for"): a pod's weight halves after half_life_pods more pods;
 * the built-in prior starts worth prior_pods pods. Before serving only. */
int vg_ext_set_workload_window(struct vg_ext *x, double half_life_pods, double prior_pods,
                               struct vg_err *err);

struct vg_assign_key;
/* From now on, every vgpu.io/assigned that bind or a resize writes is
 * signed with key (vgpu.io/assigned-mac, assignment_mac.h), and a resize is
 * taken up only on an assignment that verifies. key is borrowed (must
 * outlive x); NULL: unsigned, as without --assignment-key. Before serving. */
void vg_ext_set_assignment_key(struct vg_ext *x, struct vg_assign_key *key);
/* May a pod asking only for whole nvidia.com/gpu be placed on a node without
 * vgpu's inventory whose allocatable names nvidia.com/gpu (another device
 * plugin's GPUs)? true by default (--foreign-gpu-nodes allow);
 * docs/scheduler.md, "Foreign GPU nodes". Before serving only. */
void vg_ext_set_foreign_gpu_nodes(struct vg_ext *x, bool allow);

struct vg_resource_names;
/* The names pods ask for each resource role under (common/dialect.h; the
 * device plugin's renames, --resource). Borrowed and process-wide: set once
 * before serving; NULL, or never set: the default names. */
void vg_ext_set_resource_names(const struct vg_resource_names *names);

/* Watches Pods and Nodes in the background (extender_watch.c) so that cached
 * node views are dropped when they change and otherwise kept well past
 * cache_ttl_ms. Needs list and watch on pods and nodes. vg_ext_free stops it. */
int vg_ext_watch_start(struct vg_ext *x, struct vg_err *err);
void vg_ext_watch_stop(struct vg_ext *x);

/* Serves live resizes (extender_resize.c, docs/resize.md): every poll_ms
 * (<= 0: never) the open requests the node agents acknowledged are checked
 * against the pod's GPUs and answered. Needs list on pods, patch on pods and
 * create on events. vg_ext_free stops it. */
int vg_ext_resize_start(struct vg_ext *x, long poll_ms, struct vg_err *err);
void vg_ext_resize_stop(struct vg_ext *x);
/* One pass in the calling thread: how many requests were answered, or -1
 * with err when the open requests could not be listed. */
int vg_ext_resize_pass(struct vg_ext *x, struct vg_err *err);

/* One request: method "GET"/"POST", path "/filter" etc. Returns the HTTP
 * status and sets *out to a malloc'd response body (JSON, or text for
 * /metrics) and *content_type to a static string. */
int vg_ext_handle(struct vg_ext *x, const char *method, const char *path, const char *body,
                  size_t len, char **out, const char **content_type);

/* ---- HTTP server (extender_http.c) ---- */
struct vg_ext_server;
/* A request body's limit when none is given: ExtenderArgs with
 * nodeCacheCapable: true is a Pod (at most 1.5 MiB, etcd's object limit)
 * and node names (5,000 of Kubernetes' longest, 253 bytes, are 1.3 MiB);
 * 8 MiB leaves room for both and more. docs/scheduler.md. */
#define VG_EXT_MAX_BODY (8u << 20)
struct vg_ext_server_limits {
  size_t max_body;         /* bytes; 0 = VG_EXT_MAX_BODY; over it: 413 */
  unsigned idle_timeout_s; /* idle connections closed after; 0 = 60 */
};
/* Listens on listen, "ADDR:PORT" (IPv4; port 0 = any free one); NULL with
 * err naming what is wrong with the address or why it cannot listen. */
struct vg_ext_server *vg_ext_server_start(struct vg_ext *x, const char *listen,
                                          const struct vg_ext_server_limits *l, struct vg_err *err);
int vg_ext_server_port(const struct vg_ext_server *s);
void vg_ext_server_stop(struct vg_ext_server *s);

#endif
