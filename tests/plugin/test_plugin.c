/*
 * test_plugin.c -- vgpu-device-plugin against a fake kubelet.
 *
 * The fake kubelet (fake_kubelet.py, python3-grpcio) is an independent
 * implementation of the kubelet side of the device plugin API v1beta1: it
 * checks the version and resource name, calls GetDevicePluginOptions back
 * inside Register, runs ListAndWatch, allocates as at pod admission and
 * restarts by wiping the sockets. The plugin runs on the simulated GPU with
 * two devices of 8 GiB: first without --config (the vgpu dialect, here with
 * --resource nvidia.com/gpu --slots 4), then with every example of
 * examples/config/, checking the resources registered, the device IDs and
 * what Allocate returns and leaves in the region file per dialect.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
// clang-format off
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include <json-c/json.h>

#include "k8s.h"
#include "plugin_fixture.h"
#include "region.h"

#define SLOTS 4
#define SOCK_NAME "vgpu-nvidia.com_gpu.sock"

static void start_plugin(struct setup *s, const char *extra1, const char *extra2) {
  char *argv[] = {(char *)vg_build_path("bin/vgpu-device-plugin"),
                  "--plugin-dir",
                  s->plugin_dir,
                  "--state-dir",
                  s->state_dir,
                  "--library",
                  "/opt/vgpu/libvgpu.so",
                  "--slots",
                  "4",
                  "--resource",
                  "nvidia.com/gpu",
                  (char *)extra1,
                  (char *)extra2,
                  NULL};
  s->plugin = vg_spawn(&s->env, argv);
  assert_true(s->plugin > 0);
}

/* UUID of the GPU whose IDs sort at position which (0 or 1) in a devices answer. */
static void uuid_from(const char *json, int which, char *uuid, size_t len) {
  const char *p = json;
  for (int i = 0; i <= which * SLOTS; i++) {
    p = strstr(p, "\"GPU-");
    assert_non_null(p);
    p++;
  }
  const char *end = strstr(p, "::");
  assert_non_null(end);
  snprintf(uuid, len, "%.*s", (int)(end - p), p);
}

static int count(const char *hay, const char *needle) {
  int n = 0;
  for (const char *p = strstr(hay, needle); p != NULL; p = strstr(p + 1, needle)) n++;
  return n;
}

static int dir_entries(const char *path) {
  DIR *d = opendir(path);
  if (d == NULL) return -1;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL)
    if (e->d_name[0] != '.') n++;
  closedir(d);
  return n;
}

static void test_register_list_allocate(void **state) {
  struct setup *s = *state;
  start_fake(s, false);
  start_plugin(s, NULL, NULL);
  const char *r = fake(s, "registrations 1 5");
  assert_non_null(strstr(r, "\"ok\": true"));
  assert_non_null(strstr(r, "\"resource_name\": \"nvidia.com/gpu\""));
  assert_non_null(strstr(r, "\"endpoint\": \"" SOCK_NAME "\""));
  assert_non_null(strstr(r, "\"version\": \"v1beta1\""));
  /* the call-back inside Register was answered */
  assert_non_null(strstr(r, "\"options_callback\": {\"get_preferred_allocation_available\": true"));

  r = fake(s, "devices 1 5");
  assert_non_null(strstr(r, "\"ok\": true"));
  assert_int_equal(count(r, "::"), 2 * SLOTS);
  assert_int_equal(count(r, "\"Healthy\""), 2 * SLOTS);
  assert_non_null(strstr(r, "\"healthy\": 8"));
  char u0[128], u1[128];
  uuid_from(r, 0, u0, sizeof(u0));
  uuid_from(r, 1, u1, sizeof(u1));
  assert_string_not_equal(u0, u1);

  /* two slots of one GPU: a vgpu count is a number of different GPUs */
  r = fake(s, "allocate %s::1,%s::0", u0, u0);
  assert_non_null(strstr(r, "\"ok\": false"));
  assert_non_null(strstr(r, "must be a different GPU"));
  /* one slot */
  r = fake(s, "allocate %s::1", u0);
  assert_non_null(strstr(r, "\"ok\": true"));
  char want[512];
  snprintf(want, sizeof(want), "\"NVIDIA_VISIBLE_DEVICES\": \"%s\"", u0);
  assert_non_null(strstr(r, want));
  assert_non_null(
      strstr(r, "\"CUDA_DEVICE_MEMORY_SHARED_CACHE\": \"/usr/local/vgpu/region.cache\""));
  snprintf(want, sizeof(want),
           "{\"container_path\": \"/usr/local/vgpu\", \"host_path\": \"%s/slots/", s->state_dir);
  assert_non_null(strstr(r, want));
  assert_non_null(strstr(r,
                         "{\"container_path\": \"/usr/local/vgpu/libvgpu.so\", \"host_path\": "
                         "\"/opt/vgpu/libvgpu.so\", \"read_only\": true}"));
  snprintf(want, sizeof(want),
           "{\"container_path\": \"/etc/ld.so.preload\", \"host_path\": \"%s/ld.so.preload\", "
           "\"read_only\": true}",
           s->state_dir);
  assert_non_null(strstr(r, want));
  /* no CLI beside /opt/vgpu/libvgpu.so here: no mount that would fail the container */
  assert_null(strstr(r, "/usr/local/vgpu/bin/vgpu"));
  char slots[500];
  snprintf(slots, sizeof(slots), "%s/slots", s->state_dir);
  assert_int_equal(dir_entries(slots), 1);

  /* one slot on each GPU; the preference for two IDs spreads them over both GPUs */
  r = fake(s, "allocate %s::2,%s::3", u1, u0);
  assert_non_null(strstr(r, "\"ok\": true"));
  assert_non_null(strstr(r, "\"preferred\": [\"GPU-"));
  snprintf(want, sizeof(want), "\"NVIDIA_VISIBLE_DEVICES\": \"%s,%s\"", u0, u1);
  assert_non_null(strstr(r, want));
  assert_int_equal(dir_entries(slots), 2);
  /* the same IDs in another order name the same slot directory */
  r = fake(s, "allocate %s::3,%s::2", u0, u1);
  assert_non_null(strstr(r, "\"ok\": true"));
  assert_int_equal(dir_entries(slots), 2);

  /* unknown IDs: a clear error naming the ID */
  r = fake(s, "allocate %s::0,GPU-nonexistent::0", u0);
  assert_non_null(strstr(r, "\"ok\": false"));
  assert_non_null(strstr(r, "\"code\": \"INVALID_ARGUMENT\""));
  assert_non_null(strstr(r, "unknown device ID \\\"GPU-nonexistent::0\\\""));
  r = fake(s, "allocate %s::%d", u0, SLOTS);
  assert_non_null(strstr(r, "INVALID_ARGUMENT"));
  assert_int_equal(dir_entries(slots), 2);
}

static void write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

/* In a child: the calling process's uid as root of a new user and mount
 * namespace. False where unprivileged user namespaces are off. */
