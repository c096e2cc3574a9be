/* harness.c -- see harness.h. */
#include "harness.h"

#include "region.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

const char *vg_build_dir(void) {
  const char *dir = getenv("VGPU_BUILD_DIR");
  return (dir != NULL && *dir != '\0') ? dir : VG_BUILD_DIR;
}

const char *vg_build_path(const char *relative) {
  static __thread char path[PATH_MAX];
  snprintf(path, sizeof(path), "%s/%s", vg_build_dir(), relative);
  return path;
}

void vg_env_set(struct vg_env *env, const char *name, const char *value) {
  size_t n = strlen(name);
  char *entry = malloc(n + strlen(value) + 2);
  sprintf(entry, "%s=%s", name, value);
  for (int i = 0; i < env->nvars; i++) {
    if (strncmp(env->vars[i], name, n) == 0 && env->vars[i][n] == '=') {
      free(env->vars[i]);
      env->vars[i] = entry;
      return;
    }
  }
  if (env->nvars < VG_ENV_MAX) {
    env->vars[env->nvars++] = entry;
    env->vars[env->nvars] = NULL;
  } else {
    free(entry);
  }
}

void vg_env_unset(struct vg_env *env, const char *name) {
  size_t n = strlen(name);
  for (int i = 0; i < env->nvars; i++) {
    if (strncmp(env->vars[i], name, n) == 0 && env->vars[i][n] == '=') {
      free(env->vars[i]);
      env->vars[i] = env->vars[--env->nvars];
      env->vars[env->nvars] = NULL;
      return;
    }
  }
}

static void copy_var(struct vg_env *env, const char *name) {
  const char *v = getenv(name);
  if (v != NULL) vg_env_set(env, name, v);
}

void vg_env_init(struct vg_env *env, bool preload) {
  memset(env, 0, sizeof(*env));
  snprintf(env->dir, sizeof(env->dir), "/tmp/vgpu-test-XXXXXX");
  if (mkdtemp(env->dir) == NULL) {
    perror("mkdtemp");
    abort();
  }
  snprintf(env->cache, sizeof(env->cache), "%s/region.cache", env->dir);
  snprintf(env->state, sizeof(env->state), "%s/sim.state", env->dir);
  copy_var(env, "PATH");
  copy_var(env, "ASAN_OPTIONS");
  copy_var(env, "UBSAN_OPTIONS");
  copy_var(env, "VGPU_LOG_LEVEL");
  vg_env_set(env, "VGPU_BUILD_DIR", vg_build_dir());
  vg_env_set(env, "VGPU_SIM_STATE", env->state);
  vg_env_set(env, "CUDA_DEVICE_MEMORY_SHARED_CACHE", env->cache);
  vg_env_set(env, "LD_LIBRARY_PATH", vg_build_path("sim"));
  if (preload) {
    char list[2 * PATH_MAX + 2];
    const char *asan = VG_ASAN_RUNTIME;
    if (asan[0] != '\0')
      snprintf(list, sizeof(list), "%s:%s", asan, vg_build_path("lib/libvgpu.so"));
    else
      snprintf(list, sizeof(list), "%s", vg_build_path("lib/libvgpu.so"));
    vg_env_set(env, "LD_PRELOAD", list);
  }
}

void vg_env_cleanup(struct vg_env *env) {
  for (int i = 0; i < env->nvars; i++) free(env->vars[i]);
  env->nvars = 0;
  char cmd[300];
  snprintf(cmd, sizeof(cmd), "rm -rf '%s'", env->dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", env->dir);
}

static int decode_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

int vg_wait(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return decode_status(status);
}

static void read_file(const char *path, char *buf, size_t len) {
  buf[0] = '\0';
  FILE *f = fopen(path, "r");
  if (f == NULL) return;
  size_t n = fread(buf, 1, len - 1, f);
  buf[n] = '\0';
  fclose(f);
}

/* out/err NULL: the child names its files after its own pid (vg_spawn). */
static pid_t spawn_to(const struct vg_env *env, char *const argv[], const char *out,
                      const char *err) {
  pid_t pid = fork();
  if (pid == 0) {
    char own_out[400], own_err[400];
    if (out == NULL) {
      snprintf(own_out, sizeof(own_out), "%s/spawn-%d.out", env->dir, (int)getpid());
      snprintf(own_err, sizeof(own_err), "%s/spawn-%d.err", env->dir, (int)getpid());
      out = own_out;
      err = own_err;
    }
    int fo = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int fe = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fo < 0 || fe < 0) _exit(126);
    dup2(fo, 1);
    dup2(fe, 2);
    execve(argv[0], argv, env->vars);
    fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
    _exit(127);
  }
  return pid;
}

