/*
 * mix.c -- workload families: one trace resampled so that one property of
 * the mix varies while the rest stays the base trace's, the way the FGD
 * paper made its trace families (docs/placement.md, "Workload families"):
 *
 *   multigpu=P  multi-GPU pods carry P % of the GPU request: multi-GPU pods
 *               drawn from the pool are appended (or the base's removed)
 *   gpushare=P  sharing pods carry P % of the GPU request, the pod count
 *               fixed: whole-GPU pods are replaced by sharing pods drawn
 *               from the pool (or the reverse)
 *   gpuspec=P   pods constrained to GPU models carry P % of the GPU request:
 *               the model lists of the pool's constrained pods are given to
 *               unconstrained pods (only lists that some node could satisfy
 *               for that pod), or taken away
 *   cpu=P       CPU-only pods are P % of the pods, the GPU pods kept: CPU-only
 *               pods drawn from the pool are appended (or removed)
 *
 * Everything is drawn from one seeded generator, so a (family, point, seed)
 * names one pod list exactly. Draws are uniform with replacement over the
 * pool's pods of the kind needed, so the pool's own mix of sizes carries
 * over; the pool is the base trace unless other traces are given.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace.h"

static const char *const family_names[] = {"", "multigpu", "gpushare", "gpuspec", "cpu"};

int vg_mix_parse(const char *s, struct vg_mix *m, struct vg_err *err) {
  const char *eq = strchr(s, '=');
  m->family = VG_MIX_NONE;
  for (int f = VG_MIX_MULTIGPU; eq && f <= VG_MIX_CPU; f++)
    if (strlen(family_names[f]) == (size_t)(eq - s) && strncmp(s, family_names[f], eq - s) == 0)
      m->family = (enum vg_mix_family)f;
  if (m->family == VG_MIX_NONE)
    return vg_err_set(err,
                      "bad --mix '%s': want FAMILY=PCT, FAMILY one of multigpu, gpushare, "
                      "gpuspec, cpu",
                      s);
  char *end;
  m->pct = strtod(eq + 1, &end);
  bool top_ok = m->family == VG_MIX_GPUSHARE ? m->pct <= 100 : m->pct < 100;
  if (end == eq + 1 || *end != '\0' || !(m->pct >= 0) || !top_ok)
    return vg_err_set(err, "bad --mix '%s': PCT must be a number from 0 to %s", s,
                      m->family == VG_MIX_GPUSHARE ? "100" : "below 100");
  return 0;
}

const char *vg_mix_family_name(enum vg_mix_family f) { return family_names[f]; }

/* ---- the pod list being built ---- */

struct list {
  struct vg_pod *p;
  int n, cap;
};

static int push(struct list *l, const struct vg_pod *p, struct vg_err *err) {
  if (l->n == l->cap) {
    int cap = l->cap ? l->cap * 2 : 1024;
    struct vg_pod *grown = realloc(l->p, (size_t)cap * sizeof(*grown));
    if (!grown) return vg_err_set(err, "out of memory for %d pods", cap);
    l->p = grown, l->cap = cap;
  }
  l->p[l->n++] = *p;
  return 0;
}

static void drop(struct list *l, int k) { l->p[k] = l->p[--l->n]; }

static int64_t req(const struct vg_pod *p) { return (int64_t)p->num_gpu * p->gpu_milli; }
static bool is_multi(const struct vg_pod *p) { return p->num_gpu >= 2; }
static bool is_share(const struct vg_pod *p) { return p->num_gpu == 1 && p->gpu_milli < VG_MILLI; }
static bool is_whole(const struct vg_pod *p) { return p->num_gpu >= 1 && !is_share(p); }
static bool is_single_whole(const struct vg_pod *p) {
  return p->num_gpu == 1 && p->gpu_milli == VG_MILLI;
}
static bool is_constrained(const struct vg_pod *p) { return p->num_gpu > 0 && p->models != 0; }
static bool is_cpu_only(const struct vg_pod *p) { return p->num_gpu == 0; }

