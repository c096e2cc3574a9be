/*
 * vg_sched.h -- the GPU placement core shared by the scheduler extender and the
 * trace replay (vgpu-replay).
 *
 * A cluster is a flat array of nodes; each node has CPU (milli-cores), memory
 * (MiB) and up to VG_SCHED_MAX_GPUS GPUs of one model, each with a free share
 * in milli-GPU (1000 = a whole GPU), as the Alibaba GPU trace expresses it.
 * A pod asks for CPU, memory and either nothing, one GPU share (< 1000 milli)
 * or N whole GPUs, optionally restricted to a set of GPU models.
 *
 * Placement = filter (vg_fit) + score (a policy: a plug-in function that
 * scores one node and picks the GPUs it would use) + select (highest score,
 * ties to the lowest node rank). See docs/placement.md.
 */
#ifndef VG_SCHED_H
#define VG_SCHED_H

#include <stdbool.h>
#include <stdint.h>

#include "err.h"

#define VG_SCHED_MAX_GPUS 16
#define VG_SCHED_MAX_MODELS 32
#define VG_SCHED_NAME_MAX 48
#define VG_MILLI 1000

struct vg_node {
  char name[VG_SCHED_NAME_MAX];
  int64_t cpu_cap, cpu_free; /* milli-cores */
  int64_t mem_cap, mem_free; /* MiB */
  int model;                 /* index into vg_cluster.models; -1 without GPUs */
  int ngpu;
  int gpu_free[VG_SCHED_MAX_GPUS]; /* milli-GPU free per GPU */
  uint32_t rank;                   /* tie-break order: lower wins */
};

struct vg_pod {
  int64_t cpu, mem; /* milli-cores, MiB */
  int num_gpu;      /* 0, or how many GPUs */
  int gpu_milli;    /* per-GPU share, 1..1000 when num_gpu > 0 */
  uint32_t models;  /* allowed GPU models as a bit mask; 0 = any */
};

struct vg_cluster {
  struct vg_node *nodes;
  int n;
  char models[VG_SCHED_MAX_MODELS][VG_SCHED_NAME_MAX];
  int nmodels;
};

/* The GPUs a placement uses on its node. */
struct vg_pick {
  int n;
  uint8_t gpu[VG_SCHED_MAX_GPUS];
};

/* ---- cluster (cluster.c) ---- */
void vg_cluster_init(struct vg_cluster *c);
void vg_cluster_free(struct vg_cluster *c);
/* Model index for name, adding it when new; -1 (err set) when the table is full. */
int vg_cluster_model(struct vg_cluster *c, const char *name, struct vg_err *err);
/* Appends a node with everything free; returns its index or -1. */
int vg_cluster_add_node(struct vg_cluster *c, const struct vg_node *node, struct vg_err *err);
/* Deep copy (dst is initialised by the call). */
int vg_cluster_copy(struct vg_cluster *dst, const struct vg_cluster *src, struct vg_err *err);
int64_t vg_cluster_gpu_capacity(const struct vg_cluster *c); /* milli-GPU */
int64_t vg_node_gpu_free(const struct vg_node *n);           /* milli-GPU */
/* Takes the pod's resources from node n on the GPUs of pick. */
void vg_node_apply(struct vg_node *n, const struct vg_pod *p, const struct vg_pick *pick);

/* ---- fit (fit.c) ---- */
bool vg_pod_is_share(const struct vg_pod *p); /* one GPU, less than all of it */
bool vg_model_allowed(const struct vg_node *n, const struct vg_pod *p);
/* CPU, memory, GPU model and GPU shares all fit. */
bool vg_fit(const struct vg_node *n, const struct vg_pod *p);
/* Default GPU choice: a share goes to the fitting GPU with the least free
 * milli (lowest index on ties); N GPUs take the lowest-index fitting ones.
 * Returns false if the GPUs do not fit. */
bool vg_pick_tightest(const struct vg_node *n, const struct vg_pod *p, struct vg_pick *pick);

/* ---- target workload for FGD (workload.c) ---- */
struct vg_task_type {
  struct vg_pod pod; /* cpu, num_gpu, gpu_milli, models; mem: the pods' mean */
  double weight;     /* p_m, sums to 1 over the kept types */
  int count;
};

struct vg_workload {
  struct vg_task_type *types;
  int n;
  /* Of the kept types' GPU demand (sum of p_m x num_gpu x gpu_milli): the %
   * pinned to GPU models, and the % asking for several GPUs. */
  double pinned_pct, multi_pct;
  /* Unique per build (vg_workload_memo_id), kept by copies: the measures
   * memoise under it (frag.c). 0: never memoised. */
  uint64_t memo_id;
};
uint64_t vg_workload_memo_id(void); /* a fresh nonzero id */

/* Groups pods by (cpu, gpu_milli, num_gpu, models); keeps the most frequent
 * types until they cover >= coverage_pct of pods, renormalised. */
int vg_workload_build(struct vg_workload *w, const struct vg_pod *pods, int npods,
                      double coverage_pct, struct vg_err *err);
/* The same from weighted task types (their weight, not count): the heaviest
 * kept until they cover >= coverage_pct of the total weight, renormalised.
 * types is copied. The scheduler's learned workload is built so. */
int vg_workload_from_types(struct vg_workload *w, const struct vg_task_type *types, int n,
                           double coverage_pct, struct vg_err *err);
void vg_workload_free(struct vg_workload *w);

/* ---- fragmentation measure (frag.c) ---- */
/* A fragmentation measure F_n(M) (milli-GPU) of node n with free CPU
 * cpu_free, free memory mem_free and free GPU shares gpu_free[0..n->ngpu). */
