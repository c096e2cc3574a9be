/*
 * suggest.c -- "did you mean --memory?" for a mistyped option.
 *
 * The closest known option by edit distance (insertions, deletions,
 * substitutions and swaps of neighbours, each costing 1), offered only when
 * it is within 2 edits, so a typo like --memroy or --core finds its option
 * and something unrelated gets no guess.
 */
#include <string.h>

#include "cli.h"

#define MAX_OPT 32

/* Optimal-string-alignment distance of a and b (both shorter than MAX_OPT). */
static size_t distance(const char *a, const char *b) {
  size_t n = strlen(a), m = strlen(b);
  size_t d[MAX_OPT + 1][MAX_OPT + 1];
  for (size_t i = 0; i <= n; i++) d[i][0] = i;
  for (size_t j = 0; j <= m; j++) d[0][j] = j;
  for (size_t i = 1; i <= n; i++)
    for (size_t j = 1; j <= m; j++) {
      size_t best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
      if (d[i - 1][j] + 1 < best) best = d[i - 1][j] + 1;
      if (d[i][j - 1] + 1 < best) best = d[i][j - 1] + 1;
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
          d[i - 2][j - 2] + 1 < best)
        best = d[i - 2][j - 2] + 1;
      d[i][j] = best;
    }
  return d[n][m];
}

const char *vg_cli_suggest(const char *given, const char *const *known) {
  const char *best = NULL;
  size_t best_d = 3; /* offer nothing beyond 2 edits */
  if (strlen(given) >= MAX_OPT) return NULL;
  for (const char *const *k = known; *k != NULL; k++) {
    if (strlen(*k) >= MAX_OPT) continue;
    size_t d = distance(given, *k);
    if (d < best_d) {
      best_d = d;
      best = *k;
    }
  }
  return best;
}

void vg_cli_unknown_option(const char *verb, const char *given, const char *const *known) {
  const char *near = vg_cli_suggest(given, known);
  if (near != NULL)
    fprintf(stderr, "vgpu %s: unknown option '%s' (did you mean %s?)\n", verb, given, near);
  else
    fprintf(stderr, "vgpu %s: unknown option '%s' (see vgpu %s --help)\n", verb, given, verb);
}
