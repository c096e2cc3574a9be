/* golden.c -- see golden.h. */
#include "golden.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
// clang-format off
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include "harness.h"

/* The whole file, malloc'd and NUL-terminated; NULL when it cannot be read. */
static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) return NULL;
  char *text = NULL;
  long n = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
  if (n >= 0 && fseek(f, 0, SEEK_SET) == 0 && (text = malloc((size_t)n + 1)) != NULL) {
    if (fread(text, 1, (size_t)n, f) != (size_t)n) {
      free(text);
      text = NULL;
    } else {
      text[n] = '\0';
    }
  }
  fclose(f);
  return text;
}

/* 1-based number of the first line where a and b differ. */
static int first_difference(const char *a, const char *b) {
  int line = 1;
  for (; *a != '\0' && *a == *b; a++, b++)
    if (*a == '\n') line++;
  return line;
}

void vg_assert_golden(const char *name, const char *actual) {
  char path[1024], out[1024];
  snprintf(path, sizeof(path), "%s/tests/golden/%s", VG_SOURCE_ROOT, name);
  snprintf(out, sizeof(out), "%s/tests/%s.actual", vg_build_dir(), name);
  char *want = slurp(path);
  if (want != NULL && strcmp(want, actual) == 0) {
    free(want);
    return;
  }
  FILE *f = fopen(out, "w");
  if (f != NULL) {
    fputs(actual, f);
    fclose(f);
  }
  if (want == NULL) fail_msg("%s: cannot read the golden text; got %s", path, out);
  int line = first_difference(want, actual);
  free(want);
  fail_msg("%s: the text differs from line %d on; got %s", path, line, out);
}
