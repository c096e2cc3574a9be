/*
 * cmd_run.c -- vgpu run: a command under limits, without Kubernetes.
 *
 * It does what the device plugin does for a container: set the limit
 * variables, point CUDA_DEVICE_MEMORY_SHARED_CACHE at the region file and
 * preload libvgpu.so; --sim also puts the simulated driver first on the
 * library path. Values are checked here with the library's own parser so a
 * typo fails before the workload starts.
 *
 * Unless --cache or $CUDA_DEVICE_MEMORY_SHARED_CACHE names a region to
 * share, the run gets a region file of its own (runs.c), so that limits one
 * run set do not stick for the next; vgpu run then waits for its command
 * (launch.c) and removes that file. Before the command starts, one line on
 * stderr says what limits it runs under (-q: none).
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "region.h"
#include "shmfile.h"
#include "size.h"

struct run_opts {
  int sim, quiet;
  const char *memory, *cores, *devices, *cache;
  char **command;
};

static int parse(int argc, char **argv, struct run_opts *o) {
  memset(o, 0, sizeof(*o));
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--") == 0) {
      o->command = argv + i + 1;
      break;
    }
    if (strcmp(a, "--sim") == 0 || strcmp(a, "-q") == 0 || strcmp(a, "--quiet") == 0) {
      *(strcmp(a, "--sim") == 0 ? &o->sim : &o->quiet) = 1;
      continue;
    }
    const char **slot = strcmp(a, "--memory") == 0    ? &o->memory
                        : strcmp(a, "--cores") == 0   ? &o->cores
                        : strcmp(a, "--devices") == 0 ? &o->devices
                        : strcmp(a, "--cache") == 0   ? &o->cache
                                                      : NULL;
    if (slot == NULL) {
      static const char *const known[] = {"--sim",   "--memory", "--cores", "--devices", "--cache",
                                          "--quiet", "-q",       "--help",  NULL};
      vg_cli_unknown_option("run", a, known);
      return -1;
    }
    if (i + 1 >= argc) {
      fprintf(stderr, "vgpu run: missing value for '%s'\n", a);
      return -1;
    }
    *slot = argv[++i];
  }
  if (o->command == NULL || o->command[0] == NULL) {
    fprintf(stderr, "vgpu run: no command given (usage: vgpu run [options] -- CMD ARGS...)\n");
    return -1;
  }
  return 0;
}

static int check_values(const struct run_opts *o) {
  struct vg_err err;
  uint64_t bytes;
  unsigned pct;
  if (o->memory != NULL && vg_parse_size(o->memory, &bytes, &err) != 0) {
    fprintf(stderr, "vgpu run: --memory %s: %s\n", o->memory, err.msg);
    return -1;
  }
  if (o->cores != NULL && vg_parse_percent(o->cores, &pct, &err) != 0) {
    fprintf(stderr, "vgpu run: --cores %s: %s\n", o->cores, err.msg);
    return -1;
  }
  return 0;
}

/* Prepends dir to a colon-separated variable. */
static int prepend(const char *name, const char *value) {
  const char *old = getenv(name);
  size_t n = strlen(value) + (old ? strlen(old) : 0) + 2;
  char *joined = malloc(n);
  if (joined == NULL) return -1;
  snprintf(joined, n, "%s%s%s", value, (old && *old) ? ":" : "", old ? old : "");
  int rc = setenv(name, joined, 1);
  free(joined);
  return rc;
}

static int set_environment(const struct run_opts *o, const char *region) {
  char lib[PATH_MAX], sim[PATH_MAX];
  if (vg_path_library(lib, sizeof(lib)) != 0) {
    fprintf(stderr,
            "vgpu run: cannot find libvgpu.so (looked beside this program in ../lib "
            "and in /usr/local/lib/vgpu; set VGPU_LIBRARY)\n");
    return -1;
  }
  if (o->sim && vg_path_sim_dir(sim, sizeof(sim)) != 0) {
    fprintf(stderr,
            "vgpu run: --sim: cannot find the simulated driver (../sim/libcuda.so.1 "
            "beside this program; set VGPU_SIM_DIR)\n");
    return -1;
  }
  if (o->sim && prepend("LD_LIBRARY_PATH", sim) != 0) return -1;
  if (prepend("LD_PRELOAD", lib) != 0) return -1;
  setenv("CUDA_DEVICE_MEMORY_SHARED_CACHE", region, 1);
  if (o->memory != NULL) setenv("CUDA_DEVICE_MEMORY_LIMIT", o->memory, 1);
  if (o->cores != NULL) setenv("CUDA_DEVICE_SM_LIMIT", o->cores, 1);
  if (o->devices != NULL) setenv("CUDA_VISIBLE_DEVICES", o->devices, 1);
  return 0;
}

