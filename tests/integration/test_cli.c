/* test_cli.c -- vgpu run / status / set / smi as a user types them. */
#include <dirent.h>
#include <signal.h>
#include <stdlib.h>

#include "common.h"

static struct vg_run run;

/* Runs build/bin/vgpu with the NULL-terminated arguments. */
static int vgpu(const struct vg_env *env, ...) {
  char path[512];
  char *argv[32];
  int n = 0;
  snprintf(path, sizeof(path), "%s", vg_build_path("bin/vgpu"));
  argv[n++] = path;
  va_list ap;
  va_start(ap, env);
  for (char *a; n < 31 && (a = va_arg(ap, char *)) != NULL;) argv[n++] = a;
  va_end(ap);
  argv[n] = NULL;
  return vg_run(env, argv, &run);
}

static char g_probe[512], g_vgpu[512];

/* Nothing preloaded and no simulator on the path: `vgpu run` must do both. */
static void env_plain(struct vg_env *env) {
  vg_env_init(env, false);
  vg_env_unset(env, "LD_LIBRARY_PATH");
  vg_env_set(env, "VGPU_SIM_MEMORY", "4g");
  snprintf(g_probe, sizeof(g_probe), "%s", vg_build_path("tests/probe"));
  snprintf(g_vgpu, sizeof(g_vgpu), "%s", vg_build_path("bin/vgpu"));
}

static void test_run_sim_limits(void **s) {
  (void)s;
  struct vg_env env;
  env_plain(&env);
  assert_int_equal(vgpu(&env, "run", "--sim", "--memory", "200m", "--", g_probe, "alloc", "mem",
                        "10m", "1000", NULL),
                   0);
  assert_int_equal(json_num(run.out, "allocated"), 20);
  assert_int_equal(json_num(run.out, "last_rc"), 2);
  vg_env_cleanup(&env);
}

static void test_run_rejects_bad_values(void **s) {
  (void)s;
  struct vg_env env;
  env_plain(&env);
  assert_int_equal(vgpu(&env, "run", "--sim", "--memory", "12zz", "--", g_probe, NULL), 2);
  assert_non_null(strstr(run.err, "--memory 12zz"));
  assert_non_null(strstr(run.err, "unknown unit 'zz'"));
  assert_int_equal(vgpu(&env, "run", "--cores", "150", "--", g_probe, NULL), 2);
  assert_non_null(strstr(run.err, "--cores 150"));
  assert_int_equal(vgpu(&env, "run", "--sim", NULL), 2);
  assert_non_null(strstr(run.err, "no command"));
  vg_env_cleanup(&env);
}

static void test_status_missing_region(void **s) {
  (void)s;
  struct vg_env env;
  env_plain(&env);
  assert_int_equal(vgpu(&env, "status", "--cache", "/nonexistent/x.cache", NULL), 1);
  assert_non_null(strstr(run.err, "/nonexistent/x.cache"));
  vg_env_cleanup(&env);
}

/* A misspelt option is named as unknown, a known one without its value as
 * missing its value (not the other way round). */
static void test_bad_options(void **s) {
  (void)s;
  struct vg_env env;
  env_plain(&env);
  assert_int_not_equal(vgpu(&env, "set", "--bogus", NULL), 0);
  assert_non_null(strstr(run.err, "unknown option '--bogus'"));
  assert_int_not_equal(vgpu(&env, "set", "--memory", NULL), 0);
  assert_non_null(strstr(run.err, "missing value for '--memory'"));
  assert_int_equal(vgpu(&env, "status", "--cache", NULL), 2);
  assert_non_null(strstr(run.err, "missing value for '--cache'"));
  /* A typo gets the option it was meant to be; something else gets none. */
  assert_int_equal(vgpu(&env, "run", "--memroy", "2g", "--", "true", NULL), 2);
  assert_non_null(strstr(run.err, "unknown option '--memroy' (did you mean --memory?)"));
  assert_int_not_equal(vgpu(&env, "set", "--core", "30", NULL), 0);
  assert_non_null(strstr(run.err, "(did you mean --cores?)"));
  assert_int_equal(vgpu(&env, "status", "--jsn", NULL), 2);
  assert_non_null(strstr(run.err, "(did you mean --json?)"));
  assert_int_equal(vgpu(&env, "status", "--frobnicate", NULL), 2);
  assert_non_null(strstr(run.err, "unknown option '--frobnicate' (see vgpu status --help)"));
  vg_env_cleanup(&env);
}

