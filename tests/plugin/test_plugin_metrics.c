/*
 * test_plugin_metrics.c -- the node agent's /metrics: real numbers from the
 * region files, NVML and the kubelet, named by pod, and valid Prometheus
 * text according to a real parser (promtool, from Debian's prometheus).
 *
 * Two pods with the scheduler's assignments are admitted by the fake
 * kubelet; the test then joins pod a's region as a process would (libvgpu
 * does exactly this) and charges 256 MiB, so the scrape must show a's limit,
 * use, compute limit and one process, the GPU's allocation, and the agent's
 * own counters; an injected XID must turn the GPU's health gauge to 0. The
 * slot directory of a deleted pod is removed and its series with it. A
 * workload running without libvgpu is noticed by the memory audit.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
// clang-format off
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include "plugin_fixture.h"

#define MIB (1ull << 20)

static int metrics_port(struct setup *s) {
  static char log[1 << 16];
  assert_true(wait_log(s, "/metrics (port ", 5));
  plugin_log(s, log, sizeof(log));
  const char *p = strstr(log, "/metrics (port ");
  return atoi(p + strlen("/metrics (port "));
}

static const char *scrape(int port) {
  static char body[1 << 18];
  assert_int_equal(http_call(port, NULL, "GET", "/metrics", NULL, body, sizeof(body)), 200);
  return body;
}

/* The value of the sample of family name whose labels contain every
 * fragment (NULL-ended); fails the test when there is none. */
static double sample(const char *body, const char *name, ...) {
  const char *frags[8];
  int n = 0;
  va_list ap;
  va_start(ap, name);
  for (const char *f; n < 8 && (f = va_arg(ap, const char *)) != NULL;) frags[n++] = f;
  va_end(ap);
  size_t len = strlen(name);
  for (const char *line = body; *line != '\0';) {
    const char *end = strchr(line, '\n');
    size_t ll = end != NULL ? (size_t)(end - line) : strlen(line);
    char buf[2048];
    snprintf(buf, sizeof(buf), "%.*s", (int)ll, line);
    bool all = strncmp(buf, name, len) == 0 && buf[len] == '{';
    for (int i = 0; all && i < n; i++) all = strstr(buf, frags[i]) != NULL;
    if (all) return atof(strrchr(buf, ' ') + 1);
    line = end != NULL ? end + 1 : line + ll;
  }
  fail_msg("no %s sample with the labels asked for in:\n%s", name, body);
  return -1;
}

static void assign(struct setup *s, const char *pod, const char *uuid, uint64_t memory, int cores,
                   char *admitted, size_t len) {
  char text[700], body[1400];
  snprintf(text, sizeof(text),
           "{\\\"version\\\":1,\\\"node\\\":\\\"node1\\\",\\\"containers\\\":[{\\\"name\\\":"
           "\\\"c\\\",\\\"resource\\\":\\\"nvidia.com/vgpu\\\",\\\"gpus\\\":[{\\\"uuid\\\":"
           "\\\"%s\\\",\\\"index\\\":0,\\\"memory\\\":%llu,\\\"cores\\\":%d}]}]}",
           uuid, (unsigned long long)memory, cores);
  snprintf(body, sizeof(body),
           "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"default\",\"annotations\":{"
           "\"vgpu.io/assigned\":\"%s\"}},\"spec\":{\"nodeName\":\"node1\",\"containers\":[{"
           "\"name\":\"c\",\"resources\":{\"limits\":{\"nvidia.com/vgpu\":\"1\"}}}]}}",
           pod, text);
  assert_true(api(s, "POST", "/_test/pods", body, NULL, 0) < 300);
  snprintf(admitted, len, "%s", fake(s, "admit default %s c nvidia.com/vgpu 1", pod));
  assert_non_null(strstr(admitted, "\"ok\": true"));
  struct region_view v;
  region_from(admitted, &v);
  for (int i = 0; i < 200 && v.pending; i++) {
    usleep(25000);
    region_from(admitted, &v);
  }
  assert_false(v.pending);
}

/* The region path an admit answer mounts at /usr/local/vgpu. */
static void region_path(const char *admitted, char *path, size_t len) {
  static const char key[] = "{\"container_path\": \"/usr/local/vgpu\", \"host_path\": \"";
  const char *p = strstr(admitted, key);
  assert_non_null(p);
  p += strlen(key);
  snprintf(path, len, "%.*s/region.cache", (int)(strchr(p, '"') - p), p);
}