static bool own_namespace(void) {
  uid_t uid = getuid();
  gid_t gid = getgid();
  if (unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) return false;
  char map[64];
  snprintf(map, sizeof(map), "0 %u 1", (unsigned)uid);
  FILE *f = fopen("/proc/self/uid_map", "w");
  if (f == NULL || fputs(map, f) < 0 || fclose(f) != 0) return false;
  f = fopen("/proc/self/setgroups", "w"); /* gid_map needs it on kernels since 3.19 */
  if (f != NULL) fputs("deny", f), fclose(f);
  snprintf(map, sizeof(map), "0 %u 1", (unsigned)gid);
  f = fopen("/proc/self/gid_map", "w");
  if (f == NULL || fputs(map, f) < 0 || fclose(f) != 0) return false;
  return mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0;
}

/* A bind mount as runc makes it: bind, then for a read-only one a remount
 * that keeps the flags the kernel locks in a user namespace. Unlike runc,
 * a missing destination is an error: under the read-only slot runc could
 * not create it either. */
static int bind_like_runc(const char *src, const char *dst, bool ro) {
  struct stat st;
  if (lstat(dst, &st) != 0) return fprintf(stderr, "no mount point %s\n", dst), -1;
  if (mount(src, dst, NULL, MS_BIND | MS_REC, NULL) != 0)
    return fprintf(stderr, "bind %s on %s: %s\n", src, dst, strerror(errno)), -1;
  if (!ro) return 0;
  struct statvfs sv;
  if (statvfs(dst, &sv) != 0) return -1;
  unsigned long keep = 0;
  static const unsigned long map[][2] = {
      {ST_NOSUID, MS_NOSUID},   {ST_NODEV, MS_NODEV},           {ST_NOEXEC, MS_NOEXEC},
      {ST_NOATIME, MS_NOATIME}, {ST_NODIRATIME, MS_NODIRATIME}, {ST_RELATIME, MS_RELATIME}};
  for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
    if (sv.f_flag & map[i][0]) keep |= map[i][1];
  if (mount(NULL, dst, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | keep, NULL) != 0)
    return fprintf(stderr, "remount %s read-only: %s\n", dst, strerror(errno)), -1;
  return 0;
}

static bool fails_with(int rc, int want, const char *what) {
  if (rc != -1 || (errno != want && !(want == EROFS && errno == EBUSY))) {
    fprintf(stderr, "%s: %s (wanted %s)\n", what, rc >= 0 ? "succeeded" : strerror(errno),
            strerror(want));
    return false;
  }
  return true;
}

/* In the child: the answer's mounts under /usr/local/vgpu applied in its
 * order below root (a host path the test does not have is skipped), then
 * what a tenant and libvgpu do there. Exit 0 all as wanted, 77 no user
 * namespace, 1 otherwise (stderr says why). */
static int container_child(const char *answer, const char *root) {
  if (!own_namespace()) return 77;
  json_object *doc = json_tokener_parse(answer), *mounts;
  if (!json_object_object_get_ex(doc, "mounts", &mounts)) return 1;
  char dst[1200], path[1300];
  for (size_t i = 0; i < json_object_array_length(mounts); i++) {
    json_object *m = json_object_array_get_idx(mounts, i), *hp, *cp, *ro;
    json_object_object_get_ex(m, "host_path", &hp);
    json_object_object_get_ex(m, "container_path", &cp);
    json_object_object_get_ex(m, "read_only", &ro);
    const char *to = json_object_get_string(cp);
    if (strncmp(to, "/usr/local/vgpu", 15) != 0 || access(json_object_get_string(hp), F_OK) != 0)
      continue;
    snprintf(dst, sizeof(dst), "%s%s", root, to);
    if (bind_like_runc(json_object_get_string(hp), dst, json_object_get_boolean(ro)) != 0) return 1;
  }
  /* libvgpu's open (O_RDWR | O_CREAT of an existing file, flock, map) */
  snprintf(path, sizeof(path), "%s/usr/local/vgpu/region.cache", root);
  struct vg_shm shm;
  struct vg_err err;
  if (vg_region_open(&shm, path, &err) != 0) return fprintf(stderr, "%s\n", err.msg), 1;
  vg_shm_close(&shm);
  bool ok = true;
  snprintf(path, sizeof(path), "%s/usr/local/vgpu/junk", root);
  ok &= fails_with(open(path, O_WRONLY | O_CREAT, 0644), EROFS, "create in the slot");
  ok &= fails_with(mkdir(path, 0755), EROFS, "mkdir in the slot");
  snprintf(path, sizeof(path), "%s/usr/local/vgpu/region.cache", root);
  ok &= fails_with(unlink(path), EROFS, "remove the region");
  snprintf(dst, sizeof(dst), "%s/usr/local/vgpu/r2", root);
  ok &= fails_with(rename(path, dst), EROFS, "rename the region");
  snprintf(path, sizeof(path), "%s/usr/local/vgpu/libvgpu.so", root);
  ok &= fails_with(open(path, O_WRONLY), EROFS, "write libvgpu.so");
  snprintf(path, sizeof(path), "%s/usr/local/vgpu/grant/x", root);
  ok &= fails_with(open(path, O_WRONLY | O_CREAT, 0644), EROFS, "create in the grant");
  return ok ? 0 : 1;
}

/* The answer's slot mounts as a runtime makes them, in a user and mount
 * namespace of the test's own: they apply without creating a mount point,
 * libvgpu opens the region read-write, and nothing else under
 * /usr/local/vgpu can be created, removed, renamed or written. Skipped
 * (with a message) where unprivileged user namespaces are off. */
static void check_in_container(struct setup *s, const char *answer) {
  char root[600], dir[700];
  snprintf(root, sizeof(root), "%s/ctr", s->env.dir);
  snprintf(dir, sizeof(dir), "%s/usr/local/vgpu", root);
  for (char *p = dir + strlen(s->env.dir) + 1; (p = strchr(p + 1, '/')) != NULL;) {
    *p = '\0';
    assert_true(mkdir(dir, 0755) == 0 || errno == EEXIST);
    *p = '/';
  }
  assert_true(mkdir(dir, 0755) == 0 || errno == EEXIST); /* the image's own directory */
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) _exit(container_child(answer, root));
  int st;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  assert_true(WIFEXITED(st));
  if (WEXITSTATUS(st) == 77) {
    fprintf(stderr, "no unprivileged user namespace here: the mounts were not applied\n");
    return;
  }
  assert_int_equal(WEXITSTATUS(st), 0);
}

/* A slot from before the read-only mount, written by its tenant: links,
 * a FIFO and a directory where mount points go, junk beside them. The next
 * Allocate of the same IDs removes it all, follows no link, and leaves
 * exactly the slot's own entries, each of its kind (region_from checks the
 * mounts and their mount points). */
