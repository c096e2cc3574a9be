/*
 * replay_main.c -- vgpu-replay: the FGD paper's placement benchmark on an
 * Alibaba GPU trace, through the scheduler's own placement code.
 *
 *   vgpu-replay --nodes CSV --pods CSV [--policy NAME] [--seeds 42-51] [--json]
 *               [--mix FAMILY=PCT [--mix-seed N] [--pool CSV]... [--write-pods CSV]]
 *               [--node-count N] [--write-arrival CSV] [--write-nodes CSV] [--in-order]
 *
 * --mix replays a point of a workload family (mix.c) instead of the trace
 * as it is: the --pods trace resampled, drawing from the --pool traces.
 * --node-count replays on a seeded subset of the nodes; --write-arrival and
 * --write-nodes save one seed's arrival list and nodes, and --in-order
 * places such a list as it is: the real scheduler's benchmark
 * (bench/kube-replay.sh) gives kube-scheduler and this model the same pods.
 *
 * Seeds run in parallel (one thread per core). Prints per-seed results and
 * the mean curve (arrived % -> unallocated GPU %); with --json the last line
 * is one JSON object with unallocated_pct_at_100 (mean over seeds) and policy.
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "opt.h"
#include "trace.h"

#define MAX_SEEDS 1000
#define MAX_POOLS 8
#define COVERAGE_PCT 95.0

struct opts {
  const char *nodes, *pods, *policy;
  long seed_lo, seed_hi;
  double tune;
  int json, tune_given;
  const char *mix_arg, *write_pods;
  int node_count, in_order;
  const char *write_arrival, *write_nodes;
  struct vg_mix mix;
  const char *pools[MAX_POOLS];
  int npools;
};

struct job {
  const struct vg_cluster *cluster;
  const struct vg_pod *pods;
  int npods;
  const struct vg_workload *workload;
  const struct vg_policy *policy;
  const struct opts *o;
  struct vg_replay_result *res;
  atomic_int next;
  atomic_int failed;
  struct vg_err err;
};

/* The default policy: vgpu meets issue 5's bar (docs/placement.md). */
#define DEFAULT_POLICY "vgpu"

static void usage(FILE *f) {
  fprintf(
      f,
      "usage: vgpu-replay --nodes CSV --pods CSV [--policy NAME] [--seeds A-B] [--tune X] "
      "[--json]\n"
      "                   [--mix FAMILY=PCT [--mix-seed N] [--pool CSV]... [--write-pods CSV]]\n"
      "  --mix: replay a workload family's point, the --pods trace resampled with draws\n"
      "    from the --pool traces (default: itself); FAMILY is multigpu, gpushare or\n"
      "    gpuspec (PCT = %% of the GPU request), or cpu (PCT = %% of pods CPU-only);\n"
      "    --mix-seed (default 1) fixes the draws; --write-pods saves the pod list\n"
      "  --node-count N: each seed replays on its own subset of N nodes: the first N of\n"
      "    a permutation of the --nodes list drawn from the seed (a stream apart from\n"
      "    the pod order's), kept in the list's order\n"
      "  --write-arrival CSV (one seed): the pods that seed places, in its order\n"
      "    (shuffled, tuned), each share rounded up to a multiple of 10 milli, cut after\n"
      "    the pod whose cumulative GPU request reaches 100%% of the GPU capacity\n"
      "  --write-nodes CSV (one seed): the nodes it places on (the --node-count subset)\n"
      "  --in-order: place the --pods list exactly in its order (no shuffle, tuning or\n"
      "    cut; the seed only draws the tie-break ranks of nodes) and report the\n"
      "    unallocated GPU after the last pod (JSON: unallocated_pct_after_last)\n"
      "  policies:");
  for (const struct vg_policy *const *p = vg_policy_all(); *p; p++) fprintf(f, " %s", (*p)->name);
  fprintf(f, " (default " DEFAULT_POLICY
             ")\n  seeds default 42-51; tune default 1.3 (x GPU capacity)\n");
}

static int parse_seeds(const char *s, struct opts *o) {
  char *end;
  o->seed_lo = o->seed_hi = strtol(s, &end, 10);
  if (end == s || o->seed_lo < 0) return -1;
  if (*end == '-') {
    const char *hi = end + 1;
    o->seed_hi = strtol(hi, &end, 10);
    if (end == hi) return -1;
  }
  return (*end == '\0' && o->seed_hi >= o->seed_lo && o->seed_hi - o->seed_lo < MAX_SEEDS) ? 0 : -1;
}

