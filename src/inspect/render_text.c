/*
 * render_text.c -- `kubectl inspect gpushare [-d]` as text, in the layout of
 * Aliyun's kubectl plugin (research/gpushare-timeslicing.md A5), so users of
 * seed 002 read it the same way. Differences, each on purpose:
 *   - nodes in name order (Aliyun's is random), the unit in the header; a
 *     cordoned node says "(SchedulingDisabled)" after its name (e#8: its
 *     memory still counts, pods hold it, but nothing new will land there);
 *   - a GPU a node does not have is "-" (Aliyun: 0/0), an unhealthy GPU says
 *     so in its cell;
 *   - Aliyun's PENDING column is UNASSIGNED: memory held on the node by
 *     containers without a vgpu.io/assigned entry ("?" when the resource has
 *     no memory size, and the node's GPU Memory then reads "N+?/T");
 *   - a GPU Cores(%) column (and a Cores line with -d): the compute share;
 *   - with -d the pod table's headers carry the unit too.
 * Numbers come from table.c; this file only lays them out.
 */
#include <stdlib.h>
#include <string.h>

#include "grid.h"
#include "inspect.h"

static void unassigned_cell(struct grid *g, int col, long long mem, bool unknown) {
  if (unknown && mem == 0)
    grid_set(g, col, "?");
  else
    grid_set(g, col, unknown ? "%lld+?" : "%lld", mem);
}

static void summary_row(struct grid *g, const struct ins_cluster *cl, const struct ins_node *n) {
  int col = 0;
  grid_row(g);
  grid_set(g, col++, n->unschedulable ? "%s (SchedulingDisabled)" : "%s", n->name);
  grid_set(g, col++, "%s", n->ip);
  for (int i = 0; i < cl->max_gpus; i++, col++) {
    if (i >= n->ngpus) {
      grid_set(g, col, "-");
      continue;
    }
    const struct ins_gpu *gpu = &n->gpu[i];
    grid_set(g, col, gpu->healthy ? "%lld/%lld" : "%lld/%lld (Unhealthy)", gpu->u_alloc,
             gpu->u_total);
  }
  if (cl->any_unassigned) {
    if (n->nun > 0) unassigned_cell(g, col, n->u_unassigned, n->unknown_memory);
    col++;
  }
  grid_set(g, col++, n->unknown_memory ? "%lld+?/%lld" : "%lld/%lld", n->u_alloc, n->u_total);
  grid_set(g, col, "%d/%d", n->cores_alloc, n->cores_total);
}

static int render_summary(const struct ins_cluster *cl, FILE *out) {
  struct grid g;
  int col = 0;
  grid_init(&g, 2 + cl->max_gpus + (cl->any_unassigned ? 1 : 0) + 2);
  grid_row(&g);
  grid_set(&g, col++, "NAME");
  grid_set(&g, col++, "IPADDRESS");
  for (int i = 0; i < cl->max_gpus; i++) grid_set(&g, col++, "GPU%d(Allocated/Total)", i);
  if (cl->any_unassigned) grid_set(&g, col++, "UNASSIGNED(Allocated)");
  grid_set(&g, col++, "GPU Memory(%s)", cl->unit_name);
  grid_set(&g, col, "GPU Cores(%%)");
  for (int i = 0; i < cl->nnodes; i++) summary_row(&g, cl, &cl->node[i]);
  int oom = g.oom;
  size_t len = oom ? 0 : grid_print(&g, out, 1);
  grid_free(&g);
  if (oom) return -1;
  for (size_t i = 0; i < len + 20; i++) fputc('-', out);
  fprintf(out, "\nAllocated/Total GPU Memory In Cluster:\n%lld/%lld (%d%%)\n", cl->u_alloc,
          cl->u_total, cl->percent);
  return 0;
}

/* ---- -d: one block per node, one row per pod ---- */

struct pod_row {
  const char *ns, *pod;
};

static int row_cmp(const void *a, const void *b) {
  const struct pod_row *x = a, *y = b;
  int c = strcmp(x->ns, y->ns);
  return c != 0 ? c : strcmp(x->pod, y->pod);
}

static void add_row(struct pod_row *rows, int *n, const char *ns, const char *pod) {
  for (int i = 0; i < *n; i++)
    if (strcmp(rows[i].ns, ns) == 0 && strcmp(rows[i].pod, pod) == 0) return;
  rows[*n].ns = ns;
  rows[(*n)++].pod = pod;
}

