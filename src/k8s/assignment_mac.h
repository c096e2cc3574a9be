/*
 * assignment_mac.h -- the `vgpu.io/assigned-mac` Pod annotation: vgpu-scheduler's
 * signature over `vgpu.io/assigned`, so that the node agent can tell an
 * assignment the scheduler wrote from one a tenant wrote.
 *
 * The node agent grants each container what `vgpu.io/assigned` says and
 * admits a pod at Allocate only when it carries one (gate.h). The admission
 * webhook keeps tenants from writing it, but only while it runs: a pod
 * created with spec.nodeName preset and a forged assignment during a
 * webhook outage would otherwise get any grant it names. So the extender,
 * which alone holds the cluster's assignment key with the agents, writes
 * beside the assignment an HMAC-SHA256 over it and the pod it belongs to,
 * and the agent trusts only an assignment whose MAC it can recompute.
 *
 * What is signed (vg_assign_mac_message): the version "v1", the pod's UID,
 * namespace, name, the node and the exact annotation text, each field
 * length-prefixed so that no two different tuples give the same bytes. The
 * UID is assigned by the API server when the pod is created, so a MAC
 * copied from another pod (even one of the same name, deleted and created
 * again) does not verify; the node binds it to the node the scheduler
 * chose. The annotation's value is "v1:" and the MAC in lowercase hex; a
 * later version changes both prefixes.
 *
 * The key is a file of at least 32 random bytes (deploy/: the Secret
 * vgpu-assignment-key, mounted into the extender's and the agent's pods),
 * read whole and used as is; it is re-read when the file changes (a Secret
 * volume is updated by swapping a symlink, which changes the inode), so a
 * rotated key takes effect without a restart. Binds and resizes signed with
 * the old key then no longer verify on the agents: rotate while no GPU pod
 * is being admitted, and recreate running pods if they are to be resized.
 *
 * Built with GnuTLS (HMAC, constant-time compare), for the extender and the
 * agent only; never linked into libvgpu.so.
 */
#ifndef VG_K8S_ASSIGNMENT_MAC_H
#define VG_K8S_ASSIGNMENT_MAC_H

#include <stdbool.h>
#include <stddef.h>

#include <json-c/json.h>

#include "err.h"

#define VG_ASSIGNED_MAC_ANNOTATION "vgpu.io/assigned-mac"
#define VG_ASSIGN_MAC_VERSION "v1"
#define VG_ASSIGN_KEY_MIN 32   /* bytes */
#define VG_ASSIGN_KEY_MAX 4096 /* bytes: a key file larger than this is a mistake */
#define VG_ASSIGN_MAC_LEN 32   /* HMAC-SHA256 */
/* "v1:" + 64 hex digits + NUL */
#define VG_ASSIGN_MAC_TEXT_MAX (sizeof(VG_ASSIGN_MAC_VERSION) + 1 + 2 * VG_ASSIGN_MAC_LEN)

/* What a MAC is computed over. */
struct vg_assign_subject {
  const char *uid, *ns, *name, *node;
  const char *assigned; /* the exact vgpu.io/assigned text */
};

/* The canonical message for s (malloc'd, *len bytes, not NUL-terminated
 * data but NUL-ended for printing); NULL when out of memory or a field is
 * NULL. */
char *vg_assign_mac_message(const struct vg_assign_subject *s, size_t *len);

/* The annotation value ("v1:<hex>") for s under key. 0, or -1 with err. */
int vg_assign_mac_with(const unsigned char *key, size_t keylen, const struct vg_assign_subject *s,
                       char out[VG_ASSIGN_MAC_TEXT_MAX], struct vg_err *err);

/* Are the two annotation values the same? In time that depends only on
 * the length of want (gnutls_memcmp), so that a forger learns nothing from
 * how long a wrong guess took. */
bool vg_assign_mac_equal(const char *given, const char *want);

/* ---- the key file ---- */

struct vg_assign_key;

/* Opens and reads the key file: NULL with err naming the file and why
 * (unreadable, shorter than VG_ASSIGN_KEY_MIN bytes, larger than
 * VG_ASSIGN_KEY_MAX). */
struct vg_assign_key *vg_assign_key_open(const char *path, struct vg_err *err);
void vg_assign_key_free(struct vg_assign_key *k);
const char *vg_assign_key_path(const struct vg_assign_key *k);

/* The annotation value for s under the key as the file holds it now (read
 * again when it changed). -1 with err when the file cannot be read or is
 * too short now: nothing may be signed or verified then. Thread-safe. */
int vg_assign_sign(struct vg_assign_key *k, const struct vg_assign_subject *s,
                   char out[VG_ASSIGN_MAC_TEXT_MAX], struct vg_err *err);

/* ---- checking a pod ---- */

enum vg_assign_trust {
  VG_ASSIGN_SIGNED = 0, /* the MAC verifies */
  VG_ASSIGN_UNSIGNED,   /* vgpu.io/assigned-mac missing */
  VG_ASSIGN_FORGED,     /* ... present but does not match (another pod's, another node's, edited) */
  VG_ASSIGN_NO_KEY      /* the key file cannot be read now: nothing verifies (fail closed) */
};

/* Does pod's vgpu.io/assigned carry vgpu-scheduler's MAC for node (NULL:
 * the pod's spec.nodeName)? The pod must carry vgpu.io/assigned. err says
 * what is wrong for anything but SIGNED ("vgpu.io/assigned-mac missing",
 * "vgpu.io/assigned-mac does not match", the key file's error). */
enum vg_assign_trust vg_assign_verify_pod(struct vg_assign_key *k, json_object *pod,
                                          const char *node, struct vg_err *err);

/* The one line a refusal says for a verdict other than SIGNED: "pod NS/NAME
 * carries a vgpu.io/assigned that vgpu-scheduler did not sign (DETAIL): ..."
 * or, for NO_KEY, that the agent cannot check it. */
void vg_assign_trust_refusal(enum vg_assign_trust t, const char *ns, const char *name,
                             const struct vg_err *detail, char *out, size_t len);

#endif
