/* test_deadline.c -- vg_deadline_after (src/common/deadline.h): "now + ms"
 * with the carry into seconds, on the clock asked for. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "deadline.h"

static int64_t ns_of(struct timespec ts) { return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec; }

static int64_t now_ns(clockid_t clock) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  return ns_of(ts);
}

/* ms later, give or take what passed between the two clock reads. */
static void check_after(clockid_t clock, uint64_t ms) {
  int64_t before = now_ns(clock);
  struct timespec d = vg_deadline_after(clock, ms);
  int64_t after = now_ns(clock);
  assert_true(d.tv_nsec >= 0 && d.tv_nsec < 1000000000L); /* normalised */
  assert_true(ns_of(d) >= before + (int64_t)ms * 1000000LL);
  assert_true(ns_of(d) <= after + (int64_t)ms * 1000000LL);
}

static void test_carries_into_seconds(void **state) {
  (void)state;
  /* 999 ms lands past the second boundary whenever now's ns are above 1 ms */
  for (uint64_t ms = 0; ms < 3000; ms += 37) check_after(CLOCK_MONOTONIC, ms);
  check_after(CLOCK_MONOTONIC, 999);
  check_after(CLOCK_REALTIME, 999);
  check_after(CLOCK_REALTIME, 86400ULL * 1000);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_carries_into_seconds)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
