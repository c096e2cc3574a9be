/* estimate.c -- see estimate.h. Process-local; used only while a compute
 * limit is set, so its mutex never touches unlimited workloads. */
#include "estimate.h"

#include <pthread.h>
#include <string.h>

#include "hooks.h"

#define SHAPES 1024     /* open-addressing table of learnt shapes */
#define PENDING 64      /* samples in flight */
#define SAMPLE_EVERY 32 /* after the first few, sample one launch in 32 */
#define FIRST_SAMPLES 4
#define POLL_EVERY 16 /* look for finished samples once per 16 launches */
#define SPARE 8       /* event pairs kept for reuse */

#define WINDOW 8 /* the estimate is the least of the last 8 samples */

struct shape_stat {
  struct vg_shape shape;
  bool used;
  uint64_t estimate_ns;
  uint64_t launches;
  uint32_t samples;
  uint64_t recent[WINDOW];
};

/* A pair of events kept for reuse; events belong to the context that made
 * them, so a pair is reused only in that context. */
struct spare {
  CUevent start, end;
  CUcontext ctx;
};

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static struct shape_stat g_shapes[SHAPES];
static struct vg_sample g_pending[PENDING];
static CUcontext g_pending_ctx[PENDING];
static unsigned g_pending_head, g_pending_count, g_polls;
static struct spare g_spare[SPARE];
static unsigned g_nspare;

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

/* Low samples are believed at once, high ones an eighth at a time: other
 * tenants' kernels can only stretch a sample. */
static void learn(struct shape_stat *s, uint64_t ns) {
  if (s->samples == 0 || ns < s->estimate_ns)
    s->estimate_ns = ns;
  else
    s->estimate_ns += (ns - s->estimate_ns) / 8;
  s->samples++;
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
    sample->start = g_spare[i].start;
    sample->end = g_spare[i].end;
    g_spare[i] = g_spare[--g_nspare];
    return true;
  }
  if (VG_CU(cuEventCreate, &sample->start, CU_EVENT_DEFAULT) != CUDA_SUCCESS) return false;
  if (VG_CU(cuEventCreate, &sample->end, CU_EVENT_DEFAULT) == CUDA_SUCCESS) return true;
  VG_CU(cuEventDestroy_v2, sample->start);
  return false;
}

/* Lock held. Keeps the pair for reuse when there is room. */
static void drop_events(struct vg_sample *sample, CUcontext ctx) {
  if (g_nspare < SPARE && ctx != NULL) {
    g_spare[g_nspare++] = (struct spare){sample->start, sample->end, ctx};
  } else {
    VG_CU(cuEventDestroy_v2, sample->start);
    VG_CU(cuEventDestroy_v2, sample->end);
  }
  sample->active = false;
}

static uint64_t elapsed_ns(const struct vg_sample *sample) {
  float ms = 0;
  if (VG_CU(cuEventElapsedTime, &ms, sample->start, sample->end) != CUDA_SUCCESS || ms < 0)
    return 0;
  return (uint64_t)((double)ms * 1e6);
}

uint64_t vg_estimate_before(const struct vg_shape *shape, struct vg_sample *sample) {
  memset(sample, 0, sizeof(*sample));
  pthread_mutex_lock(&g_lock);
  struct shape_stat *s = lookup(shape);
  uint64_t estimate = s != NULL ? s->estimate_ns : 0;
  bool due = s != NULL && (s->samples < FIRST_SAMPLES || s->launches % SAMPLE_EVERY == 0) &&
             g_pending_count < PENDING;
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
  if (!sample->active || record(sample->start, stream, ptsz) == CUDA_SUCCESS) return;
  CUcontext ctx = current_ctx();
  pthread_mutex_lock(&g_lock);
  drop_events(sample, ctx);
  pthread_mutex_unlock(&g_lock);
}

uint64_t vg_estimate_after(struct vg_sample *sample, CUstream stream, bool ptsz, bool launched) {
  if (!sample->active) return 0;
  CUcontext ctx = current_ctx();
  bool recorded = launched && record(sample->end, stream, ptsz) == CUDA_SUCCESS;
  uint64_t measured = 0;
  if (recorded && sample->wait && VG_CU(cuEventSynchronize, sample->end) == CUDA_SUCCESS)
    measured = elapsed_ns(sample);
  pthread_mutex_lock(&g_lock);
  if (measured > 0) {
    struct shape_stat *s = lookup(&sample->shape);
    if (s != NULL) learn(s, measured);
  }
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

void vg_estimate_poll(void) {
  pthread_mutex_lock(&g_lock);
  if (g_pending_count == 0 || ++g_polls % POLL_EVERY != 0) {
    pthread_mutex_unlock(&g_lock);
    return;
  }
  while (g_pending_count > 0) {
    struct vg_sample *p = &g_pending[g_pending_head];
    CUresult q = VG_CU(cuEventQuery, p->end);
    if (q == CUDA_ERROR_NOT_READY) break;
    uint64_t ns = q == CUDA_SUCCESS ? elapsed_ns(p) : 0;
    struct shape_stat *s = ns > 0 ? lookup(&p->shape) : NULL;
    if (s != NULL) learn(s, ns);
    drop_events(p, g_pending_ctx[g_pending_head]);
    g_pending_head = (g_pending_head + 1) % PENDING;
    g_pending_count--;
  }
  pthread_mutex_unlock(&g_lock);
}
