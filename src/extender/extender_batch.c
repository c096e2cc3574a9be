/*
 * extender_batch.c -- the candidates of one request read together.
 *
 * A node whose view is not cached costs two API requests (the Node and its
 * pods). Against a real API server that is a few milliseconds each, so a
 * filter over thousands of uncached names (--cache-ttl-ms 0, or every view
 * dropped when a watch restarts) took seconds, past kube-scheduler's 5 s
 * timeout (issue 27). When many candidates miss the cache, the Nodes and the
 * bound Pods are instead listed once each and the views built from those
 * lists (ext_batch_fetch); names are looked up through a hash index, as are
 * the duplicates of a request (extender.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "extender_int.h"
#include "log.h"

uint32_t ext_hash(const char *s) {
  uint32_t h = 2166136261u; /* FNV-1a */
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) h = (h ^ *p) * 16777619u;
  return h;
}

int ext_index_init(struct ext_index *ix, size_t n) {
  size_t cap = 16;
  while (cap < 2 * n) cap *= 2; /* at most half full: short probe runs */
  ix->mask = cap - 1;
  ix->keys = calloc(cap, sizeof(*ix->keys));
  ix->vals = malloc(cap * sizeof(*ix->vals));
  if (!ix->keys || !ix->vals) {
    ext_index_free(ix);
    return -1;
  }
  return 0;
}

void ext_index_free(struct ext_index *ix) {
  free(ix->keys);
  free(ix->vals);
  *ix = (struct ext_index){0};
}

/* key's slot: where it is, or the empty one where it would go. */
static size_t slot_of(const struct ext_index *ix, const char *key) {
  size_t i = ext_hash(key) & ix->mask;
  while (ix->keys[i] && strcmp(ix->keys[i], key) != 0) i = (i + 1) & ix->mask;
  return i;
}

int ext_index_put(struct ext_index *ix, const char *key, int val) {
  size_t i = slot_of(ix, key);
  if (ix->keys[i]) return ix->vals[i];
  ix->keys[i] = key;
  ix->vals[i] = val;
  return val;
}

int ext_index_get(const struct ext_index *ix, const char *key) {
  if (!ix->keys) return -1;
  size_t i = slot_of(ix, key);
  return ix->keys[i] ? ix->vals[i] : -1;
}

static size_t items_of(json_object *list, json_object **items) {
  *items = ext_get(list, "items");
  return *items && json_object_is_type(*items, json_type_array) ? json_object_array_length(*items)
                                                                : 0;
}

/* The pods by spec.nodeName: a chain per node through next. */
static int index_pods(struct ext_batch *b) {
  json_object *items;
  size_t n = items_of(b->pods, &items);
  b->pod_next = malloc((n + 1) * sizeof(int));
  b->pod_first = malloc((n + 1) * sizeof(int));
  if (!b->pod_next || !b->pod_first || ext_index_init(&b->pod_nodes, n) != 0) return -1;
  int groups = 0;
  for (size_t i = n; i-- > 0;) { /* backwards: each chain then runs in list order */
    json_object *pod = json_object_array_get_idx(items, i);
    const char *node = ext_get_str(ext_get(pod, "spec"), "nodeName");
    if (!node || !node[0]) continue; /* pending: holds nothing anywhere */
    int g = ext_index_put(&b->pod_nodes, node, groups);
    if (g == groups) b->pod_first[groups++] = -1;
    b->pod_next[i] = b->pod_first[g];
    b->pod_first[g] = (int)i;
  }
  return 0;
}

int ext_batch_fetch(struct vg_ext *x, bool nodes, struct ext_batch *b, struct vg_err *err) {
  memset(b, 0, sizeof(*b));
  pthread_mutex_lock(&x->lock);
  b->drops = x->drops; /* before the lists: a drop after them means they may be stale */
  pthread_mutex_unlock(&x->lock);
  char rv[64];
  if (nodes && vg_k8s_call(x->client, "GET", "/api/v1/nodes", NULL, NULL, &b->nodes, err) != 0)
    goto fail;
  if (vg_k8s_list_pods(x->client, NULL, &b->pods, rv, sizeof(rv), err) != 0) goto fail;
  json_object *items;
  size_t n = items_of(b->nodes, &items);
  if (ext_index_init(&b->node_names, n) != 0 || index_pods(b) != 0) {
    vg_err_set(err, "out of memory");
    goto fail;
  }
  for (size_t i = 0; i < n; i++) {
    const char *name =
        ext_get_str(ext_get(json_object_array_get_idx(items, i), "metadata"), "name");
    if (name) ext_index_put(&b->node_names, name, (int)i);
  }
  b->ok = true;
  return 0;
fail:
  ext_batch_free(b);
  return -1;
}

void ext_batch_free(struct ext_batch *b) {
  json_object_put(b->nodes);
  json_object_put(b->pods);
  ext_index_free(&b->node_names);
  ext_index_free(&b->pod_nodes);
  free(b->pod_first);
  free(b->pod_next);
  memset(b, 0, sizeof(*b));
}

json_object *ext_batch_node(const struct ext_batch *b, const char *name) {
  int i = ext_index_get(&b->node_names, name);
  return i < 0 ? NULL : json_object_array_get_idx(ext_get(b->nodes, "items"), (size_t)i);
}

int ext_batch_pods(const struct ext_batch *b, const char *node, json_object **items) {
  *items = ext_get(b->pods, "items");
  int g = ext_index_get(&b->pod_nodes, node);
  return g < 0 ? -1 : b->pod_first[g];
}

int ext_batch_next(const struct ext_batch *b, int pod) { return b->pod_next[pod]; }
