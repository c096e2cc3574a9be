/*
 * bench_harness.h -- the harness shared by vgpu-bench-hook and
 * vgpu-bench-launch.
 *
 * A benchmark program describes itself in a struct bench_spec: its name (for
 * messages), usage text, cases, the defaults and name of its one
 * program-specific count option (--alloc-iters, --batch), a set-up function
 * and, optionally, how one round of a case runs. bench_main() does the rest:
 * the command line (--iters, the extra count, --rounds, --case, --json,
 * --help), the warm-up and best-of-rounds timing, and the table and JSON
 * line. Exit status: 0 ok (or --help), 1 a driver call failed, 2 a bad
 * command line.
 *
 * Timed work goes through the non-inlined bench_timed(), so `valgrind
 * --tool=callgrind --toggle-collect=bench_timed PROGRAM --case NAME` counts
 * the instructions of exactly the timed operations; the JSON's <case>_ops
 * says how many there were.
 */
#ifndef VGPU_BENCH_HARNESS_H
#define VGPU_BENCH_HARNESS_H

#include <stddef.h>
#include <stdint.h>

#include "cuda_dl.h"

/* One case: a loop doing n operations, reporting failures in
 * bench_loop_error so that it stays as thin as the calls it measures. */
struct bench_case {
  const char *name; /* --case NAME, JSON <name>_ns / <name>_ops */
  const char *what; /* the call, for the table and error messages */
  void (*loop)(uint64_t n);
  int extra_iters; /* rounds are the extra count option's operations, not --iters */
  double best_ns;  /* result: ns per operation, best round */
  uint64_t ops;    /* result: operations done in timed rounds */
};

struct bench_opts {
  uint64_t iters;   /* --iters */
  uint64_t extra;   /* the program's extra count option */
  unsigned rounds;  /* --rounds */
  const char *only; /* --case: run just this case (callgrind mode) */
  int json;         /* --json */
};

struct bench_spec {
  const char *prog;      /* program name in messages */
  const char *usage;     /* --help text */
  const char *extra_opt; /* long option name of the extra count, e.g. "batch" */
  const char *extra_key; /* its JSON key */
  uint64_t iters_default, extra_default;
  int name_width, what_width; /* table columns */
  struct bench_case *cases;
  size_t n_cases;
  int (*setup)(void); /* 0 or -1 (after bench_check's message) */
  /* One round of n operations; returns the timed ns (0 when !timed), or < 0
   * when it failed. NULL: just c->loop(n), through bench_timed when timed. */
  double (*round)(const struct bench_case *c, uint64_t n, const struct bench_opts *o, int timed);
};

/* Set by a case's loop when a call fails; checked after the case. */
extern CUresult bench_loop_error;

/* 0 when r is CUDA_SUCCESS, else prints "PROG: CALL failed: NAME (r)" and
 * returns -1. */
int bench_check(CUresult r, const char *call);

/* CLOCK_MONOTONIC ns around loop(n): the only place callgrind collects. */
double bench_timed(void (*loop)(uint64_t), uint64_t n);

int bench_main(const struct bench_spec *s, int argc, char **argv);

#endif
