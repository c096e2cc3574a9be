/* handler.c -- vgpu-webhook's endpoints, without the sockets (server.h). */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "review.h"
#include "server.h"

static void text(struct vg_wh_reply *out, unsigned status, const char *body, const char *type) {
  out->status = status;
  out->body = strdup(body);
  out->content_type = type;
  out->result = VG_WH_R_INVALID;
}

void vg_wh_handle(const struct vg_wh_resources *res, const struct vg_wh_writers *w,
                  struct vg_wh_metrics *m, const char *method, const char *url, const char *body,
                  size_t len, struct vg_wh_reply *out) {
  memset(out, 0, sizeof(*out));
  const char *plain = "text/plain; charset=utf-8";
  bool mutate = strcmp(url, "/mutate") == 0;
  if (mutate || strcmp(url, "/validate") == 0) {
    if (strcmp(method, "POST") != 0) return text(out, 405, "POST an AdmissionReview\n", plain);
    vg_wh_review_as(mutate ? VG_WH_MUTATE : VG_WH_VALIDATE, body, len, res, w, out);
    atomic_fetch_add(&m->reviews[out->result], 1);
    return;
  }
  if (strcmp(method, "GET") != 0)
    return text(out, 405, "GET /healthz or /metrics; POST /mutate or /validate\n", plain);
  if (strcmp(url, "/healthz") == 0) return text(out, 200, "ok\n", plain);
  if (strcmp(url, "/metrics") == 0) {
    out->status = 200;
    out->body = vg_wh_metrics_render(m);
    out->content_type = "text/plain; version=0.0.4";
    return;
  }
  text(out, 404, "no such endpoint (POST /mutate, /validate; GET /healthz, /metrics)\n", plain);
}
