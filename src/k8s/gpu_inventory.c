/* gpu_inventory.c -- see gpu_inventory.h; the schema is in docs/inventory.md.
 *
 * The reader walks the document top down, one step per object (the
 * document, a GPU, a resource), each reading its fields with the two
 * helpers below, which name the field by its path when they refuse it. The
 * writer builds the document and reads it back with the reader, so that it
 * can never publish what a reader would refuse. */
#include "gpu_inventory.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define INT_MAX32 2147483647LL

static json_object *field(json_object *o, const char *key) {
  json_object *v = NULL;
  return json_object_object_get_ex(o, key, &v) ? v : NULL;
}

/* The field's path, e.g. "gpus[1].memory", for error messages. */
static const char *path(char *buf, size_t len, const char *where, const char *key) {
  snprintf(buf, len, "%s%s%s", where, where[0] ? "." : "", key);
  return buf;
}

/* An integer field within [lo, hi] into *out; absent: dflt when optional. */
static int get_int(json_object *o, const char *where, const char *key, bool required, int64_t lo,
                   int64_t hi, int64_t dflt, int64_t *out, struct vg_err *err) {
  char p[128];
  json_object *v = field(o, key);
  *out = dflt;
  if (v == NULL)
    return required ? vg_err_set(err, "%s is missing", path(p, sizeof(p), where, key)) : 0;
  if (!json_object_is_type(v, json_type_int))
    return vg_err_set(err, "%s is not an integer", path(p, sizeof(p), where, key));
  errno = 0;
  int64_t x = json_object_get_int64(v);
  if (errno != 0 || x < lo || x > hi)
    return vg_err_set(err, "%s is %s, out of range %lld..%lld", path(p, sizeof(p), where, key),
                      json_object_to_json_string(v), (long long)lo, (long long)hi);
  *out = x;
  return 0;
}

/* A string field of at most len-1 bytes (at least one when nonempty) into
 * buf; absent: "" when optional. */
static int get_str(json_object *o, const char *where, const char *key, bool required, bool nonempty,
                   char *buf, size_t len, struct vg_err *err) {
  char p[128];
  json_object *v = field(o, key);
  buf[0] = '\0';
  if (v == NULL)
    return required ? vg_err_set(err, "%s is missing", path(p, sizeof(p), where, key)) : 0;
  if (!json_object_is_type(v, json_type_string))
    return vg_err_set(err, "%s is not a string", path(p, sizeof(p), where, key));
  const char *s = json_object_get_string(v);
  size_t n = strlen(s);
  if (n == 0 && nonempty) return vg_err_set(err, "%s is empty", path(p, sizeof(p), where, key));
  if (n >= len)
    return vg_err_set(err, "%s is longer than %zu bytes", path(p, sizeof(p), where, key), len - 1);
  memcpy(buf, s, n + 1);
  return 0;
}

/* An array field (absent: NULL when optional) of at most max entries. */
static int get_array(json_object *o, const char *where, const char *key, bool required, size_t max,
                     json_object **out, struct vg_err *err) {
  char p[128];
  *out = field(o, key);
  if (*out == NULL)
    return required ? vg_err_set(err, "%s is missing", path(p, sizeof(p), where, key)) : 0;
  if (!json_object_is_type(*out, json_type_array))
    return vg_err_set(err, "%s is not an array", path(p, sizeof(p), where, key));
  if (json_object_array_length(*out) > max)
    return vg_err_set(err, "%s has more than %zu entries", path(p, sizeof(p), where, key), max);
  return 0;
}

