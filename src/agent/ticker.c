/* ticker.c -- see ticker.h. */
#include "ticker.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "deadline.h"

struct vg_ticker {
  unsigned interval_ms;
  void (*fn)(void *);
  void *arg;
  pthread_mutex_t lock; /* stopping */
  pthread_cond_t cond;
  pthread_t thread;
  bool stopping;
};

static void *tick_main(void *arg) {
  struct vg_ticker *t = arg;
  pthread_mutex_lock(&t->lock);
  while (!t->stopping) {
    pthread_mutex_unlock(&t->lock);
    t->fn(t->arg);
    pthread_mutex_lock(&t->lock);
    struct timespec until = vg_deadline_after(CLOCK_MONOTONIC, t->interval_ms);
    while (!t->stopping && pthread_cond_timedwait(&t->cond, &t->lock, &until) != ETIMEDOUT) {
    }
  }
  pthread_mutex_unlock(&t->lock);
  return NULL;
}

struct vg_ticker *vg_ticker_start(unsigned interval_ms, void (*fn)(void *), void *arg,
                                  const char *what, struct vg_err *err) {
  struct vg_ticker *t = calloc(1, sizeof(*t));
  if (t == NULL) {
    vg_err_set(err, "%s: out of memory", what);
    return NULL;
  }
  t->interval_ms = interval_ms, t->fn = fn, t->arg = arg;
  pthread_mutex_init(&t->lock, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&t->cond, &ca);
  pthread_condattr_destroy(&ca);
  int rc = pthread_create(&t->thread, NULL, tick_main, t);
  if (rc != 0) {
    vg_err_set(err, "%s: cannot start its thread: %s", what, strerror(rc));
    pthread_cond_destroy(&t->cond);
    pthread_mutex_destroy(&t->lock);
    free(t);
    return NULL;
  }
  return t;
}

void vg_ticker_stop(struct vg_ticker *t) {
  if (t == NULL) return;
  pthread_mutex_lock(&t->lock);
  t->stopping = true;
  pthread_cond_broadcast(&t->cond);
  pthread_mutex_unlock(&t->lock);
  pthread_join(t->thread, NULL);
  pthread_cond_destroy(&t->cond);
  pthread_mutex_destroy(&t->lock);
  free(t);
}
