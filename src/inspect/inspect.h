/*
 * inspect.h -- kubectl-inspect-gpushare: the cluster's GPU allocation as a
 * table (Aliyun gpushare's `kubectl inspect gpushare`, for every dialect).
 *
 * The program works in four steps, one file each:
 *   fetch.c    list Nodes and Pods from the API server (the user's kubeconfig);
 *   nodes.c    a Node with the `vgpu.io/gpu-inventory` annotation -> its GPUs;
 *   pods.c     each running Pod's `vgpu.io/assigned` annotation -> memory and
 *              compute on those GPUs; GPU requests without an assignment ->
 *              the node's "unassigned" list (never silently dropped);
 *   table.c    the numbers in display units and the totals;
 * then render_aliyun.c (seed 002's layout, the default, with and without
 * -d), render_wide.c (-o wide: vgpu's extra columns) or render_json.c
 * (-o json, bytes). main.c holds options and exit codes.
 *
 * Everything is kept in bytes until table.c; strings are heap copies owned
 * by the model and freed by ins_cluster_free.
 */
#ifndef VG_INSPECT_H
#define VG_INSPECT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <json-c/json.h>

#include "err.h"
#include "k8s.h"

/* Larger byte figures (1 PiB) are refused as malformed, so that sums over a
 * whole cluster cannot overflow. */
#define INS_MAX_BYTES ((int64_t)1 << 50)

/* One container's share of one GPU, from a pod's assignment. */
struct ins_use {
  char *ns, *pod, *container;
  int64_t memory;     /* bytes */
  int cores;          /* percent; 0 = no compute limit */
  long long u_memory; /* memory in display units (rounded up), table.c */
};

struct ins_gpu {
  int index;
  char *uuid, *type;
  bool healthy;
  char *reason;   /* why unhealthy, may be NULL */
  int64_t memory; /* bytes, the GPU's total */
  int nuses;
  struct ins_use *uses;
  /* table.c */
  long long u_total, u_alloc;
  int cores_alloc;
};

/* A container on the node that holds GPU resources the kubelet handed out
 * but no assignment says on which GPU (a pod that bypassed vgpu-scheduler, a
 * dialect it does not place, or a malformed annotation). */
struct ins_unassigned {
  char *ns, *pod, *container, *resource;
  long long quantity;
  int64_t memory; /* bytes; -1 when the resource carries no memory size */
  long long u_memory;
};

/* A GPU resource a node advertises (inventory gpus[].resources[]). */
struct ins_resource {
  char *name, *dialect;
  int64_t unit; /* bytes per device ID, 0 = IDs carry no memory */
};

struct ins_node {
  char *name, *ip;
  bool unschedulable; /* cordoned: spec.unschedulable */
  int ngpus;
  struct ins_gpu *gpu;
  int nres;
  struct ins_resource *res;
  int nun;
  struct ins_unassigned *un;
  /* table.c */
  long long u_total, u_alloc, u_unassigned;
  int cores_alloc, cores_total;
  bool unknown_memory; /* some unassigned container's memory is unknown */
};

struct ins_cluster {
  /* The resource names pods use (--resource; common/dialect.h), NULL: the defaults. */
  const struct vg_resource_names *names;
  int nnodes;
  struct ins_node *node; /* sorted by name */
  int nwarn;
  char **warn; /* things the user should know (malformed annotations, ...) */
  /* table.c */
  int64_t unit;          /* bytes per display unit */
  const char *unit_name; /* "MiB" or "GiB" */
  long long u_total, u_alloc;
  int percent;
  int max_gpus;
  bool any_unassigned;
};

/* ---- fetch.c ---- */

/* GET /api/v1/nodes and the pods (of node `only`, or all). Caller puts both. */
int ins_fetch(struct vg_k8s_client *c, const char *only, json_object **nodes, json_object **pods,
              struct vg_err *err);

/* ---- nodes.c ---- */

/* Adds every Node of the NodeList that carries a GPU inventory (only the one
 * named `only` when not NULL), sorted by name. A malformed inventory is a
 * warning and the node is left out. */
int ins_nodes_from_list(json_object *list, const char *only, struct ins_cluster *cl,
                        struct vg_err *err);
struct ins_node *ins_node_find(struct ins_cluster *cl, const char *name);
const struct ins_resource *ins_node_resource(const struct ins_node *n, const char *name);

/* ---- pods.c ---- */

/* Attributes the PodList's running pods to the nodes' GPUs. */
int ins_pods_from_list(json_object *list, struct ins_cluster *cl, struct vg_err *err);

/* ---- model.c ---- */

char *ins_strdup(const char *s);
/* o[key] when o is an object that has it, else NULL. */
json_object *ins_field(json_object *o, const char *key);
/* o[key] when it is a string, else NULL. */
const char *ins_str(json_object *o, const char *key);
/* Appends a printf-style warning (out of memory: dropped). */
void ins_warn(struct ins_cluster *cl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void ins_cluster_free(struct ins_cluster *cl);
void ins_node_free(struct ins_node *n);
/* Grows *arr (of *n elements of size sz) by one zeroed element; NULL when out
 * of memory. */
void *ins_grow(void *arr_ptr, int *n, size_t sz);

/* ---- table.c ---- */

/* Chooses the unit (the gpushare unit when a node has one: GiB or MiB; else
 * MiB) and fills the u_* fields, totals and percent. */
void ins_compute(struct ins_cluster *cl);

/* ---- render_aliyun.c / render_wide.c / render_json.c ---- */

/* Seed 002's table as Aliyun prints it; detail: the per-node, per-pod blocks
 * of `-d`. Returns 0, or -1 with err on out of memory. cl has a node. */
int ins_render_aliyun(const struct ins_cluster *cl, bool detail, FILE *out, struct vg_err *err);
/* The same with vgpu's extras (compute share, cordons, health): -o wide. */
int ins_render_wide(const struct ins_cluster *cl, bool detail, FILE *out, struct vg_err *err);
int ins_render_json(const struct ins_cluster *cl, FILE *out, struct vg_err *err);

#endif
