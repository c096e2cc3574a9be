/* test_grant.c -- the grant file (src/common/grant.h): the documented form
 * parses; anything else is refused with a message naming what is wrong (a
 * grant that parsed as something else would be a limit silently lifted);
 * format and parse are inverses; a written grant reads back, atomically; the
 * clamp table; where the grant directory comes from. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "grant.h"

#define UUID_A "GPU-8f2c0000-0000-4000-8000-000000000001"
#define UUID_B "GPU-1a0b0000-0000-4000-8000-000000000002"

static struct vg_grant g;
static struct vg_err err;

static void parses(const char *text) {
  memset(&err, 0, sizeof(err));
  if (vg_grant_parse(text, strlen(text), &g, &err) != 0)
    fail_msg("refused: %s\n--- text ---\n%s", err.msg, text);
}

/* text is refused, with a message that contains want. */
static void refused_n(const char *text, size_t len, const char *want) {
  memset(&err, 0, sizeof(err));
  if (vg_grant_parse(text, len, &g, &err) == 0)
    fail_msg("accepted (want '%s'):\n%.*s", want, (int)len, text);
  if (strstr(err.msg, want) == NULL) fail_msg("message '%s' does not contain '%s'", err.msg, want);
}

static void refused(const char *text, const char *want) { refused_n(text, strlen(text), want); }

static void test_documented_form(void **s) {
  (void)s;
  parses(
      "# written by the node agent\n"
      "vgpu-grant 1\n"
      "# the first GPU\n"
      "gpu " UUID_A
      " memory 3145728000 cores 25 policy hard\n"
      "\n"
      "gpu " UUID_B " memory 0 cores 0 policy share\n");
  assert_int_equal(g.count, 2);
  assert_string_equal(g.gpu[0].uuid, UUID_A);
  assert_int_equal(g.gpu[0].memory, 3145728000ULL);
  assert_int_equal(g.gpu[0].cores, 25);
  assert_int_equal(g.gpu[0].policy, VG_SM_POLICY_HARD);
  assert_string_equal(g.gpu[1].uuid, UUID_B);
  assert_int_equal(g.gpu[1].memory, 0);
  assert_int_equal(g.gpu[1].cores, 0);
  assert_int_equal(g.gpu[1].policy, VG_SM_POLICY_SHARE);
  assert_ptr_equal(vg_grant_find(&g, UUID_B), &g.gpu[1]);
  assert_ptr_equal(vg_grant_find(&g, UUID_A), &g.gpu[0]);
  assert_null(vg_grant_find(&g, "GPU-none"));
}

static void test_policy_optional_cores_100_is_whole_gpu(void **s) {
  (void)s;
  /* No trailing newline, keys in another order, policy left out. */
  parses("vgpu-grant 1\ngpu " UUID_A " cores 100 memory 1048576");
  assert_int_equal(g.count, 1);
  assert_int_equal(g.gpu[0].memory, 1048576);
  assert_int_equal(g.gpu[0].cores, 0); /* 100 % is stored as 0: the whole GPU */
  assert_int_equal(g.gpu[0].policy, VG_SM_POLICY_HARD);
  parses("vgpu-grant 1\ngpu " UUID_A " memory 1 cores 99\n");
  assert_int_equal(g.gpu[0].cores, 99);
}

static void test_sixteen_gpus(void **s) {
  (void)s;
  char text[4096];
  int off = snprintf(text, sizeof(text), "vgpu-grant 1\n");
  for (int i = 0; i < VG_MAX_DEVICES; i++)
    off += snprintf(text + off, sizeof(text) - (size_t)off,
                    "gpu GPU-5a1a0000-0000-4000-8000-0000000000%02d memory %d cores %d\n", i,
                    (i + 1) << 20, i);
  parses(text);
  assert_int_equal(g.count, VG_MAX_DEVICES);
  assert_int_equal(g.gpu[15].memory, 16 << 20);
  assert_int_equal(g.gpu[15].cores, 15);
  /* One more is refused, naming its line (line 1 is the header). */
  snprintf(text + off, sizeof(text) - (size_t)off,
           "gpu GPU-5a1a0000-0000-4000-8000-000000000099 memory 1 cores 1\n");
  refused(text, "line 18: more than 16 GPUs");
}

