/*
 * log.h -- the one logging module, with levels.
 *
 * Messages go to stderr as one write(2) per line, prefixed with "vgpu" and the
 * level, so that lines from several processes of a container do not
 * interleave mid-line and no stdio lock of the host program is taken (libvgpu
 * runs inside arbitrary programs). The threshold comes from VGPU_LOG_LEVEL
 * (error, warn, info, debug, or 0-3); the default is warn.
 */
#ifndef VG_LOG_H
#define VG_LOG_H

enum vg_log_level { VG_LOG_ERROR = 0, VG_LOG_WARN = 1, VG_LOG_INFO = 2, VG_LOG_DEBUG = 3 };

void vg_log(enum vg_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Re-reads VGPU_LOG_LEVEL; called once at start-up and by tests. */
void vg_log_configure(void);

#define vg_error(...) vg_log(VG_LOG_ERROR, __VA_ARGS__)
#define vg_warn(...) vg_log(VG_LOG_WARN, __VA_ARGS__)
#define vg_info(...) vg_log(VG_LOG_INFO, __VA_ARGS__)
#define vg_debug(...) vg_log(VG_LOG_DEBUG, __VA_ARGS__)

#endif
