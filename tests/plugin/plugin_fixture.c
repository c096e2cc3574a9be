/* plugin_fixture.c -- see plugin_fixture.h. */
#include "plugin_fixture.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
// clang-format off
#include <setjmp.h>
#include <stddef.h>
#include <cmocka.h>
// clang-format on

#include "k8s.h"

void start_fake(struct setup *s, bool defer) {
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
    char *argv[10] = {"/usr/bin/python3",
                      VG_SOURCE_DIR "/tests/plugin/fake_kubelet.py",
                      "--dir",
                      s->plugin_dir,
                      "--proto-dir",
                      VG_SOURCE_DIR "/src/plugin/proto"};
    int n = 6;
    if (defer) argv[n++] = "--defer";
    if (s->pr_socket[0] != '\0') argv[n++] = "--podresources", argv[n++] = s->pr_socket;
    argv[n] = NULL;
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
const char *fake(struct setup *s, const char *fmt, ...) {
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

void plugin_log(struct setup *s, char *buf, size_t len) {
  vg_spawn_errors(&s->env, s->plugin, buf, len);
}

/* Waits up to seconds for the plugin's stderr to contain needle. */
bool wait_log(struct setup *s, const char *needle, double seconds) {
  char log[1 << 16];
  for (int i = 0; i < (int)(seconds * 20); i++) {
    plugin_log(s, log, sizeof(log));
    if (strstr(log, needle) != NULL) return true;
    usleep(50000);
  }
  fprintf(stderr, "plugin log lacks \"%s\":\n%s", needle, log);
  return false;
}

int setup(void **state) {
  struct setup *s = calloc(1, sizeof(*s));
  vg_env_init(&s->env, false);
  vg_env_set(&s->env, "VGPU_SIM_DEVICES", "2");
  vg_env_set(&s->env, "VGPU_SIM_MEMORY", "8g");
  snprintf(s->plugin_dir, sizeof(s->plugin_dir), "%s/dp", s->env.dir);
  snprintf(s->state_dir, sizeof(s->state_dir), "%s/state", s->env.dir);
  mkdir(s->plugin_dir, 0755);
  *state = s;
  return 0;
}

/* The plugin must stop cleanly on SIGTERM, without sanitizer reports. */
int teardown(void **state) {
  struct setup *s = *state;
  int result = 0;
  if (s->plugin > 0) {
    kill(s->plugin, SIGTERM);
    int rc = vg_wait(s->plugin);
    char log[1 << 16];
    plugin_log(s, log, sizeof(log));
    if (rc != 0 || strstr(log, "Sanitizer") != NULL || strstr(log, "runtime error") != NULL ||
        strstr(log, "signal 15: stopping") == NULL) {
      fprintf(stderr, "plugin exited %d:\n%s", rc, log);
      result = -1;
    }
  }
  if (s->sched > 0) {
    kill(s->sched, SIGTERM);
    vg_wait(s->sched);
  }
  if (s->api > 0) {
    kill(s->api, SIGTERM);
    vg_wait(s->api);
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

/* Starts tests/k8s/fake_apiserver.py and writes a kubeconfig for it. */
void start_api(struct setup *s, char *kubeconfig, size_t len) {
  char *argv[] = {"/usr/bin/python3", VG_SOURCE_DIR "/tests/k8s/fake_apiserver.py", "--token",
                  TOKEN, NULL};
  s->api = vg_start_server(argv, &s->api_port);
  assert_true(s->api > 0);
  snprintf(kubeconfig, len, "%s/kubeconfig", s->env.dir);
  FILE *f = fopen(kubeconfig, "w");
  fprintf(f,
          "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: "
          "http://127.0.0.1:%d\nusers:\n- name: u\n  user:\n    token: %s\ncontexts:\n- name: x\n"
          "  context:\n    cluster: c\n    user: u\ncurrent-context: x\n",
          s->api_port, TOKEN);
  fclose(f);
}

/* One request to the fake API server through curl(1)-free C: the test's
 * own tiny HTTP client is the project's k8s client. */
long http_call(int port, const char *token, const char *method, const char *path, const char *body,
               char *out, size_t len) {
  char server[64];
  snprintf(server, sizeof(server), "http://127.0.0.1:%d", port);
  struct vg_k8s_config kc = {.server = server, .token = (char *)token};
  struct vg_err err;
  struct vg_k8s_client *c = vg_k8s_client_new(&kc, &err);
  assert_non_null(c);
  struct vg_k8s_response r;
  if (vg_k8s_request(c, method, path, "application/json", body, &r, &err) != 0)
    fail_msg("%s %s: %s", method, path, err.msg);
  long status = r.status;
  if (out != NULL) snprintf(out, len, "%s", r.body != NULL ? r.body : "");
  vg_k8s_response_free(&r);
  vg_k8s_client_free(c);
  return status;
}

long api(struct setup *s, const char *method, const char *path, const char *body, char *out,
         size_t len) {
  return http_call(s->api_port, TOKEN, method, path, body, out, len);
}

/* The two GPUs' UUIDs from a devices answer (the sorted IDs of GPU 0 come first). */
void two_uuids(const char *json, char *u0, char *u1, size_t len) {
  const char *p = strstr(json, "\"GPU-");
  assert_non_null(p);
  const char *end = strstr(p, "::");
  snprintf(u0, len, "%.*s", (int)(end - p - 1), p + 1);
  for (p = strstr(p + 1, "\"GPU-"); p != NULL; p = strstr(p + 1, "\"GPU-"))
    if (strncmp(p + 1, u0, strlen(u0)) != 0) break;
  assert_non_null(p);
  end = strstr(p, "::");
  snprintf(u1, len, "%.*s", (int)(end - p - 1), p + 1);
}

/* The slot's mounts in an Allocate answer (docs/device-plugin.md): the slot
 * directory read-only, the region file alone read-write over it, and every
 * mount under /usr/local/vgpu after the slot's (parents first) with its
 * mount point already in the slot directory, of the right kind and no link:
 * runc cannot create one inside the read-only mount. */
static void check_slot_mounts(const char *r, const char *slot) {
  char want[1400];
  snprintf(want, sizeof(want),
           "{\"container_path\": \"/usr/local/vgpu\", \"host_path\": \"%s\", \"read_only\": true}",
           slot);
  const char *top = strstr(r, want);
  if (top == NULL) fail_msg("no read-only slot mount %s in %s", want, r);
  snprintf(want, sizeof(want),
           "{\"container_path\": \"/usr/local/vgpu/region.cache\", \"host_path\": "
           "\"%s/region.cache\", \"read_only\": false}",
           slot);
  if (strstr(r, want) == NULL) fail_msg("no read-write region mount %s in %s", want, r);
  static const char under[] = "\"container_path\": \"/usr/local/vgpu/";
  int n = 0;
  for (const char *m = strstr(r, under); m != NULL; m = strstr(m + 1, under), n++) {
    if (m < top) fail_msg("a mount under the slot before the slot's own: %s", r);
    const char *name = m + strlen(under);
    char path[1400];
    snprintf(path, sizeof(path), "%s/%.*s", slot, (int)(strchr(name, '"') - name), name);
    struct stat st;
    if (lstat(path, &st) != 0) fail_msg("mount point %s missing: %s", path, strerror(errno));
    bool dir = strncmp(name, "grant\"", 6) == 0;
    if (dir ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode))
      fail_msg("mount point %s is not a %s (mode %o)", path, dir ? "directory" : "file",
               (unsigned)st.st_mode);
  }
  if (n < 3) fail_msg("region, grant and library not all mounted under the slot: %s", r);
}

void region_from(const char *r, struct region_view *v) {
  const char key[] = "{\"container_path\": \"/usr/local/vgpu\", \"host_path\": \"";
  const char *p = strstr(r, key);
  assert_non_null(p);
  p += strlen(key);
  char slot[600], path[620];
  snprintf(slot, sizeof(slot), "%.*s", (int)(strchr(p, '"') - p), p);
  check_slot_mounts(r, slot);
  snprintf(path, sizeof(path), "%s/region.cache", slot);
  struct vg_shm shm;
  struct vg_err err;
  if (vg_shm_open_readonly(&shm, path, &vg_region_spec, &err) != 0) fail_msg("%s", err.msg);
  const struct vg_region *reg = vg_region_of(&shm);
  memset(v, 0, sizeof(*v));
  v->pending = vg_region_pending(reg);
  v->ndev = reg->device_count;
  for (unsigned i = 0; i < 4 && i < reg->device_count; i++) {
    snprintf(v->uuid[i], sizeof(v->uuid[i]), "%s", reg->dev[i].uuid);
    v->limit[i] = reg->dev[i].mem_limit;
    v->sm[i] = reg->dev[i].sm_limit;
  }
  vg_shm_close(&shm);
  /* The grant directory is mounted read-only over the slot's mount. */
  char want[800], dir[620];
  snprintf(dir, sizeof(dir), "%.*s/grant", (int)(strchr(p, '"') - p), p);
  snprintf(want, sizeof(want),
           "{\"container_path\": \"/usr/local/vgpu/grant\", \"host_path\": \"%s\", "
           "\"read_only\": true}",
           dir);
  if (strstr(r, want) == NULL) fail_msg("no read-only grant mount %s in %s", want, r);
  v->grant_rc = vg_grant_load(dir, &v->grant, &err);
  if (v->grant_rc < 0) fail_msg("%s", err.msg);
}

const char *registered(struct setup *s, int n, const char *resource) {
  const char *r = fake(s, "registrations %d 5", n);
  assert_non_null(strstr(r, "\"ok\": true"));
  char want[400];
  snprintf(want, sizeof(want), "\"resource_name\": \"%s\"", resource);
  assert_non_null(strstr(r, want));
  return r;
}

void start_node(struct setup *s, char *kubeconfig, size_t len, const char *slots) {
  start_node_with(s, kubeconfig, len, EXAMPLE("vgpu"), "nvidia.com/vgpu", slots);
}

void start_node_with(struct setup *s, char *kubeconfig, size_t len, const char *config,
                     const char *resource, const char *slots) {
  start_api(s, kubeconfig, len);
  assert_true(api(s, "POST", "/_test/nodes", "{\"metadata\":{\"name\":\"node1\"}}", NULL, 0) < 300);
  snprintf(s->pr_socket, sizeof(s->pr_socket), "%s/pod-resources.sock", s->env.dir);
  start_fake(s, false);
  char *argv[32] = {(char *)vg_build_path("bin/vgpu-device-plugin"),
                    "--config",
                    (char *)config,
                    "--plugin-dir",
                    s->plugin_dir,
                    "--state-dir",
                    s->state_dir,
                    "--library",
                    "/opt/vgpu/libvgpu.so",
                    "--kubeconfig",
                    kubeconfig,
                    "--node-name",
                    "node1",
                    "--podresources-socket",
                    s->pr_socket};
  int n = 15;
  if (slots != NULL) argv[n++] = "--slots", argv[n++] = (char *)slots;
  for (int i = 0; i < 8 && s->extra_args[i] != NULL; i++) argv[n++] = (char *)s->extra_args[i];
  argv[n] = NULL;
  s->plugin = vg_spawn(&s->env, argv);
  assert_true(s->plugin > 0);
  registered(s, 1, resource);
  assert_non_null(strstr(fake(s, "devices 1 5"), "\"ok\": true"));
}
