/*
 * bench_harness.c -- command line, best-of-rounds timing and output shared
 * by the benchmark programs (see bench_harness.h).
 *
 * Each program keeps what differs: its loops, set-up, usage text and, for
 * vgpu-bench-launch, rounds in batches with untimed synchronisations. The
 * timing is CLOCK_MONOTONIC around each timed call of a loop, summed over a
 * round, the best of --rounds rounds kept (the least disturbed by the
 * scheduler), divided by the operations in a round; a warm-up of a tenth of
 * a round comes first, so first-call set-up in the driver and the hook is
 * not measured.
 */
#include "bench_harness.h"
#include "opt.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

CUresult bench_loop_error = CUDA_SUCCESS;
static const char *g_prog = "vgpu-bench";

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

int bench_check(CUresult r, const char *call) {
  if (r == CUDA_SUCCESS) return 0;
  const char *name = NULL;
  if (vg_cu.cuGetErrorName(r, &name) != CUDA_SUCCESS || name == NULL) name = "unknown CUresult";
  fprintf(stderr, "%s: %s failed: %s (%d)\n", g_prog, call, name, (int)r);
  return -1;
}

__attribute__((noinline)) double bench_timed(void (*loop)(uint64_t), uint64_t n) {
  double t0 = now_ns();
  loop(n);
  return now_ns() - t0;
}

static int parse_count(const char *opt, const char *value, uint64_t *out) {
  char *end = NULL;
  unsigned long long v = strtoull(value, &end, 10);
  if (value[0] < '0' || value[0] > '9' || *end != '\0' || v == 0 || v > (1ULL << 40)) {
    fprintf(stderr, "%s: --%s: invalid value '%s': expected a whole number > 0\n", g_prog, opt,
            value);
    return -1;
  }
  *out = v;
  return 0;
}

static int find_case(const struct bench_spec *s, const char *name) {
  for (size_t i = 0; i < s->n_cases; i++) {
    if (strcmp(s->cases[i].name, name) == 0) return 0;
  }
  fprintf(stderr, "%s: --case: unknown case '%s'\n", g_prog, name);
  return -1;
}

/* One option; 0 to go on, 1 after --help, 2 on a bad value. */
static int take_option(const struct bench_spec *s, int c, struct bench_opts *o, uint64_t *rounds) {
  int rc = 0;
  switch (c) {
    case 'i':
      rc = parse_count("iters", optarg, &o->iters);
      break;
    case 'x':
      rc = parse_count(s->extra_opt, optarg, &o->extra);
      break;
    case 'r':
      rc = parse_count("rounds", optarg, rounds);
      break;
    case 'c':
      rc = find_case(s, optarg);
      o->only = optarg;
      break;
    case 'j':
      o->json = 1;
      break;
    case 'h':
      fputs(s->usage, stdout);
      return 1;
    case 'V':
      printf("%s %s\n", s->prog, VG_VERSION);
      return 1;
    default:
      rc = -1;
      break;
  }
  return rc == 0 ? 0 : 2;
}

/* Returns 0 to run, 1 after --help, 2 on a bad command line. */
static int parse_options(const struct bench_spec *s, int argc, char **argv, struct bench_opts *o) {
  const struct option longs[] = {
      {"iters", required_argument, NULL, 'i'},  {s->extra_opt, required_argument, NULL, 'x'},
      {"rounds", required_argument, NULL, 'r'}, {"case", required_argument, NULL, 'c'},
      {"json", no_argument, NULL, 'j'},         {"help", no_argument, NULL, 'h'},
      {"version", no_argument, NULL, 'V'},      {NULL, 0, NULL, 0}};
  *o = (struct bench_opts){s->iters_default, s->extra_default, 7, NULL, 0};
  uint64_t rounds = o->rounds;
  int c;
  while ((c = vg_getopt_long(argc, argv, "h", longs, s->prog)) != -1) {
    int rc = take_option(s, c, o, &rounds);
    if (rc != 0) return rc;
  }
  if (optind < argc || rounds > 1000) {
    fputs(s->usage, stderr);
    return 2;
  }
  o->rounds = (unsigned)rounds;
  return 0;
}

static double plain_round(const struct bench_case *c, uint64_t n, const struct bench_opts *o,
                          int timed) {
  (void)o;
  if (timed) return bench_timed(c->loop, n);
  c->loop(n);
  return 0.0;
}

/* Warm-up, then the best of o->rounds timed rounds. */
static int run_case(const struct bench_spec *s, struct bench_case *c, const struct bench_opts *o) {
  double (*round)(const struct bench_case *, uint64_t, const struct bench_opts *, int) =
      s->round ? s->round : plain_round;
  uint64_t iters = c->extra_iters ? o->extra : o->iters;
  if (round(c, iters / 10 + 1, o, 0) < 0.0) return -1;
  double best = 0.0;
  for (unsigned r = 0; r < o->rounds; r++) {
    double ns = round(c, iters, o, 1);
    if (ns < 0.0) return -1;
    ns /= (double)iters;
    if (r == 0 || ns < best) best = ns;
  }
  c->best_ns = best;
  c->ops = iters * o->rounds;
  if (bench_loop_error != CUDA_SUCCESS) return bench_check(bench_loop_error, c->what);
  return 0;
}

static int selected(const struct bench_case *c, const struct bench_opts *o) {
  return o->only == NULL || strcmp(o->only, c->name) == 0;
}

static void print_results(const struct bench_spec *s, const struct bench_opts *o) {
  printf("%-*s %-*s %10s\n", s->name_width, "case", s->what_width, "call", "ns/op");
  for (size_t i = 0; i < s->n_cases; i++) {
    const struct bench_case *c = &s->cases[i];
    if (selected(c, o))
      printf("%-*s %-*s %10.1f\n", s->name_width, c->name, s->what_width, c->what, c->best_ns);
  }
  if (!o->json) return;
  printf("{\"iters\":%llu,\"%s\":%llu,\"rounds\":%u", (unsigned long long)o->iters, s->extra_key,
         (unsigned long long)o->extra, o->rounds);
  for (size_t i = 0; i < s->n_cases; i++) {
    const struct bench_case *c = &s->cases[i];
    if (selected(c, o))
      printf(",\"%s_ns\":%.2f,\"%s_ops\":%llu", c->name, c->best_ns, c->name,
             (unsigned long long)c->ops);
  }
  printf("}\n");
}

int bench_main(const struct bench_spec *s, int argc, char **argv) {
  struct bench_opts o;
  g_prog = s->prog;
  int prc = parse_options(s, argc, argv, &o);
  if (prc != 0) return prc == 1 ? 0 : 2;
  /* Only now: --help and a bad command line need no driver (cuda_dl.h). */
  if (vg_cuda_dl_open(s->prog) != 0 || s->setup() != 0) return 1;
  for (size_t i = 0; i < s->n_cases; i++) {
    if (selected(&s->cases[i], &o) && run_case(s, &s->cases[i], &o) != 0) return 1;
  }
  print_results(s, &o);
  return 0;
}
