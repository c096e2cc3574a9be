/*
 * workload.c -- FGD's target workload M: the task types of a trace and their
 * popularity p_m.
 *
 * As the artifact does (docs/placement.md): pods are grouped by
 * (CPU, per-GPU milli, GPU count, GPU model constraint) -- memory is not part
 * of the key, a CPU request of 0 counts as 100m -- and the most frequent types
 * are kept until they cover at least coverage_pct of the pods; their shares
 * are renormalised to sum to 1. A type's memory is its pods' mean: FGD's F
 * ignores it, the vgpu policy's measures need it to fit (frag.c).
 */
#include <stdlib.h>
#include <string.h>

#include "vg_sched.h"

static bool same_type(const struct vg_pod *a, const struct vg_pod *b) {
  return a->cpu == b->cpu && a->gpu_milli == b->gpu_milli && a->num_gpu == b->num_gpu &&
         a->models == b->models;
}

static int by_count(const void *pa, const void *pb) {
  const struct vg_task_type *a = pa, *b = pb;
  if (a->count != b->count) return a->count > b->count ? -1 : 1;
  if (a->pod.num_gpu != b->pod.num_gpu) return a->pod.num_gpu - b->pod.num_gpu;
  if (a->pod.gpu_milli != b->pod.gpu_milli) return a->pod.gpu_milli - b->pod.gpu_milli;
  if (a->pod.cpu != b->pod.cpu) return a->pod.cpu < b->pod.cpu ? -1 : 1;
  return a->pod.models < b->pod.models ? -1 : a->pod.models > b->pod.models;
}

/* Adds pod p to the types list (linear search: traces have ~100 types). */
static void count_type(struct vg_task_type *types, int *n, const struct vg_pod *p) {
  struct vg_pod key = *p;
  if (key.cpu == 0) key.cpu = 100;
  for (int t = 0; t < *n; t++)
    if (same_type(&types[t].pod, &key)) {
      types[t].count++;
      types[t].pod.mem += p->mem; /* a sum until mean_memory */
      return;
    }
  types[*n].pod = key;
  types[*n].count = 1;
  (*n)++;
}

static void mean_memory(struct vg_task_type *types, int n) {
  for (int t = 0; t < n; t++) types[t].pod.mem /= types[t].count;
}

/* What part of the GPU demand is pinned to models, and what part spans GPUs. */
static void mix_shares(struct vg_workload *w) {
  double all = 0, pinned = 0, multi = 0;
  for (int t = 0; t < w->n; t++) {
    const struct vg_pod *m = &w->types[t].pod;
    double g = w->types[t].weight * m->num_gpu * m->gpu_milli;
    all += g;
    if (m->models) pinned += g;
    if (m->num_gpu >= 2) multi += g;
  }
  w->pinned_pct = all > 0 ? 100 * pinned / all : 0;
  w->multi_pct = all > 0 ? 100 * multi / all : 0;
}

static int by_weight(const void *pa, const void *pb) {
  const struct vg_task_type *a = pa, *b = pb;
  if (a->weight != b->weight) return a->weight > b->weight ? -1 : 1;
  struct vg_task_type x = *a, y = *b; /* equal weights: the count order's tie-breaks */
  x.count = y.count = 0;
  return by_count(&x, &y);
}

int vg_workload_from_types(struct vg_workload *w, const struct vg_task_type *types, int n,
                           double coverage_pct, struct vg_err *err) {
  memset(w, 0, sizeof(*w));
  double total = 0;
  for (int t = 0; t < n; t++) total += types[t].weight > 0 ? types[t].weight : 0;
  if (n <= 0 || total <= 0) return vg_err_set(err, "target workload: no task types");
  struct vg_task_type *kept = malloc((size_t)n * sizeof(*kept));
  if (!kept) return vg_err_set(err, "out of memory for %d task types", n);
  memcpy(kept, types, (size_t)n * sizeof(*kept));
  qsort(kept, (size_t)n, sizeof(*kept), by_weight);
  int k = 0;
  double covered = 0;
  while (k < n && kept[k].weight > 0 && covered * 100.0 < coverage_pct * total)
    covered += kept[k++].weight;
  for (int t = 0; t < k; t++) kept[t].weight /= covered;
  w->types = kept;
  w->n = k;
  mix_shares(w);
  w->memo_id = vg_workload_memo_id();
  return 0;
}

int vg_workload_build(struct vg_workload *w, const struct vg_pod *pods, int npods,
                      double coverage_pct, struct vg_err *err) {
  memset(w, 0, sizeof(*w));
  if (npods <= 0) return vg_err_set(err, "target workload: no pods");
  struct vg_task_type *types = calloc((size_t)npods, sizeof(*types));
  if (!types) return vg_err_set(err, "out of memory for %d task types", npods);
  int n = 0;
  for (int i = 0; i < npods; i++) count_type(types, &n, &pods[i]);
  mean_memory(types, n);
  qsort(types, (size_t)n, sizeof(*types), by_count);
  int kept = 0, covered = 0;
  while (kept < n && covered * 100.0 < coverage_pct * npods) covered += types[kept++].count;
  for (int t = 0; t < kept; t++) types[t].weight = (double)types[t].count / covered;
  w->types = types;
  w->n = kept;
  mix_shares(w);
  w->memo_id = vg_workload_memo_id();
  return 0;
}

void vg_workload_free(struct vg_workload *w) {
  free(w->types);
  memset(w, 0, sizeof(*w));
}