enum {
  OPT_NODES = 256,
  OPT_PODS,
  OPT_POLICY,
  OPT_SEEDS,
  OPT_TUNE,
  OPT_JSON,
  OPT_MIX,
  OPT_MIX_SEED,
  OPT_POOL,
  OPT_WRITE_PODS,
  OPT_NODE_COUNT,
  OPT_WRITE_ARRIVAL,
  OPT_WRITE_NODES,
  OPT_IN_ORDER,
  OPT_VERSION
};

/* The one list of vgpu-replay's options (the guess for a typo reads it too). */
static const struct option longopts[] = {
    {"nodes", required_argument, NULL, OPT_NODES},
    {"pods", required_argument, NULL, OPT_PODS},
    {"policy", required_argument, NULL, OPT_POLICY},
    {"seeds", required_argument, NULL, OPT_SEEDS},
    {"tune", required_argument, NULL, OPT_TUNE},
    {"json", no_argument, NULL, OPT_JSON},
    {"mix", required_argument, NULL, OPT_MIX},
    {"mix-seed", required_argument, NULL, OPT_MIX_SEED},
    {"pool", required_argument, NULL, OPT_POOL},
    {"write-pods", required_argument, NULL, OPT_WRITE_PODS},
    {"node-count", required_argument, NULL, OPT_NODE_COUNT},
    {"write-arrival", required_argument, NULL, OPT_WRITE_ARRIVAL},
    {"write-nodes", required_argument, NULL, OPT_WRITE_NODES},
    {"in-order", no_argument, NULL, OPT_IN_ORDER},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, OPT_VERSION},
    {NULL, 0, NULL, 0}};

/* One option c with its value v: 0, or -1 after saying what is wrong. */
static int take_option(int c, const char *v, struct opts *o) {
  struct vg_err err;
  char *end;
  switch (c) {
    case OPT_NODES:
      o->nodes = v;
      return 0;
    case OPT_PODS:
      o->pods = v;
      return 0;
    case OPT_POLICY:
      o->policy = v;
      return 0;
    case OPT_JSON:
      o->json = 1;
      return 0;
    case OPT_WRITE_PODS:
      o->write_pods = v;
      return 0;
    case OPT_WRITE_ARRIVAL:
      o->write_arrival = v;
      return 0;
    case OPT_WRITE_NODES:
      o->write_nodes = v;
      return 0;
    case OPT_IN_ORDER:
      o->in_order = 1;
      return 0;
    case OPT_NODE_COUNT: {
      long n = strtol(v, &end, 10);
      if (end == v || *end || n < 1 || n > 1000000)
        return fprintf(stderr, "vgpu-replay: bad --node-count '%s' (1 or more nodes)\n", v), -1;
      o->node_count = (int)n;
      return 0;
    }
    case OPT_SEEDS:
      if (parse_seeds(v, o)) return fprintf(stderr, "vgpu-replay: bad --seeds '%s'\n", v), -1;
      return 0;
    case OPT_TUNE:
      o->tune_given = 1;
      o->tune = strtod(v, &end);
      if (end == v || *end || !(o->tune > 0 && o->tune <= 10))
        return fprintf(stderr, "vgpu-replay: bad --tune '%s' (0 < X <= 10)\n", v), -1;
      return 0;
    case OPT_MIX:
      o->mix_arg = v;
      if (vg_mix_parse(v, &o->mix, &err)) return fprintf(stderr, "vgpu-replay: %s\n", err.msg), -1;
      return 0;
    case OPT_MIX_SEED:
      o->mix.seed = strtoull(v, &end, 10);
      if (*v < '0' || *v > '9' || *end)
        return fprintf(stderr, "vgpu-replay: bad --mix-seed '%s' (a number)\n", v), -1;
      return 0;
    case OPT_POOL:
      if (o->npools == MAX_POOLS)
        return fprintf(stderr, "vgpu-replay: at most %d --pool traces\n", MAX_POOLS), -1;
      o->pools[o->npools++] = v;
      return 0;
    default:
      return -1; /* vg_getopt_long said why */
  }
}

