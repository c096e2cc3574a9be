/* slot_dir.c -- see slot_dir.h. */
#include "slot_dir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "region.h"

/* Deep enough for anything a tenant could have planted, and a bound on the
 * descriptors one removal holds open. */
#define REMOVE_DEPTH 32
/* How long a region file being made may keep its temporary name. */
#define MAKING_S 60

/* What a slot may hold under one name. */
struct entry {
  const char *name;
  mode_t type; /* S_IFREG or S_IFDIR */
  bool make;   /* created when missing (region.cache is made by Allocate itself) */
  bool empty;  /* a file is kept only when empty: it is never more than a mount point */
};

static const struct entry top[] = {
    {VG_REGION_FILE, S_IFREG, false, false},
    {VG_SLOT_GRANT, S_IFDIR, true, false},
    {VG_SLOT_LIBRARY, S_IFREG, true, true},
    {"bin", S_IFDIR, true, false},
};
static const struct entry bin[] = {{"vgpu", S_IFREG, true, true}};

/* Removes name in dfd whatever it is, a directory with all it holds; no
 * link is followed (unlinkat removes a link itself). */
static int remove_at(int dfd, const char *name, unsigned depth) {
  if (unlinkat(dfd, name, 0) == 0 || errno == ENOENT) return 0;
  if (errno != EISDIR && errno != EPERM) return -1; /* unlink of a directory: EISDIR on Linux */
  if (depth == 0) {
    errno = ELOOP;
    return -1;
  }
  int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return -1;
  DIR *d = fdopendir(fd);
  if (d == NULL) {
    close(fd);
    return -1;
  }
  int rc = 0;
  struct dirent *e;
  while (rc == 0 && (e = readdir(d)) != NULL)
    if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
      rc = remove_at(fd, e->d_name, depth - 1);
  closedir(d);
  if (rc == 0 && unlinkat(dfd, name, AT_REMOVEDIR) != 0 && errno != ENOENT) rc = -1;
  return rc;
}

static bool known(const struct entry *v, size_t n, const char *name) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(v[i].name, name) == 0) return true;
  return false;
}

/* A region file another Allocate of the same IDs is making right now
 * (vg_shm_create_at's temporary name, renamed within milliseconds); an
 * older one was left by an agent that died, or planted. */
static bool being_made(int dfd, const char *name) {
  static const char making[] = "." VG_REGION_FILE ".new.";
  struct stat st;
  return strncmp(name, making, sizeof(making) - 1) == 0 &&
         fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
         time(NULL) - st.st_mtime < MAKING_S;
}

/* Removes every entry of the directory dfd (named dir in messages) that is
 * not in v[0..n) and not a region being made. */
static int sweep(int dfd, const char *dir, const struct entry *v, size_t n, char *err, size_t len) {
  int fd = dup(dfd);
  DIR *d = fd < 0 ? NULL : fdopendir(fd);
  if (d == NULL) {
    snprintf(err, len, "cannot read %s: %s", dir, strerror(errno));
    if (fd >= 0) close(fd);
    return -1;
  }
  int rc = 0;
  struct dirent *e;
  while (rc == 0 && (e = readdir(d)) != NULL) {
    const char *name = e->d_name;
    if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0 || known(v, n, name) ||
        being_made(dfd, name))
      continue;
    if ((rc = remove_at(dfd, name, REMOVE_DEPTH)) != 0)
      snprintf(err, len, "cannot remove %s/%s (left by an earlier container?): %s", dir, name,
               strerror(errno));
  }
  closedir(d);
  return rc;
}

static bool fits(const struct entry *x, const struct stat *st) {
  if ((st->st_mode & S_IFMT) != x->type) return false;
  return x->type != S_IFREG || !x->empty || (st->st_nlink == 1 && st->st_size == 0);
}

/* One entry of the directory dfd as x says: what fits is kept, anything
 * else removed, and a missing one made. Two Allocates of the same IDs may
 * do this at once; one that finds the name taken between its check and its
 * creation checks again. */
static int ensure(int dfd, const char *dir, const struct entry *x, char *err, size_t len) {
  for (int tries = 0; tries < 3; tries++) {
    struct stat st;
    if (fstatat(dfd, x->name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
      if (fits(x, &st)) return 0;
      if (remove_at(dfd, x->name, REMOVE_DEPTH) != 0) {
        snprintf(err, len, "cannot remove %s/%s to make a mount point there: %s", dir, x->name,
                 strerror(errno));
        return -1;
      }
    } else if (errno != ENOENT) {
      snprintf(err, len, "cannot inspect %s/%s: %s", dir, x->name, strerror(errno));
      return -1;
    }
    if (!x->make) return 0;
    int rc;
    if (x->type == S_IFDIR) {
      rc = mkdirat(dfd, x->name, 0755);
    } else {
      int fd = openat(dfd, x->name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
      rc = fd < 0 ? -1 : close(fd);
    }
    if (rc == 0) return 0;
    if (errno != EEXIST) {
      snprintf(err, len, "cannot create the mount point %s/%s: %s", dir, x->name, strerror(errno));
      return -1;
    }
  }
  snprintf(err, len, "%s/%s keeps changing while it is being made a mount point", dir, x->name);
  return -1;
}

/* Sweeps the directory dfd and ensures each entry of v[0..n). */
static int prepare(int dfd, const char *dir, const struct entry *v, size_t n, bool make_all,
                   char *err, size_t len) {
  if (sweep(dfd, dir, v, n, err, len) != 0) return -1;
  for (size_t i = 0; i < n; i++) {
    struct entry x = v[i];
    x.make = x.make && make_all;
    if (ensure(dfd, dir, &x, err, len) != 0) return -1;
  }
  return 0;
}

int vg_slot_dir_prepare(const char *slot_dir, bool cli, char *err, size_t len) {
  int dfd = open(slot_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dfd < 0) {
    snprintf(err, len, "cannot open %s: %s", slot_dir, strerror(errno));
    return -1;
  }
  int rc = prepare(dfd, slot_dir, top, sizeof(top) / sizeof(top[0]), true, err, len);
  int bfd = -1;
  if (rc == 0 && (bfd = openat(dfd, "bin", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
    snprintf(err, len, "cannot open %s/bin: %s", slot_dir, strerror(errno));
    rc = -1;
  }
  char sub[4200];
  snprintf(sub, sizeof(sub), "%s/bin", slot_dir);
  /* bin/vgpu is a mount point only when the node has the CLI; one left from
   * a node that had it is kept (empty, harmless). */
  if (rc == 0) rc = prepare(bfd, sub, bin, sizeof(bin) / sizeof(bin[0]), cli, err, len);
  if (bfd >= 0) close(bfd);
  close(dfd);
  return rc;
}
