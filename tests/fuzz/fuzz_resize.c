/* fuzz_resize.c -- libFuzzer target for the resize annotations' parsers
 * (src/k8s/resize.c): any input either parses into values in range that the
 * writer turns back into text parsing to the same thing, or fails with a
 * message. The same bytes are tried as a request, a status and an
 * acknowledgement. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "resize.h"

static void request(const char *text) {
  struct vg_resize_request a, b;
  struct vg_err err = {""};
  if (vg_resize_request_parse(text, &a, &err) != 0) {
    if (err.msg[0] == '\0') abort(); /* a refusal says why */
    return;
  }
  if (a.memory < -1 || a.memory == 0 || a.cores < -1 || a.cores > 100) abort();
  if (a.memory < 0 && a.cores < 0) abort(); /* asks for something */
  char *out = vg_resize_request_format(&a);
  if (out == NULL || vg_resize_request_parse(out, &b, &err) != 0) abort();
  if (strcmp(a.id, b.id) != 0 || strcmp(a.container, b.container) != 0 || a.memory != b.memory ||
      a.cores != b.cores)
    abort();
  free(out);
}

static void status(const char *text) {
  struct vg_resize_status a, b;
  struct vg_err err = {""};
  if (vg_resize_status_parse(text, &a, &err) != 0) return;
  char *out = vg_resize_status_format(&a);
  if (out == NULL || vg_resize_status_parse(out, &b, &err) != 0) abort();
  if (strcmp(a.id, b.id) != 0 || a.phase != b.phase || strcmp(a.reason, b.reason) != 0) abort();
  free(out);
}

static void ack(const char *text) {
  char a[VG_RESIZE_ID_MAX], b[VG_RESIZE_ID_MAX];
  struct vg_err err = {""};
  if (vg_resize_node_parse(text, a, &err) != 0) return;
  char *out = vg_resize_node_format(a);
  if (out == NULL || vg_resize_node_parse(out, b, &err) != 0 || strcmp(a, b) != 0) abort();
  free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = malloc(size + 1);
  if (text == NULL) return 0;
  memcpy(text, data, size);
  text[size] = '\0';
  request(text);
  status(text);
  ack(text);
  free(text);
  return 0;
}