static void test_header(void **s) {
  (void)s;
  refused("gpu " UUID_A " memory 1 cores 1\n", "line 1: expected 'vgpu-grant 1' first");
  refused("vgpu-lease 1\ngpu " UUID_A " memory 1 cores 1\n", "line 1: expected 'vgpu-grant 1'");
  refused("# c\nvgpu-grant 2\ngpu " UUID_A " memory 1 cores 1\n",
          "line 2: expected 'vgpu-grant 1'");
  refused("vgpu-grant\ngpu " UUID_A " memory 1 cores 1\n", "line 1: expected");
  refused("vgpu-grant 1 2\ngpu " UUID_A " memory 1 cores 1\n", "line 1: expected");
  refused("vgpu-grant 01\ngpu " UUID_A " memory 1 cores 1\n", "line 1: expected");
}

static void test_gpu_needs_memory_and_cores(void **s) {
  (void)s;
  refused("vgpu-grant 1\ngpu " UUID_A " cores 25\n", "line 2: a gpu needs both memory and cores");
  refused("vgpu-grant 1\ngpu " UUID_A " memory 5 policy hard\n",
          "line 2: a gpu needs both memory and cores");
  refused("vgpu-grant 1\n\ngpu " UUID_A "\n", "line 3: a gpu needs both memory and cores");
  refused("vgpu-grant 1\ngpu " UUID_A " memory 5 cores\n", "line 2: 'cores' has no value");
}

static void test_bad_values(void **s) {
  (void)s;
  refused("vgpu-grant 1\ngpu " UUID_A " memory 5 cores 101\n", "line 2: 'cores 101' is not valid");
  refused("vgpu-grant 1\ngpu " UUID_A " memory 5 cores -1\n", "line 2: 'cores -1' is not valid");
  refused("vgpu-grant 1\ngpu " UUID_A " memory 3g cores 5\n", "line 2: 'memory 3g' is not valid");
  refused("vgpu-grant 1\ngpu " UUID_A " memory -5 cores 5\n", "line 2: 'memory -5' is not valid");
  refused("vgpu-grant 1\ngpu " UUID_A " memory 0x10 cores 5\n", "line 2: 'memory 0x10'");
  refused("vgpu-grant 1\ngpu " UUID_A " memory 1.5 cores 5\n", "line 2: 'memory 1.5'");
  /* 2^64 and above: an overflow must not wrap to a small (or zero: no) limit. */
  refused("vgpu-grant 1\ngpu " UUID_A " memory 18446744073709551616 cores 5\n",
          "line 2: 'memory 18446744073709551616' is not valid");
  refused("vgpu-grant 1\ngpu " UUID_A " memory 99999999999999999999 cores 5\n", "line 2:");
  refused("vgpu-grant 1\ngpu " UUID_A " memory 5 cores 4294967297\n", "line 2:");
  refused("vgpu-grant 1\ngpu " UUID_A " memory 5 cores 5 policy soft\n",
          "line 2: 'policy soft' is not valid");
  refused("vgpu-grant 1\ngpu " UUID_A " memory 5 cores 5 policy HARD\n", "line 2:");
  /* A value too long for the parser is refused, not cut. */
  refused("vgpu-grant 1\ngpu " UUID_A " memory 000000000000000000000000000000000005 cores 5\n",
          "line 2:");
}

static void test_unknown_keys_and_entries(void **s) {
  (void)s;
  refused("vgpu-grant 1\ngpu " UUID_A " memory 5 cores 5 limit 7\n", "line 2: 'limit 7'");
  refused("vgpu-grant 1\ngpu " UUID_A " memory 5 cores 5\ncpu x memory 5 cores 5\n",
          "line 3: unknown entry 'cpu'");
  refused("vgpu-grant 1\ngpu " UUID_A " memory 5 cores 5\n  \n", "line 3: unknown entry");
  refused("vgpu-grant 1\nGPU " UUID_A " memory 5 cores 5\n", "line 2: unknown entry");
  /* A tab is not a separator: the key "memory\t5" is unknown. */
  refused("vgpu-grant 1\ngpu " UUID_A " memory\t5 cores 5\n", "line 2:");
  /* CRLF: "5\r" is not a number. */
  refused("vgpu-grant 1\r\ngpu " UUID_A " memory 5 cores 5\r\n", "line 1:");
}