static int parse_args(int argc, char **argv, struct opts *o) {
  *o = (struct opts){.policy = DEFAULT_POLICY, .seed_lo = 42, .seed_hi = 51, .tune = 1.3};
  o->mix.seed = 1;
  int c;
  while ((c = vg_getopt_long(argc, argv, "h", longopts, "vgpu-replay")) != -1) {
    if (c == 'h') return usage(stdout), exit(0), 0;
    if (c == OPT_VERSION) return printf("vgpu-replay %s\n", VG_VERSION), exit(0), 0;
    if (take_option(c, optarg, o)) return -1;
  }
  if (optind < argc)
    return fprintf(stderr, "vgpu-replay: unexpected argument '%s'\n", argv[optind]), -1;
  if (!o->nodes || !o->pods) return fprintf(stderr, "vgpu-replay: --nodes and --pods needed\n"), -1;
  if (!o->mix_arg && (o->npools || o->write_pods))
    return fprintf(stderr, "vgpu-replay: --pool and --write-pods go with --mix\n"), -1;
  if ((o->write_arrival || o->write_nodes) && o->seed_lo != o->seed_hi)
    return fprintf(stderr, "vgpu-replay: --write-arrival and --write-nodes take one seed\n"), -1;
  if (o->in_order && (o->mix_arg || o->write_arrival || o->tune_given))
    return fprintf(stderr,
                   "vgpu-replay: --in-order places --pods as given: no --mix, --tune or "
                   "--write-arrival\n"),
           -1;
  return 0;
}

/* One seed: on its node subset (--node-count), in order or shuffled. */
static int run_seed(const struct job *j, uint64_t seed, struct vg_replay_result *res,
                    struct vg_err *err) {
  struct vg_cluster sub;
  const struct vg_cluster *c = j->cluster;
  if (j->o->node_count) {
    if (vg_cluster_subset(&sub, j->cluster, j->o->node_count, seed, err)) return -1;
    c = &sub;
  }
  int rc =
      j->o->in_order
          ? vg_replay_in_order(c, j->pods, j->npods, j->workload, j->policy, seed, res, err)
          : vg_replay_run(c, j->pods, j->npods, j->workload, j->policy, seed, j->o->tune, res, err);
  if (c == &sub) vg_cluster_free(&sub);
  return rc;
}

static void *worker(void *arg) {
  struct job *j = arg;
  int nseeds = (int)(j->o->seed_hi - j->o->seed_lo + 1);
  for (int k; (k = atomic_fetch_add(&j->next, 1)) < nseeds;) {
    struct vg_err err;
    if (run_seed(j, (uint64_t)(j->o->seed_lo + k), &j->res[k], &err)) {
      if (atomic_fetch_add(&j->failed, 1) == 0) j->err = err;
    }
  }
  return NULL;
}

static int run_seeds(struct job *j) {
  long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  int nseeds = (int)(j->o->seed_hi - j->o->seed_lo + 1);
  int nthreads = (int)(ncpu < 1 ? 1 : ncpu > nseeds ? nseeds : ncpu);
  pthread_t t[64];
  if (nthreads > 64) nthreads = 64;
  for (int i = 0; i < nthreads; i++)
    if (pthread_create(&t[i], NULL, worker, j) != 0) nthreads = i;
  if (nthreads == 0) worker(j);
  for (int i = 0; i < nthreads; i++) pthread_join(t[i], NULL);
  if (atomic_load(&j->failed)) return fprintf(stderr, "vgpu-replay: %s\n", j->err.msg), -1;
  return 0;
}

static double mean_at(const struct vg_replay_result *r, int n, int x) {
  double sum = 0;
  for (int k = 0; k < n; k++) sum += r[k].curve[x];
  return sum / n;
}

