/* estimate.c -- see estimate.h. Process-local; used only while a compute
 * limit is set, so its mutex never touches unlimited workloads. */
#include "estimate.h"

#include <pthread.h>
#include <string.h>
#include <time.h>

#include "hooks.h"

#define SHAPES 1024     /* open-addressing table of learnt shapes */
#define PENDING 64      /* samples in flight */
#define SAMPLE_EVERY 32 /* after the first few, sample one launch in 32 */
#define FIRST_SAMPLES 4
#define SAMPLE_GPU_NS (50ULL * 1000 * 1000) /* ... or after 50 ms of its GPU time */
#define POLL_EVERY 16                       /* look for finished samples once per 16 launches */
#define POLL_NS (5ULL * 1000 * 1000)        /* ... or once 5 ms went by */
#define SPARE 8                             /* event pairs kept for reuse */

#define WINDOW 8           /* the estimate is the least of the last 8 samples */
#define OVERHEAD_WINDOW 16 /* an event's own time: the least of the last 16 */

struct shape_stat {
  struct vg_shape shape;
  bool used;
  uint64_t span_ns; /* the least recent span, the event's own time in it */
  uint64_t launches;
  uint64_t sampled_at; /* launches when the last sample was taken */
  uint32_t samples;
  uint64_t recent[WINDOW];
};

/* A sample's events kept for reuse; events belong to the context that made
 * them, so they are reused only in that context. */
struct spare {
  CUevent pre, start, end;
  CUcontext ctx;
};

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static struct shape_stat g_shapes[SHAPES];
static struct vg_sample g_pending[PENDING];
static CUcontext g_pending_ctx[PENDING];
static unsigned g_pending_head, g_pending_count, g_polls;
static uint64_t g_polled_ns; /* CLOCK_MONOTONIC_COARSE of the last poll */
static struct spare g_spare[SPARE];
static unsigned g_nspare;
static uint64_t g_overhead[OVERHEAD_WINDOW]; /* recent pre -> start spans */
static unsigned g_noverhead;
static uint64_t g_overhead_ns; /* the least of them, kept off the launch path */

static bool same(const struct vg_shape *a, const struct vg_shape *b) {
  return a->object == b->object && a->blocks == b->blocks && a->threads == b->threads;
}

/* The slot for shape, claimed if new; NULL when the table is full. */
static struct shape_stat *lookup(const struct vg_shape *shape) {
  uint64_t h = (shape->object ^ (shape->blocks * 0x9E3779B97F4A7C15ULL) ^ shape->threads) *
               0xBF58476D1CE4E5B9ULL;
  for (unsigned probe = 0; probe < SHAPES; probe++) {
    struct shape_stat *s = &g_shapes[(h + probe) % SHAPES];
    if (s->used && same(&s->shape, shape)) return s;
    if (!s->used) {
      s->used = true;
      s->shape = *shape;
      return s;
    }
  }
  return NULL;
}

static uint64_t least_of(const uint64_t *v, unsigned n) {
  uint64_t least = UINT64_MAX;
  for (unsigned i = 0; i < n; i++)
    if (v[i] < least) least = v[i];
  return least;
}

/* The least of the last WINDOW samples: other tenants' kernels can only
 * stretch a sample (it then includes their work queued ahead of ours), so
 * the least is the nearest to our own time, and one unstretched sample in
 * WINDOW is enough. Sliding, so a kernel that really became slower is
 * followed after WINDOW samples. (Until this change the estimate crept up an
 * eighth of each higher sample, and under a busy neighbour it settled well
 * above the kernel's time: a tenant at 30 % with 30 ms kernels got 21 %.)
 * The event's own time is learnt the same way, over every shape: on an
 * idle stream pre -> start also holds the host's gap between the two
 * records, and behind other work it is the event alone. Lock held. */
