/* fuzz_region.c -- libFuzzer target for opening a region file: any file
 * content is either accepted as a valid region or refused with a message;
 * a refused file is never modified. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "region.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char path[64];
  snprintf(path, sizeof(path), "/tmp/vgpu-fuzz-region-%d", (int)getpid());
  /* Stretch small inputs to the region size half the time, so the header
   * checks (not just the size check) are reached. */
  size_t file_size = (size > 0 && (data[0] & 1)) ? sizeof(struct vg_region) : size;
  uint8_t *content = calloc(1, file_size ? file_size : 1);
  memcpy(content, data, size < file_size ? size : file_size);
  int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
  if (fd < 0 || write(fd, content, file_size) != (ssize_t)file_size) abort();
  close(fd);
  struct vg_shm shm;
  struct vg_err err;
  if (vg_region_open(&shm, path, &err) == 0) {
    vg_region_lock(&shm);
    vg_region_reap_locked(&shm);
    vg_region_unlock(&shm);
    vg_shm_close(&shm);
  } else {
    if (err.msg[0] == '\0') abort();
    uint8_t *back = malloc(file_size ? file_size : 1);
    fd = open(path, O_RDONLY);
    if (read(fd, back, file_size) != (ssize_t)file_size || memcmp(back, content, file_size) != 0)
      abort(); /* a refused file must be left as it was */
    close(fd);
    free(back);
  }
  unlink(path);
  free(content);
  return 0;
}
