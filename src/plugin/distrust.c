/* distrust.c -- see distrust.h. */
#include "distrust.h"

#include <sys/stat.h>

static int find(const struct vg_distrust *t, const struct stat *st) {
  for (unsigned i = 0; i < t->n; i++)
    if (t->file[i].dev == st->st_dev && t->file[i].ino == st->st_ino) return (int)i;
  return -1;
}

bool vg_distrust_has(const struct vg_distrust *t, int fd) {
  struct stat st;
  return fd >= 0 && fstat(fd, &st) == 0 && find(t, &st) >= 0;
}

bool vg_distrust_add(struct vg_distrust *t, int fd) {
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0 || find(t, &st) >= 0) return false;
  unsigned i = t->n < VG_DISTRUST_MAX ? t->n++ : t->next;
  t->next = (i + 1) % VG_DISTRUST_MAX;
  t->file[i].dev = st.st_dev;
  t->file[i].ino = st.st_ino;
  return true;
}
