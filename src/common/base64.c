/* base64.c -- see base64.h. */
#include "base64.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *vg_base64_encode(const void *data, size_t len) {
  const unsigned char *in = data;
  char *out = malloc((len + 2) / 3 * 4 + 1);
  if (out == NULL) return NULL;
  size_t o = 0;
  for (size_t i = 0; i < len; i += 3) {
    unsigned v = (unsigned)in[i] << 16;
    if (i + 1 < len) v |= (unsigned)in[i + 1] << 8;
    if (i + 2 < len) v |= in[i + 2];
    out[o++] = alphabet[(v >> 18) & 63];
    out[o++] = alphabet[(v >> 12) & 63];
    out[o++] = i + 1 < len ? alphabet[(v >> 6) & 63] : '=';
    out[o++] = i + 2 < len ? alphabet[v & 63] : '=';
  }
  out[o] = '\0';
  return out;
}

static int b64val(int ch) {
  if (ch >= 'A' && ch <= 'Z') return ch - 'A';
  if (ch >= 'a' && ch <= 'z') return ch - 'a' + 26;
  if (ch >= '0' && ch <= '9') return ch - '0' + 52;
  if (ch == '+' || ch == '-') return 62;
  if (ch == '/' || ch == '_') return 63;
  return -1;
}

char *vg_base64_decode(const char *in, size_t *out_len) {
  size_t n = strlen(in);
  char *out = malloc(n / 4 * 3 + 4);
  if (out == NULL) return NULL;
  size_t o = 0;
  unsigned acc = 0;
  int bits = 0;
  bool pad = false;
  for (size_t i = 0; i < n; i++) {
    int ch = (unsigned char)in[i];
    if (ch == ' ' || ch == '\n' || ch == '\r' || ch == '\t') continue;
    if (ch == '=') {
      pad = true;
      continue;
    }
    int v = b64val(ch);
    if (v < 0 || pad) {
      free(out);
      return NULL;
    }
    acc = (acc << 6) | (unsigned)v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[o++] = (char)((acc >> bits) & 0xff);
    }
  }
  if (o == 0) {
    free(out);
    return NULL;
  }
  out[o] = '\0';
  *out_len = o;
  return out;
}
