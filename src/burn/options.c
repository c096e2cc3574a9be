/*
 * options.c -- parsing vgpu-burn's command line (see options.h).
 *
 * getopt_long does the splitting ("--alloc 1g" and "--alloc=1g" both work);
 * one small parser per value type does the checking, so each option's rules
 * are stated once: sizes through vg_parse_size, durations as positive finite
 * decimals, counts as whole numbers in range.
 */
#include "options.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "size.h"
#include "opt.h"

static const char g_usage[] =
    "usage: vgpu-burn [OPTIONS]\n"
    "\n"
    "A GPU workload that uses only the CUDA driver API (libcuda.so.1), with its\n"
    "kernel embedded as PTX. Runs on a real NVIDIA driver and on vgpu's simulator\n"
    "(LD_LIBRARY_PATH=build/sim).\n"
    "\n"
    "Memory:\n"
    "  --alloc SIZE     allocate with cuMemAlloc in chunks until SIZE in total or\n"
    "                   until CUDA_ERROR_OUT_OF_MEMORY; print the amount reached\n"
    "  --chunk SIZE     bytes per cuMemAlloc call (default 16m)\n"
    "  --touch          write every chunk with cuMemsetD8\n"
    "  --hold SECONDS   keep the allocations this long before freeing them\n"
    "                   (another process can observe the usage meanwhile)\n"
    "  --meminfo        print cuMemGetInfo (free/total) and cuDeviceTotalMem\n"
    "\n"
    "Compute:\n"
    "  --seconds N      launch the FMA kernel repeatedly for N seconds (fractions\n"
    "                   allowed) on one stream and print kernels/s\n"
    "  --iters N        loop iterations inside the kernel (default 1000)\n"
    "  --grid B         blocks per launch (default: SM count x 4)\n"
    "  --block T        threads per block (default 256, at most 1024)\n"
    "  --shape S        launch shape preset: big (SM count x 32 blocks of 256\n"
    "                   threads: full-device, long) or small (4 blocks of 64\n"
    "                   threads: short) or mix (big and small launches in turn);\n"
    "                   --grid/--block override it (mix: its big launches)\n"
    "  --series MS      during --seconds, print 't=<s> kernels=<n> kps=<k/s>' every\n"
    "                   MS milliseconds (kernels and kernels/s of that interval)\n"
    "  --warmup S       launch kernels for S seconds before --seconds starts\n"
    "                   (not counted; lets a limiter reach its steady state)\n"
    "\n"
    "General:\n"
    "  --device N       CUDA device ordinal (default 0)\n"
    "  --rounds N       do all of the above N times in this one process, freeing\n"
    "                   the memory after each round (with --json, one JSON line\n"
    "                   per round); shows limits changed while a process runs\n"
    "  --interval S     seconds between rounds (default 1)\n"
    "  --json           print one JSON object on the last line: allocated_bytes,\n"
    "                   chunks, oom, kernels, kernels_per_s, seconds, mem_free,\n"
    "                   mem_total, device_total, ...\n"
    "  --driver         print the path of the libcuda.so.1 that was loaded (NVIDIA's\n"
    "                   driver or vgpu's simulator) and exit\n"
    "  -h, --help       show this text\n"
    "  --version        print the version and exit\n"
    "\n"
    "SIZE: a bare number is bytes; k/m/g/t and Ki/Mi/Gi/Ti are binary multiples\n"
    "(300m = 300 MiB); KB/MB/GB/TB are decimal; 1.5g is allowed.\n"
    "Without --alloc, --seconds or --hold, vgpu-burn prints the memory info.\n"
    "\n"
    "libcuda.so.1 is opened only after the command line is read: without an NVIDIA\n"
    "driver, --help works and everything else stops with a message (on a machine\n"
    "without a GPU, run it under 'vgpu run --sim').\n"
    "\n"
    "Exit status: 0 on success (an out-of-memory stop of --alloc is a success),\n"
    "1 when a CUDA call fails otherwise or no driver loads, 2 on a bad command line.\n";

