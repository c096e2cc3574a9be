/* test_region.c -- the region file: creation, refusal of foreign, corrupt
 * and other-version files, exact reservations, reaping of dead processes,
 * and recovery when a process dies holding the region lock. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "region.h"

#define MiB (1ULL << 20)

static char g_path[256];

static int setup(void **s) {
  (void)s;
  snprintf(g_path, sizeof(g_path), "/tmp/vgpu-region-test-%d.cache", (int)getpid());
  unlink(g_path);
  return 0;
}

static int teardown(void **s) {
  (void)s;
  unlink(g_path);
  return 0;
}

static void test_create_and_reopen(void **s) {
  (void)s;
  struct vg_shm a, b;
  struct vg_err err;
  assert_int_equal(vg_region_open(&a, g_path, &err), 0);
  assert_true(a.created);
  assert_int_equal(vg_region_open(&b, g_path, &err), 0);
  assert_false(b.created);
  vg_region_lock(&a);
  int dev = vg_region_device_locked(&a, "GPU-test", 1ULL << 30);
  vg_region_unlock(&a);
  assert_int_equal(dev, 0);
  assert_string_equal(vg_region_of(&b)->dev[0].uuid, "GPU-test");
  vg_shm_close(&a);
  vg_shm_close(&b);
}

static void expect_refused(const char *content, size_t len, const char *reason) {
  int fd = open(g_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  assert_int_equal(write(fd, content, len), (ssize_t)len);
  close(fd);
  struct vg_shm shm;
  struct vg_err err;
  assert_int_equal(vg_region_open(&shm, g_path, &err), -1);
  if (strstr(err.msg, reason) == NULL || strstr(err.msg, g_path) == NULL)
    fail_msg("message '%s' lacks '%s'", err.msg, reason);
}

static void test_foreign_and_corrupt(void **s) {
  (void)s;
  expect_refused("hello\n", 6, "not a vgpu region file");
  /* our magic, wrong size: truncated */
  struct vg_shm_header h = {.magic = VG_REGION_MAGIC, .version_major = VG_REGION_VERSION_MAJOR};
  expect_refused((const char *)&h, sizeof(h), "corrupt");
  /* our magic, another major version */
  h.version_major = VG_REGION_VERSION_MAJOR + 1;
  expect_refused((const char *)&h, sizeof(h), "layout version");
  /* right size, garbage magic */
  size_t size = sizeof(struct vg_region);
  char *junk = calloc(1, size);
  memcpy(junk, "garbage!", 8);
  expect_refused(junk, size, "not a vgpu region file");
  free(junk);
}

static void test_reserve_is_exact(void **s) {
  (void)s;
  struct vg_shm shm;
  struct vg_err err;
  assert_int_equal(vg_region_open(&shm, g_path, &err), 0);
  int slot = vg_region_join(&shm, getpid());
  assert_true(slot >= 0);
  vg_region_lock(&shm);
  int dev = vg_region_device_locked(&shm, "GPU-x", 0);
  vg_region_unlock(&shm);
  assert_int_equal(vg_region_set_mem_limit(&shm, dev, 100 * MiB, &err), 0);
  assert_true(vg_region_reserve(&shm, slot, dev, 60 * MiB));
  assert_false(vg_region_reserve(&shm, slot, dev, 41 * MiB));
  assert_true(vg_region_reserve(&shm, slot, dev, 40 * MiB));
  assert_int_equal(vg_region_mem_used(vg_region_of(&shm), dev), 100 * MiB);
  assert_int_equal(vg_region_set_mem_limit(&shm, dev, 50 * MiB, &err), -1);
  assert_non_null(strstr(err.msg, "in use"));
  vg_region_release(&shm, slot, dev, 100 * MiB);
  assert_int_equal(vg_region_mem_used(vg_region_of(&shm), dev), 0);
  vg_region_leave(&shm, slot);
  vg_shm_close(&shm);
}

/* A child joins, reserves, and is killed; optionally while holding the lock
 * half-way through an update. The parent must get everything back. */
static void child_dies(bool holding_lock) {
  pid_t pid = fork();
  if (pid == 0) {
    struct vg_shm shm;
    struct vg_err err;
    if (vg_region_open(&shm, g_path, &err) != 0) _exit(1);
    int slot = vg_region_join(&shm, getpid());
    vg_region_reserve(&shm, slot, 0, 30 * MiB);
    if (holding_lock) {
      vg_region_lock(&shm);
      struct vg_region *r = vg_region_of(&shm);
      r->dev[0].mem_used += 7 * MiB; /* half an update: total changed, slot not */
    }
    raise(SIGKILL);
  }
  int status;
  waitpid(pid, &status, 0);
  assert_true(WIFSIGNALED(status));
}

