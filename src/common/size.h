/*
 * size.h -- parsing and printing of memory sizes and percentages.
 *
 * The grammar (README.md, "Sizes") is fixed because users type these values into pod
 * specs and shells: a bare number is bytes; k/m/g/t and Ki/Mi/Gi/Ti are binary
 * multiples ("300m" is 300 MiB, as HAMi's users write it); KB/MB/GB/TB are
 * decimal; a decimal fraction such as "1.5g" is allowed. Unit letters are
 * case-insensitive. Anything else -- signs, spaces, hex, unknown units, values
 * past 2^64-1 -- is an error with a message that says why, because a limit
 * that silently parsed as something else is worse than no limit at all.
 */
#ifndef VG_SIZE_H
#define VG_SIZE_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

/* Parses a size into bytes. Returns 0, or -1 with err describing the problem
 * (the message quotes the value but not a variable name: callers add it). */
int vg_parse_size(const char *text, uint64_t *bytes, struct vg_err *err);

/* Does text end in a decimal unit (KB, MB, GB, TB, any case)? Such a limit
 * is powers of ten -- "300Mb" is 286.1 MiB -- which a user who meant MiB
 * should be told (vg_size_decimal_note). */
int vg_size_is_decimal(const char *text);
/* "NAME=300Mb means 300000000 bytes = 286.1 MiB (KB, MB, GB and TB are
 * decimal units); for binary units write 300m or 300Mi" into buf (name may
 * be NULL); returns buf. */
char *vg_size_decimal_note(const char *name, const char *text, uint64_t bytes, char *buf,
                           size_t len);

/* Parses a whole-number percentage 0..100. */
int vg_parse_percent(const char *text, unsigned *percent, struct vg_err *err);

/* Writes "300 MiB", "1.5 GiB", "512 B" into buf; returns buf. */
char *vg_format_size(uint64_t bytes, char *buf, size_t len);

#endif