static void test_slot_planted(void **state) {
  struct setup *s = *state;
  start_fake(s, false);
  start_plugin(s, NULL, NULL);
  assert_non_null(strstr(fake(s, "registrations 1 5"), "\"ok\": true"));
  const char *r = fake(s, "devices 1 5");
  char u0[128];
  uuid_from(r, 0, u0, sizeof(u0));
  r = fake(s, "allocate %s::1", u0);
  assert_non_null(strstr(r, "\"ok\": true"));
  struct region_view v;
  region_from(r, &v);
  static const char key[] = "{\"container_path\": \"/usr/local/vgpu\", \"host_path\": \"";
  const char *m = strstr(r, key) + strlen(key);
  char slot[600], path[700], victim[600], outside[600], kept[700];
  snprintf(slot, sizeof(slot), "%.*s", (int)(strchr(m, '"') - m), m);
  assert_int_equal(dir_entries(slot), 4); /* region.cache, grant, libvgpu.so, bin */

  snprintf(victim, sizeof(victim), "%s/victim", s->env.dir);
  write_file(victim, "a node file\n");
  snprintf(outside, sizeof(outside), "%s/outside", s->env.dir);
  assert_int_equal(mkdir(outside, 0755), 0);
  snprintf(kept, sizeof(kept), "%s/keep", outside);
  write_file(kept, "kept\n");
  snprintf(path, sizeof(path), "%s/libvgpu.so", slot);
  assert_int_equal(unlink(path), 0);
  assert_int_equal(symlink(victim, path), 0);
  snprintf(path, sizeof(path), "%s/grant", slot);
  assert_int_equal(rmdir(path), 0); /* pending: no grant file yet */
  assert_int_equal(mkfifo(path, 0644), 0);
  snprintf(path, sizeof(path), "%s/bin", slot);
  assert_int_equal(rmdir(path), 0);
  assert_int_equal(symlink(outside, path), 0);
  snprintf(path, sizeof(path), "%s/region.cache", slot);
  assert_int_equal(unlink(path), 0);
  assert_int_equal(mkdir(path, 0755), 0);
  snprintf(path, sizeof(path), "%s/region.cache/x", slot);
  write_file(path, "x");
  snprintf(path, sizeof(path), "%s/junk", slot);
  write_file(path, "for the next tenant\n");
  /* a region's temporary name, but old: not an Allocate's at work */
  snprintf(path, sizeof(path), "%s/.region.cache.new.1.1", slot);
  write_file(path, "stale");
  struct timespec old[2] = {{.tv_sec = 1000000}, {.tv_sec = 1000000}};
  assert_int_equal(utimensat(AT_FDCWD, path, old, AT_SYMLINK_NOFOLLOW), 0);
  snprintf(path, sizeof(path), "%s/jdir", slot);
  assert_int_equal(mkdir(path, 0755), 0);
  snprintf(path, sizeof(path), "%s/jdir/link", slot);
  assert_int_equal(symlink(outside, path), 0);

  r = fake(s, "allocate %s::1", u0);
  assert_non_null(strstr(r, "\"ok\": true"));
  region_from(r, &v);
  assert_true(v.pending);
  assert_int_equal(dir_entries(slot), 4);
  struct stat st;
  snprintf(path, sizeof(path), "%s/libvgpu.so", slot);
  assert_int_equal(lstat(path, &st), 0);
  assert_true(S_ISREG(st.st_mode) && st.st_size == 0 && st.st_nlink == 1);
  snprintf(path, sizeof(path), "%s/bin", slot);
  assert_int_equal(lstat(path, &st), 0);
  assert_true(S_ISDIR(st.st_mode));
  snprintf(path, sizeof(path), "%s/.region.cache.new.1.1", slot);
  assert_int_equal(lstat(path, &st), -1);
  /* nothing outside the slot was touched through the links */
  FILE *f = fopen(victim, "r");
  char text[64] = "";
  assert_non_null(f);
  assert_non_null(fgets(text, sizeof(text), f));
  fclose(f);
  assert_string_equal(text, "a node file\n");
  assert_int_equal(stat(kept, &st), 0);
  check_in_container(s, r);
}

static double json_t(const char *r) {
  const char *p = NULL;
  for (const char *q = strstr(r, "\"t\": "); q != NULL; q = strstr(q + 1, "\"t\": ")) p = q;
  return p != NULL ? strtod(p + 5, NULL) : 0;
}

static void test_kubelet_restart(void **state) {
  struct setup *s = *state;
  start_fake(s, false);
  start_plugin(s, NULL, NULL);
  assert_non_null(strstr(fake(s, "registrations 1 5"), "\"ok\": true"));
  assert_non_null(strstr(fake(s, "devices 1 5"), "\"ok\": true"));

  /* restart: sockets wiped, kubelet.sock served again */
  const char *r = fake(s, "restart");
  assert_non_null(strstr(r, "\"ok\": true"));
  double restarted = json_t(r);
  r = fake(s, "registrations 2 5");
  assert_non_null(strstr(r, "\"ok\": true"));
  assert_int_equal(count(r, "\"endpoint\": \"" SOCK_NAME "\""), 2);
  const char *second = strstr(strstr(r, "\"endpoint\"") + 1, "\"endpoint\"");
  double registered = json_t(second);
  assert_true(registered >= restarted);
  assert_true(registered - restarted < 5.0);
  /* the plugin serves again: a fresh ListAndWatch snapshot and Allocate */
  r = fake(s, "devices 2 5");
  assert_non_null(strstr(r, "\"ok\": true"));
  assert_int_equal(count(r, "\"Healthy\""), 2 * SLOTS);
  char u0[128];
  uuid_from(r, 0, u0, sizeof(u0));
  assert_non_null(strstr(fake(s, "allocate %s::3", u0), "\"ok\": true"));
  assert_true(wait_log(s, "registering again", 1));
}

/* A device change (here: SIGUSR1, discovery again) sends a new full snapshot
 * on the open ListAndWatch stream (vg_plugin_devices_changed). */
static void test_devices_changed(void **state) {
  struct setup *s = *state;
  start_fake(s, false);
  start_plugin(s, NULL, NULL);
  assert_non_null(strstr(fake(s, "registrations 1 5"), "\"ok\": true"));
  assert_non_null(strstr(fake(s, "devices 1 5"), "\"messages\": 1,"));
  kill(s->plugin, SIGUSR1);
  const char *r = fake(s, "devices 2 5");
  assert_non_null(strstr(r, "\"ok\": true"));
  assert_non_null(strstr(r, "\"messages\": 2,"));
  assert_int_equal(count(r, "\"Healthy\""), 2 * SLOTS);
  kill(s->plugin, SIGUSR1);
  assert_non_null(strstr(fake(s, "devices 3 5"), "\"messages\": 3,"));
}

static void test_kubelet_missing_at_start(void **state) {
  struct setup *s = *state;
  start_fake(s, true); /* no kubelet.sock yet */
  start_plugin(s, NULL, NULL);
  assert_true(wait_log(s, "kubelet.sock: No such file or directory", 5));
  assert_true(wait_log(s, "waiting for it", 1));
  /* the plugin keeps running and serves meanwhile */
  assert_int_equal(kill(s->plugin, 0), 0);
  assert_non_null(strstr(fake(s, "listen"), "\"ok\": true"));
  const char *r = fake(s, "registrations 1 5");
  assert_non_null(strstr(r, "\"ok\": true"));
  assert_non_null(strstr(r, "\"resource_name\": \"nvidia.com/gpu\""));
  assert_non_null(strstr(fake(s, "devices 1 5"), "\"ok\": true"));
}

