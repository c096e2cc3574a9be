/*
 * server_main.c -- vgpu-scheduler: the kube-scheduler extender.
 *
 *   vgpu-scheduler --listen ADDR:PORT [--kubeconfig FILE] [--policy NAME]
 *                  [--cache-ttl-ms N] [--no-watch] [--resize-poll-ms N]
 *                  [--workload-half-life PODS] [--workload-prior PODS]
 *                  [--foreign-gpu-nodes allow|deny]
 *                  [--max-body-mib N] [--idle-timeout-s N] [--assignment-key FILE]
 *
 * Prints "PORT <n>" on stdout once listening (port 0 picks a free one), serves
 * until SIGINT/SIGTERM. See docs/scheduler.md.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "assignment_mac.h"
#include "dialect.h"
#include "extender.h"
#include "httpd.h"
#include "log.h"
#include "vg_sched.h"
#include "opt.h"

static void usage(FILE *f) {
  fprintf(f,
          "usage: vgpu-scheduler --listen ADDR:PORT [--kubeconfig FILE] [--policy NAME]\n"
          "                      [--cache-ttl-ms N] [--no-watch] [--resize-poll-ms N]\n"
          "                      [--max-body-mib N] [--idle-timeout-s N] [--assignment-key FILE]\n"
          "                      [--workload-half-life PODS] [--workload-prior PODS]\n"
          "                      [--foreign-gpu-nodes allow|deny] [--resource KEY=NAME]...\n"
          "       vgpu-scheduler --version\n"
          "  --listen ADDR:PORT  IPv4 address and port (0 = any free port; printed as PORT n)\n"
          "  --kubeconfig FILE   Kubernetes API access (default $KUBECONFIG, else in-cluster)\n"
          "  --policy NAME       placement policy that scores nodes:");
  for (const struct vg_policy *const *p = vg_policy_all(); *p; p++) fprintf(f, " %s", (*p)->name);
  fprintf(f,
          " (default vgpu;\n"
          "                      a pod may choose its own with vgpu.io/node-scheduler-policy,\n"
          "                      and binpack/spread of GPUs with vgpu.io/gpu-scheduler-policy)\n"
          "  --cache-ttl-ms N    while the Pod and Node watches are not synced, reuse a node's\n"
          "                      inventory and assignments read from the API this long in\n"
          "                      filter and prioritize (default 1000; 0 = never); while they\n"
          "                      are, views come from the watch-fed store and are kept until\n"
          "                      an event changes them, at any N; bind always reads fresh\n"
          "  --no-watch          do not watch Pods and Nodes (views then read from the API and\n"
          "                      live --cache-ttl-ms)\n"
          "  --resize-poll-ms N  how often to look for live resize requests (kubectl vgpu\n"
          "                      resize, docs/resize.md; default 1000; 0 = do not serve them)\n"
          "  --max-body-mib N    refuse request bodies over N MiB with 413 (default 8: a\n"
          "                      Pod and node names; raise it for nodeCacheCapable: false)\n"
          "  --idle-timeout-s N  close connections idle this long (default 60)\n"
          "  --workload-half-life PODS\n"
          "                      the target workload the policy optimises for is learned\n"
          "                      from the pods filtered; a pod's weight halves after PODS\n"
          "                      more (default 5000; GET /workload shows it)\n"
          "  --workload-prior PODS\n"
          "                      the built-in start-up mix weighs as much as PODS pods\n"
          "                      (default 20)\n"
          "  --assignment-key FILE\n"
          "                      the cluster's assignment key (32 or more random bytes; the\n"
          "                      Secret vgpu-assignment-key): sign every vgpu.io/assigned that\n"
          "                      bind and resizes write (vgpu.io/assigned-mac), for the node\n"
          "                      agents to check; re-read when the file changes; unreadable\n"
          "                      later: binds fail. Default: unsigned (docs/security.md)\n"
          "  --foreign-gpu-nodes allow|deny\n"
          "                      a node without vgpu's inventory whose allocatable names\n"
          "                      nvidia.com/gpu runs another device plugin: allow (default)\n"
          "                      places pods asking only whole nvidia.com/gpu there, below\n"
          "                      every vgpu node; deny fails every GPU pod there\n"
          "  --resource KEY=NAME the name a resource was renamed to in the device plugin's\n"
          "                      configuration, KEY its key there (repeatable; %s)\n"
          "  --version           print the version and exit\n",
          vg_resource_keys());
}

/* What the command line asked for. */
struct cmdline {
  const char *listen, *kubeconfig, *policy, *key_file, *foreign;
  long ttl, resize_ms;
  bool watch;
  double half_life, prior;
  struct vg_ext_server_limits limits;
  struct vg_resource_names names; /* pods are read with these while serving */
};

/* arg as a whole number from lo to hi into *out; false when it is not one. */
static bool whole(const char *arg, long lo, long hi, long *out) {
  char *end;
  errno = 0;
  *out = strtol(arg, &end, 10);
  return *arg != '\0' && *end == '\0' && errno == 0 && *out >= lo && *out <= hi;
}

