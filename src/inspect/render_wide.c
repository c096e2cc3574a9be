/*
 * render_wide.c -- `kubectl inspect gpushare -o wide [-d]`: Aliyun's table
 * (render_aliyun.c) with what vgpu knows beyond it. Differences, each on
 * purpose:
 *   - the unit in every header (`GPU0(Allocated/Total)`, `GPU Memory(MiB)`);
 *   - a cordoned node says "(SchedulingDisabled)" after its name (e#8: its
 *     memory still counts, pods hold it, but nothing new will land there);
 *   - a GPU a node does not have is "-" (Aliyun: 0/0), an unhealthy GPU says
 *     so in its cell;
 *   - Aliyun's PENDING column is UNASSIGNED: memory held on the node by
 *     containers without a vgpu.io/assigned entry;
 *   - a GPU Cores(%) column (and a Cores line with -d): the compute share,
 *     shown next to a pod's memory as "3803 (25%)";
 *   - the dash line is as wide as the first row plus 20.
 * Numbers come from table.c; this file only lays them out.
 */
#include <stdlib.h>
#include <string.h>

#include "render.h"

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
    if (n->nun > 0) ins_unassigned_cell(g, col, n, NULL);
    col++;
  }
  ins_node_memory_cell(g, col++, n);
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
  ins_cluster_total(cl, false, out);
  return 0;
}

/* ---- -d: one block per node, one row per pod ---- */

static void pod_cells(struct grid *g, const struct ins_node *n, const struct ins_pod_row *r) {
  int col = 2;
  for (int i = 0; i < n->ngpus; i++, col++) {
    int cores = 0;
    long long mem = ins_pod_gpu_memory(n, r, i, &cores);
    grid_set(g, col, cores > 0 ? "%lld (%d%%)" : "%lld", mem, cores);
  }
  if (n->nun > 0) ins_unassigned_cell(g, col, n, r);
}

static int render_node_detail(const struct ins_node *n, const char *unit, FILE *out) {
  int npods = 0;
  struct ins_pod_row *rows = ins_node_pods(n, &npods);
  if (rows == NULL) return -1;
  struct grid g;
  ins_detail_grid(&g, n, unit, "UNASSIGNED");
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
          ins_pct(n->u_alloc, n->u_total), n->u_total);
  fprintf(out, "Cores :      %d/%d (%d%%)\n", n->cores_alloc, n->cores_total,
          ins_pct(n->cores_alloc, n->cores_total));
  for (size_t i = 0; i < len + 10; i++) fputc('-', out);
  fputc('\n', out);
  return 0;
}

static int render_detail(const struct ins_cluster *cl, FILE *out) {
  for (int i = 0; i < cl->nnodes; i++)
    if (render_node_detail(&cl->node[i], cl->unit_name, out) != 0) return -1;
  ins_cluster_total(cl, true, out);
  return 0;
}

int ins_render_wide(const struct ins_cluster *cl, bool detail, FILE *out, struct vg_err *err) {
  int rc = detail ? render_detail(cl, out) : render_summary(cl, out);
  return rc == 0 ? 0 : vg_err_set(err, "out of memory while rendering the table");
}
