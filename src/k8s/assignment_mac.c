/* assignment_mac.c -- see assignment_mac.h and docs/security.md ("forged assignment"). */
#include "assignment_mac.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>

#include "assignment.h"
#include "readall.h"

/* Appends "<decimal length>:<bytes>\n" for one field. */
static size_t put_field(char *out, const char *field) {
  size_t n = strlen(field);
  int head = sprintf(out, "%zu:", n);
  memcpy(out + head, field, n);
  out[head + n] = '\n';
  return (size_t)head + n + 1;
}

char *vg_assign_mac_message(const struct vg_assign_subject *s, size_t *len) {
  const char *fields[] = {s->uid, s->ns, s->name, s->node, s->assigned};
  size_t total = sizeof(VG_ASSIGN_MAC_VERSION) + 1;
  for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
    if (fields[i] == NULL) return NULL;
    total += strlen(fields[i]) + 24; /* length, ':' and '\n' */
  }
  char *m = malloc(total);
  if (m == NULL) return NULL;
  size_t n = (size_t)sprintf(m, "%s\n", VG_ASSIGN_MAC_VERSION);
  for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) n += put_field(m + n, fields[i]);
  m[n] = '\0';
  *len = n;
  return m;
}

int vg_assign_mac_with(const unsigned char *key, size_t keylen, const struct vg_assign_subject *s,
                       char out[VG_ASSIGN_MAC_TEXT_MAX], struct vg_err *err) {
  size_t len;
  char *msg = vg_assign_mac_message(s, &len);
  if (msg == NULL) return vg_err_set(err, "assignment MAC: a field is missing, or out of memory");
  unsigned char mac[VG_ASSIGN_MAC_LEN];
  int rc = gnutls_hmac_fast(GNUTLS_MAC_SHA256, key, keylen, msg, len, mac);
  free(msg);
  if (rc < 0) return vg_err_set(err, "assignment MAC: GnuTLS: %s", gnutls_strerror(rc));
  int n = sprintf(out, "%s:", VG_ASSIGN_MAC_VERSION);
  for (size_t i = 0; i < sizeof(mac); i++) n += sprintf(out + n, "%02x", mac[i]);
  return 0;
}

bool vg_assign_mac_equal(const char *given, const char *want) {
  size_t n = strlen(want);
  /* The length of a MAC is no secret; its bytes are. */
  if (strlen(given) != n) return false;
  return gnutls_memcmp(given, want, n) == 0;
}

/* ---- the key file ---- */

struct vg_assign_key {
  char *path;
  pthread_mutex_t lock; /* everything below */
  struct stat seen;     /* the file as last read */
  bool read_ok;
  unsigned char bytes[VG_ASSIGN_KEY_MAX];
  size_t len;
  struct vg_err error; /* why the last read failed */
};