static void promtool_accepts(struct setup *s, const char *body) {
  char file[600], cmd[1400], out[4096] = "";
  snprintf(file, sizeof(file), "%s/metrics.txt", s->env.dir);
  FILE *f = fopen(file, "w");
  fputs(body, f);
  fclose(f);
  snprintf(cmd, sizeof(cmd), "promtool check metrics < '%s' 2>&1", file);
  FILE *p = popen(cmd, "r");
  assert_non_null(p);
  size_t n = fread(out, 1, sizeof(out) - 1, p);
  out[n] = '\0';
  int rc = pclose(p);
  if (rc != 0)
    fail_msg("promtool check metrics (exit %d; `make deps` installs Debian's prometheus):\n%s", rc,
             out);
}

static void test_metrics(void **state) {
  struct setup *s = *state;
  s->extra_args[0] = "--metrics";
  s->extra_args[1] = "127.0.0.1:0";
  char kubeconfig[500], u0[128], u1[128], uu[200];
  start_node(s, kubeconfig, sizeof(kubeconfig), "4");
  two_uuids(s->fk.line, u0, u1, sizeof(u0));
  int port = metrics_port(s);
  static char a[1 << 16], b[1 << 16];
  assign(s, "a", u1, 3000 * MIB, 30, a, sizeof(a));
  assign(s, "b", u0, 1000 * MIB, 0, b, sizeof(b));

  /* A process of pod a holds 256 MiB. */
  char path[600];
  region_path(a, path, sizeof(path));
  struct vg_shm shm;
  struct vg_err err;
  assert_int_equal(vg_region_open(&shm, path, &err), 0);
  int slot = vg_region_join(&shm, getpid());
  assert_true(slot >= 0);
  assert_true(vg_region_reserve(&shm, slot, 0, 256 * MIB));

  const char *m = scrape(port);
  if (getenv("VG_TEST_VERBOSE") != NULL) {
    static char log[1 << 16];
    plugin_log(s, log, sizeof(log));
    fputs(log, stderr);
  }
  promtool_accepts(s, m);
  snprintf(uu, sizeof(uu), "uuid=\"%s\"", u1);
  const char *pa = "pod=\"a\"", *ns = "namespace=\"default\"", *node = "node=\"node1\"";
  assert_int_equal(sample(m, "vgpu_container_memory_limit_bytes", pa, ns, node, uu, NULL),
                   3000 * MIB);
  assert_int_equal(sample(m, "vgpu_container_memory_used_bytes", pa, uu, NULL), 256 * MIB);
  assert_true(sample(m, "vgpu_container_sm_limit_ratio", pa, uu, NULL) == 0.30);
  assert_true(sample(m, "vgpu_container_sm_limit_ratio", "pod=\"b\"", NULL) == 1.0);
  assert_int_equal(sample(m, "vgpu_container_processes", pa, "container=\"c\"", NULL), 1);
  assert_int_equal(sample(m, "vgpu_container_processes", "pod=\"b\"", NULL), 0);
  assert_int_equal(sample(m, "vgpu_container_limits_pending", pa, NULL), 0);
  assert_int_equal(sample(m, "vgpu_gpu_memory_total_bytes", uu, node, NULL), 8192 * MIB);
  assert_int_equal(sample(m, "vgpu_gpu_memory_allocated_bytes", uu, NULL), 3000 * MIB);
  assert_int_equal(sample(m, "vgpu_gpu_containers", uu, NULL), 1);
  assert_int_equal(sample(m, "vgpu_gpu_healthy", uu, NULL), 1);
  assert_int_equal(sample(m, "vgpu_podresources_up", node, NULL), 1);
  assert_int_equal(sample(m, "vgpu_nvml_up", node, NULL), 1);
  assert_int_equal(sample(m, "vgpu_steer_requests_total", "result=\"steered\"", NULL), 2);
  assert_int_equal(sample(m, "vgpu_steer_decisive_total", node, NULL), 2);
  assert_int_equal(sample(m, "vgpu_binder_bound_total", node, NULL), 2);
  assert_int_equal(sample(m, "vgpu_allocate_checks_total", "result=\"assigned\"", NULL), 2);
  assert_int_equal(sample(m, "vgpu_allocate_checks_total", "result=\"refused\"", NULL), 0);

  /* The process gives its memory back and leaves. */
  vg_region_release(&shm, slot, 0, 256 * MIB);
  vg_region_leave(&shm, slot);
  vg_shm_close(&shm);
  m = scrape(port);
  assert_int_equal(sample(m, "vgpu_container_memory_used_bytes", pa, uu, NULL), 0);
  assert_int_equal(sample(m, "vgpu_container_processes", pa, NULL), 0);

  /* XID 79 on GPU 1: its health gauge drops. */
  char *fault[] = {
      (char *)vg_build_path("bin/vgpu-sim"), "fault", "--device", "1", "--xid", "79", NULL};
  struct vg_run run;
  assert_int_equal(vg_run(&s->env, fault, &run), 0);
  double healthy = 1;
  for (int i = 0; i < 100 && healthy != 0; i++) {
    usleep(50000);
    healthy = sample(scrape(port), "vgpu_gpu_healthy", "gpu=\"1\"", NULL);
  }
  assert_true(healthy == 0);
  promtool_accepts(s, scrape(port));
}

