/*
 * base64.h -- RFC 4648 base64, both ways, for the places Kubernetes puts
 * bytes in JSON or YAML: kubeconfig's *-data fields, a Secret's data, a
 * webhook's caBundle and an admission response's patch.
 */
#ifndef VG_BASE64_H
#define VG_BASE64_H

#include <stddef.h>

/* Standard alphabet with padding, no line breaks; NUL-terminated, malloc'd.
 * NULL when out of memory. */
char *vg_base64_encode(const void *data, size_t len);

/* Standard or URL-safe alphabet, padding optional, whitespace ignored.
 * Malloc'd, NUL-terminated (not counted in *out_len). NULL on invalid or
 * empty input. */
char *vg_base64_decode(const char *in, size_t *out_len);

#endif