typedef bool (*kind_fn)(const struct vg_pod *);

/* Percent of the GPU request carried by pods of a kind. */
static double req_pct(const struct list *l, kind_fn kind) {
  int64_t part = 0, all = 0;
  for (int i = 0; i < l->n; i++) {
    all += req(&l->p[i]);
    if (kind(&l->p[i])) part += req(&l->p[i]);
  }
  return all ? 100.0 * (double)part / (double)all : 0;
}

/* A uniform random index among the pods of a kind, or -1 if there is none. */
static int pick(const struct vg_pod *p, int n, kind_fn kind, struct vg_rng *rng) {
  int count = 0;
  for (int i = 0; i < n; i++) count += kind(&p[i]);
  if (count == 0) return -1;
  uint32_t k = vg_rng_below(rng, (uint32_t)count);
  for (int i = 0; i < n; i++)
    if (kind(&p[i]) && k-- == 0) return i;
  return -1;
}

static int missing(const char *what, struct vg_err *err) {
  return vg_err_set(err, "the pool has no %s pods to draw from", what);
}

/* ---- the families ---- */

static int mix_multigpu(struct list *l, double pct, const struct vg_pod *pool, int npool,
                        struct vg_rng *rng, struct vg_err *err) {
  if (req_pct(l, is_multi) > pct) {
    while (req_pct(l, is_multi) > pct) drop(l, pick(l->p, l->n, is_multi, rng));
    return 0;
  }
  while (req_pct(l, is_multi) < pct) {
    int k = pick(pool, npool, is_multi, rng);
    if (k < 0) return missing("multi-GPU", err);
    if (push(l, &pool[k], err)) return -1;
  }
  return 0;
}

/* Whole single GPUs are turned into shares first, as the paper's gpushare
 * traces do; past that, multi-GPU pods too (gpushare=100 has none left). */
static int mix_gpushare(struct list *l, double pct, const struct vg_pod *pool, int npool,
                        struct vg_rng *rng, struct vg_err *err) {
  bool raise = req_pct(l, is_share) < pct;
  while (raise && req_pct(l, is_share) < pct) {
    int k = pick(l->p, l->n, is_single_whole, rng);
    if (k < 0) k = pick(l->p, l->n, is_whole, rng);
    int d = pick(pool, npool, is_share, rng);
    if (d < 0) return missing("sharing", err);
    if (k < 0) break;
    l->p[k] = pool[d];
  }
  while (!raise && req_pct(l, is_share) > pct) {
    int k = pick(l->p, l->n, is_share, rng), d = pick(pool, npool, is_single_whole, rng);
    if (d < 0) return missing("whole-GPU", err);
    l->p[k] = pool[d];
  }
  return 0;
}

/* Could some node of the models in mask hold p on its own? */
static bool satisfiable(const struct vg_cluster *c, const struct vg_pod *p, uint32_t mask) {
  struct vg_pod q = *p;
  q.models = mask;
  for (int i = 0; i < c->n; i++) {
    const struct vg_node *n = &c->nodes[i];
    if (n->ngpu >= q.num_gpu && n->cpu_cap >= q.cpu && n->mem_cap >= q.mem &&
        vg_model_allowed(n, &q))
      return true;
  }
  return false;
}

/* Gives p a model list drawn from the pool's constrained pods (a few tries
 * for one some node satisfies). false: none found, leave it be. */
static bool constrain(const struct vg_cluster *c, struct vg_pod *p, const struct vg_pod *pool,
                      int npool, struct vg_rng *rng) {
  for (int tries = 0; tries < 16; tries++) {
    int d = pick(pool, npool, is_constrained, rng);
    if (satisfiable(c, p, pool[d].models)) return p->models = pool[d].models, true;
  }
  return false;
}