static void learn(struct shape_stat *s, uint64_t span, uint64_t overhead) {
  s->recent[s->samples % WINDOW] = span;
  s->samples++;
  s->span_ns = least_of(s->recent, s->samples < WINDOW ? s->samples : WINDOW);
  g_overhead[g_noverhead++ % OVERHEAD_WINDOW] = overhead;
  g_overhead_ns =
      least_of(g_overhead, g_noverhead < OVERHEAD_WINDOW ? g_noverhead : OVERHEAD_WINDOW);
}

/* What a submission of shape s costs: its span less one event's own time,
 * but at least half the span -- a kernel shorter than an event is charged
 * something rather than nothing. 0 while nothing is known. Lock held. */
static uint64_t cost_of(const struct shape_stat *s) {
  uint64_t overhead = g_overhead_ns;
  if (overhead > s->span_ns / 2) overhead = s->span_ns / 2;
  return s->span_ns - overhead;
}

/* Sampling: the first FIRST_SAMPLES launches of a shape, then one in
 * SAMPLE_EVERY, or sooner once SAMPLE_GPU_NS of its estimated GPU time went
 * by since the last sample -- so long kernels are re-measured as often, in
 * time, as short ones, and a window of WINDOW samples spans a similar time
 * whatever the kernel length. Short kernels keep one in 32. */
static bool sample_due(const struct shape_stat *s) {
  if (s->samples < FIRST_SAMPLES) return true;
  uint64_t since = s->launches - s->sampled_at;
  return since >= SAMPLE_EVERY || since * s->span_ns >= SAMPLE_GPU_NS;
}

static CUresult record(CUevent ev, CUstream stream, bool ptsz) {
  return ptsz ? VG_CU(cuEventRecord_ptsz, ev, stream) : VG_CU(cuEventRecord, ev, stream);
}

static CUcontext current_ctx(void) {
  CUcontext ctx = NULL;
  VG_CU(cuCtxGetCurrent, &ctx);
  return ctx;
}

/* Lock held. A spare pair of this context, or a new one. */
static bool make_events(struct vg_sample *sample, CUcontext ctx) {
  for (unsigned i = 0; i < g_nspare; i++) {
    if (g_spare[i].ctx != ctx) continue;
    sample->pre = g_spare[i].pre;
    sample->start = g_spare[i].start;
    sample->end = g_spare[i].end;
    g_spare[i] = g_spare[--g_nspare];
    return true;
  }
  CUevent *ev[3] = {&sample->pre, &sample->start, &sample->end};
  for (int made = 0; made < 3; made++) {
    if (VG_CU(cuEventCreate, ev[made], CU_EVENT_DEFAULT) == CUDA_SUCCESS) continue;
    while (made-- > 0) VG_CU(cuEventDestroy_v2, *ev[made]);
    return false;
  }
  return true;
}

/* Lock held. Keeps the pair for reuse when there is room. */
static void drop_events(struct vg_sample *sample, CUcontext ctx) {
  if (g_nspare < SPARE && ctx != NULL) {
    g_spare[g_nspare++] = (struct spare){sample->pre, sample->start, sample->end, ctx};
  } else {
    VG_CU(cuEventDestroy_v2, sample->pre);
    VG_CU(cuEventDestroy_v2, sample->start);
    VG_CU(cuEventDestroy_v2, sample->end);
  }
  sample->active = false;
}

static bool elapsed_ns(CUevent from, CUevent to, uint64_t *ns) {
  float ms = 0;
  if (VG_CU(cuEventElapsedTime, &ms, from, to) != CUDA_SUCCESS || ms < 0) return false;
  *ns = (uint64_t)((double)ms * 1e6);
  return true;
}

/* The sample's span (start -> end) and its event's own time (pre ->
 * start); false when the driver cannot tell (the sample is dropped). */
static bool measure(const struct vg_sample *sample, uint64_t *span, uint64_t *overhead) {
  return elapsed_ns(sample->start, sample->end, span) && *span > 0 &&
         elapsed_ns(sample->pre, sample->start, overhead);
}

