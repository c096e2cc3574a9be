/* metrics_http.c -- see metrics_http.h. */
#include "metrics_http.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <microhttpd.h>

struct vg_metrics_server {
  struct MHD_Daemon *daemon;
  const struct vg_metrics_sources *src;
  int port;
};

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned status, char *body, size_t len,
                             const char *type) {
  struct MHD_Response *r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
  if (r == NULL) {
    free(body);
    return MHD_NO;
  }
  MHD_add_response_header(r, "Content-Type", type);
  enum MHD_Result ret = MHD_queue_response(conn, status, r);
  MHD_destroy_response(r);
  return ret;
}

static enum MHD_Result text(struct MHD_Connection *conn, unsigned status, const char *msg) {
  char *body = strdup(msg);
  return body != NULL ? reply(conn, status, body, strlen(body), "text/plain") : MHD_NO;
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
  char addr[64];
  const char *colon = strrchr(listen, ':');
  char *end = NULL;
  long port = colon != NULL ? strtol(colon + 1, &end, 10) : -1;
  if (colon == NULL || (size_t)(colon - listen) >= sizeof(addr) || colon[1] == '\0' ||
      *end != '\0' || port < 0 || port > 65535) {
    vg_err_set(err, "--metrics \"%s\": not ADDR:PORT (e.g. 0.0.0.0:9400)", listen);
    return NULL;
  }
  snprintf(addr, sizeof(addr), "%.*s", (int)(colon - listen), listen);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  if (inet_pton(AF_INET, addr, &sa.sin_addr) != 1) {
    vg_err_set(err, "--metrics \"%s\": \"%s\" is not an IPv4 address", listen, addr);
    return NULL;
  }
  struct vg_metrics_server *s = calloc(1, sizeof(*s));
  if (s == NULL) {
    vg_err_set(err, "--metrics: out of memory");
    return NULL;
  }
  s->src = src;
  s->daemon = MHD_start_daemon(
      MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_ERROR_LOG,
      (uint16_t)port, NULL, NULL, handler, s, MHD_OPTION_SOCK_ADDR, &sa,
      MHD_OPTION_CONNECTION_TIMEOUT, 30u, MHD_OPTION_END);
  if (s->daemon == NULL) {
    vg_err_set(err, "--metrics: cannot listen on %s (in use, or not an address of this host?)",
               listen);
    free(s);
    return NULL;
  }
  const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
  s->port = info != NULL ? info->port : (int)port;
  return s;
}

int vg_metrics_server_port(const struct vg_metrics_server *s) { return s->port; }

void vg_metrics_server_stop(struct vg_metrics_server *s) {
  if (s == NULL) return;
  MHD_stop_daemon(s->daemon);
  free(s);
}
