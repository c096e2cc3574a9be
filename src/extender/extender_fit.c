/*
 * extender_fit.c -- GPU-level fit for every dialect, on a struct node_view.
 *
 * A container asks for `count` distinct GPUs (vgpu, timeSlicing) or for one
 * GPU (gpushare, cce), each taking from the GPU's shared account:
 *
 *   dialect      IDs taken          bytes held (gpus[].memory)       cores
 *   vgpu         1                  gpumem, or % or all of the GPU's  gpucores
 *                                   vgpu memory
 *   timeSlicing  1 replica          the per-replica unit, else GPU
 *                                   memory / replicas                 0
 *   gpushare     N units            N x unit                          0
 *   cce          N units            N x 128 MiB                       percentage
 *
 * and a GPU fits when it is Healthy, matches the pod's type/UUID selection,
 * advertises the resource asked for in the right dialect, has the IDs free,
 * memory and cores left (vgpu: within the vgpu resource's scaled totals),
 * the resource's slice cap (vgpu: deviceSplitCount IDs; cce: maxVgpus) not
 * reached, is not held exclusively (a 100 % cores slice) and, for a 100 %
 * request, holds nothing else. CCE keeps one isolation mode per GPU: a GPU
 * with memory-only CCE slices takes no memory+compute CCE slice and the
 * other way round (Huawei's rule; docs/scheduler.md, "One isolation mode per GPU").
 *
 * The GPU chosen among those that fit follows the GPU policy: binpack (the
 * default) takes the one with the least cores and then memory left, spread
 * the one with the most.
 */
#include <math.h>
#include <stdio.h>
#include <strings.h>
#include <string.h>

#include "extender_int.h"
#include "size.h"

/* The GPU's resource c asks for, in a dialect that can serve it. */
static const struct res_view *res_for(const struct ctr_req *c, const struct gpu_view *g) {
  for (int k = 0; k < g->nres; k++) {
    const struct res_view *r = &g->res[k];
    if (strcmp(r->name, c->resource) != 0) continue;
    if (c->kind == EXT_KIND_GPUSHARE)
      return r->dialect == VG_DIALECT_GPUSHARE && r->unit > 0 ? r : NULL;
    if (c->kind == EXT_KIND_CCE) return r->dialect == VG_DIALECT_CCE ? r : NULL;
    if (r->dialect == VG_DIALECT_VGPU) return r;
    if (r->dialect == VG_DIALECT_TIMESLICING && !c->vgpu_only && r->count > 0) return r;
    return NULL;
  }
  return NULL;
}

static int64_t need_mem(const struct ctr_req *c, const struct gpu_view *g,
                        const struct res_view *r) {
  switch (r->dialect) {
    case VG_DIALECT_VGPU:
      return c->mem ? c->mem : c->mem_pct ? r->memory * c->mem_pct / 100 : r->memory;
    case VG_DIALECT_TIMESLICING:
      return r->unit ? r->unit : g->mem / r->count;
    default:
      return c->units * r->unit;
  }
}

static int need_ids(const struct ctr_req *c) {
  return c->kind == EXT_KIND_COUNT ? 1 : (int)c->units;
}

static int64_t mem_cap(const struct gpu_view *g, const struct res_view *r) {
  return r->dialect == VG_DIALECT_VGPU ? r->memory : g->mem;
}

static int cores_cap(const struct res_view *r) {
  return r->dialect == VG_DIALECT_VGPU ? r->cores : 100;
}

/* Is item in the comma list? exact, or a case-insensitive substring. */
static bool in_list(const char *list, const char *item, bool substring) {
  for (const char *p = list; *p;) {
    const char *end = strchr(p, ',');
    size_t n = end ? (size_t)(end - p) : strlen(p);
    while (n && *p == ' ') p++, n--;
    while (n && p[n - 1] == ' ') n--;
    char tok[EXT_LIST_MAX];
    snprintf(tok, sizeof(tok), "%.*s", (int)n, p);
    if (n && (substring ? strcasestr(item, tok) != NULL : strcmp(item, tok) == 0)) return true;
    p = end ? end + 1 : p + strlen(p);
  }
  return false;
}

