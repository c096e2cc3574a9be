/* test_cli.c -- vgpu run / status / set / smi as a user types them. */
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
  assert_int_equal(vgpu(&env, "status", "--json", NULL), 0);
  assert_int_equal(json_num(run.out, "mem_limit"), 300 * MiB);
  assert_int_equal(vgpu(&env, "set", "--memory", "bad", NULL), 2);
  assert_non_null(strstr(run.err, "--memory bad"));
  /* the new limit holds for the next process without any env change */
  assert_int_equal(vgpu(&env, "run", "--sim", "--", g_probe, "alloc", "mem", "10m", "1000", NULL),
                   0);
  assert_int_equal(json_num(run.out, "allocated"), 30);
  vg_env_cleanup(&env);
}

static void test_smi_shows_slice(void **s) {
  (void)s;
  struct vg_env env;
  env_plain(&env);
  assert_int_equal(vgpu(&env, "run", "--sim", "--memory", "2560m", "--", g_vgpu, "smi", NULL), 0);
  if (strstr(run.out, "0MiB /   2560MiB |") == NULL) fail_msg("smi output: %s", run.out);
  vg_env_cleanup(&env);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_run_sim_limits),        cmocka_unit_test(test_run_rejects_bad_values),
      cmocka_unit_test(test_status_missing_region), cmocka_unit_test(test_status_and_set),
      cmocka_unit_test(test_smi_shows_slice),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