typedef double (*vg_frag_fn)(const struct vg_workload *w, const struct vg_node *n, int64_t cpu_free,
                             int64_t mem_free, const int *gpu_free);
/* FGD's F_n(M); memory plays no part. */
double vg_frag_node(const struct vg_workload *w, const struct vg_node *n, int64_t cpu_free,
                    int64_t mem_free, const int *gpu_free);
/* F_mem: as vg_frag_node, but a task type whose memory (its pods' mean) is
 * more than mem_free can use none of the node's GPUs. The vgpu policy's
 * measures below all count memory so. */
double vg_frag_node_mem(const struct vg_workload *w, const struct vg_node *n, int64_t cpu_free,
                        int64_t mem_free, const int *gpu_free);
/* F': as vg_frag_node_mem, but the node's CPU also limits how many GPUs each
 * task type can use (cpu_free / its CPU copies, each on its own GPUs; the
 * ones with the most free share). */
double vg_frag_node_cpu(const struct vg_workload *w, const struct vg_node *n, int64_t cpu_free,
                        int64_t mem_free, const int *gpu_free);
/* F'_s: as vg_frag_node_cpu for share types (one GPU, < 1000 milli), as
 * vg_frag_node_mem for whole-GPU types. */
double vg_frag_node_cpu_shares(const struct vg_workload *w, const struct vg_node *n,
                               int64_t cpu_free, int64_t mem_free, const int *gpu_free);

/* ---- policies (policy.c, policy_*.c) ---- */
struct vg_sched;
/* Scores placing p on node index i (the node fits); fills pick. Higher wins. */
typedef double (*vg_score_fn)(struct vg_sched *s, int i, const struct vg_pod *p,
                              struct vg_pick *pick);

struct vg_policy {
  const char *name;
  const char *summary;
  vg_score_fn score;
};

/* The policy called name, or NULL. */
const struct vg_policy *vg_policy_find(const char *name);
/* NULL-terminated list of all policies. */
const struct vg_policy *const *vg_policy_all(void);

double vg_score_bestfit(struct vg_sched *s, int i, const struct vg_pod *p, struct vg_pick *pick);
double vg_score_fgd(struct vg_sched *s, int i, const struct vg_pod *p, struct vg_pick *pick);
double vg_score_binpack(struct vg_sched *s, int i, const struct vg_pod *p, struct vg_pick *pick);
double vg_score_spread(struct vg_sched *s, int i, const struct vg_pod *p, struct vg_pick *pick);
/* The measure vgpu uses for workload w (policy_vgpu.c): vg_frag_node_mem,
 * vg_frag_node_cpu or vg_frag_node_cpu_shares; *name (if not NULL) gets
 * its name for reports. */
vg_frag_fn vg_vgpu_measure(const struct vg_workload *w, const char **name);
/* The measure vgpu places p on: the mix's, except that under F'_s pods of
 * whole GPUs are placed on F_mem. */
vg_frag_fn vg_vgpu_measure_for(const struct vg_workload *w, const struct vg_pod *p);
double vg_score_vgpu(struct vg_sched *s, int i, const struct vg_pod *p, struct vg_pick *pick);
/* Extra score points for a share that takes its GPU from `from` to `to` free
 * milli (the vgpu policy's tie-break); NULL for none. */
typedef double (*vg_share_bonus_fn)(struct vg_sched *s, int from, int to);
/* FGD's score descending the measure f: int(100 sigmoid(-dF/1000)). A share
 * tries each GPU with room and adds bonus(from, to) for it; other pods take
 * the lowest-index free GPUs. vg_score_fgd is f = vg_frag_node, no bonus. */
double vg_fgd_score_by(struct vg_sched *s, int i, const struct vg_pod *p, struct vg_pick *pick,
                       vg_frag_fn f, vg_share_bonus_fn bonus);

/* ---- scheduler state and placement (sched.c) ---- */
#define VG_SCHED_MEASURES 2
struct vg_sched {
  struct vg_cluster *cluster;
  const struct vg_policy *policy;
  const struct vg_workload *workload; /* FGD's target workload; may be NULL for others */
  /* Per-node cached measures, NAN when stale: one array per measure in use
   * (vgpu judges shares and whole GPUs on two), the older one reused. */
  double *frag[VG_SCHED_MEASURES];
  vg_frag_fn frag_fn[VG_SCHED_MEASURES];
  int frag_last;          /* the slot used last */
  int gaps[VG_MILLI + 1]; /* GPUs by free milli, when gaps_valid */
  bool gaps_valid;
};

int vg_sched_init(struct vg_sched *s, struct vg_cluster *c, const struct vg_policy *policy,
                  const struct vg_workload *w, struct vg_err *err);
void vg_sched_free(struct vg_sched *s);
/* F_n(M) of node i, cached until the node changes. */
double vg_sched_node_frag(struct vg_sched *s, int i);
/* Measure f of node i (0 without a workload), cached until the node changes
 * or two other measures are asked for. */
double vg_sched_node_frag_by(struct vg_sched *s, int i, vg_frag_fn f);
/* How many GPUs of the cluster have each free share (0..1000 milli), counted
 * on first use and kept up to date by vg_sched_place. Like the F cache, it
 * assumes the cluster changes only through vg_sched_place. */
const int *vg_sched_gaps(struct vg_sched *s);
/* Chooses a node and GPUs for p (does not change the cluster); returns the
 * node index or -1 when no node fits. */
int vg_sched_select(struct vg_sched *s, const struct vg_pod *p, struct vg_pick *pick);
/* Select and apply; returns the node index or -1. */
int vg_sched_place(struct vg_sched *s, const struct vg_pod *p);

#endif
