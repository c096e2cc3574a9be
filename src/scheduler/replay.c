/*
 * replay.c -- one run of the FGD paper's experiment (docs/placement.md,
 * "Replay"): pods in a seeded random order, the workload tuned to `tune` x the
 * cluster's GPU capacity, every pod tried once (a failure is dropped, never
 * retried, nothing is deleted), and after every pod the unallocated GPU % is
 * recorded against the arrived GPU % (failed pods count as arrived).
 *
 * For the real scheduler's benchmark (bench/kube-replay.sh) the same run is
 * cut apart: a seeded node subset, the arrival list one seed places (its
 * order, shares rounded to whole percents, cut at 100 % of capacity), and
 * a given list placed exactly in its order, so that kube-scheduler and this
 * model can be given the very same pods and nodes.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "trace.h"

static int64_t gpu_req(const struct vg_pod *p) { return (int64_t)p->num_gpu * p->gpu_milli; }

/* The run's pod order: shuffled, then clones appended (drawn uniformly with
 * replacement; stop when the next draw's per-GPU milli would overshoot, as
 * the artifact's tuneUpPods checks) or random pods removed until the total
 * GPU request is within target. Returns the count, or -1. */
static int tuned_order(const struct vg_pod *pods, int npods, int64_t target, struct vg_rng *rng,
                       struct vg_pod **out, struct vg_err *err) {
  int64_t total = 0;
  for (int i = 0; i < npods; i++) total += gpu_req(&pods[i]);
  size_t cap = (size_t)npods * 2 + 16, n = (size_t)npods;
  struct vg_pod *o = malloc(cap * sizeof(*o));
  if (!o) return vg_err_set(err, "out of memory for %zu pods", cap);
  memcpy(o, pods, n * sizeof(*o));
  vg_rng_shuffle(rng, o, npods, sizeof(*o));
  while (total > 0 && total < target && n < (size_t)npods * 100) {
    const struct vg_pod *c = &pods[vg_rng_below(rng, (uint32_t)npods)];
    if (total + c->gpu_milli > target) break;
    if (n == cap) {
      struct vg_pod *grown = realloc(o, (cap *= 2) * sizeof(*o));
      if (!grown) return free(o), vg_err_set(err, "out of memory for %zu pods", cap);
      o = grown;
    }
    o[n++] = *c;
    total += gpu_req(c);
  }
  while (total > target && n > 0) {
    size_t k = vg_rng_below(rng, (uint32_t)n);
    total -= gpu_req(&o[k]);
    memmove(&o[k], &o[k + 1], (n - k - 1) * sizeof(*o));
    n--;
  }
  *out = o;
  return (int)n;
}

/* Node ranks from a seeded permutation (the artifact's %04d- name prefix). */
static void seed_ranks(struct vg_cluster *c, struct vg_rng *rng) {
  for (int i = 0; i < c->n; i++) c->nodes[i].rank = (uint32_t)i;
  for (int i = c->n - 1; i > 0; i--) {
    int j = (int)vg_rng_below(rng, (uint32_t)i + 1);
    uint32_t t = c->nodes[i].rank;
    c->nodes[i].rank = c->nodes[j].rank;
    c->nodes[j].rank = t;
  }
}

/* Mean of the events at each arrived %, gaps filled from x-1 or x+1. */
static void finish_curve(const double *sum, const int *cnt, struct vg_replay_result *res) {
  for (int x = 0; x <= VG_REPLAY_MAX_X; x++) {
    res->curve[x] = NAN;
    for (int d = 0; d <= 1 && isnan(res->curve[x]); d++) {
      if (cnt[x] > 0 && d == 0) res->curve[x] = sum[x] / cnt[x];
      if (d == 1 && x > 0 && cnt[x - 1] > 0) res->curve[x] = sum[x - 1] / cnt[x - 1];
      if (d == 1 && isnan(res->curve[x]) && x < VG_REPLAY_MAX_X && cnt[x + 1] > 0)
        res->curve[x] = sum[x + 1] / cnt[x + 1];
    }
  }
  res->unallocated_at_100 = res->curve[100];
}

static void run_pods(struct vg_sched *s, const struct vg_pod *order, int n, int64_t cap,
                     struct vg_replay_result *res) {
  static __thread double sum[VG_REPLAY_MAX_X + 1];
  static __thread int cnt[VG_REPLAY_MAX_X + 1];
  memset(sum, 0, sizeof(sum));
  memset(cnt, 0, sizeof(cnt));
  int64_t arrived = 0, used = 0;
  for (int k = 0; k < n; k++) {
    arrived += gpu_req(&order[k]);
    if (vg_sched_place(s, &order[k]) >= 0) {
      used += gpu_req(&order[k]);
      res->placed++;
    } else {
      res->failed++;
    }
    long x = lround(100.0 * (double)arrived / (double)cap);
    double unalloc = 100.0 - 100.0 * (double)used / (double)cap;
    if (x >= 0 && x <= VG_REPLAY_MAX_X) sum[x] += unalloc, cnt[x]++;
    res->final_unallocated = unalloc;
    res->final_arrived = 100.0 * (double)arrived / (double)cap;
  }
  finish_curve(sum, cnt, res);
}

