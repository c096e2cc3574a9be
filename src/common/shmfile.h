/*
 * shmfile.h -- a versioned structure shared by several processes through a
 * memory-mapped file.
 *
 * Both the container's region file (libvgpu) and the simulated GPU's device
 * state (the simulator) are C structs that every process of a container, or
 * of the machine, maps with MAP_SHARED. They begin with the same header: a
 * magic number naming the kind of file, a major/minor version, and the total
 * size, so that a file of another kind, another layout or a truncated file is
 * refused with a message rather than misread.
 *
 * Creation is race-free: the first opener takes flock(LOCK_EX), sizes the
 * file, lets the caller initialise the body and writes the magic last. flock
 * is released by the kernel if that process dies, so a crashed initialiser
 * never wedges the others; a half-initialised file (no magic yet, right size)
 * is simply initialised again by the next opener.
 *
 * Nothing here waits without a deadline. The file is writable by every
 * process of the container, so a tenant can forge the mutex's owner or hold
 * flock on it forever: the flock at open and the mutex both give up after
 * vg_shm.lock_wait_ms and say so (docs/security.md). A tenant that does this
 * only stalls its own processes; the node agent uses a short wait and opens
 * the container's files with vg_shm_open_at / vg_shm_create_at, which follow
 * no link, take no flock and refuse anything but a plain file of the right
 * size.
 *
 * Liveness: every process that joins a shared file takes a POSIX record lock
 * on one byte that stands for its slot (past the end of the file, so no data
 * is touched). The kernel drops the lock when the process dies -- by SIGKILL
 * too -- and any other process can test it with F_GETLK, whatever PID
 * namespace it is in. That is how dead processes are found without polling
 * /proc or trusting PIDs.
 */
#ifndef VG_SHMFILE_H
#define VG_SHMFILE_H

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

struct vg_shm_header {
  uint32_t magic;
  uint16_t version_major;
  uint16_t version_minor;
  uint64_t total_size; /* size of the whole mapped struct, header included */
  uint64_t reserved[2];
};

/* How long an opener waits for the flock, and a locker for the mutex, by
 * default: a holder keeps either for microseconds, so this is only ever
 * reached when a process of the container is stopped or forged the lock. */
#define VG_SHM_LOCK_WAIT_MS 10000u

/* Results of vg_shared_mutex_lock (and so of vg_region_lock). */
enum {
  VG_SHM_LOCKED = 0,
  VG_SHM_LOCK_UNUSABLE = -1, /* not a mutex any more (a corrupt or forged file) */
  VG_SHM_LOCK_TIMEDOUT = -2, /* held past the deadline: stuck, or a forged owner */
};

struct vg_shm {
  int fd;
  void *base;
  size_t size;
  bool created;          /* this open initialised the file */
  int self_slot;         /* slot this process claimed, -1 if none (see below) */
  unsigned lock_wait_ms; /* deadline of the mutex (VG_SHM_LOCK_WAIT_MS unless set) */
  int last_lock;         /* the last lock's result, VG_SHM_LOCK* */
  char path[PATH_MAX];
};

/* Initialises a fresh body; base is zeroed and the header not yet written. */
typedef int (*vg_shm_init_fn)(void *base, size_t size, void *arg, struct vg_err *err);

struct vg_shm_spec {
  const char *kind; /* for messages: "region file", "simulator state" */
  uint32_t magic;
  uint16_t version_major;
  uint16_t version_minor;
  size_t size;
  vg_shm_init_fn init;
  void *init_arg;
};

/* Opens (creating if absent or empty) and maps the file. On error nothing is
 * left open and err says what was wrong with which path. */
int vg_shm_open(struct vg_shm *shm, const char *path, const struct vg_shm_spec *spec,
                struct vg_err *err);

/* For the node agent, whose containers can write in dir (their slot
 * directory, which the agent made): opens the existing file name in dir
 * without following a link, without creating anything and without flock,
 * and refuses anything but a plain file with one link, of spec's size and
 * with a finished header. readonly: a private copy, read with pread (a
 * shared mapping would die of SIGBUS if the container truncated the file),
 * that liveness (vg_shm_slot_alive) can still be asked about. */
int vg_shm_open_at(struct vg_shm *shm, const char *dir, const char *name,
                   const struct vg_shm_spec *spec, bool readonly, struct vg_err *err);

/* Makes a fresh file in dir, initialised, and renames it over name in one
 * step: whatever was there (a link, a forged file) is replaced, never
 * followed or reused. mode is the file's mode. */
int vg_shm_create_at(struct vg_shm *shm, const char *dir, const char *name,
                     const struct vg_shm_spec *spec, unsigned mode, struct vg_err *err);

/* Opens an existing file read-only, for tools that only look. */
int vg_shm_open_readonly(struct vg_shm *shm, const char *path, const struct vg_shm_spec *spec,
                         struct vg_err *err);

/* A private, anonymous mapping initialised like a fresh file: the fallback
 * when no file can be used. Liveness locks are meaningless on it. */
int vg_shm_open_private(struct vg_shm *shm, const struct vg_shm_spec *spec, struct vg_err *err);

void vg_shm_close(struct vg_shm *shm);

/* Slot liveness (see above). vg_shm_claim_slot takes the lock for slot, fails
 * if another live process holds it, and records it as shm->self_slot: POSIX
 * locks never conflict with their owner, so F_GETLK cannot see our own lock
 * and vg_shm_slot_alive answers from self_slot instead. A forked child holds
 * no lock and must set self_slot to -1 and claim a slot of its own. */
int vg_shm_claim_slot(struct vg_shm *shm, unsigned slot);
void vg_shm_release_slot(struct vg_shm *shm, unsigned slot);
/* True if a live process holds slot's lock (this one included). */
bool vg_shm_slot_alive(const struct vg_shm *shm, unsigned slot);

/* Process-shared robust mutex kept inside a shared file. */
int vg_shared_mutex_init(pthread_mutex_t *mutex);
/* Locks within wait_ms; if the previous holder died holding it, calls
 * repair(arg) (with the lock held) before marking the mutex consistent again.
 * Returns VG_SHM_LOCKED, or VG_SHM_LOCK_TIMEDOUT / VG_SHM_LOCK_UNUSABLE (not
 * locked: callers must not go on as if they held it). */
int vg_shared_mutex_lock(pthread_mutex_t *mutex, unsigned wait_ms, void (*repair)(void *),
                         void *arg);
/* Words for a VG_SHM_LOCK_* result, for messages. */
const char *vg_shm_lock_strerror(int rc);
void vg_shared_mutex_unlock(pthread_mutex_t *mutex);

#endif