static void test_dead_processes_reaped(void **s) {
  (void)s;
  for (int holding = 0; holding <= 1; holding++) {
    unlink(g_path);
    struct vg_shm shm;
    struct vg_err err;
    assert_int_equal(vg_region_open(&shm, g_path, &err), 0);
    vg_region_lock(&shm);
    vg_region_device_locked(&shm, "GPU-x", 0);
    vg_region_unlock(&shm);
    assert_int_equal(vg_region_set_mem_limit(&shm, 0, 50 * MiB, &err), 0);
    child_dies(holding);
    int slot = vg_region_join(&shm, getpid()); /* locks: repairs and reaps */
    assert_true(slot >= 0);
    assert_int_equal(vg_region_mem_used(vg_region_of(&shm), 0), 0);
    assert_true(vg_region_reserve(&shm, slot, 0, 50 * MiB));
    vg_shm_close(&shm);
  }
}

static void test_join_and_leave(void **s) {
  (void)s;
  struct vg_shm shm;
  struct vg_err err;
  assert_int_equal(vg_region_open(&shm, g_path, &err), 0);
  assert_false(vg_region_joined(vg_region_of(&shm)));
  /* Our own slot counts as alive although F_GETLK cannot see our lock. */
  int first = vg_region_join(&shm, getpid());
  assert_true(first >= 0);
  assert_true(vg_shm_slot_alive(&shm, (unsigned)first));
  vg_region_leave(&shm, first);
  assert_int_equal(vg_region_of(&shm)->proc[first].pid, 0);
  /* The node agent's audit still sees that libvgpu once ran here. */
  assert_true(vg_region_joined(vg_region_of(&shm)));
  vg_shm_close(&shm);
}

/* A mutex that fails to lock gives no exclusion: reservations must fail. */
static void test_corrupt_mutex_fails_closed(void **s) {
  (void)s;
  struct vg_shm shm;
  struct vg_err err;
  assert_int_equal(vg_region_open(&shm, g_path, &err), 0);
  int slot = vg_region_join(&shm, getpid());
  assert_true(slot >= 0);
  assert_int_equal(vg_region_lock(&shm), 0);
  vg_region_device_locked(&shm, "GPU-x", 0);
  vg_region_unlock(&shm);
  memset(&vg_region_of(&shm)->lock, 0xff, sizeof(vg_region_of(&shm)->lock));
  assert_int_equal(vg_region_lock(&shm), -1);
  assert_false(vg_region_reserve(&shm, slot, 0, 1));
  assert_int_equal(vg_region_set_mem_limit(&shm, 0, 10, &err), -1);
  assert_non_null(strstr(err.msg, "unusable"));
  vg_shm_close(&shm);
}

/* No limit is no licence to wrap the counters. */
static void test_reserve_cannot_overflow(void **s) {
  (void)s;
  struct vg_shm shm;
  struct vg_err err;
  assert_int_equal(vg_region_open(&shm, g_path, &err), 0);
  int slot = vg_region_join(&shm, getpid());
  assert_int_equal(vg_region_lock(&shm), 0);
  int dev = vg_region_device_locked(&shm, "GPU-x", 0);
  vg_region_unlock(&shm);
  assert_true(vg_region_reserve(&shm, slot, dev, 100 * MiB));
  assert_false(vg_region_reserve(&shm, slot, dev, UINT64_MAX));
  assert_int_equal(vg_region_mem_used(vg_region_of(&shm), dev), 100 * MiB);
  vg_shm_close(&shm);
}

/* The node agent's hand-over (set_pending, either way) marks the region as
 * the container's assignment for good; a region nobody handed over is not. */
static void test_pending_marks_assigned(void **s) {
  (void)s;
  struct vg_shm shm;
  struct vg_err err;
  assert_int_equal(vg_region_open(&shm, g_path, &err), 0);
  struct vg_region *r = vg_region_of(&shm);
  assert_false(vg_region_assigned(r));
  assert_int_equal(vg_region_lock(&shm), 0);
  assert_int_equal(vg_region_device_locked(&shm, "GPU-a", 0), 0);
  assert_int_equal(vg_region_device_locked(&shm, "GPU-b", 0), 1);
  vg_region_unlock(&shm);
  assert_int_equal(vg_region_find_device(r, "GPU-b"), 1);
  assert_int_equal(vg_region_find_device(r, "GPU-c"), -1);
  vg_region_set_pending(&shm, true);
  assert_true(vg_region_assigned(r) && vg_region_pending(r));
  vg_region_set_pending(&shm, false);
  assert_true(vg_region_assigned(r) && !vg_region_pending(r));
  vg_shm_close(&shm);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_pending_marks_assigned, setup, teardown),
      cmocka_unit_test_setup_teardown(test_create_and_reopen, setup, teardown),
      cmocka_unit_test_setup_teardown(test_foreign_and_corrupt, setup, teardown),
      cmocka_unit_test_setup_teardown(test_reserve_is_exact, setup, teardown),
      cmocka_unit_test_setup_teardown(test_dead_processes_reaped, setup, teardown),
      cmocka_unit_test_setup_teardown(test_join_and_leave, setup, teardown),
      cmocka_unit_test_setup_teardown(test_corrupt_mutex_fails_closed, setup, teardown),
      cmocka_unit_test_setup_teardown(test_reserve_cannot_overflow, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
