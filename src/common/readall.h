/*
 * readall.h -- a whole small file in one buffer: read(2) until end of file or
 * the buffer is full, EINTR retried. What the grant (grant.c) and the
 * assignment key (src/k8s/assignment_mac.c) need, since a short read is
 * allowed even on a regular file.
 */
#ifndef VG_READALL_H
#define VG_READALL_H

#include <stddef.h>

/* Reads fd into buf until end of file or len bytes; *got says how many.
 * 0, or the errno of the read that failed (what was read stays in *got). */
int vg_read_all(int fd, void *buf, size_t len, size_t *got);

#endif
