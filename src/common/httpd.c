/* httpd.c -- see httpd.h. */
#include "httpd.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "log.h"
#include "textbuf.h"

/* Descriptors kept out of the connection limit: the API client's
 * connections and watch streams, files, and libmicrohttpd's own epoll and
 * wake-up descriptors per thread. */
#define FD_RESERVE 256
/* Connections at most, whatever the open-file limit: each may take a
 * 32 KiB libmicrohttpd memory pool once it sends its headers. */
#define MAX_CONNECTIONS 16384u
#define DEFAULT_THREADS 4u

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

struct vg_httpd_limits vg_httpd_limits(void) {
  struct vg_httpd_limits l = {.nofile = 1024};
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
    /* Raising the soft limit up to the hard one needs no privilege. */
    if (rl.rlim_cur != rl.rlim_max) {
      struct rlimit up = {rl.rlim_max, rl.rlim_max};
      if (setrlimit(RLIMIT_NOFILE, &up) == 0) rl.rlim_cur = rl.rlim_max;
    }
    l.nofile = rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > ULONG_MAX ? ULONG_MAX
                                                                       : (unsigned long)rl.rlim_cur;
  }
  unsigned long c = l.nofile > 2 * FD_RESERVE ? l.nofile - FD_RESERVE : l.nofile / 2;
  l.connections = c > MAX_CONNECTIONS ? MAX_CONNECTIONS : (unsigned)c;
  /* kube-scheduler, the API server and the kubelet's probes each call from
   * one address: half for any one address leaves the other half to them
   * when another address floods, and is far more than any of them opens. */
  l.per_ip = l.connections / 2 > 0 ? l.connections / 2 : 1;
  return l;
}

/* The option list for o: an array, since TLS and an inherited socket add
 * options only when asked for. */
static void daemon_options(const struct sockaddr_in *sa, const struct vg_httpd_options *o,
                           const struct vg_httpd_limits *l, struct MHD_OptionItem opt[12]) {
  int n = 0;
  if (o->listen_fd > 0)
    opt[n++] = (struct MHD_OptionItem){MHD_OPTION_LISTEN_SOCKET, o->listen_fd, NULL};
  else
    opt[n++] = (struct MHD_OptionItem){MHD_OPTION_SOCK_ADDR, 0, (void *)sa};
  opt[n++] = (struct MHD_OptionItem){MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)o->completed, NULL};
  opt[n++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_TIMEOUT, o->timeout_s, NULL};
  opt[n++] = (struct MHD_OptionItem){MHD_OPTION_THREAD_POOL_SIZE,
                                     o->threads > 0 ? o->threads : DEFAULT_THREADS, NULL};
  opt[n++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_LIMIT, l->connections, NULL};
  opt[n++] = (struct MHD_OptionItem){MHD_OPTION_PER_IP_CONNECTION_LIMIT, l->per_ip, NULL};
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
  struct vg_httpd_limits l = vg_httpd_limits();
  struct MHD_OptionItem opt[12];
  daemon_options(sa, o, &l, opt);
  /* epoll where there is one (AUTO): select stops at 1,024 descriptors.
   * ITC: what MHD_quiesce_daemon needs to hand the socket over. */
  unsigned flags =
      MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_ERROR_LOG | MHD_USE_ITC | (tls ? MHD_USE_TLS : 0);
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
  char addr[INET_ADDRSTRLEN] = "?";
  inet_ntop(AF_INET, &sa->sin_addr, addr, sizeof(addr));
  vg_info(
      "http server on %s:%d: %u threads, up to %u connections (open-file limit %lu), %u per "
      "client address, idle ones closed after %u s",
      addr, *port, o->threads > 0 ? o->threads : DEFAULT_THREADS, l.connections, l.nofile, l.per_ip,
      o->timeout_s);
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

/* Content-Length's value, or -1 without one (chunked) or when unreadable. */
static long long content_length(struct MHD_Connection *conn) {
  const char *v =
      MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
  if (v == NULL) return -1;
  char *end;
  errno = 0;
  long long n = strtoll(v, &end, 10);
  return end == v || *end != '\0' || errno != 0 || n < 0 ? -1 : n;
}

/* Bodies without a Content-Length (chunked) grow from this. */
#define CHUNKED_FIRST 65536

enum vg_httpd_step vg_httpd_body_next(struct MHD_Connection *conn, void **con_cls,
                                      const char *upload, size_t *upload_size, size_t max) {
  struct vg_httpd_body *b = *con_cls;
  if (b == NULL) {
    if ((b = calloc(1, sizeof(*b))) == NULL) return VG_HTTPD_FAIL;
    *con_cls = b;
    long long cl = content_length(conn);
    if (cl > (long long)max) {
      b->too_big = true; /* answered before a byte of it is read */
      return VG_HTTPD_TOO_BIG;
    }
    /* With a Content-Length the buffer holds it all at once (no realloc);
     * without, it holds "" until bytes come: a connection that never sends
     * any costs one byte, not CHUNKED_FIRST. */
    b->body.first = cl >= 0 ? (size_t)cl + 1 : 1;
    if (!vg_textbuf_reserve(&b->body, 0)) return VG_HTTPD_FAIL;
    b->body.first = CHUNKED_FIRST;
    return VG_HTTPD_MORE;
  }
  if (*upload_size == 0) return b->too_big ? VG_HTTPD_TOO_BIG : VG_HTTPD_DONE;
  size_t n = *upload_size;
  *upload_size = 0;
  if (b->too_big) return VG_HTTPD_MORE; /* chunked: read and dropped */
  if (n > max - b->body.len) {
    b->too_big = true;
    vg_textbuf_free(&b->body);
    return VG_HTTPD_MORE;
  }
  return vg_textbuf_add(&b->body, upload, n) ? VG_HTTPD_MORE : VG_HTTPD_FAIL;
}

void vg_httpd_body_free(void *cls, struct MHD_Connection *conn, void **con_cls,
                        enum MHD_RequestTerminationCode code) {
  (void)cls, (void)conn, (void)code;
  struct vg_httpd_body *b = *con_cls;
  if (b != NULL) vg_textbuf_free(&b->body);
  free(b);
  *con_cls = NULL;
}
