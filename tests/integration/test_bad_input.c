/* test_bad_input.c -- malformed limits stop GPU work with a message naming
 * the variable and the value; a foreign or corrupt region file is refused
 * (and left untouched) while limits still hold for the process. */
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"
#include "region.h"

static struct vg_run run;

static void expect_refused(const char *name, const char *value, const char *reason) {
  struct vg_env env;
  env_preloaded(&env);
  vg_env_set(&env, name, value);
  run_probe(&env, &run, "alloc", "mem", "8m", "4", NULL);
  assert_int_equal(run.status, 3); /* cuInit failed */
  assert_int_equal(json_num(run.out, "rc"), 1);
  char expect[256];
  snprintf(expect, sizeof(expect), "%s=%s", name, value);
  if (strstr(run.err, expect) == NULL || strstr(run.err, reason) == NULL)
    fail_msg("stderr lacks '%s' / '%s': %s", expect, reason, run.err);
  vg_env_cleanup(&env);
}

static void test_letters(void **s) {
  (void)s;
  expect_refused("CUDA_DEVICE_MEMORY_LIMIT", "abc", "must start with a digit");
}
static void test_negative(void **s) {
  (void)s;
  expect_refused("CUDA_DEVICE_MEMORY_LIMIT_0", "-5", "must start with a digit");
}
static void test_bad_unit(void **s) {
  (void)s;
  expect_refused("CUDA_DEVICE_MEMORY_LIMIT", "1Gx", "unknown unit 'Gx'");
}
static void test_overflow(void **s) {
  (void)s;
  expect_refused("CUDA_DEVICE_MEMORY_LIMIT", "99999999999999999999", "too large");
  expect_refused("CUDA_DEVICE_MEMORY_LIMIT", "17179869184g", "too large");
}
static void test_sm_range(void **s) {
  (void)s;
  expect_refused("CUDA_DEVICE_SM_LIMIT", "101", "0 to 100");
}
static void test_bad_index(void **s) {
  (void)s;
  expect_refused("CUDA_DEVICE_MEMORY_LIMIT_x", "1g", "device index");
}

/* A malformed VGPU_LOG_LEVEL is named once and the default applies: the
 * limit still holds (logging is no reason to stop the program). */
static void test_bad_log_level(void **s) {
  (void)s;
  struct vg_env env;
  env_preloaded(&env);
  vg_env_set(&env, "VGPU_LOG_LEVEL", "loud");
  vg_env_set(&env, "CUDA_DEVICE_MEMORY_LIMIT", "16m");
  run_probe(&env, &run, "alloc", "mem", "8m", "4", NULL);
  if (strstr(run.err, "VGPU_LOG_LEVEL=loud is not error, warn, info, debug or 0-3") == NULL)
    fail_msg("stderr lacks the VGPU_LOG_LEVEL warning: %s", run.err);
  assert_int_equal(json_num(run.out, "allocated"), 2); /* 2 x 8 MiB, then the limit */
  vg_env_cleanup(&env);
}

static void write_file(const char *path, const char *text, size_t len) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  assert_true(fd >= 0);
  assert_int_equal(write(fd, text, len), (ssize_t)len);
  close(fd);
}

static void test_foreign_region_file(void **s) {
  (void)s;
  struct vg_env env;
  env_preloaded(&env);
  const char text[] = "precious data that is not a region file\n";
  write_file(env.cache, text, sizeof(text) - 1);
  vg_env_set(&env, "CUDA_DEVICE_MEMORY_LIMIT", "64m");
  run_probe(&env, &run, "alloc", "mem", "8m", "100", NULL);
  assert_non_null(strstr(run.err, "not a vgpu region file"));
  assert_int_equal(json_num(run.out, "allocated"), 8); /* still limited, per process */
  char back[128] = {0};
  int fd = open(env.cache, O_RDONLY);
  assert_int_equal(read(fd, back, sizeof(back)), (ssize_t)(sizeof(text) - 1));
  close(fd);
  assert_string_equal(back, text);
  vg_env_cleanup(&env);
}

static void test_corrupt_same_size(void **s) {
  (void)s;
  struct vg_env env;
  env_preloaded(&env);
  vg_env_set(&env, "CUDA_DEVICE_MEMORY_LIMIT", "64m");
  run_probe(&env, &run, "alloc", "mem", "8m", "1", NULL); /* creates the file */
  int fd = open(env.cache, O_WRONLY);
  assert_int_equal(pwrite(fd, "garbage!", 8, 0), 8); /* smash the magic */
  close(fd);
  run_probe(&env, &run, "alloc", "mem", "8m", "100", NULL);
  assert_non_null(strstr(run.err, "not a vgpu region file"));
  assert_int_equal(json_num(run.out, "allocated"), 8);
  vg_env_cleanup(&env);
}

/* Every process slot of the region taken by one live process: a newcomer
 * can account nothing, so it must fail its allocations, not run unlimited. */
