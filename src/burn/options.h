/*
 * options.h -- vgpu-burn's command line.
 *
 * Everything the user can ask for is parsed up front into one plain struct,
 * and every bad value is rejected before the GPU is touched, with a message
 * that names the option and quotes the value (exit status 2). Sizes use the
 * project's one size grammar (vg_parse_size: "300m" is 300 MiB).
 */
#ifndef VG_BURN_OPTIONS_H
#define VG_BURN_OPTIONS_H

#include <stdint.h>

#define BURN_DEFAULT_CHUNK (16ULL << 20)
#define BURN_DEFAULT_ITERS 1000u
#define BURN_MAX_BLOCK 1024u

/* --shape presets. The grid of "big" is per SM so that it fills any device
 * (on the simulator: 4 waves of 256-thread blocks); "small" is a handful of
 * blocks (one partial wave). An explicit --grid/--block wins. */
enum burn_shape { BURN_SHAPE_DEFAULT = 0, BURN_SHAPE_BIG, BURN_SHAPE_SMALL, BURN_SHAPE_MIX };
#define BURN_BIG_BLOCKS_PER_SM 32u
#define BURN_BIG_BLOCK 256u
#define BURN_SMALL_GRID 4u
#define BURN_SMALL_BLOCK 64u

struct burn_opts {
  int do_alloc;         /* --alloc given */
  uint64_t alloc_bytes; /* --alloc SIZE: stop once this much is allocated */
  uint64_t chunk_bytes; /* --chunk SIZE: bytes per cuMemAlloc call */
  int touch;            /* --touch: cuMemsetD8 every chunk */
  double hold_s;        /* --hold SECONDS: keep allocations this long */
  double seconds;       /* --seconds N: run kernels this long; 0 = none */
  unsigned iters;       /* --iters N: loop count inside the kernel */
  unsigned grid;        /* --grid B: blocks per launch; 0 = SMs x 4 */
  unsigned block;       /* --block T: threads per block; 0 = 256 */
  int shape;            /* --shape: BURN_SHAPE_*; fills grid/block not given */
  unsigned series_ms;   /* --series MS: one throughput line per MS ms; 0 = none */
  double warmup_s;      /* --warmup SECONDS: untimed launches before --seconds */
  int device;           /* --device N: CUDA device ordinal */
  int meminfo;          /* --meminfo: print cuMemGetInfo/cuDeviceTotalMem */
  int json;             /* --json: one JSON object on the last line */
  unsigned rounds;      /* --rounds N: phases 2-5 this many times (default 1) */
  double interval_s;    /* --interval SECONDS: pause between rounds (default 1) */
  int driver_only;      /* --driver: print the loaded libcuda.so.1's path, nothing else */
};

/* Outcome of burn_parse_options. */
enum burn_parse_result { BURN_PARSE_OK = 0, BURN_PARSE_HELP = 1, BURN_PARSE_ERROR = 2 };

/* Fills o from argv. On BURN_PARSE_ERROR a message has been printed to
 * stderr; on BURN_PARSE_HELP the usage text has been printed to stdout. */
enum burn_parse_result burn_parse_options(int argc, char **argv, struct burn_opts *o);

#endif
