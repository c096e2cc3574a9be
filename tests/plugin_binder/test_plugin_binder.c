/* test_plugin_binder.c -- the binder (docs/allocation.md step 2) against the
 * fake kubelet's PodResources service (tests/plugin/fake_kubelet.py) and the
 * fake API server (tests/k8s/fake_apiserver.py): region files pre-created
 * pending, as Allocate leaves them, get exactly their own pod's limits. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "assignment.h"
#include "assignment_mac.h"
#include "binder.h"
#include "slot.h"
#include "config.h"
#include "grant.h"
#include "k8s.h"
#include "region.h"
#include "region_guard.h"
#include "fake_requests.h"
#include "resize.h"
#include "json_get.h"

#define TOKEN "test-token"
#define MIB (1ull << 20)

static char tmpdir[256], state_dir[320], pr_socket[320], kubelet_dir[320];
static pid_t api_pid, kubelet_pid;
static int api_port;
static FILE *kin, *kout;
static struct vg_k8s_client *k8s;
static struct vg_plugin_config cfg;

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* ---- the fakes ---- */

static int start_apiserver(void) {
  char *argv[] = {"/usr/bin/python3", VG_FAKE_APISERVER, "--token", TOKEN, NULL};
  api_pid = vg_start_server(argv, &api_port);
  return api_pid < 0 ? -1 : 0;
}

static int start_kubelet(void) {
  int to[2], from[2];
  if (pipe(to) != 0 || pipe(from) != 0) return -1;
  kubelet_pid = fork();
  if (kubelet_pid == 0) {
    dup2(to[0], 0);
    dup2(from[1], 1);
    close(to[1]);
    close(from[0]);
    execl("/usr/bin/python3", "python3", VG_FAKE_KUBELET, "--dir", kubelet_dir, "--proto-dir",
          VG_PROTO_SRC_DIR, "--defer", "--podresources", pr_socket, (char *)NULL);
    _exit(127);
  }
  close(to[0]);
  close(from[1]);
  kin = fdopen(to[1], "w");
  kout = fdopen(from[0], "r");
  char line[512];
  if (fgets(line, sizeof(line), kout) == NULL || strstr(line, "\"ready\": true") == NULL) {
    fprintf(stderr, "fake kubelet did not start\n");
    return -1;
  }
  return 0;
}

