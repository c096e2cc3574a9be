/* extender_metrics.c -- see extender_metrics.h. */
#include "extender_metrics.h"

#include "extender_int.h"
#include "prom.h"

#include <stdio.h>
#include <string.h>

static const double g_bounds[EXT_LAT_BUCKETS] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                                 0.05,   0.1,   0.25,   0.5,   1,    5};
static const char *const g_verbs[] = {"filter", "prioritize", "bind"};

/* The labels, by class: docs/metrics.md names the same; a new class adds
 * its label here (test_ext_metrics checks every class has one). */
static const char *const g_reason_names[EXT_R_COUNT] = {
    [EXT_R_NONE] = NULL,
    [EXT_R_NO_INVENTORY] = "no_inventory",
    [EXT_R_BAD_INVENTORY] = "bad_inventory",
    [EXT_R_NODE_GONE] = "node_not_found",
    [EXT_R_NOT_ADVERTISED] = "not_advertised",
    [EXT_R_TOO_FEW_GPUS] = "too_few_gpus",
    [EXT_R_TOO_LARGE] = "too_large",
    [EXT_R_NO_ROOM] = "no_room",
    [EXT_R_CCE_MODE] = "cce_mode",
    [EXT_R_BAD_ASSIGNMENT] = "bad_assignment",
    [EXT_R_API] = "api",
    [EXT_R_FOREIGN_ASK] = "foreign_node",
    [EXT_R_FOREIGN_FULL] = "foreign_node_full",
    [EXT_R_OTHER] = "other",
};
static const char *const g_bind_names[EXT_B_COUNT] = {
    [EXT_B_CONFLICT] = "conflict",
    [EXT_B_NO_FIT] = "no_fit",
    [EXT_B_API] = "api",
    [EXT_B_OTHER] = "other",
};

const char *ext_reason_label(enum ext_reason r) {
  return (unsigned)r < EXT_R_COUNT ? g_reason_names[r] : NULL;
}

const char *ext_bind_fail_label(enum ext_bind_fail b) {
  return (unsigned)b < EXT_B_COUNT ? g_bind_names[b] : NULL;
}

enum ext_bind_fail ext_bind_fail_of(enum ext_reason r) {
  return r == EXT_R_API                        ? EXT_B_API
         : r == EXT_R_OTHER || r == EXT_R_NONE ? EXT_B_OTHER
                                               : EXT_B_NO_FIT;
}

void ext_metrics_observe(struct ext_metrics *m, int verb, double seconds) {
  for (int b = 0; b < EXT_LAT_BUCKETS; b++)
    if (seconds <= g_bounds[b]) m->lat_bucket[verb][b]++;
  m->lat_count[verb]++;
  m->lat_sum[verb] += seconds;
}

/* One family whose samples differ by one label: name{label="v[i]"} n[i]. */
static void by_label(struct vg_textbuf *out, struct vg_textbuf *l, const char *name,
                     const char *label, const char *const *v, const uint64_t *n, int count) {
  for (int i = 0; i < count; i++) {
    vg_textbuf_reset(l);
    vg_prom_label(l, label, v[i]);
    vg_prom_sample(out, name, l, "%llu", (unsigned long long)n[i]);
  }
}

static void histogram(struct vg_textbuf *out, struct vg_textbuf *l, const struct ext_metrics *m) {
  static const char name[] = "vgpu_scheduler_request_duration_seconds";
  vg_prom_family(out, name, "histogram",
                 "Time vgpu-scheduler spent answering a verb (from request to answer).");
  for (int v = 0; v < 3; v++) {
    for (int b = 0; b <= EXT_LAT_BUCKETS; b++) {
      char le[32] = "+Inf";
      if (b < EXT_LAT_BUCKETS) snprintf(le, sizeof(le), "%g", g_bounds[b]);
      vg_textbuf_reset(l);
      vg_prom_label(l, "verb", g_verbs[v]);
      vg_prom_label(l, "le", le);
      vg_prom_sample(
          out, "vgpu_scheduler_request_duration_seconds_bucket", l, "%llu",
          (unsigned long long)(b < EXT_LAT_BUCKETS ? m->lat_bucket[v][b] : m->lat_count[v]));
    }
    vg_textbuf_reset(l);
    vg_prom_label(l, "verb", g_verbs[v]);
    vg_prom_sample(out, "vgpu_scheduler_request_duration_seconds_sum", l, "%.6f", m->lat_sum[v]);
    vg_prom_sample(out, "vgpu_scheduler_request_duration_seconds_count", l, "%llu",
                   (unsigned long long)m->lat_count[v]);
  }
}

/* What the scheduler last read of each node (inventory minus assignments),
 * summed over its GPUs: one series per node, not per GPU, so a 1,000-node
 * cluster stays a few thousand lines. */
