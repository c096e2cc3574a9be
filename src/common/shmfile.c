/* shmfile.c -- see shmfile.h for the idea. */
#include "shmfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "deadline.h"

/* Lock bytes live far past the end of any file we map. */
#define VG_SLOT_LOCK_BASE ((off_t)1 << 40)

static void write_header(void *base, const struct vg_shm_spec *spec) {
  struct vg_shm_header *h = base;
  h->version_major = spec->version_major;
  h->version_minor = spec->version_minor;
  h->total_size = spec->size;
  /* The magic goes last: a reader that sees it sees a finished body. */
  __atomic_store_n(&h->magic, spec->magic, __ATOMIC_RELEASE);
}

/* zeroed: the body is known to be all zero already (a file fresh from
 * ftruncate, an anonymous mapping): clearing it again would only fault in
 * every page -- most of a region's slots are never touched. */
static int init_body(void *base, const struct vg_shm_spec *spec, bool zeroed, struct vg_err *err) {
  if (!zeroed) memset(base, 0, spec->size);
  if (spec->init != NULL && spec->init(base, spec->size, spec->init_arg, err) != 0) return -1;
  write_header(base, spec);
  return 0;
}

/* Explains why an existing file of the wrong size cannot be used. */
static int describe_mismatch(int fd, const char *path, off_t size, const struct vg_shm_spec *spec,
                             struct vg_err *err) {
  struct vg_shm_header h;
  memset(&h, 0, sizeof(h));
  ssize_t n = pread(fd, &h, sizeof(h), 0);
  if (n == (ssize_t)sizeof(h) && h.magic == spec->magic && h.version_major != spec->version_major)
    return vg_err_set(err,
                      "%s %s has layout version %u.%u but this build uses %u.%u; remove it "
                      "once no process of the container uses it",
                      spec->kind, path, h.version_major, h.version_minor, spec->version_major,
                      spec->version_minor);
  if (n == (ssize_t)sizeof(h) && h.magic == spec->magic)
    return vg_err_set(err, "%s %s is corrupt: its size is %lld bytes, expected %zu", spec->kind,
                      path, (long long)size, spec->size);
  return vg_err_set(err,
                    "%s %s is not a vgpu %s (unknown content, %lld bytes); refusing to use "
                    "or overwrite it",
                    spec->kind, path, spec->kind, (long long)size);
}

static int check_mapped(void *base, const char *path, const struct vg_shm_spec *spec,
                        struct vg_err *err) {
  const struct vg_shm_header *h = base;
  uint32_t magic = __atomic_load_n(&h->magic, __ATOMIC_ACQUIRE);
  if (magic != spec->magic)
    return vg_err_set(err,
                      "%s %s is not a vgpu %s (magic 0x%08x); refusing to use or "
                      "overwrite it",
                      spec->kind, path, spec->kind, magic);
  if (h->version_major != spec->version_major)
    return vg_err_set(err, "%s %s has layout version %u.%u but this build uses %u.%u", spec->kind,
                      path, h->version_major, h->version_minor, spec->version_major,
                      spec->version_minor);
  if (h->total_size != spec->size)
    return vg_err_set(err, "%s %s is corrupt: header says %llu bytes, expected %zu", spec->kind,
                      path, (unsigned long long)h->total_size, spec->size);
  return 0;
}

static bool header_is_blank(const void *base) {
  static const struct vg_shm_header zero;
  return memcmp(base, &zero, sizeof(zero)) == 0;
}

/* Maps an open, exclusively flocked file, initialising it if new. */
static int map_locked(struct vg_shm *shm, const struct vg_shm_spec *spec, struct vg_err *err) {
  struct stat st;
  if (fstat(shm->fd, &st) != 0)
    return vg_err_set(err, "cannot stat %s %s: %s", spec->kind, shm->path, strerror(errno));
  if (!S_ISREG(st.st_mode))
    return vg_err_set(err, "%s %s is not a regular file", spec->kind, shm->path);
  bool fresh = st.st_size == 0;
  if (!fresh && st.st_size != (off_t)spec->size)
    return describe_mismatch(shm->fd, shm->path, st.st_size, spec, err);
  if (fresh && ftruncate(shm->fd, (off_t)spec->size) != 0)
    return vg_err_set(err, "cannot size %s %s: %s", spec->kind, shm->path, strerror(errno));
  void *base = mmap(NULL, spec->size, PROT_READ | PROT_WRITE, MAP_SHARED, shm->fd, 0);
  if (base == MAP_FAILED)
    return vg_err_set(err, "cannot map %s %s: %s", spec->kind, shm->path, strerror(errno));
  shm->base = base;
  shm->size = spec->size;
  if (fresh || header_is_blank(base)) {
    shm->created = true;
    if (fresh) fchmod(shm->fd, 0666); /* every user of the container shares it */
    return init_body(base, spec, fresh, err);
  }
  return check_mapped(base, shm->path, spec, err);
}