/* The slot directory of an admit or allocate answer. */
static void slot_dir(const char *answer, char *dir, size_t len) {
  region_path(answer, dir, len);
  *strrchr(dir, '/') = '\0';
}

/* Sets a directory's mtime s seconds back: a slot allocated that long ago. */
static void backdate(const char *dir, long s) {
  struct timespec t[2];
  clock_gettime(CLOCK_REALTIME, &t[0]);
  t[0].tv_sec -= s;
  t[1] = t[0];
  assert_int_equal(utimensat(AT_FDCWD, dir, t, 0), 0);
}

static bool gone_within(const char *path, double seconds) {
  for (int i = 0; i < (int)(seconds * 20) && access(path, F_OK) == 0; i++) usleep(50000);
  return access(path, F_OK) != 0;
}

/* The slot directory of a deleted pod is removed, and its series leave
 * /metrics with it; a slot the kubelet has not listed yet (allocated a
 * moment ago) survives its grace period; and while the API server shows a
 * pod of the node the kubelet does not list (a kubelet catching up after a
 * restart), nothing is removed. */
static void test_gone_pod_slot_removed(void **state) {
  struct setup *s = *state;
  static const char *const args[] = {"--metrics", "127.0.0.1:0", "--slot-grace", "4"};
  memcpy(s->extra_args, args, sizeof(args));
  char kubeconfig[500], u0[128], u1[128];
  start_node(s, kubeconfig, sizeof(kubeconfig), "4");
  two_uuids(s->fk.line, u0, u1, sizeof(u0));
  int port = metrics_port(s);
  static char gone[1 << 16], kept[1 << 16], fresh[1 << 16];
  assign(s, "gone", u1, 1000 * MIB, 0, gone, sizeof(gone));
  assign(s, "kept", u0, 1000 * MIB, 0, kept, sizeof(kept));
  char gone_dir[600], kept_dir[600], fresh_dir[600];
  slot_dir(gone, gone_dir, sizeof(gone_dir));
  slot_dir(kept, kept_dir, sizeof(kept_dir));
  const char *m = scrape(port);
  assert_int_equal(sample(m, "vgpu_container_memory_limit_bytes", "pod=\"gone\"", NULL),
                   1000 * MIB);
  backdate(gone_dir, 3600);
  backdate(kept_dir, 3600);

  /* A pod the kubelet does not list yet holds the collector back. */
  assert_true(api(s, "POST", "/_test/pods",
                  "{\"metadata\":{\"name\":\"late\",\"namespace\":\"default\"},\"spec\":{"
                  "\"nodeName\":\"node1\",\"containers\":[{\"name\":\"c\"}]}}",
                  NULL, 0) < 300);
  assert_true(api(s, "DELETE", "/_test/pods/default/gone", NULL, NULL, 0) < 300);
  assert_non_null(strstr(fake(s, "unassign default gone"), "\"ok\": true"));
  assert_true(wait_log(s, "the kubelet does not list pod default/late", 10));
  assert_int_equal(access(gone_dir, F_OK), 0);

  /* The kubelet lists every pod again: the slot of the deleted pod goes. */
  assert_true(api(s, "DELETE", "/_test/pods/default/late", NULL, NULL, 0) < 300);
  if (!gone_within(gone_dir, 10)) {
    static char log[1 << 16];
    plugin_log(s, log, sizeof(log));
    fail_msg("%s was never removed; plugin log:\n%s", gone_dir, log);
  }
  assert_int_equal(access(kept_dir, F_OK), 0);
  m = scrape(port);
  promtool_accepts(s, m);
  assert_null(strstr(m, "pod=\"gone\""));
  assert_int_equal(sample(m, "vgpu_container_memory_limit_bytes", "pod=\"kept\"", NULL),
                   1000 * MIB);
  assert_int_equal(sample(m, "vgpu_slots_removed_total", "node=\"node1\"", NULL), 1);
  assert_int_equal(sample(m, "vgpu_stale_slots", "node=\"node1\"", NULL), 0);

  /* Allocated a moment ago, not listed yet: kept for its grace period
   * (several passes), then removed, as the kubelet never recorded it. */
  snprintf(fresh, sizeof(fresh), "%s", fake(s, "allocate %s::3", u1));
  assert_non_null(strstr(fresh, "\"ok\": true"));
  slot_dir(fresh, fresh_dir, sizeof(fresh_dir));
  usleep(2500000);
  assert_int_equal(access(fresh_dir, F_OK), 0);
  assert_int_equal(sample(scrape(port), "vgpu_stale_slots", "node=\"node1\"", NULL), 1);
  assert_true(gone_within(fresh_dir, 10));
  assert_int_equal(access(kept_dir, F_OK), 0);
  assert_int_equal(sample(scrape(port), "vgpu_slots_removed_total", "node=\"node1\"", NULL), 2);
}

