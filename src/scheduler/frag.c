/*
 * frag.c -- the FGD fragmentation measure F_n(M) of one node (Weng et al.,
 * ATC'23; docs/placement.md), in milli-GPU.
 *
 * For each task type m of the target workload, the node's free GPU share that
 * m could not use counts as fragment:
 *   - m needs no GPU, or may not use this GPU model: all free GPU share;
 *   - m fits (num_gpu GPUs each with >= its per-GPU milli, and its CPU):
 *     the free share of the GPUs that are each too small for m;
 *   - otherwise (GPU or CPU lacking): all free GPU share.
 * F_n(M) = sum_m p_m F_n(m). Memory plays no part in FGD's F.
 *
 * The vgpu policy's measures all count memory as FGD counts CPU: where the
 * node's free memory is less than m's (its pods' mean, workload.c), m fits
 * nowhere on the node and all its free GPU share is fragment for m. FGD never
 * looks at memory, so it spends the memory of nodes with free GPUs on pods
 * that need little GPU and strands the GPUs: at multigpu 50 most of the 1-GPU
 * pods and shares that fail near 100 % arrived have GPU and CPU free on some
 * node but no memory next to them (docs/placement.md).
 *   vg_frag_node_mem   F_mem: F with memory.
 *   vg_frag_node_cpu   F': F_mem, except that the node's CPU also limits how
 *     many GPUs m can use. FGD's measure asks only whether one copy of m
 *     fits, so a node with 8 free GPUs and CPU for one 11-core pod looks
 *     unfragmented for whole-GPU pods, and FGD happily spends the CPU of
 *     GPU-rich nodes; at 100 % arrived about 22 whole GPUs (0.35 % of the
 *     cluster) sit on such nodes (docs/placement.md).
 *   vg_frag_node_cpu_shares   F'_s: caps only the share types (one GPU,
 *     < 1000 milli) and counts whole-GPU types as F_mem does. On mixes with
 *     much multi-GPU demand, capping the 1-GPU whole types is what made F'
 *     lose to FGD, while capping the shares still gains (docs/placement.md).
 */
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "vg_sched.h"

static double frag_of_type(const struct vg_pod *m, const struct vg_node *n, int64_t cpu_free,
                           const int *gpu_free, int total) {
  if (m->num_gpu == 0 || !vg_model_allowed(n, m) || cpu_free < m->cpu) return total;
  int fitting = 0, small = 0;
  for (int g = 0; g < n->ngpu; g++) {
    if (gpu_free[g] >= m->gpu_milli)
      fitting++;
    else
      small += gpu_free[g];
  }
  return fitting >= m->num_gpu ? small : total;
}

/* Like frag_of_type, but m can use at most k x num_gpu of the fitting GPUs,
 * where k = cpu_free / m's CPU is how many copies of m the CPU admits (a
 * share counts a GPU per copy, as F does). Those are the GPUs with the most
 * free share; the rest of the free share is fragment for m. */
static double cpu_frag_of_type(const struct vg_pod *m, const struct vg_node *n, int64_t cpu_free,
                               const int *gpu_free, int total) {
  if (m->num_gpu == 0 || !vg_model_allowed(n, m) || cpu_free < m->cpu) return total;
  int fit[VG_SCHED_MAX_GPUS], nfit = 0, usable = 0;
  for (int g = 0; g < n->ngpu; g++)
    if (gpu_free[g] >= m->gpu_milli) usable += fit[nfit++] = gpu_free[g];
  if (nfit < m->num_gpu) return total;
  int64_t gpus = cpu_free / m->cpu * m->num_gpu; /* cpu > 0: workload.c makes 0 100m */
  if (gpus >= nfit) return total - usable;
  usable = 0; /* the `gpus` largest fitting shares, by selection (ngpu <= 16) */
  for (int j = 0; j < gpus; j++) {
    int big = j;
    for (int k = j + 1; k < nfit; k++)
      if (fit[k] > fit[big]) big = k;
    int t = fit[j];
    fit[j] = fit[big];
    fit[big] = t;
    usable += fit[j];
  }
  return total - usable;
}

static double share_cpu_frag_of_type(const struct vg_pod *m, const struct vg_node *n,
                                     int64_t cpu_free, const int *gpu_free, int total) {
  return vg_pod_is_share(m) ? cpu_frag_of_type(m, n, cpu_free, gpu_free, total)
                            : frag_of_type(m, n, cpu_free, gpu_free, total);
}

typedef double (*type_frag_fn)(const struct vg_pod *m, const struct vg_node *n, int64_t cpu_free,
                               const int *gpu_free, int total);