static bool selected(const struct pod_req *q, const struct gpu_view *g) {
  if (q->use_type[0] && !in_list(q->use_type, g->type, true)) return false;
  if (q->nouse_type[0] && in_list(q->nouse_type, g->type, true)) return false;
  if (q->use_uuid[0] && !in_list(q->use_uuid, g->uuid, false)) return false;
  if (q->nouse_uuid[0] && in_list(q->nouse_uuid, g->uuid, false)) return false;
  return true;
}

static bool mode_clash(const struct ctr_req *c, const struct gpu_view *g) {
  if (c->kind != EXT_KIND_CCE || g->cce_mode == EXT_CCE_NONE) return false;
  return g->cce_mode != (c->cores > 0 ? EXT_CCE_MEM_CORES : EXT_CCE_MEM);
}

/* Is there room on g for the CUDA contexts of its slices once c joins them?
 * A context costs memory no limit counts (docs/memory.md), so a GPU shared
 * by n slices keeps n x contextReserve free beyond their limits; a slice
 * alone on its GPU may take it all (its context hurts only itself). Only
 * where limits are in bytes the user chose (vgpu, cce): gpushare's units
 * divide the whole GPU by design (seed 002 packs 2 x 3803 MiB into 7606),
 * and timeSlicing's equal share has the reserve built into its unit. */
static bool contexts_fit(const struct gpu_view *g, const struct res_view *r, int64_t need,
                         int64_t reserve) {
  if (reserve == 0 || g->slices == 0 ||
      (r->dialect != VG_DIALECT_VGPU && r->dialect != VG_DIALECT_CCE))
    return true;
  int64_t free_bytes = mem_cap(g, r) - g->mem_used - need; /* >= 0: checked first */
  return (int64_t)(g->slices + 1) <= free_bytes / reserve;
}

/* The resource container c takes on GPU g, or NULL when c does not fit g
 * (reserve: the node's contextReserve). */
static const struct res_view *gpu_fits(const struct pod_req *q, const struct ctr_req *c,
                                       const struct gpu_view *g, int64_t reserve) {
  const struct res_view *r = res_for(c, g);
  if (!r || !g->healthy || !selected(q, g) || g->exclusive) return NULL;
  if (r->ids_used + need_ids(c) > r->count) return NULL;
  if (r->dialect == VG_DIALECT_CCE && (r->slices_used >= r->max_vgpus || mode_clash(c, g)))
    return NULL;
  int64_t need = need_mem(c, g, r);
  if (need < 1) return NULL; /* an assignment holds at least a byte (a resource with memory 0) */
  if (need > mem_cap(g, r) - g->mem_used) return NULL; /* no overflow */
  if (!contexts_fit(g, r, need, reserve)) return NULL;
  if (g->cores_used + c->cores > cores_cap(r)) return NULL;
  if (c->cores >= 100 && g->slices > 0) return NULL;
  return r;
}

static void gpu_take(const struct ctr_req *c, struct gpu_view *g) {
  ext_gpu_hold(g, c->resource, need_mem(c, g, res_for(c, g)), c->cores);
}

void ext_hold_anywhere(const struct pod_req *r, struct node_view *v) {
  for (int i = 0; i < r->n; i++)
    for (int j = 0; j < v->n; j++)
      if (res_for(&r->c[i], &v->g[j])) gpu_take(&r->c[i], &v->g[j]);
}

/* Is GPU a (resource ra) better than b (rb) for the GPU policy? binpack:
 * less left; spread: more. */
static bool better(enum ext_gpu_policy pol, const struct gpu_view *a, const struct res_view *ra,
                   const struct gpu_view *b, const struct res_view *rb) {
  int ac = cores_cap(ra) - a->cores_used, bc = cores_cap(rb) - b->cores_used;
  int64_t am = mem_cap(a, ra) - a->mem_used, bm = mem_cap(b, rb) - b->mem_used;
  if (pol == EXT_GPU_SPREAD) return ac > bc || (ac == bc && am > bm);
  return ac < bc || (ac == bc && am < bm);
}