/* `vgpu VERB --help` is that verb's usage on stdout, exit 0, with the
 * SIZE/PCT notes where they apply (not smi's); without a
 * driver, smi and run say to use --sim; smi --sim shows the simulated GPU. */
static void test_help_and_no_driver(void **s) {
  (void)s;
  struct vg_env env;
  env_plain(&env);
  const char *verbs[] = {"run", "status", "set", "smi"};
  for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++) {
    char want[64];
    snprintf(want, sizeof(want), "usage: vgpu %s ", verbs[i]);
    assert_int_equal(vgpu(&env, verbs[i], "--help", NULL), 0);
    assert_non_null(strstr(run.out, want));
    /* The SIZE/PCT notes only for the verbs that take sizes, percents or a region file. */
    if (strcmp(verbs[i], "smi") == 0)
      assert_null(strstr(run.out, "SIZE:"));
    else
      assert_non_null(strstr(run.out, "SIZE:"));
  }
  assert_int_equal(vgpu(&env, "smi", NULL), 1);
  assert_non_null(strstr(run.err, "no NVIDIA driver found"));
  assert_non_null(strstr(run.err, "use vgpu smi --sim"));
  assert_int_equal(vgpu(&env, "smi", "--sim", NULL), 0);
  assert_non_null(strstr(run.out, "MiB /  4096MiB"));
  assert_int_equal(vgpu(&env, "run", "--", "true", NULL), 0);
  assert_non_null(strstr(run.err, "use vgpu run --sim"));
  assert_int_equal(vgpu(&env, "run", "--sim", "--", "true", NULL), 0);
  assert_null(strstr(run.err, "no NVIDIA driver"));
  vg_env_cleanup(&env);
}

static void test_status_and_set(void **s) {
  (void)s;
  struct vg_env env;
  env_plain(&env);
  assert_int_equal(vgpu(&env, "run", "--sim", "--memory", "200m", "--", g_probe, "alloc", "mem",
                        "10m", "5", NULL),
                   0);
  assert_int_equal(json_num(run.out, "allocated"), 5);
  assert_int_equal(vgpu(&env, "status", NULL), 0);
  assert_non_null(strstr(run.out, "200 MiB"));
  assert_int_equal(vgpu(&env, "set", "--memory", "300m", NULL), 0);
  assert_non_null(strstr(run.out, "vgpu set: device 0 (GPU-"));
  assert_non_null(strstr(run.out, "): memory 300 MiB\n"));
  /* A device the region does not have, or nothing to set, is an error. */
  assert_int_equal(vgpu(&env, "set", "--device", "3", "--cores", "30", NULL), 1);
  assert_non_null(strstr(run.err, "--device 3: "));
  assert_non_null(strstr(run.err, "has 1 device(s), numbered from 0"));
  assert_int_equal(vgpu(&env, "set", NULL), 2);
  assert_non_null(strstr(run.err, "nothing to change"));
  assert_int_equal(vgpu(&env, "status", "--json", NULL), 0);
  assert_int_equal(json_num(run.out, "mem_limit"), 300 * MiB);
  assert_int_equal(vgpu(&env, "set", "--memory", "bad", NULL), 2);
  assert_non_null(strstr(run.err, "--memory bad"));
  /* a region shared on purpose ($CUDA_DEVICE_MEMORY_SHARED_CACHE) keeps
   * the new limit for the next process without any env change ... */
  assert_int_equal(vgpu(&env, "run", "--sim", "--", g_probe, "alloc", "mem", "10m", "1000", NULL),
                   0);
  assert_int_equal(json_num(run.out, "allocated"), 30);
  /* ... but a plain vgpu run has a region of its own: the limit one run
   * set is not the next one's */
  vg_env_unset(&env, "CUDA_DEVICE_MEMORY_SHARED_CACHE");
  vg_env_set(&env, "XDG_RUNTIME_DIR", env.dir);
  assert_int_equal(vgpu(&env, "run", "--sim", "--memory", "100m", "--", g_probe, "alloc", "mem",
                        "10m", "1000", NULL),
                   0);
  assert_int_equal(json_num(run.out, "allocated"), 10);
  assert_int_equal(vgpu(&env, "run", "--sim", "--", g_probe, "alloc", "mem", "10m", "1000", NULL),
                   0);
  assert_true(json_num(run.out, "allocated") > 300);
  vg_env_cleanup(&env);
}