static void test_register_rejected(void **state) {
  struct setup *s = *state;
  start_fake(s, false);
  start_plugin(s, "--resource", "gpu"); /* not an extended resource name */
  const char *r = fake(s, "rejections 1 5");
  assert_non_null(strstr(r, "\"ok\": true"));
  assert_non_null(strstr(r, "not an extended resource name"));
  assert_true(wait_log(s, "Register of gpu with the kubelet at", 5));
  assert_true(wait_log(s, "is not an extended resource name", 1));
  /* retried with backoff, still running */
  assert_non_null(strstr(fake(s, "rejections 2 5"), "\"ok\": true"));
  assert_int_equal(kill(s->plugin, 0), 0);
}

static void test_bad_options(void **state) {
  struct setup *s = *state;
  char *argv[] = {(char *)vg_build_path("bin/vgpu-device-plugin"), "--slots", "0", NULL};
  struct vg_run run;
  assert_int_equal(vg_run(&s->env, argv, &run), 2);
  assert_non_null(strstr(run.err, "--slots: \"0\" is not a number from 1 to 1024"));
  char *argv2[] = {(char *)vg_build_path("bin/vgpu-device-plugin"), "--bogus", NULL};
  assert_int_equal(vg_run(&s->env, argv2, &run), 2);
  /* One line, and no usage after it (README: every program answers alike). */
  assert_string_equal(run.err,
                      "vgpu-device-plugin: unknown option '--bogus' (see "
                      "vgpu-device-plugin --help)\n");
}

/* ---- one test per example configuration ---- */

static void start_plugin_config(struct setup *s, const char *config, const char *extra1,
                                const char *extra2) {
  char *argv[] = {(char *)vg_build_path("bin/vgpu-device-plugin"),
                  "--config",
                  (char *)config,
                  "--plugin-dir",
                  s->plugin_dir,
                  "--state-dir",
                  s->state_dir,
                  "--library",
                  "/opt/vgpu/libvgpu.so",
                  (char *)extra1,
                  (char *)extra2,
                  NULL};
  s->plugin = vg_spawn(&s->env, argv);
  assert_true(s->plugin > 0);
}

/* "uuid::from,uuid::from+1,..." (n IDs). */
static char *id_list(const char *uuid, unsigned from, unsigned n) {
  static char buf[1 << 17];
  size_t off = 0;
  for (unsigned i = 0; i < n; i++)
    off += (size_t)snprintf(buf + off, sizeof(buf) - off, "%s%s::%u", i > 0 ? "," : "", uuid,
                            from + i);
  return buf;
}

static bool has_env(const char *r, const char *key, const char *value) {
  char want[2048];
  snprintf(want, sizeof(want), "\"%s\": \"%s\"", key, value);
  return strstr(r, want) != NULL;
}

/* vgpu (HAMi): IDs per GPU = deviceSplitCount; limits pending for the binder. */
static void test_example_vgpu(void **state) {
  struct setup *s = *state;
  char devroot[500], node[600];
  snprintf(devroot, sizeof(devroot), "%s/root", s->env.dir);
  snprintf(node, sizeof(node), "%s/dev", devroot);
  assert_int_equal(mkdir(devroot, 0755) | mkdir(node, 0755), 0);
  const char *nodes[] = {"nvidiactl", "nvidia1"};
  for (int i = 0; i < 2; i++) {
    snprintf(node, sizeof(node), "%s/dev/%s", devroot, nodes[i]);
    fclose(fopen(node, "w"));
  }
  start_fake(s, false);
  start_plugin_config(s, EXAMPLE("vgpu"), "--dev-root", devroot);
  const char *r = registered(s, 1, "nvidia.com/vgpu");
  assert_non_null(strstr(r, "\"endpoint\": \"vgpu-nvidia.com_vgpu.sock\""));
  r = fake(s, "devices 1 5");
  assert_int_equal(count(r, "::"), 2 * 10);
  char u0[128], u1[128];
  two_uuids(r, u0, u1, sizeof(u0));

  r = fake(s, "allocate %s::7", u1);
  assert_non_null(strstr(r, "\"ok\": true"));
  assert_true(has_env(r, "NVIDIA_VISIBLE_DEVICES", u1));
  assert_true(has_env(r, "CUDA_DEVICE_MEMORY_SHARED_CACHE", "/usr/local/vgpu/region.cache"));
  assert_null(strstr(r, "CUDA_DEVICE_MEMORY_LIMIT"));
  /* device nodes that exist (under --dev-root), minor from NVML */
  char want[800];
  snprintf(want, sizeof(want),
           "{\"container_path\": \"/dev/nvidiactl\", \"host_path\": \"%s/dev/nvidiactl\", "
           "\"permissions\": \"rw\"}",
           devroot);
  assert_non_null(strstr(r, want));
  snprintf(want, sizeof(want),
           "\"container_path\": \"/dev/nvidia1\", \"host_path\": \"%s/dev/nvidia1\"", devroot);
  assert_non_null(strstr(r, want));
  assert_null(strstr(r, "/dev/nvidia-uvm"));
  assert_null(strstr(r, "/dev/nvidia0"));
  struct region_view v;
  region_from(r, &v);
  assert_true(v.pending);
  assert_int_equal(v.ndev, 1);
  assert_string_equal(v.uuid[0], u1);
  assert_int_equal(v.limit[0], 0);
  assert_int_equal(v.grant_rc, 1); /* the binder writes it with the limits */
  /* The same IDs allocated again (a new container of the slot): an old
   * grant goes, so the new container waits for its own. */
  struct vg_grant stale = {.count = 1};
  snprintf(stale.gpu[0].uuid, sizeof(stale.gpu[0].uuid), "%.95s", u1);
  stale.gpu[0].memory = 8ULL << 30;
  static const char key[] = "\"container_path\": \"/usr/local/vgpu/grant\", \"host_path\": \"";
  const char *m = strstr(r, key);
  assert_non_null(m);
  m += strlen(key);
  char dir[700];
  snprintf(dir, sizeof(dir), "%.*s", (int)(strchr(m, '"') - m), m);
  struct vg_err gerr;
  assert_int_equal(vg_grant_write(dir, &stale, &gerr), 0);
  r = fake(s, "allocate %s::7", u1);
  assert_non_null(strstr(r, "\"ok\": true"));
  region_from(r, &v);
  assert_true(v.pending);
  assert_int_equal(v.grant_rc, 1);

  r = fake(s, "allocate %s::0,%s::1", u0, u1);
  assert_non_null(strstr(r, "\"ok\": true"));
  snprintf(want, sizeof(want), "%s,%s", u0, u1);
  assert_true(has_env(r, "NVIDIA_VISIBLE_DEVICES", want));
  region_from(r, &v);
  assert_true(v.pending);
  assert_int_equal(v.ndev, 2);
  assert_int_equal(count(r, "/dev/nvidia1"), 2); /* host and container path, once */

  r = fake(s, "allocate %s::10", u0);
  assert_non_null(strstr(r, "INVALID_ARGUMENT"));
  assert_non_null(strstr(r, "unknown device ID"));
}

