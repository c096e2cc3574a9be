/*
 * once.h -- "say it once": a bounded set of keys already reported.
 *
 * Daemons that retry every few seconds (the device plugin's binder and
 * steering) would log the same complaint about the same pod on every pass.
 * They ask vg_once_first before logging: true only the first time a key is
 * seen. The set is bounded; when full it forgets everything, so memory stays
 * flat and a long-lived problem is said again once per VG_ONCE_MAX new keys.
 * Not locked: callers hold their own lock.
 */
#ifndef VG_ONCE_H
#define VG_ONCE_H

#include <stdbool.h>
#include <stddef.h>

#define VG_ONCE_MAX 1024

struct vg_once {
  char *keys[VG_ONCE_MAX];
  size_t n;
};

/* True the first time key is seen (also when memory runs out: better said
 * twice than never). */
bool vg_once_first(struct vg_once *o, const char *key);
/* Forgets key, so that it is said again the next time. */
void vg_once_forget(struct vg_once *o, const char *key);
void vg_once_free(struct vg_once *o);

#endif