static void shm_reset(struct vg_shm *shm, const char *dir, const char *name) {
  memset(shm, 0, sizeof(*shm));
  shm->fd = -1;
  shm->self_slot = -1;
  shm->lock_wait_ms = VG_SHM_LOCK_WAIT_MS;
  if (dir != NULL)
    snprintf(shm->path, sizeof(shm->path), "%s/%s", dir, name);
  else
    snprintf(shm->path, sizeof(shm->path), "%s", name);
}

static void sleep_ms(unsigned ms) {
  struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

/* flock(LOCK_EX) that gives up after wait_ms: anyone who can open the file
 * can hold its flock forever. Polls, since flock has no timed form. */
static int flock_within(int fd, unsigned wait_ms) {
  uint64_t deadline = vg_monotonic_ms() + wait_ms;
  unsigned nap = 1;
  for (;;) {
    if (flock(fd, LOCK_EX | LOCK_NB) == 0) return 0;
    if (errno != EWOULDBLOCK && errno != EINTR) return -1;
    if (vg_monotonic_ms() >= deadline) return errno = ETIMEDOUT, -1;
    sleep_ms(nap);
    if (nap < 16) nap *= 2;
  }
}

int vg_shm_open(struct vg_shm *shm, const char *path, const struct vg_shm_spec *spec,
                struct vg_err *err) {
  shm_reset(shm, NULL, path);
  shm->fd = open(path, O_RDWR | O_CREAT | O_NONBLOCK | O_CLOEXEC, 0666);
  if (shm->fd < 0)
    return vg_err_set(err, "cannot open %s %s: %s", spec->kind, path, strerror(errno));
  if (flock_within(shm->fd, shm->lock_wait_ms) != 0) {
    int e = errno;
    vg_shm_close(shm);
    if (e == ETIMEDOUT)
      return vg_err_set(err,
                        "%s %s: another process has held its flock for over %u ms (stopped, or "
                        "holding it on purpose); not waiting longer",
                        spec->kind, path, VG_SHM_LOCK_WAIT_MS);
    return vg_err_set(err, "cannot flock %s %s: %s", spec->kind, path, strerror(e));
  }
  int rc = map_locked(shm, spec, err);
  flock(shm->fd, LOCK_UN);
  if (rc != 0) vg_shm_close(shm);
  return rc;
}

/* Checks what an agent's open found: a plain file, one link, the right size. */
static int check_plain(struct vg_shm *shm, const struct vg_shm_spec *spec, struct vg_err *err) {
  struct stat st;
  if (fstat(shm->fd, &st) != 0)
    return vg_err_set(err, "cannot stat %s %s: %s", spec->kind, shm->path, strerror(errno));
  if (!S_ISREG(st.st_mode))
    return vg_err_set(err, "%s %s is not a regular file; refusing to use it", spec->kind,
                      shm->path);
  if (st.st_nlink != 1)
    return vg_err_set(err,
                      "%s %s has %lu links, not 1 (a hard link made in the container?); "
                      "refusing to use it",
                      spec->kind, shm->path, (unsigned long)st.st_nlink);
  if (st.st_size != (off_t)spec->size)
    return describe_mismatch(shm->fd, shm->path, st.st_size, spec, err);
  return 0;
}

/* The directory, opened without following a link in its last component. */
static int open_dir(const char *dir, const struct vg_shm_spec *spec, struct vg_err *err) {
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    vg_err_set(err, "cannot open the directory of %s %s: %s", spec->kind, dir, strerror(errno));
  return fd;
}

static int map_plain(struct vg_shm *shm, const struct vg_shm_spec *spec, struct vg_err *err) {
  void *base = mmap(NULL, spec->size, PROT_READ | PROT_WRITE, MAP_SHARED, shm->fd, 0);
  if (base == MAP_FAILED)
    return vg_err_set(err, "cannot map %s %s: %s", spec->kind, shm->path, strerror(errno));
  shm->base = base;
  shm->size = spec->size;
  return 0;
}

/* A copy of the file in private memory. A shared mapping of a file that
 * the container can truncate would kill its reader with SIGBUS; a copy
 * read with pread cannot. */
static int copy_plain(struct vg_shm *shm, const struct vg_shm_spec *spec, struct vg_err *err) {
  void *base = mmap(NULL, spec->size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED)
    return vg_err_set(err, "cannot copy %s %s: %s", spec->kind, shm->path, strerror(errno));
  shm->base = base;
  shm->size = spec->size;
  size_t done = 0;
  while (done < spec->size) {
    ssize_t n = pread(shm->fd, (char *)base + done, spec->size - done, (off_t)done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      return vg_err_set(err, "cannot read %s %s: %s", spec->kind, shm->path,
                        n < 0 ? strerror(errno) : "it shrank while being read");
    done += (size_t)n;
  }
  mprotect(base, spec->size, PROT_READ);
  return 0;
}

int vg_shm_open_at(struct vg_shm *shm, const char *dir, const char *name,
                   const struct vg_shm_spec *spec, bool readonly, struct vg_err *err) {
  shm_reset(shm, dir, name);
  int dfd = open_dir(dir, spec, err);
  if (dfd < 0) return -1;
  int flags = (readonly ? O_RDONLY : O_RDWR) | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;
  shm->fd = openat(dfd, name, flags);
  int e = errno;
  close(dfd);
  int rc = 0;
  if (shm->fd < 0 && e == ELOOP)
    rc = vg_err_set(err,
                    "%s %s is a symbolic link (made in the container?); refusing to follow "
                    "it",
                    spec->kind, shm->path);
  else if (shm->fd < 0)
    rc = vg_err_set(err, "cannot open %s %s: %s", spec->kind, shm->path, strerror(e));
  if (rc == 0) rc = check_plain(shm, spec, err);
  if (rc == 0) rc = readonly ? copy_plain(shm, spec, err) : map_plain(shm, spec, err);
  if (rc == 0) rc = check_mapped(shm->base, shm->path, spec, err);
  if (rc != 0) vg_shm_close(shm);
  return rc;
}

/* A name for the file being made, unique to this process and call. */
static void temp_name(char *out, size_t len, const char *name) {
  static unsigned counter;
  unsigned n = __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED);
  snprintf(out, len, ".%s.new.%ld.%u", name, (long)getpid(), n);
}

static int create_temp(struct vg_shm *shm, int dfd, const char *tmp, const struct vg_shm_spec *spec,
                       unsigned mode, struct vg_err *err) {
  shm->fd = openat(dfd, tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  if (shm->fd < 0)
    return vg_err_set(err, "cannot create %s for %s: %s", tmp, shm->path, strerror(errno));
  if (fchmod(shm->fd, mode) != 0 || ftruncate(shm->fd, (off_t)spec->size) != 0)
    return vg_err_set(err, "cannot size %s for %s: %s", tmp, shm->path, strerror(errno));
  if (map_plain(shm, spec, err) != 0) return -1;
  shm->created = true;
  return init_body(shm->base, spec, true, err);
}

int vg_shm_create_at(struct vg_shm *shm, const char *dir, const char *name,
                     const struct vg_shm_spec *spec, unsigned mode, struct vg_err *err) {
  shm_reset(shm, dir, name);
  int dfd = open_dir(dir, spec, err);
  if (dfd < 0) return -1;
  char tmp[NAME_MAX + 1];
  temp_name(tmp, sizeof(tmp), name);
  int rc = create_temp(shm, dfd, tmp, spec, mode, err);
  if (rc == 0 && renameat(dfd, tmp, dfd, name) != 0)
    rc = vg_err_set(err, "cannot put the new %s in place at %s: %s", spec->kind, shm->path,
                    strerror(errno));
  if (rc != 0) {
    unlinkat(dfd, tmp, 0);
    vg_shm_close(shm);
  }
  close(dfd);
  return rc;
}

int vg_shm_open_readonly(struct vg_shm *shm, const char *path, const struct vg_shm_spec *spec,
                         struct vg_err *err) {
  shm_reset(shm, NULL, path);
  /* O_NONBLOCK: a FIFO planted in the path must not hang the reader. */
  shm->fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (shm->fd < 0)
    return vg_err_set(err, "cannot open %s %s: %s", spec->kind, path, strerror(errno));
  struct stat st;
  if (fstat(shm->fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size != (off_t)spec->size) {
    int rc = describe_mismatch(shm->fd, path, st.st_size, spec, err);
    vg_shm_close(shm);
    return rc;
  }
  void *base = mmap(NULL, spec->size, PROT_READ, MAP_SHARED, shm->fd, 0);
  if (base == MAP_FAILED) {
    vg_shm_close(shm);
    return vg_err_set(err, "cannot map %s %s: %s", spec->kind, path, strerror(errno));
  }
  shm->base = base;
  shm->size = spec->size;
  if (check_mapped(base, path, spec, err) != 0) {
    vg_shm_close(shm);
    return -1;
  }
  return 0;
}

int vg_shm_open_private(struct vg_shm *shm, const struct vg_shm_spec *spec, struct vg_err *err) {
  shm_reset(shm, NULL, "(private)");
  /* MAP_PRIVATE: a forked child gets a copy of its own rather than a region
   * it can never reap (no file, so no liveness locks). */
  void *base = mmap(NULL, spec->size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED)
    return vg_err_set(err, "cannot map a private %s: %s", spec->kind, strerror(errno));
  shm->base = base;
  shm->size = spec->size;
  shm->created = true;
  return init_body(base, spec, true, err);
}

void vg_shm_close(struct vg_shm *shm) {
  if (shm->base != NULL && shm->base != MAP_FAILED) munmap(shm->base, shm->size);
  if (shm->fd >= 0) close(shm->fd);
  shm->base = NULL;
  shm->fd = -1;
}

static int slot_lock(int fd, unsigned slot, int cmd, struct flock *fl, short type) {
  memset(fl, 0, sizeof(*fl));
  fl->l_type = type;
  fl->l_whence = SEEK_SET;
  fl->l_start = VG_SLOT_LOCK_BASE + (off_t)slot;
  fl->l_len = 1;
  return fcntl(fd, cmd, fl);
}

int vg_shm_claim_slot(struct vg_shm *shm, unsigned slot) {
  struct flock fl;
  if (shm->fd >= 0 && slot_lock(shm->fd, slot, F_SETLK, &fl, F_WRLCK) != 0) return -1;
  shm->self_slot = (int)slot;
  return 0;
}

void vg_shm_release_slot(struct vg_shm *shm, unsigned slot) {
  if (shm->self_slot == (int)slot) shm->self_slot = -1;
  if (shm->fd < 0) return;
  struct flock fl;
  slot_lock(shm->fd, slot, F_SETLK, &fl, F_UNLCK);
}

bool vg_shm_slot_alive(const struct vg_shm *shm, unsigned slot) {
  if ((int)slot == shm->self_slot) return true;
  if (shm->fd < 0) return true; /* private mapping: nobody else */
  struct flock fl;
  if (slot_lock(shm->fd, slot, F_GETLK, &fl, F_WRLCK) != 0) return true; /* unsure: keep it */
  return fl.l_type != F_UNLCK;
}

int vg_shared_mutex_init(pthread_mutex_t *mutex) {
  pthread_mutexattr_t attr;
  if (pthread_mutexattr_init(&attr) != 0) return -1;
  int rc = pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
  if (rc == 0) rc = pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
  if (rc == 0) rc = pthread_mutex_init(mutex, &attr);
  pthread_mutexattr_destroy(&attr);
  return rc == 0 ? 0 : -1;
}

int vg_shared_mutex_lock(pthread_mutex_t *mutex, unsigned wait_ms, void (*repair)(void *),
                         void *arg) {
  /* A timed lock: the mutex sits in a file the container can write, and a
   * forged owner (a live PID's TID in the lock word) would otherwise keep
   * every locker waiting forever. The deadline is on CLOCK_REALTIME, which
   * is what pthread_mutex_timedlock measures. */
  struct timespec deadline = vg_deadline_after(CLOCK_REALTIME, wait_ms);
  int rc = pthread_mutex_timedlock(mutex, &deadline);
  if (rc == EOWNERDEAD) {
    if (repair != NULL) repair(arg);
    pthread_mutex_consistent(mutex);
    return VG_SHM_LOCKED;
  }
  if (rc == 0) return VG_SHM_LOCKED;
  /* Anything else (ENOTRECOVERABLE, EINVAL from a corrupt mutex) means no
   * mutual exclusion: callers must not go on as if they held the lock. */
  return rc == ETIMEDOUT ? VG_SHM_LOCK_TIMEDOUT : VG_SHM_LOCK_UNUSABLE;
}

const char *vg_shm_lock_strerror(int rc) {
  switch (rc) {
    case VG_SHM_LOCKED:
      return "locked";
    case VG_SHM_LOCK_TIMEDOUT:
      return "its lock was held past the deadline (a stopped process, or a lock forged in the "
             "file)";
    default:
      return "its lock is unusable (a corrupt or forged file)";
  }
}

void vg_shared_mutex_unlock(pthread_mutex_t *mutex) { pthread_mutex_unlock(mutex); }
