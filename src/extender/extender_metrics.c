/* extender_metrics.c -- see extender_metrics.h. */
#include "extender_metrics.h"

#include "extender_int.h"

#include <stdio.h>
#include <stdlib.h>
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

static void family(FILE *f, const char *name, const char *type, const char *help) {
  fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void histogram(FILE *f, const struct ext_metrics *m) {
  family(f, "vgpu_scheduler_request_duration_seconds", "histogram",
         "Time vgpu-scheduler spent answering a verb (from request to answer).");
  for (int v = 0; v < 3; v++) {
    for (int b = 0; b < EXT_LAT_BUCKETS; b++)
      fprintf(f, "vgpu_scheduler_request_duration_seconds_bucket{verb=\"%s\",le=\"%g\"} %llu\n",
              g_verbs[v], g_bounds[b], (unsigned long long)m->lat_bucket[v][b]);
    fprintf(f, "vgpu_scheduler_request_duration_seconds_bucket{verb=\"%s\",le=\"+Inf\"} %llu\n",
            g_verbs[v], (unsigned long long)m->lat_count[v]);
    fprintf(f, "vgpu_scheduler_request_duration_seconds_sum{verb=\"%s\"} %.6f\n", g_verbs[v],
            m->lat_sum[v]);
    fprintf(f, "vgpu_scheduler_request_duration_seconds_count{verb=\"%s\"} %llu\n", g_verbs[v],
            (unsigned long long)m->lat_count[v]);
  }
}

/* What the scheduler last read of each node (inventory minus assignments),
 * summed over its GPUs: one series per node, not per GPU, so a 1,000-node
 * cluster stays a few thousand lines. */
static void allocation(FILE *f, const struct node_entry *nodes) {
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
    family(f, fam[k].name, "gauge", fam[k].help);
    for (const struct node_entry *e = nodes; e != NULL; e = e->next) {
      if (e->rc != 0 || (e->at.tv_sec == 0 && e->at.tv_nsec == 0)) continue;
      long long v = 0;
      for (int g = 0; g < e->view.n; g++) {
        const struct gpu_view *gv = &e->view.g[g];
        if (!gv->healthy) continue;
        v += k == 0 ? 1 : k == 1 ? gv->mem : k == 2 ? gv->mem_used : gv->slices;
      }
      fprintf(f, "%s{node=\"%s\"} %lld\n", fam[k].name, e->name, v);
    }
  }
}

char *ext_metrics_render(const struct ext_metrics *m, const struct node_entry *nodes) {
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  if (f == NULL) return NULL;
  family(f, "vgpu_scheduler_requests_total", "counter", "Extender requests, by verb.");
  for (int v = 0; v < 3; v++)
    fprintf(f, "vgpu_scheduler_requests_total{verb=\"%s\"} %llu\n", g_verbs[v],
            (unsigned long long)m->requests[v]);
  family(f, "vgpu_scheduler_bad_requests_total", "counter",
         "Requests answered 4xx: a body that is not the verb's arguments (not JSON, no Pod).");
  fprintf(f, "vgpu_scheduler_bad_requests_total %llu\n", (unsigned long long)m->bad_requests);
  family(f, "vgpu_scheduler_refused_pods_total", "counter",
         "Filters of a pod whose request no node can satisfy (bad values, two dialects, ...): "
         "every node failed with the reason.");
  fprintf(f, "vgpu_scheduler_refused_pods_total %llu\n", (unsigned long long)m->refused_pods);
  family(f, "vgpu_scheduler_bad_assignments_total", "counter",
         "Bound pods found with an unreadable vgpu.io/assigned (each counted once): what they "
         "may hold is counted used, and the scheduler log says what.");
  fprintf(f, "vgpu_scheduler_bad_assignments_total %llu\n", (unsigned long long)m->bad_assignments);
  histogram(f, m);
  family(f, "vgpu_scheduler_node_failures_total", "counter",
         "Nodes filter turned down, by reason (the reason text is in FailedNodes).");
  for (int r = EXT_R_NONE + 1; r < EXT_R_COUNT; r++)
    fprintf(f, "vgpu_scheduler_node_failures_total{reason=\"%s\"} %llu\n", g_reason_names[r],
            (unsigned long long)m->node_failures[r]);
  family(f, "vgpu_scheduler_binds_total", "counter", "Binds, by result.");
  fprintf(f, "vgpu_scheduler_binds_total{result=\"ok\"} %llu\n", (unsigned long long)m->binds_ok);
  for (int b = 0; b < EXT_B_COUNT; b++)
    fprintf(f, "vgpu_scheduler_binds_total{result=\"%s\"} %llu\n", g_bind_names[b],
            (unsigned long long)m->bind_failures[b]);
  family(f, "vgpu_scheduler_assigned_gpus_total", "counter",
         "GPU slices written into vgpu.io/assigned by successful binds.");
  fprintf(f, "vgpu_scheduler_assigned_gpus_total %llu\n", (unsigned long long)m->assigned_gpus);
  static const char *const watched[] = {"pods", "nodes"};
  family(f, "vgpu_scheduler_watch_up", "gauge",
         "1 while the watch that drops changed node views is streaming (else views live "
         "--cache-ttl-ms).");
  for (int w = 0; w < 2; w++)
    fprintf(f, "vgpu_scheduler_watch_up{resource=\"%s\"} %d\n", watched[w], m->watch_up[w]);
  family(f, "vgpu_scheduler_watch_events_total", "counter", "Watch events received, by resource.");
  for (int w = 0; w < 2; w++)
    fprintf(f, "vgpu_scheduler_watch_events_total{resource=\"%s\"} %llu\n", watched[w],
            (unsigned long long)m->watch_events[w]);
  allocation(f, nodes);
  if (fclose(f) != 0) {
    free(text);
    return NULL;
  }
  return text;
}
