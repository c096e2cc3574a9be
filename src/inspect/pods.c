/*
 * pods.c -- who holds what: every pod bound to a shown node and not finished
 * is attributed to that node's GPUs.
 *
 * The source of truth is the pod's `vgpu.io/assigned` annotation (written by
 * vgpu-scheduler in the Binding; parsed by the one strict parser in
 * src/k8s/assignment.c): per container, the GPUs by UUID with the bytes and
 * compute percent on each. This is the same for every dialect.
 *
 * A container that holds GPU resources of the node (any name the node's
 * inventory advertises) with no assignment entry for that resource is not
 * dropped: it goes to the node's "unassigned" list with the memory the
 * resource stands for (device IDs x the inventory's unit; for vgpu, the
 * pod's memory resource, VG_ROLE_VGPU_MEM under --resource's name), or unknown memory when the
 * resource carries no size (time-slicing replicas without memoryPerReplica). Aliyun's inspect shows
 * such pods as "PENDING"; they are bound and running, only the GPU they are on is unknown, so
 * "unassigned" says what is actually the case.
 */
#include <stdlib.h>
#include <string.h>

#include "assignment.h"
#include "dialect.h"
#include "inspect.h"
#include "pod_quantity.h"

struct pod_ctx {
  struct ins_cluster *cl;
  struct ins_node *node;
  const char *ns, *name;
  json_object *pod;
};

/* The resource's value: limits first (extended resources are limits), then
 * requests. */
static json_object *resource_value(json_object *ctr, const char *name) {
  json_object *res = ins_field(ctr, "resources");
  json_object *v = ins_field(ins_field(res, "limits"), name);
  return v != NULL ? v : ins_field(ins_field(res, "requests"), name);
}

/* a * b, or -1 above INS_MAX_BYTES (a quantity no GPU could hold). */
static int64_t times(long long a, int64_t b) {
  int64_t out = 0;
  return __builtin_mul_overflow((int64_t)a, b, &out) || out > INS_MAX_BYTES ? -1 : out;
}

/* vgpu's memory per GPU from its memory resource (pod_quantity.h: MiB, or
 * bytes with a binary suffix); -1 when absent or not understood. */
static int64_t vgpu_memory(const struct ins_cluster *cl, json_object *ctr) {
  int64_t mib = 0;
  json_object *v = resource_value(ctr, vg_resource_name(cl->names, VG_ROLE_VGPU_MEM));
  return v != NULL && vg_pod_quantity(v, VG_QTY_MIB, &mib, NULL) == 0 ? times(mib, (int64_t)1 << 20)
                                                                      : -1;
}

static int add_unassigned(struct pod_ctx *p, const char *ctr, const char *resource, long long qty,
                          int64_t memory) {
  struct ins_unassigned *u = ins_grow(&p->node->un, &p->node->nun, sizeof(*p->node->un));
  if (u == NULL) return -1;
  u->ns = ins_strdup(p->ns);
  u->pod = ins_strdup(p->name);
  u->container = ins_strdup(ctr);
  u->resource = ins_strdup(resource);
  u->quantity = qty;
  u->memory = memory;
  return 0;
}

static struct ins_gpu *gpu_by_uuid(struct ins_node *n, const char *uuid) {
  for (int i = 0; i < n->ngpus; i++)
    if (strcmp(n->gpu[i].uuid, uuid) == 0) return &n->gpu[i];
  return NULL;
}

static int add_assigned(struct pod_ctx *p, const struct vg_assignment *a) {
  if (strcmp(a->node, p->node->name) != 0)
    ins_warn(p->cl, "pod %s/%s: %s names node %s but the pod is bound to %s", p->ns, p->name,
             VG_ASSIGNED_ANNOTATION, a->node, p->node->name);
  for (int c = 0; c < a->nctrs; c++) {
    const struct vg_assign_ctr *ctr = &a->ctr[c];
    for (int i = 0; i < ctr->ngpus; i++) {
      const struct vg_assign_gpu *ag = &ctr->gpu[i];
      struct ins_gpu *g = gpu_by_uuid(p->node, ag->uuid);
      if (ag->memory > INS_MAX_BYTES) {
        ins_warn(p->cl, "pod %s/%s: assigned memory %lld on GPU %s is more than can be counted",
                 p->ns, p->name, (long long)ag->memory, ag->uuid);
        continue;
      }
      if (g == NULL) {
        ins_warn(p->cl,
                 "pod %s/%s: assigned GPU %s is not in node %s's inventory; shown as "
                 "unassigned",
                 p->ns, p->name, ag->uuid, p->node->name);
        if (add_unassigned(p, ctr->name, ctr->resource, 1, ag->memory) != 0) return -1;
        continue;
      }
      struct ins_use *u = ins_grow(&g->uses, &g->nuses, sizeof(*g->uses));
      if (u == NULL) return -1;
      u->ns = ins_strdup(p->ns);
      u->pod = ins_strdup(p->name);
      u->container = ins_strdup(ctr->name);
      u->memory = ag->memory;
      u->cores = ag->cores;
    }
  }
  return 0;
}

