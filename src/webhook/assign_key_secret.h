/*
 * assign_key_secret.h -- `vgpu-webhook certs --assignment-key-secret NAME`:
 * the cluster's assignment key as a Secret.
 *
 * vgpu-scheduler signs every vgpu.io/assigned it writes and the node agents
 * check the signature (src/k8s/assignment_mac.h), with one key both read
 * from this Secret, mounted as a volume (deploy/base). The certs Job makes
 * it once: 32 bytes from GnuTLS's random generator (GNUTLS_RND_KEY) under
 * data.key. An existing Secret is kept as it is, so that re-running the Job
 * (a re-install, a renewal of the certificate) never invalidates the MACs
 * of running pods; one whose key is missing or too short is an error that
 * says what to do, never silently replaced.
 */
#ifndef VG_WH_ASSIGN_KEY_SECRET_H
#define VG_WH_ASSIGN_KEY_SECRET_H

#include <stddef.h>

#include <json-c/json.h>

#include "err.h"
#include "k8s.h"

#define VG_WH_ASSIGN_KEY_BYTES 32
#define VG_WH_ASSIGN_KEY_FIELD "key" /* data.key: the file the volume mounts */

/* The Secret (type Opaque, data.key = key) as JSON text (malloc'd), or NULL. */
char *vg_wh_assign_key_secret_json(const char *ns, const char *name, const unsigned char *key,
                                   size_t len);

/* Does secret hold a usable key (data.key, base64 of 32 or more bytes)?
 * 0, or -1 with err saying what is wrong. */
int vg_wh_assign_key_check(json_object *secret, struct vg_err *err);

/* The Secret ns/name as it should be: created when absent, kept when it
 * holds a key. 0, or -1 with err. */
int vg_wh_assign_key_ensure(struct vg_k8s_client *c, const char *ns, const char *name,
                            struct vg_err *err);

#endif