/* Chooses c->count distinct GPUs of v for container c into out. Each GPU's
 * fit is worked out once: this runs for every candidate node of a request. */
static bool pick_ctr(const struct pod_req *q, const struct ctr_req *c, const struct node_view *v,
                     int *out) {
  const struct res_view *fit[VG_SCHED_MAX_GPUS];
  int nfit = 0;
  for (int j = 0; j < v->n; j++) nfit += (fit[j] = gpu_fits(q, c, &v->g[j], v->reserve)) != NULL;
  if (nfit < c->count) return false;
  for (int k = 0; k < c->count; k++) {
    int best = -1;
    for (int j = 0; j < v->n; j++) {
      if (!fit[j]) continue;
      if (best < 0 || better(q->gpu_policy, &v->g[j], fit[j], &v->g[best], fit[best])) best = j;
    }
    fit[best] = NULL; /* distinct GPUs */
    out[k] = best;
  }
  return true;
}

bool ext_adopt_pick(const struct pod_req *r, const struct node_view *v, const struct vg_pick *pick,
                    ext_picks picks) {
  if (r->n != 1 || r->gpu_policy != EXT_GPU_NODE_POLICY || pick->n != r->c[0].count) return false;
  for (int k = 0; k < pick->n; k++) {
    int j = pick->gpu[k];
    if (j >= v->n || !gpu_fits(r, &r->c[0], &v->g[j], v->reserve)) return false;
    for (int l = 0; l < k; l++)
      if (pick->gpu[l] == j) return false;
  }
  for (int k = 0; k < pick->n; k++) picks[0][k] = pick->gpu[k];
  return true;
}

/* ---- reasons ---- */

static void describe_need(const struct ctr_req *c, char *buf, size_t len) {
  if (c->kind == EXT_KIND_GPUSHARE)
    snprintf(buf, len, "%lld units", (long long)c->units);
  else if (c->kind == EXT_KIND_CCE)
    snprintf(buf, len, "%lld MiB", (long long)(c->units * EXT_CCE_UNIT / EXT_MIB));
  else if (c->mem)
    snprintf(buf, len, "%lld MiB", (long long)(c->mem / EXT_MIB));
  else if (c->mem_pct)
    snprintf(buf, len, "%d percent of the memory", c->mem_pct);
  else
    snprintf(buf, len, "all the memory");
}

struct tally {
  int advertised, other_dialect, eligible, fit, clash, reserve_short;
  const struct res_view *other; /* the first resource of c's name c cannot use */
  int64_t need_max, cap_max;    /* bytes, among eligible GPUs */
  /* Eligible GPUs at their CCE slice cap (maxVgpus), and the first of them:
   * "0 have" alone leaves the user hunting for a memory shortage when the
   * GPU is refused for its slice count. */
  int full;
  const struct gpu_view *full_gpu;
  int full_cap;
};

static void count_gpus(const struct pod_req *q, const struct ctr_req *c, const struct node_view *v,
                       struct tally *t) {
  memset(t, 0, sizeof(*t));
  for (int j = 0; j < v->n; j++) {
    const struct gpu_view *g = &v->g[j];
    const struct res_view *r = res_for(c, g);
    for (int k = 0; !r && k < g->nres; k++) {
      if (strcmp(g->res[k].name, c->resource) != 0) continue;
      if (t->other_dialect++ == 0) t->other = &g->res[k];
    }
    if (!r) continue;
    t->advertised++;
    if (!g->healthy || !selected(q, g)) continue;
    t->eligible++;
    bool fits = gpu_fits(q, c, g, v->reserve) != NULL;
    t->fit += fits;
    t->clash += mode_clash(c, g) && !fits;
    t->reserve_short += !fits && gpu_fits(q, c, g, 0) != NULL;
    if (r->dialect == VG_DIALECT_CCE && r->slices_used >= r->max_vgpus) {
      if (t->full++ == 0) t->full_gpu = g, t->full_cap = r->max_vgpus;
    }
    int64_t need = need_mem(c, g, r), cap = mem_cap(g, r);
    if (need > t->need_max) t->need_max = need;
    if (cap > t->cap_max) t->cap_max = cap;
  }
}

