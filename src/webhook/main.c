/*
 * main.c -- vgpu-webhook: the mutating admission webhook that sends pods
 * asking for vgpu's GPU resources to vgpu-scheduler (docs/admission.md).
 *
 *   vgpu-webhook --tls-cert FILE --tls-key FILE [--listen ADDR:PORT]
 *                [--resources LIST] [--scheduler-user NAME]... [--node-user NAME]...
 *   vgpu-webhook certs ...   (certs_main.c)
 *
 * Prints "PORT <n>" on stdout once listening (port 0 picks a free one),
 * checks the certificate files every few seconds and reloads them when they
 * change, serves until SIGINT/SIGTERM.
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "main.h"
#include "server.h"
#include "opt.h"

#define RELOAD_CHECK_S 10

/* The default resource list, ", "-joined and wrapped into the usage's
 * right column: one unbroken 180-column word (or a few 50-column ones) is
 * what man warns it cannot break or adjust in help2man's page of this. */
static void wrap_names(char *out, size_t len) {
  char all[VG_ROLE_COUNT * VG_RESOURCE_NAME_MAX];
  vg_resource_names_join(NULL, ",", all, sizeof(all));
  size_t at = 0, col = 22;
  const char *sep = "";
  out[0] = '\0';
  for (char *save = NULL, *n = strtok_r(all, ",", &save); n && at < len;
       n = strtok_r(NULL, ",", &save)) {
    bool wrap = col + strlen(n) + 2 > 78;
    int w = snprintf(out + at, len - at, wrap ? ",\n%22s%s" : "%s%s", wrap ? "" : sep, n);
    at += (size_t)w;
    col = wrap ? 22 + strlen(n) : col + (size_t)w;
    sep = ", ";
  }
}

static void usage(FILE *f) {
  char all[VG_ROLE_COUNT * VG_RESOURCE_NAME_MAX + 256];
  wrap_names(all, sizeof(all));
  fprintf(f,
          "usage: vgpu-webhook --tls-cert FILE --tls-key FILE [--listen ADDR:PORT]\n"
          "                    [--resources LIST] [--resource KEY=NAME]...\n"
          "                    [--scheduler-user NAME]... [--node-user NAME]...\n"
          "       vgpu-webhook certs --help\n"
          "  --tls-cert FILE     serving certificate (PEM, chain allowed); reloaded within %d s\n"
          "                      of a change, as when Kubernetes updates a mounted Secret\n"
          "  --tls-key FILE      its private key (PEM)\n"
          "  --listen ADDR:PORT  IPv4 address and port (default 0.0.0.0:8443; 0 = any free port,\n"
          "                      printed as PORT n)\n"
          "  --resources LIST    comma list of the extended resources that send a pod to\n"
          "                      vgpu-scheduler (default: every dialect's, with --resource's\n"
          "                      names:\n"
          "                      %s)\n"
          "  --resource KEY=NAME the name a resource was renamed to in the device plugin's\n"
          "                      configuration, KEY its key there (repeatable; %s)\n"
          "  --scheduler-user NAME\n"
          "                      vgpu-scheduler's user (request.userInfo.username); repeatable.\n"
          "                      Only it may change vgpu.io/assigned on a Pod UPDATE, and it and\n"
          "                      the node agent vgpu.io/resize-status (default\n"
          "                      %s)\n"
          "  --node-user NAME    the node agent's (vgpu-device-plugin's) user; repeatable. Only\n"
          "                      it may change vgpu.io/resize-node (default\n"
          "                      %s)\n"
          "  --help, --version\n"
          "Serves POST /mutate (AdmissionReview v1), GET /healthz, GET /metrics. A pod opts out\n"
          "with the annotation vgpu.io/scheduler: skip. See docs/admission.md.\n",
          RELOAD_CHECK_S, all, vg_resource_keys(), VG_WH_DEFAULT_SCHEDULER_USER,
          VG_WH_DEFAULT_NODE_USER);
}

struct serve_flags {
  const char *listen, *cert, *key, *resources; /* resources NULL: every role's name */
  struct vg_resource_names names;
  struct vg_wh_writers writers; /* as given; the defaults fill the empty sets after */
};

/* One --scheduler-user (c 's') or --node-user ('n'): 0, or 2 (a usage
 * error, said). */
static int add_user(struct serve_flags *f, int c, const char *name) {
  struct vg_err err = {{0}};
  struct vg_wh_users *u = c == 's' ? &f->writers.scheduler : &f->writers.node;
  if (vg_wh_users_add(u, c == 's' ? "--scheduler-user" : "--node-user", name, &err) == 0) return 0;
  fprintf(stderr, "vgpu-webhook: %s\n", err.msg);
  return 2;
}

