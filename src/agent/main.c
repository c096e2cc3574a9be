/*
 * main.c -- vgpu-device-plugin: reads the dialect configuration (--config),
 * discovers the node's GPUs through NVML, serves one DevicePlugin socket per
 * advertised resource (device IDs <GPU-UUID>::<n>) and stays registered with
 * the kubelet (docs/device-plugin.md, docs/allocation.md).
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent.h"
#include "assignment_mac.h"
#include "devices.h"
#include "log.h"
#include "plugin.h"
#include "registration.h"
#include "size.h"
#include "opt.h"

#define DEFAULT_PLUGIN_DIR "/var/lib/kubelet/device-plugins"
#define DEFAULT_PODRESOURCES "/var/lib/kubelet/pod-resources/kubelet.sock"
/* A slot handed out this recently is never removed: the kubelet lists a
 * container's IDs only after its Allocate returned (slot_gc.h). */
#define DEFAULT_SLOT_GRACE_S 60
#define MAX_SLOT_GRACE_S (7 * 86400)
/* The memory audit (audit.h): every 30 s; 256 MiB of slack per GPU; a slot
 * is called unenforced a minute after Allocate at the earliest. */
#define DEFAULT_AUDIT_INTERVAL_S 30
#define MAX_AUDIT_INTERVAL_S 3600
#define DEFAULT_AUDIT_TOLERANCE (256ULL << 20)
#define AUDIT_GRACE_S 60
/* The backstop's compute judgement (backstop_compute.h): 10 points above
 * the grant, in every reading for 30 s. */
#define DEFAULT_COMPUTE_TOLERANCE 10
#define DEFAULT_COMPUTE_SUSTAIN_S 30
#define MAX_COMPUTE_SUSTAIN_S 86400
/* Without --config: the vgpu dialect with its defaults. */
static const char default_config[] = "dialects:\n  vgpu: {}\n";

