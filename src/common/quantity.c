/*
 * quantity.c -- see quantity.h.
 *
 * The value is computed exactly, as a string of decimal digits: the
 * mantissa's digits (the decimal point remembered as a count of fraction
 * digits), doubled once per power of two of a binary suffix, then read with
 * the point moved by the suffix's power of ten. No double is involved, so the
 * edges come out right: 9223372036854775807 is accepted and one more is not,
 * 0.5Ki is 512, and 2.9999999999 is 3 because the API server rounds up to 1n
 * before anyone reads it.
 */
#include "quantity.h"

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#define EXPONENT_CLAMP 100000 /* far past any int64; keeps the arithmetic in int */
#define NANO_DIGITS 9         /* the API server keeps quantities to 1n */

struct suffix {
  const char *name;
  int pow10, pow2;
};

static const struct suffix g_suffixes[] = {
    {"", 0, 0},    {"n", -9, 0},  {"u", -6, 0},  {"m", -3, 0}, {"k", 3, 0},   {"M", 6, 0},
    {"G", 9, 0},   {"T", 12, 0},  {"P", 15, 0},  {"E", 18, 0}, {"Ki", 0, 10}, {"Mi", 0, 20},
    {"Gi", 0, 30}, {"Ti", 0, 40}, {"Pi", 0, 50}, {"Ei", 0, 60}};

/* A non-negative integer as decimal digits (values 0..9), most significant
 * first. Room for the longest text plus the 19 digits 2^60 can add. */
struct digits {
  char d[VG_QUANTITY_MAX_TEXT + 24];
  size_t n;
};

static void times_two(struct digits *x) {
  int carry = 0;
  for (size_t i = x->n; i-- > 0;) {
    int v = x->d[i] * 2 + carry;
    x->d[i] = (char)(v % 10);
    carry = v / 10;
  }
  if (carry != 0) {
    memmove(x->d + 1, x->d, x->n);
    x->d[0] = (char)carry;
    x->n++;
  }
}

/* Digit j counted from the right (0 = units), 0 past the left end. */
static int digit_from_right(const struct digits *x, size_t j) {
  return j < x->n ? x->d[x->n - 1 - j] : 0;
}

/* The digits from the right-index `from` leftwards as an integer; false when
 * over INT64_MAX. */
static bool high_part(const struct digits *x, size_t from, int64_t *out) {
  int64_t v = 0;
  for (size_t j = x->n; j-- > from;) {
    int d = digit_from_right(x, j);
    if (v > (INT64_MAX - d) / 10) return false;
    v = v * 10 + d;
  }
  *out = v;
  return true;
}

/* "e<int>" / "E<int>" (sign allowed) -> *pow10, clamped; false if not that. */
static bool exponent_suffix(const char *s, int *pow10) {
  if ((s[0] != 'e' && s[0] != 'E') || s[1] == '\0') return false;
  const char *p = s + 1;
  bool minus = *p == '-';
  if (*p == '-' || *p == '+') p++;
  if (*p == '\0') return false;
  long v = 0;
  for (; *p != '\0'; p++) {
    if (*p < '0' || *p > '9') return false;
    if (v < EXPONENT_CLAMP) v = v * 10 + (*p - '0');
  }
  if (v > EXPONENT_CLAMP) v = EXPONENT_CLAMP;
  *pow10 = (int)(minus ? -v : v);
  return true;
}

static int read_suffix(const char *text, const char *s, int *pow10, int *pow2,
                       enum vg_quantity_format *format, struct vg_err *err) {
  for (size_t i = 0; i < sizeof(g_suffixes) / sizeof(g_suffixes[0]); i++) {
    if (strcmp(s, g_suffixes[i].name) != 0) continue;
    *pow10 = g_suffixes[i].pow10;
    *pow2 = g_suffixes[i].pow2;
    *format = *pow2 ? VG_QUANTITY_BINARY_SI : VG_QUANTITY_DECIMAL_SI;
    return 0;
  }
  if (exponent_suffix(s, pow10)) {
    *pow2 = 0;
    *format = VG_QUANTITY_DECIMAL_EXPONENT;
    return 0;
  }
  return vg_err_set(err,
                    "quantity '%s' has an unknown suffix '%s' (known: Ki Mi Gi Ti Pi Ei, n u m k "
                    "M G T P E, e<exponent>, or none)",
                    text, s);
}

