/*
 * metrics_http.h -- the node agent's HTTP endpoint (libmicrohttpd):
 * GET /metrics (Prometheus text, metrics.h) and GET /healthz, on httpd.h's
 * epoll thread pool; a render takes no lock a scrape could hold for long,
 * so two threads keep a slow scraper from holding up the kubelet's probe.
 */
#ifndef VG_AGENT_METRICS_HTTP_H
#define VG_AGENT_METRICS_HTTP_H

#include "err.h"
#include "metrics.h"

struct vg_metrics_server;

/* Listens on "ADDR:PORT" (IPv4; port 0 picks a free one). src is borrowed
 * and must outlive the server. NULL with err on a bad address or a port in
 * use. */
struct vg_metrics_server *vg_metrics_server_start(const char *listen,
                                                  const struct vg_metrics_sources *src,
                                                  struct vg_err *err);
int vg_metrics_server_port(const struct vg_metrics_server *s);
void vg_metrics_server_stop(struct vg_metrics_server *s);

#endif
