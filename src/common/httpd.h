/*
 * httpd.h -- what our two HTTP servers share: the device plugin's /metrics
 * and vgpu-scheduler's extender verbs, both on libmicrohttpd.
 *
 * Parsing an "ADDR:PORT" listen address, starting a daemon on it (plain
 * HTTP, or HTTPS through libmicrohttpd's GnuTLS when given a PEM certificate
 * and key: vgpu-webhook) and reading back the port the kernel chose (port 0),
 * collecting a request body up to a limit, and queueing a reply that takes
 * ownership of its body.
 *
 * Servers under load (docs/security.md): epoll with a small pool of threads,
 * each serving many connections, instead of select and a thread per
 * connection, which stopped at select's 1,024 descriptors. The open-file
 * limit is raised to its hard limit and the connection limit sized from it;
 * one client address may hold at most half of the connections, so that a
 * flood from one address leaves room for the kubelet's probes and the API
 * server or kube-scheduler, each of which calls from one address. Idle
 * connections are closed after timeout_s. A daemon can be restarted on the socket of one that
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
#include "textbuf.h"

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
  /* Threads serving connections (each many, one request at a time); 0 = 4.
   * A handler that blocks (an API read) holds its thread's connections. */
  unsigned threads;
};

/* What vg_httpd_start chose, for logs and tests. */
struct vg_httpd_limits {
  unsigned long nofile; /* RLIMIT_NOFILE's soft limit after raising it */
  unsigned connections; /* the server's connection limit */
  unsigned per_ip;      /* connections one client address may hold */
};

/* Raises RLIMIT_NOFILE's soft limit to the hard one (no privilege needed)
 * and sizes the connection limits from it. */
struct vg_httpd_limits vg_httpd_limits(void);

/* Listens on sa with vg_httpd_limits() (logged once per start); *port is
 * the bound port. NULL
 * with err naming what when it cannot listen (or, with TLS, when GnuTLS
 * refuses the certificate or key). */
struct MHD_Daemon *vg_httpd_start(const struct sockaddr_in *sa, const struct vg_httpd_options *o,
                                  int *port, struct vg_err *err);

/* Queues body (malloc'd; freed here, also on failure) as the reply. A NULL
 * body or no memory for the response closes the connection (MHD_NO). */
enum MHD_Result vg_httpd_reply(struct MHD_Connection *conn, unsigned status, char *body, size_t len,
                               const char *content_type);

/* A request body collected by the access handler -- the one collector of
 * vgpu-webhook and the extender, each with its own limit: on the first call
 * (*con_cls NULL) vg_httpd_body_next allocates it; with a Content-Length
 * the whole buffer at once (one copy of the body, never a realloc), else
 * doubling from 64 KiB. Over max it stops storing and says so, at once when
 * the Content-Length tells (libmicrohttpd then answers without reading the
 * body and closes), else after the rest was read and dropped. body.data is
 * NUL-terminated ("" for an empty body); NULL once it was over max. */
struct vg_httpd_body {
  struct vg_textbuf body;
  bool too_big;
};

enum vg_httpd_step {
  VG_HTTPD_MORE,    /* return MHD_YES: more of the body is coming */
  VG_HTTPD_DONE,    /* the whole body is in (*con_cls)->body */
  VG_HTTPD_TOO_BIG, /* answer 413 now */
  VG_HTTPD_FAIL,    /* out of memory: return MHD_NO (closes the connection) */
};

enum vg_httpd_step vg_httpd_body_next(struct MHD_Connection *conn, void **con_cls,
                                      const char *upload, size_t *upload_size, size_t max);
/* The MHD_OPTION_NOTIFY_COMPLETED callback that frees the body. */
void vg_httpd_body_free(void *cls, struct MHD_Connection *conn, void **con_cls,
                        enum MHD_RequestTerminationCode code);

#endif
