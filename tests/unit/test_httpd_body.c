/*
 * test_httpd_body.c -- the request-body collector that vgpu-webhook and the
 * extender share (vg_httpd_body_next, src/common/httpd.c), on a real
 * libmicrohttpd server spoken to over a plain socket: bodies with a
 * Content-Length and chunked ones arrive whole and NUL-terminated, an empty
 * body is "" (never NULL), and a body over the caller's limit is refused
 * with 413 -- before a byte of it is read when the Content-Length tells,
 * after it was read and dropped when chunked.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
// clang-format off
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include "httpd.h"

#define CHUNKED "Transfer-Encoding: chunked\r\n"
#define LIMIT 64 /* the caller's limit, as --max-body-mib or VG_WH_MAX_BODY set theirs */

/* Answers "<length>:<body>", or 413 "too big". */
static enum MHD_Result handler(void *cls, struct MHD_Connection *conn, const char *url,
                               const char *method, const char *version, const char *upload,
                               size_t *upload_size, void **con_cls) {
  (void)cls, (void)url, (void)method, (void)version;
  char *answer = NULL;
  switch (vg_httpd_body_next(conn, con_cls, upload, upload_size, LIMIT)) {
    case VG_HTTPD_MORE:
      return MHD_YES;
    case VG_HTTPD_FAIL:
      return MHD_NO;
    case VG_HTTPD_TOO_BIG:
      return vg_httpd_reply(conn, 413, strdup("too big"), 7, "text/plain");
    case VG_HTTPD_DONE:
      break;
  }
  const struct vg_httpd_body *b = *con_cls;
  assert_non_null(b->body.data); /* "" for an empty body */
  assert_int_equal(strlen(b->body.data), b->body.len);
  if (asprintf(&answer, "%zu:%s", b->body.len, b->body.data) < 0) return MHD_NO;
  return vg_httpd_reply(conn, 200, answer, strlen(answer), "text/plain");
}

static struct MHD_Daemon *g_d;
static int g_port;

static int setup(void **state) {
  (void)state;
  struct sockaddr_in sa;
  struct vg_err err;
  assert_true(vg_httpd_parse_listen("--listen", "127.0.0.1:0", &sa, &err));
  struct vg_httpd_options o = {
      .handler = handler, .completed = vg_httpd_body_free, .timeout_s = 10, .threads = 2};
  g_d = vg_httpd_start(&sa, &o, &g_port, &err);
  assert_non_null(g_d);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  MHD_stop_daemon(g_d);
  return 0;
}

/* Sends "METHOD /x" with the header lines (each ending in CRLF), then body
 * (may be NULL), and reads the answer until the server closes: the status,
 * and the answer's body in out. */
static int call(const char *method, const char *headers, const char *body, char *out, size_t len) {
  char head[512];
  snprintf(head, sizeof(head), "%s /x HTTP/1.1\r\nHost: t\r\nConnection: close\r\n%s\r\n", method,
           headers);
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  assert_true(fd >= 0);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)g_port)};
  inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
  assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
  assert_int_equal(write(fd, head, strlen(head)), (ssize_t)strlen(head));
  if (body != NULL) (void)!write(fd, body, strlen(body)); /* may be refused unread */
  char resp[8192];
  size_t n = 0;
  ssize_t got;
  while (n < sizeof(resp) - 1 && (got = read(fd, resp + n, sizeof(resp) - 1 - n)) > 0)
    n += (size_t)got;
  resp[n] = '\0';
  close(fd);
  int status = 0;
  assert_int_equal(sscanf(resp, "HTTP/1.1 %d", &status), 1);
  const char *text = strstr(resp, "\r\n\r\n");
  snprintf(out, len, "%s", text != NULL ? text + 4 : "");
  return status;
}

static void test_content_length(void **s) {
  (void)s;
  char out[256];
  assert_int_equal(call("POST", "Content-Length: 11\r\n", "hello world", out, sizeof(out)), 200);
  assert_string_equal(out, "11:hello world");
}

static void test_empty(void **s) {
  (void)s;
  char out[256];
  assert_int_equal(call("POST", "Content-Length: 0\r\n", NULL, out, sizeof(out)), 200);
  assert_string_equal(out, "0:");
  assert_int_equal(call("GET", "", NULL, out, sizeof(out)), 200);
  assert_string_equal(out, "0:");
  assert_int_equal(call("POST", CHUNKED, "0\r\n\r\n", out, sizeof(out)), 200);
  assert_string_equal(out, "0:");
}

static void test_chunked(void **s) {
  (void)s;
  char out[256];
  assert_int_equal(
      call("POST", CHUNKED, "5\r\nhello\r\n1\r\n \r\n5\r\nworld\r\n0\r\n\r\n", out, sizeof(out)),
      200);
  assert_string_equal(out, "11:hello world");
  /* Exactly the limit is still taken. */
  char body[LIMIT + 32];
  snprintf(body, sizeof(body), "%x\r\n%0*d\r\n0\r\n\r\n", LIMIT, LIMIT, 0);
  assert_int_equal(call("POST", CHUNKED, body, out, sizeof(out)), 200);
  assert_int_equal(atoi(out), LIMIT);
}

static void test_too_large(void **s) {
  (void)s;
  char out[256];
  /* Content-Length over the limit: 413 with no body sent at all. */
  assert_int_equal(call("POST", "Content-Length: 65\r\n", NULL, out, sizeof(out)), 413);
  assert_string_equal(out, "too big");
  /* Chunked: only the sum tells; read, dropped, then refused. */
  char body[256];
  snprintf(body, sizeof(body), "%x\r\n%0*d\r\n%x\r\n%0*d\r\n0\r\n\r\n", 40, 40, 0, 25, 25, 0);
  assert_int_equal(call("POST", CHUNKED, body, out, sizeof(out)), 413);
  assert_string_equal(out, "too big");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_content_length),
      cmocka_unit_test(test_empty),
      cmocka_unit_test(test_chunked),
      cmocka_unit_test(test_too_large),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
