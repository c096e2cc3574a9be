/* once.c -- see once.h. */
#include "once.h"

#include <stdlib.h>
#include <string.h>

bool vg_once_first(struct vg_once *o, const char *key) {
  for (size_t i = 0; i < o->n; i++)
    if (strcmp(o->keys[i], key) == 0) return false;
  if (o->n == VG_ONCE_MAX) vg_once_free(o);
  char *copy = strdup(key);
  if (copy != NULL) o->keys[o->n++] = copy;
  return true;
}

void vg_once_forget(struct vg_once *o, const char *key) {
  for (size_t i = 0; i < o->n; i++)
    if (strcmp(o->keys[i], key) == 0) {
      free(o->keys[i]);
      o->keys[i] = o->keys[--o->n];
      return;
    }
}

void vg_once_free(struct vg_once *o) {
  for (size_t i = 0; i < o->n; i++) free(o->keys[i]);
  o->n = 0;
}