static void usage(FILE *f) {
  fprintf(
      f,
      "usage: vgpu-device-plugin [--config FILE] [--node-name NAME] [--kubeconfig FILE]\n"
      "                          [--plugin-dir DIR] [--kubelet-socket PATH]\n"
      "                          [--podresources-socket PATH] [--metrics ADDR:PORT]\n"
      "                          [--state-dir DIR] [--library PATH] [--slot-grace SECONDS]\n"
      "                          [--audit-interval SECONDS] [--unaccounted-tolerance SIZE]\n"
      "                          [--backstop-policy report|evict] [--compute-tolerance POINTS]\n"
      "                          [--compute-sustain SECONDS] [--assignment-key FILE]\n"
      "                          [--resource NAME] [--slots N] [--dev-root DIR] [--debug]\n"
      "       vgpu-device-plugin --version\n"
      "  --config FILE     dialect configuration (docs/configuration.md); default: the vgpu\n"
      "                    dialect with its defaults\n"
      "  --node-name NAME  this node (default $NODE_NAME): the Node the GPU inventory is\n"
      "                    published on (annotation vgpu.io/gpu-inventory), whose pods are\n"
      "                    read to steer and check each admission\n"
      "  --kubeconfig FILE Kubernetes API access (default $KUBECONFIG, else in-cluster); a\n"
      "                    kubeconfig runs the plugin outside a pod\n"
      "  --plugin-dir DIR  the kubelet's device-plugin directory, where our sockets are served\n"
      "                    (default " DEFAULT_PLUGIN_DIR
      ")\n"
      "  --kubelet-socket PATH  the kubelet's Registration socket (default\n"
      "                    <plugin-dir>/kubelet.sock; empty: serve without registering)\n"
      "  --podresources-socket PATH  the kubelet's PodResources API, which tells the binder,\n"
      "                    steering, the admission check and the slot collector which pod holds\n"
      "                    which device IDs (default " DEFAULT_PODRESOURCES
      ")\n"
      "  --metrics ADDR:PORT  serve Prometheus metrics at http://ADDR:PORT/metrics (IPv4; port\n"
      "                    0 picks one; default: no metrics)\n"
      "  --state-dir DIR   overrides the config's stateDir (per-container slot directories)\n"
      "  --library PATH    overrides the config's library (host path of libvgpu.so)\n"
      "  --slot-grace SECONDS  remove the slot directory of a container the kubelet no longer\n"
      "                    lists once it was last allocated SECONDS ago (default 60; 0 keeps\n"
      "                    them all)\n"
      "  --audit-interval SECONDS  compare each GPU's memory in use (NVML) with what the\n"
      "                    containers' regions account for this often, and report memory no\n"
      "                    region accounts for: a container running without libvgpu (default\n"
      "                    30; 0 turns the audit off; docs/device-plugin.md)\n"
      "  --unaccounted-tolerance SIZE  memory a GPU may hold beyond what is accounted for\n"
      "                    before the audit reports it, and a container beyond its grant\n"
      "                    (default 256m)\n"
      "  --backstop-policy report|evict  what the audit does when NVML shows a container's\n"
      "                    processes holding more than its grant (a process without\n"
      "                    libvgpu): report (default: log, Event GPUMemoryOverGrant, metric)\n"
      "                    or also evict the pod through the Eviction API; the same for\n"
      "                    compute (Event GPUComputeOverGrant), below\n"
      "  --compute-tolerance POINTS  percentage points of the GPU a container's processes\n"
      "                    may use (NVML's per-process utilisation) above its compute grant\n"
      "                    before the backstop counts a reading as over (default 10, 0..100)\n"
      "  --compute-sustain SECONDS  report a container over its compute grant once every\n"
      "                    reading for this long was over (default 30; 0: the first one)\n"
      "  --assignment-key FILE  the cluster's assignment key (32 or more random bytes; the\n"
      "                    Secret vgpu-assignment-key): admit and grant a pod only when\n"
      "                    vgpu-scheduler signed its vgpu.io/assigned (vgpu.io/assigned-mac);\n"
      "                    re-read when the file changes; unreadable later: every GPU pod\n"
      "                    is refused. Default: no signature checked (docs/security.md)\n"
      "  --resource NAME   overrides the vgpu dialect's resourceName\n"
      "  --slots N         overrides the vgpu dialect's deviceSplitCount (1..1024)\n"
      "  --dev-root DIR    prefix of the host device nodes /dev/nvidia* (default none)\n"
      "  --debug           log debug lines\n"
      "  --version         print the version and exit\n"
      "environment: NODE_NAME, KUBECONFIG (defaults above), VGPU_LOG_LEVEL (error, warn, info,\n"
      "debug; wins over --debug)\n");
}

/* A whole number from 0 to max, or -1. */
static long whole(const char *s, long max) {
  char *end;
  long v = strtol(s, &end, 10);
  return *s == '\0' || *end != '\0' || v < 0 || v > max ? -1 : v;
}

/* A --OPTION SECONDS value from 0 to max into *out; -1 (said on stderr) otherwise. */
static int seconds(const char *arg, const char *option, long max, unsigned *out) {
  long v = whole(arg, max);
  if (v < 0) {
    fprintf(stderr, "vgpu-device-plugin: %s: \"%s\" is not a number of seconds from 0 to %ld\n",
            option, arg, max);
    return -1;
  }
  *out = (unsigned)v;
  return 0;
}

/* <stateDir>/device-plugin.pid: how an operator signals this process
 * (SIGUSR1, SIGHUP; docs/device-plugin.md). In the DaemonSet it shares the
 * host's PID namespace (the backstop needs it), so PID 1 there is not us. */
static void pid_file_path(const char *state_dir, char *path, size_t len) {
  snprintf(path, len, "%s/device-plugin.pid", state_dir);
}

static void write_pid_file(const char *state_dir) {
  char path[PATH_MAX], tmp[PATH_MAX + 8];
  pid_file_path(state_dir, path, sizeof(path));
  snprintf(tmp, sizeof(tmp), "%s.new", path);
  (void)mkdir(state_dir, 0755); /* Allocate would make it later; EEXIST is fine */
  FILE *f = fopen(tmp, "w");
  bool ok = f != NULL;
  if (ok) {
    ok = fprintf(f, "%d\n", (int)getpid()) > 0;
    ok = fclose(f) == 0 && ok;
  }
  if (!ok || rename(tmp, path) != 0)
    vg_info("cannot write %s (%s): signal the plugin by its PID instead", path, strerror(errno));
}