/* Plain runs, each with a region of its own: $CUDA_DEVICE_MEMORY_SHARED_CACHE
 * unset, and $XDG_RUNTIME_DIR in the test's directory so that runs of
 * other tests are not seen. */
static void env_runs(struct vg_env *env) {
  env_plain(env);
  vg_env_unset(env, "CUDA_DEVICE_MEMORY_SHARED_CACHE");
  vg_env_set(env, "XDG_RUNTIME_DIR", env->dir);
}

/* How many files the per-run directory holds (-1: it does not exist). */
static int run_files(const struct vg_env *env) {
  char dir[400];
  snprintf(dir, sizeof(dir), "%s/vgpu-runs", env->dir);
  DIR *d = opendir(dir);
  if (d == NULL) return -1;
  int n = 0;
  for (struct dirent *e; (e = readdir(d)) != NULL;) n += e->d_name[0] != '.';
  closedir(d);
  return n;
}

/* Issue 16: a limit one plain vgpu run set does not stick for the next;
 * runs given the same --cache do share it. */
static void test_runs_do_not_share_limits(void **s) {
  (void)s;
  struct vg_env env;
  env_runs(&env);
  assert_int_equal(vgpu(&env, "run", "--sim", "--memory", "200m", "--cores", "30", "--", g_probe,
                        "alloc", "mem", "10m", "1000", NULL),
                   0);
  assert_int_equal(json_num(run.out, "allocated"), 20);
  assert_int_equal(run_files(&env), 0); /* its region went with it */
  assert_int_equal(vgpu(&env, "run", "--sim", "--", g_probe, "alloc", "mem", "10m", "1000", NULL),
                   0);
  assert_true(json_num(run.out, "allocated") > 300);
  assert_non_null(strstr(run.err, "vgpu run: memory unlimited, cores unlimited, devices all"));
  char cache[400];
  snprintf(cache, sizeof(cache), "%s/shared.cache", env.dir);
  assert_int_equal(vgpu(&env, "run", "--sim", "--cache", cache, "--memory", "200m", "--", g_probe,
                        "alloc", "mem", "10m", "1000", NULL),
                   0);
  assert_int_equal(json_num(run.out, "allocated"), 20);
  assert_int_equal(vgpu(&env, "run", "--sim", "--cache", cache, "--", g_probe, "alloc", "mem",
                        "10m", "1000", NULL),
                   0);
  assert_int_equal(json_num(run.out, "allocated"), 20);
  vg_env_cleanup(&env);
}

/* The one line on stderr says the limits in effect and the region; -q and
 * --quiet drop it; the command's exit status is vgpu run's. */
static void test_run_says_its_limits(void **s) {
  (void)s;
  struct vg_env env;
  env_runs(&env);
  assert_int_equal(vgpu(&env, "run", "--sim", "--memory", "2g", "--cores", "30", "--devices", "0",
                        "--", "true", NULL),
                   0);
  char want[512];
  snprintf(want, sizeof(want),
           "vgpu run: memory 2 GiB, cores 30 %%, devices 0 (region %s/vgpu-runs/", env.dir);
  if (strstr(run.err, want) == NULL) fail_msg("no '%s' in '%s'", want, run.err);
  assert_int_equal(vgpu(&env, "run", "-q", "--sim", "--memory", "2g", "--", "true", NULL), 0);
  assert_string_equal(run.err, "");
  assert_int_equal(vgpu(&env, "run", "--quiet", "--sim", "--", "sh", "-c", "exit 3", NULL), 3);
  assert_string_equal(run.err, "");
  char cache[400];
  snprintf(cache, sizeof(cache), "%s/shared.cache", env.dir);
  assert_int_equal(vgpu(&env, "run", "--sim", "--cache", cache, "--", "true", NULL), 0);
  snprintf(want, sizeof(want),
           "vgpu run: memory as the region has it, cores as the region has it, devices all "
           "(region %s, shared)\n",
           cache);
  assert_string_equal(run.err, want);
  assert_int_equal(vgpu(&env, "run", "--quiet", "--sim", "--", "sh", "-c", "kill -TERM $$", NULL),
                   128 + SIGTERM);
  assert_int_equal(vgpu(&env, "run", "-w", "--", "true", NULL), 2);
  assert_non_null(strstr(run.err, "(did you mean -q?)"));
  assert_int_equal(run_files(&env), 0);
  vg_env_cleanup(&env);
}