/* Container c asks for resource r, which the node advertises as `other`
 * in a way c cannot use: what c asked for, in its own dialect, and what
 * the node offers instead. */
static enum ext_reason explain_dialect(const struct ctr_req *c, const struct res_view *other,
                                       char *why, size_t len) {
  if (c->kind == EXT_KIND_COUNT && c->vgpu_only && other->dialect == VG_DIALECT_TIMESLICING) {
    snprintf(why, len, "container %s: %s here is time-slicing, which takes no %s, %s or %s",
             c->name, c->resource, ext_res(VG_ROLE_VGPU_MEM),
             strchr(ext_res(VG_ROLE_VGPU_MEM_PCT), '/') + 1,
             strchr(ext_res(VG_ROLE_VGPU_CORES), '/') + 1);
    return EXT_R_NOT_ADVERTISED;
  }
  char asked[160];
  if (c->kind == EXT_KIND_GPUSHARE)
    snprintf(asked, sizeof(asked), "%lld units of %s (gpushare)", (long long)c->units, c->resource);
  else if (c->kind == EXT_KIND_CCE)
    snprintf(asked, sizeof(asked), "%lld MiB of %s (cce)",
             (long long)(c->units * EXT_CCE_UNIT / EXT_MIB), c->resource);
  else
    snprintf(asked, sizeof(asked), "%d %s (%s)", c->count, c->resource,
             c->vgpu_only ? "vgpu, with gpumem or gpucores"
                          : "a whole or time-sliced GPU, no gpumem or gpucores");
  const char *detail = ", a dialect this request cannot use";
  if (other->dialect == VG_DIALECT_GPUSHARE && other->unit <= 0 && c->kind == EXT_KIND_GPUSHARE)
    detail = " with no memory unit (unit 0), so no memory can be handed out";
  else if (other->dialect == VG_DIALECT_TIMESLICING && other->count <= 0 &&
           c->kind == EXT_KIND_COUNT)
    detail = " with no replicas (count 0)";
  snprintf(why, len, "container %s asks for %s; %s here is advertised as %s%s", c->name, asked,
           c->resource, vg_dialect_label(other->dialect), detail);
  return EXT_R_NOT_ADVERTISED;
}

/* Eligible GPUs exist but too few have room now: no_room, or cce_mode when
 * the other CCE isolation mode holds those that would. */
static enum ext_reason explain_no_room(const struct ctr_req *c, const struct tally *t,
                                       const char *need, char *why, size_t len) {
  char full[192] = "";
  if (t->full == 1)
    snprintf(full, sizeof(full),
             "; %s already holds %d CCE slices, the most one GPU takes (maxVgpus)",
             t->full_gpu->uuid, t->full_cap);
  else if (t->full > 1)
    snprintf(full, sizeof(full),
             "; %d GPUs already hold the most CCE slices one GPU takes (maxVgpus: %d on %s)",
             t->full, t->full_cap, t->full_gpu->uuid);
  snprintf(why, len,
           "container %s needs %d GPUs each with %s, %d percent cores and a slot of %s free; %d "
           "have%s%s",
           c->name, c->count, need, c->cores, c->resource, t->fit,
           t->clash ? " (others hold CCE slices of the other isolation mode: memory-only and "
                      "memory+compute do not share a GPU)"
                    : "",
           full);
  return t->clash ? EXT_R_CCE_MODE : EXT_R_NO_ROOM;
}

