/*
 * ticker.h -- a thread that does one job at once and then every interval,
 * until stopped: the node agent's periodic passes (slot_gc.h, audit.h).
 * Stopping wakes the thread out of its wait, so it never takes an interval.
 */
#ifndef VG_AGENT_TICKER_H
#define VG_AGENT_TICKER_H

#include "err.h"

struct vg_ticker;

/* Starts the thread calling fn(arg). NULL with err when it cannot start. */
struct vg_ticker *vg_ticker_start(unsigned interval_ms, void (*fn)(void *), void *arg,
                                  const char *what, struct vg_err *err);
/* Waits for a running fn to return, stops the thread and frees. NULL is fine. */
void vg_ticker_stop(struct vg_ticker *t);

#endif
