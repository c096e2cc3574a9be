/*
 * csv.h -- a minimal reader for the trace's CSV files: a header naming the
 * columns, then rows of comma-separated fields (no quoting in these files).
 * Every error carries file:line.
 */
#ifndef VG_CSV_H
#define VG_CSV_H

#include <stdint.h>
#include <stdio.h>

#include "err.h"

#define VG_CSV_MAX_FIELDS 32

struct vg_csv {
  const char *path;
  FILE *f;
  char *line;
  size_t cap;
  int lineno;
  char *field[VG_CSV_MAX_FIELDS];
  int nfields, ncolumns;
  char *header[VG_CSV_MAX_FIELDS];
};

/* Opens path and reads its header. */
int vg_csv_open(struct vg_csv *csv, const char *path, struct vg_err *err);
void vg_csv_close(struct vg_csv *csv);
/* Column index of name in the header, or -1. */
int vg_csv_column(const struct vg_csv *csv, const char *name);
/* Reads the next non-empty row: 1 row, 0 end of file, -1 error. */
int vg_csv_next(struct vg_csv *csv, struct vg_err *err);
/* Field col of the current row as an integer in [min, max]. */
int vg_csv_int(const struct vg_csv *csv, int col, int64_t min, int64_t max, int64_t *out,
               struct vg_err *err);

#endif