/* A --metrics address that cannot be served stops the plugin with the reason. */
/* The unaccounted memory of GPU uu once it is at least min (-1 when absent). */
static double unaccounted(int port, const char *uu, double min, double seconds) {
  double v = -1;
  for (int i = 0; i < (int)(seconds * 10); i++) {
    v = sample(scrape(port), "vgpu_gpu_unaccounted_memory_bytes", uu, NULL);
    if (v >= min) break;
    usleep(100000);
  }
  return v;
}

/* vgpu-burn holding 2 GiB on GPU uuid, with or without libvgpu in the region at region. */
static pid_t burn_on(struct setup *s, const char *uuid, const char *region) {
  vg_env_set(&s->env, "NVIDIA_VISIBLE_DEVICES", uuid);
  if (region != NULL) {
    vg_env_set(&s->env, "LD_PRELOAD", vg_build_path("lib/libvgpu.so"));
    vg_env_set(&s->env, "CUDA_DEVICE_MEMORY_SHARED_CACHE", region);
  }
  char *argv[] = {(char *)vg_build_path("bin/vgpu-burn"), "--alloc", "2g", "--hold", "60", NULL};
  pid_t pid = vg_spawn(&s->env, argv);
  vg_env_unset(&s->env, "NVIDIA_VISIBLE_DEVICES");
  vg_env_unset(&s->env, "LD_PRELOAD");
  return pid;
}

/* A workload the preload missed (vgpu-burn run without libvgpu, as in an
 * image whose glibc refused it) holds 2 GiB on pod a's GPU: the audit shows
 * the memory as unaccounted, counts one detection, calls pod a unenforced
 * (its region never had a process) and says so in the log; the same
 * workload under libvgpu in a's region is fully accounted for; once the
 * workload is gone the GPU is cleared. */
