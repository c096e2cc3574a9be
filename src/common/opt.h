/*
 * opt.h -- one way for every vgpu program to answer a bad option: the same
 * words, and a guess at what was meant ("did you mean --memory?").
 */
#ifndef VG_OPT_H
#define VG_OPT_H

#include <getopt.h>

/* The known option closest to given within 2 edits, or NULL. known ends in
 * NULL. */
const char *vg_opt_suggest(const char *given, const char *const *known);
/* Prints "PROG: unknown option 'GIVEN' (did you mean X?)", or "(see PROG
 * --help)" when nothing is close. */
void vg_opt_unknown(const char *prog, const char *given, const char *const *known);
/* The value of option name at argv[*i], for programs that walk argv
 * themselves: "--name VALUE" (then *i moves past VALUE), "--name=VALUE",
 * and for a one-letter name also "-nVALUE". NULL when argv[*i] is another
 * option; "" when the value is missing. */
const char *vg_opt_value(int argc, char **argv, int *i, const char *name);
/* getopt_long, except that the messages are ours: an unknown long option
 * gets a guess among longopts, a missing value says "needs a value". Both
 * return '?', as getopt_long does. */
int vg_getopt_long(int argc, char *const argv[], const char *optstring,
                   const struct option *longopts, const char *prog);

#endif
