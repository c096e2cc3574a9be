/*
 * httpd.h -- what our two HTTP servers share: the device plugin's /metrics
 * and vgpu-scheduler's extender verbs, both on libmicrohttpd.
 *
 * Parsing an "ADDR:PORT" listen address, starting a daemon with one thread
 * per connection on it (plain HTTP, or HTTPS through libmicrohttpd's GnuTLS
 * when given a PEM certificate and key: vgpu-webhook) and reading back the
 * port the kernel chose (port 0), and queueing a reply that takes ownership
 * of its body. A daemon can be restarted on the socket of one that
 * MHD_quiesce_daemon stopped accepting, so that a server swaps its
 * certificate without closing its port. Built as its own
 * library (vg_httpd): the rest of src/common also goes into libvgpu.so,
 * which must depend on libc alone.
 */
#ifndef VG_HTTPD_H
#define VG_HTTPD_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>

#include <microhttpd.h>

#include "err.h"

/* "ADDR:PORT" (IPv4, port 0-65535) -> sa. On error, err names flag and value. */
bool vg_httpd_parse_listen(const char *flag, const char *listen, struct sockaddr_in *sa,
                           struct vg_err *err);

struct vg_httpd_options {
  MHD_AccessHandlerCallback handler;
  void *handler_cls;
  MHD_RequestCompletedCallback completed; /* may be NULL */
  unsigned timeout_s;                     /* idle connections are closed after this */
  /* PEM certificate (chain) and private key, both or neither: HTTPS with
   * them, plain HTTP without. Copied by libmicrohttpd's GnuTLS at start. */
  const char *tls_cert, *tls_key;
  /* > 0: serve on this listening socket (from MHD_quiesce_daemon) instead of
   * binding sa; 0 never is one, so zeroed options keep binding. */
  int listen_fd;
};

/* Listens on sa, one thread per connection; *port is the bound port. NULL
 * with err naming what when it cannot listen (or, with TLS, when GnuTLS
 * refuses the certificate or key). */
struct MHD_Daemon *vg_httpd_start(const struct sockaddr_in *sa, const struct vg_httpd_options *o,
                                  int *port, struct vg_err *err);

/* Queues body (malloc'd; freed here, also on failure) as the reply. A NULL
 * body or no memory for the response closes the connection (MHD_NO). */
enum MHD_Result vg_httpd_reply(struct MHD_Connection *conn, unsigned status, char *body, size_t len,
                               const char *content_type);

#endif
