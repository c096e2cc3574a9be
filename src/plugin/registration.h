/*
 * registration.h -- serving the DevicePlugin socket and staying registered
 * with the kubelet: Register at start, again whenever kubelet.sock is created
 * (kubelet restart) or our own socket disappears (the kubelet wipes the
 * directory on start), with backoff on errors, serving all along.
 */
#ifndef VG_REGISTRATION_H
#define VG_REGISTRATION_H

#include "plugin.h"

struct vg_reg_opts {
  const char *plugin_dir;     /* where our sockets live (one per resource, vg_resource.endpoint) */
  const char *kubelet_socket; /* "" or NULL: serve without registering */
  /* SIGUSR1 found these GPUs; NULL: they go straight to vg_plugin_set_gpus. */
  void (*gpus_found)(void *arg, const struct vg_gpu *gpus, unsigned ngpus);
  void *gpus_found_arg;
};

/* Serves every resource of p on its own socket and registers each until SIGINT/SIGTERM arrives on
 * sigfd (a signalfd; SIGHUP registers again, SIGUSR1 discovers the GPUs again and sends the device
 * list to every ListAndWatch stream). 0 on a clean stop, 1 when the socket cannot be served at
 * start. A resource whose socket fails is retried. */
int vg_registration_run(struct vg_plugin *p, const struct vg_reg_opts *o, int sigfd);

/* One Register call; 0 when accepted, else -1 with the reason in err. */
int vg_register_once(const struct vg_resource *r, const struct vg_reg_opts *o, char *err,
                     size_t err_len);

#endif
