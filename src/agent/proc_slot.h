/*
 * proc_slot.h -- which container of ours a process belongs to, found from
 * the host: the slot directory mounted in its mount namespace.
 *
 * NVML names the processes on a GPU by PID only. Every container the device
 * plugin gives a GPU has its slot directory (<stateDir>/slots/<16 hex>)
 * mounted at /usr/local/vgpu (docs/device-plugin.md), and a process cannot
 * leave its mount namespace, remove that mount point or hide the mount from
 * /proc/<pid>/mountinfo without privileges the tenant does not have
 * (docs/security.md). So the mount answers "whose is this process" for
 * exactly the processes that matter -- also for one that never loaded
 * libvgpu, which is what the backstop looks for. No cgroup layout, runtime
 * or API server is involved.
 */
#ifndef VG_AGENT_PROC_SLOT_H
#define VG_AGENT_PROC_SLOT_H

#include <stddef.h>
#include <sys/types.h>

#define VG_SLOT_MOUNT_POINT "/usr/local/vgpu"

/* From the text of a mountinfo file: the slot name (16 hex digits and a NUL)
 * of the mount at VG_SLOT_MOUNT_POINT whose root ends in /slots/<name>.
 * 1 found, 0 none. */
int vg_mountinfo_slot(const char *text, size_t len, char slot[17]);

/* The same for process pid, read from <proc_root>/<pid>/mountinfo
 * (proc_root: "/proc" on a node). 1 found, 0 not one of ours, -1 the file
 * could not be read (the process is gone, or another PID namespace). */
int vg_proc_slot(const char *proc_root, pid_t pid, char slot[17]);

#endif