/* Starts vgpu run --sim --memory 200m -- vgpu-burn holding 100 MiB. */
static pid_t start_holder(const struct vg_env *env, char *hold) {
  char burn[512];
  snprintf(burn, sizeof(burn), "%s", vg_build_path("bin/vgpu-burn"));
  char *argv[] = {g_vgpu, "run",     "-q",   "--sim",  "--memory", "200m", "--",
                  burn,   "--alloc", "100m", "--hold", hold,       NULL};
  return vg_spawn(env, argv);
}

/* Without --cache, status and set use the one live run's region; with
 * several they refuse and list them; a run that was killed is ignored. */
static void test_status_finds_the_run(void **s) {
  (void)s;
  struct vg_env env;
  env_runs(&env);
  pid_t first = start_holder(&env, "20");
  /* until its region exists, status would read the machine's /tmp/vgpu.cache */
  for (int i = 0; i < 400 && run_files(&env) < 1; i++) usleep(25000);
  wait_used(&env, 100 * MiB);
  char stale[400];
  snprintf(stale, sizeof(stale), "%s/vgpu-runs/999999999.cache", env.dir);
  FILE *f = fopen(stale, "w");
  assert_non_null(f);
  fclose(f);
  assert_int_equal(vgpu(&env, "status", NULL), 0);
  char want[400];
  snprintf(want, sizeof(want), "region %s/vgpu-runs/%d.cache (", env.dir, (int)first);
  if (strstr(run.out, want) == NULL) fail_msg("no '%s' in\n%s", want, run.out);
  assert_int_equal(access(stale, F_OK), -1); /* the stale file was removed */
  assert_int_equal(vgpu(&env, "set", "--memory", "300m", NULL), 0);
  assert_int_equal(vgpu(&env, "status", "--json", NULL), 0);
  assert_int_equal(json_num(run.out, "mem_limit"), 300 * MiB);
  pid_t second = start_holder(&env, "20");
  for (int i = 0; i < 400 && run_files(&env) < 2; i++) usleep(25000);
  assert_int_equal(vgpu(&env, "status", NULL), 1);
  assert_non_null(strstr(run.err, "vgpu status: 2 vgpu run commands are running"));
  pid_t both[] = {first, second};
  for (int i = 0; i < 2; i++) {
    snprintf(want, sizeof(want), "  %s/vgpu-runs/%d.cache  pid %d  ", env.dir, (int)both[i],
             (int)both[i]);
    if (strstr(run.err, want) == NULL) fail_msg("no '%s' in\n%s", want, run.err);
  }
  assert_non_null(strstr(run.err, "vgpu-burn --alloc 100m --hold 20\n"));
  assert_non_null(strstr(run.err, "pass --cache PATH"));
  assert_int_equal(vgpu(&env, "set", "--cores", "10", NULL), 1);
  assert_non_null(strstr(run.err, "vgpu set: 2 vgpu run commands are running"));
  /* vgpu run passes SIGTERM on: vgpu-burn stops holding and exits cleanly */
  kill(first, SIGTERM);
  kill(second, SIGTERM);
  assert_int_equal(vg_wait(first), 0);
  assert_int_equal(vg_wait(second), 0);
  assert_int_equal(run_files(&env), 0);
  vg_env_cleanup(&env);
}

/* The number after "key": in out from start on; -1 if absent or null. */
static double json_pct_at(const char *out, const char *key) {
  char pattern[64];
  snprintf(pattern, sizeof(pattern), "\"%s\":", key);
  const char *hit = strstr(out, pattern);
  if (hit == NULL || strncmp(hit + strlen(pattern), "null", 4) == 0) return -1;
  return atof(hit + strlen(pattern));
}

/* Starts `vgpu run --sim [--cores PCT] -- vgpu-burn --seconds 4` in env and
 * returns once its process is in the region and has run for over a second
 * (NVML's window), so that what status measures is its steady state. */
