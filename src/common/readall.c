/* readall.c -- see readall.h. */
#include "readall.h"

#include <errno.h>
#include <unistd.h>

int vg_read_all(int fd, void *buf, size_t len, size_t *got) {
  *got = 0;
  while (*got < len) {
    ssize_t n = read(fd, (char *)buf + *got, len - *got);
    if (n == 0) break;
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    *got += (size_t)n;
  }
  return 0;
}