enum {
  OPT_ALLOC = 256,
  OPT_CHUNK,
  OPT_TOUCH,
  OPT_HOLD,
  OPT_MEMINFO,
  OPT_SECONDS,
  OPT_ITERS,
  OPT_GRID,
  OPT_BLOCK,
  OPT_SHAPE,
  OPT_SERIES,
  OPT_WARMUP,
  OPT_DEVICE,
  OPT_JSON,
  OPT_ROUNDS,
  OPT_INTERVAL,
  OPT_DRIVER,
  OPT_VERSION
};

static const struct option g_long_opts[] = {
    {"alloc", required_argument, NULL, OPT_ALLOC},
    {"chunk", required_argument, NULL, OPT_CHUNK},
    {"touch", no_argument, NULL, OPT_TOUCH},
    {"hold", required_argument, NULL, OPT_HOLD},
    {"meminfo", no_argument, NULL, OPT_MEMINFO},
    {"seconds", required_argument, NULL, OPT_SECONDS},
    {"iters", required_argument, NULL, OPT_ITERS},
    {"grid", required_argument, NULL, OPT_GRID},
    {"block", required_argument, NULL, OPT_BLOCK},
    {"shape", required_argument, NULL, OPT_SHAPE},
    {"series", required_argument, NULL, OPT_SERIES},
    {"warmup", required_argument, NULL, OPT_WARMUP},
    {"device", required_argument, NULL, OPT_DEVICE},
    {"json", no_argument, NULL, OPT_JSON},
    {"rounds", required_argument, NULL, OPT_ROUNDS},
    {"interval", required_argument, NULL, OPT_INTERVAL},
    {"driver", no_argument, NULL, OPT_DRIVER},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, OPT_VERSION},
    {NULL, 0, NULL, 0},
};

static int bad_value(const char *opt, const char *value, const char *why) {
  fprintf(stderr, "vgpu-burn: --%s: invalid value '%s': %s\n", opt, value, why);
  return -1;
}

static int parse_size_opt(const char *opt, const char *value, uint64_t *out) {
  struct vg_err err;
  if (vg_parse_size(value, out, &err) != 0) {
    fprintf(stderr, "vgpu-burn: --%s: %s\n", opt, err.msg);
    return -1;
  }
  return 0;
}

/* A duration in seconds: a finite decimal, >= min_s, at most ten years. */
static int parse_seconds_opt(const char *opt, const char *value, double min_s, double *out) {
  char *end = NULL;
  errno = 0;
  double v = strtod(value, &end);
  if (*value == '\0' || end == value || *end != '\0' || errno != 0 || !isfinite(v))
    return bad_value(opt, value, "expected a number of seconds such as 2 or 0.5");
  if (v < min_s || (min_s == 0.0 && v < 0.0))
    return bad_value(opt, value, min_s > 0.0 ? "must be more than 0" : "must not be negative");
  if (v > 315360000.0) return bad_value(opt, value, "too long (at most ten years)");
  *out = v;
  return 0;
}

/* A whole decimal number in [lo, hi]. */
static int parse_uint_opt(const char *opt, const char *value, unsigned long lo, unsigned long hi,
                          unsigned long *out) {
  if (value[0] < '0' || value[0] > '9') return bad_value(opt, value, "expected a whole number");
  char *end = NULL;
  errno = 0;
  unsigned long v = strtoul(value, &end, 10);
  if (*end != '\0') return bad_value(opt, value, "expected a whole number");
  if (errno != 0 || v < lo || v > hi) {
    char why[96];
    snprintf(why, sizeof(why), "out of range (%lu to %lu)", lo, hi);
    return bad_value(opt, value, why);
  }
  *out = v;
  return 0;
}

static void set_defaults(struct burn_opts *o) {
  memset(o, 0, sizeof(*o));
  o->chunk_bytes = BURN_DEFAULT_CHUNK;
  o->rounds = 1;
  o->interval_s = 1.0;
  o->iters = BURN_DEFAULT_ITERS;
}