/* gpushare (Aliyun), MiB: one ID per MiB; the IDs are the memory. */
static void test_example_gpushare(void **state) {
  struct setup *s = *state;
  start_fake(s, false);
  /* The installer's host directory: libvgpu.so and the vgpu CLI beside it. */
  char lib[600], cli[600];
  snprintf(lib, sizeof(lib), "%s/libvgpu.so", s->state_dir);
  snprintf(cli, sizeof(cli), "%s/vgpu", s->state_dir);
  assert_true(mkdir(s->state_dir, 0755) == 0 || errno == EEXIST);
  FILE *f = fopen(lib, "w");
  assert_non_null(f);
  fclose(f);
  assert_non_null(f = fopen(cli, "w"));
  fclose(f);
  start_plugin_config(s, EXAMPLE("gpushare"), "--library", lib);
  registered(s, 1, "aliyun.com/gpu-mem");
  const char *r = fake(s, "devices 1 10");
  assert_int_equal(count(r, "::"), 2 * 8192);
  char u0[128], u1[128];
  two_uuids(r, u0, u1, sizeof(u0));

  r = fake(s, "allocate %s", id_list(u0, 100, 1024));
  assert_non_null(strstr(r, "\"ok\": true"));
  assert_true(has_env(r, "NVIDIA_VISIBLE_DEVICES", u0));
  assert_true(has_env(r, "CUDA_DEVICE_MEMORY_LIMIT_0", "1024m"));
  assert_true(has_env(r, "ALIYUN_COM_GPU_MEM_DEV", "8192"));
  assert_true(has_env(r, "ALIYUN_COM_GPU_MEM_CONTAINER", "1024"));
  assert_true(has_env(r, "ALIYUN_COM_GPU_MEM_IDX", "0")); /* u0 is GPU 0 */
  /* No API server here: the pod is not identified, so no pod total is made up. */
  assert_null(strstr(r, "ALIYUN_COM_GPU_MEM_POD"));
  assert_true(has_env(r, "CUDA_DEVICE_MEMORY_SHARED_CACHE", "/usr/local/vgpu/region.cache"));
  /* the CLI beside the library, read-only: `vgpu status` in any image */
  char want[800];
  snprintf(want, sizeof(want),
           "{\"container_path\": \"/usr/local/vgpu/bin/vgpu\", \"host_path\": \"%s\", "
           "\"read_only\": true}",
           cli);
  assert_non_null(strstr(r, want));
  check_in_container(s, r); /* bin/vgpu and a real libvgpu.so mounted too */
  /* the preference keeps a container's memory on one GPU */
  const char *pref = strstr(r, "\"preferred\"");
  assert_non_null(pref);
  char other[140];
  snprintf(other, sizeof(other), "\"%s::", u1);
  assert_true(strstr(pref, other) == NULL || strstr(pref, other) > strstr(pref, "]"));
  struct region_view v;
  region_from(r, &v);
  assert_false(v.pending);
  assert_int_equal(v.ndev, 1);
  assert_string_equal(v.uuid[0], u0);
  assert_int_equal(v.limit[0], 1024ULL << 20);
  /* gpushare's IDs are the memory: the grant is written at Allocate */
  assert_int_equal(v.grant_rc, 0);
  assert_int_equal(v.grant.count, 1);
  assert_string_equal(v.grant.gpu[0].uuid, u0);
  assert_int_equal(v.grant.gpu[0].memory, 1024ULL << 20);
  assert_int_equal(v.grant.gpu[0].cores, 0);

  r = fake(s, "allocate %s::5000,%s::5000", u0, u1);
  assert_non_null(strstr(r, "INVALID_ARGUMENT"));
  assert_non_null(strstr(r, "must be on one GPU"));
}

/* timeSlicing with memoryPerReplica: equal and failRequestsGreaterThanOne. */
static void test_example_timeslicing(void **state) {
  struct setup *s = *state;
  start_fake(s, false);
  start_plugin_config(s, EXAMPLE("timeslicing"), NULL, NULL);
  registered(s, 1, "nvidia.com/gpu");
  const char *r = fake(s, "devices 1 5");
  assert_int_equal(count(r, "::"), 2 * 4);
  char u0[128], u1[128];
  two_uuids(r, u0, u1, sizeof(u0));
  r = fake(s, "allocate %s::2", u1);
  assert_non_null(strstr(r, "\"ok\": true"));
  /* (8192 MiB - 4 x 256 MiB context reserve) / 4 replicas */
  assert_true(has_env(r, "CUDA_DEVICE_MEMORY_LIMIT_0", "1792m"));
  assert_null(strstr(r, "ALIYUN"));
  struct region_view v;
  region_from(r, &v);
  if (v.pending) {
    static char log[1 << 16];
    plugin_log(s, log, sizeof(log));
    fail_msg("limits never bound; plugin log:\n%s", log);
  }
  assert_string_equal(v.uuid[0], u1);
  assert_int_equal(v.limit[0], 1792ULL << 20);
  r = fake(s, "allocate %s::0,%s::1", u0, u1);
  assert_non_null(strstr(r, "INVALID_ARGUMENT"));
  assert_non_null(strstr(r, "maximum request size for shared resources is 1"));
}

/* NVIDIA's own file: replicas are access tokens, no limits, no preload. */
static void test_example_nvidia_time_slicing(void **state) {
  struct setup *s = *state;
  start_fake(s, false);
  start_plugin_config(s, EXAMPLE("nvidia-time-slicing"), NULL, NULL);
  registered(s, 1, "nvidia.com/gpu");
  const char *r = fake(s, "devices 1 5");
  assert_int_equal(count(r, "::"), 2 * 4);
  char u0[128], u1[128];
  two_uuids(r, u0, u1, sizeof(u0));
  r = fake(s, "allocate %s::1,%s::3", u0, u1);
  assert_non_null(strstr(r, "\"ok\": true"));
  char want[300];
  snprintf(want, sizeof(want), "%s,%s", u0, u1);
  assert_true(has_env(r, "NVIDIA_VISIBLE_DEVICES", want));
  assert_null(strstr(r, "CUDA_DEVICE"));
  assert_non_null(strstr(r, "\"mounts\": []"));
  char slots[500];
  snprintf(slots, sizeof(slots), "%s/slots", s->state_dir);
  assert_int_equal(dir_entries(slots), -1);
}