static void test_unaccounted_memory(void **state) {
  struct setup *s = *state;
  const char *args[] = {"--metrics", "127.0.0.1:0", "--audit-interval", "1", NULL};
  memcpy(s->extra_args, args, sizeof(args));
  char kubeconfig[500], u0[128], u1[128], uu[200], uu0[200];
  start_node(s, kubeconfig, sizeof(kubeconfig), "4");
  two_uuids(s->fk.line, u0, u1, sizeof(u0));
  int port = metrics_port(s);
  static char a[1 << 16];
  assign(s, "a", u1, 3000 * MIB, 0, a, sizeof(a));
  char region[600], dir[600];
  region_path(a, region, sizeof(region));
  slot_dir(a, dir, sizeof(dir));
  backdate(dir, 120); /* allocated two minutes ago: past the one-minute grace */
  snprintf(uu, sizeof(uu), "uuid=\"%s\"", u1);
  snprintf(uu0, sizeof(uu0), "uuid=\"%s\"", u0);

  /* Under libvgpu: charged, so nothing is unaccounted. */
  pid_t burn = burn_on(s, u1, region);
  for (int i = 0; i < 100; i++) { /* until its 2 GiB are charged */
    if (sample(scrape(port), "vgpu_container_memory_used_bytes", "pod=\"a\"", NULL) >= 2048 * MIB)
      break;
    usleep(100000);
  }
  usleep(2500000); /* two audit passes */
  const char *m = scrape(port);
  assert_int_equal(sample(m, "vgpu_container_memory_used_bytes", "pod=\"a\"", NULL), 2048 * MIB);
  assert_int_equal(sample(m, "vgpu_gpu_unaccounted_memory_bytes", uu, NULL), 0);
  assert_int_equal(sample(m, "vgpu_container_unenforced", "pod=\"a\"", NULL), 0);
  assert_int_equal(sample(m, "vgpu_unaccounted_memory_detections_total", NULL), 0);
  kill(burn, SIGTERM);
  vg_wait(burn);

  /* Pod b on the same GPU: a region no process ever joins. */
  static char b[1 << 16];
  assign(s, "b", u1, 3000 * MIB, 0, b, sizeof(b));
  region_path(b, region, sizeof(region));
  slot_dir(b, dir, sizeof(dir));
  backdate(dir, 120);

  /* Without libvgpu: 2 GiB no region accounts for. */
  burn = burn_on(s, u1, NULL);
  assert_int_equal(unaccounted(port, uu, 2048 * MIB, 10), 2048 * MIB);
  assert_true(wait_log(s, "no container's region accounts for", 5));
  assert_true(wait_log(s, "container default/b/c", 5));
  m = scrape(port);
  if (getenv("VG_TEST_VERBOSE") != NULL) fputs(m, stderr);
  promtool_accepts(s, m);
  assert_int_equal(sample(m, "vgpu_container_unenforced", "pod=\"b\"", NULL), 1);
  assert_int_equal(sample(m, "vgpu_container_unenforced", "pod=\"a\"", NULL), 0); /* joined */
  assert_int_equal(sample(m, "vgpu_gpu_unaccounted_memory_bytes", uu0, NULL), 0);
  assert_int_equal(sample(m, "vgpu_unaccounted_memory_detections_total", NULL), 1);

  /* The workload ends: cleared. */
  kill(burn, SIGTERM);
  vg_wait(burn);
  assert_true(wait_log(s, "is accounted for again", 5));
  m = scrape(port);
  assert_int_equal(sample(m, "vgpu_gpu_unaccounted_memory_bytes", uu, NULL), 0);
  assert_int_equal(sample(m, "vgpu_container_unenforced", "pod=\"b\"", NULL), 0);
  assert_int_equal(sample(m, "vgpu_unaccounted_memory_detections_total", NULL), 1);
}

/* vgpu-burn holding `size` on GPU uuid WITHOUT libvgpu, in a mount namespace
 * of its own where the slot directory is mounted at /usr/local/vgpu, as the
 * kubelet mounts it in the container: a process of that container that
 * bypassed the preload. -1 when this machine cannot make the namespace. */
static pid_t burn_in_slot(struct setup *s, const char *uuid, const char *slot, const char *args) {
  if (system("/usr/bin/unshare -m --propagation private true 2>/dev/null") != 0) return -1;
  vg_env_set(&s->env, "NVIDIA_VISIBLE_DEVICES", uuid);
  vg_env_set(&s->env, "VG_SLOT", slot);
  vg_env_set(&s->env, "VG_BURN", vg_build_path("bin/vgpu-burn"));
  vg_env_set(&s->env, "VG_ARGS", args);
  char *argv[] = {"/usr/bin/unshare",
                  "-m",
                  "--propagation",
                  "private",
                  "sh",
                  "-c",
                  "mount -t tmpfs vgpu-test /usr/local && mkdir /usr/local/vgpu && "
                  "mount --bind \"$VG_SLOT\" /usr/local/vgpu && "
                  "exec \"$VG_BURN\" $VG_ARGS",
                  NULL};
  pid_t pid = vg_spawn(&s->env, argv);
  vg_env_unset(&s->env, "NVIDIA_VISIBLE_DEVICES");
  return pid;
}

