/*
 * json_get.h -- reading a member of a Kubernetes object that may be absent
 * or of the wrong type, without a check at every step: each returns NULL
 * for a non-object parent, a missing key or (for _str) a non-string, so
 * paths chain: vg_json_get_str(vg_json_get(pod, "spec"), "schedulerName").
 */
#ifndef VG_K8S_JSON_GET_H
#define VG_K8S_JSON_GET_H

#include <stddef.h>

#include <json-c/json.h>

json_object *vg_json_get(json_object *o, const char *key);
const char *vg_json_get_str(json_object *o, const char *key);

/* Why vg_json_parse_object refused a text. */
enum vg_json_bad {
  VG_JSON_NOT_OBJECT = -1, /* not JSON, bytes after the value, or not an object */
  VG_JSON_NUL = -2         /* JSON, but a string or name holds a NUL (\u0000) */
};

/* Parses all len bytes of text as one JSON object. json-c alone stops at
 * the end of the first value (trailing bytes pass unseen), takes any value
 * (a "null" body parses to NULL with the error "success") and keeps a
 * \u0000 inside a string, which every C reader of it then cuts short (a pod
 * name "a\u0000b" reads as "a"). Returns the object (caller puts), or NULL
 * with *bad set and why naming what (`what`, e.g. "request body") and what
 * is wrong with it, and where. */
json_object *vg_json_parse_object(const char *text, size_t len, const char *what,
                                  enum vg_json_bad *bad, char *why, size_t why_len);

#endif