/* The run's order, drawn from rng: shuffled and tuned to tune x capacity. */
static int seeded_order(const struct vg_cluster *c, const struct vg_pod *pods, int npods,
                        double tune, struct vg_rng *rng, struct vg_pod **out, struct vg_err *err) {
  int64_t cap = vg_cluster_gpu_capacity(c);
  if (cap == 0) return vg_err_set(err, "the cluster has no GPUs");
  return tuned_order(pods, npods, (int64_t)llround(tune * (double)cap), rng, out, err);
}

/* Places order[0..n) on a copy of c with ranks drawn from rng. */
static int place_all(const struct vg_cluster *c, const struct vg_pod *order, int n,
                     const struct vg_workload *w, const struct vg_policy *policy,
                     struct vg_rng *rng, struct vg_replay_result *res, struct vg_err *err) {
  struct vg_cluster run;
  struct vg_sched s;
  if (vg_cluster_copy(&run, c, err)) return -1;
  seed_ranks(&run, rng);
  if (vg_sched_init(&s, &run, policy, w, err)) return vg_cluster_free(&run), -1;
  res->pods = n;
  run_pods(&s, order, n, vg_cluster_gpu_capacity(c), res);
  vg_sched_free(&s);
  vg_cluster_free(&run);
  return 0;
}

int vg_replay_run(const struct vg_cluster *c, const struct vg_pod *pods, int npods,
                  const struct vg_workload *w, const struct vg_policy *policy, uint64_t seed,
                  double tune, struct vg_replay_result *res, struct vg_err *err) {
  struct vg_pod *order = NULL;
  struct vg_rng rng;
  memset(res, 0, sizeof(*res));
  vg_rng_seed(&rng, seed);
  int n = seeded_order(c, pods, npods, tune, &rng, &order, err);
  if (n < 0) return -1;
  int rc = place_all(c, order, n, w, policy, &rng, res, err);
  free(order);
  return rc;
}

int vg_replay_in_order(const struct vg_cluster *c, const struct vg_pod *pods, int npods,
                       const struct vg_workload *w, const struct vg_policy *policy, uint64_t seed,
                       struct vg_replay_result *res, struct vg_err *err) {
  struct vg_rng rng;
  memset(res, 0, sizeof(*res));
  if (vg_cluster_gpu_capacity(c) == 0) return vg_err_set(err, "the cluster has no GPUs");
  vg_rng_seed(&rng, seed);
  return place_all(c, pods, npods, w, policy, &rng, res, err);
}

int vg_replay_order(const struct vg_cluster *c, const struct vg_pod *pods, int npods, uint64_t seed,
                    double tune, struct vg_pod **out, struct vg_err *err) {
  struct vg_rng rng;
  vg_rng_seed(&rng, seed);
  *out = NULL;
  return seeded_order(c, pods, npods, tune, &rng, out, err);
}

void vg_pod_round_share(struct vg_pod *p) {
  if (vg_pod_is_share(p)) p->gpu_milli = (p->gpu_milli + 9) / 10 * 10;
}

int vg_replay_arrival(const struct vg_cluster *c, const struct vg_pod *pods, int npods,
                      uint64_t seed, double tune, struct vg_pod **out, int *nout,
                      struct vg_err *err) {
  int n = vg_replay_order(c, pods, npods, seed, tune, out, err);
  if (n < 0) return -1;
  int64_t cap = vg_cluster_gpu_capacity(c), arrived = 0;
  int k = 0;
  while (k < n && arrived < cap) {
    vg_pod_round_share(&(*out)[k]);
    arrived += gpu_req(&(*out)[k++]);
  }
  *nout = k;
  return 0;
}

int vg_cluster_subset(struct vg_cluster *dst, const struct vg_cluster *c, int n, uint64_t seed,
                      struct vg_err *err) {
  vg_cluster_init(dst);
  if (n < 1 || n > c->n)
    return vg_err_set(err, "a subset of %d nodes of a cluster of %d: want 1 to %d", n, c->n, c->n);
  int *idx = malloc((size_t)c->n * sizeof(*idx));
  char *keep = calloc((size_t)c->n, 1);
  if (!idx || !keep) return free(idx), free(keep), vg_err_set(err, "out of memory");
  for (int i = 0; i < c->n; i++) idx[i] = i;
  struct vg_rng rng;
  vg_rng_seed(&rng, seed + VG_SUBSET_SALT);
  vg_rng_shuffle(&rng, idx, c->n, sizeof(*idx));
  for (int i = 0; i < n; i++) keep[idx[i]] = 1;
  memcpy(dst->models, c->models, sizeof(dst->models));
  dst->nmodels = c->nmodels;
  int rc = 0;
  for (int i = 0; rc == 0 && i < c->n; i++)
    if (keep[i] && vg_cluster_add_node(dst, &c->nodes[i], err) < 0) rc = -1;
  free(idx);
  free(keep);
  if (rc) vg_cluster_free(dst);
  return rc;
}