static void test_full_process_table_fails_closed(void **s) {
  (void)s;
  struct vg_env env;
  env_preloaded(&env);
  vg_env_set(&env, "CUDA_DEVICE_MEMORY_LIMIT", "64m");
  int ready[2];
  assert_int_equal(pipe(ready), 0);
  pid_t filler = fork();
  if (filler == 0) {
    struct vg_shm shm;
    struct vg_err err;
    if (vg_region_open(&shm, env.cache, &err) != 0) _exit(1);
    /* Look, to everyone else, like VG_MAX_PROCS live processes. */
    struct vg_region *r = vg_region_of(&shm);
    for (unsigned i = 0; i < VG_MAX_PROCS; i++) {
      if (vg_shm_claim_slot(&shm, i) != 0) _exit(1);
      r->proc[i].pid = getpid();
    }
    if (write(ready[1], "x", 1) != 1) _exit(1);
    pause();
    _exit(0);
  }
  close(ready[1]);
  char x;
  assert_int_equal(read(ready[0], &x, 1), 1); /* fails rather than hangs if the filler dies */
  run_probe(&env, &run, "alloc", "mem", "8m", "4", NULL);
  assert_int_equal(json_num(run.out, "allocated"), 0);
  assert_int_equal(json_num(run.out, "last_rc"), 2);
  assert_non_null(strstr(run.err, "no free process slot"));
  kill(filler, SIGKILL);
  waitpid(filler, NULL, 0);
  /* and once the filler is gone, its slots are reaped and work resumes */
  run_probe(&env, &run, "alloc", "mem", "8m", "4", NULL);
  assert_int_equal(json_num(run.out, "allocated"), 4);
  close(ready[0]);
  vg_env_cleanup(&env);
}

/* A failed huge request on a device without a limit must not wrap the
 * counters and wipe what others hold. */
static void test_huge_request_keeps_accounting(void **s) {
  (void)s;
  struct vg_env env;
  env_preloaded(&env);
  pid_t holder = spawn_probe(&env, "hold", "100m", "30", NULL, NULL, NULL);
  wait_used(&env, 100 * MiB);
  run_probe(&env, &run, "alloc", "mem", "18446744073709551615", "1", NULL);
  assert_int_equal(json_num(run.out, "allocated"), 0);
  assert_int_equal(region_used(&env, NULL), 100 * MiB);
  kill(holder, SIGKILL);
  waitpid(holder, NULL, 0);
  vg_env_cleanup(&env);
}

/* Every device entry of the region taken by other GPUs: this process's GPU
 * cannot be accounted, so its allocations fail instead of going unlimited. */
static void test_unaccountable_device_fails_closed(void **s) {
  (void)s;
  struct vg_env env;
  env_preloaded(&env);
  vg_env_set(&env, "CUDA_DEVICE_MEMORY_LIMIT", "64m");
  struct vg_shm shm;
  struct vg_err err;
  assert_int_equal(vg_region_open(&shm, env.cache, &err), 0);
  assert_int_equal(vg_region_lock(&shm), 0);
  for (int i = 0; i < VG_MAX_DEVICES; i++) {
    char uuid[64];
    snprintf(uuid, sizeof(uuid), "GPU-other-%d", i);
    assert_true(vg_region_device_locked(&shm, uuid, 0) >= 0);
  }
  vg_region_unlock(&shm);
  vg_shm_close(&shm);
  run_probe(&env, &run, "alloc", "mem", "8m", "4", NULL);
  assert_int_equal(json_num(run.out, "allocated"), 0);
  assert_int_equal(json_num(run.out, "last_rc"), 2);
  assert_non_null(strstr(run.err, "cannot be accounted"));
  vg_env_cleanup(&env);
}

/* A tenant forges its region's lock (a live PID as the owner, as 16 bytes
 * of dd do): after the lock's deadline, an allocation fails and a kernel
 * launch under a compute limit is refused with CUDA_ERROR_NOT_PERMITTED,
 * naming the lock -- never run uncharged (docs/security.md). */
static void test_forged_lock_fails_closed(void **s) {
  (void)s;
  struct vg_env env;
  env_preloaded(&env);
  vg_env_set(&env, "CUDA_DEVICE_MEMORY_LIMIT", "64m");
  vg_env_set(&env, "CUDA_DEVICE_SM_LIMIT", "30");
  run_probe(&env, &run, "alloc", "mem", "8m", "1", NULL);
  assert_int_equal(json_num(run.out, "allocated"), 1);
  pid_t owner = vg_live_pid();
  struct vg_shm shm;
  struct vg_err err;
  assert_int_equal(vg_region_open(&shm, env.cache, &err), 0);
  vg_forge_region_lock(&shm, owner);
  vg_shm_close(&shm);
  run_probe(&env, &run, "launch", "kernel", "1", NULL, NULL);
  assert_int_equal(run.status, 3);
  assert_int_equal(json_num(run.out, "rc"), 800); /* CUDA_ERROR_NOT_PERMITTED */
  if (strstr(run.err, "held past the deadline") == NULL ||
      strstr(run.err, "refusing kernel launches") == NULL)
    fail_msg("stderr does not name the lock: %s", run.err);
  kill(owner, SIGKILL);
  waitpid(owner, NULL, 0);
  vg_env_cleanup(&env);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_forged_lock_fails_closed),
      cmocka_unit_test(test_letters),
      cmocka_unit_test(test_negative),
      cmocka_unit_test(test_bad_unit),
      cmocka_unit_test(test_overflow),
      cmocka_unit_test(test_sm_range),
      cmocka_unit_test(test_bad_index),
      cmocka_unit_test(test_bad_log_level),
      cmocka_unit_test(test_foreign_region_file),
      cmocka_unit_test(test_corrupt_same_size),
      cmocka_unit_test(test_full_process_table_fails_closed),
      cmocka_unit_test(test_huge_request_keeps_accounting),
      cmocka_unit_test(test_unaccountable_device_fails_closed),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
