/*
 * extender_workload.c -- the target workload the node policy optimises for,
 * learned from the pods the scheduler is asked to place.
 *
 * FGD and the vgpu policy score a node by how its free GPUs serve the
 * workload to come (frag.c). vgpu-replay knows that workload: the trace. The
 * extender used to assume a fixed list (quarter, half, whole, two and four
 * GPUs, no CPU, no memory); with it the product placed pods a point or more
 * worse than the model (issue 28). Here each pod the extender filters is
 * counted once (by UID) as a task type (CPU, per-GPU milli, GPU count,
 * model constraint; memory kept as the type's weighted mean, as
 * workload.c does for a trace), with a weight that halves every
 * half_life pods seen after it: the mix follows a cluster whose workload
 * changes, and a burst of one shape fades. The built-in list is only a
 * start-up prior worth prior_pods pods, so it is outweighed within the
 * first hundred or so pods.
 *
 * Pods are counted when filtered, not when bound: the pods that fail are
 * the ones the measure must keep room for, and a trace's M counts them too.
 * The workload handed to scoring is the heaviest types covering 95 % of the
 * weight (vg_workload_from_types), rebuilt when a new pod was counted --
 * after the first 256 pods, every 32 (rebuild says why).
 *
 * Weights grow instead of decaying (a new pod weighs 2^(seen/half_life));
 * all are rescaled before they overflow.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "extender_int.h"

#define MAX_TYPES 512
#define COVERAGE_PCT 95.0 /* as vgpu-replay builds a trace's workload */
#define SEEN_SET 8192     /* UIDs remembered per generation (two generations) */
#define RESCALE_AT 1e200

struct seen_set { /* open addressing over UID hashes; 0 = empty */
  uint64_t h[SEEN_SET * 2];
  int n;
};

struct ext_learner {
  pthread_mutex_t lock;
  double half_life, prior;
  double scale; /* the weight of the next pod */
  struct vg_task_type types[MAX_TYPES];
  double mem_sum[MAX_TYPES]; /* weighted memory, for the mean */
  int ntypes;
  long long seen;       /* pods counted */
  long long built_seen; /* seen at the last build */
  struct seen_set gen[2];
  int cur;
  struct vg_workload built; /* the last build; stale when dirty */
  bool dirty;
};

static uint64_t uid_hash(const char *s) {
  uint64_t h = 1469598103934665603ULL;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ULL;
  return h ? h : 1;
}

static bool set_has(const struct seen_set *s, uint64_t h) {
  for (size_t i = h & (SEEN_SET * 2 - 1); s->h[i]; i = (i + 1) & (SEEN_SET * 2 - 1))
    if (s->h[i] == h) return true;
  return false;
}

static void set_add(struct seen_set *s, uint64_t h) {
  size_t i = h & (SEEN_SET * 2 - 1);
  while (s->h[i]) i = (i + 1) & (SEEN_SET * 2 - 1);
  s->h[i] = h;
  s->n++;
}

/* Was uid counted already? Remembers it if not. The older generation is
 * dropped when the newer fills, so the last 8,192 to 16,384 pods are known. */
static bool seen_before(struct ext_learner *l, const char *uid) {
  uint64_t h = uid_hash(uid);
  if (set_has(&l->gen[0], h) || set_has(&l->gen[1], h)) return true;
  if (l->gen[l->cur].n >= SEEN_SET) {
    l->cur ^= 1;
    memset(&l->gen[l->cur], 0, sizeof(l->gen[l->cur]));
  }
  set_add(&l->gen[l->cur], h);
  return false;
}

static bool same_key(const struct vg_pod *a, const struct vg_pod *b) {
  return a->cpu == b->cpu && a->gpu_milli == b->gpu_milli && a->num_gpu == b->num_gpu &&
         a->models == b->models;
}

/* The slot for p's type: its own, a new one, or (full) the lightest. */
static int slot_for(struct ext_learner *l, const struct vg_pod *key) {
  int lightest = 0;
  for (int t = 0; t < l->ntypes; t++) {
    if (same_key(&l->types[t].pod, key)) return t;
    if (l->types[t].weight < l->types[lightest].weight) lightest = t;
  }
  int t = l->ntypes < MAX_TYPES ? l->ntypes++ : lightest;
  memset(&l->types[t], 0, sizeof(l->types[t]));
  l->types[t].pod = *key;
  l->mem_sum[t] = 0;
  return t;
}

static void add(struct ext_learner *l, const struct vg_pod *p, double weight) {
  struct vg_pod key = *p;
  if (key.cpu == 0) key.cpu = 100; /* as workload.c: a CPU request of 0 counts as 100m */
  key.mem = 0;
  int t = slot_for(l, &key);
  l->types[t].weight += weight;
  l->types[t].count++;
  l->mem_sum[t] += weight * (double)p->mem;
  l->types[t].pod.mem = (int64_t)llround(l->mem_sum[t] / l->types[t].weight);
  l->dirty = true;
}

struct ext_learner *ext_learner_new(double half_life_pods, double prior_pods) {
  struct ext_learner *l = calloc(1, sizeof(*l));
  if (!l) return NULL;
  pthread_mutex_init(&l->lock, NULL);
  l->half_life = half_life_pods > 0 ? half_life_pods : VG_EXT_WORKLOAD_HALF_LIFE;
  l->prior = prior_pods;
  l->scale = 1;
  /* The prior: the shapes people ask for, equally likely. */
  static const int shapes[][2] = {{1, 250}, {1, 500}, {1, 1000}, {2, 1000}, {4, 1000}};
  for (int i = 0; i < 5; i++)
    add(l, &(struct vg_pod){.num_gpu = shapes[i][0], .gpu_milli = shapes[i][1]}, prior_pods / 5);
  return l;
}

