/* registration.c -- see registration.h. */
#include "registration.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "deviceplugin.pb-c.h"
#include "log.h"

#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 5000
#define REGISTER_TIMEOUT_MS 10000

static long long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int vg_register_once(const struct vg_resource *r, const struct vg_reg_opts *o, char *err,
                     size_t err_len) {
  struct stat st;
  if (stat(o->kubelet_socket, &st) != 0) {
    snprintf(err, err_len,
             "kubelet socket %s: %s (is the kubelet running? see --kubelet-socket); waiting for it",
             o->kubelet_socket, strerror(errno));
    return -1;
  }
  V1beta1__DevicePluginOptions opts = V1BETA1__DEVICE_PLUGIN_OPTIONS__INIT;
  opts.get_preferred_allocation_available = 1;
  V1beta1__RegisterRequest req = V1BETA1__REGISTER_REQUEST__INIT;
  req.version = "v1beta1";
  req.endpoint = (char *)r->endpoint;
  req.resource_name = (char *)r->name;
  req.options = &opts;
  char target[PATH_MAX + 8];
  snprintf(target, sizeof(target), "unix:%s", o->kubelet_socket);
  char detail[1024] = "";
  grpc_status_code rc =
      vg_rpc_call(target, "/v1beta1.Registration/Register", &req.base, &v1beta1__empty__descriptor,
                  NULL, REGISTER_TIMEOUT_MS, detail, sizeof(detail));
  if (rc != GRPC_STATUS_OK) {
    snprintf(err, err_len, "Register of %s with the kubelet at %s failed (gRPC status %d): %s",
             r->name, o->kubelet_socket, (int)rc, detail[0] ? detail : "no details");
    return -1;
  }
  return 0;
}

static int serve(struct vg_resource *r, const struct vg_reg_opts *o) {
  char path[PATH_MAX];
  snprintf(path, sizeof(path), "%s/%s", o->plugin_dir, r->endpoint);
  struct vg_rpc_server *s = vg_rpc_server_start(path, vg_plugin_methods, vg_plugin_nmethods, r);
  if (s == NULL) return -1;
  pthread_mutex_lock(&r->server_lock);
  r->server = s;
  pthread_mutex_unlock(&r->server_lock);
  vg_info("serving %s on %s", r->name, path);
  return 0;
}

static void unserve(struct vg_resource *r) {
  pthread_mutex_lock(&r->server_lock);
  struct vg_rpc_server *s = r->server;
  r->server = NULL;
  pthread_mutex_unlock(&r->server_lock);
  if (s != NULL) vg_rpc_server_stop(s);
}

static const char *base_name(const char *path) {
  const char *slash = strrchr(path, '/');
  return slash != NULL ? slash + 1 : path;
}

/* Registration state of one resource. */
struct reg_state {
  bool registered, have_server;
  long long next_try, backoff;
  char last_err[1200];
};

static void register_again(struct reg_state *st, long long at) {
  st->registered = false;
  st->next_try = at;
  st->backoff = BACKOFF_MIN_MS;
}

/* The loop's state: the resources' registration and the directories watched
 * for the kubelet's restarts (its socket, and our sockets it removes). */
struct reg_loop {
  struct vg_plugin *p;
  const struct vg_reg_opts *o;
  struct reg_state state[VG_PLUGIN_MAX_RESOURCES];
  bool want_register;
  int ino, wd_plugin, wd_kubelet; /* ino -1: no inotify, polling only */
  const char *kubelet_name;       /* the kubelet socket's file name */
};

/* Every resource's socket at start; 0, or -1 (none left served) when one fails. */
static int serve_all(struct reg_loop *l) {
  for (size_t i = 0; i < l->p->nres; i++) {
    if (serve(&l->p->res[i], l->o) != 0) {
      for (size_t j = 0; j < i; j++) unserve(&l->p->res[j]);
      return -1;
    }
    l->state[i].have_server = true;
    l->state[i].next_try = now_ms();
    l->state[i].backoff = BACKOFF_MIN_MS;
  }
  return 0;
}

/* Watches the plugin directory and the kubelet socket's directory; without
 * inotify, restarts are noticed by polling only. */