/* Why container c does not fit view v (v unchanged), in words and as a class. */
static enum ext_reason explain(const struct pod_req *q, const struct ctr_req *c,
                               const struct node_view *v, char *why, size_t len) {
  struct tally t;
  count_gpus(q, c, v, &t);
  bool sel = q->use_type[0] || q->nouse_type[0] || q->use_uuid[0] || q->nouse_uuid[0];
  char need[64];
  describe_need(c, need, sizeof(need));
  if (t.advertised == 0 && t.other_dialect) return explain_dialect(c, t.other, why, len);
  if (t.advertised == 0) {
    snprintf(why, len, "container %s asks for %s, which no GPU here advertises", c->name,
             c->resource);
    return EXT_R_NOT_ADVERTISED;
  }
  if (t.eligible < c->count) {
    snprintf(why, len, "container %s asks for %d GPUs, the node has %d healthy %s GPUs%s", c->name,
             c->count, t.eligible, c->resource,
             sel ? " matching the pod's GPU type/UUID selection" : "");
    return EXT_R_TOO_FEW_GPUS;
  }
  if (t.need_max > t.cap_max) {
    snprintf(why, len, "container %s asks for %lld MiB per GPU, the largest GPU here has %lld MiB",
             c->name, (long long)(t.need_max / EXT_MIB), (long long)(t.cap_max / EXT_MIB));
    return EXT_R_TOO_LARGE;
  }
  if (t.reserve_short > 0) {
    snprintf(why, len,
             "container %s needs %d GPUs each with %s, %d percent cores and a slot of %s free; %d "
             "have, %d more would without keeping contextReserve (%lld MiB) free per slice "
             "for CUDA contexts",
             c->name, c->count, need, c->cores, c->resource, t.fit, t.reserve_short,
             (long long)(v->reserve / EXT_MIB));
    return EXT_R_NO_ROOM;
  }
  return explain_no_room(c, &t, need, why, len);
}
/* Places every container of r in turn on work (changed). */
static enum ext_reason place_all(const struct pod_req *r, struct node_view *work, ext_picks picks,
                                 char *why, size_t len) {
  for (int i = 0; i < r->n; i++) {
    if (!pick_ctr(r, &r->c[i], work, picks[i])) return explain(r, &r->c[i], work, why, len);
    for (int k = 0; k < r->c[i].count; k++) gpu_take(&r->c[i], &work->g[picks[i][k]]);
  }
  return EXT_R_NONE;
}

enum ext_reason ext_pod_misfit(const struct pod_req *r, const struct node_view *v, ext_picks picks,
                               char *why, size_t len) {
  if (v->foreign) return ext_foreign_misfit(r, v, why, len); /* a count, no GPUs of ours */
  if (r->n == 1) { /* the common case: one container's GPUs are distinct, no copy needed */
    if (pick_ctr(r, &r->c[0], v, picks[0])) return EXT_R_NONE;
    return explain(r, &r->c[0], v, why, len);
  }
  struct node_view work; /* a later container sees what the earlier ones took */
  ext_view_copy(&work, v);
  return place_all(r, &work, picks, why, len);
}

bool ext_pod_fits(const struct pod_req *r, const struct node_view *v, ext_picks picks, char *why,
                  size_t len) {
  return ext_pod_misfit(r, v, picks, why, len) == EXT_R_NONE;
}

/* ---- the assignment bind writes ---- */

json_object *ext_assignment(const char *node, const struct pod_req *r, const struct node_view *v,
                            ext_picks picks, struct vg_err *err) {
  struct vg_assignment a = {{0}, 0, NULL};
  struct node_view work; /* a GPU shared by two containers: the second sees the first */
  ext_view_copy(&work, v);
  snprintf(a.node, sizeof(a.node), "%s", node);
  for (int i = 0; i < r->n; i++) {
    const struct ctr_req *c = &r->c[i];
    struct vg_assign_ctr *ac = vg_assign_add_ctr(&a, c->name, c->resource);
    if (ac == NULL) {
      vg_assign_free(&a);
      vg_err_set(err, "assignment: out of memory or too many containers");
      return NULL;
    }
    for (int k = 0; k < c->count; k++) {
      struct gpu_view *g = &work.g[picks[i][k]];
      struct vg_assign_gpu *o = &ac->gpu[ac->ngpus++];
      snprintf(o->uuid, sizeof(o->uuid), "%s", g->uuid);
      o->index = g->index;
      o->memory = need_mem(c, g, res_for(c, g));
      o->cores = c->cores;
      gpu_take(c, g);
    }
  }
  json_object *o = vg_assign_to_json(&a, err);
  vg_assign_free(&a);
  return o;
}

