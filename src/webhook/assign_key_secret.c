/* assign_key_secret.c -- see assign_key_secret.h and docs/security.md. */
#include "assign_key_secret.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>

#include "base64.h"
#include "certs_api.h"
#include "json_get.h"
#include "log.h"

char *vg_wh_assign_key_secret_json(const char *ns, const char *name, const unsigned char *key,
                                   size_t len) {
  char *b64 = vg_base64_encode((const char *)key, len);
  if (b64 == NULL) return NULL;
  json_object *s = vg_wh_secret_object(ns, name, "Opaque", name);
  json_object *data = json_object_new_object();
  json_object_object_add(data, VG_WH_ASSIGN_KEY_FIELD, json_object_new_string(b64));
  json_object_object_add(s, "data", data);
  gnutls_memset(b64, 0, strlen(b64));
  free(b64);
  const char *t = json_object_to_json_string_ext(s, JSON_C_TO_STRING_PLAIN);
  char *out = t != NULL ? strdup(t) : NULL;
  json_object_put(s);
  return out;
}

int vg_wh_assign_key_check(json_object *secret, struct vg_err *err) {
  json_object *v = vg_json_get(vg_json_get(secret, "data"), VG_WH_ASSIGN_KEY_FIELD);
  size_t len = 0;
  char *key = v != NULL && json_object_is_type(v, json_type_string)
                  ? vg_base64_decode(json_object_get_string(v), &len)
                  : NULL;
  if (key == NULL)
    return vg_err_set(err, "data.%s is missing or not base64", VG_WH_ASSIGN_KEY_FIELD);
  gnutls_memset(key, 0, len);
  free(key);
  if (len < VG_WH_ASSIGN_KEY_BYTES)
    return vg_err_set(err, "data.%s holds %zu bytes, not at least %d", VG_WH_ASSIGN_KEY_FIELD, len,
                      VG_WH_ASSIGN_KEY_BYTES);
  return 0;
}

/* POSTs a new Secret with fresh random bytes. 409: another Job made it
 * meanwhile (1: read it again). */
static int create(struct vg_k8s_client *c, const char *ns, const char *name, const char *collection,
                  struct vg_err *err) {
  unsigned char key[VG_WH_ASSIGN_KEY_BYTES];
  int g = gnutls_rnd(GNUTLS_RND_KEY, key, sizeof(key));
  if (g < 0) return vg_err_set(err, "GnuTLS: random key: %s", gnutls_strerror(g));
  char *body = vg_wh_assign_key_secret_json(ns, name, key, sizeof(key));
  gnutls_memset(key, 0, sizeof(key));
  if (body == NULL) return vg_err_set(err, "out of memory");
  int rc = vg_k8s_call(c, "POST", collection, "application/json", body, NULL, err);
  gnutls_memset(body, 0, strlen(body));
  free(body);
  if (rc == VG_K8S_ECONFLICT) return 1;
  if (rc != 0) return -1;
  vg_info("vgpu-webhook certs: Secret %s/%s made with a new assignment key", ns, name);
  return 0;
}

int vg_wh_assign_key_ensure(struct vg_k8s_client *c, const char *ns, const char *name,
                            struct vg_err *err) {
  char path[512], collection[256], nsb[128], nb[256];
  vg_k8s_escape(ns, nsb, sizeof(nsb));
  snprintf(collection, sizeof(collection), "/api/v1/namespaces/%s/secrets", nsb);
  snprintf(path, sizeof(path), "%s/%s", collection, vg_k8s_escape(name, nb, sizeof(nb)));
  for (int attempt = 0; attempt < 2; attempt++) {
    json_object *cur = NULL;
    int rc = vg_k8s_call(c, "GET", path, NULL, NULL, &cur, err);
    if (rc == VG_K8S_ENOTFOUND) {
      int made = create(c, ns, name, collection, err);
      if (made <= 0) return made;
      continue; /* made by someone else meanwhile: check theirs */
    }
    if (rc != 0) return -1;
    struct vg_err why = {{0}};
    rc = vg_wh_assign_key_check(cur, &why);
    json_object_put(cur);
    if (rc != 0)
      return vg_err_set(err,
                        "Secret %s/%s holds no usable assignment key (%s): delete it and run "
                        "the Job again (running GPU pods then need to be recreated)",
                        ns, name, why.msg);
    vg_info("vgpu-webhook certs: Secret %s/%s holds an assignment key; kept", ns, name);
    return 0;
  }
  return vg_err_set(err, "Secret %s/%s: created by another writer but not readable", ns, name);
}
