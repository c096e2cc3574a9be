/* assignment.c -- see assignment.h and docs/scheduler.md ("the assignment annotation"). */
#include "assignment.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static json_object *field(json_object *o, const char *key) {
  json_object *v = NULL;
  return json_object_object_get_ex(o, key, &v) ? v : NULL;
}

/* A string field of 1..max-1 bytes copied into out. */
static int get_string(json_object *o, const char *key, char *out, size_t max, const char *where,
                      struct vg_err *err) {
  json_object *v = field(o, key);
  if (v == NULL) return vg_err_set(err, "%s: no \"%s\"", where, key);
  if (!json_object_is_type(v, json_type_string))
    return vg_err_set(err, "%s: \"%s\" is not a string", where, key);
  const char *s = json_object_get_string(v);
  size_t n = strlen(s);
  if (n == 0) return vg_err_set(err, "%s: \"%s\" is empty", where, key);
  if (n >= max) return vg_err_set(err, "%s: \"%s\" is longer than %zu bytes", where, key, max - 1);
  memcpy(out, s, n + 1);
  return 0;
}

/* An integer field within [lo, hi]. */
static int get_int(json_object *o, const char *key, int64_t lo, int64_t hi, int64_t *out,
                   const char *where, struct vg_err *err) {
  json_object *v = field(o, key);
  if (v == NULL) return vg_err_set(err, "%s: no \"%s\"", where, key);
  if (!json_object_is_type(v, json_type_int))
    return vg_err_set(err, "%s: \"%s\" is not an integer", where, key);
  errno = 0;
  int64_t x = json_object_get_int64(v);
  if (errno != 0 || x < lo || x > hi)
    return vg_err_set(err, "%s: \"%s\" is %s, not within %lld..%lld", where, key,
                      json_object_to_json_string(v), (long long)lo, (long long)hi);
  *out = x;
  return 0;
}

static int parse_gpu(json_object *o, struct vg_assign_gpu *g, const char *where,
                     struct vg_err *err) {
  if (!json_object_is_type(o, json_type_object))
    return vg_err_set(err, "%s is not an object", where);
  int64_t index, memory, cores;
  if (get_string(o, "uuid", g->uuid, sizeof(g->uuid), where, err) != 0 ||
      get_int(o, "index", 0, 1 << 20, &index, where, err) != 0 ||
      get_int(o, "memory", 1, INT64_MAX, &memory, where, err) != 0 ||
      get_int(o, "cores", 0, 100, &cores, where, err) != 0)
    return -1;
  g->index = (int)index;
  g->memory = memory;
  g->cores = (int)cores;
  return 0;
}

static int parse_ctr(json_object *o, struct vg_assign_ctr *c, const char *where,
                     struct vg_err *err) {
  if (!json_object_is_type(o, json_type_object))
    return vg_err_set(err, "%s is not an object", where);
  if (get_string(o, "name", c->name, sizeof(c->name), where, err) != 0 ||
      get_string(o, "resource", c->resource, sizeof(c->resource), where, err) != 0)
    return -1;
  json_object *gpus = field(o, "gpus");
  if (gpus == NULL || !json_object_is_type(gpus, json_type_array))
    return vg_err_set(err, "%s (%s): \"gpus\" is %s", where, c->name,
                      gpus == NULL ? "missing" : "not an array");
  size_t n = json_object_array_length(gpus);
  if (n == 0 || n > VG_ASSIGN_MAX_GPUS)
    return vg_err_set(err, "%s (%s): %zu GPUs, not 1..%d", where, c->name, n, VG_ASSIGN_MAX_GPUS);
  for (size_t i = 0; i < n; i++) {
    char w[160];
    snprintf(w, sizeof(w), "container %s: gpus[%zu]", c->name, i);
    if (parse_gpu(json_object_array_get_idx(gpus, i), &c->gpu[i], w, err) != 0) return -1;
    for (size_t j = 0; j < i; j++)
      if (strcmp(c->gpu[j].uuid, c->gpu[i].uuid) == 0)
        return vg_err_set(err, "container %s: GPU %s assigned twice", c->name, c->gpu[i].uuid);
  }
  c->ngpus = (int)n;
  return 0;
}

