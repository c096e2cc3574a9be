/*
 * json_get.h -- reading a member of a Kubernetes object that may be absent
 * or of the wrong type, without a check at every step: each returns NULL
 * for a non-object parent, a missing key or (for _str) a non-string, so
 * paths chain: vg_json_get_str(vg_json_get(pod, "spec"), "schedulerName").
 */
#ifndef VG_K8S_JSON_GET_H
#define VG_K8S_JSON_GET_H

#include <json-c/json.h>

json_object *vg_json_get(json_object *o, const char *key);
const char *vg_json_get_str(json_object *o, const char *key);

#endif
