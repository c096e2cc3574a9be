/* grant.c -- see grant.h. */
#include "grant.h"

#include "readall.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LINE_MAX_LEN 256

/* The next space-separated word of *p (at most cap-1 bytes) into out. */
static bool next_word(const char **p, const char *end, char *out, size_t cap) {
  while (*p < end && **p == ' ') (*p)++;
  size_t n = 0;
  while (*p < end && **p != ' ') {
    if (n + 1 >= cap) return false;
    out[n++] = *(*p)++;
  }
  out[n] = '\0';
  return n > 0;
}

static bool parse_u64(const char *s, uint64_t *out) {
  uint64_t v = 0;
  if (*s == '\0') return false;
  for (; *s != '\0'; s++) {
    if (*s < '0' || *s > '9' || v > (UINT64_MAX - 9) / 10) return false;
    v = v * 10 + (uint64_t)(*s - '0');
  }
  *out = v;
  return true;
}

/* One "KEY VALUE" pair of a gpu line into gpu; -1 with err on a bad one. */
static int apply_pair(struct vg_grant_gpu *gpu, const char *key, const char *value, unsigned line,
                      unsigned *seen, struct vg_err *err) {
  uint64_t v = 0;
  if (strcmp(key, "memory") == 0 && parse_u64(value, &v)) {
    gpu->memory = v;
    *seen |= 1;
  } else if (strcmp(key, "cores") == 0 && parse_u64(value, &v) && v <= 100) {
    gpu->cores = v == 100 ? 0 : (unsigned)v;
    *seen |= 2;
  } else if (strcmp(key, "policy") == 0 &&
             (strcmp(value, "hard") == 0 || strcmp(value, "share") == 0)) {
    gpu->policy = strcmp(value, "share") == 0 ? VG_SM_POLICY_SHARE : VG_SM_POLICY_HARD;
  } else {
    return vg_err_set(err,
                      "line %u: '%s %s' is not valid (memory BYTES, cores 0..100, policy "
                      "hard|share)",
                      line, key, value);
  }
  return 0;
}

static int parse_gpu(const char *p, const char *end, unsigned line, struct vg_grant *g,
                     struct vg_err *err) {
  if (g->count >= VG_MAX_DEVICES)
    return vg_err_set(err, "line %u: more than %d GPUs", line, VG_MAX_DEVICES);
  struct vg_grant_gpu *gpu = &g->gpu[g->count];
  memset(gpu, 0, sizeof(*gpu));
  if (!next_word(&p, end, gpu->uuid, sizeof(gpu->uuid)) || strncmp(gpu->uuid, "GPU-", 4) != 0)
    return vg_err_set(err, "line %u: 'gpu' must be followed by a GPU UUID (GPU-...)", line);
  if (vg_grant_find(g, gpu->uuid) != NULL)
    return vg_err_set(err, "line %u: %s is listed twice", line, gpu->uuid);
  char key[32], value[32];
  unsigned seen = 0;
  while (next_word(&p, end, key, sizeof(key))) {
    if (!next_word(&p, end, value, sizeof(value)))
      return vg_err_set(err, "line %u: '%s' has no value (or one too long)", line, key);
    if (apply_pair(gpu, key, value, line, &seen, err) != 0) return -1;
  }
  if (p < end) return vg_err_set(err, "line %u: a word is too long", line);
  if (seen != 3) return vg_err_set(err, "line %u: a gpu needs both memory and cores", line);
  g->count++;
  return 0;
}

static int parse_line(const char *p, const char *end, unsigned line, bool *header,
                      struct vg_grant *g, struct vg_err *err) {
  if (end - p > LINE_MAX_LEN) return vg_err_set(err, "line %u is too long", line);
  if (p == end || *p == '#') return 0;
  char word[16];
  if (!next_word(&p, end, word, sizeof(word)))
    return vg_err_set(err, "line %u: unknown entry", line);
  if (!*header) {
    char version[8];
    if (strcmp(word, "vgpu-grant") != 0 || !next_word(&p, end, version, sizeof(version)) ||
        strcmp(version, "1") != 0 || p != end)
      return vg_err_set(err, "line %u: expected 'vgpu-grant %d' first", line, VG_GRANT_VERSION);
    *header = true;
    return 0;
  }
  if (strcmp(word, "gpu") == 0) return parse_gpu(p, end, line, g, err);
  return vg_err_set(err, "line %u: unknown entry '%s'", line, word);
}

