/*
 * tls_files.h -- the serving certificate and key, read from their files and
 * checked as a pair with GnuTLS before the server takes them.
 *
 * Kubernetes updates a mounted Secret by swapping a symlink, so both files
 * change at once; a stat() of each (inode, size, mtime, following links)
 * tells the server when to read them again.
 */
#ifndef VG_WH_TLS_FILES_H
#define VG_WH_TLS_FILES_H

#include <stdbool.h>
#include <sys/types.h>
#include <time.h>

#include "err.h"

struct vg_wh_file_stamp {
  dev_t dev;
  ino_t ino;
  off_t size;
  struct timespec mtime;
};

struct vg_wh_tls {
  char *cert, *key; /* PEM, NUL-terminated */
  struct vg_wh_file_stamp cert_stamp, key_stamp;
};

/* Reads both files and checks that the key belongs to the certificate.
 * -1 with err naming the file and what is wrong. */
int vg_wh_tls_load(const char *cert_file, const char *key_file, struct vg_wh_tls *t,
                   struct vg_err *err);

/* Whether either file differs from when t was loaded (or cannot be read). */
bool vg_wh_tls_changed(const struct vg_wh_tls *t, const char *cert_file, const char *key_file);

void vg_wh_tls_free(struct vg_wh_tls *t);

#endif