void ext_learner_free(struct ext_learner *l) {
  if (!l) return;
  vg_workload_free(&l->built);
  pthread_mutex_destroy(&l->lock);
  free(l);
}

bool ext_learner_observe(struct ext_learner *l, const char *uid, const struct vg_pod *p) {
  pthread_mutex_lock(&l->lock);
  bool fresh = !seen_before(l, uid);
  if (fresh) {
    l->seen++;
    l->scale *= exp2(1.0 / l->half_life);
    if (l->scale > RESCALE_AT) { /* the same ratios, smaller numbers */
      for (int t = 0; t < l->ntypes; t++) {
        l->types[t].weight /= l->scale;
        l->mem_sum[t] /= l->scale;
      }
      l->scale = 1;
    }
    add(l, p, l->scale);
  }
  pthread_mutex_unlock(&l->lock);
  return fresh;
}

/* Rebuilds l->built when pods were counted since: at once for the first
 * EARLY_PODS (the mix is still forming), else after REBUILD_EVERY more. A
 * build keeps its memo id (vg_workload.memo_id), under which the measures of
 * unchanged nodes are looked up instead of recomputed (frag.c): at 1,213
 * nodes prioritize spent most of its time recomputing them. Lock held. */
#define EARLY_PODS 256
#define REBUILD_EVERY 32
static int rebuild(struct ext_learner *l, struct vg_err *err) {
  if (l->built.types &&
      (!l->dirty || (l->seen >= EARLY_PODS && l->seen - l->built_seen < REBUILD_EVERY)))
    return 0;
  struct vg_workload w;
  if (vg_workload_from_types(&w, l->types, l->ntypes, COVERAGE_PCT, err) != 0) return -1;
  vg_workload_free(&l->built);
  l->built = w;
  l->dirty = false;
  l->built_seen = l->seen;
  return 0;
}

int ext_learner_workload(struct ext_learner *l, struct vg_workload *w, struct vg_err *err) {
  memset(w, 0, sizeof(*w));
  pthread_mutex_lock(&l->lock);
  int rc = rebuild(l, err);
  if (rc == 0) {
    *w = l->built;
    w->types = malloc((size_t)(l->built.n ? l->built.n : 1) * sizeof(*w->types));
    if (w->types)
      memcpy(w->types, l->built.types, (size_t)l->built.n * sizeof(*w->types));
    else
      rc = vg_err_set(err, "out of memory copying the target workload");
  }
  pthread_mutex_unlock(&l->lock);
  return rc;
}

long long ext_learner_seen(struct ext_learner *l) {
  pthread_mutex_lock(&l->lock);
  long long n = l->seen;
  pthread_mutex_unlock(&l->lock);
  return n;
}

static void models_json(struct ext_out *o, uint32_t mask, const char (*models)[VG_SCHED_NAME_MAX],
                        int nmodels) {
  ext_out_lit(o, "[");
  for (int m = 0, k = 0; m < 32; m++) {
    if (!(mask & (1u << m))) continue;
    if (k++) ext_out_lit(o, ",");
    ext_out_str(o, m < nmodels ? models[m] : "(no known model)");
  }
  ext_out_lit(o, "]");
}

char *ext_learner_json(struct ext_learner *l, const char (*models)[VG_SCHED_NAME_MAX],
                       int nmodels) {
  struct ext_out o = {0};
  struct vg_err err = {{0}};
  char num[64];
  pthread_mutex_lock(&l->lock);
  int rc = rebuild(l, &err);
  const char *measure = "";
  vg_vgpu_measure(&l->built, &measure);
  snprintf(num, sizeof(num), "%lld", l->seen);
  ext_out_lit(&o, "{\"podsSeen\":");
  ext_out_lit(&o, num);
  snprintf(num, sizeof(num), "%g", l->half_life);
  ext_out_lit(&o, ",\"halfLifePods\":");
  ext_out_lit(&o, num);
  snprintf(num, sizeof(num), "%g", l->prior);
  ext_out_lit(&o, ",\"priorPods\":");
  ext_out_lit(&o, num);
  snprintf(num, sizeof(num), "%.2f,\"multiGpuPct\":%.2f", l->built.pinned_pct, l->built.multi_pct);
  ext_out_lit(&o, ",\"pinnedPct\":");
  ext_out_lit(&o, num);
  ext_out_lit(&o, ",\"vgpuMeasure\":");
  ext_out_str(&o, measure);
  ext_out_lit(&o, ",\"types\":[");
  for (int t = 0; rc == 0 && t < l->built.n; t++) {
    const struct vg_task_type *ty = &l->built.types[t];
    snprintf(num, sizeof(num), "%s{\"weight\":%.6f,\"cpuMilli\":", t ? "," : "", ty->weight);
    ext_out_lit(&o, num);
    ext_out_int(&o, ty->pod.cpu);
    ext_out_lit(&o, ",\"memoryMiB\":");
    ext_out_int(&o, ty->pod.mem);
    ext_out_lit(&o, ",\"numGpu\":");
    ext_out_int(&o, ty->pod.num_gpu);
    ext_out_lit(&o, ",\"gpuMilli\":");
    ext_out_int(&o, ty->pod.gpu_milli);
    ext_out_lit(&o, ",\"models\":");
    models_json(&o, ty->pod.models, models, nmodels);
    ext_out_lit(&o, "}");
  }
  ext_out_lit(&o, "]}\n");
  pthread_mutex_unlock(&l->lock);
  return ext_out_take(&o);
}
