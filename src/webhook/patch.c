/* patch.c -- see patch.h. */
#include "patch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

bool vg_wh_pointer_escape(const char *s, char *buf, size_t len) {
  size_t o = 0;
  for (; *s != '\0'; s++) {
    const char *rep = *s == '~' ? "~0" : *s == '/' ? "~1" : NULL;
    size_t n = rep != NULL ? 2 : 1;
    if (o + n >= len) return false;
    if (rep != NULL)
      memcpy(buf + o, rep, 2);
    else
      buf[o] = *s;
    o += n;
  }
  buf[o] = '\0';
  return o < len;
}

static void add_op(json_object *ops, const char *path, json_object *value) {
  json_object *op = json_object_new_object();
  json_object_object_add(op, "op", json_object_new_string("add"));
  json_object_object_add(op, "path", json_object_new_string(path));
  json_object_object_add(op, "value", value);
  json_object_array_add(ops, op);
}

/* add of key in the map at /metadata/<map>: a pointer into the map, or the
 * whole map when there is none (a pointer into it would not resolve). */
static void add_meta(json_object *ops, const char *map, bool present, const char *key,
                     json_object *value) {
  char esc[128], path[192];
  if (present) {
    vg_wh_pointer_escape(key, esc, sizeof(esc));
    snprintf(path, sizeof(path), "/metadata/%s/%s", map, esc);
    add_op(ops, path, value);
    return;
  }
  json_object *whole = json_object_new_object();
  json_object_object_add(whole, key, value);
  snprintf(path, sizeof(path), "/metadata/%s", map);
  add_op(ops, path, whole);
}

char *vg_wh_patch(const struct vg_wh_decision *d) {
  json_object *ops = json_object_new_array();
  if (ops == NULL) return NULL;
  if (d->set_scheduler) add_op(ops, "/spec/schedulerName", json_object_new_string(VG_WH_SCHEDULER));
  if (d->set_scheduler && d->record_original)
    add_meta(ops, "annotations", d->annotations_present, VG_WH_ORIGINAL_ANNOTATION,
             json_object_new_string(d->original));
  if (d->add_label)
    add_meta(ops, "labels", d->labels_present, VG_WH_MANAGED_LABEL,
             json_object_new_string(VG_WH_MANAGED_VALUE));
  const char *text =
      json_object_to_json_string_ext(ops, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
  char *out = text != NULL ? strdup(text) : NULL;
  json_object_put(ops);
  return out;
}
