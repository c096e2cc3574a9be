/*
 * csv.c -- see csv.h.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>

#include "csv.h"

/* Splits csv->line in place into csv->field; returns the count or -1. */
static int split(struct vg_csv *csv, char **out, struct vg_err *err) {
  char *p = csv->line;
  size_t len = strlen(p);
  while (len > 0 && (p[len - 1] == '\n' || p[len - 1] == '\r')) p[--len] = '\0';
  int n = 0;
  for (;;) {
    if (n == VG_CSV_MAX_FIELDS)
      return vg_err_set(err, "%s:%d: more than %d fields", csv->path, csv->lineno,
                        VG_CSV_MAX_FIELDS);
    out[n++] = p;
    char *comma = strchr(p, ',');
    if (!comma) return n;
    *comma = '\0';
    p = comma + 1;
  }
}

int vg_csv_open(struct vg_csv *csv, const char *path, struct vg_err *err) {
  memset(csv, 0, sizeof(*csv));
  csv->path = path;
  csv->f = fopen(path, "r");
  if (!csv->f) return vg_err_set(err, "%s: cannot open: %s", path, strerror(errno));
  /* fopen of a directory succeeds on Linux and the first read fails with
   * EISDIR: without these checks both read as "empty file". */
  struct stat st;
  if (fstat(fileno(csv->f), &st) == 0 && S_ISDIR(st.st_mode)) {
    vg_csv_close(csv);
    return vg_err_set(err, "%s: is a directory (expected a CSV file)", path);
  }
  errno = 0;
  if (getline(&csv->line, &csv->cap, csv->f) < 0) {
    int e = errno;
    bool failed = ferror(csv->f);
    vg_csv_close(csv);
    if (failed) return vg_err_set(err, "%s: cannot read: %s", path, strerror(e ? e : EIO));
    return vg_err_set(err, "%s: empty file (expected a header line)", path);
  }
  csv->lineno = 1;
  int n = split(csv, csv->header, err);
  if (n < 0) return vg_csv_close(csv), -1;
  csv->ncolumns = n;
  csv->line = NULL; /* the header keeps that buffer */
  csv->cap = 0;
  return 0;
}

void vg_csv_close(struct vg_csv *csv) {
  if (csv->f) fclose(csv->f);
  if (csv->ncolumns > 0) free(csv->header[0]);
  free(csv->line);
  csv->f = NULL;
  csv->line = NULL;
  csv->ncolumns = 0;
}

int vg_csv_column(const struct vg_csv *csv, const char *name) {
  for (int i = 0; i < csv->ncolumns; i++)
    if (strcmp(csv->header[i], name) == 0) return i;
  return -1;
}

int vg_csv_next(struct vg_csv *csv, struct vg_err *err) {
  for (;;) {
    if (getline(&csv->line, &csv->cap, csv->f) < 0) return 0;
    csv->lineno++;
    if (strspn(csv->line, "\r\n") == strlen(csv->line)) continue;
    csv->nfields = split(csv, csv->field, err);
    if (csv->nfields < 0) return -1;
    if (csv->nfields != csv->ncolumns)
      return vg_err_set(err, "%s:%d: %d fields, but the header has %d columns", csv->path,
                        csv->lineno, csv->nfields, csv->ncolumns);
    return 1;
  }
}

int vg_csv_int(const struct vg_csv *csv, int col, int64_t min, int64_t max, int64_t *out,
               struct vg_err *err) {
  const char *s = csv->field[col];
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (*s == '\0' || *end != '\0' || errno != 0)
    return vg_err_set(err, "%s:%d: %s: '%s' is not an integer", csv->path, csv->lineno,
                      csv->header[col], s);
  if (v < min || v > max)
    return vg_err_set(err, "%s:%d: %s: %lld is out of range %lld..%lld", csv->path, csv->lineno,
                      csv->header[col], v, (long long)min, (long long)max);
  *out = v;
  return 0;
}