uint64_t vg_estimate_before(const struct vg_shape *shape, struct vg_sample *sample) {
  memset(sample, 0, sizeof(*sample));
  pthread_mutex_lock(&g_lock);
  struct shape_stat *s = lookup(shape);
  uint64_t estimate = s != NULL && s->samples > 0 ? cost_of(s) : 0;
  bool due = s != NULL && sample_due(s) && g_pending_count < PENDING;
  if (due) s->sampled_at = s->launches;
  if (s != NULL) s->launches++;
  CUcontext ctx = due ? current_ctx() : NULL;
  due = due && make_events(sample, ctx);
  pthread_mutex_unlock(&g_lock);
  if (!due) return estimate;
  sample->shape = *shape;
  sample->active = true;
  sample->wait = estimate == 0;
  return estimate;
}

void vg_estimate_start(struct vg_sample *sample, CUstream stream, bool ptsz) {
  if (!sample->active) return;
  if (record(sample->pre, stream, ptsz) == CUDA_SUCCESS &&
      record(sample->start, stream, ptsz) == CUDA_SUCCESS)
    return;
  CUcontext ctx = current_ctx();
  pthread_mutex_lock(&g_lock);
  drop_events(sample, ctx);
  pthread_mutex_unlock(&g_lock);
}

/* Folds a finished sample into its shape's estimate; returns the shape's
 * cost now (0 if the sample could not be read). Lock held. */
static uint64_t fold(const struct vg_sample *sample) {
  uint64_t span, overhead;
  if (!measure(sample, &span, &overhead)) return 0;
  struct shape_stat *s = lookup(&sample->shape);
  if (s == NULL) return 0;
  learn(s, span, overhead);
  return cost_of(s);
}

uint64_t vg_estimate_after(struct vg_sample *sample, CUstream stream, bool ptsz, bool launched) {
  if (!sample->active) return 0;
  CUcontext ctx = current_ctx();
  bool recorded = launched && record(sample->end, stream, ptsz) == CUDA_SUCCESS;
  bool waited = recorded && sample->wait && VG_CU(cuEventSynchronize, sample->end) == CUDA_SUCCESS;
  uint64_t measured = 0;
  pthread_mutex_lock(&g_lock);
  if (waited) measured = fold(sample);
  if (recorded && measured == 0 && g_pending_count < PENDING) {
    unsigned at = (g_pending_head + g_pending_count++) % PENDING;
    g_pending[at] = *sample;
    g_pending_ctx[at] = ctx;
    sample->active = false;
  } else {
    drop_events(sample, ctx);
  }
  pthread_mutex_unlock(&g_lock);
  return measured;
}

static uint64_t coarse_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Every POLL_EVERY launches, or sooner when POLL_NS went by: with kernels of
 * tens of ms, 16 launches are seconds, and a first sample stretched by a
 * neighbour's kernel was believed that long (a tenant at 30 % with 30 ms
 * kernels ran at half its share for its first 3 s). */
void vg_estimate_poll(void) {
  pthread_mutex_lock(&g_lock);
  if (g_pending_count == 0) {
    pthread_mutex_unlock(&g_lock);
    return;
  }
  uint64_t now = coarse_ns();
  if (++g_polls % POLL_EVERY != 0 && now - g_polled_ns < POLL_NS) {
    pthread_mutex_unlock(&g_lock);
    return;
  }
  g_polled_ns = now;
  while (g_pending_count > 0) {
    struct vg_sample *p = &g_pending[g_pending_head];
    CUresult q = VG_CU(cuEventQuery, p->end);
    if (q == CUDA_ERROR_NOT_READY) break;
    if (q == CUDA_SUCCESS) fold(p);
    drop_events(p, g_pending_ctx[g_pending_head]);
    g_pending_head = (g_pending_head + 1) % PENDING;
    g_pending_count--;
  }
  pthread_mutex_unlock(&g_lock);
}
