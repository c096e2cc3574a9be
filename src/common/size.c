/* size.c -- see size.h. */
#include "size.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

struct unit {
  const char *suffix;
  uint64_t multiplier;
};

static const struct unit g_units[] = {
    {"", 1ULL},
    {"k", 1ULL << 10},
    {"m", 1ULL << 20},
    {"g", 1ULL << 30},
    {"t", 1ULL << 40},
    {"ki", 1ULL << 10},
    {"mi", 1ULL << 20},
    {"gi", 1ULL << 30},
    {"ti", 1ULL << 40},
    {"kb", 1000ULL},
    {"mb", 1000000ULL},
    {"gb", 1000000000ULL},
    {"tb", 1000000000000ULL},
};

static const struct unit *find_unit(const char *suffix) {
  for (size_t i = 0; i < sizeof(g_units) / sizeof(g_units[0]); i++) {
    if (strcasecmp(suffix, g_units[i].suffix) == 0) return &g_units[i];
  }
  return NULL;
}

/* Reads digits into *value; returns how many were read (0 on overflow too,
 * reported through *overflow). */
static size_t read_digits(const char *p, uint64_t *value, int *overflow) {
  size_t n = 0;
  *value = 0;
  while (p[n] >= '0' && p[n] <= '9') {
    uint64_t d = (uint64_t)(p[n] - '0');
    if (*value > (UINT64_MAX - d) / 10)
      *overflow = 1;
    else
      *value = *value * 10 + d;
    n++;
  }
  return n;
}

int vg_size_is_decimal(const char *text) {
  size_t n = text ? strlen(text) : 0;
  if (n < 3 || (text[n - 1] != 'b' && text[n - 1] != 'B')) return 0;
  const struct unit *u = find_unit(text + n - 2);
  return u != NULL && u->multiplier % 1000 == 0 && text[n - 3] >= '0' && text[n - 3] <= '9';
}

char *vg_size_decimal_note(const char *name, const char *text, uint64_t bytes, char *buf,
                           size_t len) {
  char shown[32];
  int n = (int)strlen(text) - 2; /* the number, without its unit */
  snprintf(buf, len,
           "%s%s%s means %llu bytes = %s (KB, MB, GB and TB are decimal units); for binary units "
           "write %.*s%c or %.*s%ci",
           name ? name : "", name ? "=" : "", text, (unsigned long long)bytes,
           vg_format_size(bytes, shown, sizeof(shown)), n, text, text[n] | 0x20, n, text,
           text[n] & ~0x20);
  return buf;
}

int vg_parse_size(const char *text, uint64_t *bytes, struct vg_err *err) {
  if (text == NULL || *text == '\0') return vg_err_set(err, "empty value is not a size");
  uint64_t whole = 0, frac = 0;
  int overflow = 0;
  size_t n = read_digits(text, &whole, &overflow);
  if (n == 0) return vg_err_set(err, "'%s' is not a size: it must start with a digit", text);
  const char *p = text + n;
  uint64_t frac_scale = 1;
  if (*p == '.') {
    p++;
    size_t digits = 0;
    while (*p >= '0' && *p <= '9') {
      if (digits < 18) {
        frac = frac * 10 + (uint64_t)(*p - '0');
        frac_scale *= 10;
      }
      digits++;
      p++;
    }
    if (digits == 0) return vg_err_set(err, "'%s' is not a size: no digits after '.'", text);
  }
  const struct unit *unit = find_unit(p);
  if (unit == NULL)
    return vg_err_set(err,
                      "'%s' is not a size: unknown unit '%s' (use bytes, k/m/g/t, "
                      "Ki/Mi/Gi/Ti or KB/MB/GB/TB)",
                      text, p);
  if (overflow || (unit->multiplier > 1 && whole > UINT64_MAX / unit->multiplier))
    return vg_err_set(err, "'%s' is too large (the limit is 2^64-1 bytes)", text);
  uint64_t total = whole * unit->multiplier;
  if (frac != 0) {
    if (unit->multiplier == 1)
      return vg_err_set(err, "'%s' is not a size: a byte count must be whole", text);
    /* frac/frac_scale < 1, so the product fits once divided; split the
     * multiplier to avoid overflowing the intermediate. */
    uint64_t part = (unit->multiplier / frac_scale) * frac +
                    (unit->multiplier % frac_scale) * frac / frac_scale;
    if (total > UINT64_MAX - part)
      return vg_err_set(err, "'%s' is too large (the limit is 2^64-1 bytes)", text);
    total += part;
    if (total == 0) return vg_err_set(err, "'%s' rounds down to 0 bytes", text);
  }
  *bytes = total;
  return 0;
}

int vg_parse_percent(const char *text, unsigned *percent, struct vg_err *err) {
  if (text == NULL || *text == '\0') return vg_err_set(err, "empty value is not a percentage");
  uint64_t value = 0;
  int overflow = 0;
  size_t n = read_digits(text, &value, &overflow);
  if (n == 0 || text[n] != '\0')
    return vg_err_set(err, "'%s' is not a percentage: use a whole number from 0 to 100", text);
  if (overflow || value > 100)
    return vg_err_set(err, "'%s' is out of range: a percentage is 0 to 100", text);
  *percent = (unsigned)value;
  return 0;
}

char *vg_format_size(uint64_t bytes, char *buf, size_t len) {
  static const char *const names[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int i = 0;
  uint64_t unit = 1;
  while (i < 6 && bytes / unit >= 1024) {
    unit <<= 10;
    i++;
  }
  /* Exact where it can be: "1.5 GiB", else "3000 MiB" rather than a
   * rounded "2.9 GiB" that a user would compare with the 3000 they asked. */
  uint64_t rest = bytes % unit;
  if (rest == 0) {
    snprintf(buf, len, "%llu %s", (unsigned long long)(bytes / unit), names[i]);
  } else if (rest * 10 % unit != 0 && i > 0 && bytes % (unit >> 10) == 0) {
    snprintf(buf, len, "%llu %s", (unsigned long long)(bytes / (unit >> 10)), names[i - 1]);
  } else {
    snprintf(buf, len, "%.1f %s", (double)bytes / (double)unit, names[i]);
  }
  return buf;
}
