/*
 * render_json.c -- `-o json`: the same model for scripts, in bytes and
 * percent (no display rounding), plus the display unit and the warnings.
 *
 * {"unit": "GiB", "unitBytes": N,
 *  "cluster": {"memoryTotal", "memoryAllocated", "percent"},       (bytes)
 *  "nodes": [{"name", "ip", "unschedulable", "memoryTotal", "memoryAllocated",
 *             "memoryUnassigned", "unassignedUnknown", "coresAllocated",
 *             "coresTotal",
 *             "gpus": [{"index", "uuid", "type", "health", "reason",
 *                       "memoryTotal", "memoryAllocated", "coresAllocated",
 *                       "pods": [{"namespace", "pod", "container",
 *                                 "memory", "cores"}]}],
 *             "unassigned": [{"namespace", "pod", "container", "resource",
 *                             "quantity", "memory" (null if unknown)}]}],
 *  "warnings": ["..."]}
 * Bytes totals are exact sums (unassigned memory of unknown size counts 0);
 * "percent" is from the display figures so it matches the table.
 */
#include <stdio.h>

#include "inspect.h"

static void put(json_object *o, const char *key, json_object *v) {
  json_object_object_add(o, key, v);
}

static json_object *use_json(const struct ins_use *u) {
  json_object *o = json_object_new_object();
  put(o, "namespace", json_object_new_string(u->ns));
  put(o, "pod", json_object_new_string(u->pod));
  put(o, "container", json_object_new_string(u->container));
  put(o, "memory", json_object_new_int64(u->memory));
  put(o, "cores", json_object_new_int(u->cores));
  return o;
}

static json_object *gpu_json(const struct ins_gpu *g, int64_t *alloc) {
  json_object *o = json_object_new_object(), *pods = json_object_new_array();
  *alloc = 0;
  for (int i = 0; i < g->nuses; i++) {
    *alloc += g->uses[i].memory;
    json_object_array_add(pods, use_json(&g->uses[i]));
  }
  put(o, "index", json_object_new_int(g->index));
  put(o, "uuid", json_object_new_string(g->uuid));
  put(o, "type", json_object_new_string(g->type));
  put(o, "health", json_object_new_string(g->healthy ? "Healthy" : "Unhealthy"));
  if (g->reason != NULL) put(o, "reason", json_object_new_string(g->reason));
  put(o, "memoryTotal", json_object_new_int64(g->memory));
  put(o, "memoryAllocated", json_object_new_int64(*alloc));
  put(o, "coresAllocated", json_object_new_int(g->cores_alloc));
  put(o, "pods", pods);
  return o;
}

static json_object *unassigned_json(const struct ins_unassigned *u) {
  json_object *o = json_object_new_object();
  put(o, "namespace", json_object_new_string(u->ns));
  put(o, "pod", json_object_new_string(u->pod));
  put(o, "container", json_object_new_string(u->container));
  put(o, "resource", json_object_new_string(u->resource));
  put(o, "quantity", json_object_new_int64(u->quantity));
  put(o, "memory", u->memory >= 0 ? json_object_new_int64(u->memory) : NULL);
  return o;
}

static json_object *node_json(const struct ins_node *n, int64_t *total, int64_t *alloc) {
  json_object *o = json_object_new_object(), *gpus = json_object_new_array();
  json_object *un = json_object_new_array();
  int64_t unassigned = 0;
  *total = *alloc = 0;
  for (int i = 0; i < n->ngpus; i++) {
    int64_t a = 0;
    json_object_array_add(gpus, gpu_json(&n->gpu[i], &a));
    *alloc += a;
    *total += n->gpu[i].memory;
  }
  for (int i = 0; i < n->nun; i++) {
    json_object_array_add(un, unassigned_json(&n->un[i]));
    if (n->un[i].memory > 0) unassigned += n->un[i].memory;
  }
  *alloc += unassigned;
  put(o, "name", json_object_new_string(n->name));
  put(o, "ip", json_object_new_string(n->ip));
  put(o, "unschedulable", json_object_new_boolean(n->unschedulable));
  put(o, "memoryTotal", json_object_new_int64(*total));
  put(o, "memoryAllocated", json_object_new_int64(*alloc));
  put(o, "memoryUnassigned", json_object_new_int64(unassigned));
  put(o, "unassignedUnknown", json_object_new_boolean(n->unknown_memory));
  put(o, "coresAllocated", json_object_new_int(n->cores_alloc));
  put(o, "coresTotal", json_object_new_int(n->cores_total));
  put(o, "gpus", gpus);
  put(o, "unassigned", un);
  return o;
}

int ins_render_json(const struct ins_cluster *cl, FILE *out, struct vg_err *err) {
  json_object *root = json_object_new_object(), *nodes = json_object_new_array();
  json_object *cluster = json_object_new_object(), *warn = json_object_new_array();
  if (root == NULL || nodes == NULL || cluster == NULL || warn == NULL) {
    json_object_put(root);
    json_object_put(nodes);
    json_object_put(cluster);
    json_object_put(warn);
    return vg_err_set(err, "out of memory while building the JSON output");
  }
  int64_t total = 0, alloc = 0;
  for (int i = 0; i < cl->nnodes; i++) {
    int64_t t = 0, a = 0;
    json_object_array_add(nodes, node_json(&cl->node[i], &t, &a));
    total += t;
    alloc += a;
  }
  for (int i = 0; i < cl->nwarn; i++)
    json_object_array_add(warn, json_object_new_string(cl->warn[i]));
  put(cluster, "memoryTotal", json_object_new_int64(total));
  put(cluster, "memoryAllocated", json_object_new_int64(alloc));
  put(cluster, "percent", json_object_new_int(cl->percent));
  put(root, "unit", json_object_new_string(cl->unit_name));
  put(root, "unitBytes", json_object_new_int64(cl->unit));
  put(root, "cluster", cluster);
  put(root, "nodes", nodes);
  put(root, "warnings", warn);
  fprintf(out, "%s\n",
          json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
                                                   JSON_C_TO_STRING_NOSLASHESCAPE));
  json_object_put(root);
  return 0;
}