static void report(const struct job *j, double secs) {
  const struct opts *o = j->o;
  int n = (int)(o->seed_hi - o->seed_lo + 1);
  double m = mean_at(j->res, n, 100), var = 0;
  double last = 0;
  for (int k = 0; k < n; k++) {
    const struct vg_replay_result *r = &j->res[k];
    if (o->in_order)
      printf(
          "seed %ld: %d pods in the given order, %d placed, %d failed; unallocated GPU after "
          "the last pod (arrived %.2f%%): %.2f%%\n",
          o->seed_lo + k, r->pods, r->placed, r->failed, r->final_arrived, r->final_unallocated);
    else
      printf("seed %ld: %d pods, %d placed, %d failed; unallocated GPU at 100%% arrived: %.2f%%\n",
             o->seed_lo + k, r->pods, r->placed, r->failed, r->unallocated_at_100);
    var += (r->unallocated_at_100 - m) * (r->unallocated_at_100 - m);
    last += r->final_unallocated / n;
  }
  double sd = n > 1 ? sqrt(var / (n - 1)) : 0;
  double measured = o->mix_arg ? vg_mix_measure(o->mix.family, j->pods, j->npods) : 0;
  if (o->mix_arg)
    printf("mix %s (mix seed %llu): %d pods, measured %.1f%%\n", o->mix_arg,
           (unsigned long long)o->mix.seed, j->npods, measured);
  const struct vg_workload *w = j->workload;
  const char *measure;
  vg_vgpu_measure(w, &measure);
  printf(
      "target workload: %d task types, %.1f%% of GPU demand pinned to models, %.1f%% on several "
      "GPUs (vgpu's measure: %s)\n",
      w->n, w->pinned_pct, w->multi_pct, measure);
  printf(
      "policy %s: unallocated GPU at 100%% arrived: mean %.2f%% (sd %.2f) over %d seeds, %.1f s\n",
      j->policy->name, m, sd, n, secs);
  if (o->in_order)
    printf("policy %s: unallocated GPU after the last pod: mean %.2f%% over %d seeds\n",
           j->policy->name, last, n);
  printf("arrived%%  unallocated%%\n");
  static const int xs[] = {50, 80, 90, 95, 100, 105, 110, 120, 130};
  for (size_t i = 0; i < sizeof(xs) / sizeof(xs[0]); i++)
    if (!isnan(mean_at(j->res, n, xs[i])))
      printf("%8d  %12.2f\n", xs[i], mean_at(j->res, n, xs[i]));
  if (!o->json) return;
  /* A trace too small to have an event near 100 % arrived has no value
   * there: JSON's null, not C's "nan". */
  char at100[32] = "null", sd100[32] = "null";
  if (!isnan(m))
    snprintf(at100, sizeof(at100), "%.4f", m), snprintf(sd100, sizeof(sd100), "%.4f", sd);
  printf(
      "{\"policy\":\"%s\",\"seeds\":\"%ld-%ld\",\"tune\":%.3f,\"unallocated_pct_at_100\":%s,"
      "\"sd_at_100\":%s,\"seconds\":%.2f,",
      j->policy->name, o->seed_lo, o->seed_hi, o->tune, at100, sd100, secs);
  if (o->node_count) printf("\"node_count\":%d,", o->node_count);
  if (o->in_order) {
    printf("\"in_order\":true,\"unallocated_pct_after_last\":%.4f,\"after_last\":[", last);
    for (int k = 0; k < n; k++) printf("%s%.4f", k ? "," : "", j->res[k].final_unallocated);
    printf("],");
  }
  if (o->mix_arg)
    printf("\"mix\":\"%s\",\"mix_seed\":%llu,\"mix_pods\":%d,\"mix_measured\":%.2f,", o->mix_arg,
           (unsigned long long)o->mix.seed, j->npods, measured);
  printf("\"curve\":{");
  const char *sep = "";
  for (int x = 0; x <= VG_REPLAY_MAX_X; x++)
    if (!isnan(mean_at(j->res, n, x)))
      printf("%s\"%d\":%.4f", sep, x, mean_at(j->res, n, x)), sep = ",";
  printf("}}\n");
}

/* The --pool traces, one after another in *pool. */
static int load_pool(const struct opts *o, struct vg_cluster *c, struct vg_pod **pool, int *npool,
                     struct vg_err *err) {
  *pool = NULL, *npool = 0;
  for (int i = 0; i < o->npools; i++) {
    struct vg_pod *p;
    int n;
    if (vg_trace_load_pods(o->pools[i], c, &p, &n, err)) return -1;
    struct vg_pod *grown = realloc(*pool, (size_t)(*npool + n) * sizeof(*grown));
    if (!grown) return free(p), vg_err_set(err, "out of memory for %d pods", *npool + n);
    memcpy(grown + *npool, p, (size_t)n * sizeof(*p));
    *pool = grown, *npool += n;
    free(p);
  }
  return 0;
}

