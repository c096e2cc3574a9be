/*
 * test_textbuf.c -- the growing buffer (src/common/textbuf.c): what goes in
 * comes out byte for byte, NUL-terminated, through many doublings; printf
 * output of any length; a known final size allocated once; and running out
 * of memory (malloc made to fail, as SQLite's tests do) is sticky and leaves
 * nothing to take.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
// clang-format off
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
// clang-format on

#include "textbuf.h"

/* realloc made to fail on demand: the textbuf's only allocator. */
static int g_fail_after = -1; /* reallocs that still succeed; -1: all */
static int g_reallocs;

void *__real_realloc(void *p, size_t n);
void *__wrap_realloc(void *p, size_t n) {
  g_reallocs++;
  if (g_fail_after == 0) return NULL;
  if (g_fail_after > 0) g_fail_after--;
  return __real_realloc(p, n);
}

static void test_empty(void **s) {
  (void)s;
  struct vg_textbuf t = {0};
  assert_null(vg_textbuf_take(&t, NULL)); /* nothing reserved: nothing to take */
  assert_true(vg_textbuf_reserve(&t, 0));
  assert_string_equal(t.data, "");
  size_t len = 99;
  char *text = vg_textbuf_take(&t, &len);
  assert_string_equal(text, "");
  assert_int_equal(len, 0);
  assert_null(t.data);
  free(text);
}

static void test_grows_byte_for_byte(void **s) {
  (void)s;
  struct vg_textbuf t = {.first = 16};
  char want[100000];
  for (size_t i = 0; i < sizeof(want); i++) want[i] = (char)(i * 7 % 251); /* NULs too */
  for (size_t i = 0; i < sizeof(want); i += 1000) assert_true(vg_textbuf_add(&t, want + i, 1000));
  assert_int_equal(t.len, sizeof(want));
  assert_true(t.cap > t.len);
  assert_int_equal(t.cap & (t.cap - 1), 0); /* 16 doubled */
  assert_int_equal(t.data[t.len], '\0');
  size_t len;
  char *got = vg_textbuf_take(&t, &len);
  assert_int_equal(len, sizeof(want));
  assert_memory_equal(got, want, sizeof(want));
  free(got);
  assert_int_equal(t.first, 16); /* kept for the next use */
}

static void test_known_size_allocated_once(void **s) {
  (void)s;
  struct vg_textbuf t = {.first = 11};
  g_reallocs = 0;
  assert_true(vg_textbuf_reserve(&t, 0));
  assert_true(vg_textbuf_puts(&t, "hello"));
  assert_true(vg_textbuf_puts(&t, "world"));
  assert_int_equal(g_reallocs, 1);
  assert_int_equal(t.cap, 11);
  assert_string_equal(t.data, "helloworld");
  vg_textbuf_free(&t);
  assert_null(t.data);
  assert_int_equal(t.len, 0);
}

static void test_printf(void **s) {
  (void)s;
  struct vg_textbuf t = {.first = 8};
  assert_true(vg_textbuf_printf(&t, "%d-%s", 42, "x"));
  char big[5000];
  memset(big, 'b', sizeof(big) - 1);
  big[sizeof(big) - 1] = '\0';
  assert_true(vg_textbuf_printf(&t, "[%s]", big)); /* past the room there is */
  assert_true(vg_textbuf_printf(&t, "%.2f", 0.5));
  assert_int_equal(t.len, 4 + 5001 + 4);
  assert_memory_equal(t.data, "42-x[b", 6);
  assert_string_equal(t.data + 4 + 5001, "0.50");
  assert_true(vg_textbuf_printf(&t, "%s", "")); /* nothing, and still fine */
  assert_int_equal(t.len, 4 + 5001 + 4);
  vg_textbuf_reset(&t);
  assert_int_equal(t.len, 0);
  assert_string_equal(t.data, "");
  assert_true(vg_textbuf_printf(&t, "%u", 7u));
  assert_string_equal(t.data, "7");
  vg_textbuf_free(&t);
}

static void test_out_of_memory_is_sticky(void **s) {
  (void)s;
  struct vg_textbuf t = {.first = 4};
  assert_true(vg_textbuf_puts(&t, "abc"));
  g_fail_after = 0;
  assert_false(vg_textbuf_puts(&t, "defgh")); /* must grow: fails */
  g_fail_after = -1;
  assert_true(t.oom);
  assert_string_equal(t.data, "abc");     /* left as it was */
  assert_false(vg_textbuf_puts(&t, "i")); /* sticky, though it would fit */
  assert_false(vg_textbuf_printf(&t, "%d", 1));
  assert_false(vg_textbuf_reserve(&t, 0));
  vg_textbuf_reset(&t);
  assert_false(vg_textbuf_add(&t, "x", 1)); /* reset keeps it */
  assert_null(vg_textbuf_take(&t, NULL));   /* and frees the bytes */
  assert_false(t.oom);
  assert_true(vg_textbuf_puts(&t, "ok")); /* taken: a fresh buffer */
  vg_textbuf_free(&t);
}

static void test_first_allocation_fails(void **s) {
  (void)s;
  struct vg_textbuf t = {0};
  g_fail_after = 0;
  assert_false(vg_textbuf_printf(&t, "%s", "a long enough line to need memory"));
  g_fail_after = -1;
  assert_null(t.data);
  assert_null(vg_textbuf_take(&t, NULL));
}

static void test_size_overflow(void **s) {
  (void)s;
  struct vg_textbuf t = {0};
  assert_true(vg_textbuf_puts(&t, "x"));
  assert_false(vg_textbuf_reserve(&t, SIZE_MAX)); /* len + n + 1 wraps: refused */
  assert_true(t.oom);
  vg_textbuf_free(&t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_empty),
      cmocka_unit_test(test_grows_byte_for_byte),
      cmocka_unit_test(test_known_size_allocated_once),
      cmocka_unit_test(test_printf),
      cmocka_unit_test(test_out_of_memory_is_sticky),
      cmocka_unit_test(test_first_allocation_fails),
      cmocka_unit_test(test_size_overflow),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
