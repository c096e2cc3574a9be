/*
 * nodes.c -- a Node's GPUs, as its device plugin published them in the
 * `vgpu.io/gpu-inventory` annotation (docs/inventory.md).
 *
 * The inventory is the one place every dialect describes its GPUs the same
 * way: uuid, type, total memory, health, and per advertised resource the
 * bytes one device ID stands for. Nodes without it are not GPU nodes for
 * vgpu and are not shown. A malformed inventory is reported as a warning
 * naming the node and the field, and that node is left out rather than shown
 * with made-up numbers.
 */
#include <stdlib.h>
#include <string.h>

#include "gpu_inventory.h"
#include "inspect.h"

static const char *internal_ip(json_object *node) {
  json_object *addrs = ins_field(ins_field(node, "status"), "addresses");
  size_t n = addrs != NULL && json_object_is_type(addrs, json_type_array)
                 ? json_object_array_length(addrs)
                 : 0;
  for (size_t i = 0; i < n; i++) {
    json_object *a = json_object_array_get_idx(addrs, i);
    const char *type = ins_str(a, "type");
    if (type != NULL && strcmp(type, "InternalIP") == 0 && ins_str(a, "address") != NULL)
      return ins_str(a, "address");
  }
  return "unknown";
}

/* Records resource r of a GPU once per node (the first GPU's unit wins). */
static int add_resource(struct ins_node *n, const struct vg_inv_resource *r, struct vg_err *err) {
  if (ins_node_resource(n, r->name) != NULL) return 0;
  struct ins_resource *res = ins_grow(&n->res, &n->nres, sizeof(*n->res));
  if (res == NULL) return vg_err_set(err, "out of memory");
  res->name = ins_strdup(r->name);
  res->dialect = ins_strdup(r->dialect);
  res->unit = r->unit;
  return 0;
}

static int add_gpu(struct ins_node *n, const struct vg_inv_gpu *g, struct vg_err *err) {
  struct ins_gpu *gpu = ins_grow(&n->gpu, &n->ngpus, sizeof(*n->gpu));
  if (gpu == NULL) return vg_err_set(err, "out of memory");
  gpu->index = (int)g->index;
  gpu->uuid = ins_strdup(g->uuid);
  gpu->type = ins_strdup(g->type);
  gpu->healthy = g->healthy;
  gpu->reason = g->reason[0] ? ins_strdup(g->reason) : NULL;
  gpu->memory = g->memory;
  for (int r = 0; r < g->nres; r++)
    if (add_resource(n, &g->res[r], err) != 0) return -1;
  return 0;
}

/* The node's GPUs from the annotation's codec (k8s/gpu_inventory.h). */
static int parse_inventory(struct ins_node *n, const char *text, struct vg_err *err) {
  struct vg_inv inv;
  int rc = vg_inv_parse(text, &inv, err);
  for (int i = 0; rc == 0 && i < inv.ngpus; i++) rc = add_gpu(n, &inv.gpu[i], err);
  vg_inv_free(&inv);
  return rc;
}

static int by_name(const void *a, const void *b) {
  return strcmp(((const struct ins_node *)a)->name, ((const struct ins_node *)b)->name);
}

static int add_node(json_object *item, struct ins_cluster *cl, struct vg_err *err) {
  json_object *meta = ins_field(item, "metadata");
  const char *name = ins_str(meta, "name");
  const char *text = ins_str(ins_field(meta, "annotations"), VG_INVENTORY_ANNOTATION);
  if (name == NULL || text == NULL) return 0;
  struct ins_node *n = ins_grow(&cl->node, &cl->nnodes, sizeof(*cl->node));
  if (n == NULL) return vg_err_set(err, "out of memory");
  n->name = ins_strdup(name);
  n->ip = ins_strdup(internal_ip(item));
  json_object *cordoned = ins_field(ins_field(item, "spec"), "unschedulable");
  n->unschedulable = cordoned != NULL && json_object_is_type(cordoned, json_type_boolean) &&
                     json_object_get_boolean(cordoned);
  struct vg_err e = {""};
  if (parse_inventory(n, text, &e) != 0) {
    ins_warn(cl, "node %s: annotation %s: %s; node left out", name, VG_INVENTORY_ANNOTATION, e.msg);
    ins_node_free(n);
    cl->nnodes--;
  }
  return 0;
}

int ins_nodes_from_list(json_object *list, const char *only, struct ins_cluster *cl,
                        struct vg_err *err) {
  json_object *items = ins_field(list, "items");
  if (items == NULL || !json_object_is_type(items, json_type_array))
    return vg_err_set(err, "the API server's NodeList has no items array");
  for (size_t i = 0; i < json_object_array_length(items); i++) {
    json_object *item = json_object_array_get_idx(items, i);
    const char *name = ins_str(ins_field(item, "metadata"), "name");
    if (only != NULL && (name == NULL || strcmp(name, only) != 0)) continue;
    if (add_node(item, cl, err) != 0) return -1;
  }
  if (cl->nnodes > 1) qsort(cl->node, (size_t)cl->nnodes, sizeof(*cl->node), by_name);
  return 0;
}

struct ins_node *ins_node_find(struct ins_cluster *cl, const char *name) {
  for (int i = 0; i < cl->nnodes; i++)
    if (strcmp(cl->node[i].name, name) == 0) return &cl->node[i];
  return NULL;
}

const struct ins_resource *ins_node_resource(const struct ins_node *n, const char *name) {
  for (int i = 0; i < n->nres; i++)
    if (strcmp(n->res[i].name, name) == 0) return &n->res[i];
  return NULL;
}
