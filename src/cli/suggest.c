/*
 * suggest.c -- "did you mean --memory?" for a mistyped option of a vgpu
 * verb; the guess itself is the shared one (src/common/opt.c).
 */
#include <stdio.h>

#include "cli.h"
#include "opt.h"

void vg_cli_unknown_option(const char *verb, const char *given, const char *const *known) {
  char prog[64];
  snprintf(prog, sizeof(prog), "vgpu %s", verb);
  vg_opt_unknown(prog, given, known);
}
