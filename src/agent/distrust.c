/* distrust.c -- see distrust.h. */
#include "distrust.h"

#include <sys/stat.h>

#include "deadline.h"

static int find(const struct vg_distrust *t, const struct stat *st) {
  for (unsigned i = 0; i < t->n; i++)
    if (t->file[i].dev == st->st_dev && t->file[i].ino == st->st_ino) return (int)i;
  return -1;
}

static int find_fd(const struct vg_distrust *t, int fd) {
  struct stat st;
  return fd >= 0 && fstat(fd, &st) == 0 ? find(t, &st) : -1;
}

bool vg_distrust_has(const struct vg_distrust *t, int fd) { return find_fd(t, fd) >= 0; }

bool vg_distrust_add(struct vg_distrust *t, int fd) {
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0 || find(t, &st) >= 0) return false;
  unsigned i = t->n < VG_DISTRUST_MAX ? t->n++ : t->next;
  t->next = (i + 1) % VG_DISTRUST_MAX;
  t->file[i].dev = st.st_dev;
  t->file[i].ino = st.st_ino;
  t->file[i].since_ms = vg_monotonic_ms();
  return true;
}

long long vg_distrust_age_ms(const struct vg_distrust *t, int fd) {
  int i = find_fd(t, fd);
  return i < 0 ? -1 : (long long)(vg_monotonic_ms() - t->file[i].since_ms);
}

void vg_distrust_remove(struct vg_distrust *t, int fd) {
  int i = find_fd(t, fd);
  if (i < 0) return;
  t->file[i] = t->file[--t->n]; /* order does not matter */
}
