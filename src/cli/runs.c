/*
 * runs.c -- the region files of `vgpu run`, one per run.
 *
 * A plain `vgpu run` used to share /tmp/vgpu.cache with every other run, so
 * a limit one run set stuck for the next. Each run now gets its own file,
 * named by the pid of its `vgpu run` process, in a directory only its user
 * can enter, and removes it when the command exits. `vgpu status` and `vgpu
 * set` find the file of the one live run; a file whose `vgpu run` is gone
 * (it was killed) is stale, ignored and removed.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

#define RUN_SUFFIX ".cache"

/* $XDG_RUNTIME_DIR is the user's own already; under a shared temporary
 * directory the name carries the uid so that users do not collide. */
static void runs_dir(char *out, size_t len) {
  const char *xdg = getenv("XDG_RUNTIME_DIR");
  if (xdg != NULL && *xdg != '\0') {
    snprintf(out, len, "%s/vgpu-runs", xdg);
    return;
  }
  const char *tmp = getenv("TMPDIR");
  snprintf(out, len, "%s/vgpu-runs-%u", (tmp != NULL && *tmp != '\0') ? tmp : "/tmp",
           (unsigned)getuid());
}

/* The directory must be ours and closed to others: in a shared /tmp
 * someone else could have made it first, to see or swap our region. */
static int make_private_dir(const char *dir, struct vg_err *err) {
  if (mkdir(dir, 0700) != 0 && errno != EEXIST)
    return vg_err_set(err, "cannot create %s: %s", dir, strerror(errno));
  /* Opened, not lstat'ed: the CLI runs on glibc 2.17, which has no lstat
   * symbol, and O_NOFOLLOW refuses a symlink just as well. */
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  struct stat st;
  int rc = fd < 0 ? -1 : fstat(fd, &st);
  if (fd >= 0) close(fd);
  if (rc != 0) return vg_err_set(err, "cannot use %s: %s", dir, strerror(errno));
  if (!S_ISDIR(st.st_mode) || st.st_uid != getuid() || (st.st_mode & 077) != 0)
    return vg_err_set(err,
                      "refusing to use %s for per-run region files: not a directory of this user "
                      "closed to others (mode 0700)",
                      dir);
  return 0;
}

int vg_runs_create(char *out, size_t len, struct vg_err *err) {
  char dir[PATH_MAX - 32];
  runs_dir(dir, sizeof(dir));
  if (make_private_dir(dir, err) != 0) return -1;
  snprintf(out, len, "%s/%d" RUN_SUFFIX, dir, (int)getpid());
  /* A file of this name is left from an earlier run whose pid was ours, so
   * it is stale; unlinked rather than truncated, because a process of that
   * run may still map it. */
  unlink(out);
  int fd = open(out, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return vg_err_set(err, "cannot create %s: %s", out, strerror(errno));
  close(fd);
  return 0;
}

/* /proc/PID/cmdline, NUL-separated, into buf; its length, 0 if unreadable. */
static size_t read_cmdline(int pid, char *buf, size_t len) {
  char path[64];
  snprintf(path, sizeof(path), "/proc/%d/cmdline", pid);
  FILE *f = fopen(path, "r");
  if (f == NULL) return 0;
  size_t n = fread(buf, 1, len - 1, f);
  fclose(f);
  buf[n] = '\0';
  return n;
}

/* pid is a live `vgpu run` (not a process that got its pid after that run
 * was killed); command gets what runs under it, as typed after "--". */
static bool owner_alive(int pid, char *command, size_t len) {
  char args[4096];
  if (kill(pid, 0) != 0) return false;
  size_t n = read_cmdline(pid, args, sizeof(args));
  const char *end = args + n, *a = args + strlen(args) + 1;
  if (a >= end || strcmp(a, "run") != 0) return false;
  while (a < end && strcmp(a, "--") != 0) a += strlen(a) + 1;
  command[0] = '\0';
  if (a < end) a += strlen(a) + 1; /* past the "--" */
  for (; a < end; a += strlen(a) + 1) {
    size_t used = strlen(command);
    snprintf(command + used, len - used, "%s%s", used ? " " : "", a);
  }
  return true;
}

/* The pid in a per-run file's name, or -1 for any other name. */
static int name_pid(const char *name) {
  char *end;
  long pid = strtol(name, &end, 10);
  if (end == name || strcmp(end, RUN_SUFFIX) != 0 || pid <= 0 || pid > INT_MAX) return -1;
  return (int)pid;
}

void vg_runs_list(struct vg_live_runs *live) {
  memset(live, 0, sizeof(*live));
  char dir[PATH_MAX - 300];
  runs_dir(dir, sizeof(dir));
  DIR *d = opendir(dir);
  if (d == NULL) return;
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    int pid = name_pid(e->d_name);
    if (pid < 0) continue;
    struct vg_live_run one = {.pid = pid};
    snprintf(one.path, sizeof(one.path), "%s/%s", dir, e->d_name);
    if (!owner_alive(pid, one.command, sizeof(one.command))) {
      unlink(one.path); /* stale: its vgpu run was killed */
      continue;
    }
    if (live->count < VG_LIVE_RUNS_MAX) live->run[live->count] = one;
    live->count++;
  }
  closedir(d);
}

int vg_path_region_find(const char *option, char *out, size_t len, struct vg_live_runs *live) {
  memset(live, 0, sizeof(*live));
  const char *env = getenv("CUDA_DEVICE_MEMORY_SHARED_CACHE");
  if ((option != NULL && *option != '\0') || (env != NULL && *env != '\0')) {
    snprintf(out, len, "%s", vg_path_region(option));
    return 0;
  }
  vg_runs_list(live);
  if (live->count > 1) return 1;
  snprintf(out, len, "%s", live->count == 1 ? live->run[0].path : VG_DEFAULT_REGION_PATH);
  return 0;
}

static void refuse(FILE *to, const char *verb, const struct vg_live_runs *live) {
  fprintf(to, "vgpu %s: %d vgpu run commands are running, each with its own region file:\n", verb,
          live->count);
  for (int i = 0; i < live->count && i < VG_LIVE_RUNS_MAX; i++)
    fprintf(to, "  %s  pid %d  %s\n", live->run[i].path, live->run[i].pid, live->run[i].command);
  fprintf(to, "vgpu %s: pass --cache PATH to choose one\n", verb);
}

int vg_cli_region(const char *verb, const char *option, char *out, size_t len) {
  struct vg_live_runs live;
  if (vg_path_region_find(option, out, len, &live) == 0) return 0;
  refuse(stderr, verb, &live);
  return -1;
}
