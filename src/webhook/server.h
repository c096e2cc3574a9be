/*
 * server.h -- vgpu-webhook's HTTPS server: POST /mutate and /validate (review.h),
 * GET /healthz, GET /metrics, on libmicrohttpd with GnuTLS.
 *
 * Certificate rotation: vg_wh_server_reload, called every few seconds by
 * main, reads the files again when they changed and, once GnuTLS accepts
 * the new pair, starts a daemon with it on the same listening socket
 * (MHD_quiesce_daemon hands the socket over) and stops the old one, which
 * finishes the requests it holds. A pair that does not load leaves the old
 * one serving.
 */
#ifndef VG_WH_SERVER_H
#define VG_WH_SERVER_H

#include "err.h"
#include "metrics.h"
#include "resources.h"
#include "writers.h"

struct vg_wh_server_options {
  const char *listen;               /* ADDR:PORT */
  const char *cert_file, *key_file; /* PEM */
  const struct vg_wh_resources *resources;
  const struct vg_wh_writers *writers; /* of the guarded annotations (decide.h) */
};

struct vg_wh_server;

struct vg_wh_server *vg_wh_server_start(const struct vg_wh_server_options *o, struct vg_err *err);
int vg_wh_server_port(const struct vg_wh_server *s);
/* 1: reloaded, 0: files unchanged, -1: changed but not loaded (err says
 * why; the previous certificate keeps serving). */
int vg_wh_server_reload(struct vg_wh_server *s, struct vg_err *err);
const struct vg_wh_metrics *vg_wh_server_metrics(const struct vg_wh_server *s);
void vg_wh_server_stop(struct vg_wh_server *s);

/* The HTTP layer without the sockets (tests, fuzzing): method and url as
 * libmicrohttpd gives them. */
void vg_wh_handle(const struct vg_wh_resources *res, const struct vg_wh_writers *w,
                  struct vg_wh_metrics *m, const char *method, const char *url, const char *body,
                  size_t len, struct vg_wh_reply *out);

#endif