/* Reads path whole into k (lock held). 0, or -1 with k->error. */
static int read_key(struct vg_assign_key *k, const struct stat *st) {
  k->read_ok = false;
  k->seen = *st;
  int fd = open(k->path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return vg_err_set(&k->error, "assignment key %s: %s", k->path, strerror(errno));
  unsigned char buf[VG_ASSIGN_KEY_MAX + 1];
  size_t n = 0;
  int e = vg_read_all(fd, buf, sizeof(buf), &n);
  close(fd);
  int rc = 0;
  if (e != 0)
    rc = vg_err_set(&k->error, "assignment key %s: %s", k->path, strerror(e));
  else if (n < VG_ASSIGN_KEY_MIN)
    rc = vg_err_set(&k->error,
                    "assignment key %s holds %zu bytes; it needs at least %d random bytes", k->path,
                    n, VG_ASSIGN_KEY_MIN);
  else if (n > VG_ASSIGN_KEY_MAX)
    rc = vg_err_set(&k->error, "assignment key %s is larger than %d bytes: not a key file", k->path,
                    VG_ASSIGN_KEY_MAX);
  if (rc == 0) {
    memcpy(k->bytes, buf, n);
    k->len = n;
    k->read_ok = true;
  }
  gnutls_memset(buf, 0, sizeof(buf)); /* no copy of the key left on the stack */
  return rc;
}

static bool same_file(const struct stat *a, const struct stat *b) {
  return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
         a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
         a->st_ctim.tv_sec == b->st_ctim.tv_sec && a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

/* Brings k up to date with the file (lock held): a stat per use, a read
 * only when it changed. 0, or -1 with k->error. */
static int refresh(struct vg_assign_key *k) {
  struct stat st;
  if (stat(k->path, &st) != 0) {
    k->read_ok = false;
    memset(&k->seen, 0, sizeof(k->seen));
    return vg_err_set(&k->error, "assignment key %s: %s", k->path, strerror(errno));
  }
  if (k->read_ok && same_file(&st, &k->seen)) return 0;
  return read_key(k, &st);
}

struct vg_assign_key *vg_assign_key_open(const char *path, struct vg_err *err) {
  if (path == NULL || path[0] == '\0') {
    vg_err_set(err, "assignment key: no file named");
    return NULL;
  }
  struct vg_assign_key *k = calloc(1, sizeof(*k));
  if (k == NULL || (k->path = strdup(path)) == NULL) {
    free(k);
    vg_err_set(err, "assignment key: out of memory");
    return NULL;
  }
  pthread_mutex_init(&k->lock, NULL);
  if (refresh(k) != 0) {
    *err = k->error;
    vg_assign_key_free(k);
    return NULL;
  }
  return k;
}

void vg_assign_key_free(struct vg_assign_key *k) {
  if (k == NULL) return;
  gnutls_memset(k->bytes, 0, sizeof(k->bytes));
  pthread_mutex_destroy(&k->lock);
  free(k->path);
  free(k);
}

const char *vg_assign_key_path(const struct vg_assign_key *k) { return k->path; }

int vg_assign_sign(struct vg_assign_key *k, const struct vg_assign_subject *s,
                   char out[VG_ASSIGN_MAC_TEXT_MAX], struct vg_err *err) {
  pthread_mutex_lock(&k->lock);
  int rc = refresh(k);
  if (rc != 0)
    *err = k->error;
  else
    rc = vg_assign_mac_with(k->bytes, k->len, s, out, err);
  pthread_mutex_unlock(&k->lock);
  return rc;
}

/* ---- checking a pod ---- */

static const char *str_at(json_object *o, const char *a, const char *b) {
  json_object *x, *y;
  if (!json_object_object_get_ex(o, a, &x) || !json_object_object_get_ex(x, b, &y) ||
      !json_object_is_type(y, json_type_string))
    return NULL;
  return json_object_get_string(y);
}

enum vg_assign_trust vg_assign_verify_pod(struct vg_assign_key *k, json_object *pod,
                                          const char *node, struct vg_err *err) {
  json_object *meta = NULL, *ann = NULL, *given = NULL;
  json_object_object_get_ex(pod, "metadata", &meta);
  json_object_object_get_ex(meta, "annotations", &ann);
  const char *assigned = str_at(meta, "annotations", VG_ASSIGNED_ANNOTATION);
  if (!json_object_object_get_ex(ann, VG_ASSIGNED_MAC_ANNOTATION, &given) ||
      !json_object_is_type(given, json_type_string)) {
    vg_err_set(err, "%s missing", VG_ASSIGNED_MAC_ANNOTATION);
    return VG_ASSIGN_UNSIGNED;
  }
  struct vg_assign_subject s = {str_at(pod, "metadata", "uid"),
                                str_at(pod, "metadata", "namespace"),
                                str_at(pod, "metadata", "name"),
                                node != NULL ? node : str_at(pod, "spec", "nodeName"), assigned};
  char want[VG_ASSIGN_MAC_TEXT_MAX];
  struct vg_err e = {""};
  if (s.uid == NULL || s.ns == NULL || s.name == NULL || s.node == NULL || s.assigned == NULL) {
    vg_err_set(err,
               "%s does not match (the pod lacks a uid, namespace, name or node, or %s is not "
               "a string)",
               VG_ASSIGNED_MAC_ANNOTATION, VG_ASSIGNED_ANNOTATION);
    return VG_ASSIGN_FORGED;
  }
  if (vg_assign_sign(k, &s, want, &e) != 0) {
    *err = e;
    return VG_ASSIGN_NO_KEY;
  }
  if (!vg_assign_mac_equal(json_object_get_string(given), want)) {
    vg_err_set(err, "%s does not match", VG_ASSIGNED_MAC_ANNOTATION);
    return VG_ASSIGN_FORGED;
  }
  return VG_ASSIGN_SIGNED;
}

void vg_assign_trust_refusal(enum vg_assign_trust t, const char *ns, const char *name,
                             const struct vg_err *detail, char *out, size_t len) {
  if (t == VG_ASSIGN_NO_KEY)
    snprintf(out, len,
             "pod %s/%s: the node agent cannot check that vgpu-scheduler signed its %s, so it "
             "refuses every GPU pod (%s): restore the Secret vgpu-assignment-key "
             "(docs/security.md)",
             ns, name, VG_ASSIGNED_ANNOTATION, detail->msg);
  else
    snprintf(out, len,
             "pod %s/%s carries a %s that vgpu-scheduler did not sign (%s): only "
             "vgpu-scheduler's binding writes it; create the pod without it and with "
             "spec.schedulerName: vgpu-scheduler",
             ns, name, VG_ASSIGNED_ANNOTATION, detail->msg);
}