static void test_uuids(void **s) {
  (void)s;
  refused("vgpu-grant 1\ngpu " UUID_A " memory 5 cores 5\ngpu " UUID_A " memory 6 cores 6\n",
          "line 3: " UUID_A " is listed twice");
  refused("vgpu-grant 1\ngpu MIG-1234 memory 5 cores 5\n",
          "line 2: 'gpu' must be followed by a GPU UUID");
  refused("vgpu-grant 1\ngpu 8f2c0000 memory 5 cores 5\n", "line 2: 'gpu' must be followed");
  refused("vgpu-grant 1\ngpu memory 5 cores 5\n", "line 2: 'gpu' must be followed");
  refused("vgpu-grant 1\ngpu\n", "line 2: 'gpu' must be followed");
  /* A UUID longer than the region's field is refused, not cut. */
  char text[512], uuid[VG_UUID_LEN + 8];
  memset(uuid, 'a', sizeof(uuid) - 1);
  memcpy(uuid, "GPU-", 4);
  uuid[sizeof(uuid) - 1] = '\0';
  snprintf(text, sizeof(text), "vgpu-grant 1\ngpu %s memory 5 cores 5\n", uuid);
  refused(text, "line 2:");
}

static void test_nul_long_lines_size(void **s) {
  (void)s;
  static const char nul[] = "vgpu-grant 1\ngpu " UUID_A " memory 5\0 cores 5\n";
  refused_n(nul, sizeof(nul) - 1, "NUL byte");

  /* A comment of 300 bytes: the line is too long even if it means nothing. */
  char text[VG_GRANT_MAX_BYTES + 64];
  int off = snprintf(text, sizeof(text), "vgpu-grant 1\n#");
  memset(text + off, 'x', 300);
  off += 300;
  snprintf(text + off, sizeof(text) - (size_t)off, "\ngpu " UUID_A " memory 5 cores 5\n");
  refused(text, "line 2 is too long");

  /* 8193 bytes of comments and a valid grant: too large as a whole. */
  off = snprintf(text, sizeof(text), "vgpu-grant 1\ngpu " UUID_A " memory 5 cores 5\n");
  while (off < VG_GRANT_MAX_BYTES + 1) {
    int n = VG_GRANT_MAX_BYTES + 1 - off < 100 ? VG_GRANT_MAX_BYTES + 1 - off : 100;
    memset(text + off, '#', (size_t)n);
    text[off + n - 1] = '\n';
    off += n;
  }
  assert_int_equal(off, VG_GRANT_MAX_BYTES + 1);
  refused_n(text, (size_t)off, "larger than 8192 bytes");
  /* Exactly 8192 bytes is fine. */
  memset(&err, 0, sizeof(err));
  assert_int_equal(vg_grant_parse(text, VG_GRANT_MAX_BYTES - 1, &g, &err), 0);
  text[VG_GRANT_MAX_BYTES - 1] = '\n';
  assert_int_equal(vg_grant_parse(text, VG_GRANT_MAX_BYTES, &g, &err), 0);
}

static void test_empty_and_header_only(void **s) {
  (void)s;
  refused("", "empty");
  refused("\n\n", "empty");
  refused("# nothing yet\n", "empty");
  refused("vgpu-grant 1\n", "grants no GPU");
  refused("vgpu-grant 1\n# soon\n\n", "grants no GPU");
}

/* The same grant: count and the entries in use. */
static void same_grant(const struct vg_grant *a, const struct vg_grant *b) {
  assert_int_equal(a->count, b->count);
  assert_memory_equal(a->gpu, b->gpu, a->count * sizeof(a->gpu[0]));
}