/* CCE (Huawei): one ID per 128 MiB; memory from the IDs, cores pending. */
static void test_example_cce(void **state) {
  struct setup *s = *state;
  start_fake(s, false);
  start_plugin_config(s, EXAMPLE("cce"), NULL, NULL);
  registered(s, 1, "volcano.sh/gpu-mem.128Mi");
  const char *r = fake(s, "devices 1 5");
  assert_int_equal(count(r, "::"), 2 * 64);
  char u0[128], u1[128];
  two_uuids(r, u0, u1, sizeof(u0));
  r = fake(s, "allocate %s", id_list(u0, 3, 40));
  assert_non_null(strstr(r, "\"ok\": true"));
  assert_true(has_env(r, "CUDA_DEVICE_MEMORY_LIMIT_0", "5120m"));
  struct region_view v;
  region_from(r, &v);
  assert_true(v.pending);
  assert_int_equal(v.limit[0], 5120ULL << 20);
  r = fake(s, "allocate %s::0,%s::0", u0, u1);
  assert_non_null(strstr(r, "must be on one GPU"));
}

/* All four dialects at once: four sockets, four registrations, distinct IDs. */
static void test_example_mixed(void **state) {
  struct setup *s = *state;
  start_fake(s, false);
  start_plugin_config(s, EXAMPLE("mixed"), NULL, NULL);
  const char *r = fake(s, "registrations 4 5");
  assert_non_null(strstr(r, "\"ok\": true"));
  const char *names[] = {"nvidia.com/vgpu", "aliyun.com/gpu-mem", "nvidia.com/gpu.shared",
                         "volcano.sh/gpu-mem.128Mi"};
  const int ids[] = {4, 8, 2, 64};
  for (int i = 0; i < 4; i++) {
    char want[200];
    snprintf(want, sizeof(want), "\"resource_name\": \"%s\"", names[i]);
    assert_int_equal(count(r, want), 1);
  }
  assert_non_null(strstr(r, "\"endpoint\": \"vgpu-aliyun.com_gpu-mem.sock\""));
  char u0[128], u1[128];
  for (int i = 0; i < 4; i++) {
    r = fake(s, "devices 1 5 %s", names[i]);
    assert_non_null(strstr(r, "\"ok\": true"));
    assert_int_equal(count(r, "::"), 2 * ids[i]);
  }
  two_uuids(r, u0, u1, sizeof(u0));
  /* IDs of one GPU are numbered across the resources: vgpu 0-3, gpushare 4-11,
   * time-slicing 12-13, cce 14-77; no two containers share a slot directory */
  r = fake(s, "allocate %s::0 nvidia.com/vgpu", u0);
  assert_non_null(strstr(r, "\"ok\": true"));
  struct region_view v;
  region_from(r, &v);
  assert_true(v.pending);
  r = fake(s, "allocate %s::4,%s::5 aliyun.com/gpu-mem", u0, u0);
  assert_true(has_env(r, "CUDA_DEVICE_MEMORY_LIMIT_0", "2048m"));
  assert_true(has_env(r, "ALIYUN_COM_GPU_MEM_DEV", "8"));
  assert_true(has_env(r, "ALIYUN_COM_GPU_MEM_CONTAINER", "2"));
  region_from(r, &v);
  assert_false(v.pending);
  r = fake(s, "allocate %s::13 nvidia.com/gpu.shared", u1);
  assert_non_null(strstr(r, "\"ok\": true"));
  assert_non_null(strstr(r, "\"mounts\": []"));
  r = fake(s, "allocate %s::14 volcano.sh/gpu-mem.128Mi", u1);
  assert_true(has_env(r, "CUDA_DEVICE_MEMORY_LIMIT_0", "128m"));
  r = fake(s, "allocate %s::0 volcano.sh/gpu-mem.128Mi", u1);
  assert_non_null(strstr(r, "unknown device ID"));
  char slots[500];
  snprintf(slots, sizeof(slots), "%s/slots", s->state_dir);
  assert_int_equal(dir_entries(slots), 3);
}

static void test_bad_config(void **state) {
  struct setup *s = *state;
  char path[500];
  snprintf(path, sizeof(path), "%s/bad.yaml", s->env.dir);
  FILE *f = fopen(path, "w");
  fputs("dialects:\n  vgpu:\n    deviceSplitCount: 0\n", f);
  fclose(f);
  char *argv[] = {(char *)vg_build_path("bin/vgpu-device-plugin"), "--config", path, NULL};
  struct vg_run run;
  assert_int_equal(vg_run(&s->env, argv, &run), 2);
  char want[600];
  snprintf(want, sizeof(want), "%s:3:", path);
  assert_non_null(strstr(run.err, want));
  char *argv2[] = {(char *)vg_build_path("bin/vgpu-device-plugin"),
                   "--config",
                   EXAMPLE("cce"),
                   "--slots",
                   "3",
                   NULL};
  assert_int_equal(vg_run(&s->env, argv2, &run), 2);
  assert_non_null(strstr(run.err, "does not enable"));
  char *argv3[] = {(char *)vg_build_path("bin/vgpu-device-plugin"), "--config", "/nonexistent.yaml",
                   NULL};
  assert_int_equal(vg_run(&s->env, argv3, &run), 2);
  assert_non_null(strstr(run.err, "/nonexistent.yaml"));
}

/* ---- the whole node agent: API server, PodResources, binder, inventory, health ---- */

static void test_node_agent_end_to_end(void **state) {
  struct setup *s = *state;
  char kubeconfig[500], body[1 << 16];
  start_node(s, kubeconfig, sizeof(kubeconfig), "10");
  assert_true(api(s, "POST", "/_test/pods",
                  "{\"metadata\":{\"name\":\"p1\",\"namespace\":\"default\"},\"spec\":{"
                  "\"nodeName\":\"node1\",\"containers\":[{\"name\":\"c\",\"resources\":{"
                  "\"limits\":{\"nvidia.com/vgpu\":\"1\",\"nvidia.com/gpumem\":\"3000\","
                  "\"nvidia.com/gpucores\":\"30\"}}}]}}",
                  NULL, 0) < 300);
  const char *r = s->fk.line;
  char u0[128], u1[128];
  two_uuids(r, u0, u1, sizeof(u0));

  /* Allocate: limits pending; the kubelet records the IDs; the binder binds. */
  r = fake(s, "allocate %s::7", u1);
  assert_non_null(strstr(r, "\"ok\": true"));
  static char alloc[1 << 16];
  snprintf(alloc, sizeof(alloc), "%s", r);
  assert_non_null(strstr(fake(s, "assign default p1 c nvidia.com/vgpu %s::7", u1), "\"ok\": true"));
  struct region_view v;
  region_from(alloc, &v);
  for (int i = 0; i < 100 && v.pending; i++) {
    usleep(50000);
    region_from(alloc, &v);
  }
  if (v.pending) {
    static char log[1 << 16];
    plugin_log(s, log, sizeof(log));
    fail_msg("limits never bound; plugin log:\n%s", log);
  }
  assert_string_equal(v.uuid[0], u1);
  assert_int_equal(v.limit[0], 3000ULL << 20);
  /* ... and the read-only grant says the same (grant.h) */
  assert_int_equal(v.grant_rc, 0);
  assert_string_equal(v.grant.gpu[0].uuid, u1);
  assert_int_equal(v.grant.gpu[0].memory, 3000ULL << 20);
  assert_int_equal(v.grant.gpu[0].cores, 30);

  /* The inventory reaches the Node. */
  bool published = false;
  for (int i = 0; i < 100 && !published; i++) {
    api(s, "GET", "/api/v1/nodes/node1", NULL, body, sizeof(body));
    published = strstr(body, "vgpu.io/gpu-inventory") != NULL;
    if (!published) usleep(50000);
  }
  assert_true(published);
  assert_non_null(strstr(body, u1));

  /* XID 79 on GPU 1: Unhealthy for the kubelet and in the inventory. */
  char *fault[] = {
      (char *)vg_build_path("bin/vgpu-sim"), "fault", "--device", "1", "--xid", "79", NULL};
  struct vg_run run;
  assert_int_equal(vg_run(&s->env, fault, &run), 0);
  r = fake(s, "devices 2 10");
  assert_non_null(strstr(r, "Unhealthy"));
  bool marked = false;
  for (int i = 0; i < 100 && !marked; i++) {
    api(s, "GET", "/api/v1/nodes/node1", NULL, body, sizeof(body));
    marked = strstr(body, "Unhealthy") != NULL;
    if (!marked) usleep(50000);
  }
  assert_true(marked);
}

