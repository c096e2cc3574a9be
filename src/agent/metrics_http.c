/* metrics_http.c -- see metrics_http.h. */
#include "metrics_http.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "httpd.h"

struct vg_metrics_server {
  struct MHD_Daemon *daemon;
  const struct vg_metrics_sources *src;
  int port;
};

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned status, char *body, size_t len,
                             const char *type) {
  return vg_httpd_reply(conn, status, body, len, type);
}

static enum MHD_Result text(struct MHD_Connection *conn, unsigned status, const char *msg) {
  char *body = strdup(msg);
  return reply(conn, status, body, body != NULL ? strlen(body) : 0, "text/plain");
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *conn, const char *url,
                               const char *method, const char *version, const char *upload,
                               size_t *upload_len, void **con_cls) {
  (void)version, (void)upload, (void)con_cls;
  struct vg_metrics_server *s = cls;
  if (*upload_len != 0) return text(conn, 400, "no body expected\n");
  bool get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
  if (strcmp(url, "/healthz") == 0) return get ? text(conn, 200, "ok\n") : text(conn, 405, "GET\n");
  if (strcmp(url, "/metrics") != 0) return text(conn, 404, "not found: try /metrics\n");
  if (!get) return text(conn, 405, "GET\n");
  size_t len = 0;
  char *body = vg_metrics_render(s->src, &len);
  if (body == NULL) return text(conn, 500, "out of memory\n");
  return reply(conn, 200, body, len, "text/plain; version=0.0.4; charset=utf-8");
}

struct vg_metrics_server *vg_metrics_server_start(const char *listen,
                                                  const struct vg_metrics_sources *src,
                                                  struct vg_err *err) {
  struct sockaddr_in sa;
  if (!vg_httpd_parse_listen("--metrics", listen, &sa, err)) return NULL;
  struct vg_metrics_server *s = calloc(1, sizeof(*s));
  if (s == NULL) {
    vg_err_set(err, "--metrics: out of memory");
    return NULL;
  }
  s->src = src;
  struct vg_httpd_options o = {.handler = handler, .handler_cls = s, .timeout_s = 30, .threads = 2};
  s->daemon = vg_httpd_start(&sa, &o, &s->port, err);
  if (s->daemon == NULL) {
    free(s);
    return NULL;
  }
  return s;
}

int vg_metrics_server_port(const struct vg_metrics_server *s) { return s->port; }

void vg_metrics_server_stop(struct vg_metrics_server *s) {
  if (s == NULL) return;
  MHD_stop_daemon(s->daemon);
  free(s);
}