static int parse_resource(json_object *o, const char *where, struct vg_inv_resource *r,
                          struct vg_err *err) {
  if (!json_object_is_type(o, json_type_object))
    return vg_err_set(err, "%s is not an object", where);
  if (get_str(o, where, "name", true, true, r->name, sizeof(r->name), err) != 0 ||
      get_str(o, where, "dialect", true, true, r->dialect, sizeof(r->dialect), err) != 0 ||
      get_int(o, where, "count", false, 0, INT_MAX32, 0, &r->count, err) != 0 ||
      get_int(o, where, "unit", false, 0, VG_INV_MAX_BYTES, 0, &r->unit, err) != 0 ||
      get_int(o, where, "memory", false, 0, VG_INV_MAX_BYTES, -1, &r->memory, err) != 0 ||
      get_int(o, where, "cores", false, 0, INT_MAX32, -1, &r->cores, err) != 0 ||
      get_int(o, where, "maxVgpus", false, 0, INT_MAX32, -1, &r->max_vgpus, err) != 0)
    return -1;
  return 0;
}

/* numa: an integer, or null (unknown) like its absence. */
static int get_numa(json_object *o, const char *where, int64_t *out, struct vg_err *err) {
  json_object *v = field(o, "numa");
  if (v == NULL) { /* null or absent */
    *out = -1;
    return 0;
  }
  return get_int(o, where, "numa", true, 0, 65535, -1, out, err);
}

static int parse_gpu(json_object *o, size_t i, struct vg_inv_gpu *g, struct vg_err *err) {
  char where[32];
  snprintf(where, sizeof(where), "gpus[%zu]", i);
  if (!json_object_is_type(o, json_type_object))
    return vg_err_set(err, "%s is not an object", where);
  char health[32];
  json_object *res;
  if (get_int(o, where, "index", false, 0, 1 << 20, (int64_t)i, &g->index, err) != 0 ||
      get_str(o, where, "uuid", true, true, g->uuid, sizeof(g->uuid), err) != 0 ||
      get_str(o, where, "type", false, false, g->type, sizeof(g->type), err) != 0 ||
      get_int(o, where, "memory", true, 0, VG_INV_MAX_BYTES, 0, &g->memory, err) != 0 ||
      get_numa(o, where, &g->numa, err) != 0 ||
      get_str(o, where, "health", true, true, health, sizeof(health), err) != 0 ||
      get_str(o, where, "reason", false, false, g->reason, sizeof(g->reason), err) != 0 ||
      get_array(o, where, "resources", false, VG_INV_MAX_RES, &res, err) != 0)
    return -1;
  g->healthy = strcmp(health, "Healthy") == 0;
  size_t n = res != NULL ? json_object_array_length(res) : 0;
  for (size_t k = 0; k < n; k++) {
    char w[64];
    snprintf(w, sizeof(w), "%s.resources[%zu]", where, k);
    if (parse_resource(json_object_array_get_idx(res, k), w, &g->res[k], err) != 0) return -1;
    g->nres = (int)k + 1;
  }
  return 0;
}

static int parse_doc(json_object *doc, struct vg_inv *inv, struct vg_err *err) {
  int64_t version;
  json_object *gpus;
  if (doc == NULL || !json_object_is_type(doc, json_type_object))
    return vg_err_set(err, "not a JSON object");
  if (get_int(doc, "", "version", true, 0, INT_MAX32, 0, &version, err) != 0) return -1;
  if (version != VG_INVENTORY_VERSION)
    return vg_err_set(err, "version %lld, this reader knows version %d", (long long)version,
                      VG_INVENTORY_VERSION);
  if (get_str(doc, "", "node", false, false, inv->node, sizeof(inv->node), err) != 0 ||
      get_int(doc, "", "contextReserve", false, 0, VG_INV_MAX_BYTES, 0, &inv->context_reserve,
              err) != 0 ||
      get_array(doc, "", "gpus", true, VG_INV_MAX_GPUS, &gpus, err) != 0)
    return -1;
  size_t n = json_object_array_length(gpus);
  inv->gpu = calloc(n > 0 ? n : 1, sizeof(*inv->gpu));
  if (inv->gpu == NULL) return vg_err_set(err, "out of memory");
  for (size_t i = 0; i < n; i++) {
    if (parse_gpu(json_object_array_get_idx(gpus, i), i, &inv->gpu[i], err) != 0) return -1;
    inv->ngpus = (int)i + 1;
  }
  return 0;
}