/* Without --sim the command needs the NVIDIA driver; where there is none
 * the loader's "libcuda.so.1: cannot open shared object file" would be all
 * the user sees, so say what is missing and what to use instead. A warning
 * only: the command may not use CUDA at all. */
static void warn_without_driver(const struct run_opts *o) {
  if (o->sim) return;
  /* Left loaded (no dlclose): exec follows, and the library may have
   * registered fork handlers. */
  if (dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL) != NULL) return;
  fprintf(stderr,
          "vgpu run: warning: no NVIDIA driver found (libcuda.so.1 does not load), so CUDA "
          "programs will fail to start; on a machine without a GPU, use vgpu run --sim\n");
}

/* A region named by --cache or the caller's environment is shared on
 * purpose; otherwise this run makes its own, initialised now so that vgpu
 * status can read it before the command has touched the GPU. Returns 1 for
 * an own region, 0 for a shared one, -1 on error. */
static int choose_region(const struct run_opts *o, char *out, size_t len) {
  const char *env = getenv("CUDA_DEVICE_MEMORY_SHARED_CACHE");
  if ((o->cache != NULL && *o->cache != '\0') || (env != NULL && *env != '\0')) {
    snprintf(out, len, "%s", vg_path_region(o->cache));
    return 0;
  }
  struct vg_err err;
  struct vg_shm shm;
  if (vg_runs_create(out, len, &err) != 0 || vg_region_open(&shm, out, &err) != 0) {
    fprintf(stderr, "vgpu run: %s\n", err.msg);
    return -1;
  }
  vg_shm_close(&shm);
  return 1;
}

/* "2 GiB", "unlimited", or, unset in a shared region, what it holds. */
static void memory_text(const char *value, int own, char *buf, size_t len) {
  uint64_t bytes;
  struct vg_err err;
  if (value == NULL)
    snprintf(buf, len, "%s", own ? "unlimited" : "as the region has it");
  else if (vg_parse_size(value, &bytes, &err) != 0)
    snprintf(buf, len, "%s", value); /* libvgpu will say what is wrong */
  else if (bytes == 0)
    snprintf(buf, len, "unlimited");
  else
    vg_format_size(bytes, buf, len);
}

static void cores_text(const char *value, int own, char *buf, size_t len) {
  unsigned pct;
  struct vg_err err;
  if (value == NULL)
    snprintf(buf, len, "%s", own ? "unlimited" : "as the region has it");
  else if (vg_parse_percent(value, &pct, &err) != 0)
    snprintf(buf, len, "%s", value);
  else if (pct == 0)
    snprintf(buf, len, "unlimited");
  else
    snprintf(buf, len, "%u %%", pct);
}

/* One line on stderr: the limits in the command's environment. */
static void announce(const char *region, int own) {
  char mem[64], cores[64];
  memory_text(getenv("CUDA_DEVICE_MEMORY_LIMIT"), own, mem, sizeof(mem));
  cores_text(getenv("CUDA_DEVICE_SM_LIMIT"), own, cores, sizeof(cores));
  const char *devices = getenv("CUDA_VISIBLE_DEVICES");
  fprintf(stderr, "vgpu run: memory %s, cores %s, devices %s (region %s%s)\n", mem, cores,
          devices != NULL ? devices : "all", region, own ? "" : ", shared");
}

/* Runs the command and removes the run's own region afterwards. */
static int run_own(char **command, const char *region) {
  int status = vg_launch(command);
  int err = errno;
  unlink(region);
  if (status < 0) {
    fprintf(stderr, "vgpu run: cannot start %s: %s\n", command[0], strerror(err));
    return 127;
  }
  return vg_launch_exit(status);
}

int vg_cmd_run(int argc, char **argv) {
  struct run_opts o;
  if (parse(argc, argv, &o) != 0 || check_values(&o) != 0) return 2;
  warn_without_driver(&o);
  char region[PATH_MAX];
  int own = choose_region(&o, region, sizeof(region));
  if (own < 0) return 1;
  if (set_environment(&o, region) != 0) {
    if (own) unlink(region);
    return 1;
  }
  if (!o.quiet) announce(region, own);
  if (own) return run_own(o.command, region);
  execvp(o.command[0], o.command);
  fprintf(stderr, "vgpu run: cannot run %s: %s\n", o.command[0], strerror(errno));
  return 127;
}
