/*
 * cmd_set.c -- vgpu set: change the limits of processes already running.
 *
 * The limits live in the region file and every allocation reads them, so a
 * new memory limit holds from the next allocation on, in every process of
 * the container. Lowering memory below what is already in use is refused:
 * nothing allocated is taken away. In a container of the device plugin a
 * limit above the node agent's grant is cut to the grant, and said so.
 */
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "region.h"
#include "size.h"

struct set_opts {
  const char *cache, *memory, *cores;
  int device; /* region entry, -1: all */
};

static int parse(int argc, char **argv, struct set_opts *o) {
  memset(o, 0, sizeof(*o));
  o->device = -1;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    bool known = strcmp(a, "--cache") == 0 || strcmp(a, "--memory") == 0 ||
                 strcmp(a, "--cores") == 0 || strcmp(a, "--device") == 0;
    if (!known) {
      static const char *const options[] = {"--cache",  "--memory", "--cores",
                                            "--device", "--help",   NULL};
      vg_cli_unknown_option("set", a, options);
      return -1;
    }
    if (i + 1 >= argc) {
      fprintf(stderr, "vgpu set: missing value for '%s'\n", a);
      return -1;
    }
    if (strcmp(a, "--cache") == 0)
      o->cache = argv[++i];
    else if (strcmp(a, "--memory") == 0)
      o->memory = argv[++i];
    else if (strcmp(a, "--cores") == 0)
      o->cores = argv[++i];
    else if (strcmp(a, "--device") == 0) {
      char *end;
      long d = strtol(argv[++i], &end, 10);
      if (*end != '\0' || d < 0 || d >= VG_MAX_DEVICES) {
        fprintf(stderr, "vgpu set: --device %s: use a device index from vgpu status\n", argv[i]);
        return -1;
      }
      o->device = (int)d;
    }
  }
  if (o->memory == NULL && o->cores == NULL) {
    fprintf(stderr, "vgpu set: nothing to change (give --memory and/or --cores)\n");
    return -1;
  }
  return 0;
}

/* Under a grant a limit above it is cut to it, and said: libvgpu would
 * apply the grant anyway, and the user should not believe otherwise. */
static uint64_t within_grant(const struct vg_grant *g, const char *uuid, uint64_t bytes,
                             const char *dir) {
  const struct vg_grant_gpu *gpu = vg_grant_find(g, uuid);
  if (vg_grant_memory(gpu, bytes) == bytes) return bytes;
  char a[32], b[32];
  fprintf(stderr, "vgpu set: %s: %s is above this container's grant of %s (%s/%s); %s applies\n",
          uuid, bytes ? vg_format_size(bytes, a, sizeof(a)) : "unlimited",
          vg_format_size(gpu->memory, b, sizeof(b)), dir, VG_GRANT_FILE, b);
  return gpu->memory;
}

static unsigned cores_within_grant(const struct vg_grant *g, const char *uuid, unsigned pct,
                                   const char *dir) {
  const struct vg_grant_gpu *gpu = vg_grant_find(g, uuid);
  unsigned asked = vg_grant_cores(NULL, pct);
  if (vg_grant_cores(gpu, pct) == asked) return pct;
  fprintf(stderr,
          "vgpu set: %s: %u %% is above this container's grant of %u %% (%s/%s); %u %% applies\n",
          uuid, asked ? asked : 100, gpu->cores, dir, VG_GRANT_FILE, gpu->cores);
  return gpu->cores;
}

/* What was set on device d, said on stdout: a command that changes a
 * running workload confirms what it changed. */
static void confirm(const struct vg_region *r, uint32_t d, const struct set_opts *o, uint64_t b,
                    unsigned p) {
  char size[32];
  printf("vgpu set: device %u (%s):", d, r->dev[d].uuid);
  if (o->memory != NULL)
    printf(" memory %s", b ? vg_format_size(b, size, sizeof(size)) : "unlimited");
  if (o->cores != NULL) {
    if (p == 0 || p >= 100)
      printf("%s cores unlimited", o->memory ? "," : "");
    else
      printf("%s cores %u %%", o->memory ? "," : "", p);
  }
  putchar('\n');
}

static int apply(struct vg_shm *shm, const struct set_opts *o, uint64_t bytes, unsigned pct,
                 const struct vg_grant *g, const char *dir) {
  struct vg_region *r = vg_region_of(shm);
  int failed = 0;
  for (uint32_t d = 0; d < r->device_count && d < VG_MAX_DEVICES; d++) {
    if (o->device >= 0 && (uint32_t)o->device != d) continue;
    struct vg_err err;
    uint64_t b = within_grant(g, r->dev[d].uuid, bytes, dir);
    unsigned p = o->cores != NULL ? cores_within_grant(g, r->dev[d].uuid, pct, dir) : 0;
    if (o->memory != NULL && vg_region_set_mem_limit(shm, (int)d, b, &err) != 0) {
      fprintf(stderr, "vgpu set: %s\n", err.msg);
      failed = 1;
      continue;
    }
    if (o->cores != NULL && vg_region_set_sm_limit(shm, (int)d, p, &err) != 0) {
      fprintf(stderr, "vgpu set: %s\n", err.msg);
      failed = 1;
      continue;
    }
    confirm(r, d, o, b, p);
  }
  return failed;
}

int vg_cmd_set(int argc, char **argv) {
  struct set_opts o;
  struct vg_err err;
  uint64_t bytes = 0;
  unsigned pct = 0;
  if (parse(argc, argv, &o) != 0) return 2;
  if (o.memory == NULL && o.cores == NULL) {
    fputs("vgpu set: nothing to change: give --memory SIZE, --cores PCT or both\n", stderr);
    return 2;
  }
  if (o.memory && vg_parse_size(o.memory, &bytes, &err) != 0) {
    fprintf(stderr, "vgpu set: --memory %s: %s\n", o.memory, err.msg);
    return 2;
  }
  if (o.memory && vg_size_is_decimal(o.memory)) {
    char note[320];
    fprintf(stderr, "vgpu set: note: %s\n",
            vg_size_decimal_note("--memory", o.memory, bytes, note, sizeof(note)));
  }
  if (o.cores && vg_parse_percent(o.cores, &pct, &err) != 0) {
    fprintf(stderr, "vgpu set: --cores %s: %s\n", o.cores, err.msg);
    return 2;
  }
  struct vg_grant grant;
  char dir[512];
  if (vg_cli_grant(&grant, dir, sizeof(dir), &err) < 0) {
    fprintf(stderr, "vgpu set: %s\n", err.msg);
    return 1;
  }
  char path[PATH_MAX];
  if (vg_cli_region("set", o.cache, path, sizeof(path)) != 0) return 1;
  struct vg_shm shm;
  if (vg_shm_open_readonly(&shm, path, &vg_region_spec, &err) != 0 ||
      (vg_shm_close(&shm), vg_region_open(&shm, path, &err)) != 0) {
    fprintf(stderr, "vgpu set: %s\n", err.msg);
    return 1;
  }
  uint32_t count = vg_region_of(&shm)->device_count;
  if (count == 0)
    fprintf(stderr, "vgpu set: %s has no devices yet (no GPU process has run)\n", path);
  if (o.device >= 0 && (uint32_t)o.device >= count) {
    fprintf(stderr, "vgpu set: --device %d: %s has %u device(s)%s; see vgpu status\n", o.device,
            path, count, count ? ", numbered from 0" : "");
    vg_shm_close(&shm);
    return 1;
  }
  int rc = apply(&shm, &o, bytes, pct, &grant, dir);
  vg_shm_close(&shm);
  return rc;
}
