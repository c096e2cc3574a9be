/*
 * deadline.h -- the clock readings deadlines are made of: "now + ms" as a
 * struct timespec, for the timed waits (pthread_cond_timedwait,
 * pthread_mutex_timedlock) that take an absolute time, and now in
 * milliseconds on the monotonic clock, for deadlines and durations kept as
 * numbers. One spelling of each, which five and three files wrote out.
 * Header-only: libvgpu, which links common/ hidden, gains no symbol.
 */
#ifndef VG_DEADLINE_H
#define VG_DEADLINE_H

#include <stdint.h>
#include <time.h>

/* The time ms milliseconds from now on clock (the one the wait measures:
 * CLOCK_REALTIME for pthread_mutex_timedlock and default condition
 * variables, CLOCK_MONOTONIC for those set to it). */
static inline struct timespec vg_deadline_after(clockid_t clock, uint64_t ms) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  ts.tv_sec += (time_t)(ms / 1000);
  ts.tv_nsec += (long)(ms % 1000) * 1000000L;
  if (ts.tv_nsec >= 1000000000L) {
    ts.tv_sec++;
    ts.tv_nsec -= 1000000000L;
  }
  return ts;
}

/* Now on CLOCK_MONOTONIC, in milliseconds. */
static inline uint64_t vg_monotonic_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

#endif