/* One container's GPU resources that no assignment entry covers. */
static int add_container(struct pod_ctx *p, json_object *ctr, const struct vg_assignment *a) {
  const char *cname = ins_str(ctr, "name");
  if (cname == NULL) cname = "";
  for (int r = 0; r < p->node->nres; r++) {
    const struct ins_resource *res = &p->node->res[r];
    json_object *v = resource_value(ctr, res->name);
    int64_t qty = 0;
    struct vg_err err = {{0}};
    if (v == NULL || vg_assign_find(a, cname, res->name) != NULL) continue;
    if (vg_pod_quantity(v, VG_QTY_COUNT, &qty, &err) != 0) {
      ins_warn(p->cl, "pod %s/%s container %s: %s: %s; not counted", p->ns, p->name, cname,
               res->name, err.msg);
      continue;
    }
    if (qty == 0) continue;
    int64_t mem = res->unit > 0 ? times(qty, res->unit) : -1;
    if (res->unit == 0 && vg_dialect_from_name(res->dialect) == VG_DIALECT_VGPU &&
        vgpu_memory(p->cl, ctr) >= 0)
      mem = times(qty, vgpu_memory(p->cl, ctr));
    if (mem < 0 && res->unit > 0)
      ins_warn(p->cl, "pod %s/%s container %s: %s: %lld is more memory than can be counted", p->ns,
               p->name, cname, res->name, (long long)qty);
    if (add_unassigned(p, cname, res->name, qty, mem) != 0) return -1;
  }
  return 0;
}

static int add_pod(struct pod_ctx *p) {
  struct vg_assignment a;
  struct vg_err e = {""};
  int rc = vg_assign_from_pod(p->pod, &a, &e);
  if (rc < 0) {
    ins_warn(p->cl, "pod %s/%s: %s; its GPU requests are shown as unassigned", p->ns, p->name,
             e.msg);
    memset(&a, 0, sizeof(a));
  }
  int out = rc == 1 ? add_assigned(p, &a) : 0;
  json_object *ctrs = ins_field(ins_field(p->pod, "spec"), "containers");
  size_t n = ctrs != NULL && json_object_is_type(ctrs, json_type_array)
                 ? json_object_array_length(ctrs)
                 : 0;
  for (size_t i = 0; out == 0 && i < n; i++)
    out = add_container(p, json_object_array_get_idx(ctrs, i), &a);
  if (rc == 1) vg_assign_free(&a);
  return out;
}

int ins_pods_from_list(json_object *list, struct ins_cluster *cl, struct vg_err *err) {
  json_object *items = ins_field(list, "items");
  if (items == NULL || !json_object_is_type(items, json_type_array))
    return vg_err_set(err, "the API server's PodList has no items array");
  for (size_t i = 0; i < json_object_array_length(items); i++) {
    json_object *pod = json_object_array_get_idx(items, i);
    const char *phase = ins_str(ins_field(pod, "status"), "phase");
    const char *node = ins_str(ins_field(pod, "spec"), "nodeName");
    if (phase != NULL && (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0))
      continue;
    struct pod_ctx p = {.cl = cl, .pod = pod};
    p.node = node != NULL ? ins_node_find(cl, node) : NULL;
    if (p.node == NULL) continue;
    p.ns = ins_str(ins_field(pod, "metadata"), "namespace");
    p.name = ins_str(ins_field(pod, "metadata"), "name");
    if (p.ns == NULL) p.ns = "default";
    if (p.name == NULL) p.name = "?";
    if (add_pod(&p) != 0) return vg_err_set(err, "out of memory");
  }
  return 0;
}