/* ---- the placement core's view, for scoring ---- */

int ext_free_milli(const struct gpu_view *g) {
  if (!g->healthy || g->exclusive || g->mem <= 0) return 0;
  double fc = (100.0 - g->cores_used) / 100.0;
  double fm = (double)(g->mem - g->mem_used) / (double)g->mem;
  int milli = (int)floor(VG_MILLI * (fc < fm ? fc : fm));
  return milli < 0 ? 0 : milli;
}

/* The node (v) and one container (c) in the core's terms. */
static void to_core_several(const struct node_view *v, const struct pod_req *r, struct vg_node *n,
                            struct vg_pod *p);

static void core_of(const struct node_view *v, const struct ctr_req *c, struct vg_node *n,
                    struct vg_pod *p) {
  memset(n, 0, sizeof(*n));
  memset(p, 0, sizeof(*p));
  n->cpu_cap = v->cpu_alloc >= 0 ? v->cpu_alloc : EXT_UNREPORTED;
  n->mem_cap = v->mem_alloc >= 0 ? v->mem_alloc : EXT_UNREPORTED;
  n->cpu_free = n->cpu_cap > v->cpu_req ? n->cpu_cap - v->cpu_req : 0;
  n->mem_free = n->mem_cap > v->mem_req ? n->mem_cap - v->mem_req : 0;
  n->model = -1;
  const struct gpu_view *first = NULL;
  for (int j = 0; j < v->n; j++) {
    n->gpu_free[n->ngpu++] = ext_free_milli(&v->g[j]);
    if (!first && c && res_for(c, &v->g[j]) && v->g[j].mem > 0) first = &v->g[j];
  }
  if (!c) return;
  double fc = c->cores / 100.0;
  double fm = first ? (double)need_mem(c, first, res_for(c, first)) / (double)first->mem : 1.0;
  int milli = (int)ceil(VG_MILLI * (fc > fm ? fc : fm));
  p->num_gpu = c->count;
  p->gpu_milli = milli < 1 ? 1 : milli > VG_MILLI ? VG_MILLI : milli;
}

void ext_to_core(const struct node_view *v, const struct pod_req *r, struct vg_node *n,
                 struct vg_pod *p) {
  if (r->n > 1) {
    to_core_several(v, r, n, p);
  } else {
    core_of(v, r->n ? &r->c[0] : NULL, n, p);
  }
  p->cpu = r->cpu;
  p->mem = r->mem;
}

uint32_t ext_models_mask(const struct pod_req *q, const char (*models)[VG_SCHED_NAME_MAX],
                         int nmodels) {
  if (!q->use_type[0] && !q->nouse_type[0]) return 0; /* any model */
  uint32_t mask = 0;
  for (int m = 0; m < nmodels && m < 32; m++) {
    struct gpu_view g = {.type = ""};
    snprintf(g.type, sizeof(g.type), "%s", models[m]);
    if (selected(q, &g)) mask |= 1u << m;
  }
  return mask ? mask : 1u << 31; /* selects no known model: nothing matches */
}

/* ext_to_core for a pod with several GPU containers. */
static void to_core_several(const struct node_view *v, const struct pod_req *r, struct vg_node *n,
                            struct vg_pod *p) {
  /* Several GPU containers: the core places one request per pod, so the pod
   * is scored as its largest container on the node after the others took
   * their GPUs (ext_pod_fits found that they fit). */
  int main = 0;
  for (int i = 1; i < r->n; i++)
    if (r->c[i].count > r->c[main].count) main = i;
  struct pod_req rest = *r;
  rest.n = 0;
  for (int i = 0; i < r->n; i++)
    if (i != main) rest.c[rest.n++] = r->c[i];
  struct node_view work;
  ext_picks picks;
  char why[8];
  ext_view_copy(&work, v);
  if (!place_all(&rest, &work, picks, why, sizeof(why))) ext_view_copy(&work, v);
  core_of(&work, &r->c[main], n, p);
}

