/* fuzz_size.c -- libFuzzer target for the size and percent parsers: any
 * input either parses to a value that prints and re-parses consistently, or
 * fails with a message; nothing crashes or reads past the string. */
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "size.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = malloc(size + 1);
  if (text == NULL) return 0;
  memcpy(text, data, size);
  text[size] = '\0';
  uint64_t bytes;
  unsigned pct;
  struct vg_err err;
  if (vg_parse_size(text, &bytes, &err) == 0) {
    char buf[64], again[32];
    vg_format_size(bytes, buf, sizeof(buf));
    snprintf(again, sizeof(again), "%llu", (unsigned long long)bytes);
    uint64_t back = 0;
    if (vg_parse_size(again, &back, &err) != 0 || back != bytes) abort();
  } else if (err.msg[0] == '\0') {
    abort(); /* an error must say why */
  }
  if (vg_parse_percent(text, &pct, &err) == 0 && pct > 100) abort();
  free(text);
  return 0;
}
