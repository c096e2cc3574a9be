/* json_get.c -- see json_get.h. */
#include "json_get.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

json_object *vg_json_get(json_object *o, const char *key) {
  json_object *v = NULL;
  if (o && json_object_is_type(o, json_type_object) && json_object_object_get_ex(o, key, &v))
    return v;
  return NULL;
}

const char *vg_json_get_str(json_object *o, const char *key) {
  json_object *v = vg_json_get(o, key);
  return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

/* The offset of the first \u0000 escape inside a string of the (valid) JSON
 * text, or -1. Outside strings no backslash occurs; inside, an escaped
 * backslash ("\\u0000" is a backslash and "u0000") must be skipped. */
static long nul_escape(const char *s, size_t n) {
  bool in = false;
  for (size_t i = 0; i < n; i++) {
    if (s[i] == '"') {
      in = !in;
    } else if (in && s[i] == '\\') {
      if (i + 5 < n && s[i + 1] == 'u' && memcmp(s + i + 2, "0000", 4) == 0) return (long)i;
      i++; /* the escaped character, a quote or backslash included */
    }
  }
  return -1;
}

json_object *vg_json_parse_object(const char *text, size_t len, const char *what,
                                  enum vg_json_bad *bad, char *why, size_t why_len) {
  *bad = VG_JSON_NOT_OBJECT;
  json_tokener *tok = json_tokener_new();
  if (!tok) {
    snprintf(why, why_len, "%s: out of memory", what);
    return NULL;
  }
  int n = len > (size_t)1 << 30 ? 1 << 30 : (int)len;
  json_object *v = json_tokener_parse_ex(tok, text, n);
  enum json_tokener_error e = json_tokener_get_error(tok);
  size_t end = json_tokener_get_parse_end(tok);
  if (e == json_tokener_continue && end == len) {
    /* A bare number may go on: the end of the text ends it ("42"). */
    v = json_tokener_parse_ex(tok, "", 1);
    e = json_tokener_get_error(tok);
  }
  json_tokener_free(tok);
  /* A NULL object with success is JSON null (json-c's error then reads
   * "success"; the check for an object below says what it is). */
  if (e != json_tokener_success) {
    snprintf(why, why_len, "%s is not JSON: %s at byte %zu", what,
             e == json_tokener_continue ? "unexpected end of input" : json_tokener_error_desc(e),
             end);
    json_object_put(v);
    return NULL;
  }
  while (end < len && strchr(" \t\r\n", text[end]) != NULL && text[end] != '\0') end++;
  if (end != len) {
    snprintf(why, why_len, "%s is not JSON: bytes after the JSON value, at byte %zu", what, end);
  } else if (!json_object_is_type(v, json_type_object)) {
    snprintf(why, why_len, "%s is not a JSON object but %s", what,
             v ? json_type_to_name(json_object_get_type(v)) : "null");
  } else {
    long at = memmem(text, len, "\\u0000", 6) ? nul_escape(text, len) : -1;
    if (at < 0) return v;
    long from = at > 40 ? at - 40 : 0;
    *bad = VG_JSON_NUL;
    snprintf(why, why_len,
             "%s: a string holds a NUL character (\\u0000) at byte %ld, in ...%.*s; no name or "
             "value here may contain one",
             what, at, (int)(at + 6 - from), text + from);
  }
  json_object_put(v);
  return NULL;
}
