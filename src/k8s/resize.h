/*
 * resize.h -- the annotations through which a running container's grant is
 * changed from outside (`kubectl vgpu resize`, docs/resize.md).
 *
 * A resize is a conversation on the Pod, each party writing only its own
 * key, so that the admission webhook can tell who may write what:
 *
 *   vgpu.io/resize-request  the user (kubectl vgpu resize): which container,
 *                           the new memory per GPU and/or cores; a fresh id
 *   vgpu.io/resize-node     the node agent: "id N is checked against what
 *                           the container holds, and any decrease is in
 *                           force on the node" (decreases free capacity
 *                           only once the node has applied them)
 *   vgpu.io/resize-status   the scheduler (Accepted: the new amounts fit the
 *                           pod's GPUs and are in vgpu.io/assigned; or
 *                           Refused) and then the node agent (Applied: the
 *                           grant the container reads is the new one; or
 *                           Refused, when the container holds more)
 *   label vgpu.io/resize    "requested" while a request is open, so that the
 *                           scheduler and the node agents find open requests
 *                           with a label selector; the node agent removes it
 *                           when the request ends (or whoever refuses it
 *                           when no node agent is involved)
 *
 * Only the id ties the keys together: a status or an acknowledgement for
 * another id is about an earlier request and means nothing for this one.
 */
#ifndef VG_K8S_RESIZE_H
#define VG_K8S_RESIZE_H

#include <stdbool.h>
#include <stdint.h>

#include <json-c/json.h>

#include "assignment.h"
#include "err.h"
#include "k8s.h"

#define VG_RESIZE_REQUEST_ANNOTATION "vgpu.io/resize-request"
#define VG_RESIZE_NODE_ANNOTATION "vgpu.io/resize-node"
#define VG_RESIZE_STATUS_ANNOTATION "vgpu.io/resize-status"
#define VG_RESIZE_LABEL "vgpu.io/resize"
#define VG_RESIZE_LABEL_OPEN "requested"
#define VG_RESIZE_ID_MAX 64
#define VG_RESIZE_REASON_MAX 512

struct vg_resize_request {
  char id[VG_RESIZE_ID_MAX];
  char container[VG_ASSIGN_NAME_MAX];
  int64_t memory; /* bytes per GPU; -1 = unchanged */
  int cores;      /* percent per GPU, 0..100 (0 = no compute limit); -1 = unchanged */
};

enum vg_resize_phase { VG_RESIZE_ACCEPTED, VG_RESIZE_APPLIED, VG_RESIZE_REFUSED };

struct vg_resize_status {
  char id[VG_RESIZE_ID_MAX];
  enum vg_resize_phase phase;
  char reason[VG_RESIZE_REASON_MAX]; /* why refused; what was done otherwise */
};

/* Parsers: 0, or -1 with err naming the field. Strict like the assignment's:
 * a wrong type or a value out of range is an error, unknown keys are not. */
int vg_resize_request_parse(const char *text, struct vg_resize_request *r, struct vg_err *err);
int vg_resize_status_parse(const char *text, struct vg_resize_status *s, struct vg_err *err);
/* The acknowledgement is just {"id": ...}. */
int vg_resize_node_parse(const char *text, char id[VG_RESIZE_ID_MAX], struct vg_err *err);

/* JSON texts for the annotations (caller frees); NULL when out of memory. */
char *vg_resize_request_format(const struct vg_resize_request *r);
char *vg_resize_status_format(const struct vg_resize_status *s);
char *vg_resize_node_format(const char *id);

const char *vg_resize_phase_name(enum vg_resize_phase p);

/* Puts the status {id, phase, reason} into ann, the annotations of a
 * metadata patch being built. -1 when out of memory. */
int vg_resize_status_put(json_object *ann, const char *id, enum vg_resize_phase phase,
                         const char *reason);
/* The Warning Event ResizeRefused on pod, "resize ID refused: WHY"; those
 * words are also left in msg for the caller's log. 0, or -1 with err. */
int vg_resize_refusal_event(struct vg_k8s_client *c, json_object *pod, const char *id,
                            const char *why, const char *component, char *msg, size_t len,
                            struct vg_err *err);

/* What a pod says about resizing: which keys it has (has_*) and their
 * values; a key that is present but malformed sets its bad_* and keeps err
 * for the first one. */
struct vg_resize_view {
  bool has_request, has_node, has_status, open; /* open: the label is "requested" */
  bool bad_request, bad_node, bad_status;
  struct vg_resize_request request;
  char node_id[VG_RESIZE_ID_MAX];
  struct vg_resize_status status;
};
void vg_resize_view_of(json_object *pod, struct vg_resize_view *v, struct vg_err *err);

/* A fresh request id: time and randomness, unique enough per pod. */
void vg_resize_new_id(char id[VG_RESIZE_ID_MAX]);

/* The new amounts for one GPU entry of the container: the request where it
 * says, else what the entry has now. */
int64_t vg_resize_memory(const struct vg_resize_request *r, const struct vg_assign_gpu *now);
int vg_resize_cores(const struct vg_resize_request *r, const struct vg_assign_gpu *now);

#endif