/* 0 to serve, 1 done (help/version), 2 usage error. */
static int parse(int argc, char **argv, struct serve_flags *f) {
  static const struct option opts[] = {
      {"listen", required_argument, NULL, 'l'},    {"tls-cert", required_argument, NULL, 'c'},
      {"tls-key", required_argument, NULL, 'k'},   {"resources", required_argument, NULL, 'r'},
      {"resource", required_argument, NULL, 'R'},  {"scheduler-user", required_argument, NULL, 's'},
      {"node-user", required_argument, NULL, 'n'}, {"help", no_argument, NULL, 'h'},
      {"version", no_argument, NULL, 'V'},         {NULL, 0, NULL, 0}};
  for (int c; (c = vg_getopt_long(argc, argv, "h", opts, "vgpu-webhook")) != -1;) {
    if (c == 'l')
      f->listen = optarg;
    else if (c == 'c')
      f->cert = optarg;
    else if (c == 'k')
      f->key = optarg;
    else if (c == 'r')
      f->resources = optarg;
    else if (c == 'R') {
      struct vg_err err = {{0}};
      if (vg_resource_names_set(&f->names, optarg, &err) != 0)
        return fprintf(stderr, "vgpu-webhook: %s\n", err.msg), 2;
    } else if (c == 's' || c == 'n') {
      if (add_user(f, c, optarg) != 0) return 2;
    } else if (c == 'h')
      return usage(stdout), 1;
    else if (c == 'V')
      return printf("vgpu-webhook %s\n", VG_VERSION), 1;
    else
      return 2; /* vg_getopt_long said why, in one line */
  }
  if (optind != argc) {
    fprintf(stderr, "vgpu-webhook: unexpected argument \"%s\" (see vgpu-webhook --help)\n",
            argv[optind]);
    return 2;
  }
  if (f->cert == NULL || f->key == NULL) {
    fprintf(stderr,
            "vgpu-webhook: --tls-cert and --tls-key are required (the API server "
            "calls webhooks over HTTPS only; see vgpu-webhook --help)\n");
    return 2;
  }
  vg_wh_writers_default(&f->writers);
  return 0;
}

/* Until SIGINT/SIGTERM, checking the certificate files between waits. */
static void serve(struct vg_wh_server *s, const sigset_t *set) {
  struct timespec wait = {RELOAD_CHECK_S, 0};
  for (;;) {
    int sig = sigtimedwait(set, NULL, &wait);
    if (sig == SIGINT || sig == SIGTERM) return;
    struct vg_err err = {{0}};
    int rc = vg_wh_server_reload(s, &err);
    if (rc > 0) vg_info("vgpu-webhook: certificate files changed; reloaded");
    if (rc < 0) vg_warn("vgpu-webhook: certificate files changed but not reloaded: %s", err.msg);
  }
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "certs") == 0) return vg_wh_certs_main(argc - 1, argv + 1);
  vg_log_set_default(VG_LOG_INFO);
  static struct serve_flags f = {.listen = "0.0.0.0:8443"};
  vg_resource_names_default(&f.names);
  int rc = parse(argc, argv, &f);
  if (rc != 0) return rc == 1 ? 0 : 2;
  struct vg_err err = {{0}};
  static struct vg_wh_resources res;
  if (f.resources == NULL)
    vg_wh_resources_default(&res, &f.names);
  else if (vg_wh_resources_parse(f.resources, &res, &err) != 0) {
    fprintf(stderr, "vgpu-webhook: %s\n", err.msg);
    return 2;
  }
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, NULL); /* before the server's threads start */
  signal(SIGPIPE, SIG_IGN);
  struct vg_wh_server_options o = {f.listen, f.cert, f.key, &res, &f.writers};
  struct vg_wh_server *s = vg_wh_server_start(&o, &err);
  if (s == NULL) {
    fprintf(stderr, "vgpu-webhook: %s\n", err.msg);
    return 1;
  }
  printf("PORT %d\n", vg_wh_server_port(s));
  fflush(stdout);
  char sched[256], node[256];
  vg_wh_users_list(&f.writers.scheduler, sched, sizeof(sched));
  vg_wh_users_list(&f.writers.node, node, sizeof(node));
  vg_info("vgpu-webhook %s: listening on %s (port %d), %d managed resources", VG_VERSION, f.listen,
          vg_wh_server_port(s), res.n);
  vg_info("vgpu-webhook: users of vgpu-scheduler: %s; of the node agent: %s", sched, node);
  serve(s, &set);
  vg_wh_server_stop(s);
  return 0;
}
