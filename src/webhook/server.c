/* server.c -- see server.h. */
#include "server.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "httpd.h"
#include "tls_files.h"

struct vg_wh_server {
  struct vg_wh_server_options o;
  struct sockaddr_in sa;
  struct MHD_Daemon *d;
  struct vg_wh_tls tls;
  struct vg_wh_metrics m;
  int port;
};

/* Collects the body (up to VG_WH_MAX_BODY; beyond, the review is told a
 * size over it and says 413, at once when Content-Length tells, without
 * reading the body), then answers. */
static enum MHD_Result handler(void *cls, struct MHD_Connection *conn, const char *url,
                               const char *method, const char *version, const char *upload,
                               size_t *upload_size, void **con_cls) {
  (void)version;
  struct vg_wh_server *s = cls;
  enum vg_httpd_step step = vg_httpd_body_next(conn, con_cls, upload, upload_size, VG_WH_MAX_BODY);
  if (step == VG_HTTPD_MORE) return MHD_YES;
  if (step == VG_HTTPD_FAIL) return MHD_NO;
  const struct vg_httpd_body *b = *con_cls;
  struct vg_wh_reply r;
  /* Over the limit: a length the review refuses, without the bytes. */
  vg_wh_handle(s->o.resources, s->o.writers, &s->m, method, url,
               b->body.data != NULL ? b->body.data : "",
               step == VG_HTTPD_TOO_BIG ? (size_t)VG_WH_MAX_BODY + 1 : b->body.len, &r);
  if (r.body == NULL) return MHD_NO;
  return vg_httpd_reply(conn, r.status, r.body, strlen(r.body), r.content_type);
}

static struct MHD_Daemon *start(struct vg_wh_server *s, const struct vg_wh_tls *tls, int fd,
                                struct vg_err *err) {
  struct vg_httpd_options ho = {.handler = handler,
                                .handler_cls = s,
                                .completed = vg_httpd_body_free,
                                .timeout_s = 30,
                                .threads = 8,
                                .tls_cert = tls->cert,
                                .tls_key = tls->key,
                                .listen_fd = fd};
  return vg_httpd_start(&s->sa, &ho, &s->port, err);
}

struct vg_wh_server *vg_wh_server_start(const struct vg_wh_server_options *o, struct vg_err *err) {
  struct vg_wh_server *s = calloc(1, sizeof(*s));
  if (s == NULL) {
    vg_err_set(err, "out of memory");
    return NULL;
  }
  s->o = *o;
  if (!vg_httpd_parse_listen("--listen", o->listen, &s->sa, err) ||
      vg_wh_tls_load(o->cert_file, o->key_file, &s->tls, err) != 0 ||
      (s->d = start(s, &s->tls, 0, err)) == NULL) {
    vg_wh_tls_free(&s->tls);
    free(s);
    return NULL;
  }
  return s;
}

int vg_wh_server_port(const struct vg_wh_server *s) { return s->port; }

const struct vg_wh_metrics *vg_wh_server_metrics(const struct vg_wh_server *s) { return &s->m; }

int vg_wh_server_reload(struct vg_wh_server *s, struct vg_err *err) {
  if (!vg_wh_tls_changed(&s->tls, s->o.cert_file, s->o.key_file)) return 0;
  struct vg_wh_tls next;
  if (vg_wh_tls_load(s->o.cert_file, s->o.key_file, &next, err) != 0) {
    atomic_fetch_add(&s->m.tls_reload_failures, 1);
    return -1;
  }
  MHD_socket fd = MHD_quiesce_daemon(s->d);
  if (fd == MHD_INVALID_SOCKET) {
    vg_wh_tls_free(&next);
    atomic_fetch_add(&s->m.tls_reload_failures, 1);
    return vg_err_set(err, "cannot hand the listening socket over (MHD_quiesce_daemon)");
  }
  struct MHD_Daemon *d = start(s, &next, fd, err);
  if (d == NULL) { /* GnuTLS took the pair above; serve on with the old one */
    d = start(s, &s->tls, fd, err);
    vg_wh_tls_free(&next);
    atomic_fetch_add(&s->m.tls_reload_failures, 1);
    if (d == NULL) return vg_err_set(err, "cannot restart the server on its socket");
    MHD_stop_daemon(s->d);
    s->d = d;
    return -1;
  }
  MHD_stop_daemon(s->d); /* finishes the requests it holds; the socket is ours */
  s->d = d;
  vg_wh_tls_free(&s->tls);
  s->tls = next;
  atomic_fetch_add(&s->m.tls_reloads, 1);
  return 1;
}

void vg_wh_server_stop(struct vg_wh_server *s) {
  if (s == NULL) return;
  MHD_stop_daemon(s->d);
  vg_wh_tls_free(&s->tls);
  free(s);
}
