/* tls_files.c -- see tls_files.h. */
#include "tls_files.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "certs.h"

#define MAX_PEM (1u << 20)

static int stamp(const char *path, struct vg_wh_file_stamp *s) {
  struct stat st;
  if (stat(path, &st) != 0) return -1;
  *s = (struct vg_wh_file_stamp){st.st_dev, st.st_ino, st.st_size, st.st_mtim};
  return 0;
}

static bool same(const struct vg_wh_file_stamp *a, const struct vg_wh_file_stamp *b) {
  return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
         a->mtime.tv_sec == b->mtime.tv_sec && a->mtime.tv_nsec == b->mtime.tv_nsec;
}

static char *read_file(const char *flag, const char *path, struct vg_err *err) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) {
    vg_err_set(err, "%s %s: %s", flag, path, strerror(errno));
    return NULL;
  }
  char *buf = malloc(MAX_PEM + 1);
  size_t n = buf != NULL ? fread(buf, 1, MAX_PEM + 1, f) : 0;
  fclose(f);
  if (buf == NULL || n == 0 || n > MAX_PEM) {
    vg_err_set(err, "%s %s: %s", flag, path,
               buf == NULL ? "out of memory"
               : n == 0    ? "empty"
                           : "over 1 MiB, not a PEM file");
    free(buf);
    return NULL;
  }
  buf[n] = '\0';
  return buf;
}

int vg_wh_tls_load(const char *cert_file, const char *key_file, struct vg_wh_tls *t,
                   struct vg_err *err) {
  memset(t, 0, sizeof(*t));
  /* Stamps first: a change while reading shows up as a change next time. */
  if (stamp(cert_file, &t->cert_stamp) != 0 || stamp(key_file, &t->key_stamp) != 0)
    return vg_err_set(err, "--tls-cert %s / --tls-key %s: %s", cert_file, key_file,
                      strerror(errno));
  t->cert = read_file("--tls-cert", cert_file, err);
  t->key = t->cert != NULL ? read_file("--tls-key", key_file, err) : NULL;
  if (t->key == NULL || vg_wh_pair_check(t->cert, t->key, "--tls-cert with --tls-key", err) != 0) {
    vg_wh_tls_free(t);
    return -1;
  }
  return 0;
}

bool vg_wh_tls_changed(const struct vg_wh_tls *t, const char *cert_file, const char *key_file) {
  struct vg_wh_file_stamp c, k;
  if (stamp(cert_file, &c) != 0 || stamp(key_file, &k) != 0) return true;
  return !same(&c, &t->cert_stamp) || !same(&k, &t->key_stamp);
}

void vg_wh_tls_free(struct vg_wh_tls *t) {
  if (t->key != NULL) memset(t->key, 0, strlen(t->key)); /* a private key */
  free(t->cert);
  free(t->key);
  t->cert = t->key = NULL;
}
