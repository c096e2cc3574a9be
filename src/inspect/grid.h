/*
 * grid.h -- a tiny tab writer: rows of cells printed in aligned columns with
 * two spaces between them (what Go's tabwriter gives Aliyun's inspect); no
 * line ends in spaces (the last column, and empty trailing cells, are not
 * padded).
 */
#ifndef VG_INSPECT_GRID_H
#define VG_INSPECT_GRID_H

#include <stdio.h>

struct grid {
  int ncols, nrows;
  char **cell; /* nrows * ncols, heap strings */
  int oom;     /* an allocation failed */
};

void grid_init(struct grid *g, int ncols);
/* Appends an empty row; cells are set with grid_set. */
void grid_row(struct grid *g);
/* Sets column col of the last row (printf-style). */
void grid_set(struct grid *g, int col, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Prints the rows; returns the printed length of row `measure` (no newline). */
size_t grid_print(const struct grid *g, FILE *out, int measure);
/* The length of row `row` as Aliyun's inspect builds it before alignment:
 * its cells joined by one tab each (no newline). Aliyun sizes its dash lines
 * from it. */
size_t grid_raw_len(const struct grid *g, int row);
void grid_free(struct grid *g);

#endif
