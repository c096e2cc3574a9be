/*
 * table.c -- the numbers the table shows, in one display unit.
 *
 * The unit is the gpushare dialect's when a node advertises its memory
 * resource (so `3` in a pod spec reads as `3` in the table):
 * GiB or MiB from the inventory's unit; MiB otherwise, and MiB when nodes
 * disagree. Every figure is converted once, and every total is the sum of
 * the figures shown, so the columns always add up:
 *   - a GPU's total is rounded down (never more than it has),
 *   - each container's share is rounded up (never less than it holds),
 *   - a GPU's allocated = sum of its containers' shares,
 *   - a node's allocated = its GPUs' allocated + its unassigned memory,
 *   - the cluster's = sum of the nodes'; percent truncated like Aliyun's.
 * Compute is shown as percent points: allocated = sum of the assigned
 * cores, total = 100 per GPU.
 */
#include <string.h>

#include "dialect.h"
#include "inspect.h"

#define MIB ((int64_t)1 << 20)
#define GIB ((int64_t)1 << 30)

static void choose_unit(struct ins_cluster *cl) {
  int64_t unit = 0;
  bool mixed = false;
  for (int i = 0; i < cl->nnodes; i++) {
    for (int r = 0; r < cl->node[i].nres; r++) {
      const struct ins_resource *res = &cl->node[i].res[r];
      if (strcmp(res->dialect, "gpushare") != 0 || (res->unit != GIB && res->unit != MIB)) continue;
      if (unit != 0 && unit != res->unit) mixed = true;
      unit = res->unit;
    }
  }
  if (mixed)
    ins_warn(cl, "nodes use both GiB and MiB for %s; showing MiB",
             vg_resource_name(cl->names, VG_ROLE_GPUSHARE_MEM));
  cl->unit = unit == GIB && !mixed ? GIB : MIB;
  cl->unit_name = cl->unit == GIB ? "GiB" : "MiB";
}

static long long down(int64_t bytes, int64_t unit) { return (long long)(bytes / unit); }

static long long up(int64_t bytes, int64_t unit) { return (long long)((bytes + unit - 1) / unit); }

static void compute_gpu(struct ins_gpu *g, int64_t unit) {
  g->u_total = down(g->memory, unit);
  g->u_alloc = 0;
  g->cores_alloc = 0;
  for (int i = 0; i < g->nuses; i++) {
    g->uses[i].u_memory = up(g->uses[i].memory, unit);
    g->u_alloc += g->uses[i].u_memory;
    g->cores_alloc += g->uses[i].cores;
  }
}

static void compute_node(struct ins_node *n, int64_t unit) {
  n->u_total = n->u_alloc = n->u_unassigned = 0;
  n->cores_alloc = 0;
  n->cores_total = 100 * n->ngpus;
  n->unknown_memory = false;
  for (int i = 0; i < n->ngpus; i++) {
    compute_gpu(&n->gpu[i], unit);
    n->u_total += n->gpu[i].u_total;
    n->u_alloc += n->gpu[i].u_alloc;
    n->cores_alloc += n->gpu[i].cores_alloc;
  }
  for (int i = 0; i < n->nun; i++) {
    struct ins_unassigned *u = &n->un[i];
    u->u_memory = u->memory >= 0 ? up(u->memory, unit) : 0;
    if (u->memory < 0) n->unknown_memory = true;
    n->u_unassigned += u->u_memory;
  }
  n->u_alloc += n->u_unassigned;
}

void ins_compute(struct ins_cluster *cl) {
  choose_unit(cl);
  cl->u_total = cl->u_alloc = 0;
  cl->max_gpus = 0;
  cl->any_unassigned = false;
  for (int i = 0; i < cl->nnodes; i++) {
    struct ins_node *n = &cl->node[i];
    compute_node(n, cl->unit);
    cl->u_total += n->u_total;
    cl->u_alloc += n->u_alloc;
    if (n->ngpus > cl->max_gpus) cl->max_gpus = n->ngpus;
    if (n->nun > 0) cl->any_unassigned = true;
  }
  cl->percent = cl->u_total > 0 ? (int)(cl->u_alloc * 100 / cl->u_total) : 0;
}
