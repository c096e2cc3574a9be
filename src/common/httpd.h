/*
 * httpd.h -- what our two HTTP servers share: the device plugin's /metrics
 * and vgpu-scheduler's extender verbs, both on libmicrohttpd.
 *
 * Parsing an "ADDR:PORT" listen address, starting a daemon with one thread
 * per connection on it and reading back the port the kernel chose (port 0),
 * and queueing a reply that takes ownership of its body. Built as its own
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
};

/* Listens on sa, one thread per connection; *port is the bound port. NULL
 * with err naming what when it cannot listen. */
struct MHD_Daemon *vg_httpd_start(const struct sockaddr_in *sa, const struct vg_httpd_options *o,
                                  int *port, struct vg_err *err);

/* Queues body (malloc'd; freed here, also on failure) as the reply. A NULL
 * body or no memory for the response closes the connection (MHD_NO). */
enum MHD_Result vg_httpd_reply(struct MHD_Connection *conn, unsigned status, char *body, size_t len,
                               const char *content_type);

#endif