/* The distinct pods of node n, sorted; NULL when out of memory. */
static struct pod_row *node_pods(const struct ins_node *n, int *count) {
  int cap = n->nun + 1;
  for (int i = 0; i < n->ngpus; i++) cap += n->gpu[i].nuses;
  struct pod_row *rows = calloc((size_t)cap, sizeof(*rows));
  if (rows == NULL) return NULL;
  *count = 0;
  for (int i = 0; i < n->ngpus; i++)
    for (int k = 0; k < n->gpu[i].nuses; k++)
      add_row(rows, count, n->gpu[i].uses[k].ns, n->gpu[i].uses[k].pod);
  for (int i = 0; i < n->nun; i++) add_row(rows, count, n->un[i].ns, n->un[i].pod);
  qsort(rows, (size_t)*count, sizeof(*rows), row_cmp);
  return rows;
}

static bool same_pod(const struct pod_row *r, const char *ns, const char *pod) {
  return strcmp(r->ns, ns) == 0 && strcmp(r->pod, pod) == 0;
}

static void pod_cells(struct grid *g, const struct ins_node *n, const struct pod_row *r) {
  int col = 2;
  for (int i = 0; i < n->ngpus; i++, col++) {
    long long mem = 0;
    int cores = 0;
    for (int k = 0; k < n->gpu[i].nuses; k++) {
      const struct ins_use *u = &n->gpu[i].uses[k];
      if (!same_pod(r, u->ns, u->pod)) continue;
      mem += u->u_memory;
      cores += u->cores;
    }
    grid_set(g, col, cores > 0 ? "%lld (%d%%)" : "%lld", mem, cores);
  }
  if (n->nun == 0) return;
  long long mem = 0;
  bool unknown = false;
  for (int i = 0; i < n->nun; i++) {
    if (!same_pod(r, n->un[i].ns, n->un[i].pod)) continue;
    mem += n->un[i].u_memory;
    unknown |= n->un[i].memory < 0;
  }
  unassigned_cell(g, col, mem, unknown);
}

static int pct(long long part, long long whole) {
  return whole > 0 ? (int)(part * 100 / whole) : 0;
}

static int render_node_detail(const struct ins_node *n, const char *unit, FILE *out) {
  int npods = 0;
  struct pod_row *rows = node_pods(n, &npods);
  if (rows == NULL) return -1;
  struct grid g;
  grid_init(&g, 2 + n->ngpus + (n->nun > 0 ? 1 : 0));
  grid_row(&g);
  grid_set(&g, 0, "NAME");
  grid_set(&g, 1, "NAMESPACE");
  for (int i = 0; i < n->ngpus; i++) grid_set(&g, 2 + i, "GPU%d(Allocated %s)", i, unit);
  if (n->nun > 0) grid_set(&g, 2 + n->ngpus, "UNASSIGNED(Allocated %s)", unit);
  for (int r = 0; r < npods; r++) {
    grid_row(&g);
    grid_set(&g, 0, "%s", rows[r].pod);
    grid_set(&g, 1, "%s", rows[r].ns);
    pod_cells(&g, n, &rows[r]);
  }
  fprintf(out, "\nNAME:       %s%s\nIPADDRESS:  %s\n\n", n->name,
          n->unschedulable ? " (SchedulingDisabled)" : "", n->ip);
  int oom = g.oom;
  size_t len = oom ? 0 : grid_print(&g, out, npods > 0 ? 1 : 0);
  grid_free(&g);
  free(rows);
  if (oom) return -1;
  fprintf(out, "Allocated :  %lld (%d%%)\nTotal :      %lld\n", n->u_alloc,
          pct(n->u_alloc, n->u_total), n->u_total);
  fprintf(out, "Cores :      %d/%d (%d%%)\n", n->cores_alloc, n->cores_total,
          pct(n->cores_alloc, n->cores_total));
  for (size_t i = 0; i < len + 10; i++) fputc('-', out);
  fputc('\n', out);
  return 0;
}

static int render_detail(const struct ins_cluster *cl, FILE *out) {
  for (int i = 0; i < cl->nnodes; i++)
    if (render_node_detail(&cl->node[i], cl->unit_name, out) != 0) return -1;
  fprintf(out, "\n\nAllocated/Total GPU Memory In Cluster:  %lld/%lld (%d%%)\n", cl->u_alloc,
          cl->u_total, cl->percent);
  return 0;
}

int ins_render_text(const struct ins_cluster *cl, bool detail, FILE *out, struct vg_err *err) {
  if (cl->nnodes == 0) {
    fputs(
        "No GPU nodes: no node carries the vgpu.io/gpu-inventory annotation "
        "(is vgpu-device-plugin running?)\n",
        out);
    return 0;
  }
  int rc = detail ? render_detail(cl, out) : render_summary(cl, out);
  return rc == 0 ? 0 : vg_err_set(err, "out of memory while rendering the table");
}
