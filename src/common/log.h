/*
 * log.h -- the one logging module, with levels.
 *
 * Messages go to stderr as one write(2) per line, prefixed with "vgpu" and the
 * level, so that lines from several processes of a container do not
 * interleave mid-line and no stdio lock of the host program is taken (libvgpu
 * runs inside arbitrary programs). The threshold comes from VGPU_LOG_LEVEL
 * (error, warn, info, debug, or 0-3); without it, the program's default:
 * warn for libvgpu and the CLI (quiet inside user programs), info for the
 * daemons, which report what they do. A malformed VGPU_LOG_LEVEL is said
 * once, naming the value, and the default applies.
 */
#ifndef VG_LOG_H
#define VG_LOG_H

enum vg_log_level { VG_LOG_ERROR = 0, VG_LOG_WARN = 1, VG_LOG_INFO = 2, VG_LOG_DEBUG = 3 };

#include <stdarg.h>

void vg_log(enum vg_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void vg_logv(enum vg_log_level level, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));

/* Re-reads VGPU_LOG_LEVEL; called once at start-up and by tests. */
void vg_log_configure(void);
/* The threshold when VGPU_LOG_LEVEL is not set (warn unless changed); re-reads
 * VGPU_LOG_LEVEL. */
void vg_log_set_default(enum vg_log_level level);

#define vg_error(...) vg_log(VG_LOG_ERROR, __VA_ARGS__)
#define vg_warn(...) vg_log(VG_LOG_WARN, __VA_ARGS__)
#define vg_info(...) vg_log(VG_LOG_INFO, __VA_ARGS__)
#define vg_debug(...) vg_log(VG_LOG_DEBUG, __VA_ARGS__)

#endif