/* Pods c (on the node's second GPU, u1: memory_c and cores_c granted) and d
 * (on the first, u0: memory_d, the whole GPU's compute) admitted, and c's
 * grant written; the GPUs' UUIDs into u0 and u1 (128 bytes each) and the
 * slot directories into cdir and ddir (600 each). Returns the metrics port. */
static int two_pods(struct setup *s, uint64_t memory_c, int cores_c, uint64_t memory_d, char *u0,
                    char *u1, char *cdir, char *ddir) {
  two_uuids(s->fk.line, u0, u1, 128);
  int port = metrics_port(s);
  static char c[1 << 16], d[1 << 16];
  assign(s, "c", u1, memory_c, cores_c, c, sizeof(c));
  assign(s, "d", u0, memory_d, 0, d, sizeof(d));
  char grant[700];
  slot_dir(c, cdir, 600);
  slot_dir(d, ddir, 600);
  snprintf(grant, sizeof(grant), "%s/grant/grant", cdir);
  for (int i = 0; i < 100 && access(grant, F_OK) != 0; i++) usleep(100000); /* the binder */
  return port;
}

/* The value of family's first series with label, or -1 when none. */
static double maybe_sample(const char *body, const char *family, const char *label) {
  char head[200];
  snprintf(head, sizeof(head), "\n%s{", family);
  for (const char *p = strstr(body, head); p != NULL; p = strstr(p + 1, head)) {
    const char *end = strchr(p + 1, '\n');
    size_t n = end ? (size_t)(end - p) : strlen(p);
    char line[2048];
    snprintf(line, sizeof(line), "%.*s", (int)n, p + 1);
    if (strstr(line, label) != NULL) return atof(strrchr(line, ' ') + 1);
  }
  return -1;
}

/* A metric's value once it reaches want, within seconds (-1 when absent). */
static double wait_sample(int port, const char *family, const char *label, double want,
                          double seconds) {
  double v = -1;
  for (int i = 0; i < (int)(seconds * 10); i++) {
    v = maybe_sample(scrape(port), family, label);
    if (v >= want) break;
    usleep(100000);
  }
  return v;
}

/* The node-side backstop: a process of pod c (1000 MiB granted) running
 * without libvgpu takes 3 GiB; the audit attributes it to c by its slot
 * mount, shows NVML's figure and over_grant 1, counts one detection, logs
 * it and records a Warning Event GPUMemoryOverGrant on the pod; pod d on the
 * other GPU, within its grant under the same conditions, is not flagged.
 * With --backstop-policy evict the pod is evicted. */