/* ---- resize (extender_resize.c) ---- */

static const struct gpu_view *gpu_named(const struct node_view *v, const char *uuid) {
  for (int j = 0; j < v->n; j++)
    if (strcmp(v->g[j].uuid, uuid) == 0) return &v->g[j];
  return NULL;
}

static const struct res_view *res_named(const struct gpu_view *g, const char *name) {
  for (int k = 0; k < g->nres; k++)
    if (strcmp(g->res[k].name, name) == 0) return &g->res[k];
  return NULL;
}

/* One GPU of a resize: the slice `was` becomes (mem, cores) while the other
 * slices on g stay; v includes `was` itself. The placement rules of
 * gpu_fits, seen from a slice that is already there. */
static bool resize_gpu_fits(const struct node_view *v, const struct gpu_view *g,
                            const struct res_view *r, const struct vg_assign_gpu *was, int64_t mem,
                            int cores, char *why, size_t len) {
  char a[32], b[32], c[32];
  int64_t others_mem = g->mem_used - was->memory;
  int others_cores = g->cores_used - was->cores, others = g->slices - 1;
  bool grows = mem > was->memory || cores > was->cores;
  if (grows && !g->healthy) {
    snprintf(why, len, "GPU %s is unhealthy: nothing more is placed on it", g->uuid);
  } else if (mem > r->memory - others_mem && others == 0) {
    snprintf(why, len, "GPU %s: %s does not fit in the %s its slices may use", g->uuid,
             vg_format_size((uint64_t)mem, c, sizeof(c)),
             vg_format_size((uint64_t)r->memory, b, sizeof(b)));
  } else if (mem > r->memory - others_mem) {
    snprintf(why, len,
             "GPU %s: %d other slice(s) hold %s of the %s its slices may use; %s does not fit",
             g->uuid, others, vg_format_size((uint64_t)others_mem, a, sizeof(a)),
             vg_format_size((uint64_t)r->memory, b, sizeof(b)),
             vg_format_size((uint64_t)mem, c, sizeof(c)));
  } else if (v->reserve > 0 && others > 0 &&
             (int64_t)(others + 1) > (r->memory - others_mem - mem) / v->reserve) {
    snprintf(why, len,
             "GPU %s: %s would leave less than %s free per slice for CUDA contexts "
             "(contextReserve, docs/memory.md)",
             g->uuid, vg_format_size((uint64_t)mem, a, sizeof(a)),
             vg_format_size((uint64_t)v->reserve, b, sizeof(b)));
  } else if (others_cores + cores > r->cores) {
    snprintf(why, len, "GPU %s: other slices hold %d %% of its compute; %d %% more does not fit",
             g->uuid, others_cores, cores);
  } else if (cores >= 100 && others > 0) {
    snprintf(why, len, "GPU %s: 100 %% compute needs the GPU to itself; %d other slice(s) share it",
             g->uuid, others);
  } else {
    return true;
  }
  return false;
}

bool ext_resize_fits(const struct node_view *v, const struct vg_assign_ctr *c,
                     const struct vg_resize_request *q, char *why, size_t len) {
  for (int k = 0; k < c->ngpus; k++) {
    const struct vg_assign_gpu *was = &c->gpu[k];
    const struct gpu_view *g = gpu_named(v, was->uuid);
    const struct res_view *r = g ? res_named(g, c->resource) : NULL;
    if (g == NULL) {
      snprintf(why, len, "GPU %s is no longer in the node's inventory", was->uuid);
      return false;
    }
    if (r == NULL || r->dialect != VG_DIALECT_VGPU) {
      snprintf(why, len,
               "container %s holds %s, whose slices are counted in device IDs the kubelet "
               "allocated; only vgpu-dialect slices (memory and cores per GPU) can be resized",
               c->name, c->resource);
      return false;
    }
    if (!resize_gpu_fits(v, g, r, was, vg_resize_memory(q, was), vg_resize_cores(q, was), why, len))
      return false;
  }
  return true;
}
