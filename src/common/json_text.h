/*
 * json_text.h -- a JSON string written to a stdio stream, for the programs
 * that print one JSON object by hand (vgpu status --json, vgpu-burn --json)
 * instead of building it with a JSON library they do not otherwise need.
 */
#ifndef VG_JSON_TEXT_H
#define VG_JSON_TEXT_H

#include <stdio.h>

/* Writes s quoted, escaped as RFC 8259 requires (quote, backslash, control
 * characters; other bytes as they are). */
void vg_json_fputs(FILE *f, const char *s);

#endif
