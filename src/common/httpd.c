/* httpd.c -- see httpd.h. */
#include "httpd.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool vg_httpd_parse_listen(const char *flag, const char *listen, struct sockaddr_in *sa,
                           struct vg_err *err) {
  char addr[64];
  const char *colon = listen != NULL ? strrchr(listen, ':') : NULL;
  char *end = NULL;
  long port = colon != NULL ? strtol(colon + 1, &end, 10) : -1;
  if (colon == NULL || colon == listen || (size_t)(colon - listen) >= sizeof(addr) ||
      colon[1] == '\0' || *end != '\0' || port < 0 || port > 65535) {
    vg_err_set(err, "%s \"%s\": not ADDR:PORT (an IPv4 address and a port, e.g. 127.0.0.1:8888)",
               flag, listen != NULL ? listen : "");
    return false;
  }
  snprintf(addr, sizeof(addr), "%.*s", (int)(colon - listen), listen);
  *sa = (struct sockaddr_in){.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  if (inet_pton(AF_INET, addr, &sa->sin_addr) != 1) {
    vg_err_set(err, "%s \"%s\": \"%s\" is not an IPv4 address", flag, listen, addr);
    return false;
  }
  return true;
}

struct MHD_Daemon *vg_httpd_start(const struct sockaddr_in *sa, const struct vg_httpd_options *o,
                                  int *port, struct vg_err *err) {
  uint16_t want = ntohs(sa->sin_port);
  struct MHD_Daemon *d = MHD_start_daemon(
      MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_ERROR_LOG, want,
      NULL, NULL, o->handler, o->handler_cls, MHD_OPTION_SOCK_ADDR, sa, MHD_OPTION_NOTIFY_COMPLETED,
      o->completed, NULL, MHD_OPTION_CONNECTION_TIMEOUT, o->timeout_s, MHD_OPTION_END);
  if (d == NULL) {
    char addr[INET_ADDRSTRLEN] = "?";
    inet_ntop(AF_INET, &sa->sin_addr, addr, sizeof(addr));
    vg_err_set(err, "cannot listen on %s:%u (in use, or not an address of this host?)", addr,
               (unsigned)want);
    return NULL;
  }
  const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
  *port = info != NULL ? info->port : want;
  return d;
}

enum MHD_Result vg_httpd_reply(struct MHD_Connection *conn, unsigned status, char *body, size_t len,
                               const char *content_type) {
  if (body == NULL) return MHD_NO;
  struct MHD_Response *r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
  if (r == NULL) {
    free(body);
    return MHD_NO;
  }
  MHD_add_response_header(r, "Content-Type", content_type);
  enum MHD_Result ret = MHD_queue_response(conn, status, r);
  MHD_destroy_response(r);
  return ret;
}