int vg_inv_parse(const char *text, struct vg_inv *inv, struct vg_err *err) {
  memset(inv, 0, sizeof(*inv));
  json_object *doc = text != NULL ? json_tokener_parse(text) : NULL;
  int rc = parse_doc(doc, inv, err);
  json_object_put(doc);
  return rc;
}

/* ---- writer ---- */

static json_object *resource_json(const struct vg_inv_resource *r) {
  json_object *o = json_object_new_object();
  json_object_object_add(o, "name", json_object_new_string(r->name));
  json_object_object_add(o, "dialect", json_object_new_string(r->dialect));
  json_object_object_add(o, "count", json_object_new_int64(r->count));
  json_object_object_add(o, "unit", json_object_new_int64(r->unit));
  if (r->memory >= 0) json_object_object_add(o, "memory", json_object_new_int64(r->memory));
  if (r->cores >= 0) json_object_object_add(o, "cores", json_object_new_int64(r->cores));
  if (r->max_vgpus >= 0) json_object_object_add(o, "maxVgpus", json_object_new_int64(r->max_vgpus));
  return o;
}

static json_object *gpu_json(const struct vg_inv_gpu *g) {
  json_object *o = json_object_new_object();
  json_object_object_add(o, "index", json_object_new_int64(g->index));
  json_object_object_add(o, "uuid", json_object_new_string(g->uuid));
  json_object_object_add(o, "type", json_object_new_string(g->type));
  json_object_object_add(o, "memory", json_object_new_int64(g->memory));
  json_object_object_add(o, "numa", g->numa >= 0 ? json_object_new_int64(g->numa) : NULL);
  json_object_object_add(o, "health", json_object_new_string(g->healthy ? "Healthy" : "Unhealthy"));
  if (!g->healthy && g->reason[0])
    json_object_object_add(o, "reason", json_object_new_string(g->reason));
  json_object *res = json_object_new_array();
  for (int k = 0; k < g->nres; k++) json_object_array_add(res, resource_json(&g->res[k]));
  json_object_object_add(o, "resources", res);
  return o;
}

json_object *vg_inv_to_json(const struct vg_inv *inv, struct vg_err *err) {
  json_object *doc = json_object_new_object();
  json_object_object_add(doc, "version", json_object_new_int(VG_INVENTORY_VERSION));
  json_object_object_add(doc, "node", json_object_new_string(inv->node));
  json_object_object_add(doc, "contextReserve", json_object_new_int64(inv->context_reserve));
  json_object *gpus = json_object_new_array();
  for (int i = 0; i < inv->ngpus; i++) json_object_array_add(gpus, gpu_json(&inv->gpu[i]));
  json_object_object_add(doc, "gpus", gpus);
  struct vg_inv back; /* what every reader will make of it */
  int rc = vg_inv_parse(json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PLAIN), &back, err);
  vg_inv_free(&back);
  if (rc != 0) {
    json_object_put(doc);
    return NULL;
  }
  return doc;
}

struct vg_inv_gpu *vg_inv_add_gpu(struct vg_inv *inv) {
  if (inv->ngpus >= VG_INV_MAX_GPUS) return NULL;
  struct vg_inv_gpu *g = realloc(inv->gpu, ((size_t)inv->ngpus + 1) * sizeof(*g));
  if (g == NULL) return NULL;
  inv->gpu = g;
  g = &inv->gpu[inv->ngpus];
  memset(g, 0, sizeof(*g));
  g->index = inv->ngpus++;
  g->numa = -1;
  g->healthy = true;
  return g;
}

struct vg_inv_resource *vg_inv_add_resource(struct vg_inv_gpu *g) {
  if (g->nres >= VG_INV_MAX_RES) return NULL;
  struct vg_inv_resource *r = &g->res[g->nres++];
  memset(r, 0, sizeof(*r));
  r->memory = r->cores = r->max_vgpus = -1;
  return r;
}

void vg_inv_free(struct vg_inv *inv) {
  free(inv->gpu);
  inv->gpu = NULL;
  inv->ngpus = 0;
}
