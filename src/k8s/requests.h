/*
 * requests.h -- what a pod requests and a node offers of CPU and memory, as
 * kube-scheduler counts them (NodeResourcesFit): a pod's requests are the
 * larger of its app containers' sum and its largest init container, plus
 * its overhead; a node offers status.allocatable. CPU in milli-cores and
 * memory in MiB, both rounded up, which is what the placement core (and the
 * Alibaba trace it replays) counts in.
 *
 * The extender needs these so that its placement model sees the same nodes
 * as the trace replay: without them every node looked alike to the
 * fragmentation measure (issue 28).
 */
#ifndef VG_K8S_REQUESTS_H
#define VG_K8S_REQUESTS_H

#include <json-c/json.h>
#include <stdint.h>

#include "err.h"

struct vg_cpu_mem {
  int64_t cpu; /* milli-cores */
  int64_t mem; /* MiB */
};

/* The pod's requests into *out. Returns 0, or -1 with err naming the
 * container and the value that could not be read. */
int vg_pod_requests(json_object *pod, struct vg_cpu_mem *out, struct vg_err *err);
/* The Node's status.allocatable into *out. Returns 1, 0 when the Node has no
 * allocatable cpu or memory (not yet reported by its kubelet), or -1 with
 * err when one cannot be read. */
int vg_node_allocatable(json_object *node, struct vg_cpu_mem *out, struct vg_err *err);
/* The same for one extended resource (e.g. nvidia.com/gpu), a count rounded
 * up: what the pod requests of it (0 when it names none), and what the
 * Node offers (returns 1, 0 when its allocatable does not name it, -1). The
 * extender counts another device plugin's GPUs with these, since a
 * resource kube-scheduler is told to ignore is not checked by it. */
int vg_pod_request_count(json_object *pod, const char *resource, int64_t *out, struct vg_err *err);
int vg_node_allocatable_count(json_object *node, const char *resource, int64_t *out,
                              struct vg_err *err);

#endif
