/*
 * certs_api.h -- `vgpu-webhook certs`: the serving certificate as a
 * kubernetes.io/tls Secret, and its CA as the caBundle of the
 * MutatingWebhookConfiguration (routing) and the ValidatingWebhookConfiguration
 * (the guard), through src/k8s.
 *
 * Idempotent, so the Job may run again (a re-install, a renewal): a Secret
 * that passes vg_wh_certs_check is kept and only the caBundle is brought in
 * line; otherwise a new pair replaces it. The request bodies are built by
 * the functions below, which tests/webhook checks without an API server.
 */
#ifndef VG_WH_CERTS_API_H
#define VG_WH_CERTS_API_H

#include <json-c/json.h>

#include "certs.h"
#include "k8s.h"

struct vg_wh_certs_options {
  const char *namespace_, *service, *secret, *webhook_config;
  /* The ValidatingWebhookConfiguration of the guard (docs/admission.md)
   * whose caBundle is set too; NULL for none. */
  const char *validating_config;
  unsigned days;     /* validity of a new pair */
  unsigned min_days; /* an existing pair with less left is replaced */
};

/* A Secret object ns/name of type, labelled app and part of vgpu, without
 * data (caller puts). */
json_object *vg_wh_secret_object(const char *ns, const char *name, const char *type,
                                 const char *app);

/* The Secret (type kubernetes.io/tls: tls.crt, tls.key, and ca.crt) as JSON
 * text; resource_version (may be NULL) makes it a guarded update. */
char *vg_wh_secret_json(const char *ns, const char *name, const struct vg_wh_pem *pem,
                        const char *resource_version);

/* The PEMs in a Secret's data. -1 with err when a key is missing or not
 * base64. */
int vg_wh_secret_pem(json_object *secret, struct vg_wh_pem *out, struct vg_err *err);

/* A JSONPatch setting every webhook's clientConfig.caBundle to ca_pem,
 * each guarded by a test of the webhook's name (the list may change between
 * our GET and PATCH). 0 with *out, 1 when every caBundle is already that,
 * -1 with err (no webhooks). */
int vg_wh_cabundle_patch(json_object *config, const char *ca_pem, char **out, struct vg_err *err);

/* The whole job against the API server. */
int vg_wh_certs_run(struct vg_k8s_client *c, const struct vg_wh_certs_options *o,
                    struct vg_err *err);

#endif