/* GPU `index` of the Node's inventory annotation has this health and reason
 * (NULL: no reason field) within seconds. */
static bool inventory_gpu(struct setup *s, int index, const char *health, const char *reason,
                          double seconds) {
  static char body[1 << 16];
  for (int t = 0; t <= (int)(seconds * 20); t++) {
    if (t > 0) usleep(50000);
    api(s, "GET", "/api/v1/nodes/node1", NULL, body, sizeof(body));
    json_object *node = json_tokener_parse(body), *meta, *ann, *val, *gpus;
    json_object *doc = NULL;
    if (json_object_object_get_ex(node, "metadata", &meta) &&
        json_object_object_get_ex(meta, "annotations", &ann) &&
        json_object_object_get_ex(ann, "vgpu.io/gpu-inventory", &val))
      doc = json_tokener_parse(json_object_get_string(val));
    json_object_put(node);
    bool match = false;
    if (json_object_object_get_ex(doc, "gpus", &gpus) &&
        (int)json_object_array_length(gpus) > index) {
      json_object *g = json_object_array_get_idx(gpus, (size_t)index), *h, *r;
      bool has_reason = json_object_object_get_ex(g, "reason", &r);
      match = json_object_object_get_ex(g, "health", &h) &&
              strcmp(json_object_get_string(h), health) == 0 &&
              (reason == NULL ? !has_reason
                              : has_reason && strcmp(json_object_get_string(r), reason) == 0);
    }
    json_object_put(doc);
    if (match) return true;
  }
  fail_msg("GPU %d never became %s (reason %s); the Node: %s", index, health,
           reason != NULL ? reason : "none", body);
  return false;
}

static void sim_fault(struct setup *s, const char *device, const char *what, const char *code) {
  char *argv[] = {(char *)vg_build_path("bin/vgpu-sim"),
                  "fault",
                  "--device",
                  (char *)device,
                  (char *)what,
                  (char *)code,
                  NULL};
  struct vg_run run;
  assert_int_equal(vg_run(&s->env, argv, &run), 0);
}

/* An Unhealthy GPU says why in the inventory (docs/inventory.md: "xid 79",
 * "lost"), and recovery takes the reason away: the XID mark when the GPUs
 * are discovered again (SIGUSR1), the lost mark when the GPU answers again. */
static void test_inventory_health_reason(void **state) {
  struct setup *s = *state;
  char kubeconfig[500];
  start_node(s, kubeconfig, sizeof(kubeconfig), "4");
  inventory_gpu(s, 1, "Healthy", NULL, 10);

  sim_fault(s, "1", "--xid", "79");
  inventory_gpu(s, 1, "Unhealthy", "xid 79", 10);
  inventory_gpu(s, 0, "Healthy", NULL, 0);
  assert_non_null(strstr(fake(s, "devices 2 10"), "\"healthy\": 4"));

  kill(s->plugin, SIGUSR1);
  inventory_gpu(s, 1, "Healthy", NULL, 10);
  assert_non_null(strstr(fake(s, "devices 3 10"), "\"healthy\": 8"));

  sim_fault(s, "0", "--lost", NULL);
  inventory_gpu(s, 0, "Unhealthy", "lost", 10);
  sim_fault(s, "0", "--clear", NULL);
  inventory_gpu(s, 0, "Healthy", NULL, 10);
}

/* Issue 4's concurrency check through the whole plugin: 50 pods land on the
 * node at once; the kubelet allocates them in one random order and reports
 * their IDs in another; every container must get its own pod's limits. */
static void test_fifty_pods(void **state) {
  enum { PODS = 50 };
  struct setup *s = *state;
  char kubeconfig[500];
  start_node(s, kubeconfig, sizeof(kubeconfig), "25");
  for (int i = 0; i < PODS; i++) {
    char pod[512];
    snprintf(pod, sizeof(pod),
             "{\"metadata\":{\"name\":\"p%d\",\"namespace\":\"default\"},\"spec\":{"
             "\"nodeName\":\"node1\",\"containers\":[{\"name\":\"c\",\"resources\":{"
             "\"limits\":{\"nvidia.com/vgpu\":\"1\",\"nvidia.com/gpumem\":\"%d\"}}}]}}",
             i, 100 + i);
    assert_true(api(s, "POST", "/_test/pods", pod, NULL, 0) < 300);
  }
  const char *r = fake(s, "devices 1 5");
  char u[2][128];
  two_uuids(r, u[0], u[1], sizeof(u[0]));
  int order[PODS], reveal[PODS];
  for (int i = 0; i < PODS; i++) order[i] = reveal[i] = i;
  srand(4242);
  for (int i = PODS - 1; i > 0; i--) {
    int j = rand() % (i + 1), k = rand() % (i + 1), t = order[i];
    order[i] = order[j], order[j] = t;
    t = reveal[i], reveal[i] = reveal[k], reveal[k] = t;
  }
  /* pod i gets slot i/2 of GPU i%2 */
  static char allocs[PODS][2048];
  for (int n = 0; n < PODS; n++) {
    int i = order[n];
    r = fake(s, "allocate %s::%d", u[i % 2], i / 2);
    assert_non_null(strstr(r, "\"ok\": true"));
    snprintf(allocs[i], sizeof(allocs[i]), "%s", r);
  }
  for (int n = 0; n < PODS; n++) {
    int i = reveal[n];
    r = fake(s, "assign default p%d c nvidia.com/vgpu %s::%d", i, u[i % 2], i / 2);
    assert_non_null(strstr(r, "\"ok\": true"));
  }
  for (int i = 0; i < PODS; i++) {
    struct region_view v;
    region_from(allocs[i], &v);
    for (int t = 0; t < 200 && v.pending; t++) {
      usleep(25000);
      region_from(allocs[i], &v);
    }
    if (v.pending) fail_msg("pod p%d never bound", i);
    assert_int_equal(v.ndev, 1);
    assert_string_equal(v.uuid[0], u[i % 2]);
    assert_int_equal(v.limit[0], (uint64_t)(100 + i) << 20);
  }
}

