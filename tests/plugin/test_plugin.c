/*
 * test_plugin.c -- vgpu-device-plugin against a fake kubelet.
 *
 * The fake kubelet (fake_kubelet.py, python3-grpcio) is an independent
 * implementation of the kubelet side of the device plugin API v1beta1: it
 * checks the version and resource name, calls GetDevicePluginOptions back
 * inside Register, runs ListAndWatch, allocates as at pod admission and
 * restarts by wiping the sockets. The plugin runs on the simulated GPU with
 * two devices and four slots per GPU.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
// clang-format off
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include "harness.h"

#define SLOTS 4
#define SOCK_NAME "vgpu-nvidia.com_gpu.sock"

struct fake {
  pid_t pid;
  FILE *in, *out;
  char line[1 << 16];
};

struct setup {
  struct vg_env env;
  char plugin_dir[400];
  char state_dir[400];
  struct fake fk;
  pid_t plugin;
};

static void start_fake(struct setup *s, bool defer) {
  int to[2], from[2];
  assert_int_equal(pipe(to), 0);
  assert_int_equal(pipe(from), 0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    dup2(to[0], 0);
    dup2(from[1], 1);
    close(to[1]);
    close(from[0]);
    char *argv[] = {"/usr/bin/python3",
                    VG_SOURCE_DIR "/tests/plugin/fake_kubelet.py",
                    "--dir",
                    s->plugin_dir,
                    "--proto-dir",
                    VG_SOURCE_DIR "/src/plugin/proto",
                    defer ? "--defer" : NULL,
                    NULL};
    execve(argv[0], argv, s->env.vars);
    fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
    _exit(127);
  }
  close(to[0]);
  close(from[1]);
  s->fk.pid = pid;
  s->fk.in = fdopen(to[1], "w");
  s->fk.out = fdopen(from[0], "r");
  assert_non_null(fgets(s->fk.line, sizeof(s->fk.line), s->fk.out));
  assert_non_null(strstr(s->fk.line, "\"ready\": true"));
}

/* Sends one command to the fake kubelet; its JSON answer is in s->fk.line. */
static const char *fake(struct setup *s, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vfprintf(s->fk.in, fmt, ap);
  va_end(ap);
  fputc('\n', s->fk.in);
  fflush(s->fk.in);
  if (fgets(s->fk.line, sizeof(s->fk.line), s->fk.out) == NULL) s->fk.line[0] = '\0';
  if (getenv("VG_TEST_VERBOSE") != NULL) fprintf(stderr, "fake kubelet: %s", s->fk.line);
  return s->fk.line;
}

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
                  (char *)extra1,
                  (char *)extra2,
                  NULL};
  s->plugin = vg_spawn(&s->env, argv);
  assert_true(s->plugin > 0);
}

static void plugin_log(struct setup *s, char *buf, size_t len) {
  char path[400];
  snprintf(path, sizeof(path), "%s/spawn-%d.err", s->env.dir, (int)s->plugin);
  buf[0] = '\0';
  FILE *f = fopen(path, "r");
  if (f == NULL) return;
  size_t n = fread(buf, 1, len - 1, f);
  buf[n] = '\0';
  fclose(f);
}

/* Waits up to seconds for the plugin's stderr to contain needle. */
static bool wait_log(struct setup *s, const char *needle, double seconds) {
  static char log[1 << 16];
  for (int i = 0; i < (int)(seconds * 20); i++) {
    plugin_log(s, log, sizeof(log));
    if (strstr(log, needle) != NULL) return true;
    usleep(50000);
  }
  fprintf(stderr, "plugin log lacks \"%s\":\n%s", needle, log);
  return false;
}

static int setup(void **state) {
  struct setup *s = calloc(1, sizeof(*s));
  vg_env_init(&s->env, false);
  vg_env_set(&s->env, "VGPU_SIM_DEVICES", "2");
  snprintf(s->plugin_dir, sizeof(s->plugin_dir), "%s/dp", s->env.dir);
  snprintf(s->state_dir, sizeof(s->state_dir), "%s/state", s->env.dir);
  mkdir(s->plugin_dir, 0755);
  *state = s;
  return 0;
}

/* The plugin must stop cleanly on SIGTERM, without sanitizer reports. */
static int teardown(void **state) {
  struct setup *s = *state;
  int result = 0;
  if (s->plugin > 0) {
    kill(s->plugin, SIGTERM);
    int rc = vg_wait(s->plugin);
    static char log[1 << 16];
    plugin_log(s, log, sizeof(log));
    if (rc != 0 || strstr(log, "Sanitizer") != NULL || strstr(log, "runtime error") != NULL ||
        strstr(log, "signal 15: stopping") == NULL) {
      fprintf(stderr, "plugin exited %d:\n%s", rc, log);
      result = -1;
    }
  }
  if (s->fk.pid > 0) {
    fputs("quit\n", s->fk.in);
    fclose(s->fk.in);
    fclose(s->fk.out);
    vg_wait(s->fk.pid);
  }
  vg_env_cleanup(&s->env);
  free(s);
  return result;
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

  /* two slots of one GPU */
  r = fake(s, "allocate %s::1,%s::0", u0, u0);
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
  /* the preference for two IDs spreads them over both GPUs */
  assert_non_null(strstr(r, "\"preferred\": [\"GPU-"));
  snprintf(want, sizeof(want), "%s::", u1);
  assert_non_null(strstr(r, want));
  char slots[500];
  snprintf(slots, sizeof(slots), "%s/slots", s->state_dir);
  assert_int_equal(dir_entries(slots), 1);

  /* the same IDs in another order name the same slot directory */
  r = fake(s, "allocate %s::0,%s::1", u0, u0);
  assert_non_null(strstr(r, "\"ok\": true"));
  assert_int_equal(dir_entries(slots), 1);

  /* one slot on each GPU */
  r = fake(s, "allocate %s::2,%s::3", u1, u0);
  assert_non_null(strstr(r, "\"ok\": true"));
  snprintf(want, sizeof(want), "\"NVIDIA_VISIBLE_DEVICES\": \"%s,%s\"", u0, u1);
  assert_non_null(strstr(r, want));
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
  assert_non_null(strstr(run.err, "usage: vgpu-device-plugin"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_register_list_allocate, setup, teardown),
      cmocka_unit_test_setup_teardown(test_kubelet_restart, setup, teardown),
      cmocka_unit_test_setup_teardown(test_devices_changed, setup, teardown),
      cmocka_unit_test_setup_teardown(test_kubelet_missing_at_start, setup, teardown),
      cmocka_unit_test_setup_teardown(test_register_rejected, setup, teardown),
      cmocka_unit_test_setup_teardown(test_bad_options, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