/* Applies one parsed option; returns 0 or -1 after printing why. */
static int apply_option(int c, const char *arg, struct burn_opts *o) {
  unsigned long v = 0;
  int rc = 0;
  switch (c) {
    case OPT_ALLOC:
      o->do_alloc = 1;
      return parse_size_opt("alloc", arg, &o->alloc_bytes);
    case OPT_CHUNK:
      if (parse_size_opt("chunk", arg, &o->chunk_bytes) != 0) return -1;
      return o->chunk_bytes == 0 ? bad_value("chunk", arg, "must be more than 0") : 0;
    case OPT_TOUCH:
      o->touch = 1;
      return 0;
    case OPT_HOLD:
      return parse_seconds_opt("hold", arg, 0.0, &o->hold_s);
    case OPT_ROUNDS:
      rc = parse_uint_opt("rounds", arg, 1, 1000000UL, &v);
      o->rounds = (unsigned)v;
      return rc;
    case OPT_INTERVAL:
      return parse_seconds_opt("interval", arg, 0.0, &o->interval_s);
    case OPT_MEMINFO:
      o->meminfo = 1;
      return 0;
    case OPT_SECONDS:
      return parse_seconds_opt("seconds", arg, 1e-9, &o->seconds);
    case OPT_ITERS:
      rc = parse_uint_opt("iters", arg, 0, 0xffffffffUL, &v);
      o->iters = (unsigned)v;
      return rc;
    case OPT_GRID:
      rc = parse_uint_opt("grid", arg, 1, 0x7fffffffUL, &v);
      o->grid = (unsigned)v;
      return rc;
    case OPT_BLOCK:
      rc = parse_uint_opt("block", arg, 1, BURN_MAX_BLOCK, &v);
      o->block = (unsigned)v;
      return rc;
    case OPT_SHAPE:
      if (strcmp(arg, "big") == 0)
        o->shape = BURN_SHAPE_BIG;
      else if (strcmp(arg, "small") == 0)
        o->shape = BURN_SHAPE_SMALL;
      else if (strcmp(arg, "mix") == 0)
        o->shape = BURN_SHAPE_MIX;
      else
        return bad_value("shape", arg, "expected big, small or mix");
      return 0;
    case OPT_SERIES:
      rc = parse_uint_opt("series", arg, 1, 3600000, &v);
      o->series_ms = (unsigned)v;
      return rc;
    case OPT_WARMUP:
      return parse_seconds_opt("warmup", arg, 0.0, &o->warmup_s);
    case OPT_DEVICE:
      rc = parse_uint_opt("device", arg, 0, 1023, &v);
      o->device = (int)v;
      return rc;
    case OPT_JSON:
      o->json = 1;
      return 0;
    case OPT_DRIVER:
      o->driver_only = 1;
      return 0;
    default:
      return -1;
  }
}

enum burn_parse_result burn_parse_options(int argc, char **argv, struct burn_opts *o) {
  set_defaults(o);
  optind = 1;
  int c;
  while ((c = vg_getopt_long(argc, argv, "h", g_long_opts, "vgpu-burn")) != -1) {
    if (c == 'h') {
      fputs(g_usage, stdout);
      return BURN_PARSE_HELP;
    }
    if (c == OPT_VERSION) {
      printf("vgpu-burn %s\n", VG_VERSION);
      return BURN_PARSE_HELP; /* done, exit 0 */
    }
    if (c == '?') return BURN_PARSE_ERROR; /* vg_getopt_long said what and why */
    if (apply_option(c, optarg, o) != 0) {
      fputs("vgpu-burn: try 'vgpu-burn --help'\n", stderr);
      return BURN_PARSE_ERROR;
    }
  }
  if (optind < argc) {
    fprintf(stderr, "vgpu-burn: unexpected argument '%s'; try 'vgpu-burn --help'\n", argv[optind]);
    return BURN_PARSE_ERROR;
  }
  if ((o->series_ms != 0 || o->warmup_s > 0.0) && o->seconds == 0.0) {
    fprintf(stderr, "vgpu-burn: --%s needs --seconds; try 'vgpu-burn --help'\n",
            o->series_ms != 0 ? "series" : "warmup");
    return BURN_PARSE_ERROR;
  }
  return BURN_PARSE_OK;
}
