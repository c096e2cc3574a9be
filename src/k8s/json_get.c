/* json_get.c -- see json_get.h. */
#include "json_get.h"

json_object *vg_json_get(json_object *o, const char *key) {
  json_object *v = NULL;
  if (o && json_object_is_type(o, json_type_object) && json_object_object_get_ex(o, key, &v))
    return v;
  return NULL;
}

const char *vg_json_get_str(json_object *o, const char *key) {
  json_object *v = vg_json_get(o, key);
  return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}
