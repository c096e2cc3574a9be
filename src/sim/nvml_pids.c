/*
 * nvml_pids.c -- the pids NVML reports, as the caller sees them.
 *
 * NVIDIA's NVML reports each process under its pid in the caller's PID
 * namespace: a node agent in the host's namespace (a DaemonSet with
 * hostPID: true) gets the host pid of a process running in a container, and
 * can use it (signal it, read its /proc, map it to a pod). A process slot of
 * the state file only records its owner's getpid() and the inode of the
 * owner's PID namespace, so a slot of another namespace is translated here:
 * the caller's /proc lists the process under the pid the caller knows, and
 * the last field of its /proc/P/status "NSpid:" line is its pid in its own,
 * innermost namespace, the one the slot recorded, and its start time
 * (/proc/P/stat) tells it from a process of another container that has the
 * same pid there. Both files are readable without ptrace rights, which a
 * node agent running with every capability dropped does not have over the
 * tenants' processes (their /proc/P/ns/pid is refused to it).
 *
 * A process the caller cannot see (a sibling namespace: another container,
 * or /proc refused) keeps the pid of its own namespace, as the simulator
 * reported every pid before this translation existed. The real driver drops
 * such a process from the list instead (its RM converts each client's pid
 * with pid_vnr() and skips the ones that are 0), but libvgpu's "share"
 * policy reads other containers' utilisation samples from these lists, so
 * the simulator keeps them for now; such a pid may equal one of the
 * caller's own.
 *
 * The scan reads one small status file per process of the machine, so it
 * runs only when a listing holds a slot of another namespace, at most once
 * per listing, and after the state lock is released (every CUDA call of
 * every process waits on that lock). Stack buffers only; opendir's is the
 * one allocation.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nvml_internal.h"

/* s as a pid if it is all decimal digits, else -1. */
static long decimal(const char *s) {
  long v = 0;
  if (*s == '\0') return -1;
  for (; *s >= '0' && *s <= '9'; s++) {
    v = v * 10 + (*s - '0');
    if (v > 0x7fffffff) return -1;
  }
  return *s == '\0' ? v : -1;
}

static uint64_t ns_inode(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 ? (uint64_t)st.st_ino : 0;
}

/* /proc belongs to the caller's namespace: only then are its entries pids
 * the caller can use (a process in a child namespace may still see its
 * parent's /proc mount). */
static bool proc_is_callers(void) {
  char link[32];
  ssize_t n = readlink("/proc/self", link, sizeof(link) - 1);
  if (n <= 0) return false;
  link[n] = '\0';
  return decimal(link) == (long)getpid();
}

/* Reads the start of a /proc file (status fits in far less than buf). */
static bool read_head(const char *path, char *buf, size_t size) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  size_t len = 0;
  ssize_t n;
  while (len < size - 1 && (n = read(fd, buf + len, size - 1 - len)) > 0) len += (size_t)n;
  close(fd);
  buf[len] = '\0';
  return len > 0;
}

/* The last NSpid of /proc/<p>/status: the process's pid in its own
 * namespace; -1 if unreadable (it exited, or a kernel before 4.1). */
static long innermost_pid(long p) {
  char path[64], buf[4096];
  snprintf(path, sizeof(path), "/proc/%ld/status", p);
  if (!read_head(path, buf, sizeof(buf))) return -1;
  char *line = strstr(buf, "\nNSpid:");
  if (line == NULL) return -1;
  char *eol = strchr(line + 1, '\n');
  if (eol != NULL) *eol = '\0';
  char *last = strrchr(line, '\t');
  return last == NULL ? -1 : decimal(last + 1);
}

static bool foreign(const struct nv_pid *id, uint64_t self) {
  return id->ns != 0 && id->ns != self;
}

/* Gives the rows that are process p (here; inner in its own namespace)
 * the pid p; returns how many. The start time is read only on a pid match. */
static unsigned match(struct nv_pid *ids, unsigned n, uint64_t self, long p, long inner) {
  uint64_t started = 0;
  unsigned hits = 0;
  for (unsigned i = 0; i < n; i++) {
    if (!foreign(&ids[i], self) || ids[i].pid != (unsigned)inner) continue;
    if (started == 0) {
      char path[64];
      snprintf(path, sizeof(path), "/proc/%ld/stat", p);
      if ((started = vg_sim_start_ticks(path)) == 0) return hits;
    }
    if (ids[i].started != started) continue;
    ids[i] = (struct nv_pid){(unsigned)p, self, started};
    hits++;
  }
  return hits;
}

static void scan(struct nv_pid *ids, unsigned n, uint64_t self, unsigned left) {
  DIR *dir = opendir("/proc");
  if (dir == NULL) return;
  struct dirent *e;
  while (left > 0 && (e = readdir(dir)) != NULL) {
    long p = decimal(e->d_name);
    if (p <= 0) continue;
    long inner = innermost_pid(p);
    if (inner > 0) left -= match(ids, n, self, p, inner);
  }
  closedir(dir);
}

void nv_pids_to_caller(struct nv_pid *ids, unsigned n) {
  uint64_t self = ns_inode("/proc/self/ns/pid");
  if (self == 0) return; /* no /proc: nothing to compare or scan */
  unsigned left = 0;
  for (unsigned i = 0; i < n; i++) left += foreign(&ids[i], self);
  if (left > 0 && proc_is_callers()) scan(ids, n, self, left);
}