static void watch_dirs(struct reg_loop *l) {
  const struct vg_reg_opts *o = l->o;
  l->wd_plugin = l->wd_kubelet = -1;
  l->ino = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (l->ino < 0) {
    vg_info("inotify: %s; kubelet restarts are noticed by polling only", strerror(errno));
    return;
  }
  l->wd_plugin = inotify_add_watch(l->ino, o->plugin_dir, IN_CREATE | IN_DELETE | IN_MOVED_TO);
  if (l->wd_plugin < 0) vg_info("inotify on %s: %s", o->plugin_dir, strerror(errno));
  if (!l->want_register) return;
  char kubelet_dir[PATH_MAX];
  snprintf(kubelet_dir, sizeof(kubelet_dir), "%s", o->kubelet_socket);
  char *slash = strrchr(kubelet_dir, '/');
  if (slash != NULL) *slash = '\0';
  if (slash == NULL) snprintf(kubelet_dir, sizeof(kubelet_dir), ".");
  l->wd_kubelet = inotify_add_watch(l->ino, kubelet_dir, IN_CREATE | IN_DELETE | IN_MOVED_TO);
  if (l->wd_kubelet < 0) vg_info("inotify on %s: %s", kubelet_dir, strerror(errno));
}

/* One Register try of resource i; a failure backs off, and each distinct
 * failure is said once. */
static void try_register(struct reg_loop *l, size_t i) {
  struct vg_resource *r = &l->p->res[i];
  struct reg_state *st = &l->state[i];
  char err[1200];
  if (vg_register_once(r, l->o, err, sizeof(err)) == 0) {
    st->registered = true;
    st->backoff = BACKOFF_MIN_MS;
    st->last_err[0] = '\0';
    vg_info("registered %s with the kubelet at %s (endpoint %s)", r->name, l->o->kubelet_socket,
            r->endpoint);
    return;
  }
  if (strcmp(err, st->last_err) != 0) vg_info("%s", err);
  snprintf(st->last_err, sizeof(st->last_err), "%s", err);
  st->next_try = now_ms() + st->backoff;
  st->backoff = st->backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : st->backoff * 2;
}

/* Serves and registers what is due; the poll timeout until the next try
 * (-1: nothing left to do). */
static int tend_resources(struct reg_loop *l) {
  long long now = now_ms();
  int timeout = -1;
  for (size_t i = 0; i < l->p->nres; i++) {
    struct reg_state *st = &l->state[i];
    if (!st->have_server && now >= st->next_try) {
      if (serve(&l->p->res[i], l->o) == 0)
        st->have_server = true;
      else
        st->next_try = now + BACKOFF_MAX_MS;
    }
    if (st->have_server && l->want_register && !st->registered && now >= st->next_try)
      try_register(l, i);
    if (!st->have_server || (l->want_register && !st->registered)) {
      long long wait = st->next_try - now_ms();
      int t = wait < 0 ? 0 : (int)wait;
      if (timeout < 0 || t < timeout) timeout = t;
    }
  }
  return timeout;
}

/* SIGUSR1: the GPUs are discovered again and every ListAndWatch stream gets
 * the list (through the agent when there is one). */
static void rediscover_gpus(struct reg_loop *l) {
  static struct vg_gpu gpus[VG_MAX_GPUS];
  unsigned ng = 0;
  char err[512];
  if (vg_gpus_discover(gpus, &ng, err, sizeof(err)) != 0) {
    vg_info("SIGUSR1: GPU discovery: %s; keeping the device list", err);
    return;
  }
  vg_info("SIGUSR1: %u GPUs found again; sending the device list", ng);
  if (l->o->gpus_found != NULL)
    l->o->gpus_found(l->o->gpus_found_arg, gpus, ng);
  else
    vg_plugin_set_gpus(l->p, gpus, ng);
}

/* One signal from sigfd; true when it says stop. */
static bool on_signal(struct reg_loop *l, int sigfd) {
  struct signalfd_siginfo si;
  if (read(sigfd, &si, sizeof(si)) != sizeof(si)) return false;
  if (si.ssi_signo == SIGUSR1) {
    rediscover_gpus(l);
  } else if (si.ssi_signo == SIGHUP) {
    vg_info("SIGHUP: registering again");
    for (size_t i = 0; i < l->p->nres; i++) register_again(&l->state[i], now_ms());
  } else {
    vg_info("signal %u: stopping", si.ssi_signo);
    return true;
  }
  return false;
}