static void remove_pid_file(const char *state_dir) {
  char path[PATH_MAX];
  pid_file_path(state_dir, path, sizeof(path));
  unlink(path);
}

/* What the command line asked for. */
struct cmdline {
  const char *config, *plugin_dir, *kubelet_socket, *metrics, *resource, *assignment_key;
  long slots;
  struct vg_plugin_opts opts;
  struct vg_agent_opts agent_opts;
};

/* An option whose argument is taken as it is (a path, a name, an address)
 * or that takes none. false when c is not one of them. */
static bool take_plain_option(int c, struct cmdline *cl) {
  switch (c) {
    case 'c':
      cl->config = optarg;
      return true;
    case 'n':
      cl->agent_opts.node_name = optarg;
      return true;
    case 'k':
      cl->agent_opts.kubeconfig = optarg;
      return true;
    case 'P':
      cl->agent_opts.podresources_socket = optarg;
      return true;
    case 'p':
      cl->plugin_dir = optarg;
      return true;
    case 's':
      cl->kubelet_socket = optarg;
      return true;
    case 'm':
      cl->metrics = optarg;
      return true;
    case 'd':
      cl->opts.state_dir = optarg;
      return true;
    case 'l':
      cl->opts.library = optarg;
      return true;
    case 'r':
      cl->resource = optarg;
      return true;
    case 'D':
      cl->opts.dev_root = optarg;
      return true;
    case 'K':
      cl->assignment_key = optarg;
      return true;
    case 'g':
      cl->opts.debug = true;
      return true;
    default:
      return false;
  }
}

/* An option whose argument is checked: 0, or -1 once the reason is on stderr. */
static int take_checked_option(int c, struct cmdline *cl) {
  struct vg_agent_opts *ao = &cl->agent_opts;
  struct vg_err e;
  switch (c) {
    case 'S':
      if ((cl->slots = whole(optarg, 1024)) < 1) {
        fprintf(stderr, "vgpu-device-plugin: --slots: \"%s\" is not a number from 1 to 1024\n",
                optarg);
        return -1;
      }
      return 0;
    case 'G':
      return seconds(optarg, "--slot-grace", MAX_SLOT_GRACE_S, &ao->slot_grace_s);
    case 'A':
      return seconds(optarg, "--audit-interval", MAX_AUDIT_INTERVAL_S, &ao->audit_interval_s);
    case 'T':
      if (vg_parse_size(optarg, &ao->audit_tolerance, &e) != 0) {
        fprintf(stderr, "vgpu-device-plugin: --unaccounted-tolerance: %s\n", e.msg);
        return -1;
      }
      return 0;
    case 'C':
      return seconds(optarg, "--compute-sustain", MAX_COMPUTE_SUSTAIN_S, &ao->compute_sustain_s);
    case 'U':
      if (whole(optarg, 100) < 0) {
        fprintf(stderr,
                "vgpu-device-plugin: --compute-tolerance: \"%s\" is not a number of points from "
                "0 to 100\n",
                optarg);
        return -1;
      }
      ao->compute_tolerance = (unsigned)whole(optarg, 100);
      return 0;
    case 'B':
      if (vg_backstop_policy_parse(optarg, &ao->backstop_policy, &e) != 0) {
        fprintf(stderr, "vgpu-device-plugin: --backstop-policy: %s\n", e.msg);
        return -1;
      }
      return 0;
    default:
      return -1; /* vg_getopt_long said why, in one line */
  }
}

/* Fills cl from argv. -1 to go on, else the exit status (0 after --help and
 * --version, 2 for a bad command line). */