/* --max-body-mib or --idle-timeout-s: bounded so that N MiB fits size_t and
 * N seconds libmicrohttpd's unsigned. 0, or -1 once said on stderr. */
static int take_server_limit(int c, struct cmdline *cl) {
  long v, most = c == 'b' ? 1024 : 86400;
  if (!whole(optarg, 1, most, &v)) {
    fprintf(stderr, "vgpu-scheduler: --%s \"%s\": not a number from 1 to %ld\n",
            c == 'b' ? "max-body-mib" : "idle-timeout-s", optarg, most);
    return -1;
  }
  if (c == 'b')
    cl->limits.max_body = (size_t)v << 20;
  else
    cl->limits.idle_timeout_s = (unsigned)v;
  return 0;
}

/* --workload-half-life (at least 1) or --workload-prior (at least 0), in
 * pods. 0, or -1 once said on stderr. */
static int take_workload_option(int c, struct cmdline *cl) {
  char *end;
  errno = 0;
  double v = strtod(optarg, &end);
  if (*optarg == '\0' || *end != '\0' || errno != 0 || !(v >= (c == 'H') && v <= 1e9)) {
    fprintf(stderr, "vgpu-scheduler: --%s \"%s\": not a number of pods from %d to 1e9\n",
            c == 'H' ? "workload-half-life" : "workload-prior", optarg, c == 'H');
    return -1;
  }
  *(c == 'H' ? &cl->half_life : &cl->prior) = v;
  return 0;
}

/* One option other than --help and --version: 0, or -1 once said on stderr. */
static int take_option(int c, struct cmdline *cl) {
  switch (c) {
    case 'l':
      cl->listen = optarg;
      return 0;
    case 'k':
      cl->kubeconfig = optarg;
      return 0;
    case 'p':
      cl->policy = optarg;
      return 0;
    case 'W':
      cl->watch = false;
      return 0;
    case 'K':
      cl->key_file = optarg;
      return 0;
    case 't':
      if (whole(optarg, 0, 86400000, &cl->ttl)) return 0;
      fprintf(stderr,
              "vgpu-scheduler: --cache-ttl-ms \"%s\": not milliseconds from 0 to 86400000\n",
              optarg);
      return -1;
    case 'r':
      if (whole(optarg, 0, 3600000, &cl->resize_ms)) return 0;
      fprintf(stderr,
              "vgpu-scheduler: --resize-poll-ms \"%s\": not milliseconds from 0 to 3600000\n",
              optarg);
      return -1;
    case 'b':
    case 'i':
      return take_server_limit(c, cl);
    case 'H':
    case 'P':
      return take_workload_option(c, cl);
    case 'F':
      if (strcmp(optarg, "allow") != 0 && strcmp(optarg, "deny") != 0) {
        fprintf(stderr, "vgpu-scheduler: --foreign-gpu-nodes \"%s\": not allow or deny\n", optarg);
        return -1;
      }
      cl->foreign = optarg;
      return 0;
    case 'R': {
      struct vg_err rerr = {{0}};
      if (vg_resource_names_set(&cl->names, optarg, &rerr) == 0) return 0;
      fprintf(stderr, "vgpu-scheduler: %s\n", rerr.msg);
      return -1;
    }
    default:
      return -1; /* vg_getopt_long said why, in one line */
  }
}

/* Fills cl from argv and checks --listen before anything else starts. -1 to
 * go on, else the exit status (0 after --help and --version, 2 for a bad
 * command line). */
static int parse_args(int argc, char **argv, struct cmdline *cl) {
  static const struct option opts[] = {{"listen", required_argument, NULL, 'l'},
                                       {"kubeconfig", required_argument, NULL, 'k'},
                                       {"policy", required_argument, NULL, 'p'},
                                       {"cache-ttl-ms", required_argument, NULL, 't'},
                                       {"no-watch", no_argument, NULL, 'W'},
                                       {"help", no_argument, NULL, 'h'},
                                       {"version", no_argument, NULL, 'V'},
                                       {"resize-poll-ms", required_argument, NULL, 'r'},
                                       {"max-body-mib", required_argument, NULL, 'b'},
                                       {"idle-timeout-s", required_argument, NULL, 'i'},
                                       {"workload-half-life", required_argument, NULL, 'H'},
                                       {"workload-prior", required_argument, NULL, 'P'},
                                       {"assignment-key", required_argument, NULL, 'K'},
                                       {"foreign-gpu-nodes", required_argument, NULL, 'F'},
                                       {"resource", required_argument, NULL, 'R'},
                                       {NULL, 0, NULL, 0}};
  int c;
  while ((c = vg_getopt_long(argc, argv, "h", opts, "vgpu-scheduler")) != -1) {
    if (c == 'h') {
      usage(stdout);
      return 0;
    }
    if (c == 'V') {
      printf("vgpu-scheduler %s\n", VG_VERSION);
      return 0;
    }
    if (take_option(c, cl) != 0) return 2;
  }
  struct sockaddr_in sa;
  struct vg_err lerr = {{0}};
  if (!cl->listen || optind != argc) {
    fprintf(stderr,
            "vgpu-scheduler: --listen ADDR:PORT is required (e.g. 127.0.0.1:8888; see "
            "vgpu-scheduler --help)\n");
    return 2;
  }
  if (!vg_httpd_parse_listen("--listen", cl->listen, &sa, &lerr)) {
    fprintf(stderr, "vgpu-scheduler: %s\n", lerr.msg);
    return 2;
  }
  return -1;
}