/* The kubelet socket appeared (a kubelet restart: register again) or went
 * away (wait for the kubelet). */
static void on_kubelet_socket(struct reg_loop *l, uint32_t mask) {
  const char *sock = l->o->kubelet_socket;
  if (mask & (IN_CREATE | IN_MOVED_TO)) {
    vg_info("%s created (kubelet restart): registering again", sock);
    for (size_t i = 0; i < l->p->nres; i++) {
      register_again(&l->state[i], now_ms());
      l->state[i].last_err[0] = '\0';
    }
  } else if (mask & IN_DELETE) {
    vg_info("%s removed: the kubelet stopped; waiting for it", sock);
    for (size_t i = 0; i < l->p->nres; i++) {
      l->state[i].registered = false;
      l->state[i].next_try = now_ms() + BACKOFF_MAX_MS;
    }
  }
}

/* A file named name was removed from the plugin directory: when it was one
 * of our sockets (a restarting kubelet clears the directory), serve it again. */
static void on_plugin_dir_delete(struct reg_loop *l, const char *name) {
  for (size_t i = 0; i < l->p->nres; i++) {
    struct vg_resource *r = &l->p->res[i];
    if (strcmp(name, r->endpoint) != 0 || !l->state[i].have_server) continue;
    char own_path[PATH_MAX];
    snprintf(own_path, sizeof(own_path), "%s/%s", l->o->plugin_dir, r->endpoint);
    struct stat sb;
    if (stat(own_path, &sb) == 0) continue; /* our own restart: already back */
    vg_info("%s was removed (kubelet restart?): serving again", own_path);
    unserve(r);
    l->state[i].have_server = false;
    register_again(&l->state[i], now_ms());
  }
}

/* Every inotify event waiting. */
static void on_inotify(struct reg_loop *l) {
  char buf[8192] __attribute__((aligned(__alignof__(struct inotify_event))));
  ssize_t len;
  while ((len = read(l->ino, buf, sizeof(buf))) > 0) {
    for (char *q = buf; q < buf + len;) {
      const struct inotify_event *ev = (const void *)q;
      q += sizeof(*ev) + ev->len;
      if (ev->len == 0) continue;
      if (l->want_register && ev->wd == l->wd_kubelet && strcmp(ev->name, l->kubelet_name) == 0)
        on_kubelet_socket(l, ev->mask);
      else if (ev->wd == l->wd_plugin && (ev->mask & IN_DELETE))
        on_plugin_dir_delete(l, ev->name);
    }
  }
}

int vg_registration_run(struct vg_plugin *p, const struct vg_reg_opts *o, int sigfd) {
  struct reg_loop l;
  memset(&l, 0, sizeof(l));
  l.p = p;
  l.o = o;
  if (p->nres == 0) vg_info("the configuration advertises no resource; nothing to serve");
  if (serve_all(&l) != 0) return 1;
  l.want_register = o->kubelet_socket != NULL && o->kubelet_socket[0] != '\0';
  if (!l.want_register) vg_info("no kubelet socket given: serving without registering");
  watch_dirs(&l);
  l.kubelet_name = l.want_register ? base_name(o->kubelet_socket) : "";

  int rc = 0;
  for (;;) {
    int timeout = tend_resources(&l);
    struct pollfd fds[2] = {{.fd = sigfd, .events = POLLIN}, {.fd = l.ino, .events = POLLIN}};
    int n = poll(fds, l.ino >= 0 ? 2 : 1, timeout);
    if (n < 0 && errno != EINTR) {
      vg_info("poll: %s", strerror(errno));
      rc = 1;
      break;
    }
    if (n <= 0) continue;
    if ((fds[0].revents & POLLIN) && on_signal(&l, sigfd)) break;
    if (l.ino >= 0 && (fds[1].revents & POLLIN)) on_inotify(&l);
  }
  if (l.ino >= 0) close(l.ino);
  for (size_t i = 0; i < p->nres; i++) unserve(&p->res[i]);
  return rc;
}
