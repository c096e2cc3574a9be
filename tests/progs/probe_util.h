/*
 * probe_util.h -- what the integration tests' CUDA programs (probe.c,
 * probe_paths.c) share: failing with one JSON line, the primary context of
 * PROBE_DEVICE, size arguments, a clock, an empty kernel and a graph of it.
 */
#ifndef VG_PROBE_UTIL_H
#define VG_PROBE_UTIL_H

#include <stdbool.h>
#include <stddef.h>

#include "cuda_abi.h"

#define GRAPH_NODES 4

/* Prints {"error":what,"rc":rc} and exits 3. */
void fail(const char *what, CUresult rc) __attribute__((noreturn));
/* The integer in environment variable name, 0 when unset. */
int env_int(const char *name);
/* cuInit, then PROBE_DEVICE's primary context made current (fails on error). */
void setup(void);
/* A size argument ("10m", "1g", ...); exits 2 naming it when malformed. */
size_t arg_size(const char *s);
/* CLOCK_MONOTONIC in seconds. */
double now_s(void);
/* An empty kernel, vg_nop, loaded from embedded PTX. */
CUfunction nop_kernel(void);
/* A graph of GRAPH_NODES launches of f (432 x 256), built directly or by
 * capturing stream. */
CUgraphExec make_graph(CUfunction f, bool capture, CUstream stream);

#endif
