/*
 * test_backstop_rules.c -- the backstop's two decisions on their own: whose
 * is a process (the slot mounted at /usr/local/vgpu in its mountinfo,
 * proc_slot.c) and is a container over its grant (backstop.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backstop.h"
#include "proc_slot.h"

#define MIB (1024ULL * 1024ULL)

/* What a container's mountinfo looks like from the host (cgroup v1, containerd). */
static const char container[] =
    "1201 1100 0:52 / / rw,relatime master:300 - overlay overlay rw,lowerdir=/x\n"
    "1202 1201 0:55 / /proc rw,nosuid,nodev,noexec,relatime - proc proc rw\n"
    "1210 1201 254:0 /var/lib/vgpu/slots/0f1e2d3c4b5a6978 /usr/local/vgpu rw,relatime - ext4 "
    "/dev/vda rw\n"
    "1211 1210 254:0 /var/lib/vgpu/slots/0f1e2d3c4b5a6978/grant /usr/local/vgpu/grant "
    "ro,relatime - ext4 /dev/vda rw\n"
    "1212 1201 254:0 /usr/local/vgpu/libvgpu.so /usr/local/vgpu/libvgpu.so ro - ext4 /dev/vda\n";

static void test_mountinfo(void **s) {
  (void)s;
  char slot[17] = "";
  assert_int_equal(vg_mountinfo_slot(container, strlen(container), slot), 1);
  assert_string_equal(slot, "0f1e2d3c4b5a6978");
  /* A state dir on a file system of its own: the root is relative to it. */
  static const char own_fs[] = "40 30 8:3 /slots/00000000000000ff /usr/local/vgpu rw - xfs x rw";
  assert_int_equal(vg_mountinfo_slot(own_fs, strlen(own_fs), slot), 1);
  assert_string_equal(slot, "00000000000000ff");
  static const char *const not_ours[] = {
      "40 30 8:3 /slots/00000000000000ff /usr/local/vgpu2 rw - xfs x rw", /* another point */
      "40 30 8:3 /slots/00000000000000fg /usr/local/vgpu rw - xfs x rw",  /* not hex */
      "40 30 8:3 /slots/00000000000000f /usr/local/vgpu rw - xfs x rw",   /* 15 digits */
      "40 30 8:3 /var/lib/vgpu /usr/local/vgpu rw - xfs x rw",            /* not a slot */
      "40 30 8:3 /slots/0000000000000000/grant /usr/local/vgpu rw - x",   /* a sub dir */
      "40 30 8:3",                                                        /* cut short */
      "",
  };
  for (size_t i = 0; i < sizeof(not_ours) / sizeof(not_ours[0]); i++)
    assert_int_equal(vg_mountinfo_slot(not_ours[i], strlen(not_ours[i]), slot), 0);
}

/* The slot read-only with the region file mounted read-write over it
 * (docs/device-plugin.md): two entries name the slot, only the one at
 * /usr/local/vgpu itself counts, whichever comes first. */
static void test_mountinfo_region_mount(void **s) {
  (void)s;
  static const char region[] =
      "1213 1210 254:0 /var/lib/vgpu/slots/0f1e2d3c4b5a6978/region.cache "
      "/usr/local/vgpu/region.cache rw,relatime - ext4 /dev/vda rw\n";
  static const char slot_ro[] =
      "1210 1201 254:0 /var/lib/vgpu/slots/0f1e2d3c4b5a6978 /usr/local/vgpu ro,relatime - ext4 "
      "/dev/vda rw\n";
  char text[1024], slot[17] = "";
  snprintf(text, sizeof(text), "%s%s", slot_ro, region);
  assert_int_equal(vg_mountinfo_slot(text, strlen(text), slot), 1);
  assert_string_equal(slot, "0f1e2d3c4b5a6978");
  snprintf(text, sizeof(text), "%s%s", region, slot_ro);
  memset(slot, 0, sizeof(slot));
  assert_int_equal(vg_mountinfo_slot(text, strlen(text), slot), 1);
  assert_string_equal(slot, "0f1e2d3c4b5a6978");
  /* the region's mount alone is no slot mount */
  assert_int_equal(vg_mountinfo_slot(region, strlen(region), slot), 0);
}

static void test_proc_slot(void **s) {
  (void)s;
  char root[] = "/tmp/vg-proc-XXXXXX", dir[64], path[96], slot[17];
  assert_non_null(mkdtemp(root));
  snprintf(dir, sizeof(dir), "%s/4242", root);
  assert_int_equal(mkdir(dir, 0755), 0);
  snprintf(path, sizeof(path), "%s/mountinfo", dir);
  FILE *f = fopen(path, "w");
  fputs(container, f);
  fclose(f);
  assert_int_equal(vg_proc_slot(root, 4242, slot), 1);
  assert_string_equal(slot, "0f1e2d3c4b5a6978");
  assert_int_equal(vg_proc_slot(root, 4243, slot), -1);       /* gone */
  assert_int_equal(vg_proc_slot("/proc", getpid(), slot), 0); /* this test: not in a slot */
  unlink(path);
  rmdir(dir);
  rmdir(root);
}

static void test_over(void **s) {
  (void)s;
  const uint64_t ctx = 256 * MIB, tol = 256 * MIB, grant = 1000 * MIB;
  assert_false(vg_backstop_over(grant + ctx + tol, 1, grant, ctx, tol)); /* at the edge */
  assert_true(vg_backstop_over(grant + ctx + tol + 1, 1, grant, ctx, tol));
  assert_false(vg_backstop_over(grant + 2 * ctx + tol, 2, grant, ctx, tol)); /* two contexts */
  assert_false(vg_backstop_over(UINT64_MAX, 1, 0, ctx, tol));                /* 0: the whole GPU */
  assert_false(vg_backstop_over(UINT64_MAX, UINT32_MAX, UINT64_MAX - 1, ctx, tol)); /* no wrap */
  enum vg_backstop_policy p;
  struct vg_err err = {""};
  assert_int_equal(vg_backstop_policy_parse("evict", &p, &err), 0);
  assert_int_equal(p, VG_BACKSTOP_EVICT);
  assert_int_equal(vg_backstop_policy_parse("kill", &p, &err), -1);
  assert_non_null(strstr(err.msg, "neither report nor evict"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_mountinfo),
      cmocka_unit_test(test_mountinfo_region_mount),
      cmocka_unit_test(test_proc_slot),
      cmocka_unit_test(test_over),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
