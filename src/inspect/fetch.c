/*
 * fetch.c -- what inspect reads from the API server: the Nodes (with their
 * GPU inventory annotation and addresses) and the Pods (with their
 * assignment annotation, phase, node and resource requests).
 *
 * Two list calls, whatever the cluster's size: a NodeList (narrowed by
 * fieldSelector metadata.name when one node is asked for) and a PodList
 * (narrowed by spec.nodeName the same way). The k8s client's errors already
 * name the URL, the status and the API server's message; they are passed up
 * unchanged so main can say what to do about them.
 */
#include <stdio.h>

#include "inspect.h"

static int list_nodes(struct vg_k8s_client *c, const char *only, json_object **out,
                      struct vg_err *err) {
  char path[1024], esc[768];
  if (only == NULL) {
    snprintf(path, sizeof(path), "/api/v1/nodes");
  } else {
    char sel[600];
    snprintf(sel, sizeof(sel), "metadata.name=%s", only);
    snprintf(path, sizeof(path), "/api/v1/nodes?fieldSelector=%s",
             vg_k8s_escape(sel, esc, sizeof(esc)));
  }
  return vg_k8s_call(c, "GET", path, NULL, NULL, out, err);
}

int ins_fetch(struct vg_k8s_client *c, const char *only, json_object **nodes, json_object **pods,
              struct vg_err *err) {
  *nodes = NULL;
  *pods = NULL;
  int rc = list_nodes(c, only, nodes, err);
  if (rc != 0) return rc;
  char rv[64];
  rc = vg_k8s_list_pods(c, only, pods, rv, sizeof(rv), err);
  if (rc != 0) {
    json_object_put(*nodes);
    *nodes = NULL;
  }
  return rc;
}
