/*
 * cmd_run.c -- vgpu run: a command under limits, without Kubernetes.
 *
 * It does what the device plugin does for a container: set the limit
 * variables, point CUDA_DEVICE_MEMORY_SHARED_CACHE at the region file and
 * preload libvgpu.so; --sim also puts the simulated driver first on the
 * library path. Values are checked here with the library's own parser so a
 * typo fails before the workload starts.
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "size.h"

struct run_opts {
  int sim;
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
    if (strcmp(a, "--sim") == 0) {
      o->sim = 1;
      continue;
    }
    const char **slot = strcmp(a, "--memory") == 0    ? &o->memory
                        : strcmp(a, "--cores") == 0   ? &o->cores
                        : strcmp(a, "--devices") == 0 ? &o->devices
                        : strcmp(a, "--cache") == 0   ? &o->cache
                                                      : NULL;
    if (slot == NULL) {
      static const char *const known[] = {"--sim",   "--memory", "--cores", "--devices",
                                          "--cache", "--help",   NULL};
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

static int set_environment(const struct run_opts *o) {
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
  setenv("CUDA_DEVICE_MEMORY_SHARED_CACHE", vg_path_region(o->cache), 1);
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

int vg_cmd_run(int argc, char **argv) {
  struct run_opts o;
  if (parse(argc, argv, &o) != 0 || check_values(&o) != 0) return 2;
  warn_without_driver(&o);
  if (set_environment(&o) != 0) return 1;
  execvp(o.command[0], o.command);
  fprintf(stderr, "vgpu run: cannot run %s: %s\n", o.command[0], strerror(errno));
  return 127;
}
