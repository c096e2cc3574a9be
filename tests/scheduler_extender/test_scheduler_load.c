/*
 * test_scheduler_load.c -- vgpu-scheduler's HTTP server under load (issue
 * 27), over raw sockets on 127.0.0.1: a body over --max-body-mib is refused
 * with 413 and a message, at once when its Content-Length says so (nothing
 * of it is sent here) and after it was read when it comes chunked; 1,100
 * idle connections (select and a thread per connection stopped near 1,010)
 * leave /healthz answering; an idle connection is closed after
 * --idle-timeout-s. Behaviour, not timing: the waits are generous.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "ext_harness.h"

#define IDLE 1100

static int connect_sched(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)ext_sched_port())};
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

static void send_all(int fd, const char *p, size_t len) {
  while (len > 0) {
    ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
    assert_true(n > 0);
    p += n;
    len -= (size_t)n;
  }
}

/* What the server sends until it closes, or until timeout_ms passed without
 * a byte; NUL-terminated, into buf. */
static size_t read_reply(int fd, char *buf, size_t cap, int timeout_ms) {
  size_t len = 0;
  struct pollfd p = {.fd = fd, .events = POLLIN};
  while (len + 1 < cap && poll(&p, 1, timeout_ms) == 1) {
    ssize_t n = recv(fd, buf + len, cap - 1 - len, 0);
    if (n <= 0) break;
    len += (size_t)n;
  }
  buf[len] = '\0';
  return len;
}

static int setup(void **state) {
  (void)state;
  if (ext_api_start() != 0) return -1;
  static const char *const extra[] = {"--max-body-mib", "1", "--idle-timeout-s", "1", NULL};
  return ext_sched_start(extra);
}

/* Sends head, then `chunks` chunks of 64 KiB and the last chunk; the
 * answer must be 413 with the message. */
static void expect_413(const char *head, int chunks) {
  int fd = connect_sched();
  assert_true(fd >= 0);
  send_all(fd, head, strlen(head));
  static char chunk[65536 + 16];
  int n = snprintf(chunk, sizeof(chunk), "10000\r\n");
  memset(chunk + n, ' ', 65536);
  memcpy(chunk + n + 65536, "\r\n", 2);
  for (int i = 0; i < chunks; i++) send_all(fd, chunk, (size_t)n + 65536 + 2);
  if (chunks > 0) send_all(fd, "0\r\n\r\n", 5);
  char buf[4096];
  read_reply(fd, buf, sizeof(buf), 5000);
  close(fd);
  ext_expect_contains(buf, "HTTP/1.1 413");
  ext_expect_contains(buf, "request body over 1 MiB");
}

/* Only the headers: the answer must come before any of the body. */
static void test_declared_length_over_limit_is_413_at_once(void **state) {
  (void)state;
  expect_413(
      "POST /filter HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
      "Content-Length: 2097152\r\n\r\n",
      0);
}

/* No length ahead: read (and dropped) to the end, then refused. */
static void test_chunked_body_over_limit_is_413(void **state) {
  (void)state;
  expect_413(
      "POST /filter HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
      "Transfer-Encoding: chunked\r\n\r\n",
      20); /* 1.25 MiB */
}

/* A body within the limit still reaches the extender (here: not JSON). */
static void test_body_within_limit_is_read(void **state) {
  (void)state;
  char *out = NULL;
  long status = ext_call("/filter", "{", 1, &out);
  assert_int_equal(status, 400);
  free(out);
}

static void test_healthz_beside_idle_connections(void **state) {
  (void)state;
  struct rlimit rl;
  assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl), 0);
  if (rl.rlim_max < 4096) {
    print_message("open-file hard limit %llu < 4096: idle connections not tried\n",
                  (unsigned long long)rl.rlim_max);
    skip();
  }
  rl.rlim_cur = rl.rlim_max;
  assert_int_equal(setrlimit(RLIMIT_NOFILE, &rl), 0);
  /* --idle-timeout-s 1 would close them while they are being opened. */
  ext_sched_stop(false);
  static const char *const extra[] = {"--max-body-mib", "1", NULL};
  assert_int_equal(ext_sched_start(extra), 0);
  static int fds[IDLE];
  for (int i = 0; i < IDLE; i++) {
    fds[i] = connect_sched();
    assert_true(fds[i] >= 0);
    send_all(fds[i], "GET /healthz HTTP/1.1\r\n", 23);
  }
  int fd = connect_sched();
  assert_true(fd >= 0);
  const char *req = "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  send_all(fd, req, strlen(req));
  char buf[4096];
  read_reply(fd, buf, sizeof(buf), 10000);
  close(fd);
  int held = 0;
  for (int i = 0; i < IDLE; i++) {
    char c;
    if (recv(fds[i], &c, 1, MSG_DONTWAIT) < 0) held++; /* nothing yet: still open */
    close(fds[i]);
  }
  ext_expect_contains(buf, "HTTP/1.1 200");
  ext_expect_contains(buf, "ok");
  assert_int_equal(held, IDLE); /* none refused, none closed */
}

static void test_idle_connection_is_closed(void **state) {
  (void)state;
  int fd = connect_sched();
  assert_true(fd >= 0);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  char buf[64];
  size_t n = read_reply(fd, buf, sizeof(buf), 10000); /* returns when the server closes */
  clock_gettime(CLOCK_MONOTONIC, &t1);
  close(fd);
  assert_int_equal(n, 0);
  assert_true(t1.tv_sec - t0.tv_sec < 8); /* --idle-timeout-s 1, not the 60 s default */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_declared_length_over_limit_is_413_at_once),
      cmocka_unit_test(test_chunked_body_over_limit_is_413),
      cmocka_unit_test(test_body_within_limit_is_read),
      cmocka_unit_test(test_idle_connection_is_closed),
      cmocka_unit_test(test_healthz_beside_idle_connections), /* restarts: last */
  };
  return cmocka_run_group_tests(tests, setup, ext_teardown);
}
