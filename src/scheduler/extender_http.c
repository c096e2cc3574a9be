/*
 * extender_http.c -- the extender's HTTP server: libmicrohttpd, one thread
 * per connection, bodies collected up to 64 MiB and handed to vg_ext_handle.
 */
#include <stdlib.h>
#include <string.h>

#include "extender.h"
#include "httpd.h"

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
  return vg_httpd_reply(conn, (unsigned)status, body, body ? strlen(body) : 0, type);
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

struct vg_ext_server *vg_ext_server_start(struct vg_ext *x, const char *listen,
                                          struct vg_err *err) {
  struct sockaddr_in sa;
  if (!vg_httpd_parse_listen("--listen", listen, &sa, err)) return NULL;
  struct vg_ext_server *s = calloc(1, sizeof(*s));
  if (!s) {
    vg_err_set(err, "out of memory");
    return NULL;
  }
  s->x = x;
  struct vg_httpd_options o = {
      .handler = handler, .handler_cls = s, .completed = completed, .timeout_s = 60};
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
