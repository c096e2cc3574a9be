/*
 * render_aliyun.c -- `kubectl inspect gpushare [-d]` as Aliyun's plugin
 * prints it (seed 002; docs/inspect.md), because users
 * script against that table: the same headers, columns, padding and dash
 * lines, so seed 002's cluster gives seed 002's text byte for byte
 * (tests/inspect/golden/gpushare-mib.txt). What vgpu knows beyond it (the
 * compute share, cordoned nodes, unhealthy GPUs) is in `-o wide`
 * (render_wide.c).
 *
 * Kept from Aliyun, quirks included:
 *   - the unit in the GPU headers (`GPU0(Allocated MiB/Total MiB)`), none on
 *     `GPU Memory`; a GPU a node does not have reads 0/0;
 *   - PENDING(Allocated) (Pending(Allocated) with -d): memory held by
 *     containers that have no vgpu.io/assigned entry, blank when none;
 *   - the summary's dash line is the first row's length, cells joined by
 *     tabs, plus 41 (what seed 002 shows: 87 dashes after a 46-byte row);
 *     -d's is the first node's pod rows as Aliyun buffers them ("pod\tns\t"
 *     and "N\t" per column, a newline each) plus 10, on every node;
 *   - with -d, "Allocated :" and "Total :" are rows of the pod table, so
 *     their numbers line up under NAMESPACE.
 * Differences: nodes in name order (Aliyun's is random), no line ends in
 * spaces (Go's tabwriter pads the empty cells that end some -d lines), and
 * "?" where a resource carries no memory size (NVIDIA time-slicing
 * replicas), which Aliyun never meets.
 */
#include <stdlib.h>

#include "render.h"

static void summary_row(struct grid *g, const struct ins_cluster *cl, const struct ins_node *n) {
  int col = 0;
  grid_row(g);
  grid_set(g, col++, "%s", n->name);
  grid_set(g, col++, "%s", n->ip);
  for (int i = 0; i < cl->max_gpus; i++, col++) {
    if (i < n->ngpus)
      grid_set(g, col, "%lld/%lld", n->gpu[i].u_alloc, n->gpu[i].u_total);
    else
      grid_set(g, col, "0/0");
  }
  if (cl->any_unassigned) {
    if (n->nun > 0) ins_unassigned_cell(g, col, n, NULL);
    col++;
  }
  ins_node_memory_cell(g, col, n);
}

static int render_summary(const struct ins_cluster *cl, FILE *out) {
  struct grid g;
  int col = 0;
  const char *u = cl->unit_name;
  grid_init(&g, 2 + cl->max_gpus + (cl->any_unassigned ? 1 : 0) + 1);
  grid_row(&g);
  grid_set(&g, col++, "NAME");
  grid_set(&g, col++, "IPADDRESS");
  for (int i = 0; i < cl->max_gpus; i++)
    grid_set(&g, col++, "GPU%d(Allocated %s/Total %s)", i, u, u);
  if (cl->any_unassigned) grid_set(&g, col++, "PENDING(Allocated)");
  grid_set(&g, col, "GPU Memory");
  for (int i = 0; i < cl->nnodes; i++) summary_row(&g, cl, &cl->node[i]);
  int oom = g.oom;
  size_t dashes = grid_raw_len(&g, 1) + 41;
  if (!oom) grid_print(&g, out, -1);
  grid_free(&g);
  if (oom) return -1;
  for (size_t i = 0; i < dashes; i++) fputc('-', out);
  ins_cluster_total(cl, false, out);
  return 0;
}

/* ---- -d: one block per node, one row per pod ---- */

static void pod_row(struct grid *g, const struct ins_node *n, const struct ins_pod_row *r) {
  grid_row(g);
  grid_set(g, 0, "%s", r->pod);
  grid_set(g, 1, "%s", r->ns);
  for (int i = 0; i < n->ngpus; i++) grid_set(g, 2 + i, "%lld", ins_pod_gpu_memory(n, r, i, NULL));
  if (n->nun > 0) ins_unassigned_cell(g, 2 + n->ngpus, n, r);
}

/* Aliyun's buffer of pod rows: each row's cells, each ended by a tab, and a
 * newline. */
static size_t pod_rows_len(const struct grid *g, int npods) {
  size_t len = 0;
  for (int r = 1; r <= npods; r++) len += grid_raw_len(g, r) + 2;
  return len;
}

/* *dashes: 0 until the first node sets it (Aliyun sizes every node's dash
 * line from the first node's rows). */
static int render_node_detail(const struct ins_node *n, size_t *dashes, FILE *out) {
  int npods = 0;
  struct ins_pod_row *rows = ins_node_pods(n, &npods);
  if (rows == NULL) return -1;
  struct grid g;
  ins_detail_grid(&g, n, NULL, "Pending");
  for (int r = 0; r < npods; r++) pod_row(&g, n, &rows[r]);
  free(rows);
  if (*dashes == 0) *dashes = pod_rows_len(&g, npods) + 10;
  grid_row(&g);
  grid_set(&g, 0, "Allocated :");
  grid_set(&g, 1, "%lld (%d%%)", n->u_alloc, ins_pct(n->u_alloc, n->u_total));
  grid_row(&g);
  grid_set(&g, 0, "Total :");
  grid_set(&g, 1, "%lld", n->u_total);
  fprintf(out, "\nNAME:       %s\nIPADDRESS:  %s\n\n", n->name, n->ip);
  int oom = g.oom;
  if (!oom) grid_print(&g, out, -1);
  grid_free(&g);
  if (oom) return -1;
  for (size_t i = 0; i < *dashes; i++) fputc('-', out);
  fputc('\n', out);
  return 0;
}

static int render_detail(const struct ins_cluster *cl, FILE *out) {
  size_t dashes = 0;
  for (int i = 0; i < cl->nnodes; i++)
    if (render_node_detail(&cl->node[i], &dashes, out) != 0) return -1;
  ins_cluster_total(cl, true, out);
  return 0;
}

int ins_render_aliyun(const struct ins_cluster *cl, bool detail, FILE *out, struct vg_err *err) {
  int rc = detail ? render_detail(cl, out) : render_summary(cl, out);
  return rc == 0 ? 0 : vg_err_set(err, "out of memory while rendering the table");
}
