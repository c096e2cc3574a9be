/* certs_api.c -- see certs_api.h. */
#include "certs_api.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "json_get.h"
#include "log.h"

#define CONFIG_GROUP "/apis/admissionregistration.k8s.io/v1/"

static void add_b64(json_object *data, const char *key, const char *pem) {
  char *b = vg_base64_encode(pem, strlen(pem));
  json_object_object_add(data, key, b != NULL ? json_object_new_string(b) : NULL);
  free(b);
}

static char *text_of(json_object *o) {
  const char *t =
      json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
  char *out = t != NULL ? strdup(t) : NULL;
  json_object_put(o);
  return out;
}

json_object *vg_wh_secret_object(const char *ns, const char *name, const char *type,
                                 const char *app) {
  json_object *s = json_object_new_object(), *meta = json_object_new_object();
  json_object *labels = json_object_new_object();
  json_object_object_add(s, "apiVersion", json_object_new_string("v1"));
  json_object_object_add(s, "kind", json_object_new_string("Secret"));
  json_object_object_add(meta, "name", json_object_new_string(name));
  json_object_object_add(meta, "namespace", json_object_new_string(ns));
  json_object_object_add(labels, "app.kubernetes.io/name", json_object_new_string(app));
  json_object_object_add(labels, "app.kubernetes.io/part-of", json_object_new_string("vgpu"));
  json_object_object_add(meta, "labels", labels);
  json_object_object_add(s, "metadata", meta);
  json_object_object_add(s, "type", json_object_new_string(type));
  return s;
}

char *vg_wh_secret_json(const char *ns, const char *name, const struct vg_wh_pem *pem,
                        const char *resource_version) {
  json_object *s = vg_wh_secret_object(ns, name, "kubernetes.io/tls", "vgpu-webhook");
  json_object *data = json_object_new_object();
  if (resource_version != NULL)
    json_object_object_add(vg_json_get(s, "metadata"), "resourceVersion",
                           json_object_new_string(resource_version));
  add_b64(data, "tls.crt", pem->cert);
  add_b64(data, "tls.key", pem->key);
  add_b64(data, "ca.crt", pem->ca_cert);
  json_object_object_add(s, "data", data);
  return text_of(s);
}

int vg_wh_secret_pem(json_object *secret, struct vg_wh_pem *out, struct vg_err *err) {
  static const char *const keys[] = {"ca.crt", "tls.crt", "tls.key"};
  char **dst[] = {&out->ca_cert, &out->cert, &out->key};
  memset(out, 0, sizeof(*out));
  json_object *data = vg_json_get(secret, "data");
  for (int i = 0; i < 3; i++) {
    json_object *v = vg_json_get(data, keys[i]);
    size_t len;
    if (v == NULL || !json_object_is_type(v, json_type_string) ||
        (*dst[i] = vg_base64_decode(json_object_get_string(v), &len)) == NULL ||
        strlen(*dst[i]) != len) {
      vg_wh_pem_free(out);
      return vg_err_set(err, "data.%s is missing or not base64 PEM", keys[i]);
    }
  }
  return 0;
}

static void patch_op(json_object *ops, const char *op, const char *path, const char *value) {
  json_object *o = json_object_new_object();
  json_object_object_add(o, "op", json_object_new_string(op));
  json_object_object_add(o, "path", json_object_new_string(path));
  json_object_object_add(o, "value", json_object_new_string(value));
  json_object_array_add(ops, o);
}

int vg_wh_cabundle_patch(json_object *config, const char *ca_pem, char **out, struct vg_err *err) {
  json_object *hooks = vg_json_get(config, "webhooks");
  size_t n = hooks != NULL && json_object_is_type(hooks, json_type_array)
                 ? json_object_array_length(hooks)
                 : 0;
  if (n == 0) return vg_err_set(err, "the MutatingWebhookConfiguration has no webhooks");
  char *b64 = vg_base64_encode(ca_pem, strlen(ca_pem));
  json_object *ops = json_object_new_array();
  bool same = true;
  for (size_t i = 0; i < n && b64 != NULL; i++) {
    json_object *h = json_object_array_get_idx(hooks, i), *name = vg_json_get(h, "name");
    json_object *cur = vg_json_get(vg_json_get(h, "clientConfig"), "caBundle");
    char path[96];
    snprintf(path, sizeof(path), "/webhooks/%zu/name", i);
    patch_op(ops, "test", path, name != NULL ? json_object_get_string(name) : "");
    snprintf(path, sizeof(path), "/webhooks/%zu/clientConfig/caBundle", i);
    patch_op(ops, "add", path, b64);
    same = same && cur != NULL && strcmp(json_object_get_string(cur), b64) == 0;
  }
  free(b64);
  if (same) {
    json_object_put(ops);
    return 1;
  }
  *out = text_of(ops);
  return *out != NULL ? 0 : vg_err_set(err, "out of memory");
}

/* 1: the Secret exists and is usable (pem filled); 0: a new pair is needed
 * (rv: the existing object's resourceVersion, "" if none); -1: err. */