/* Unconstrained GPU pods are visited in a seeded random order, each once. */
static int mix_gpuspec(const struct vg_cluster *c, struct list *l, double pct,
                       const struct vg_pod *pool, int npool, struct vg_rng *rng,
                       struct vg_err *err) {
  if (pick(pool, npool, is_constrained, rng) < 0) return missing("model-constrained", err);
  while (req_pct(l, is_constrained) > pct) l->p[pick(l->p, l->n, is_constrained, rng)].models = 0;
  int *order = malloc((l->n > 0 ? (size_t)l->n : 1) * sizeof(*order)), n = 0;
  if (!order) return vg_err_set(err, "out of memory for %d pods", l->n);
  int64_t part = 0, all = 0;
  for (int i = 0; i < l->n; i++) {
    all += req(&l->p[i]);
    if (is_constrained(&l->p[i]))
      part += req(&l->p[i]);
    else if (l->p[i].num_gpu > 0)
      order[n++] = i;
  }
  vg_rng_shuffle(rng, order, n, sizeof(*order));
  for (int j = 0; j < n && 100.0 * (double)part < pct * (double)all; j++)
    if (constrain(c, &l->p[order[j]], pool, npool, rng)) part += req(&l->p[order[j]]);
  free(order);
  return 0;
}

static int mix_cpu(struct list *l, double pct, const struct vg_pod *pool, int npool,
                   struct vg_rng *rng, struct vg_err *err) {
  int gpu = 0;
  for (int i = 0; i < l->n; i++) gpu += !is_cpu_only(&l->p[i]);
  int want = (int)(pct / (100.0 - pct) * gpu + 0.5), have = l->n - gpu;
  for (; have > want; have--) drop(l, pick(l->p, l->n, is_cpu_only, rng));
  for (; have < want; have++) {
    int k = pick(pool, npool, is_cpu_only, rng);
    if (k < 0) return missing("CPU-only", err);
    if (push(l, &pool[k], err)) return -1;
  }
  return 0;
}

int vg_mix_build(const struct vg_mix *m, const struct vg_cluster *c, const struct vg_pod *base,
                 int nbase, const struct vg_pod *pool, int npool, struct vg_pod **out, int *nout,
                 struct vg_err *err) {
  struct list l = {0};
  struct vg_rng rng;
  vg_rng_seed(&rng, m->seed);
  if (npool == 0) pool = base, npool = nbase;
  for (int i = 0; i < nbase; i++)
    if (push(&l, &base[i], err)) return free(l.p), -1;
  int rc = 0;
  switch (m->family) {
    case VG_MIX_MULTIGPU:
      rc = mix_multigpu(&l, m->pct, pool, npool, &rng, err);
      break;
    case VG_MIX_GPUSHARE:
      rc = mix_gpushare(&l, m->pct, pool, npool, &rng, err);
      break;
    case VG_MIX_GPUSPEC:
      rc = mix_gpuspec(c, &l, m->pct, pool, npool, &rng, err);
      break;
    case VG_MIX_CPU:
      rc = mix_cpu(&l, m->pct, pool, npool, &rng, err);
      break;
    case VG_MIX_NONE:
      break;
  }
  if (rc) return free(l.p), -1;
  *out = l.p, *nout = l.n;
  return 0;
}

double vg_mix_measure(enum vg_mix_family f, const struct vg_pod *p, int n) {
  struct list l = {(struct vg_pod *)p, n, n};
  switch (f) {
    case VG_MIX_MULTIGPU:
      return req_pct(&l, is_multi);
    case VG_MIX_GPUSHARE:
      return req_pct(&l, is_share);
    case VG_MIX_GPUSPEC:
      return req_pct(&l, is_constrained);
    case VG_MIX_CPU: {
      int cpu = 0;
      for (int i = 0; i < n; i++) cpu += is_cpu_only(&p[i]);
      return n ? 100.0 * cpu / n : 0;
    }
    case VG_MIX_NONE:
      break;
  }
  return 0;
}