/* Replaces *pods with the --mix family point built from them. */
static int apply_mix(const struct opts *o, struct vg_cluster *c, struct vg_pod **pods, int *npods,
                     struct vg_err *err) {
  struct vg_pod *pool, *mixed;
  int npool, nmixed;
  if (load_pool(o, c, &pool, &npool, err)) return free(pool), -1;
  int rc = vg_mix_build(&o->mix, c, *pods, *npods, pool, npool, &mixed, &nmixed, err);
  free(pool);
  if (rc) return -1;
  free(*pods);
  *pods = mixed, *npods = nmixed;
  if (o->write_pods && vg_trace_write_pods(o->write_pods, c, mixed, nmixed, err)) return -1;
  return 0;
}

static int load(const struct opts *o, struct vg_cluster *c, struct vg_pod **pods, int *npods,
                struct vg_workload *w) {
  struct vg_err err;
  vg_cluster_init(c);
  if (vg_trace_load_nodes(o->nodes, c, &err) || vg_trace_load_pods(o->pods, c, pods, npods, &err) ||
      (o->mix_arg && apply_mix(o, c, pods, npods, &err)) ||
      vg_workload_build(w, *pods, *npods, COVERAGE_PCT, &err))
    return fprintf(stderr, "vgpu-replay: %s\n", err.msg), -1;
  return 0;
}

/* --write-nodes and --write-arrival: the one seed's nodes and arrival list. */
static int write_seed_files(const struct opts *o, const struct vg_cluster *c,
                            const struct vg_pod *pods, int npods) {
  struct vg_err err;
  struct vg_cluster sub;
  struct vg_pod *arrival = NULL;
  int n = 0, rc = -1;
  uint64_t seed = (uint64_t)o->seed_lo;
  if (o->node_count) {
    if (vg_cluster_subset(&sub, c, o->node_count, seed, &err))
      return fprintf(stderr, "vgpu-replay: --node-count: %s\n", err.msg), -1;
    c = &sub;
  }
  if (o->write_nodes && vg_trace_write_nodes(o->write_nodes, c, &err)) goto out;
  if (o->write_arrival) {
    if (vg_replay_arrival(c, pods, npods, seed, o->tune, &arrival, &n, &err) ||
        vg_trace_write_pods(o->write_arrival, c, arrival, n, &err))
      goto out;
    int64_t req = 0;
    for (int k = 0; k < n; k++) req += (int64_t)arrival[k].num_gpu * arrival[k].gpu_milli;
    printf("arrival list of seed %llu: %d pods, GPU request %.2f%% of %lld milli-GPU on %d nodes\n",
           (unsigned long long)seed, n, 100.0 * (double)req / (double)vg_cluster_gpu_capacity(c),
           (long long)vg_cluster_gpu_capacity(c), c->n);
  }
  rc = 0;
out:
  if (rc) fprintf(stderr, "vgpu-replay: %s\n", err.msg);
  free(arrival);
  if (c == &sub) vg_cluster_free(&sub);
  return rc;
}

int main(int argc, char **argv) {
  struct opts o;
  if (parse_args(argc, argv, &o)) return 2; /* it said why, in one line */
  struct job j;
  memset(&j, 0, sizeof(j));
  j.o = &o;
  j.policy = vg_policy_find(o.policy);
  if (!j.policy)
    return fprintf(stderr, "vgpu-replay: unknown policy '%s' (see vgpu-replay --help)\n", o.policy),
           2;
  struct vg_cluster c;
  struct vg_pod *pods = NULL;
  struct vg_workload w = {0};
  int rc = 1;
  if (load(&o, &c, &pods, &j.npods, &w) == 0 &&
      ((!o.write_arrival && !o.write_nodes) || write_seed_files(&o, &c, pods, j.npods) == 0)) {
    j.cluster = &c;
    j.pods = pods;
    j.workload = &w;
    j.res = calloc((size_t)(o.seed_hi - o.seed_lo + 1), sizeof(*j.res));
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (j.res && run_seeds(&j) == 0) {
      clock_gettime(CLOCK_MONOTONIC, &t1);
      report(&j, (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
      rc = 0;
    }
    free(j.res);
  }
  vg_workload_free(&w);
  free(pods);
  vg_cluster_free(&c);
  return rc;
}