static int read_secret(struct vg_k8s_client *c, const char *path,
                       const struct vg_wh_certs_options *o,
                       char names[VG_WH_CERT_NAMES][VG_WH_NAME_MAX], struct vg_wh_pem *pem,
                       char rv[64], struct vg_err *err) {
  json_object *cur = NULL;
  struct vg_err why = {{0}};
  rv[0] = '\0';
  int rc = vg_k8s_call(c, "GET", path, NULL, NULL, &cur, err);
  if (rc == VG_K8S_ENOTFOUND) return 0;
  if (rc != 0) return -1;
  json_object *v = vg_json_get(vg_json_get(cur, "metadata"), "resourceVersion");
  snprintf(rv, 64, "%s", v != NULL ? json_object_get_string(v) : "");
  int ok = vg_wh_secret_pem(cur, pem, &why) == 0 &&
           vg_wh_certs_check(pem, names, o->min_days, &why) == 0;
  json_object_put(cur);
  if (ok) return 1;
  vg_wh_pem_free(pem);
  vg_info("vgpu-webhook certs: Secret %s/%s will be replaced: %s", o->namespace_, o->secret,
          why.msg);
  return 0;
}

/* POST a new Secret, or PUT over the existing one (guarded by rv). */
static int write_secret(struct vg_k8s_client *c, const struct vg_wh_certs_options *o,
                        const char *path, const char *rv, const struct vg_wh_pem *pem,
                        struct vg_err *err) {
  char *body = vg_wh_secret_json(o->namespace_, o->secret, pem, *rv != '\0' ? rv : NULL);
  if (body == NULL) return vg_err_set(err, "out of memory");
  char collection[512];
  snprintf(collection, sizeof(collection), "%.*s", (int)(strrchr(path, '/') - path), path);
  int rc = *rv != '\0' ? vg_k8s_call(c, "PUT", path, "application/json", body, NULL, err)
                       : vg_k8s_call(c, "POST", collection, "application/json", body, NULL, err);
  free(body);
  if (rc == 0) vg_info("vgpu-webhook certs: Secret %s/%s written", o->namespace_, o->secret);
  return rc == 0 ? 0 : -1;
}

/* The Secret as it should be; *ca is its CA (malloc'd) for the caBundle. */
static int ensure_secret(struct vg_k8s_client *c, const struct vg_wh_certs_options *o,
                         char names[VG_WH_CERT_NAMES][VG_WH_NAME_MAX], char **ca,
                         struct vg_err *err) {
  char path[512], nsb[128], nb[256], rv[64];
  snprintf(path, sizeof(path), "/api/v1/namespaces/%s/secrets/%s",
           vg_k8s_escape(o->namespace_, nsb, sizeof(nsb)),
           vg_k8s_escape(o->secret, nb, sizeof(nb)));
  struct vg_wh_pem pem = {0};
  int rc = read_secret(c, path, o, names, &pem, rv, err);
  if (rc == 1) vg_info("vgpu-webhook certs: Secret %s/%s is valid; kept", o->namespace_, o->secret);
  if (rc == 0 && (vg_wh_certs_generate(names, o->days, &pem, err) != 0 ||
                  write_secret(c, o, path, rv, &pem, err) != 0))
    rc = -1;
  *ca = rc >= 0 ? pem.ca_cert : NULL;
  if (rc >= 0) pem.ca_cert = NULL;
  vg_wh_pem_free(&pem);
  return rc >= 0 ? 0 : -1;
}

/* kind: "mutatingwebhookconfigurations" or "validatingwebhookconfigurations"
 * (the same webhooks list and caBundle field). */
static int patch_config(struct vg_k8s_client *c, const char *kind, const char *name, const char *ca,
                        struct vg_err *err) {
  char path[512], nb[256], *patch = NULL;
  snprintf(path, sizeof(path), CONFIG_GROUP "%s/%s", kind, vg_k8s_escape(name, nb, sizeof(nb)));
  json_object *cfg = NULL;
  if (vg_k8s_call(c, "GET", path, NULL, NULL, &cfg, err) != 0) return -1;
  int rc = vg_wh_cabundle_patch(cfg, ca, &patch, err);
  json_object_put(cfg);
  if (rc == 1) vg_info("vgpu-webhook certs: %s already trusts the CA", name);
  if (rc != 0) return rc < 0 ? -1 : 0;
  rc = vg_k8s_call(c, "PATCH", path, "application/json-patch+json", patch, NULL, err);
  free(patch);
  if (rc == 0) vg_info("vgpu-webhook certs: caBundle of %s set", name);
  return rc == 0 ? 0 : -1;
}

int vg_wh_certs_run(struct vg_k8s_client *c, const struct vg_wh_certs_options *o,
                    struct vg_err *err) {
  char names[VG_WH_CERT_NAMES][VG_WH_NAME_MAX], *ca = NULL;
  if (vg_wh_cert_names(o->service, o->namespace_, names, err) != 0) return -1;
  if (ensure_secret(c, o, names, &ca, err) != 0) return -1;
  int rc = patch_config(c, "mutatingwebhookconfigurations", o->webhook_config, ca, err);
  if (rc == 0 && o->validating_config != NULL)
    rc = patch_config(c, "validatingwebhookconfigurations", o->validating_config, ca, err);
  free(ca);
  return rc;
}