static int parse_args(int argc, char **argv, struct cmdline *cl) {
  static const struct option longopts[] = {{"config", required_argument, NULL, 'c'},
                                           {"node-name", required_argument, NULL, 'n'},
                                           {"kubeconfig", required_argument, NULL, 'k'},
                                           {"plugin-dir", required_argument, NULL, 'p'},
                                           {"kubelet-socket", required_argument, NULL, 's'},
                                           {"metrics", required_argument, NULL, 'm'},
                                           {"slots", required_argument, NULL, 'S'},
                                           {"state-dir", required_argument, NULL, 'd'},
                                           {"library", required_argument, NULL, 'l'},
                                           {"resource", required_argument, NULL, 'r'},
                                           {"dev-root", required_argument, NULL, 'D'},
                                           {"debug", no_argument, NULL, 'g'},
                                           {"podresources-socket", required_argument, NULL, 'P'},
                                           {"slot-grace", required_argument, NULL, 'G'},
                                           {"audit-interval", required_argument, NULL, 'A'},
                                           {"unaccounted-tolerance", required_argument, NULL, 'T'},
                                           {"backstop-policy", required_argument, NULL, 'B'},
                                           {"compute-tolerance", required_argument, NULL, 'U'},
                                           {"compute-sustain", required_argument, NULL, 'C'},
                                           {"assignment-key", required_argument, NULL, 'K'},
                                           {"help", no_argument, NULL, 'h'},
                                           {"version", no_argument, NULL, 'V'},
                                           {NULL, 0, NULL, 0}};
  int c;
  while ((c = vg_getopt_long(argc, argv, "h", longopts, "vgpu-device-plugin")) != -1) {
    if (c == 'h') {
      usage(stdout);
      return 0;
    }
    if (c == 'V') {
      printf("vgpu-device-plugin %s\n", VG_VERSION);
      return 0;
    }
    if (!take_plain_option(c, cl) && take_checked_option(c, cl) != 0) return 2;
  }
  if (optind < argc) {
    fprintf(stderr,
            "vgpu-device-plugin: unexpected argument \"%s\" (see vgpu-device-plugin --help)\n",
            argv[optind]);
    return 2;
  }
  return -1;
}

/* The configuration (--config, else the vgpu dialect's defaults) with
 * --resource and --slots applied. 0, or -1 once the reason is on stderr. */
static int load_config(const struct cmdline *cl, struct vg_plugin_config *cfg) {
  struct vg_err cerr;
  int crc = cl->config != NULL
                ? vg_plugin_config_load(cl->config, cfg, &cerr)
                : vg_plugin_config_parse_string(default_config, strlen(default_config),
                                                "<default configuration>", cfg, &cerr);
  if (crc != 0) {
    fprintf(stderr, "vgpu-device-plugin: %s\n", cerr.msg);
    return -1;
  }
  if (cl->resource == NULL && cl->slots <= 0) return 0;
  if (!cfg->vgpu.enabled) {
    fprintf(stderr,
            "vgpu-device-plugin: --resource and --slots change the vgpu dialect, which %s does "
            "not enable\n",
            cl->config);
    return -1;
  }
  if (cl->resource != NULL)
    snprintf(cfg->vgpu.resource_count, sizeof(cfg->vgpu.resource_count), "%s", cl->resource);
  if (cl->slots > 0) cfg->vgpu.split_count = (unsigned)cl->slots;
  return 0;
}

/* Asked for and unusable is a start-up error: running without the check
 * would admit forged assignments, running with it would refuse every pod.
 * 0, or -1 once the reason is on stderr. */
static int open_assignment_key(struct cmdline *cl) {
  if (cl->assignment_key == NULL) return 0;
  struct vg_err kerr;
  cl->agent_opts.assignment_key = vg_assign_key_open(cl->assignment_key, &kerr);
  if (cl->agent_opts.assignment_key != NULL) return 0;
  fprintf(stderr, "vgpu-device-plugin: --assignment-key: %s\n", kerr.msg);
  return -1;
}

/* A daemon says what it does (info); --debug adds the debug lines, and
 * VGPU_LOG_LEVEL still wins over both. NVIDIA settings accepted but ignored
 * are said once, where operators look. */
static void log_start(const struct cmdline *cl, const struct vg_plugin_config *cfg) {
  vg_log_set_default(cl->opts.debug ? VG_LOG_DEBUG : VG_LOG_INFO);
  if (cfg->warnings[0] != '\0') vg_warn("%s", cfg->warnings);
  if (cl->agent_opts.assignment_key != NULL)
    vg_info("assignment key %s: only assignments vgpu-scheduler signed are admitted and granted",
            cl->assignment_key);
}

/* Signals arrive on a signalfd; blocked before any thread exists. The
 * signalfd, or -1 (said on stderr). */