static pid_t start_burn(const struct vg_env *env, const char *cores) {
  char burn[512];
  snprintf(burn, sizeof(burn), "%s", vg_build_path("bin/vgpu-burn"));
  char *argv[16];
  int n = 0;
  argv[n++] = g_vgpu;
  argv[n++] = "run";
  argv[n++] = "--sim";
  if (cores != NULL) {
    argv[n++] = "--cores";
    argv[n++] = (char *)cores;
  }
  argv[n++] = "--";
  argv[n++] = burn;
  argv[n++] = "--seconds";
  argv[n++] = "4";
  argv[n] = NULL;
  pid_t pid = vg_spawn(env, argv);
  for (int i = 0; i < 200; i++) {
    if (vgpu(env, "status", "--json", NULL) == 0 && strstr(run.out, "\"alive\":true") != NULL)
      break;
    usleep(25000);
  }
  if (strstr(run.out, "\"alive\":true") == NULL) fail_msg("the burn never joined: %s", run.out);
  usleep(1300000);
  return pid;
}

/* Device 0's and the first process's measured SM % from `vgpu status --sim --json`. */
static double measured(const struct vg_env *env, double *proc) {
  assert_int_equal(vgpu(env, "status", "--sim", "--json", NULL), 0);
  const char *procs = strstr(run.out, "\"processes\"");
  *proc = procs != NULL ? json_pct_at(procs, "sm_util_pct") : -1;
  return json_pct_at(run.out, "sm_util_pct");
}

/* Without a limit nothing is charged, yet NVML sees the burn: status shows it. */
static void test_status_measures_unlimited_burn(void **s) {
  (void)s;
  struct vg_env env;
  env_plain(&env);
  pid_t burn = start_burn(&env, NULL);
  double proc, pct = measured(&env, &proc);
  char json[sizeof(run.out)];
  snprintf(json, sizeof(json), "%s", run.out);
  assert_int_equal(vgpu(&env, "status", "--sim", NULL), 0);
  assert_int_equal(vg_wait(burn), 0);
  if (pct <= 50 || pct > 101) fail_msg("unlimited burn measured at %.1f%%: %s", pct, json);
  if (proc <= 50 || proc > 101) fail_msg("its process measured at %.1f%%: %s", proc, json);
  assert_non_null(strstr(json, "\"sm_charged_pct\":null"));
  assert_non_null(strstr(run.out, "SM UTIL"));
  if (strstr(run.out, "n/a") != NULL) fail_msg("status: %s", run.out);
  vg_env_cleanup(&env);
}

/* A burn limited to 30 % is measured near 30 %. */
static void test_status_measures_limited_burn(void **s) {
  (void)s;
  struct vg_env env;
  env_plain(&env);
  pid_t burn = start_burn(&env, "30");
  double proc, pct = measured(&env, &proc);
  char json[sizeof(run.out)];
  snprintf(json, sizeof(json), "%s", run.out);
  assert_int_equal(vg_wait(burn), 0);
  if (pct < 15 || pct > 45) fail_msg("burn at --cores 30 measured at %.1f%%: %s", pct, json);
  if (proc < 15 || proc > 45) fail_msg("its process measured at %.1f%%: %s", proc, json);
  vg_env_cleanup(&env);
}

/* No NVML (none on the library path, or one that fails): limits and memory
 * are still shown, utilisation is marked unavailable -- never a 0. */
static void test_status_without_nvml(void **s) {
  (void)s;
  struct vg_env env;
  env_plain(&env);
  char burn[512];
  snprintf(burn, sizeof(burn), "%s", vg_build_path("bin/vgpu-burn"));
  char *argv[] = {g_vgpu, "run", "--sim",   "--memory", "200m",   "--cores", "30",
                  "--",   burn,  "--alloc", "100m",     "--hold", "3",       NULL};
  pid_t holder = vg_spawn(&env, argv);
  wait_used(&env, 100 * MiB);
  /* env_plain has no LD_LIBRARY_PATH: the loader finds no simulated NVML */
  assert_int_equal(vgpu(&env, "status", NULL), 0);
  assert_non_null(strstr(run.out, "100 MiB    200 MiB    30% (hard)       n/a"));
  if (strstr(run.out, "SM utilisation") == NULL || strstr(run.out, " n/a: ") == NULL)
    fail_msg("status: %s", run.out);
  assert_int_equal(vgpu(&env, "status", "--json", NULL), 0);
  assert_int_equal(json_num(run.out, "mem_limit"), 200 * MiB);
  assert_non_null(strstr(run.out, "\"sm_util_pct\":null"));
  assert_non_null(strstr(run.out, "\"sm_util_error\":\""));
  /* the simulator's NVML, failing to initialise */
  vg_env_set(&env, "VGPU_SIM_MEMORY", "12zz");
  assert_int_equal(vgpu(&env, "status", "--sim", NULL), 0);
  if (strstr(run.out, "SM utilisation n/a: nvmlInit_v2 failed") == NULL)
    fail_msg("status: %s", run.out);
  assert_non_null(strstr(run.out, "100 MiB    200 MiB    30% (hard)       n/a"));
  assert_int_equal(vg_wait(holder), 0);
  vg_env_cleanup(&env);
}

