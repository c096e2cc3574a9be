/* httpd.c -- see httpd.h. */
#include "httpd.h"

#include <arpa/inet.h>
#include <stdint.h>
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

/* The option list for o: an array, since TLS and an inherited socket add
 * options only when asked for. */
static void daemon_options(const struct sockaddr_in *sa, const struct vg_httpd_options *o,
                           struct MHD_OptionItem opt[8]) {
  int n = 0;
  if (o->listen_fd > 0)
    opt[n++] = (struct MHD_OptionItem){MHD_OPTION_LISTEN_SOCKET, o->listen_fd, NULL};
  else
    opt[n++] = (struct MHD_OptionItem){MHD_OPTION_SOCK_ADDR, 0, (void *)sa};
  opt[n++] = (struct MHD_OptionItem){MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)o->completed, NULL};
  opt[n++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_TIMEOUT, o->timeout_s, NULL};
  if (o->tls_cert != NULL && o->tls_key != NULL) {
    opt[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_CERT, 0, (void *)o->tls_cert};
    opt[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_KEY, 0, (void *)o->tls_key};
  }
  opt[n] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
}

struct MHD_Daemon *vg_httpd_start(const struct sockaddr_in *sa, const struct vg_httpd_options *o,
                                  int *port, struct vg_err *err) {
  uint16_t want = ntohs(sa->sin_port);
  bool tls = o->tls_cert != NULL && o->tls_key != NULL;
  if (tls && !MHD_is_feature_supported(MHD_FEATURE_TLS)) {
    vg_err_set(err, "this libmicrohttpd was built without TLS (install Debian's libmicrohttpd12)");
    return NULL;
  }
  struct MHD_OptionItem opt[8];
  daemon_options(sa, o, opt);
  /* ITC: what MHD_quiesce_daemon needs to hand the socket over. */
  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
                   MHD_USE_ERROR_LOG | MHD_USE_ITC | (tls ? MHD_USE_TLS : 0);
  struct MHD_Daemon *d = MHD_start_daemon(flags, want, NULL, NULL, o->handler, o->handler_cls,
                                          MHD_OPTION_ARRAY, opt, MHD_OPTION_END);
  if (d == NULL) {
    char addr[INET_ADDRSTRLEN] = "?";
    inet_ntop(AF_INET, &sa->sin_addr, addr, sizeof(addr));
    vg_err_set(err, "cannot listen on %s:%u (in use, or not an address of this host?%s)", addr,
               (unsigned)want, tls ? " or the TLS certificate and key do not load" : "");
    return NULL;
  }
  const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
  *port = info != NULL && info->port != 0 ? info->port : want;
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