/* Parsing again what format wrote gives the same struct. */
static void test_format_round_trip(void **s) {
  (void)s;
  struct vg_grant a, b;
  memset(&a, 0, sizeof(a));
  for (unsigned i = 0; i < VG_MAX_DEVICES; i++) {
    snprintf(a.gpu[i].uuid, sizeof(a.gpu[i].uuid), "GPU-5a1a0000-0000-4000-8000-0000000000%02u", i);
    a.gpu[i].memory = i == 3 ? UINT64_MAX / 10 : (uint64_t)i * 1000003ULL;
    a.gpu[i].cores = i * 6; /* 0..90 */
    a.gpu[i].policy = i % 2 ? VG_SM_POLICY_SHARE : VG_SM_POLICY_HARD;
  }
  char buf[VG_GRANT_MAX_BYTES];
  for (unsigned n = 1; n <= VG_MAX_DEVICES; n++) {
    a.count = n;
    int len = vg_grant_format(&a, buf, sizeof(buf));
    assert_true(len > 0);
    assert_int_equal((size_t)len, strlen(buf));
    if (vg_grant_parse(buf, (size_t)len, &b, &err) != 0) fail_msg("%s\n%s", err.msg, buf);
    same_grant(&a, &b);
  }
  assert_non_null(strstr(buf,
                         "\ngpu GPU-5a1a0000-0000-4000-8000-000000000001 memory 1000003 "
                         "cores 6 policy share\n"));
  /* A buffer too small is reported, never a cut grant. */
  assert_int_equal(vg_grant_format(&a, buf, 40), -1);
  assert_int_equal(vg_grant_format(&a, buf, 10), -1);
}

static char g_dir[64];

static int mkdir_setup(void **s) {
  (void)s;
  snprintf(g_dir, sizeof(g_dir), "/tmp/vgpu-grant-test-XXXXXX");
  return mkdtemp(g_dir) == NULL ? -1 : 0;
}

static int mkdir_teardown(void **s) {
  (void)s;
  char cmd[128];
  snprintf(cmd, sizeof(cmd), "rm -rf '%s'", g_dir);
  return system(cmd) == 0 ? 0 : -1;
}

/* The names in g_dir, one per line. */
static void dir_names(char *out, size_t len) {
  out[0] = '\0';
  DIR *d = opendir(g_dir);
  assert_non_null(d);
  size_t off = 0;
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    off += (size_t)snprintf(out + off, len - off, "%s\n", e->d_name);
  }
  closedir(d);
}

static void test_write_then_load(void **s) {
  (void)s;
  struct vg_grant a, b;
  memset(&b, 0xa5, sizeof(b));
  assert_int_equal(vg_grant_load(g_dir, &b, &err), 1); /* not written yet */

  memset(&a, 0, sizeof(a));
  a.count = 2;
  snprintf(a.gpu[0].uuid, sizeof(a.gpu[0].uuid), UUID_A);
  a.gpu[0].memory = 300ULL << 20;
  a.gpu[0].cores = 25;
  snprintf(a.gpu[1].uuid, sizeof(a.gpu[1].uuid), UUID_B);
  a.gpu[1].policy = VG_SM_POLICY_SHARE;
  if (vg_grant_write(g_dir, &a, &err) != 0) fail_msg("%s", err.msg);
  if (vg_grant_load(g_dir, &b, &err) != 0) fail_msg("%s", err.msg);
  same_grant(&a, &b);

  char names[1024];
  dir_names(names, sizeof(names));
  assert_string_equal(names, "grant\n"); /* no temporary file left */

  /* Replacing it: the new grant, still one file. */
  a.count = 1;
  a.gpu[0].memory = 100ULL << 20;
  if (vg_grant_write(g_dir, &a, &err) != 0) fail_msg("%s", err.msg);
  if (vg_grant_load(g_dir, &b, &err) != 0) fail_msg("%s", err.msg);
  same_grant(&a, &b);
  dir_names(names, sizeof(names));
  assert_string_equal(names, "grant\n");

  /* A file the agent never wrote that way: not valid, and says which. */
  char path[128];
  snprintf(path, sizeof(path), "%s/grant", g_dir);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs("vgpu-grant 1\ngpu " UUID_A " memory lots cores 5\n", f);
  fclose(f);
  assert_int_equal(vg_grant_load(g_dir, &b, &err), -1);
  if (strstr(err.msg, path) == NULL || strstr(err.msg, "is not valid") == NULL ||
      strstr(err.msg, "line 2") == NULL)
    fail_msg("%s", err.msg);

  /* A file larger than a grant can be is refused, not read in part. */
  f = fopen(path, "w");
  assert_non_null(f);
  fputs("vgpu-grant 1\ngpu " UUID_A " memory 5 cores 5\n", f);
  for (int i = 0; i < VG_GRANT_MAX_BYTES; i++) fputc(i % 64 == 63 ? '\n' : '#', f);
  fclose(f);
  assert_int_equal(vg_grant_load(g_dir, &b, &err), -1);
  if (strstr(err.msg, "larger than") == NULL) fail_msg("%s", err.msg);

  /* Writing into a directory that does not exist fails with a message. */
  char missing[128];
  snprintf(missing, sizeof(missing), "%s/none", g_dir);
  assert_int_equal(vg_grant_write(missing, &a, &err), -1);
  assert_non_null(strstr(err.msg, missing));
}

