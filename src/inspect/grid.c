/*
 * grid.c -- aligned text columns for the inspect tables (see grid.h).
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "grid.h"

void grid_init(struct grid *g, int ncols) {
  memset(g, 0, sizeof(*g));
  g->ncols = ncols;
}

void grid_row(struct grid *g) {
  size_t n = (size_t)(g->nrows + 1) * (size_t)g->ncols;
  char **grown = realloc(g->cell, n * sizeof(*grown));
  if (grown == NULL) {
    g->oom = 1;
    return;
  }
  g->cell = grown;
  memset(grown + (size_t)g->nrows * (size_t)g->ncols, 0, (size_t)g->ncols * sizeof(*grown));
  g->nrows++;
}

void grid_set(struct grid *g, int col, const char *fmt, ...) {
  if (g->nrows == 0 || col < 0 || col >= g->ncols) return;
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  char **slot = &g->cell[(size_t)(g->nrows - 1) * (size_t)g->ncols + (size_t)col];
  free(*slot);
  *slot = strdup(buf);
  if (*slot == NULL) g->oom = 1;
}

static const char *cell(const struct grid *g, int row, int col) {
  const char *s = g->cell[(size_t)row * (size_t)g->ncols + (size_t)col];
  return s != NULL ? s : "";
}

static size_t column_width(const struct grid *g, int col) {
  size_t width = 0;
  for (int k = 0; k < g->nrows; k++) {
    size_t w = strlen(cell(g, k, col));
    if (w > width) width = w;
  }
  return width;
}

/* Row r as one line, without the spaces that would end it (empty trailing
 * cells pad to nothing); returns its length. */
static size_t print_row(const struct grid *g, FILE *out, int r) {
  size_t len = 0, pending = 0;
  for (int c = 0; c < g->ncols; c++) {
    const char *s = cell(g, r, c);
    if (*s != '\0') {
      len += (size_t)fprintf(out, "%*s%s", (int)pending, "", s);
      pending = 0;
    }
    if (c < g->ncols - 1) pending += column_width(g, c) + 2 - strlen(s);
  }
  fputc('\n', out);
  return len;
}

size_t grid_print(const struct grid *g, FILE *out, int measure) {
  size_t measured = 0;
  for (int r = 0; r < g->nrows; r++) {
    size_t len = print_row(g, out, r);
    if (r == measure) measured = len;
  }
  return measured;
}

size_t grid_raw_len(const struct grid *g, int row) {
  if (row < 0 || row >= g->nrows) return 0;
  size_t len = (size_t)g->ncols - 1;
  for (int c = 0; c < g->ncols; c++) len += strlen(cell(g, row, c));
  return len;
}

void grid_free(struct grid *g) {
  for (int i = 0; i < g->nrows * g->ncols; i++) free(g->cell[i]);
  free(g->cell);
  memset(g, 0, sizeof(*g));
}