static void allocation(struct vg_textbuf *out, struct vg_textbuf *l,
                       const struct node_entry *nodes) {
  static const struct {
    const char *name, *help;
  } fam[] = {
      {"vgpu_scheduler_node_gpus", "Healthy GPUs of the node, as last read."},
      {"vgpu_scheduler_node_gpu_memory_bytes", "GPU memory of the node's healthy GPUs."},
      {"vgpu_scheduler_node_gpu_memory_allocated_bytes",
       "GPU memory the node's assignments hold, as last read."},
      {"vgpu_scheduler_node_gpu_slices", "Assignment entries (GPU slices) on the node."},
  };
  for (size_t k = 0; k < sizeof(fam) / sizeof(fam[0]); k++) {
    vg_prom_family(out, fam[k].name, "gauge", fam[k].help);
    for (const struct node_entry *e = nodes; e != NULL; e = e->next) {
      if (e->rc != 0 || (e->at.tv_sec == 0 && e->at.tv_nsec == 0)) continue;
      long long v = 0;
      for (int g = 0; g < e->view.n; g++) {
        const struct gpu_view *gv = &e->view.g[g];
        if (!gv->healthy) continue;
        v += k == 0 ? 1 : k == 1 ? gv->mem : k == 2 ? gv->mem_used : gv->slices;
      }
      vg_textbuf_reset(l);
      vg_prom_label(l, "node", e->name);
      vg_prom_sample(out, fam[k].name, l, "%lld", v);
    }
  }
}

/* A family of one unlabelled counter. */
static void counter(struct vg_textbuf *out, const char *name, const char *help, uint64_t n) {
  vg_prom_family(out, name, "counter", help);
  vg_prom_sample(out, name, NULL, "%llu", (unsigned long long)n);
}

char *ext_metrics_render(const struct ext_metrics *m, const struct node_entry *nodes) {
  struct vg_textbuf out = {0}, l = {0};
  vg_prom_family(&out, "vgpu_scheduler_requests_total", "counter", "Extender requests, by verb.");
  by_label(&out, &l, "vgpu_scheduler_requests_total", "verb", g_verbs, m->requests, 3);
  counter(&out, "vgpu_scheduler_bad_requests_total",
          "Requests answered 4xx: a body that is not the verb's arguments (not JSON, no Pod).",
          m->bad_requests);
  counter(&out, "vgpu_scheduler_refused_pods_total",
          "Filters of a pod whose request no node can satisfy (bad values, two dialects, ...): "
          "every node failed with the reason.",
          m->refused_pods);
  counter(&out, "vgpu_scheduler_bad_assignments_total",
          "Bound pods found with an unreadable vgpu.io/assigned (each counted once): what they "
          "may hold is counted used, and the scheduler log says what.",
          m->bad_assignments);
  histogram(&out, &l, m);
  vg_prom_family(&out, "vgpu_scheduler_node_failures_total", "counter",
                 "Nodes filter turned down, by reason (the reason text is in FailedNodes).");
  /* From EXT_R_NONE + 1: "no failure" is no class of its own. */
  by_label(&out, &l, "vgpu_scheduler_node_failures_total", "reason", g_reason_names + 1,
           m->node_failures + 1, EXT_R_COUNT - 1);
  vg_prom_family(&out, "vgpu_scheduler_binds_total", "counter", "Binds, by result.");
  static const char *const ok[] = {"ok"};
  by_label(&out, &l, "vgpu_scheduler_binds_total", "result", ok, &m->binds_ok, 1);
  by_label(&out, &l, "vgpu_scheduler_binds_total", "result", g_bind_names, m->bind_failures,
           EXT_B_COUNT);
  counter(&out, "vgpu_scheduler_assigned_gpus_total",
          "GPU slices written into vgpu.io/assigned by successful binds.", m->assigned_gpus);
  static const char *const watched[] = {"pods", "nodes"};
  vg_prom_family(&out, "vgpu_scheduler_watch_up", "gauge",
                 "1 while the watch that drops changed node views is streaming (else views live "
                 "--cache-ttl-ms).");
  for (int w = 0; w < 2; w++) {
    vg_textbuf_reset(&l);
    vg_prom_label(&l, "resource", watched[w]);
    vg_prom_sample(&out, "vgpu_scheduler_watch_up", &l, "%d", m->watch_up[w]);
  }
  vg_prom_family(&out, "vgpu_scheduler_watch_events_total", "counter",
                 "Watch events received, by resource.");
  by_label(&out, &l, "vgpu_scheduler_watch_events_total", "resource", watched, m->watch_events, 2);
  allocation(&out, &l, nodes);
  vg_textbuf_free(&l);
  return vg_textbuf_take(&out, NULL);
}
