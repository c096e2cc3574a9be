/*
 * harness.h -- helpers for tests that run programs the way users do.
 *
 * Most vgpu behaviour only exists across processes: a program with libvgpu
 * preloaded, talking to the simulated driver, sharing a region file with its
 * neighbours. These helpers build such an environment in a fresh temporary
 * directory (its own simulated GPU state and region file) and run programs in
 * it, capturing their output.
 */
#ifndef VG_HARNESS_H
#define VG_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "shmfile.h"

#define VG_ENV_MAX 64

struct vg_env {
  char dir[256];   /* temporary directory of this test environment */
  char cache[320]; /* region file path (CUDA_DEVICE_MEMORY_SHARED_CACHE) */
  char state[320]; /* simulator state path (VGPU_SIM_STATE) */
  char *vars[VG_ENV_MAX + 1];
  int nvars;
};

struct vg_run {
  int status; /* exit code, or 128+signal */
  char out[65536];
  char err[65536];
};

/* Build directory (VGPU_BUILD_DIR or the compiled-in default). */
const char *vg_build_dir(void);
/* Path of a build product, e.g. vg_build_path("lib/libvgpu.so"). */
const char *vg_build_path(const char *relative);

/* New environment: temp dir, fresh sim state and region paths, the sim on
 * LD_LIBRARY_PATH. preload: also LD_PRELOAD libvgpu.so. */
void vg_env_init(struct vg_env *env, bool preload);
/* Adds or replaces NAME=VALUE. */
void vg_env_set(struct vg_env *env, const char *name, const char *value);
void vg_env_unset(struct vg_env *env, const char *name);
void vg_env_cleanup(struct vg_env *env);

/* Runs argv (argv[0] a path) in env and waits; returns run->status. */
int vg_run(const struct vg_env *env, char *const argv[], struct vg_run *run);
/* Starts argv in env with stdout/stderr to files in env->dir; returns pid. */
pid_t vg_spawn(const struct vg_env *env, char *const argv[]);
/* What the spawned process pid has written to stdout so far. */
void vg_spawn_output(const struct vg_env *env, pid_t pid, char *buf, size_t len);
/* The same for its stderr. */
void vg_spawn_errors(const struct vg_env *env, pid_t pid, char *buf, size_t len);
/* Waits for pid; returns exit code or 128+signal. */
int vg_wait(pid_t pid);

/* Starts argv (argv[0] a path), a test server whose first line on stdout is
 * "PORT <n>" (tests/k8s/fake_apiserver.py). Returns its pid with the port in
 * *port, or -1 (the server is killed) if it does not say so. */
pid_t vg_start_server(char *const argv[], int *port);

/* Finds "key": number in a JSON line of out (the last line containing key). */
bool vg_json_u64(const char *out, const char *key, unsigned long long *value);

/* A child that pauses until killed, and dies with the test (a failed
 * assertion must not leave it behind): a live PID to forge as an owner. */
pid_t vg_live_pid(void);

/* What a tenant's `dd` into its region does: the region mutex's lock word
 * and owner say "held by owner", with no such lock ever taken. */
void vg_forge_region_lock(struct vg_shm *shm, pid_t owner);

#endif