int vg_run(const struct vg_env *env, char *const argv[], struct vg_run *run) {
  static unsigned counter;
  char out[400], err[400];
  unsigned n = __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED);
  snprintf(out, sizeof(out), "%s/run%u.out", env->dir, n);
  snprintf(err, sizeof(err), "%s/run%u.err", env->dir, n);
  pid_t pid = spawn_to(env, argv, out, err);
  run->status = vg_wait(pid);
  read_file(out, run->out, sizeof(run->out));
  read_file(err, run->err, sizeof(run->err));
  if (getenv("VG_TEST_VERBOSE") != NULL)
    fprintf(stderr, "--- %s -> %d\n%s%s", argv[0], run->status, run->out, run->err);
  return run->status;
}

pid_t vg_spawn(const struct vg_env *env, char *const argv[]) {
  return spawn_to(env, argv, NULL, NULL);
}

void vg_spawn_output(const struct vg_env *env, pid_t pid, char *buf, size_t len) {
  char path[400];
  snprintf(path, sizeof(path), "%s/spawn-%d.out", env->dir, (int)pid);
  read_file(path, buf, len);
}

void vg_spawn_errors(const struct vg_env *env, pid_t pid, char *buf, size_t len) {
  char path[400];
  snprintf(path, sizeof(path), "%s/spawn-%d.err", env->dir, (int)pid);
  read_file(path, buf, len);
}

bool vg_json_u64(const char *out, const char *key, unsigned long long *value) {
  char pattern[128];
  snprintf(pattern, sizeof(pattern), "\"%s\":", key);
  const char *hit = NULL;
  for (const char *p = strstr(out, pattern); p != NULL; p = strstr(p + 1, pattern)) hit = p;
  if (hit == NULL) return false;
  hit += strlen(pattern);
  while (*hit == ' ') hit++;
  if (strncmp(hit, "true", 4) == 0) {
    *value = 1;
    return true;
  }
  if (strncmp(hit, "false", 5) == 0) {
    *value = 0;
    return true;
  }
  char *end;
  *value = strtoull(hit, &end, 10);
  return end != hit;
}

/* Index of the last argument worth naming in a message (the script). */
static int argc_last(char *const argv[]) { return argv[1] != NULL ? 1 : 0; }

pid_t vg_start_server(char *const argv[], int *port) {
  int fds[2];
  if (pipe(fds) != 0) return -1;
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 1);
    close(fds[0]);
    close(fds[1]);
    execv(argv[0], argv);
    _exit(127);
  }
  close(fds[1]);
  char line[64] = "";
  size_t n = 0;
  while (n < sizeof(line) - 1 && read(fds[0], line + n, 1) == 1 && line[n] != '\n') n++;
  line[n] = '\0';
  close(fds[0]);
  if (pid > 0 && sscanf(line, "PORT %d", port) == 1) return pid;
  fprintf(stderr, "%s did not start: '%s'\n", argv[argc_last(argv)], line);
  if (pid > 0) {
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
  }
  return -1;
}

pid_t vg_live_pid(void) {
  pid_t pid = fork();
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    pause();
    _exit(0);
  }
  return pid;
}

void vg_forge_region_lock(struct vg_shm *shm, pid_t owner) {
  pthread_mutex_t *m = &vg_region_of(shm)->lock.mutex;
  __atomic_store_n(&m->__data.__lock, (int)owner, __ATOMIC_RELEASE);
  m->__data.__owner = (int)owner;
}
