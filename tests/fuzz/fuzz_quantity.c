/* fuzz_quantity.c -- libFuzzer target for the Kubernetes quantity parser:
 * any input either parses to a value in 0..INT64_MAX that reads back the same
 * from its plain digits (and from the input with a leading zero, which
 * changes nothing), or fails with a message; nothing crashes or reads past
 * the string. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quantity.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = malloc(size + 2);
  if (text == NULL) return 0;
  memcpy(text + 1, data, size);
  text[size + 1] = '\0';
  int64_t v = -1, back = -1;
  struct vg_err err = {{0}};
  if (vg_quantity_parse(text + 1, &v, NULL, &err) == 0) {
    char digits[32];
    enum vg_quantity_format fmt;
    snprintf(digits, sizeof(digits), "%lld", (long long)v);
    if (v < 0) abort();
    if (vg_quantity_parse(digits, &back, &fmt, &err) != 0 || back != v) abort();
    if (fmt != VG_QUANTITY_DECIMAL_SI) abort();
    text[0] = '0';
    if (text[1] >= '0' && text[1] <= '9' && size < VG_QUANTITY_MAX_TEXT &&
        (vg_quantity_parse(text, &back, NULL, &err) != 0 || back != v))
      abort();
  } else if (err.msg[0] == '\0') {
    abort(); /* an error must say why */
  }
  free(text);
  return 0;
}