/* Every line of nvidia-smi's boxes is 79 columns wide, the version line
 * included (the simulator's version is as long as a real driver's). */
static void boxes_are_79_wide(const char *out) {
  char copy[sizeof(run.out)];
  snprintf(copy, sizeof(copy), "%s", out);
  int lines = 0;
  for (char *save, *l = strtok_r(copy, "\n", &save); l != NULL; l = strtok_r(NULL, "\n", &save)) {
    if (l[0] != '|' && l[0] != '+') continue;
    if (strlen(l) != 79) fail_msg("%zu columns: '%s' in\n%s", strlen(l), l, out);
    lines++;
  }
  assert_true(lines >= 17);
}

/* Seed 004 (Huawei CCE): nvidia-smi in a pod with 5120 MiB shows the slice
 * in nvidia-smi's classic layout, and no processes while none runs. */
static void test_smi_shows_slice(void **s) {
  (void)s;
  struct vg_env env;
  env_plain(&env);
  vg_env_set(&env, "VGPU_SIM_MEMORY", "16g");
  assert_int_equal(vgpu(&env, "run", "--sim", "--memory", "5120m", "--", g_vgpu, "smi", NULL), 0);
  if (strstr(run.out, "|      0MiB /  5120MiB |") == NULL) fail_msg("smi output: %s", run.out);
  const char *const expect[] = {
      "| NVIDIA-SMI 580.00-sim   Driver Version: 580.00-sim   CUDA Version: 13.0     |\n",
      "| GPU  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncorr. ECC |\n",
      "| Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | GPU-Util  Compute M. |\n",
      "|   0  NVIDIA A100-SXM...  N/A  | 00000000:10:00.0 N/A |                  N/A |\n",
      "| N/A   N/A   N/A    N/A /  N/A |      0MiB /  5120MiB |      0%          N/A |\n",
      "|                               |                      |                  N/A |\n",
      "|  GPU   GI   CI        PID   Type   Process name                  GPU Memory |\n",
      "|  No running processes found                                                 |\n",
  };
  for (size_t i = 0; i < sizeof(expect) / sizeof(expect[0]); i++)
    if (strstr(run.out, expect[i]) == NULL) fail_msg("no '%s' in\n%s", expect[i], run.out);
  /* The first line is the date, as nvidia-smi's: "Wed Apr 12 07:54:59 2023". */
  char day[4], month[4];
  int d, h, m, sec, year;
  if (sscanf(run.out, "%3s %3s %d %d:%d:%d %d\n", day, month, &d, &h, &m, &sec, &year) != 7)
    fail_msg("no date first: %s", run.out);
  boxes_are_79_wide(run.out);
  vg_env_cleanup(&env);
}

/* The pid of the region's first live process, from `vgpu status --json`. */
static unsigned long long first_pid(const struct vg_env *env) {
  assert_int_equal(vgpu(env, "status", "--json", NULL), 0);
  const char *procs = strstr(run.out, "\"processes\"");
  unsigned long long pid = 0;
  if (procs == NULL || !vg_json_u64(procs, "pid", &pid)) fail_msg("no process: %s", run.out);
  return pid;
}

/* A vgpu-burn holding 300 MiB of the slice is in the Processes table, with
 * its MiB; invoked as nvidia-smi (the e2e mounts vgpu so), vgpu is vgpu smi. */
