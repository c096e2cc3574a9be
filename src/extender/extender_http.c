/*
 * extender_http.c -- the extender's HTTP server: libmicrohttpd (httpd.h),
 * bodies collected up to a limit (413 beyond) and handed to vg_ext_handle.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "extender.h"
#include "httpd.h"

struct vg_ext_server {
  struct MHD_Daemon *d;
  struct vg_ext *x;
  size_t max_body;
  int port;
};

static enum MHD_Result reply(struct MHD_Connection *conn, int status, char *body,
                             const char *type) {
  return vg_httpd_reply(conn, (unsigned)status, body, body ? strlen(body) : 0, type);
}

static enum MHD_Result too_big(struct MHD_Connection *conn, size_t max) {
  char msg[256];
  snprintf(msg, sizeof(msg),
           "{\"Error\":\"request body over %zu MiB (--max-body-mib): with nodeCacheCapable: "
           "false kube-scheduler sends every Node; raise the limit or set it true\"}",
           max >> 20);
  return reply(conn, 413, strdup(msg), "application/json");
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *conn, const char *url,
                               const char *method, const char *version, const char *upload,
                               size_t *upload_size, void **con_cls) {
  (void)version;
  struct vg_ext_server *s = cls;
  switch (vg_httpd_body_next(conn, con_cls, upload, upload_size, s->max_body)) {
    case VG_HTTPD_MORE:
      return MHD_YES;
    case VG_HTTPD_TOO_BIG:
      return too_big(conn, s->max_body);
    case VG_HTTPD_FAIL:
      return MHD_NO;
    case VG_HTTPD_DONE:
      break;
  }
  const struct vg_httpd_body *b = *con_cls;
  char *out = NULL;
  const char *type = "application/json";
  int status = vg_ext_handle(s->x, method, url, b->body.data, b->body.len, &out, &type);
  if (!out) return MHD_NO;
  return reply(conn, status, out, type);
}

struct vg_ext_server *vg_ext_server_start(struct vg_ext *x, const char *listen,
                                          const struct vg_ext_server_limits *l,
                                          struct vg_err *err) {
  struct sockaddr_in sa;
  if (!vg_httpd_parse_listen("--listen", listen, &sa, err)) return NULL;
  struct vg_ext_server *s = calloc(1, sizeof(*s));
  if (!s) {
    vg_err_set(err, "out of memory");
    return NULL;
  }
  s->x = x;
  s->max_body = l->max_body > 0 ? l->max_body : VG_EXT_MAX_BODY;
  /* 16 threads: a filter at --cache-ttl-ms 0 waits on the API server, and
   * kube-scheduler's binds run in parallel. */
  struct vg_httpd_options o = {.handler = handler,
                               .handler_cls = s,
                               .completed = vg_httpd_body_free,
                               .timeout_s = l->idle_timeout_s > 0 ? l->idle_timeout_s : 60,
                               .threads = 16};
  s->d = vg_httpd_start(&sa, &o, &s->port, err);
  if (!s->d) {
    free(s);
    return NULL;
  }
  return s;
}

int vg_ext_server_port(const struct vg_ext_server *s) { return s->port; }

void vg_ext_server_stop(struct vg_ext_server *s) {
  if (!s) return;
  MHD_stop_daemon(s->d);
  free(s);
}
