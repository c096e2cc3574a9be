/* test_region_hostile.c -- what a container can do to its own region file
 * (it can write the file and its slot directory) must not make anyone wait
 * without end, nor make the node agent follow a link or reuse a forged
 * file: a forged lock owner, a flock held for ever, a symbolic link, a
 * FIFO, a hard link, a file truncated under a reader (docs/security.md). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "region.h"

static char g_dir[256], g_path[300], g_host[300];

static int setup(void **s) {
  (void)s;
  snprintf(g_dir, sizeof(g_dir), "/tmp/vgpu-hostile-%d", (int)getpid());
  mkdir(g_dir, 0755);
  snprintf(g_path, sizeof(g_path), "%s/%s", g_dir, VG_REGION_FILE);
  snprintf(g_host, sizeof(g_host), "%s.host", g_dir); /* outside the slot: "a host file" */
  return 0;
}

static int teardown(void **s) {
  (void)s;
  char cmd[600];
  snprintf(cmd, sizeof(cmd), "rm -rf '%s' '%s'", g_dir, g_host);
  return system(cmd) == 0 ? 0 : -1;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void reap(pid_t pid) {
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
}

static void test_forged_owner_times_out(void **s) {
  (void)s;
  struct vg_shm shm;
  struct vg_err err;
  assert_int_equal(vg_region_open(&shm, g_path, &err), 0);
  pid_t owner = vg_live_pid();
  vg_forge_region_lock(&shm, owner);
  shm.lock_wait_ms = 150;
  double t0 = now_s();
  assert_int_equal(vg_region_lock(&shm), VG_SHM_LOCK_TIMEDOUT);
  double waited = now_s() - t0;
  assert_true(waited >= 0.14 && waited < 2.0);
  assert_int_equal(shm.last_lock, VG_SHM_LOCK_TIMEDOUT);
  /* Every locking operation fails closed and says why. */
  assert_false(vg_region_reserve(&shm, 0, 0, 1));
  assert_int_equal(vg_region_set_sm_limit(&shm, 0, 30, &err), -1);
  assert_non_null(strstr(err.msg, "held past the deadline"));
  assert_int_equal(vg_region_set_mem_limit(&shm, 0, 1 << 20, &err), -1);
  assert_non_null(strstr(err.msg, g_path));
  /* A wait of 0 gives up at once: the agent's answer to a region it
   * already found forged. */
  shm.lock_wait_ms = 0;
  t0 = now_s();
  assert_int_equal(vg_region_lock(&shm), VG_SHM_LOCK_TIMEDOUT);
  assert_true(now_s() - t0 < 0.05);
  reap(owner);
  vg_shm_close(&shm);
}

static void test_flock_held_for_ever_times_out(void **s) {
  (void)s;
  struct vg_shm shm;
  struct vg_err err;
  assert_int_equal(vg_region_open(&shm, g_path, &err), 0);
  vg_shm_close(&shm);
  int ready[2];
  assert_int_equal(pipe(ready), 0);
  pid_t holder = fork();
  if (holder == 0) {
    int fd = open(g_path, O_RDWR);
    flock(fd, LOCK_EX);
    (void)!write(ready[1], "x", 1);
    pause();
    _exit(0);
  }
  char c;
  assert_int_equal(read(ready[0], &c, 1), 1);
  double t0 = now_s();
  assert_int_equal(vg_region_open(&shm, g_path, &err), -1);
  double waited = now_s() - t0;
  assert_true(waited >= VG_SHM_LOCK_WAIT_MS / 1000.0 - 0.1 &&
              waited < VG_SHM_LOCK_WAIT_MS / 1000.0 + 3);
  assert_non_null(strstr(err.msg, "flock"));
  assert_non_null(strstr(err.msg, g_path));
  /* The agent's open takes no flock: it does not wait at all. */
  t0 = now_s();
  assert_int_equal(vg_region_open_slot(&shm, g_dir, false, &err), 0);
  assert_true(now_s() - t0 < 0.5);
  vg_shm_close(&shm);
  reap(holder);
  close(ready[0]);
  close(ready[1]);
}

static void write_host_file(const char *text) {
  FILE *f = fopen(g_host, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

static void assert_host_file(const char *text) {
  char buf[256] = "";
  FILE *f = fopen(g_host, "r");
  assert_non_null(f);
  size_t n = fread(buf, 1, sizeof(buf) - 1, f);
  fclose(f);
  buf[n] = '\0';
  assert_string_equal(buf, text);
  struct stat st;
  assert_int_equal(stat(g_host, &st), 0);
  assert_int_equal(st.st_mode & 0777, 0644 & ~0022 & 0777);
}

static void test_symlink_never_followed(void **s) {
  (void)s;
  struct vg_shm shm;
  struct vg_err err;
  /* An empty host file: an opener that followed the link would size it
   * and write a region into it. */
  write_host_file("");
  umask(022);
  chmod(g_host, 0644);
  assert_int_equal(symlink(g_host, g_path), 0);
  assert_int_equal(vg_region_open_slot(&shm, g_dir, false, &err), -1);
  assert_non_null(strstr(err.msg, "symbolic link"));
  assert_int_equal(vg_region_open_slot(&shm, g_dir, true, &err), -1);
  assert_host_file("");
  /* Allocate's fresh region replaces the link, and the host file stays. */
  assert_int_equal(vg_region_create_slot(&shm, g_dir, &err), 0);
  vg_shm_close(&shm);
  struct stat st;
  assert_int_equal(lstat(g_path, &st), 0);
  assert_true(S_ISREG(st.st_mode));
  assert_int_equal(st.st_mode & 0777, VG_REGION_MODE);
  assert_host_file("");
  /* A link to a host path that does not exist is not created either. */
  unlink(g_host);
  unlink(g_path);
  assert_int_equal(symlink(g_host, g_path), 0);
  assert_int_equal(vg_region_open_slot(&shm, g_dir, false, &err), -1);
  assert_int_equal(access(g_host, F_OK), -1);
}

static void test_fifo_and_hard_link_refused(void **s) {
  (void)s;
  struct vg_shm shm;
  struct vg_err err;
  assert_int_equal(mkfifo(g_path, 0666), 0);
  double t0 = now_s();
  assert_int_equal(vg_region_open_slot(&shm, g_dir, true, &err), -1); /* no hang */
  assert_non_null(strstr(err.msg, "not a regular file"));
  assert_int_equal(vg_shm_open_readonly(&shm, g_path, &vg_region_spec, &err), -1);
  assert_true(now_s() - t0 < 1.0);
  unlink(g_path);
  assert_int_equal(vg_region_create_slot(&shm, g_dir, &err), 0);
  vg_shm_close(&shm);
  char other[400];
  snprintf(other, sizeof(other), "%s/other", g_dir);
  assert_int_equal(link(g_path, other), 0);
  assert_int_equal(vg_region_open_slot(&shm, g_dir, false, &err), -1);
  assert_non_null(strstr(err.msg, "links"));
}

static void test_create_replaces_forged_file(void **s) {
  (void)s;
  struct vg_shm shm, fresh;
  struct vg_err err;
  assert_int_equal(vg_region_create_slot(&shm, g_dir, &err), 0);
  pid_t owner = vg_live_pid();
  vg_forge_region_lock(&shm, owner);
  vg_region_of(&shm)->dev[0].mem_limit = 1; /* and forged limits */
  /* Allocate of the same IDs: a new file, nothing of the old one kept, and
   * its lock free at once. */
  assert_int_equal(vg_region_create_slot(&fresh, g_dir, &err), 0);
  assert_true(fresh.created);
  assert_int_equal(vg_region_lock(&fresh), VG_SHM_LOCKED);
  vg_region_unlock(&fresh);
  assert_int_equal(vg_region_of(&fresh)->dev[0].mem_limit, 0);
  vg_shm_close(&fresh);
  assert_int_equal(vg_region_open_slot(&fresh, g_dir, false, &err), 0);
  assert_int_equal(vg_region_lock(&fresh), VG_SHM_LOCKED);
  vg_region_unlock(&fresh);
  vg_shm_close(&fresh);
  reap(owner);
  vg_shm_close(&shm);
}

static void test_truncated_under_reader(void **s) {
  (void)s;
  struct vg_shm shm, ro;
  struct vg_err err;
  assert_int_equal(vg_region_create_slot(&shm, g_dir, &err), 0);
  vg_region_lock(&shm);
  vg_region_device_locked(&shm, "GPU-trunc", 1ULL << 30);
  vg_region_unlock(&shm);
  assert_int_equal(vg_region_open_slot(&ro, g_dir, true, &err), 0);
  vg_shm_close(&shm);
  /* The container truncates the file: a shared mapping would now kill its
   * reader with SIGBUS on the next read of the body. */
  assert_int_equal(truncate(g_path, 0), 0);
  const struct vg_region *r = vg_region_of(&ro);
  uint64_t sum = 0;
  for (int i = 0; i < VG_MAX_PROCS; i++) sum += r->proc[i].mem_used[0];
  assert_int_equal(sum, 0);
  assert_string_equal(r->dev[0].uuid, "GPU-trunc");
  vg_shm_close(&ro);
  assert_int_equal(vg_region_open_slot(&ro, g_dir, true, &err), -1);
  assert_non_null(strstr(err.msg, "region file"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_forged_owner_times_out, setup, teardown),
      cmocka_unit_test_setup_teardown(test_flock_held_for_ever_times_out, setup, teardown),
      cmocka_unit_test_setup_teardown(test_symlink_never_followed, setup, teardown),
      cmocka_unit_test_setup_teardown(test_fifo_and_hard_link_refused, setup, teardown),
      cmocka_unit_test_setup_teardown(test_create_replaces_forged_file, setup, teardown),
      cmocka_unit_test_setup_teardown(test_truncated_under_reader, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
