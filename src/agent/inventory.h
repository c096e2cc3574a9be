/*
 * inventory.h -- the node's GPUs, published on the Node object for the
 * scheduler extender (the contract of docs/inventory.md).
 *
 * vg_inventory_build turns the discovered GPUs, their health and the
 * configuration into the annotation's struct and has its codec
 * (k8s/gpu_inventory.h) write the JSON document; a vg_inventory publisher keeps the
 * Node's `vgpu.io/gpu-inventory` annotation equal to the latest document:
 * it patches only when the document changed (and not at all when the Node
 * already carries it), with vg_k8s_update_node_annotations (409 retried),
 * and while the API server cannot be reached it retries every retry_ms,
 * logging the outage once and its end once.
 */
#ifndef VG_PLUGIN_INVENTORY_H
#define VG_PLUGIN_INVENTORY_H

#include <json-c/json.h>
#include <stdbool.h>

#include "config.h"
#include "devices.h"
#include "gpu_inventory.h"
#include "health.h"
#include "k8s.h"

/* The document (caller puts), written by the annotation's codec
 * (k8s/gpu_inventory.h); NULL when it refuses (out of memory). health (may
 * be NULL) gives each GPU's state and reason by UUID; without it
 * gpus[i].healthy is used. */
json_object *vg_inventory_build(const struct vg_plugin_config *cfg, const char *node,
                                const struct vg_gpu *gpus, unsigned n,
                                const struct vg_gpu_health *health, unsigned n_health);

struct vg_inventory;

/* client is borrowed and must outlive the publisher. retry_ms 0: 5000. */
struct vg_inventory *vg_inventory_new(struct vg_k8s_client *client, const char *node,
                                      unsigned retry_ms);
/* Stops the thread (if started) and releases everything. */
void vg_inventory_free(struct vg_inventory *inv);

/* The document to publish (ownership taken). With the thread running it is
 * published in the background at once. */
void vg_inventory_set(struct vg_inventory *inv, json_object *doc);

/* Publishes the latest document now if it differs from the one last
 * published. 0 when published or nothing to do, else a VG_K8S_* code with err. */
int vg_inventory_publish(struct vg_inventory *inv, struct vg_err *err);

/* Publishes from a thread: after every vg_inventory_set, and every retry_ms
 * while the last attempt failed. */
int vg_inventory_start(struct vg_inventory *inv);

/* For tests and metrics: PATCHes that succeeded, and whether the latest
 * document is what the Node carries. */
unsigned long vg_inventory_patches(struct vg_inventory *inv);
bool vg_inventory_current(struct vg_inventory *inv);

#endif