/* ListAndWatch carries each GPU's NUMA node (nvmlDeviceGetNumaNodeId):
 * with two simulated nodes, GPU 1 is on node 1. */
static void test_numa_topology(void **state) {
  struct setup *s = *state;
  vg_env_set(&s->env, "VGPU_SIM_NUMA_NODES", "2");
  start_fake(s, false);
  start_plugin(s, NULL, NULL);
  registered(s, 1, "nvidia.com/gpu");
  const char *r = fake(s, "devices 1 5");
  assert_non_null(strstr(r, "\"ok\": true"));
  r = fake(s, "topology");
  assert_non_null(strstr(r, "\"ok\": true"));
  assert_int_equal(count(r, "::"), 2 * SLOTS);
  for (int i = 0; i < SLOTS; i++) {
    char want[200];
    snprintf(want, sizeof(want), "\"GPU-5a1a0000-0000-4000-8000-000000000000::%d\": [0]", i);
    assert_non_null(strstr(r, want));
    snprintf(want, sizeof(want), "\"GPU-5a1a0000-0000-4000-8000-000000000001::%d\": [1]", i);
    assert_non_null(strstr(r, want));
  }
}

/* The plugin started with nvidia.com/gpu registered; the UUIDs of its two
 * GPUs in u0 and u1 (128 bytes each). */
static void started_with_gpus(struct setup *s, char *u0, char *u1) {
  start_fake(s, false);
  start_plugin(s, NULL, NULL);
  registered(s, 1, "nvidia.com/gpu");
  const char *r = fake(s, "devices 1 5");
  assert_non_null(strstr(r, "\"ok\": true"));
  uuid_from(r, 0, u0, 128);
  uuid_from(r, 1, u1, 128);
}

/* Allocates run on several threads: the same IDs allocated many times at
 * once (and other IDs beside them) all succeed, name one slot directory per
 * ID set, and leave a consistent region file. */
static void test_concurrent_allocate(void **state) {
  struct setup *s = *state;
  char u0[128], u1[128];
  started_with_gpus(s, u0, u1);
  const char *r =
      fake(s, "allocate_parallel 8 %s::0 %s::0 %s::1,%s::1 %s::2,%s::2", u0, u1, u0, u1, u1, u0);
  if (strstr(r, "\"ok\": true") == NULL) fail_msg("%s", r);
  assert_non_null(strstr(r, "\"calls\": 32"));
  assert_non_null(strstr(r, "\"failed\": []"));
  /* every ID set got one slot directory, the same for all its calls */
  assert_int_equal(count(r, "/slots/"), 4);
  char slots[500];
  snprintf(slots, sizeof(slots), "%s/slots", s->state_dir);
  assert_int_equal(dir_entries(slots), 4);
  /* the region file shared by sixteen concurrent calls holds both GPUs once */
  for (int k = 1; k <= 2; k++) {
    r = fake(s, "allocate %s::%d,%s::%d", u0, k, u1, k);
    assert_non_null(strstr(r, "\"ok\": true"));
    struct region_view v;
    region_from(r, &v);
    assert_int_equal(v.ndev, 2);
    assert_string_not_equal(v.uuid[0], v.uuid[1]);
  }
  /* the preload file was written whole */
  char path[600], buf[200] = "";
  snprintf(path, sizeof(path), "%s/ld.so.preload", s->state_dir);
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  size_t n = fread(buf, 1, sizeof(buf) - 1, f);
  buf[n] = '\0';
  fclose(f);
  assert_string_equal(buf, "/usr/local/vgpu/libvgpu.so\n");
  /* slots, ld.so.preload and device-plugin.pid; no temporaries */
  assert_int_equal(dir_entries(s->state_dir), 3);
}

/* The preload file's temporary cannot be written (here: it is /dev/full, so
 * fclose fails with ENOSPC): Allocate fails naming the file and the cause,
 * removes the temporary, and the next Allocate writes the file. */
static void test_preload_write_fails(void **state) {
  struct setup *s = *state;
  char u0[128], u1[128];
  started_with_gpus(s, u0, u1);
  /* the plugin's first write of the file goes to ld.so.preload.tmp.PID.1 */
  char tmp[600];
  snprintf(tmp, sizeof(tmp), "%s/ld.so.preload.tmp.%ld.1", s->state_dir, (long)s->plugin);
  assert_int_equal(symlink("/dev/full", tmp), 0);
  const char *r = fake(s, "allocate %s::0", u0);
  assert_non_null(strstr(r, "\"ok\": false"));
  if (strstr(r, "ld.so.preload: No space left on device") == NULL) fail_msg("%s", r);
  struct stat st;
  assert_int_not_equal(lstat(tmp, &st), 0);
  r = fake(s, "allocate %s::0", u0);
  if (strstr(r, "\"ok\": true") == NULL) fail_msg("%s", r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_register_list_allocate, setup, teardown),
      cmocka_unit_test_setup_teardown(test_slot_planted, setup, teardown),
      cmocka_unit_test_setup_teardown(test_kubelet_restart, setup, teardown),
      cmocka_unit_test_setup_teardown(test_devices_changed, setup, teardown),
      cmocka_unit_test_setup_teardown(test_kubelet_missing_at_start, setup, teardown),
      cmocka_unit_test_setup_teardown(test_register_rejected, setup, teardown),
      cmocka_unit_test_setup_teardown(test_bad_options, setup, teardown),
      cmocka_unit_test_setup_teardown(test_example_vgpu, setup, teardown),
      cmocka_unit_test_setup_teardown(test_example_gpushare, setup, teardown),
      cmocka_unit_test_setup_teardown(test_example_timeslicing, setup, teardown),
      cmocka_unit_test_setup_teardown(test_example_nvidia_time_slicing, setup, teardown),
      cmocka_unit_test_setup_teardown(test_example_cce, setup, teardown),
      cmocka_unit_test_setup_teardown(test_example_mixed, setup, teardown),
      cmocka_unit_test_setup_teardown(test_bad_config, setup, teardown),
      cmocka_unit_test_setup_teardown(test_node_agent_end_to_end, setup, teardown),
      cmocka_unit_test_setup_teardown(test_inventory_health_reason, setup, teardown),
      cmocka_unit_test_setup_teardown(test_fifty_pods, setup, teardown),
      cmocka_unit_test_setup_teardown(test_numa_topology, setup, teardown),
      cmocka_unit_test_setup_teardown(test_concurrent_allocate, setup, teardown),
      cmocka_unit_test_setup_teardown(test_preload_write_fails, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
