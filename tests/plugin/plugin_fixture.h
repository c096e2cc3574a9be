/*
 * plugin_fixture.h -- what the device plugin tests share: the fake kubelet
 * (fake_kubelet.py, driven line by line over pipes), the fake API server
 * (tests/k8s/fake_apiserver.py) with a kubeconfig for it, the plugin's own
 * log, and a reader for the region file an Allocate answer points at.
 */
#ifndef VG_PLUGIN_FIXTURE_H
#define VG_PLUGIN_FIXTURE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "grant.h"
#include "harness.h"
#include "region.h"

#define TOKEN "agent-test-token"
#define EXAMPLE(name) VG_SOURCE_DIR "/examples/config/" name ".yaml"

struct fake {
  pid_t pid;
  FILE *in, *out;
  char line[1 << 22]; /* a gpushare device list in MiB is ~1 MB of JSON */
};

struct setup {
  struct vg_env env;
  char plugin_dir[400];
  char state_dir[400];
  char pr_socket[400]; /* non-empty: the fake kubelet also serves PodResources */
  struct fake fk;
  pid_t plugin;
  pid_t api;                 /* the fake API server, if started */
  pid_t sched;               /* vgpu-scheduler, if started */
  const char *extra_args[8]; /* more options for start_node's plugin, NULL-ended */
  int api_port;
};

/* What the region file of an Allocate answer's slot directory holds. */
struct region_view {
  bool pending;
  unsigned ndev;
  char uuid[4][VG_UUID_LEN];
  uint64_t limit[4];
  unsigned sm[4];
  int grant_rc; /* vg_grant_load of the slot's grant: 0 read, 1 not written yet */
  struct vg_grant grant;
};

/* cmocka fixtures: two simulated GPUs of 8 GiB, a plugin dir and a state dir;
 * teardown stops everything and fails if the plugin did not stop cleanly. */
int setup(void **state);
int teardown(void **state);

/* Starts the fake kubelet (serving PodResources too when s->pr_socket is set). */
void start_fake(struct setup *s, bool defer);
/* One command to the fake kubelet; its JSON answer (also in s->fk.line). */
const char *fake(struct setup *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Waits for n registrations and checks resource is among them. */
const char *registered(struct setup *s, int n, const char *resource);

void plugin_log(struct setup *s, char *buf, size_t len);
/* Waits up to seconds for the plugin's stderr to contain needle. */
bool wait_log(struct setup *s, const char *needle, double seconds);

/* Starts the fake API server and writes a kubeconfig for it. */
void start_api(struct setup *s, char *kubeconfig, size_t len);
/* One HTTP request to 127.0.0.1:port (token may be NULL); the body (if
 * out) and the HTTP status. */
long http_call(int port, const char *token, const char *method, const char *path, const char *body,
               char *out, size_t len);
/* One request to the fake API server. */
long api(struct setup *s, const char *method, const char *path, const char *body, char *out,
         size_t len);

/* The whole node agent on "node1": the fake API server with the Node (and
 * a kubeconfig for it in kubeconfig), the fake kubelet with PodResources,
 * the plugin (vgpu dialect, `slots` IDs per GPU) registered and its first
 * device list received (in s->fk.line). */
void start_node(struct setup *s, char *kubeconfig, size_t len, const char *slots);
/* The same with another configuration file, advertising resource; slots
 * NULL keeps the file's own. */
void start_node_with(struct setup *s, char *kubeconfig, size_t len, const char *config,
                     const char *resource, const char *slots);

/* The two GPUs' UUIDs from a devices answer (the sorted IDs of GPU 0 come first). */
void two_uuids(const char *json, char *u0, char *u1, size_t len);
/* The region file of an Allocate (or admit) answer's slot directory. */
void region_from(const char *r, struct region_view *v);

#endif
