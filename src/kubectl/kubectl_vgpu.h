/*
 * kubectl_vgpu.h -- kubectl-vgpu, the `kubectl vgpu` plugin (docs/kubectl-vgpu.md).
 *
 * Its one verb so far, `resize`, changes the GPU memory and/or compute share
 * of a running container by opening a resize request on its Pod and waiting
 * for the node agent and vgpu-scheduler to answer (src/k8s/resize.h holds the
 * protocol). The program is split by what each part knows:
 *
 *   main.c         the verbs, --help and --version of the program itself
 *   resize.c       the resize verb from start to exit status
 *   resize_opts.c  its command line
 *   request.c      reading the pod, checking the request, writing it
 *   wait.c         polling the pod until the request is answered
 *   report.c       what the user sees: the result line, JSON, timeouts
 *
 * Errors travel up as a struct vg_err; only resize.c prints them.
 */
#ifndef VG_KUBECTL_VGPU_H
#define VG_KUBECTL_VGPU_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "assignment.h"
#include "err.h"
#include "k8s.h"
#include "resize.h"

#define KV_PROG "kubectl-vgpu"
#define KV_RESIZE_PREFIX "kubectl vgpu resize: "

/* Exit statuses (documented in --help and docs/kubectl-vgpu.md). */
enum {
  KV_EXIT_OK = 0,      /* applied, or written with --no-wait */
  KV_EXIT_FAIL = 1,    /* refused, or an error (API, pod, container) */
  KV_EXIT_TIMEOUT = 2, /* nobody answered within --timeout */
  KV_EXIT_USAGE = 64,  /* bad command line (sysexits.h's EX_USAGE) */
};

/* ---- resize.c ---- */

/* The resize verb; argv[0] is "resize". Returns the exit status. */
int kv_resize_main(int argc, char **argv);

/* ---- resize_opts.c ---- */

struct kv_resize_opts {
  const char *pod; /* NAME, "pod/" stripped */
  const char *ns;  /* NULL: the kubeconfig context's, else "default" */
  const char *container, *kubeconfig;
  int64_t memory; /* bytes per GPU; -1 = unchanged */
  int cores;      /* percent per GPU; -1 = unchanged */
  int timeout_s;
  bool no_wait, json;
};

/* argv[0] is "resize". Returns 0 to go on, KV_EXIT_OK after printing --help
 * or --version (*done set), or KV_EXIT_USAGE after saying what is wrong. */
int kv_resize_parse(int argc, char **argv, struct kv_resize_opts *o, bool *done);

/* ---- request.c ---- */

/* What was asked, and of what: the request as written and the container's
 * entry in vgpu.io/assigned when it was written (for "was ..."). */
struct kv_sent {
  const char *ns, *pod;
  char node[VG_ASSIGN_RESOURCE_MAX]; /* spec.nodeName */
  struct vg_resize_request req;
  struct vg_assign_ctr was;
};

/* Reads the pod, checks the request against it and writes the request
 * annotation and the open label in one patch preconditioned on the pod's
 * resourceVersion, re-reading on a conflict. Returns 0, a VG_K8S_* code from
 * the API, or -1 (VG_K8S_EFAIL) with err saying what is wrong with the pod. */
int kv_request_send(struct vg_k8s_client *c, const struct kv_resize_opts *o, struct kv_sent *s,
                    struct vg_err *err);

/* ---- wait.c ---- */

/* How far the request got: the acknowledgement and the status carry our id
 * only once each party has seen our request. */
struct kv_progress {
  bool acked;    /* vgpu.io/resize-node carries our id */
  bool answered; /* vgpu.io/resize-status carries our id (status is valid) */
  struct vg_resize_status status;
  struct vg_err last_error; /* the last failed read, retried; "" if none */
};

/* Polls the pod every 250 ms until the status for s's request is Applied or
 * Refused (returns 0), or timeout_s pass (returns KV_EXIT_TIMEOUT with *p as
 * last seen); an API error or a replaced request returns <0 with err. */
int kv_wait(struct vg_k8s_client *c, const struct kv_sent *s, int timeout_s, struct kv_progress *p,
            struct vg_err *err);

/* ---- report.c ---- */

/* The "resized" line for an Applied status, on out. */
void kv_report_applied(const struct kv_sent *s, FILE *out);
/* The outcome as one JSON object; status NULL: only requested (--no-wait). */
void kv_report_json(const struct kv_sent *s, const struct vg_resize_status *status, FILE *out);
/* The "requested" line of --no-wait. */
void kv_report_requested(const struct kv_sent *s, FILE *out);
/* Who has not answered within timeout_s, naming the node or the scheduler. */
void kv_report_timeout(const struct kv_sent *s, const struct kv_progress *p, int timeout_s,
                       FILE *out);

#endif
