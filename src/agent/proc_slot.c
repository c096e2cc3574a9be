/* proc_slot.c -- see proc_slot.h. */
#include "proc_slot.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MOUNTINFO_MAX (1 << 20) /* a container has some hundred mounts, not thousands */

static int is_hex16(const char *s, size_t n) {
  if (n != 16) return 0;
  for (size_t i = 0; i < n; i++)
    if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return 0;
  return 1;
}

/* The n-th (0-based) space-separated field of line [p, end): *f and *flen. */
static int field(const char *p, const char *end, int n, const char **f, size_t *flen) {
  for (int i = 0; p < end; i++) {
    const char *sp = memchr(p, ' ', (size_t)(end - p));
    const char *e = sp ? sp : end;
    if (i == n) {
      *f = p, *flen = (size_t)(e - p);
      return 1;
    }
    if (!sp) break;
    p = sp + 1;
  }
  return 0;
}

/* One line: "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS ...". */
static int line_slot(const char *p, const char *end, char slot[17]) {
  const char *root, *mnt;
  size_t rlen, mlen;
  static const char suffix[] = "/slots/";
  const size_t mp = sizeof(VG_SLOT_MOUNT_POINT) - 1, sl = sizeof(suffix) - 1;
  if (!field(p, end, 3, &root, &rlen) || !field(p, end, 4, &mnt, &mlen)) return 0;
  if (mlen != mp || memcmp(mnt, VG_SLOT_MOUNT_POINT, mp) != 0) return 0;
  if (rlen < sl + 16 || memcmp(root + rlen - 16 - sl, suffix, sl) != 0) return 0;
  if (!is_hex16(root + rlen - 16, 16)) return 0;
  memcpy(slot, root + rlen - 16, 16);
  slot[16] = '\0';
  return 1;
}

int vg_mountinfo_slot(const char *text, size_t len, char slot[17]) {
  const char *p = text, *end = text + len;
  while (p < end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    const char *e = nl ? nl : end;
    if (line_slot(p, e, slot)) return 1;
    p = e + 1;
  }
  return 0;
}

int vg_proc_slot(const char *proc_root, pid_t pid, char slot[17]) {
  char path[512];
  snprintf(path, sizeof(path), "%s/%d/mountinfo", proc_root, (int)pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  char *buf = malloc(MOUNTINFO_MAX);
  size_t len = 0;
  ssize_t n = 0;
  while (buf != NULL && len < MOUNTINFO_MAX && (n = read(fd, buf + len, MOUNTINFO_MAX - len)) > 0)
    len += (size_t)n;
  close(fd);
  int rc = buf == NULL || n < 0 ? -1 : vg_mountinfo_slot(buf, len, slot);
  free(buf);
  return rc;
}