static void test_backstop(void **state) {
  struct setup *s = *state;
  const char *args[] = {"--metrics", "127.0.0.1:0", "--audit-interval", "1", "--backstop-policy",
                        "evict",     NULL};
  memcpy(s->extra_args, args, sizeof(args));
  /* An API server from before policy/v1 (Kubernetes 1.20, as the e2e's). */
  setenv("VG_FAKE_EVICTION_VERSIONS", "policy/v1beta1", 1); /* the fake inherits it */
  char kubeconfig[500], u0[128], u1[128];
  start_node(s, kubeconfig, sizeof(kubeconfig), "4");
  unsetenv("VG_FAKE_EVICTION_VERSIONS");
  /* How an operator signals it (docs/device-plugin.md): its PID file. */
  char pidfile[500];
  snprintf(pidfile, sizeof(pidfile), "%s/device-plugin.pid", s->state_dir);
  FILE *pf = fopen(pidfile, "r");
  int written = 0;
  assert_non_null(pf);
  assert_int_equal(fscanf(pf, "%d", &written), 1);
  fclose(pf);
  assert_int_equal(written, s->plugin);
  char cdir[600], ddir[600];
  int port = two_pods(s, 1000 * MIB, 0, 4000 * MIB, u0, u1, cdir, ddir);
  pid_t over = burn_in_slot(s, u1, cdir, "--alloc 3g --chunk 64m --hold 60");
  if (over < 0) skip();
  pid_t within = burn_in_slot(s, u0, ddir, "--alloc 2g --chunk 64m --hold 60");
  assert_int_equal(wait_sample(port, "vgpu_container_over_grant", "pod=\"c\"", 1, 10), 1);
  const char *m = scrape(port);
  promtool_accepts(s, m);
  assert_true(sample(m, "vgpu_container_gpu_memory_nvml_bytes", "pod=\"c\"", NULL) >= 3072 * MIB);
  assert_int_equal(
      wait_sample(port, "vgpu_container_gpu_memory_nvml_bytes", "pod=\"d\"", 2048 * MIB, 5),
      2048 * MIB);
  assert_int_equal(sample(scrape(port), "vgpu_container_over_grant", "pod=\"d\"", NULL), 0);
  assert_true(wait_log(s, "backstop: pod default/c container c: its processes hold", 5));
  static char events[1 << 16];
  assert_int_equal(api(s, "GET", "/_test/events", NULL, events, sizeof(events)), 200);
  assert_non_null(strstr(events, "\"GPUMemoryOverGrant\""));
  assert_non_null(strstr(events, "above its grant of 1000 MiB"));
  /* Evicted (the fake deletes it), once: the episode is reported once. */
  static char pod[1 << 16];
  for (int i = 0;
       i < 50 && api(s, "GET", "/api/v1/namespaces/default/pods/c", NULL, pod, sizeof(pod)) == 200;
       i++)
    usleep(100000);
  assert_int_equal(api(s, "GET", "/api/v1/namespaces/default/pods/c", NULL, pod, sizeof(pod)), 404);
  usleep(2500000); /* two more passes: no second report */
  m = scrape(port);
  assert_int_equal(sample(m, "vgpu_backstop_detections_total", NULL), 1);
  assert_int_equal(sample(m, "vgpu_backstop_evictions_total", NULL), 1);
  kill(over, SIGTERM);
  kill(within, SIGTERM);
  vg_wait(over);
  vg_wait(within);
}

/* The backstop's compute side: a process of pod c (30 % granted) running
 * kernels without libvgpu uses its whole GPU; once every pass for
 * --compute-sustain said so, the agent shows NVML's share and
 * compute_over_grant 1, counts one detection, logs it and records a Warning
 * Event GPUComputeOverGrant, once; policy report leaves the pod alone. Pod
 * d, granted the whole of the other GPU, is never over doing the same. */
static void test_backstop_compute(void **state) {
  struct setup *s = *state;
  const char *args[] = {"--metrics", "127.0.0.1:0", "--audit-interval", "1", "--compute-sustain",
                        "2",         NULL};
  memcpy(s->extra_args, args, sizeof(args));
  char kubeconfig[500], u0[128], u1[128];
  start_node(s, kubeconfig, sizeof(kubeconfig), "4");
  char cdir[600], ddir[600];
  int port = two_pods(s, 1000 * MIB, 30, 1000 * MIB, u0, u1, cdir, ddir);
  pid_t over = burn_in_slot(s, u1, cdir, "--seconds 60");
  if (over < 0) skip();
  pid_t free_run = burn_in_slot(s, u0, ddir, "--seconds 60");
  double v = wait_sample(port, "vgpu_container_compute_over_grant", "pod=\"c\"", 1, 15);
  if (v != 1) fail_msg("compute_over_grant of c: %g\n%s", v, scrape(port));
  const char *m = scrape(port);
  promtool_accepts(s, m);
  assert_true(sample(m, "vgpu_container_gpu_sm_nvml_ratio", "pod=\"c\"", NULL) >= 0.9);
  assert_true(sample(m, "vgpu_container_gpu_sm_nvml_ratio", "pod=\"d\"", NULL) >= 0.9);
  assert_int_equal(sample(m, "vgpu_container_compute_over_grant", "pod=\"d\"", NULL), 0);
  assert_int_equal(sample(m, "vgpu_gpu_compute_judged", "gpu=\"0\"", NULL), 1);
  assert_true(wait_log(s, "backstop: pod default/c container c: its processes used", 5));
  static char events[1 << 16];
  assert_int_equal(api(s, "GET", "/_test/events", NULL, events, sizeof(events)), 200);
  assert_non_null(strstr(events, "\"GPUComputeOverGrant\""));
  assert_non_null(strstr(events, "above its compute grant of 30 %"));
  assert_null(strstr(events, "evicting"));
  usleep(2500000); /* two more passes: no second report, the pod stays */
  m = scrape(port);
  assert_int_equal(sample(m, "vgpu_backstop_compute_detections_total", NULL), 1);
  assert_int_equal(sample(m, "vgpu_backstop_evictions_total", NULL), 0);
  static char pod[1 << 16];
  assert_int_equal(api(s, "GET", "/api/v1/namespaces/default/pods/c", NULL, pod, sizeof(pod)), 200);
  kill(over, SIGTERM);
  kill(free_run, SIGTERM);
  vg_wait(over);
  vg_wait(free_run);
}

