/* fake_requests.c -- see fake_requests.h. */
#include "fake_requests.h"

#include <string.h>

long vg_fake_requests(struct vg_k8s_client *c, const char *prefix, struct vg_err *err) {
  json_object *o = NULL, *counts = NULL;
  if (vg_k8s_call(c, "GET", "/_test/requests", NULL, NULL, &o, err) != 0) return -1;
  long n = 0;
  if (json_object_object_get_ex(o, "counts", &counts)) {
    json_object_object_foreach(counts, key, val) {
      if (strncmp(key, prefix, strlen(prefix)) == 0) n += (long)json_object_get_int64(val);
    }
  }
  json_object_put(o);
  return n;
}
