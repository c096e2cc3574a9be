/* requests.c -- see requests.h. */
#include "requests.h"

#include <stdbool.h>
#include <stdio.h>

#include "json_get.h"
#include "quantity.h"

#define MIB (1LL << 20)
#define MAX_MILLI (INT64_MAX / 4) /* sums of many pods stay in range */

/* What a ResourceList is read for: cpu and memory, or one extended
 * resource's count. */
enum kind { CPU, MEM, COUNT };

/* One quantity into milli-cores (cpu), MiB (memory) or a count, rounded up. */
static int read_one(json_object *v, enum kind k, int64_t *out, struct vg_err *err) {
  if (!v || !(json_object_is_type(v, json_type_string) || json_object_is_type(v, json_type_int) ||
              json_object_is_type(v, json_type_double)))
    return vg_err_set(err, "not a quantity");
  int64_t x;
  if (vg_quantity_parse_ceil(json_object_get_string(v), k == CPU ? 3 : 0, &x, err) != 0) return -1;
  if (k == MEM) x = x / MIB + (x % MIB != 0);
  if (x > MAX_MILLI)
    return vg_err_set(err, "quantity '%s' is too large", json_object_get_string(v));
  *out = x;
  return 0;
}

/* The amounts a ResourceList gives of n keys (absent: 0). */
struct want {
  int n;
  const char *keys[2];
  enum kind kinds[2];
};

static int read_list(json_object *list, const char *what, const struct want *w, int64_t *out,
                     struct vg_err *err) {
  for (int k = 0; k < w->n; k++) {
    out[k] = 0;
    json_object *v = vg_json_get(list, w->keys[k]);
    if (!v) continue;
    struct vg_err e = {{0}};
    if (read_one(v, w->kinds[k], &out[k], &e) != 0)
      return vg_err_set(err, "%s %s: %s", what, w->keys[k], e.msg);
  }
  return 0;
}

/* Sum (app containers) or maximum (init containers) of their requests. */
static int fold_containers(json_object *ctrs, bool sum, const struct want *w, int64_t *acc,
                           struct vg_err *err) {
  size_t n =
      ctrs && json_object_is_type(ctrs, json_type_array) ? json_object_array_length(ctrs) : 0;
  for (size_t i = 0; i < n; i++) {
    json_object *c = json_object_array_get_idx(ctrs, i);
    const char *name = vg_json_get_str(c, "name");
    char what[128];
    snprintf(what, sizeof(what), "container %.64s requests", name ? name : "?");
    int64_t r[2], lim[2];
    json_object *res = vg_json_get(c, "resources"), *req = vg_json_get(res, "requests");
    if (read_list(req, what, w, r, err) != 0) return -1;
    /* A limit without a request requests the limit: the API server's
     * defaulting, which a Pod read from elsewhere may not have had. */
    snprintf(what, sizeof(what), "container %.64s limits", name ? name : "?");
    if (read_list(vg_json_get(res, "limits"), what, w, lim, err) != 0) return -1;
    for (int k = 0; k < w->n; k++) {
      if (!vg_json_get(req, w->keys[k])) r[k] = lim[k];
      acc[k] = sum ? acc[k] + r[k] : (r[k] > acc[k] ? r[k] : acc[k]);
    }
  }
  return 0;
}

/* The pod's requests of w's keys into out, as kube-scheduler counts them. */
static int pod_amounts(json_object *pod, const struct want *w, int64_t *out, struct vg_err *err) {
  json_object *spec = vg_json_get(pod, "spec");
  int64_t app[2] = {0, 0}, init[2] = {0, 0}, over[2];
  if (fold_containers(vg_json_get(spec, "containers"), true, w, app, err) != 0 ||
      fold_containers(vg_json_get(spec, "initContainers"), false, w, init, err) != 0 ||
      read_list(vg_json_get(spec, "overhead"), "pod overhead", w, over, err) != 0)
    return -1;
  for (int k = 0; k < w->n; k++) out[k] = (app[k] > init[k] ? app[k] : init[k]) + over[k];
  return 0;
}

static const struct want g_cpu_mem = {2, {"cpu", "memory"}, {CPU, MEM}};

int vg_pod_requests(json_object *pod, struct vg_cpu_mem *out, struct vg_err *err) {
  int64_t v[2];
  if (pod_amounts(pod, &g_cpu_mem, v, err) != 0) return -1;
  out->cpu = v[0];
  out->mem = v[1];
  return 0;
}

int vg_pod_request_count(json_object *pod, const char *resource, int64_t *out, struct vg_err *err) {
  const struct want w = {1, {resource, NULL}, {COUNT, COUNT}};
  return pod_amounts(pod, &w, out, err);
}

int vg_node_allocatable_count(json_object *node, const char *resource, int64_t *out,
                              struct vg_err *err) {
  json_object *alloc = vg_json_get(vg_json_get(node, "status"), "allocatable");
  const struct want w = {1, {resource, NULL}, {COUNT, COUNT}};
  if (!vg_json_get(alloc, resource)) return 0;
  return read_list(alloc, "node allocatable", &w, out, err) == 0 ? 1 : -1;
}

int vg_node_allocatable(json_object *node, struct vg_cpu_mem *out, struct vg_err *err) {
  json_object *alloc = vg_json_get(vg_json_get(node, "status"), "allocatable");
  if (!vg_json_get(alloc, "cpu") || !vg_json_get(alloc, "memory")) return 0;
  int64_t v[2];
  if (read_list(alloc, "node allocatable", &g_cpu_mem, v, err) != 0) return -1;
  out->cpu = v[0];
  out->mem = v[1];
  return 1;
}