/* ---- a memo of measures, per thread ----
 * The extender scores every node of the cluster for every pod (1,213 of
 * them in the trace), and most nodes have not changed since the last pod:
 * a measure of the same node state under the same workload is looked up,
 * not recomputed. The key is everything the measure reads -- the workload
 * (its memo_id: unique per build, 0 = never memoised), the measure, the
 * node's model and GPU count, its free CPU, memory and GPU shares -- and
 * is compared whole, so a hit is the value itself. */
#define MEMO_SLOTS 2048

struct memo_entry {
  uint64_t id;
  type_frag_fn of_type;
  bool memory_counts;
  int model, ngpu;
  int64_t cpu_free, mem_free;
  int gpu_free[VG_SCHED_MAX_GPUS];
  double value;
};

static _Thread_local struct memo_entry g_memo[MEMO_SLOTS];

static struct memo_entry *memo_slot(const struct memo_entry *k) {
  uint64_t h = k->id * 0x9E3779B97F4A7C15ULL ^ (uint64_t)(uintptr_t)k->of_type;
  h = (h ^ (uint64_t)k->cpu_free) * 0x100000001B3ULL ^ (uint64_t)k->mem_free;
  h = (h ^ (uint64_t)(k->model + 1)) * 0x100000001B3ULL ^ (uint64_t)k->memory_counts;
  for (int g = 0; g < k->ngpu; g++) h = (h ^ (uint64_t)k->gpu_free[g]) * 0x100000001B3ULL;
  return &g_memo[(h ^ h >> 29) % MEMO_SLOTS];
}

static bool memo_same(const struct memo_entry *a, const struct memo_entry *b) {
  return a->id == b->id && a->of_type == b->of_type && a->memory_counts == b->memory_counts &&
         a->model == b->model && a->ngpu == b->ngpu && a->cpu_free == b->cpu_free &&
         a->mem_free == b->mem_free &&
         memcmp(a->gpu_free, b->gpu_free, (size_t)a->ngpu * sizeof(int)) == 0;
}

uint64_t vg_workload_memo_id(void) {
  static _Atomic uint64_t next = 1;
  return next++;
}

/* sum_m p_m F_n(m) for a per-type measure. With memory_counts (the vgpu
 * measures), a type whose memory exceeds mem_free can use none of the node's
 * GPUs, whatever the per-type measure says. */
static double compute(const struct vg_workload *w, const struct vg_node *n, int64_t cpu_free,
                      int64_t mem_free, const int *gpu_free, int total, type_frag_fn of_type,
                      bool memory_counts) {
  double f = 0;
  for (int t = 0; t < w->n; t++) {
    const struct vg_pod *m = &w->types[t].pod;
    bool memory_short = memory_counts && mem_free < m->mem;
    f += w->types[t].weight * (memory_short ? total : of_type(m, n, cpu_free, gpu_free, total));
  }
  return f;
}

static double weighted(const struct vg_workload *w, const struct vg_node *n, int64_t cpu_free,
                       int64_t mem_free, const int *gpu_free, type_frag_fn of_type,
                       bool memory_counts) {
  int total = 0;
  for (int g = 0; g < n->ngpu; g++) total += gpu_free[g];
  if (total == 0) return 0;
  if (w->memo_id == 0 || n->ngpu > VG_SCHED_MAX_GPUS)
    return compute(w, n, cpu_free, mem_free, gpu_free, total, of_type, memory_counts);
  struct memo_entry k = {w->memo_id, of_type,  memory_counts, n->model, n->ngpu,
                         cpu_free,   mem_free, {0},           0};
  memcpy(k.gpu_free, gpu_free, (size_t)n->ngpu * sizeof(int));
  struct memo_entry *e = memo_slot(&k);
  if (memo_same(e, &k)) return e->value;
  k.value = compute(w, n, cpu_free, mem_free, gpu_free, total, of_type, memory_counts);
  *e = k;
  return k.value;
}

double vg_frag_node(const struct vg_workload *w, const struct vg_node *n, int64_t cpu_free,
                    int64_t mem_free, const int *gpu_free) {
  return weighted(w, n, cpu_free, mem_free, gpu_free, frag_of_type, false);
}

double vg_frag_node_mem(const struct vg_workload *w, const struct vg_node *n, int64_t cpu_free,
                        int64_t mem_free, const int *gpu_free) {
  return weighted(w, n, cpu_free, mem_free, gpu_free, frag_of_type, true);
}

double vg_frag_node_cpu(const struct vg_workload *w, const struct vg_node *n, int64_t cpu_free,
                        int64_t mem_free, const int *gpu_free) {
  return weighted(w, n, cpu_free, mem_free, gpu_free, cpu_frag_of_type, true);
}

double vg_frag_node_cpu_shares(const struct vg_workload *w, const struct vg_node *n,
                               int64_t cpu_free, int64_t mem_free, const int *gpu_free) {
  return weighted(w, n, cpu_free, mem_free, gpu_free, share_cpu_frag_of_type, true);
}
