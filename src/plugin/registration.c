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

int vg_registration_run(struct vg_plugin *p, const struct vg_reg_opts *o, int sigfd) {
  struct reg_state state[VG_PLUGIN_MAX_RESOURCES];
  memset(state, 0, sizeof(state));
  if (p->nres == 0) vg_info("the configuration advertises no resource; nothing to serve");
  for (size_t i = 0; i < p->nres; i++) {
    if (serve(&p->res[i], o) != 0) {
      for (size_t j = 0; j < i; j++) unserve(&p->res[j]);
      return 1;
    }
    state[i].have_server = true;
    state[i].next_try = now_ms();
    state[i].backoff = BACKOFF_MIN_MS;
  }
  bool want_register = o->kubelet_socket != NULL && o->kubelet_socket[0] != '\0';
  if (!want_register) vg_info("no kubelet socket given: serving without registering");

  int ino = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  int wd_plugin = -1, wd_kubelet = -1;
  char kubelet_dir[PATH_MAX] = "";
  if (ino < 0) {
    vg_info("inotify: %s; kubelet restarts are noticed by polling only", strerror(errno));
  } else {
    wd_plugin = inotify_add_watch(ino, o->plugin_dir, IN_CREATE | IN_DELETE | IN_MOVED_TO);
    if (wd_plugin < 0) vg_info("inotify on %s: %s", o->plugin_dir, strerror(errno));
    if (want_register) {
      snprintf(kubelet_dir, sizeof(kubelet_dir), "%s", o->kubelet_socket);
      char *slash = strrchr(kubelet_dir, '/');
      if (slash != NULL) *slash = '\0';
      if (slash == NULL) snprintf(kubelet_dir, sizeof(kubelet_dir), ".");
      wd_kubelet = inotify_add_watch(ino, kubelet_dir, IN_CREATE | IN_DELETE | IN_MOVED_TO);
      if (wd_kubelet < 0) vg_info("inotify on %s: %s", kubelet_dir, strerror(errno));
    }
  }
  const char *kubelet_name = want_register ? base_name(o->kubelet_socket) : "";

  int rc = 0;
  for (;;) {
    long long now = now_ms();
    int timeout = -1;
    for (size_t i = 0; i < p->nres; i++) {
      struct vg_resource *r = &p->res[i];
      struct reg_state *st = &state[i];
      if (!st->have_server && now >= st->next_try) {
        if (serve(r, o) == 0) {
          st->have_server = true;
        } else {
          st->next_try = now + BACKOFF_MAX_MS;
        }
      }
      if (st->have_server && want_register && !st->registered && now >= st->next_try) {
        char err[1200];
        if (vg_register_once(r, o, err, sizeof(err)) == 0) {
          st->registered = true;
          st->backoff = BACKOFF_MIN_MS;
          st->last_err[0] = '\0';
          vg_info("registered %s with the kubelet at %s (endpoint %s)", r->name, o->kubelet_socket,
                  r->endpoint);
        } else {
          if (strcmp(err, st->last_err) != 0) vg_info("%s", err); /* each distinct failure once */
          snprintf(st->last_err, sizeof(st->last_err), "%s", err);
          st->next_try = now_ms() + st->backoff;
          st->backoff = st->backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : st->backoff * 2;
        }
      }
      if (!st->have_server || (want_register && !st->registered)) {
        long long wait = st->next_try - now_ms();
        int t = wait < 0 ? 0 : (int)wait;
        if (timeout < 0 || t < timeout) timeout = t;
      }
    }
    struct pollfd fds[2] = {{.fd = sigfd, .events = POLLIN}, {.fd = ino, .events = POLLIN}};
    int n = poll(fds, ino >= 0 ? 2 : 1, timeout);
    if (n < 0 && errno != EINTR) {
      vg_info("poll: %s", strerror(errno));
      rc = 1;
      break;
    }
    if (n <= 0) continue;
    if (fds[0].revents & POLLIN) {
      struct signalfd_siginfo si;
      if (read(sigfd, &si, sizeof(si)) == sizeof(si)) {
        if (si.ssi_signo == SIGUSR1) {
          static struct vg_gpu gpus[VG_MAX_GPUS];
          unsigned ng = 0;
          char err[512];
          if (vg_gpus_discover(gpus, &ng, err, sizeof(err)) == 0) {
            vg_info("SIGUSR1: %u GPUs found again; sending the device list", ng);
            if (o->gpus_found != NULL)
              o->gpus_found(o->gpus_found_arg, gpus, ng);
            else
              vg_plugin_set_gpus(p, gpus, ng);
          } else {
            vg_info("SIGUSR1: GPU discovery: %s; keeping the device list", err);
          }
        } else if (si.ssi_signo == SIGHUP) {
          vg_info("SIGHUP: registering again");
          for (size_t i = 0; i < p->nres; i++) register_again(&state[i], now_ms());
        } else {
          vg_info("signal %u: stopping", si.ssi_signo);
          break;
        }
      }
    }
    if (ino >= 0 && (fds[1].revents & POLLIN)) {
      char buf[8192] __attribute__((aligned(__alignof__(struct inotify_event))));
      ssize_t len;
      while ((len = read(ino, buf, sizeof(buf))) > 0) {
        for (char *q = buf; q < buf + len;) {
          const struct inotify_event *ev = (const void *)q;
          q += sizeof(*ev) + ev->len;
          if (ev->len == 0) continue;
          if (want_register && ev->wd == wd_kubelet && strcmp(ev->name, kubelet_name) == 0) {
            if (ev->mask & (IN_CREATE | IN_MOVED_TO)) {
              vg_info("%s created (kubelet restart): registering again", o->kubelet_socket);
              for (size_t i = 0; i < p->nres; i++) {
                register_again(&state[i], now_ms());
                state[i].last_err[0] = '\0';
              }
            } else if (ev->mask & IN_DELETE) {
              vg_info("%s removed: the kubelet stopped; waiting for it", o->kubelet_socket);
              for (size_t i = 0; i < p->nres; i++) {
                state[i].registered = false;
                state[i].next_try = now_ms() + BACKOFF_MAX_MS;
              }
            }
          } else if (ev->wd == wd_plugin && (ev->mask & IN_DELETE)) {
            for (size_t i = 0; i < p->nres; i++) {
              struct vg_resource *r = &p->res[i];
              if (strcmp(ev->name, r->endpoint) != 0 || !state[i].have_server) continue;
              char own_path[PATH_MAX];
              snprintf(own_path, sizeof(own_path), "%s/%s", o->plugin_dir, r->endpoint);
              struct stat sb;
              if (stat(own_path, &sb) == 0) continue; /* our own restart: already back */
              vg_info("%s was removed (kubelet restart?): serving again", own_path);
              unserve(r);
              state[i].have_server = false;
              register_again(&state[i], now_ms());
            }
          }
        }
      }
    }
  }
  if (ino >= 0) close(ino);
  for (size_t i = 0; i < p->nres; i++) unserve(&p->res[i]);
  return rc;
}
