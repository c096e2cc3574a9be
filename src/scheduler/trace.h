/*
 * trace.h -- the Alibaba GPU cluster trace (cluster-trace-gpu-v2023) as input
 * to the placement core, and the replay experiment of the FGD paper
 * (docs/placement.md, "Replay"): CSV loading, seeded shuffling, workload
 * tuning and the unallocated-GPU curve.
 */
#ifndef VG_TRACE_H
#define VG_TRACE_H

#include <stdint.h>

#include "vg_sched.h"

/* Nodes CSV: columns sn, cpu_milli, memory_mib, gpu, model (any order,
 * named by the header). Errors name file:line and the field. */
int vg_trace_load_nodes(const char *path, struct vg_cluster *c, struct vg_err *err);
/* Pods CSV: columns cpu_milli, memory_mib, num_gpu, gpu_milli and optional
 * gpu_spec ('|'-separated models); other columns are ignored. *pods is
 * malloc'd. GPU models new to c are added to its table. */
int vg_trace_load_pods(const char *path, struct vg_cluster *c, struct vg_pod **pods, int *npods,
                       struct vg_err *err);

/* Pods to CSV (name, cpu_milli, memory_mib, num_gpu, gpu_milli, gpu_spec),
 * readable by vg_trace_load_pods with the same cluster's model table. */
int vg_trace_write_pods(const char *path, const struct vg_cluster *c, const struct vg_pod *pods,
                        int n, struct vg_err *err);
/* Nodes to CSV (sn, cpu_milli, memory_mib, gpu, model), readable by
 * vg_trace_load_nodes: the same nodes, in the same order. */
int vg_trace_write_nodes(const char *path, const struct vg_cluster *c, struct vg_err *err);

/* ---- seeded randomness (rng.c): splitmix64 ---- */
struct vg_rng {
  uint64_t state;
};
void vg_rng_seed(struct vg_rng *r, uint64_t seed);
uint64_t vg_rng_next(struct vg_rng *r);
/* Uniform in [0, n). */
uint32_t vg_rng_below(struct vg_rng *r, uint32_t n);
/* Fisher-Yates shuffle of n elements of size sz. */
void vg_rng_shuffle(struct vg_rng *r, void *base, int n, size_t sz);

/* ---- workload families (mix.c) ---- */
enum vg_mix_family { VG_MIX_NONE, VG_MIX_MULTIGPU, VG_MIX_GPUSHARE, VG_MIX_GPUSPEC, VG_MIX_CPU };

struct vg_mix {
  enum vg_mix_family family;
  double pct;    /* the family's point: % of GPU request, or % of pods for cpu */
  uint64_t seed; /* the draws; one (family, pct, seed) is one pod list */
};

/* "multigpu=40" and the like; errors say what is wrong. */
int vg_mix_parse(const char *s, struct vg_mix *m, struct vg_err *err);
const char *vg_mix_family_name(enum vg_mix_family f);
/* The pod list of family point m: base resampled with draws from pool (the
 * base itself when npool is 0). *out is malloc'd. c decides which model
 * lists a pod can be given (gpuspec). */
int vg_mix_build(const struct vg_mix *m, const struct vg_cluster *c, const struct vg_pod *base,
                 int nbase, const struct vg_pod *pool, int npool, struct vg_pod **out, int *nout,
                 struct vg_err *err);
/* The property family f varies, measured on a pod list. */
double vg_mix_measure(enum vg_mix_family f, const struct vg_pod *p, int n);

/* ---- replay (replay.c) ---- */
#define VG_REPLAY_MAX_X 200 /* curve points: arrived % of GPU capacity, 0..200 */

struct vg_replay_result {
  double curve[VG_REPLAY_MAX_X + 1]; /* unallocated GPU % at arrived x % (NAN: no event) */
  double unallocated_at_100;
  int pods, placed, failed;
  double final_unallocated; /* after the last pod */
  double final_arrived;     /* arrived GPU % after the last pod */
};

/* A seeded subset of n of c's nodes (dst is initialised by the call): the
 * first n of a Fisher-Yates permutation of c's nodes drawn with splitmix64
 * from seed + VG_SUBSET_SALT (a stream of its own, so the pod order a seed
 * draws is unchanged), kept in c's order, everything free; c's model table
 * is kept whole, so pod model masks stay valid. */
#define VG_SUBSET_SALT UINT64_C(0x6e6f6465) /* "node" */
int vg_cluster_subset(struct vg_cluster *dst, const struct vg_cluster *c, int n, uint64_t seed,
                      struct vg_err *err);
/* The order vg_replay_run(seed, tune) places pods in: shuffled, then tuned
 * to tune x c's GPU capacity. *out is malloc'd; returns the count or -1. */
int vg_replay_order(const struct vg_cluster *c, const struct vg_pod *pods, int npods, uint64_t seed,
                    double tune, struct vg_pod **out, struct vg_err *err);
/* A share's per-GPU milli rounded up to a multiple of 10 (Kubernetes pods
 * ask whole percents); other pods unchanged. */
void vg_pod_round_share(struct vg_pod *p);
/* The arrival list of one seed: vg_replay_order with every share rounded
 * (vg_pod_round_share), cut after the first pod whose cumulative GPU
 * request (num_gpu x gpu_milli) reaches 100 % of c's GPU capacity (all of
 * it when it never does). *out is malloc'd. */
int vg_replay_arrival(const struct vg_cluster *c, const struct vg_pod *pods, int npods,
                      uint64_t seed, double tune, struct vg_pod **out, int *nout,
                      struct vg_err *err);

/* One seeded run: shuffle pods, tune the workload to tune x GPU capacity
 * (clones drawn with replacement, or random removals), place every pod in
 * order with policy (failures are dropped), record the curve. The cluster c
 * is not changed (the run works on a copy). */
int vg_replay_run(const struct vg_cluster *c, const struct vg_pod *pods, int npods,
                  const struct vg_workload *w, const struct vg_policy *policy, uint64_t seed,
                  double tune, struct vg_replay_result *res, struct vg_err *err);
/* The given list placed exactly in its order: no shuffle, tuning or cut.
 * The seed only draws the node ranks (ties). The curve is recorded as in
 * vg_replay_run; final_unallocated is the figure after the last pod. */
int vg_replay_in_order(const struct vg_cluster *c, const struct vg_pod *pods, int npods,
                       const struct vg_workload *w, const struct vg_policy *policy, uint64_t seed,
                       struct vg_replay_result *res, struct vg_err *err);

#endif