static int block_signals(void) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  sigaddset(&set, SIGUSR1);
  sigprocmask(SIG_BLOCK, &set, NULL);
  int sigfd = signalfd(-1, &set, SFD_CLOEXEC);
  if (sigfd < 0) perror("vgpu-device-plugin: signalfd");
  return sigfd;
}

/* The node's GPUs, each logged; none when discovery fails (the plugin still
 * serves, advertising no devices). */
static unsigned discover_gpus(struct vg_gpu *gpus) {
  unsigned ngpus = 0;
  char err[512];
  if (vg_gpus_discover(gpus, &ngpus, err, sizeof(err)) != 0) {
    vg_info("GPU discovery: %s; advertising no devices", err);
    ngpus = 0;
  }
  for (unsigned i = 0; i < ngpus; i++)
    vg_info("GPU %u: %s %s, %llu MiB", gpus[i].index, gpus[i].uuid, gpus[i].name,
            (unsigned long long)(gpus[i].memory >> 20));
  return ngpus;
}

/* The plugin and the agent around it, served and registered until SIGINT or
 * SIGTERM arrives on sigfd. The exit status. */
static int serve(struct cmdline *cl, const struct vg_plugin_config *cfg, int sigfd) {
  static struct vg_gpu gpus[VG_MAX_GPUS];
  unsigned ngpus = discover_gpus(gpus);
  static struct vg_plugin plugin;
  vg_plugin_init(&plugin, &cl->opts, gpus, ngpus);
  for (size_t i = 0; i < plugin.nres; i++)
    vg_info("resource %s (%s dialect): socket %s", plugin.res[i].name,
            vg_dialect_name(plugin.res[i].dialect), plugin.res[i].endpoint);
  cl->agent_opts.state_dir = cl->opts.state_dir;
  cl->agent_opts.metrics = cl->metrics;
  struct vg_err agent_err;
  struct vg_agent *agent = vg_agent_start(&plugin, cfg, gpus, ngpus, &cl->agent_opts, &agent_err);
  if (agent == NULL) {
    fprintf(stderr, "vgpu-device-plugin: %s\n", agent_err.msg);
    vg_plugin_destroy(&plugin);
    return 2;
  }
  write_pid_file(plugin.state_dir);
  struct vg_reg_opts ro = {.plugin_dir = cl->plugin_dir,
                           .kubelet_socket = cl->kubelet_socket,
                           .gpus_found = vg_agent_gpus_found_fn,
                           .gpus_found_arg = agent};
  int rc = vg_registration_run(&plugin, &ro, sigfd);
  remove_pid_file(plugin.state_dir);
  vg_agent_stop(agent);
  vg_plugin_destroy(&plugin);
  return rc;
}

int main(int argc, char **argv) {
  struct cmdline cl = {.plugin_dir = DEFAULT_PLUGIN_DIR,
                       .agent_opts = {.slot_grace_s = DEFAULT_SLOT_GRACE_S,
                                      .audit_interval_s = DEFAULT_AUDIT_INTERVAL_S,
                                      .audit_tolerance = DEFAULT_AUDIT_TOLERANCE,
                                      .audit_grace_s = AUDIT_GRACE_S,
                                      .compute_tolerance = DEFAULT_COMPUTE_TOLERANCE,
                                      .compute_sustain_s = DEFAULT_COMPUTE_SUSTAIN_S}};
  int rc = parse_args(argc, argv, &cl);
  if (rc >= 0) return rc;
  static struct vg_plugin_config cfg;
  if (load_config(&cl, &cfg) != 0) return 2;
  cl.opts.cfg = &cfg;
  if (open_assignment_key(&cl) != 0) {
    vg_plugin_config_free(&cfg);
    return 2;
  }
  log_start(&cl, &cfg);
  char default_socket[PATH_MAX];
  if (cl.kubelet_socket == NULL) {
    snprintf(default_socket, sizeof(default_socket), "%s/kubelet.sock", cl.plugin_dir);
    cl.kubelet_socket = default_socket;
  }
  int sigfd = block_signals();
  if (sigfd < 0) {
    vg_assign_key_free(cl.agent_opts.assignment_key);
    return 1;
  }
  rc = serve(&cl, &cfg, sigfd);
  vg_plugin_config_free(&cfg);
  vg_assign_key_free(cl.agent_opts.assignment_key);
  close(sigfd);
  return rc;
}