/* x * 10^pow10 as a whole number in *value, rounding up to 1n first; a
 * fraction left after that is refused, or rounded up when ceil. */
static int whole_value(const char *text, const struct digits *x, int pow10, bool ceil,
                       int64_t *value, struct vg_err *err) {
  if (pow10 >= 0) {
    if (x->n + (size_t)pow10 > 19 || !high_part(x, 0, value))
      return vg_err_set(err, "quantity '%s' is too large (over %lld)", text, (long long)INT64_MAX);
    for (int i = 0; i < pow10; i++) {
      if (*value > INT64_MAX / 10)
        return vg_err_set(err, "quantity '%s' is too large (over %lld)", text,
                          (long long)INT64_MAX);
      *value *= 10;
    }
    return 0;
  }
  size_t k = (size_t)-pow10; /* the fraction is the k rightmost digits */
  bool fraction = false;
  for (size_t j = 0; j < k && j < x->n; j++) fraction |= digit_from_right(x, j) != 0;
  /* Rounded up to 1n, a fraction of .999999999 followed by anything but
   * zeros becomes the next whole number. */
  bool round_up = k > NANO_DIGITS, below_nano = false;
  for (size_t j = k - NANO_DIGITS; round_up && j < k; j++) round_up = digit_from_right(x, j) == 9;
  for (size_t j = 0; round_up && j < k - NANO_DIGITS && j < x->n; j++)
    below_nano |= digit_from_right(x, j) != 0;
  round_up = (round_up && below_nano) || (fraction && ceil);
  if (fraction && !round_up) return vg_err_set(err, "quantity '%s' is not a whole number", text);
  if (!high_part(x, k, value) || (round_up && *value == INT64_MAX))
    return vg_err_set(err, "quantity '%s' is too large (over %lld)", text, (long long)INT64_MAX);
  *value += round_up;
  return 0;
}

/* text x 10^shift into *value: whole (or rounded up, ceil). */
static int parse_scaled(const char *text, int shift, bool ceil, int64_t *value,
                        enum vg_quantity_format *format, struct vg_err *err) {
  if (text == NULL || text[0] == '\0') return vg_err_set(err, "an empty quantity");
  if (strlen(text) > VG_QUANTITY_MAX_TEXT)
    return vg_err_set(err, "quantity '%.32s...' is longer than %d characters", text,
                      VG_QUANTITY_MAX_TEXT);
  const char *p = text;
  bool negative = *p == '-';
  if (*p == '-' || *p == '+') p++;
  struct digits x = {.n = 0};
  int ndigits = 0, frac = 0;
  bool point = false;
  for (; (*p >= '0' && *p <= '9') || (*p == '.' && !point); p++) {
    if (*p == '.') {
      point = true;
      continue;
    }
    ndigits++;
    frac += point;
    if (x.n > 0 || *p != '0') x.d[x.n++] = (char)(*p - '0'); /* leading zeros add nothing */
  }
  if (ndigits == 0)
    return vg_err_set(err,
                      "'%s' is not a quantity: it must start with digits (an optional sign and "
                      "decimal point allowed), then a suffix",
                      text);
  int pow10 = 0, pow2 = 0;
  enum vg_quantity_format fmt = VG_QUANTITY_DECIMAL_SI;
  if (read_suffix(text, p, &pow10, &pow2, &fmt, err) != 0) return -1;
  int64_t v = 0;
  if (x.n > 0) {
    if (negative) return vg_err_set(err, "quantity '%s' is negative", text);
    for (int i = 0; i < pow2; i++) times_two(&x);
    if (whole_value(text, &x, pow10 - frac + shift, ceil, &v, err) != 0) return -1;
  }
  *value = v;
  if (format != NULL) *format = fmt;
  return 0;
}

int vg_quantity_parse(const char *text, int64_t *value, enum vg_quantity_format *format,
                      struct vg_err *err) {
  return parse_scaled(text, 0, false, value, format, err);
}

int vg_quantity_parse_ceil(const char *text, int shift, int64_t *value, struct vg_err *err) {
  return parse_scaled(text, shift, true, value, NULL, err);
}