/* The API client, with timeouts within the extender's 5 s default; NULL
 * with the reason in err. */
static struct vg_k8s_client *new_client(const char *kubeconfig, struct vg_err *err) {
  struct vg_k8s_config cfg = {0};
  if (vg_k8s_config_load(&cfg, kubeconfig, err) != 0) return NULL;
  struct vg_k8s_client *client = vg_k8s_client_new(&cfg, err);
  vg_k8s_config_free(&cfg);
  if (client) vg_k8s_client_set_timeouts(client, 4000, 2000);
  return client;
}

/* The extender as the command line configures it; NULL with the reason in err. */
static struct vg_ext *new_extender(const struct cmdline *cl, struct vg_k8s_client *client,
                                   struct vg_assign_key *key, struct vg_err *err) {
  struct vg_ext *x = vg_ext_new(client, cl->policy, cl->ttl, err);
  if (!x) return NULL;
  vg_ext_set_assignment_key(x, key);
  vg_ext_set_foreign_gpu_nodes(x, strcmp(cl->foreign, "allow") == 0);
  vg_ext_set_resource_names(&cl->names);
  if (vg_ext_set_workload_window(x, cl->half_life, cl->prior, err) == 0) return x;
  vg_ext_free(x);
  return NULL;
}

/* The watches and the resize loop: each degrades on its own, said once. */
static void start_loops(struct vg_ext *x, const struct cmdline *cl) {
  struct vg_err err = {{0}};
  if (cl->watch && vg_ext_watch_start(x, &err) != 0)
    vg_warn("vgpu-scheduler: %s; node views live --cache-ttl-ms", err.msg);
  if (vg_ext_resize_start(x, cl->resize_ms, &err) != 0)
    vg_warn("vgpu-scheduler: %s; live resizes are not served", err.msg);
}

/* Serves until SIGINT or SIGTERM (blocked in set). The exit status. */
static int serve(const struct cmdline *cl, struct vg_k8s_client *client, struct vg_assign_key *key,
                 sigset_t *set) {
  struct vg_err err = {{0}};
  struct vg_ext *x = new_extender(cl, client, key, &err);
  struct vg_ext_server *srv = x ? vg_ext_server_start(x, cl->listen, &cl->limits, &err) : NULL;
  if (!srv) {
    fprintf(stderr, "vgpu-scheduler: %s\n", err.msg);
    vg_ext_free(x);
    return 1;
  }
  start_loops(x, cl);
  if (key) vg_info("vgpu-scheduler: signing assignments with the key in %s", cl->key_file);
  printf("PORT %d\n", vg_ext_server_port(srv));
  fflush(stdout);
  vg_info("vgpu-scheduler: listening on %.*s:%d, policy %s, foreign GPU nodes: %s",
          (int)(strrchr(cl->listen, ':') - cl->listen), cl->listen, vg_ext_server_port(srv),
          cl->policy, cl->foreign);
  int sig = 0;
  sigwait(set, &sig);
  vg_ext_server_stop(srv);
  vg_ext_free(x);
  return 0;
}

int main(int argc, char **argv) {
  static struct cmdline cl = {.policy = "vgpu",
                              .foreign = "allow",
                              .ttl = 1000,
                              .resize_ms = 1000,
                              .watch = true,
                              .half_life = VG_EXT_WORKLOAD_HALF_LIFE,
                              .prior = VG_EXT_WORKLOAD_PRIOR};
  vg_resource_names_default(&cl.names);
  vg_log_set_default(VG_LOG_INFO); /* a daemon says what it does */
  int rc = parse_args(argc, argv, &cl);
  if (rc >= 0) return rc;

  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, NULL);
  signal(SIGPIPE, SIG_IGN);

  if (!vg_policy_find(cl.policy)) {
    fprintf(stderr, "vgpu-scheduler: unknown policy '%s' (see vgpu-scheduler --help)\n", cl.policy);
    return 2;
  }
  struct vg_err err = {{0}};
  /* Asked for and unusable is a start-up error: binds would all fail. */
  struct vg_assign_key *key = cl.key_file ? vg_assign_key_open(cl.key_file, &err) : NULL;
  if (cl.key_file && !key) {
    fprintf(stderr, "vgpu-scheduler: --assignment-key: %s\n", err.msg);
    return 2;
  }
  struct vg_k8s_client *client = new_client(cl.kubeconfig, &err);
  if (!client) {
    fprintf(stderr, "vgpu-scheduler: %s\n", err.msg);
    vg_assign_key_free(key);
    return 1;
  }
  rc = serve(&cl, client, key, &set);
  vg_k8s_client_free(client);
  vg_assign_key_free(key);
  return rc;
}
