/*
 * model.c -- the small helpers the inspect model needs: string copies, a
 * growable array, warnings collected for main to print, and freeing.
 *
 * ins_field/ins_str read a JSON object's member of the expected type (NULL
 * otherwise), so the parsers can say "missing or not a string" in one test.
 *
 * Warnings are kept in the model rather than printed where they arise, so
 * that the parsing code stays free of I/O and main decides where they go
 * (stderr for the table, a "warnings" array for -o json).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inspect.h"

char *ins_strdup(const char *s) { return strdup(s != NULL ? s : ""); }

json_object *ins_field(json_object *o, const char *key) {
  json_object *v = NULL;
  if (o == NULL || !json_object_is_type(o, json_type_object)) return NULL;
  return json_object_object_get_ex(o, key, &v) ? v : NULL;
}

const char *ins_str(json_object *o, const char *key) {
  json_object *v = ins_field(o, key);
  return v != NULL && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

void *ins_grow(void *arr_ptr, int *n, size_t sz) {
  void **arr = arr_ptr;
  char *grown = realloc(*arr, (size_t)(*n + 1) * sz);
  if (grown == NULL) return NULL;
  *arr = grown;
  memset(grown + (size_t)*n * sz, 0, sz);
  return grown + (size_t)(*n)++ * sz;
}

void ins_warn(struct ins_cluster *cl, const char *fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  char **slot = ins_grow(&cl->warn, &cl->nwarn, sizeof(*cl->warn));
  if (slot != NULL) *slot = ins_strdup(buf);
}

static void free_gpu(struct ins_gpu *g) {
  for (int i = 0; i < g->nuses; i++) {
    free(g->uses[i].ns);
    free(g->uses[i].pod);
    free(g->uses[i].container);
  }
  free(g->uses);
  free(g->uuid);
  free(g->type);
  free(g->reason);
}

void ins_node_free(struct ins_node *n) {
  for (int i = 0; i < n->ngpus; i++) free_gpu(&n->gpu[i]);
  for (int i = 0; i < n->nres; i++) {
    free(n->res[i].name);
    free(n->res[i].dialect);
  }
  for (int i = 0; i < n->nun; i++) {
    free(n->un[i].ns);
    free(n->un[i].pod);
    free(n->un[i].container);
    free(n->un[i].resource);
  }
  free(n->gpu);
  free(n->res);
  free(n->un);
  free(n->name);
  free(n->ip);
  memset(n, 0, sizeof(*n));
}

void ins_cluster_free(struct ins_cluster *cl) {
  for (int i = 0; i < cl->nnodes; i++) ins_node_free(&cl->node[i]);
  for (int i = 0; i < cl->nwarn; i++) free(cl->warn[i]);
  free(cl->node);
  free(cl->warn);
  memset(cl, 0, sizeof(*cl));
}