int vg_assign_parse(const char *text, struct vg_assignment *a, struct vg_err *err) {
  memset(a, 0, sizeof(*a));
  json_tokener *tok = json_tokener_new();
  if (tok == NULL) return vg_err_set(err, "assignment: out of memory");
  size_t len = strlen(text);
  json_object *root = json_tokener_parse_ex(tok, text, (int)(len < 1u << 30 ? len : 1u << 30));
  enum json_tokener_error jerr = json_tokener_get_error(tok);
  size_t used = tok->char_offset;
  json_tokener_free(tok);
  if (root == NULL || jerr != json_tokener_success || used != len) {
    json_object_put(root);
    return vg_err_set(
        err, "not JSON (%s at byte %zu)",
        jerr != json_tokener_success ? json_tokener_error_desc(jerr) : "trailing text", used);
  }
  int rc = -1;
  int64_t version;
  json_object *ctrs = field(root, "containers");
  if (!json_object_is_type(root, json_type_object)) {
    vg_err_set(err, "not a JSON object");
  } else if (get_int(root, "version", 0, INT32_MAX, &version, "assignment", err) != 0) {
  } else if (version != VG_ASSIGN_VERSION) {
    vg_err_set(err, "version %lld, this reader knows version %d", (long long)version,
               VG_ASSIGN_VERSION);
  } else if (get_string(root, "node", a->node, sizeof(a->node), "assignment", err) != 0) {
  } else if (ctrs == NULL || !json_object_is_type(ctrs, json_type_array)) {
    vg_err_set(err, "assignment: \"containers\" is %s", ctrs == NULL ? "missing" : "not an array");
  } else if (json_object_array_length(ctrs) > VG_ASSIGN_MAX_CTRS) {
    vg_err_set(err, "assignment: more than %d containers", VG_ASSIGN_MAX_CTRS);
  } else {
    size_t n = json_object_array_length(ctrs);
    a->ctr = calloc(n > 0 ? n : 1, sizeof(*a->ctr));
    rc = a->ctr == NULL ? vg_err_set(err, "assignment: out of memory") : 0;
    for (size_t i = 0; rc == 0 && i < n; i++) {
      char w[64];
      snprintf(w, sizeof(w), "containers[%zu]", i);
      rc = parse_ctr(json_object_array_get_idx(ctrs, i), &a->ctr[i], w, err);
      for (size_t j = 0; rc == 0 && j < i; j++)
        if (strcmp(a->ctr[j].name, a->ctr[i].name) == 0 &&
            strcmp(a->ctr[j].resource, a->ctr[i].resource) == 0)
          rc = vg_err_set(err, "container %s (%s) appears twice", a->ctr[i].name,
                          a->ctr[i].resource);
      a->nctrs = (int)i + 1;
    }
  }
  json_object_put(root);
  if (rc != 0) vg_assign_free(a);
  return rc;
}

int vg_assign_from_pod(json_object *pod, struct vg_assignment *a, struct vg_err *err) {
  json_object *ann = field(field(pod, "metadata"), "annotations");
  json_object *text = ann != NULL ? field(ann, VG_ASSIGNED_ANNOTATION) : NULL;
  if (text == NULL) {
    memset(a, 0, sizeof(*a));
    return 0;
  }
  struct vg_err e = {""};
  if (!json_object_is_type(text, json_type_string)) {
    vg_err_set(&e, "not a string");
  } else if (vg_assign_parse(json_object_get_string(text), a, &e) == 0) {
    return 1;
  }
  vg_err_set(err, "annotation %s: %s", VG_ASSIGNED_ANNOTATION, e.msg);
  return -1;
}

struct vg_assign_ctr *vg_assign_add_ctr(struct vg_assignment *a, const char *name,
                                        const char *resource) {
  if (a->nctrs >= VG_ASSIGN_MAX_CTRS) return NULL;
  struct vg_assign_ctr *grown = realloc(a->ctr, (size_t)(a->nctrs + 1) * sizeof(*a->ctr));
  if (grown == NULL) return NULL;
  a->ctr = grown;
  struct vg_assign_ctr *c = &a->ctr[a->nctrs++];
  memset(c, 0, sizeof(*c));
  snprintf(c->name, sizeof(c->name), "%s", name);
  snprintf(c->resource, sizeof(c->resource), "%s", resource);
  return c;
}

json_object *vg_assign_to_json(const struct vg_assignment *a, struct vg_err *err) {
  json_object *o = json_object_new_object(), *ctrs = json_object_new_array();
  json_object_object_add(o, "version", json_object_new_int(VG_ASSIGN_VERSION));
  json_object_object_add(o, "node", json_object_new_string(a->node));
  json_object_object_add(o, "containers", ctrs);
  for (int i = 0; i < a->nctrs; i++) {
    const struct vg_assign_ctr *c = &a->ctr[i];
    json_object *jc = json_object_new_object(), *gpus = json_object_new_array();
    json_object_object_add(jc, "name", json_object_new_string(c->name));
    json_object_object_add(jc, "resource", json_object_new_string(c->resource));
    json_object_object_add(jc, "gpus", gpus);
    for (int k = 0; k < c->ngpus; k++) {
      json_object *g = json_object_new_object();
      json_object_object_add(g, "uuid", json_object_new_string(c->gpu[k].uuid));
      json_object_object_add(g, "index", json_object_new_int(c->gpu[k].index));
      json_object_object_add(g, "memory", json_object_new_int64(c->gpu[k].memory));
      json_object_object_add(g, "cores", json_object_new_int(c->gpu[k].cores));
      json_object_array_add(gpus, g);
    }
    json_object_array_add(ctrs, jc);
  }
  /* What we write must be what every reader accepts. */
  struct vg_assignment check;
  if (vg_assign_parse(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN), &check, err) !=
      0) {
    json_object_put(o);
    return NULL;
  }
  vg_assign_free(&check);
  return o;
}

const struct vg_assign_ctr *vg_assign_find(const struct vg_assignment *a, const char *name,
                                           const char *resource) {
  for (int i = 0; i < a->nctrs; i++)
    if (strcmp(a->ctr[i].name, name) == 0 && strcmp(a->ctr[i].resource, resource) == 0)
      return &a->ctr[i];
  return NULL;
}

void vg_assign_free(struct vg_assignment *a) {
  free(a->ctr);
  memset(a, 0, sizeof(*a));
}
