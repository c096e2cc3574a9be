/* flock_holders.c -- see flock_holders.h. */
#include "flock_holders.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

/* One line: "N: FLOCK  ADVISORY  WRITE PID MAJ:MIN:INODE START END"; a
 * waiter's has "->" after "N:". Fills f and returns true for a held flock. */
static bool parse_line(const char *line, struct vg_flock_file *f) {
  char kind[16], dev[64];
  unsigned long pid;
  if (sscanf(line, "%*u: %15s %*s %*s %lu %63s", kind, &pid, dev) != 3) return false;
  if (strcmp(kind, "FLOCK") != 0) return false; /* POSIX, OFDLCK, LEASE, or "->" (waiting) */
  return sscanf(dev, "%x:%x:%lu", &f->major, &f->minor, &f->inode) == 3;
}

static int add(struct vg_flock_set *set, const struct vg_flock_file *f, size_t *cap) {
  if (set->n == *cap) {
    size_t more = *cap ? *cap * 2 : 32;
    struct vg_flock_file *v = realloc(set->file, more * sizeof(*v));
    if (v == NULL) return -1;
    set->file = v;
    *cap = more;
  }
  set->file[set->n++] = *f;
  return 0;
}

int vg_flock_read(const char *path, struct vg_flock_set *set, struct vg_err *err) {
  set->file = NULL;
  set->n = 0;
  FILE *in = fopen(path, "re");
  if (in == NULL) return vg_err_set(err, "cannot read %s: %s", path, strerror(errno));
  char line[256];
  size_t cap = 0;
  int rc = 0;
  struct vg_flock_file f;
  while (rc == 0 && fgets(line, sizeof(line), in) != NULL)
    if (parse_line(line, &f) && add(set, &f, &cap) != 0)
      rc = vg_err_set(err, "out of memory reading %s", path);
  fclose(in);
  if (rc != 0) vg_flock_free(set);
  return rc;
}

bool vg_flock_held(const struct vg_flock_set *set, int fd) {
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) return false;
  for (size_t i = 0; i < set->n; i++)
    if (set->file[i].inode == (unsigned long)st.st_ino && set->file[i].major == major(st.st_dev) &&
        set->file[i].minor == minor(st.st_dev))
      return true;
  return false;
}

void vg_flock_free(struct vg_flock_set *set) {
  free(set->file);
  set->file = NULL;
  set->n = 0;
}
