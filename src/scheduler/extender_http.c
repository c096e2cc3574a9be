/*
 * extender_http.c -- the extender's HTTP server: libmicrohttpd, one thread
 * per connection, bodies collected up to 64 MiB and handed to vg_ext_handle.
 */
#include <arpa/inet.h>
#include <microhttpd.h>
#include <stdlib.h>
#include <string.h>

#include "extender.h"

#define MAX_BODY (64u * 1024u * 1024u)

struct vg_ext_server {
  struct MHD_Daemon *d;
  struct vg_ext *x;
  int port;
};

struct req_body {
  char *data;
  size_t len;
  bool too_big;
};

static enum MHD_Result reply(struct MHD_Connection *conn, int status, char *body,
                             const char *type) {
  struct MHD_Response *r =
      MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
  MHD_add_response_header(r, "Content-Type", type);
  enum MHD_Result ret = MHD_queue_response(conn, (unsigned)status, r);
  MHD_destroy_response(r);
  return ret;
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *conn, const char *url,
                               const char *method, const char *version, const char *upload,
                               size_t *upload_size, void **con_cls) {
  (void)version;
  struct vg_ext_server *s = cls;
  struct req_body *b = *con_cls;
  if (!b) {
    if (!(b = calloc(1, sizeof(*b)))) return MHD_NO;
    *con_cls = b;
    return MHD_YES;
  }
  if (*upload_size) {
    if (b->len + *upload_size > MAX_BODY) {
      b->too_big = true;
    } else if (!b->too_big) {
      char *n = realloc(b->data, b->len + *upload_size + 1);
      if (!n) return MHD_NO;
      memcpy(n + b->len, upload, *upload_size);
      b->data = n;
      b->len += *upload_size;
      b->data[b->len] = 0;
    }
    *upload_size = 0;
    return MHD_YES;
  }
  if (b->too_big)
    return reply(conn, 413, strdup("{\"Error\":\"request body over 64 MiB\"}"), "application/json");
  char *out = NULL;
  const char *type = "application/json";
  int status = vg_ext_handle(s->x, method, url, b->data ? b->data : "", b->len, &out, &type);
  if (!out) return MHD_NO;
  return reply(conn, status, out, type);
}

static void completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                      enum MHD_RequestTerminationCode code) {
  (void)cls, (void)conn, (void)code;
  struct req_body *b = *con_cls;
  if (b) free(b->data);
  free(b);
  *con_cls = NULL;
}

struct vg_ext_server *vg_ext_server_start(struct vg_ext *x, const char *addr, int port,
                                          struct vg_err *err) {
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  if (inet_pton(AF_INET, addr, &sa.sin_addr) != 1) {
    vg_err_set(err, "listen address '%s' is not an IPv4 address", addr);
    return NULL;
  }
  struct vg_ext_server *s = calloc(1, sizeof(*s));
  if (!s) {
    vg_err_set(err, "out of memory");
    return NULL;
  }
  s->x = x;
  s->d = MHD_start_daemon(
      MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_ERROR_LOG,
      (uint16_t)port, NULL, NULL, handler, s, MHD_OPTION_SOCK_ADDR, &sa,
      MHD_OPTION_NOTIFY_COMPLETED, completed, NULL, MHD_OPTION_CONNECTION_TIMEOUT, 60u,
      MHD_OPTION_END);
  if (!s->d) {
    vg_err_set(err, "cannot listen on %s:%d (in use, or not an address of this host?)", addr, port);
    free(s);
    return NULL;
  }
  const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
  s->port = info ? info->port : port;
  return s;
}

int vg_ext_server_port(const struct vg_ext_server *s) { return s->port; }

void vg_ext_server_stop(struct vg_ext_server *s) {
  if (!s) return;
  MHD_stop_daemon(s->d);
  free(s);
}