static void test_smi_lists_the_slices_processes(void **s) {
  (void)s;
  struct vg_env env;
  env_plain(&env);
  vg_env_set(&env, "VGPU_SIM_MEMORY", "16g");
  char burn[512], smi[400];
  snprintf(burn, sizeof(burn), "%s", vg_build_path("bin/vgpu-burn"));
  snprintf(smi, sizeof(smi), "%s/nvidia-smi", env.dir);
  assert_int_equal(symlink(g_vgpu, smi), 0);
  char *argv[] = {g_vgpu, "run",     "--sim", "--memory", "5120m", "--",
                  burn,   "--alloc", "300m",  "--hold",   "20",    NULL};
  pid_t holder = vg_spawn(&env, argv);
  wait_used(&env, 300 * MiB);
  unsigned long long pid = first_pid(&env);
  assert_int_equal(vgpu(&env, "run", "--sim", "--memory", "5120m", "--", smi, NULL), 0);
  char row[128];
  snprintf(row, sizeof(row), "|    0   N/A  N/A %9llu      C   %-31s   300MiB |\n", pid,
           "vgpu-burn");
  if (strstr(run.out, row) == NULL) fail_msg("no '%s' in\n%s", row, run.out);
  if (strstr(run.out, "|    300MiB /  5120MiB |") == NULL) fail_msg("smi output: %s", run.out);
  assert_null(strstr(run.out, "No running processes found"));
  boxes_are_79_wide(run.out);
  kill(holder, SIGKILL);
  vg_wait(holder);
  vg_env_cleanup(&env);
}

/* Issue 32: inside a plain `vgpu run` -- its own region, no memory limit --
 * vgpu smi shows the container's view: the whole GPU as total but only the
 * run's own memory and processes (none), not another run's job; with
 * --memory the limit is the total; the node (no preload) sees the job. */
static void test_run_shows_the_containers_view(void **s) {
  (void)s;
  struct vg_env env;
  env_runs(&env);
  vg_env_set(&env, "VGPU_SIM_MEMORY", "16g");
  pid_t job = start_holder(&env, "20");
  for (int i = 0; i < 400 && run_files(&env) < 1; i++) usleep(25000);
  wait_used(&env, 100 * MiB);
  unsigned long long pid = first_pid(&env);
  char row[128];
  snprintf(row, sizeof(row), "|    0   N/A  N/A %9llu      C   %-31s   100MiB |\n", pid,
           "vgpu-burn");
  assert_int_equal(vgpu(&env, "run", "-q", "--sim", "--", g_vgpu, "smi", NULL), 0);
  if (strstr(run.out, "|      0MiB / 16384MiB |") == NULL) fail_msg("smi output: %s", run.out);
  if (strstr(run.out, "No running processes found") == NULL || strstr(run.out, row) != NULL)
    fail_msg("another run's process in the run's view:\n%s", run.out);
  assert_int_equal(vgpu(&env, "run", "-q", "--sim", "--memory", "1g", "--", g_vgpu, "smi", NULL),
                   0);
  if (strstr(run.out, "|      0MiB /  1024MiB |") == NULL) fail_msg("smi output: %s", run.out);
  assert_non_null(strstr(run.out, "No running processes found"));
  assert_int_equal(vgpu(&env, "smi", "--sim", NULL), 0);
  if (strstr(run.out, row) == NULL || strstr(run.out, "|    100MiB / 16384MiB |") == NULL)
    fail_msg("the node does not see the job (%s) in\n%s", row, run.out);
  kill(job, SIGTERM);
  assert_int_equal(vg_wait(job), 0);
  vg_env_cleanup(&env);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_run_sim_limits),
      cmocka_unit_test(test_run_rejects_bad_values),
      cmocka_unit_test(test_status_missing_region),
      cmocka_unit_test(test_bad_options),
      cmocka_unit_test(test_help_and_no_driver),
      cmocka_unit_test(test_status_and_set),
      cmocka_unit_test(test_runs_do_not_share_limits),
      cmocka_unit_test(test_run_says_its_limits),
      cmocka_unit_test(test_status_finds_the_run),
      cmocka_unit_test(test_smi_shows_slice),
      cmocka_unit_test(test_smi_lists_the_slices_processes),
      cmocka_unit_test(test_run_shows_the_containers_view),
      cmocka_unit_test(test_status_measures_unlimited_burn),
      cmocka_unit_test(test_status_measures_limited_burn),
      cmocka_unit_test(test_status_without_nvml),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
