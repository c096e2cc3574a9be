/*
 * slot_dir.h -- the mount points inside a container's slot directory.
 *
 * The slot directory is mounted read-only at /usr/local/vgpu, and the
 * region file, the grant directory, libvgpu.so and the vgpu CLI are mounted
 * on top of it (docs/device-plugin.md). A container runtime (runc) creates a
 * bind mount's missing destination, but under a read-only mount it cannot,
 * and the container would fail to start: so Allocate makes every mount point
 * in the slot on the host first. Slots written before the mount was
 * read-only may hold whatever a tenant put there (docs/security.md, "A
 * tenant against its neighbours and the node"); that is removed, so that
 * nothing of one tenant reaches the next container of the same device IDs.
 */
#ifndef VG_PLUGIN_SLOT_DIR_H
#define VG_PLUGIN_SLOT_DIR_H

#include <stdbool.h>
#include <stddef.h>

/* Names inside the slot directory that the container sees as mount points. */
#define VG_SLOT_GRANT "grant"
#define VG_SLOT_LIBRARY "libvgpu.so"
#define VG_SLOT_CLI "bin/vgpu"

/* In the existing directory slot_dir: removes every entry that is not one
 * of the slot's own (anything a tenant left), then makes sure that grant/
 * and bin/ are directories, libvgpu.so (and bin/vgpu when cli) an empty
 * regular file with one link, and that region.cache, if present, is a
 * regular file (Allocate replaces it by rename next). Whatever is there of
 * another kind -- a symbolic link, a FIFO, a directory -- is removed first;
 * no link is followed. Returns 0, or -1 with a message in err. */
int vg_slot_dir_prepare(const char *slot_dir, bool cli, char *err, size_t len);

#endif
