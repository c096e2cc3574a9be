/* requests.c -- see requests.h. */
#include "requests.h"

#include <stdbool.h>
#include <stdio.h>

#include "json_get.h"
#include "quantity.h"

#define MIB (1LL << 20)
#define MAX_MILLI (INT64_MAX / 4) /* sums of many pods stay in range */

/* One quantity into milli-cores (cpu) or MiB (memory), rounded up. */
static int read_one(json_object *v, bool cpu, int64_t *out, struct vg_err *err) {
  if (!v || !(json_object_is_type(v, json_type_string) || json_object_is_type(v, json_type_int) ||
              json_object_is_type(v, json_type_double)))
    return vg_err_set(err, "not a quantity");
  int64_t x;
  if (vg_quantity_parse_ceil(json_object_get_string(v), cpu ? 3 : 0, &x, err) != 0) return -1;
  if (!cpu) x = x / MIB + (x % MIB != 0);
  if (x > MAX_MILLI)
    return vg_err_set(err, "quantity '%s' is too large", json_object_get_string(v));
  *out = x;
  return 0;
}

/* The cpu and memory of a ResourceList (absent: 0). */
static int read_list(json_object *list, const char *what, struct vg_cpu_mem *out,
                     struct vg_err *err) {
  static const char *const keys[] = {"cpu", "memory"};
  int64_t *dst[] = {&out->cpu, &out->mem};
  out->cpu = out->mem = 0;
  for (int k = 0; k < 2; k++) {
    json_object *v = vg_json_get(list, keys[k]);
    if (!v) continue;
    struct vg_err e = {{0}};
    if (read_one(v, k == 0, dst[k], &e) != 0)
      return vg_err_set(err, "%s %s: %s", what, keys[k], e.msg);
  }
  return 0;
}

/* Sum (app containers) or maximum (init containers) of their requests. */
static int fold_containers(json_object *ctrs, bool sum, struct vg_cpu_mem *acc,
                           struct vg_err *err) {
  size_t n =
      ctrs && json_object_is_type(ctrs, json_type_array) ? json_object_array_length(ctrs) : 0;
  for (size_t i = 0; i < n; i++) {
    json_object *c = json_object_array_get_idx(ctrs, i);
    const char *name = vg_json_get_str(c, "name");
    char what[128];
    snprintf(what, sizeof(what), "container %.64s requests", name ? name : "?");
    struct vg_cpu_mem r, lim;
    json_object *res = vg_json_get(c, "resources"), *req = vg_json_get(res, "requests");
    if (read_list(req, what, &r, err) != 0) return -1;
    /* A limit without a request requests the limit: the API server's
     * defaulting, which a Pod read from elsewhere may not have had. */
    snprintf(what, sizeof(what), "container %.64s limits", name ? name : "?");
    if (read_list(vg_json_get(res, "limits"), what, &lim, err) != 0) return -1;
    if (!vg_json_get(req, "cpu")) r.cpu = lim.cpu;
    if (!vg_json_get(req, "memory")) r.mem = lim.mem;
    acc->cpu = sum ? acc->cpu + r.cpu : (r.cpu > acc->cpu ? r.cpu : acc->cpu);
    acc->mem = sum ? acc->mem + r.mem : (r.mem > acc->mem ? r.mem : acc->mem);
  }
  return 0;
}

int vg_pod_requests(json_object *pod, struct vg_cpu_mem *out, struct vg_err *err) {
  json_object *spec = vg_json_get(pod, "spec");
  struct vg_cpu_mem app = {0, 0}, init = {0, 0}, over;
  if (fold_containers(vg_json_get(spec, "containers"), true, &app, err) != 0 ||
      fold_containers(vg_json_get(spec, "initContainers"), false, &init, err) != 0 ||
      read_list(vg_json_get(spec, "overhead"), "pod overhead", &over, err) != 0)
    return -1;
  out->cpu = (app.cpu > init.cpu ? app.cpu : init.cpu) + over.cpu;
  out->mem = (app.mem > init.mem ? app.mem : init.mem) + over.mem;
  return 0;
}

int vg_node_allocatable(json_object *node, struct vg_cpu_mem *out, struct vg_err *err) {
  json_object *alloc = vg_json_get(vg_json_get(node, "status"), "allocatable");
  if (!vg_json_get(alloc, "cpu") || !vg_json_get(alloc, "memory")) return 0;
  return read_list(alloc, "node allocatable", out, err) == 0 ? 1 : -1;
}