/* A driver that does not measure per-process utilisation
 * (NVML_ERROR_NOT_SUPPORTED; the simulator's VGPU_SIM_PROCESS_UTILIZATION):
 * the agent says so once per GPU in the log and with
 * vgpu_gpu_compute_judged 0, and judges no compute there, even with
 * --compute-sustain 0 and a process of pod c (30 %) running kernels
 * without libvgpu. */
static void test_backstop_compute_unsupported(void **state) {
  struct setup *s = *state;
  const char *args[] = {"--metrics", "127.0.0.1:0", "--audit-interval", "1", "--compute-sustain",
                        "0",         NULL};
  memcpy(s->extra_args, args, sizeof(args));
  vg_env_set(&s->env, "VGPU_SIM_PROCESS_UTILIZATION", "unsupported");
  char kubeconfig[500], u0[128], u1[128];
  start_node(s, kubeconfig, sizeof(kubeconfig), "4");
  char cdir[600], ddir[600];
  int port = two_pods(s, 1000 * MIB, 30, 1000 * MIB, u0, u1, cdir, ddir);
  vg_env_unset(&s->env, "VGPU_SIM_PROCESS_UTILIZATION"); /* the burn's own NVML is not asked */
  pid_t over = burn_in_slot(s, u1, cdir, "--seconds 60");
  if (over < 0) skip();
  assert_true(wait_log(s, "does not measure per-process utilisation on GPU", 5));
  usleep(2500000); /* passes while it runs */
  const char *m = scrape(port);
  assert_int_equal(sample(m, "vgpu_gpu_compute_judged", "gpu=\"0\"", NULL), 0);
  assert_int_equal(sample(m, "vgpu_gpu_compute_judged", "gpu=\"1\"", NULL), 0);
  assert_null(strstr(m, "\nvgpu_container_gpu_sm_nvml_ratio{"));
  assert_null(strstr(m, "\nvgpu_container_compute_over_grant{"));
  assert_int_equal(sample(m, "vgpu_backstop_compute_detections_total", NULL), 0);
  static char log[1 << 16];
  plugin_log(s, log, sizeof(log));
  int said = 0;
  for (const char *p = log; (p = strstr(p, "does not measure per-process")) != NULL; p++) said++;
  assert_int_equal(said, 2); /* once per GPU, not once per pass */
  kill(over, SIGTERM);
  vg_wait(over);
}

static void test_bad_metrics_address(void **state) {
  struct setup *s = *state;
  static const char *const bad[][2] = {{"nonsense", "not ADDR:PORT"},
                                       {"127.0.0.1:99999", "not ADDR:PORT"},
                                       {"localhost:9400", "is not an IPv4 address"}};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    char *argv[] = {(char *)vg_build_path("bin/vgpu-device-plugin"),
                    "--plugin-dir",
                    s->plugin_dir,
                    "--state-dir",
                    s->state_dir,
                    "--kubelet-socket",
                    "",
                    "--metrics",
                    (char *)bad[i][0],
                    NULL};
    struct vg_run run;
    assert_int_equal(vg_run(&s->env, argv, &run), 2);
    if (strstr(run.err, bad[i][1]) == NULL) fail_msg("%s: %s", bad[i][0], run.err);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_metrics, setup, teardown),
      cmocka_unit_test_setup_teardown(test_gone_pod_slot_removed, setup, teardown),
      cmocka_unit_test_setup_teardown(test_unaccounted_memory, setup, teardown),
      cmocka_unit_test_setup_teardown(test_backstop, setup, teardown),
      cmocka_unit_test_setup_teardown(test_backstop_compute, setup, teardown),
      cmocka_unit_test_setup_teardown(test_backstop_compute_unsupported, setup, teardown),
      cmocka_unit_test_setup_teardown(test_bad_metrics_address, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