int vg_grant_parse(const char *text, size_t len, struct vg_grant *g, struct vg_err *err) {
  memset(g, 0, sizeof(*g));
  if (len > VG_GRANT_MAX_BYTES) return vg_err_set(err, "larger than %d bytes", VG_GRANT_MAX_BYTES);
  if (memchr(text, '\0', len) != NULL) return vg_err_set(err, "contains a NUL byte");
  bool header = false;
  unsigned line = 0;
  for (const char *p = text, *stop = text + len; p < stop;) {
    const char *nl = memchr(p, '\n', (size_t)(stop - p));
    const char *end = nl != NULL ? nl : stop;
    if (parse_line(p, end, ++line, &header, g, err) != 0) return -1;
    p = nl != NULL ? nl + 1 : stop;
  }
  if (!header) return vg_err_set(err, "empty: no 'vgpu-grant %d' line", VG_GRANT_VERSION);
  if (g->count == 0) return vg_err_set(err, "grants no GPU");
  return 0;
}

int vg_grant_load(const char *dir, struct vg_grant *g, struct vg_err *err) {
  char path[4096], text[VG_GRANT_MAX_BYTES + 1];
  snprintf(path, sizeof(path), "%s/%s", dir, VG_GRANT_FILE);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT) return 1;
  if (fd < 0) return vg_err_set(err, "cannot open the grant %s: %s", path, strerror(errno));
  size_t len = 0;
  int e = vg_read_all(fd, text, sizeof(text), &len);
  close(fd);
  if (e != 0) return vg_err_set(err, "cannot read the grant %s: %s", path, strerror(e));
  struct vg_err why;
  if (vg_grant_parse(text, len, g, &why) != 0)
    return vg_err_set(err, "the grant %s is not valid: %s", path, why.msg);
  return 0;
}

int vg_grant_format(const struct vg_grant *g, char *buf, size_t len) {
  int off = snprintf(buf, len, "vgpu-grant %d\n", VG_GRANT_VERSION);
  for (unsigned i = 0; i < g->count && off >= 0 && (size_t)off < len; i++) {
    const struct vg_grant_gpu *gpu = &g->gpu[i];
    off += snprintf(buf + off, len - (size_t)off, "gpu %s memory %llu cores %u policy %s\n",
                    gpu->uuid, (unsigned long long)gpu->memory, gpu->cores,
                    gpu->policy == VG_SM_POLICY_SHARE ? "share" : "hard");
  }
  return off >= 0 && (size_t)off < len ? off : -1;
}

static int write_all(int fd, const char *buf, size_t len) {
  while (len > 0) {
    ssize_t n = write(fd, buf, len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return -1;
    buf += n;
    len -= (size_t)n;
  }
  return 0;
}

int vg_grant_write(const char *dir, const struct vg_grant *g, struct vg_err *err) {
  char text[VG_GRANT_MAX_BYTES], tmp[4096], path[4096];
  int len = vg_grant_format(g, text, sizeof(text));
  if (len < 0)
    return vg_err_set(err, "the grant for %s does not fit in %d bytes", dir, VG_GRANT_MAX_BYTES);
  snprintf(path, sizeof(path), "%s/%s", dir, VG_GRANT_FILE);
  snprintf(tmp, sizeof(tmp), "%s/.%s.%ld", dir, VG_GRANT_FILE, (long)getpid());
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return vg_err_set(err, "cannot create %s: %s", tmp, strerror(errno));
  if (write_all(fd, text, (size_t)len) != 0 || fsync(fd) != 0) {
    int e = errno;
    close(fd);
    unlink(tmp);
    return vg_err_set(err, "cannot write %s: %s", tmp, strerror(e));
  }
  close(fd);
  if (rename(tmp, path) != 0) {
    int e = errno;
    unlink(tmp);
    return vg_err_set(err, "cannot rename %s to %s: %s", tmp, path, strerror(e));
  }
  return 0;
}

const struct vg_grant_gpu *vg_grant_find(const struct vg_grant *g, const char *uuid) {
  for (unsigned i = 0; i < g->count; i++)
    if (strcmp(g->gpu[i].uuid, uuid) == 0) return &g->gpu[i];
  return NULL;
}

bool vg_grant_dir(char *out, size_t len) {
  struct stat st;
  if (stat(VG_GRANT_DIR, &st) == 0 && S_ISDIR(st.st_mode)) {
    snprintf(out, len, "%s", VG_GRANT_DIR);
    return true;
  }
  const char *env = getenv("VGPU_GRANT_DIR");
  if (env == NULL || *env == '\0') return false;
  snprintf(out, len, "%s", env);
  return true;
}