/* One command to the fake kubelet; fails the test unless it says ok. */
static void kubelet(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void kubelet(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vfprintf(kin, fmt, ap);
  va_end(ap);
  fputc('\n', kin);
  fflush(kin);
  char line[4096];
  if (fgets(line, sizeof(line), kout) == NULL) fail_msg("the fake kubelet went away");
  if (strstr(line, "\"ok\": true") == NULL) fail_msg("fake kubelet: %s", line);
}

static struct vg_k8s_client *client_for(int port) {
  char server[64];
  snprintf(server, sizeof(server), "http://127.0.0.1:%d", port);
  struct vg_k8s_config kc = {.server = server, .token = (char *)TOKEN};
  struct vg_err err;
  struct vg_k8s_client *c = vg_k8s_client_new(&kc, &err);
  if (c == NULL) fail_msg("client: %s", err.msg);
  vg_k8s_client_set_timeouts(c, 5000, 1000);
  return c;
}

static void admin(const char *method, const char *path, const char *body) {
  struct vg_k8s_response r;
  struct vg_err err;
  if (vg_k8s_request(k8s, method, path, "application/json", body, &r, &err) != 0)
    fail_msg("%s %s: %s", method, path, err.msg);
  if (r.status >= 300) fail_msg("%s %s: HTTP %ld %s", method, path, r.status, r.body);
  vg_k8s_response_free(&r);
}

/* A pod whose container `c` has these resources.limits (a JSON object). */
static void add_pod(const char *name, const char *limits) {
  char *body = NULL;
  if (asprintf(&body,
               "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"default\"},"
               "\"spec\":{\"nodeName\":\"node1\",\"containers\":["
               "{\"name\":\"side\",\"resources\":{}},"
               "{\"name\":\"c\",\"resources\":{\"limits\":%s,\"requests\":%s}}]}}",
               name, limits, limits) < 0)
    fail_msg("out of memory");
  admin("POST", "/_test/pods", body);
  free(body);
}

static int group_setup(void **state) {
  (void)state;
  snprintf(tmpdir, sizeof(tmpdir), "/tmp/vg-binder-test.XXXXXX");
  if (mkdtemp(tmpdir) == NULL) return -1;
  snprintf(state_dir, sizeof(state_dir), "%s/state", tmpdir);
  snprintf(kubelet_dir, sizeof(kubelet_dir), "%s/kubelet", tmpdir);
  snprintf(pr_socket, sizeof(pr_socket), "%s/pod-resources.sock", tmpdir);
  mkdir(state_dir, 0755);
  mkdir(kubelet_dir, 0755);
  if (start_apiserver() != 0 || start_kubelet() != 0) return -1;
  k8s = client_for(api_port);
  static const char yaml[] = "version: v1\ndialects:\n  vgpu: {}\n  cce: {}\n";
  struct vg_err err;
  if (vg_plugin_config_parse_string(yaml, strlen(yaml), "binder.yaml", &cfg, &err) != 0) {
    fprintf(stderr, "config: %s\n", err.msg);
    return -1;
  }
  return 0;
}

static int group_teardown(void **state) {
  (void)state;
  vg_k8s_client_free(k8s);
  vg_plugin_config_free(&cfg);
  fprintf(kin, "quit\n");
  fclose(kin);
  fclose(kout);
  waitpid(kubelet_pid, NULL, 0);
  kill(api_pid, SIGTERM);
  waitpid(api_pid, NULL, 0);
  char cmd[300];
  snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
  return system(cmd) == 0 ? 0 : -1;
}

/* ---- regions as Allocate leaves them ---- */

static void region_path(const char *const *ids, size_t n, char *path, size_t len) {
  char hash[17];
  vg_slot_name(ids, n, hash);
  snprintf(path, len, "%s/slots/%s/region.cache", state_dir, hash);
}

static void make_pending(const char *const *ids, size_t n) {
  char path[600], dir[600];
  region_path(ids, n, path, sizeof(path));
  snprintf(dir, sizeof(dir), "%s/slots", state_dir);
  mkdir(dir, 0755);
  snprintf(dir, sizeof(dir), "%s", path);
  *strrchr(dir, '/') = '\0';
  assert_true(mkdir(dir, 0755) == 0 || errno == EEXIST);
  struct vg_shm shm;
  struct vg_err err;
  if (vg_region_open(&shm, path, &err) != 0) fail_msg("%s", err.msg);
  vg_region_set_pending(&shm, true);
  vg_shm_close(&shm);
  /* Allocate's grant directory (plugin.c), empty until the binder writes. */
  strcat(dir, "/grant");
  assert_true(mkdir(dir, 0755) == 0 || errno == EEXIST);
}

struct seen {
  bool pending;
  int grant_rc; /* vg_grant_load: 0 read, 1 absent */
  struct vg_grant grant;
  unsigned ndev;
  char uuid[VG_MAX_DEVICES][VG_UUID_LEN];
  uint64_t mem[VG_MAX_DEVICES];
  unsigned sm[VG_MAX_DEVICES];
};

static void read_region(const char *const *ids, size_t n, struct seen *s) {
  char path[600];
  region_path(ids, n, path, sizeof(path));
  struct vg_shm shm;
  struct vg_err err;
  if (vg_region_open(&shm, path, &err) != 0) fail_msg("%s", err.msg);
  const struct vg_region *r = vg_region_of(&shm);
  memset(s, 0, sizeof(*s));
  s->pending = vg_region_pending(r);
  s->ndev = r->device_count;
  for (unsigned i = 0; i < s->ndev && i < VG_MAX_DEVICES; i++) {
    snprintf(s->uuid[i], VG_UUID_LEN, "%s", r->dev[i].uuid);
    s->mem[i] = r->dev[i].mem_limit;
    s->sm[i] = r->dev[i].sm_limit;
  }
  vg_shm_close(&shm);
  *strrchr(path, '/') = '\0';
  strcat(path, "/grant");
  s->grant_rc = vg_grant_load(path, &s->grant, &err);
}

/* The grant the container reads says what the region says, GPU by GPU. */
static void grant_matches_region(const struct seen *s) {
  assert_int_equal(s->grant_rc, 0);
  assert_int_equal(s->grant.count, s->ndev);
  for (unsigned i = 0; i < s->ndev; i++) {
    const struct vg_grant_gpu *g = vg_grant_find(&s->grant, s->uuid[i]);
    if (g == NULL) fail_msg("the grant lacks %s", s->uuid[i]);
    assert_int_equal(g->memory, s->mem[i]);
    assert_int_equal(g->cores, s->sm[i] >= 100 ? 0 : s->sm[i]);
  }
}

static void assign(const char *pod, const char *resource, const char *const *ids, size_t n) {
  char list[4096] = "";
  size_t off = 0;
  for (size_t i = 0; i < n; i++)
    off += (size_t)snprintf(list + off, sizeof(list) - off, "%s%s", i ? "," : "", ids[i]);
  kubelet("assign default %s c %s %s", pod, resource, list);
}

static struct vg_binder *new_binder(struct vg_k8s_client *c, const char *socket) {
  struct vg_err err;
  struct vg_binder *b = vg_binder_new(&cfg, c, socket, state_dir, &err);
  if (b == NULL) fail_msg("binder: %s", err.msg);
  return b;
}

/* ---- tests ---- */

/* The slot name is plugin.c's: FNV-1a 64 over the sorted IDs, '\n' after each. */
static void test_slot_hash(void **state) {
  (void)state;
  const char *ids[] = {"b", "a"};
  uint64_t h = 1469598103934665603ull;
  const char *sorted = "a\nb\n";
  for (const char *p = sorted; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211ull;
  char want[17], got[17];
  snprintf(want, sizeof(want), "%016llx", (unsigned long long)h);
  vg_slot_name(ids, 2, got);
  assert_string_equal(got, want);
}

static void test_vgpu_limits(void **state) {
  (void)state;
  const char *ids[] = {"GPU-bbbb::3", "GPU-aaaa::1"};
  add_pod("vgpu1",
          "{\"nvidia.com/vgpu\":\"2\",\"nvidia.com/gpumem\":\"3000\","
          "\"nvidia.com/gpucores\":\"30\"}");
  make_pending(ids, 2);
  assign("vgpu1", "nvidia.com/vgpu", ids, 2);
  struct vg_binder *b = new_binder(k8s, pr_socket);
  struct vg_err err;
  assert_int_equal(vg_binder_run_once(b, &err), 1);
  struct seen s;
  read_region(ids, 2, &s);
  assert_false(s.pending);
  assert_int_equal(s.ndev, 2);
  for (unsigned i = 0; i < 2; i++) {
    assert_true(strcmp(s.uuid[i], "GPU-aaaa") == 0 || strcmp(s.uuid[i], "GPU-bbbb") == 0);
    assert_int_equal(s.mem[i], 3000 * MIB);
    assert_int_equal(s.sm[i], 30);
  }
  grant_matches_region(&s);
  /* Bound once: a second pass leaves it alone. */
  assert_int_equal(vg_binder_run_once(b, &err), 0);
  vg_binder_stop(b);
}

/* Quantities as the API server keeps them: 3e3 stays "3e3" (MiB), and a
 * binary one is bytes (users write 4096Mi, it comes back "4Gi"). */
static void test_vgpu_canonical_quantities(void **state) {
  (void)state;
  const char *exp[] = {"GPU-qqqq::0"}, *bin[] = {"GPU-qqqq::1"};
  add_pod("exp", "{\"nvidia.com/vgpu\":\"1\",\"nvidia.com/gpumem\":\"3e3\"}");
  add_pod("bin", "{\"nvidia.com/vgpu\":\"1\",\"nvidia.com/gpumem\":\"4096Mi\"}");
  make_pending(exp, 1);
  make_pending(bin, 1);
  assign("exp", "nvidia.com/vgpu", exp, 1);
  assign("bin", "nvidia.com/vgpu", bin, 1);
  struct vg_binder *b = new_binder(k8s, pr_socket);
  struct vg_err err;
  assert_int_equal(vg_binder_run_once(b, &err), 2);
  struct seen s;
  read_region(exp, 1, &s);
  assert_false(s.pending);
  assert_int_equal(s.mem[0], 3000 * MIB);
  read_region(bin, 1, &s);
  assert_false(s.pending);
  assert_int_equal(s.mem[0], 4096 * MIB);
  vg_binder_stop(b);
}

static void test_vgpu_percentage_and_defaults(void **state) {
  (void)state;
  const char *pct[] = {"GPU-cccc::0"}, *none[] = {"GPU-cccc::1"};
  add_pod("pct", "{\"nvidia.com/vgpu\":1,\"nvidia.com/gpumem-percentage\":\"25\"}");
  add_pod("whole", "{\"nvidia.com/vgpu\":\"1\"}");
  make_pending(pct, 1);
  make_pending(none, 1);
  assign("pct", "nvidia.com/vgpu", pct, 1);
  assign("whole", "nvidia.com/vgpu", none, 1);
  struct vg_binder *b = new_binder(k8s, pr_socket);
  struct vg_gpu gpu = {.uuid = "GPU-cccc", .memory = 16ull << 30};
  vg_binder_set_gpus(b, &gpu, 1);
  struct vg_err err;
  assert_int_equal(vg_binder_run_once(b, &err), 2);
  struct seen s;
  read_region(pct, 1, &s);
  assert_false(s.pending);
  assert_int_equal(s.mem[0], 4ull << 30);
  assert_int_equal(s.sm[0], 0);
  read_region(none, 1, &s);
  assert_false(s.pending);
  assert_string_equal(s.uuid[0], "GPU-cccc");
  assert_int_equal(s.mem[0], 0); /* HAMi: the whole GPU */
  vg_binder_stop(b);
}

static void test_cce_limits(void **state) {
  (void)state;
  const char *ids[40];
  char buf[40][32];
  for (int i = 0; i < 40; i++) {
    snprintf(buf[i], sizeof(buf[i]), "GPU-dddd::%d", i);
    ids[i] = buf[i];
  }
  add_pod("cce1",
          "{\"volcano.sh/gpu-mem.128Mi\":\"40\",\"volcano.sh/gpu-core.percentage\":\"25\"}");
  make_pending(ids, 40);
  assign("cce1", "volcano.sh/gpu-mem.128Mi", ids, 40);
  struct vg_binder *b = new_binder(k8s, pr_socket);
  struct vg_err err;
  assert_int_equal(vg_binder_run_once(b, &err), 1);
  struct seen s;
  read_region(ids, 40, &s);
  assert_false(s.pending);
  assert_int_equal(s.ndev, 1);
  assert_int_equal(s.mem[0], 5120 * MIB);
  assert_int_equal(s.sm[0], 25);
  grant_matches_region(&s);
  vg_binder_stop(b);
}

/* A pod the API does not know, and one without our resources: both stay
 * pending (libvgpu fails closed), and nothing else is touched. */
static void test_unbindable_stays_pending(void **state) {
  (void)state;
  const char *ghost[] = {"GPU-eeee::0"}, *plain[] = {"GPU-eeee::1"}, *other[] = {"GPU-eeee::2"};
  add_pod("plain", "{\"cpu\":\"1\"}");
  make_pending(ghost, 1);
  make_pending(plain, 1);
  make_pending(other, 1);
  assign("ghost", "nvidia.com/vgpu", ghost, 1);
  assign("plain", "nvidia.com/vgpu", plain, 1);
  /* A resource that is not ours: ignored even though its region is pending. */
  assign("plain", "example.com/other", other, 1);
  struct vg_binder *b = new_binder(k8s, pr_socket);
  struct vg_err err;
  assert_int_equal(vg_binder_run_once(b, &err), 0);
  assert_int_equal(vg_binder_run_once(b, &err), 0);
  struct vg_binder_stats st;
  vg_binder_get_stats(b, &st);
  assert_int_equal(st.unbindable, 2);
  assert_int_equal(st.api_errors, 0);
  struct seen s;
  read_region(ghost, 1, &s);
  assert_true(s.pending);
  assert_int_equal(s.ndev, 0);
  assert_int_equal(s.grant_rc, 1); /* no grant: libvgpu waits, then refuses */
  read_region(plain, 1, &s);
  assert_true(s.pending);
  read_region(other, 1, &s);
  assert_true(s.pending);
  vg_binder_stop(b);
  kubelet("unassign default ghost");
  kubelet("unassign default plain");
}

static int events(const char *reason, const char *part);

/* What a tenant's `dd` into its region does: the lock word and owner say
 * "held by a live thread" for ever. */
static void forge_lock(const char *const *ids, pid_t owner) {
  char path[600];
  region_path(ids, 1, path, sizeof(path));
  struct vg_shm shm;
  struct vg_err err;
  if (vg_region_open(&shm, path, &err) != 0) fail_msg("%s", err.msg);
  vg_forge_region_lock(&shm, owner);
  vg_shm_close(&shm);
}

/* One tenant forges its region's lock, another swaps its region for a link
 * to a host file: a neighbour is still bound in the same pass, the agent
 * waits on the forged lock once (not once per pass), never follows the
 * link, and both offenders are reported by a log line, an Event and the
 * count. */
static void test_hostile_regions_hurt_only_themselves(void **state) {
  (void)state;
  const char *evil[] = {"GPU-hhhh::0"}, *link_ids[] = {"GPU-hhhh::1"}, *good[] = {"GPU-hhhh::2"};
  add_pod("forger", "{\"nvidia.com/vgpu\":\"1\",\"nvidia.com/gpumem\":\"1000\"}");
  add_pod("linker", "{\"nvidia.com/vgpu\":\"1\",\"nvidia.com/gpumem\":\"1000\"}");
  add_pod("neighbour", "{\"nvidia.com/vgpu\":\"1\",\"nvidia.com/gpumem\":\"1000\"}");
  make_pending(evil, 1);
  make_pending(link_ids, 1);
  make_pending(good, 1);
  pid_t owner = vg_live_pid();
  forge_lock(evil, owner);
  char lpath[600], host[700];
  region_path(link_ids, 1, lpath, sizeof(lpath));
  snprintf(host, sizeof(host), "%s/host-file", tmpdir);
  FILE *f = fopen(host, "w");
  fclose(f); /* empty: an opener that followed the link would size and fill it */
  unlink(lpath);
  assert_int_equal(symlink(host, lpath), 0);
  assign("forger", "nvidia.com/vgpu", evil, 1);
  assign("linker", "nvidia.com/vgpu", link_ids, 1);
  assign("neighbour", "nvidia.com/vgpu", good, 1);
  struct vg_binder *b = new_binder(k8s, pr_socket);
  struct vg_err err;
  double t0 = now_s();
  assert_int_equal(vg_binder_run_once(b, &err), 1);
  double first = now_s() - t0;
  assert_true(first < 0.2 + 2.0); /* one lock wait, then the rest of the pass */
  struct seen s;
  read_region(good, 1, &s);
  assert_false(s.pending);
  assert_int_equal(s.mem[0], 1000 * MIB);
  struct stat st;
  assert_int_equal(stat(host, &st), 0);
  assert_int_equal(st.st_size, 0);
  struct vg_binder_stats bs;
  vg_binder_get_stats(b, &bs);
  assert_int_equal(bs.untrusted, 2);
  assert_int_equal(events("RegionUntrusted", "held past the deadline"), 1);
  assert_int_equal(events("RegionUntrusted", "symbolic link"), 1);
  /* The next pass gives up on the forged region at once, says nothing new. */
  t0 = now_s();
  assert_int_equal(vg_binder_run_once(b, &err), 0);
  assert_true(now_s() - t0 < 0.15);
  vg_binder_get_stats(b, &bs);
  assert_int_equal(bs.untrusted, 2);
  assert_int_equal(events("RegionUntrusted", "held past the deadline"), 1);
  vg_binder_stop(b);
  kill(owner, SIGKILL);
  waitpid(owner, NULL, 0);
  kubelet("unassign default forger");
  kubelet("unassign default linker");
  kubelet("unassign default neighbour");
}

/* A container holds flock on its region for ever: the binder, which takes
 * no flock, binds it all the same without waiting, and once the flock has
 * been held across passes for 3 s reports the container, once. */
static void test_flock_holder_reported(void **state) {
  (void)state;
  const char *ids[] = {"GPU-ffff::0"};
  add_pod("flocker", "{\"nvidia.com/vgpu\":\"1\",\"nvidia.com/gpumem\":\"1000\"}");
  make_pending(ids, 1);
  char path[600];
  region_path(ids, 1, path, sizeof(path));
  int ready[2];
  assert_int_equal(pipe(ready), 0);
  pid_t holder = fork();
  if (holder == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    int fd = open(path, O_RDWR);
    if (fd < 0 || flock(fd, LOCK_EX) != 0) _exit(1);
    (void)!write(ready[1], "x", 1);
    pause();
    _exit(0);
  }
  char c;
  assert_int_equal(read(ready[0], &c, 1), 1);
  assign("flocker", "nvidia.com/vgpu", ids, 1);
  struct vg_binder *b = new_binder(k8s, pr_socket);
  struct vg_err err;
  struct vg_binder_stats bs;
  double t0 = now_s();
  assert_int_equal(vg_binder_run_once(b, &err), 1); /* bound: the agent takes no flock */
  assert_true(now_s() - t0 < 1.0);
  vg_binder_get_stats(b, &bs);
  uint64_t before = bs.untrusted;
  sleep(3);
  vg_binder_run_once(b, &err);
  vg_binder_get_stats(b, &bs);
  assert_int_equal(bs.untrusted, before + 1);
  assert_int_equal(events("RegionUntrusted", "held its flock"), 1);
  vg_binder_run_once(b, &err); /* said once */
  assert_int_equal(events("RegionUntrusted", "held its flock"), 1);
  vg_binder_stop(b);
  kill(holder, SIGKILL);
  waitpid(holder, NULL, 0);
  close(ready[0]);
  close(ready[1]);
  kubelet("unassign default flocker");
}

/* A container truncates its region while the agent writes to it: the
 * agent finishes on a dead copy and learns the region was lost, instead of
 * dying of SIGBUS (region_guard.h). Without the guard this test's process
 * dies. */
static void test_truncated_under_the_agent(void **state) {
  (void)state;
  char dir[600], path[700];
  snprintf(dir, sizeof(dir), "%s/guarded", tmpdir);
  assert_true(mkdir(dir, 0755) == 0 || errno == EEXIST);
  struct vg_shm shm;
  struct vg_err err;
  if (vg_region_create_slot(&shm, dir, &err) != 0) fail_msg("%s", err.msg);
  vg_shm_close(&shm);
  if (vg_region_open_slot(&shm, dir, false, &err) != 0) fail_msg("%s", err.msg);
  assert_int_equal(vg_region_guard(&shm), 0);
  assert_false(vg_region_guard_lost(&shm));
  snprintf(path, sizeof(path), "%s/%s", dir, VG_REGION_FILE);
  assert_int_equal(truncate(path, 0), 0);
  /* Locks (the mutex's page faults), writes a limit, unlocks. */
  assert_int_equal(vg_region_set_sm_limit(&shm, 0, 40, &err), 0);
  assert_true(vg_region_guard_lost(&shm));
  assert_true(vg_region_guard_close(&shm));
  /* The guard is free again, and an intact region is not reported lost. */
  if (vg_region_create_slot(&shm, dir, &err) != 0) fail_msg("%s", err.msg);
  assert_int_equal(vg_region_guard(&shm), 0);
  assert_int_equal(vg_region_set_sm_limit(&shm, 0, 40, &err), 0);
  assert_false(vg_region_guard_close(&shm));
}

/* No kubelet socket: a clear error naming it. */
static void test_kubelet_down(void **state) {
  (void)state;
  char missing[400];
  snprintf(missing, sizeof(missing), "%s/no-such.sock", tmpdir);
  struct vg_binder *b = new_binder(k8s, missing);
  struct vg_err err = {""};
  assert_int_equal(vg_binder_run_once(b, &err), -1);
  assert_non_null(strstr(err.msg, "no-such.sock"));
  assert_non_null(strstr(err.msg, "PodResources"));
  struct vg_binder_stats st;
  vg_binder_get_stats(b, &st);
  assert_int_equal(st.list_errors, 1);
  assert_non_null(strstr(st.last_error, "retrying"));
  vg_binder_stop(b);
}

/* API server down: a clear error, the region stays pending; then an API
 * server that fails a few requests: the binder's thread retries and binds. */
static void test_apiserver_down_then_retries(void **state) {
  (void)state;
  const char *ids[] = {"GPU-ffff::0"};
  add_pod("retry", "{\"nvidia.com/vgpu\":\"1\",\"nvidia.com/gpumem\":\"1024\"}");
  make_pending(ids, 1);
  assign("retry", "nvidia.com/vgpu", ids, 1);

  /* A port nothing listens on (the fake's port is taken by the fake). */
  struct vg_k8s_client *dead = client_for(1);
  struct vg_binder *b = new_binder(dead, pr_socket);
  struct vg_err err;
  assert_int_equal(vg_binder_run_once(b, &err), 0);
  struct vg_binder_stats st;
  vg_binder_get_stats(b, &st);
  assert_int_equal(st.api_errors, 1);
  assert_non_null(strstr(st.last_error, "default/retry"));
  assert_non_null(strstr(st.last_error, "unreachable"));
  struct seen s;
  read_region(ids, 1, &s);
  assert_true(s.pending);
  vg_binder_stop(b);
  vg_k8s_client_free(dead);

  admin("POST", "/_test/fail?n=3", NULL);
  b = new_binder(k8s, pr_socket);
  double t0 = now_s();
  assert_int_equal(vg_binder_start(b, &err), 0);
  vg_binder_wake(b);
  do {
    usleep(20000);
    read_region(ids, 1, &s);
  } while (s.pending && now_s() - t0 < 15);
  assert_false(s.pending);
  assert_int_equal(s.mem[0], 1024 * MIB);
  vg_binder_get_stats(b, &st);
  assert_true(st.api_errors >= 3);
  print_message("bound after %llu API errors in %.2f s\n", (unsigned long long)st.api_errors,
                now_s() - t0);
  vg_binder_stop(b);
}

/* 50 pods land at once: their regions were all pre-created pending (Allocate
 * in any order), their assignments show up in the kubelet in random order,
 * several at a time, with a wake after each batch. Every container's region
 * ends up with exactly its own pod's limits. */
#define NPODS 50
struct podspec {
  char name[32];
  bool cce;
  char idbuf[8][40];
  const char *ids[8];
  size_t n;
  uint64_t mem; /* expected bytes per GPU */
  unsigned sm;
};

static void test_concurrent_50_pods(void **state) {
  (void)state;
  static struct podspec p[NPODS];
  srand(4242);
  for (int i = 0; i < NPODS; i++) {
    struct podspec *q = &p[i];
    memset(q, 0, sizeof(*q));
    snprintf(q->name, sizeof(q->name), "burst-%02d", i);
    q->cce = i % 3 == 2;
    char limits[512];
    if (q->cce) {
      q->n = 1 + (size_t)(i % 7);
      for (size_t k = 0; k < q->n; k++)
        snprintf(q->idbuf[k], sizeof(q->idbuf[k]), "GPU-%04d::%d", i % 4, 100 + i * 8 + (int)k);
      q->mem = q->n * 128 * MIB;
      q->sm = (unsigned)(5 * (i % 20));
      snprintf(limits, sizeof(limits),
               "{\"volcano.sh/gpu-mem.128Mi\":\"%zu\",\"volcano.sh/gpu-core.percentage\":\"%u\"}",
               q->n, q->sm);
    } else {
      q->n = i % 4 == 0 ? 2 : 1; /* some pods take two GPUs */
      for (size_t k = 0; k < q->n; k++)
        snprintf(q->idbuf[k], sizeof(q->idbuf[k]), "GPU-%04d::%d", (i + (int)k) % 4, i);
      q->mem = (1000 + (uint64_t)i * 10) * MIB;
      q->sm = (unsigned)(1 + i);
      snprintf(limits, sizeof(limits),
               "{\"nvidia.com/vgpu\":\"%zu\",\"nvidia.com/gpumem\":\"%llu\","
               "\"nvidia.com/gpucores\":\"%u\"}",
               q->n, (unsigned long long)(1000 + i * 10), q->sm);
    }
    for (size_t k = 0; k < q->n; k++) q->ids[k] = q->idbuf[k];
    add_pod(q->name, limits);
  }
  int order[NPODS];
  for (int i = 0; i < NPODS; i++) order[i] = i;
  for (int i = NPODS - 1; i > 0; i--) {
    int j = rand() % (i + 1), t = order[i];
    order[i] = order[j];
    order[j] = t;
  }
  /* Allocate in one random order ... */
  for (int i = 0; i < NPODS; i++) make_pending(p[order[i]].ids, p[order[i]].n);
  for (int i = NPODS - 1; i > 0; i--) {
    int j = rand() % (i + 1), t = order[i];
    order[i] = order[j];
    order[j] = t;
  }
  struct vg_binder *b = new_binder(k8s, pr_socket);
  struct vg_err err;
  assert_int_equal(vg_binder_start(b, &err), 0);
  double t0 = now_s();
  /* ... and the kubelet records them in another, several at once. */
  for (int i = 0; i < NPODS;) {
    int batch = 1 + rand() % 5;
    for (int k = 0; k < batch && i < NPODS; k++, i++) {
      struct podspec *q = &p[order[i]];
      assign(q->name, q->cce ? "volcano.sh/gpu-mem.128Mi" : "nvidia.com/vgpu", q->ids, q->n);
    }
    vg_binder_wake(b);
    usleep((useconds_t)(rand() % 20000));
  }
  int left;
  struct seen s;
  do {
    left = 0;
    for (int i = 0; i < NPODS; i++) {
      read_region(p[i].ids, p[i].n, &s);
      left += s.pending;
    }
    if (left > 0) usleep(20000);
  } while (left > 0 && now_s() - t0 < 20);
  double took = now_s() - t0;
  assert_int_equal(left, 0);
  for (int i = 0; i < NPODS; i++) {
    struct podspec *q = &p[i];
    read_region(q->ids, q->n, &s);
    size_t gpus = q->cce ? 1 : q->n;
    if (s.ndev != gpus) fail_msg("%s: %u GPUs in its region, want %zu", q->name, s.ndev, gpus);
    for (unsigned d = 0; d < s.ndev; d++) {
      if (s.mem[d] != q->mem || s.sm[d] != q->sm)
        fail_msg("%s: %s has %llu bytes / %u %%, want %llu / %u", q->name, s.uuid[d],
                 (unsigned long long)s.mem[d], s.sm[d], (unsigned long long)q->mem, q->sm);
      bool named = false;
      for (size_t k = 0; k < q->n; k++)
        named |= strncmp(q->ids[k], s.uuid[d], strlen(s.uuid[d])) == 0;
      assert_true(named);
    }
  }
  struct vg_binder_stats st;
  vg_binder_get_stats(b, &st);
  assert_int_equal(st.bound, NPODS);
  print_message("%d pods bound in %.3f s over %llu passes\n", NPODS, took,
                (unsigned long long)st.passes);
  vg_binder_stop(b);
}

/* ---- live resize, the node's half (resizer.c) ---- */

static void patch_meta(const char *pod, const char *label, const char *const *kv) {
  json_object *ann = json_object_new_object(), *labels = json_object_new_object();
  for (; kv && kv[0]; kv += 2)
    json_object_object_add(ann, kv[0], kv[1] ? json_object_new_string(kv[1]) : NULL);
  json_object_object_add(labels, VG_RESIZE_LABEL, label ? json_object_new_string(label) : NULL);
  struct vg_err err = {""};
  if (vg_k8s_patch_pod_metadata(k8s, "default", pod, labels, ann, NULL, NULL, &err) != 0)
    fail_msg("patch %s: %s", pod, err.msg);
  json_object_put(ann);
  json_object_put(labels);
}

static char *assigned_text(const char *uuid, long long mem, int cores) {
  char *s = NULL;
  if (asprintf(&s,
               "{\"version\":1,\"node\":\"node1\",\"containers\":[{\"name\":\"c\",\"resource\":"
               "\"nvidia.com/vgpu\",\"gpus\":[{\"uuid\":\"%s\",\"index\":0,\"memory\":%lld,"
               "\"cores\":%d}]}]}",
               uuid, mem, cores) < 0)
    fail_msg("out of memory");
  return s;
}

/* A user's request (the label opens it). */
static void request(const char *pod, const char *container, const char *id, long long mem,
                    int cores) {
  struct vg_resize_request q = {.memory = mem, .cores = cores};
  snprintf(q.id, sizeof(q.id), "%s", id);
  snprintf(q.container, sizeof(q.container), "%s", container);
  char *text = vg_resize_request_format(&q);
  const char *kv[] = {VG_RESIZE_REQUEST_ANNOTATION, text, NULL};
  patch_meta(pod, VG_RESIZE_LABEL_OPEN, kv);
  free(text);
}

/* vgpu-scheduler's answer: Accepted with the new assignment, or Refused. */
static void scheduler_says(const char *pod, const char *id, enum vg_resize_phase phase,
                           const char *assigned) {
  struct vg_resize_status st = {.phase = phase};
  snprintf(st.id, sizeof(st.id), "%s", id);
  char *text = vg_resize_status_format(&st);
  const char *kv[] = {VG_RESIZE_STATUS_ANNOTATION, text, assigned ? VG_ASSIGNED_ANNOTATION : NULL,
                      assigned, NULL};
  patch_meta(pod, VG_RESIZE_LABEL_OPEN, kv);
  free(text);
}

static struct vg_resize_view view_of(const char *pod) {
  json_object *p = NULL;
  struct vg_err err = {""};
  if (vg_k8s_get_pod(k8s, "default", pod, &p, &err) != 0) fail_msg("%s", err.msg);
  struct vg_resize_view v;
  vg_resize_view_of(p, &v, NULL);
  json_object_put(p);
  return v;
}

/* Events reason from the node agent whose message contains part. */
static int events(const char *reason, const char *part) {
  json_object *list = NULL;
  struct vg_err err = {""};
  if (vg_k8s_call(k8s, "GET", "/_test/events", NULL, NULL, &list, &err) != 0)
    fail_msg("%s", err.msg);
  json_object *items = vg_json_get(list, "items");
  int n = 0;
  for (size_t i = 0; i < json_object_array_length(items); i++) {
    json_object *ev = json_object_array_get_idx(items, i);
    const char *msg = vg_json_get_str(ev, "message");
    n += strcmp(vg_json_get_str(ev, "reason"), reason) == 0 && msg && strstr(msg, part) &&
         strcmp(vg_json_get_str(vg_json_get(ev, "source"), "component"), "vgpu-device-plugin") == 0;
  }
  json_object_put(list);
  return n;
}

static void expect_limits(const char *const *ids, uint64_t mem, unsigned sm) {
  struct seen s;
  read_region(ids, 1, &s);
  assert_int_equal(s.mem[0], mem);
  assert_int_equal(s.sm[0], sm);
  grant_matches_region(&s);
}

/* A child process that charges bytes to the region at path and waits. */
static pid_t hold_memory(const char *path, uint64_t bytes) {
  int fds[2];
  assert_int_equal(pipe(fds), 0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    struct vg_shm shm;
    struct vg_err err;
    char ok = 0;
    if (vg_region_open(&shm, path, &err) == 0) {
      int slot = vg_region_join(&shm, getpid());
      ok = slot >= 0 && vg_region_reserve(&shm, slot, 0, bytes);
    }
    if (write(fds[1], &ok, 1) != 1) _exit(1);
    for (;;) pause();
  }
  close(fds[1]);
  char ok = 0;
  assert_int_equal(read(fds[0], &ok, 1), 1);
  close(fds[0]);
  assert_true(ok);
  return pid;
}

static void test_resize_node_side(void **state) {
  (void)state;
  const char *ids[] = {"GPU-rrrr::0"};
  add_pod("rs", "{\"nvidia.com/vgpu\":\"1\",\"nvidia.com/gpumem\":\"2000\"}");
  char *a2000 = assigned_text("GPU-rrrr", 2000 * MIB, 30);
  const char *kv[] = {VG_ASSIGNED_ANNOTATION, a2000, NULL};
  patch_meta("rs", NULL, kv);
  make_pending(ids, 1);
  assign("rs", "nvidia.com/vgpu", ids, 1);
  struct vg_binder *b = new_binder(k8s, pr_socket);
  vg_binder_set_node(b, "node1");
  struct vg_err err;
  assert_int_equal(vg_binder_run_once(b, &err), 1);
  expect_limits(ids, 2000 * MIB, 30);

  /* The container holds 1500 MiB: a live process of its (a child: the
   * node agent reaps the charges of processes gone, and tells them by a
   * lock its own process would not see as held). */
  char path[600];
  region_path(ids, 1, path, sizeof(path));
  pid_t holder = hold_memory(path, 1500 * MIB);

  /* Below what it holds: refused by the node, nothing changed, ended. The
   * answer goes through pods/status (the agent's role has no patch of Pods;
   * docs/install.md, "Privileges"); only the test's own writes hit the Pod. */
  long user = vg_fake_requests(k8s, "PATCH /api/v1/namespaces/default/pods/rs", &err);
  request("rs", "c", "s1", 1000 * MIB, -1);
  vg_binder_run_once(b, &err);
  assert_int_equal(vg_fake_requests(k8s, "PATCH /api/v1/namespaces/default/pods/rs/status", &err),
                   1);
  assert_int_equal(vg_fake_requests(k8s, "PATCH /api/v1/namespaces/default/pods/rs", &err) - user,
                   2);
  struct vg_resize_view v = view_of("rs");
  assert_true(v.has_status && strcmp(v.status.id, "s1") == 0);
  assert_int_equal(v.status.phase, VG_RESIZE_REFUSED);
  assert_non_null(strstr(v.status.reason, "in use"));
  assert_false(v.open);
  assert_int_equal(events("ResizeRefused", "s1"), 1);
  expect_limits(ids, 2000 * MIB, 30);

  /* A decrease that fits is in force before it is acknowledged. */
  request("rs", "c", "s2", 1800 * MIB, 20);
  vg_binder_run_once(b, &err);
  v = view_of("rs");
  assert_true(v.has_node && strcmp(v.node_id, "s2") == 0 && v.open);
  expect_limits(ids, 1800 * MIB, 20);
  vg_binder_run_once(b, &err); /* acknowledged: the scheduler's turn, nothing moves */
  assert_true(view_of("rs").open);

  /* Accepted: applied from vgpu.io/assigned, Applied, ended, told. */
  char *a1800 = assigned_text("GPU-rrrr", 1800 * MIB, 20);
  scheduler_says("rs", "s2", VG_RESIZE_ACCEPTED, a1800);
  vg_binder_run_once(b, &err);
  v = view_of("rs");
  assert_int_equal(v.status.phase, VG_RESIZE_APPLIED);
  assert_false(v.open);
  assert_int_equal(events("Resized", "s2"), 1);
  expect_limits(ids, 1800 * MIB, 20);

  /* A growth waits for the scheduler (no change on the acknowledgement);
   * Accepted raises region and grant. */
  request("rs", "c", "g1", 4000 * MIB, -1);
  vg_binder_run_once(b, &err);
  expect_limits(ids, 1800 * MIB, 20);
  char *a4000 = assigned_text("GPU-rrrr", 4000 * MIB, 20);
  scheduler_says("rs", "g1", VG_RESIZE_ACCEPTED, a4000);
  vg_binder_run_once(b, &err);
  assert_int_equal(view_of("rs").status.phase, VG_RESIZE_APPLIED);
  expect_limits(ids, 4000 * MIB, 20);

  /* A decrease the scheduler refuses is undone from vgpu.io/assigned. */
  request("rs", "c", "s3", 1600 * MIB, -1);
  vg_binder_run_once(b, &err);
  expect_limits(ids, 1600 * MIB, 20);
  scheduler_says("rs", "s3", VG_RESIZE_REFUSED, NULL);
  vg_binder_run_once(b, &err);
  assert_false(view_of("rs").open);
  expect_limits(ids, 4000 * MIB, 20);

  /* A container with no GPU here, and a malformed request: refused. */
  request("rs", "side", "x1", 1000 * MIB, -1);
  vg_binder_run_once(b, &err);
  v = view_of("rs");
  assert_int_equal(v.status.phase, VG_RESIZE_REFUSED);
  assert_non_null(strstr(v.status.reason, "container side holds no GPU"));
  const char *bad[] = {VG_RESIZE_REQUEST_ANNOTATION,
                       "{\"id\":\"b1\",\"container\":\"c\",\"cores\":101}", NULL};
  patch_meta("rs", VG_RESIZE_LABEL_OPEN, bad);
  vg_binder_run_once(b, &err);
  v = view_of("rs");
  assert_false(v.open);
  assert_non_null(strstr(v.status.reason, "\"cores\" is 101"));
  expect_limits(ids, 4000 * MIB, 20);

  kill(holder, SIGKILL);
  waitpid(holder, NULL, 0);
  free(a2000);
  free(a1800);
  free(a4000);
  vg_binder_stop(b);
}

/* vgpu-scheduler's MAC for pod's assignment text on node1, under key. */
static char *mac_for(struct vg_assign_key *key, const char *pod, const char *assigned) {
  json_object *o = NULL;
  struct vg_err err = {""};
  char path[200];
  snprintf(path, sizeof(path), "/api/v1/namespaces/default/pods/%s", pod);
  if (vg_k8s_call(k8s, "GET", path, NULL, NULL, &o, &err) != 0) fail_msg("%s", err.msg);
  struct vg_assign_subject subj = {vg_json_get_str(vg_json_get(o, "metadata"), "uid"), "default",
                                   pod, "node1", assigned};
  static char mac[VG_ASSIGN_MAC_TEXT_MAX];
  if (vg_assign_sign(key, &subj, mac, &err) != 0) fail_msg("%s", err.msg);
  json_object_put(o);
  return mac;
}

/* With an assignment key, the binder grants only what vgpu-scheduler
 * signed for that very pod: an unsigned assignment, and one carrying the
 * MAC of another pod (same assignment text, another UID), stay pending. */
static void test_unsigned_assignment_stays_pending(void **state) {
  (void)state;
  char keyfile[600];
  snprintf(keyfile, sizeof(keyfile), "%s/assignment.key", tmpdir);
  FILE *f = fopen(keyfile, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite("0123456789abcdef0123456789abcdef", 1, 32, f), 32);
  assert_int_equal(fclose(f), 0);
  struct vg_err err = {""};
  struct vg_assign_key *key = vg_assign_key_open(keyfile, &err);
  assert_non_null(key);
  const char *ids[3][1] = {{"GPU-mmmm::0"}, {"GPU-mmmm::1"}, {"GPU-mmmm::2"}};
  const char *pods[3] = {"mac-signed", "mac-unsigned", "mac-copied"};
  char *text = assigned_text("GPU-mmmm", 1500 * MIB, 40);
  for (int i = 0; i < 3; i++) {
    add_pod(pods[i], "{\"nvidia.com/vgpu\":\"1\",\"nvidia.com/gpumem\":\"6000\"}");
    make_pending(ids[i], 1);
    assign(pods[i], "nvidia.com/vgpu", ids[i], 1);
  }
  const char *signed_kv[] = {VG_ASSIGNED_ANNOTATION, text, VG_ASSIGNED_MAC_ANNOTATION,
                             mac_for(key, "mac-signed", text), NULL};
  patch_meta("mac-signed", NULL, signed_kv);
  const char *unsigned_kv[] = {VG_ASSIGNED_ANNOTATION, text, NULL};
  patch_meta("mac-unsigned", NULL, unsigned_kv);
  patch_meta("mac-copied", NULL, signed_kv); /* the signed pod's MAC, copied */

  struct vg_binder *b = new_binder(k8s, pr_socket);
  vg_binder_set_node(b, "node1");
  vg_binder_set_assignment_key(b, key);
  assert_int_equal(vg_binder_run_once(b, &err), 1);
  expect_limits(ids[0], 1500 * MIB, 40); /* the assignment's, not the pod's own 6000 MiB */
  struct seen s;
  for (int i = 1; i < 3; i++) {
    read_region(ids[i], 1, &s);
    assert_true(s.pending);
    assert_int_equal(s.grant_rc, 1);
  }
  struct vg_binder_stats st;
  vg_binder_get_stats(b, &st);
  assert_int_equal(st.unbindable, 2);
  vg_binder_stop(b);
  vg_assign_key_free(key);
  free(text);
  for (int i = 0; i < 3; i++) kubelet("unassign default %s", pods[i]);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_slot_hash),
      cmocka_unit_test(test_vgpu_limits),
      cmocka_unit_test(test_vgpu_canonical_quantities),
      cmocka_unit_test(test_vgpu_percentage_and_defaults),
      cmocka_unit_test(test_cce_limits),
      cmocka_unit_test(test_unbindable_stays_pending),
      cmocka_unit_test(test_hostile_regions_hurt_only_themselves),
      cmocka_unit_test(test_truncated_under_the_agent),
      cmocka_unit_test(test_flock_holder_reported),
      cmocka_unit_test(test_kubelet_down),
      cmocka_unit_test(test_apiserver_down_then_retries),
      cmocka_unit_test(test_concurrent_50_pods),
      cmocka_unit_test(test_resize_node_side),
      cmocka_unit_test(test_unsigned_assignment_stays_pending),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
