/*
 * extender_out.c -- filter's and prioritize's answers, written straight into
 * one growing buffer (textbuf.h).
 *
 * Both answers are flat lists with an entry per candidate node: 1,213 entries
 * for the Alibaba cluster. Built as json-c objects, serialised and freed, they
 * took 40 % of prioritize's instructions (callgrind, bench/extender_latency.py);
 * written here they cost a few per byte. Requests are still parsed by json-c,
 * and whole Node objects (the NodeList mode) are still serialised by it.
 * Strings are escaped as RFC 8259 requires: quote, backslash and the control
 * characters; other bytes (UTF-8 included) pass as they are.
 *
 * Every reason and error text the extender sends leaves through
 * ext_out_reason, which lets no '%' through: kube-scheduler hands a refusal's
 * text to Eventf as the format string, so "0% cores" would reach the user as
 * "0%!c(MISSING)ores". The texts themselves say "percent"; this is the last
 * resort for a '%' that arrives from elsewhere (an API server message, a
 * value quoted from the pod).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "extender_int.h"

void ext_out_raw(struct ext_out *o, const char *s, size_t n) { vg_textbuf_add(&o->t, s, n); }

void ext_out_lit(struct ext_out *o, const char *s) { ext_out_raw(o, s, strlen(s)); }

/* The n bytes at s, escaped for the inside of a JSON string. */
static void put_escaped(struct ext_out *o, const char *s, size_t n) {
  const char *run = s; /* bytes that need no escape are copied a run at a time */
  for (const unsigned char *p = (const unsigned char *)s;; p++) {
    if ((const char *)p < s + n && *p >= 0x20 && *p != '"' && *p != '\\') continue;
    ext_out_raw(o, run, (size_t)((const char *)p - run));
    if ((const char *)p == s + n) break;
    char esc[8];
    if (*p == '"' || *p == '\\')
      snprintf(esc, sizeof(esc), "\\%c", *p);
    else
      snprintf(esc, sizeof(esc), "\\u%04x", *p);
    ext_out_lit(o, esc);
    run = (const char *)p + 1;
  }
}

void ext_out_str(struct ext_out *o, const char *s) {
  ext_out_raw(o, "\"", 1);
  put_escaped(o, s, strlen(s));
  ext_out_raw(o, "\"", 1);
}

void ext_out_reason(struct ext_out *o, const char *s) {
  ext_out_raw(o, "\"", 1);
  for (const char *p = s;;) {
    const char *pct = strchr(p, '%');
    put_escaped(o, p, pct ? (size_t)(pct - p) : strlen(p));
    if (!pct) break;
    ext_out_lit(o, pct > s && pct[-1] != ' ' ? " percent" : "percent"); /* "50%": "50 percent" */
    p = pct + 1;
  }
  ext_out_raw(o, "\"", 1);
}

void ext_out_int(struct ext_out *o, long long v) {
  char num[24], *p = num + sizeof(num); /* digits from the right; snprintf was 700 instructions */
  unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
  do *--p = (char)('0' + u % 10);
  while (u /= 10);
  if (v < 0) *--p = '-';
  ext_out_raw(o, p, (size_t)(num + sizeof(num) - p));
}

char *ext_out_take(struct ext_out *o) { return vg_textbuf_take(&o->t, NULL); }