static void test_clamp(void **s) {
  (void)s;
  static const struct {
    uint64_t asked, granted, want;
  } rows[] = {
      {0, 0, 0},       /* nothing asked, nothing granted: none */
      {0, 300, 300},   /* no limit asked: the grant */
      {500, 0, 500},   /* no grant: what was asked */
      {500, 300, 300}, /* above the grant: the grant */
      {300, 300, 300}, /* equal */
      {100, 300, 100}, /* below: lowering is allowed */
      {1, UINT64_MAX, 1}, {UINT64_MAX, 1, 1},
  };
  for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
    if (vg_grant_clamp(rows[i].asked, rows[i].granted) != rows[i].want)
      fail_msg("clamp(%llu, %llu) = %llu, want %llu", (unsigned long long)rows[i].asked,
               (unsigned long long)rows[i].granted,
               (unsigned long long)vg_grant_clamp(rows[i].asked, rows[i].granted),
               (unsigned long long)rows[i].want);
}

/* A pod's share as the grant stores it: the whole GPU, asked as 100 % or
 * more or not at all, is 0 (no limit); anything between stays. */
static void test_cores_of(void **s) {
  (void)s;
  assert_int_equal(vg_grant_cores_of(100), 0);
  assert_int_equal(vg_grant_cores_of(250), 0);
  assert_int_equal(vg_grant_cores_of(0), 0);
  assert_int_equal(vg_grant_cores_of(-5), 0);
  assert_int_equal(vg_grant_cores_of(1), 1);
  assert_int_equal(vg_grant_cores_of(99), 99);
  struct vg_grant_gpu g = {.cores = 30};
  assert_int_equal(vg_grant_cores(&g, 100), 30); /* asking for the whole GPU gets the grant */
  assert_int_equal(vg_grant_cores(NULL, 100), 0);
}

static void test_dir(void **s) {
  (void)s;
  struct stat st;
  char out[512];
  if (stat(VG_GRANT_DIR, &st) == 0 && S_ISDIR(st.st_mode)) {
    /* Inside a device plugin's container: the mount wins over the variable. */
    setenv("VGPU_GRANT_DIR", "/tmp/elsewhere", 1);
    assert_true(vg_grant_dir(out, sizeof(out)));
    assert_string_equal(out, VG_GRANT_DIR);
    unsetenv("VGPU_GRANT_DIR");
    skip(); /* the variable's own half cannot be checked on this machine */
  }
  unsetenv("VGPU_GRANT_DIR");
  assert_false(vg_grant_dir(out, sizeof(out)));
  setenv("VGPU_GRANT_DIR", "", 1);
  assert_false(vg_grant_dir(out, sizeof(out)));
  setenv("VGPU_GRANT_DIR", "/tmp/some/grant", 1);
  assert_true(vg_grant_dir(out, sizeof(out)));
  assert_string_equal(out, "/tmp/some/grant");
  unsetenv("VGPU_GRANT_DIR");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_documented_form),
      cmocka_unit_test(test_policy_optional_cores_100_is_whole_gpu),
      cmocka_unit_test(test_sixteen_gpus),
      cmocka_unit_test(test_header),
      cmocka_unit_test(test_gpu_needs_memory_and_cores),
      cmocka_unit_test(test_bad_values),
      cmocka_unit_test(test_unknown_keys_and_entries),
      cmocka_unit_test(test_uuids),
      cmocka_unit_test(test_nul_long_lines_size),
      cmocka_unit_test(test_empty_and_header_only),
      cmocka_unit_test(test_format_round_trip),
      cmocka_unit_test_setup_teardown(test_write_then_load, mkdir_setup, mkdir_teardown),
      cmocka_unit_test(test_clamp),
      cmocka_unit_test(test_cores_of),
      cmocka_unit_test(test_dir),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
