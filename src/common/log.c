/* log.c -- see log.h. */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

static int g_threshold = -1; /* -1: not configured yet */
static int g_default = VG_LOG_WARN;

static const char *const g_names[] = {"error", "warn", "info", "debug"};

void vg_log_configure(void) {
  const char *v = getenv("VGPU_LOG_LEVEL");
  int level = -1;
  for (int i = 0; v != NULL && i <= VG_LOG_DEBUG; i++)
    if (strcasecmp(v, g_names[i]) == 0 || (v[0] == '0' + i && v[1] == '\0')) level = i;
  __atomic_store_n(&g_threshold, level >= 0 ? level : g_default, __ATOMIC_RELAXED);
  if (level < 0 && v != NULL && *v != '\0')
    vg_warn("VGPU_LOG_LEVEL=%.64s is not error, warn, info, debug or 0-3; logging at %s", v,
            g_names[g_default]);
}

void vg_log_set_default(enum vg_log_level level) {
  g_default = level;
  vg_log_configure();
}

void vg_logv(enum vg_log_level level, const char *fmt, va_list ap) {
  if (__atomic_load_n(&g_threshold, __ATOMIC_RELAXED) < 0) vg_log_configure();
  if ((int)level > __atomic_load_n(&g_threshold, __ATOMIC_RELAXED)) return;
  char line[1024];
  int n = snprintf(line, sizeof(line), "vgpu[%d] %s: ", (int)getpid(), g_names[level]);
  int m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
  size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
  if (len > sizeof(line) - 2) len = sizeof(line) - 2;
  line[len++] = '\n';
  ssize_t ignored = write(STDERR_FILENO, line, len);
  (void)ignored;
}

void vg_log(enum vg_log_level level, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vg_logv(level, fmt, ap);
  va_end(ap);
}
