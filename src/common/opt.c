/*
 * opt.c -- bad options, answered alike by every program.
 *
 * The guess is the known option closest by edit distance (insertions,
 * deletions, substitutions and swaps of neighbours, each costing 1), offered
 * only within 2 edits, so a typo like --memroy finds --memory and something
 * unrelated gets no guess. vg_getopt_long puts getopt_long's own messages
 * (which differ by glibc version and give no guess) behind the same words.
 */
#include "opt.h"

#include <stdio.h>
#include <string.h>

#define MAX_OPT 32
#define MAX_LONGOPTS 64

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

const char *vg_opt_suggest(const char *given, const char *const *known) {
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

void vg_opt_unknown(const char *prog, const char *given, const char *const *known) {
  const char *near = vg_opt_suggest(given, known);
  if (near != NULL)
    fprintf(stderr, "%s: unknown option '%s' (did you mean %s?)\n", prog, given, near);
  else
    fprintf(stderr, "%s: unknown option '%s' (see %s --help)\n", prog, given, prog);
}

/* "--name" for each long option, in names (storage) and known (NULL-ended). */
static void long_names(const struct option *longopts, char names[][MAX_OPT + 2],
                       const char **known) {
  int n = 0;
  for (; longopts[n].name != NULL && n < MAX_LONGOPTS; n++) {
    snprintf(names[n], MAX_OPT + 2, "--%s", longopts[n].name);
    known[n] = names[n];
  }
  known[n] = NULL;
}

/* The option as typed, without an "=value". */
static void typed(const char *arg, char *out, size_t len) {
  snprintf(out, len, "%s", arg);
  char *eq = strchr(out, '=');
  if (eq != NULL) *eq = '\0';
}

int vg_getopt_long(int argc, char *const argv[], const char *optstring,
                   const struct option *longopts, const char *prog) {
  char colon_first[64];
  snprintf(colon_first, sizeof(colon_first), ":%s", optstring);
  opterr = 0; /* the messages below instead of getopt's */
  int c = getopt_long(argc, argv, colon_first, longopts, NULL);
  if (c != '?' && c != ':') return c;
  /* Long options are whole words in argv; a short one may sit in a cluster. */
  const char *arg = optind > 0 && optind <= argc ? argv[optind - 1] : "";
  char given[MAX_OPT * 4];
  if (strncmp(arg, "--", 2) == 0)
    typed(arg, given, sizeof(given));
  else
    snprintf(given, sizeof(given), "-%c", optopt);
  if (c == ':') {
    fprintf(stderr, "%s: option '%s' needs a value\n", prog, given);
    return '?';
  }
  char names[MAX_LONGOPTS][MAX_OPT + 2];
  const char *known[MAX_LONGOPTS + 1];
  long_names(longopts, names, known);
  vg_opt_unknown(prog, given, known);
  return '?';
}

const char *vg_opt_value(int argc, char **argv, int *i, const char *name) {
  size_t n = strlen(name);
  const char *a = argv[*i];
  if (strncmp(a, name, n) != 0) return NULL;
  if (a[n] == '=') return a + n + 1;
  if (a[n] == '\0') return *i + 1 < argc ? argv[++*i] : "";
  if (n == 2 && name[0] == '-' && name[1] != '-') return a + n; /* "-ojson" */
  return NULL;
}
