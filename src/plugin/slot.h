/*
 * slot.h -- the name of a container's slot directory.
 *
 * Allocate creates <stateDir>/slots/<name> for a container's device IDs and
 * the binder finds it again from the IDs the kubelet reports
 * (docs/allocation.md), so both must compute the same name: FNV-1a 64 over
 * the sorted IDs, each followed by '\n', as 16 hex digits. The order the
 * kubelet lists IDs in does not matter.
 */
#ifndef VG_PLUGIN_SLOT_H
#define VG_PLUGIN_SLOT_H

#include <stdbool.h>
#include <stddef.h>

/* Writes the name into out; -1 when n is 0 or memory runs out. */
int vg_slot_name(const char *const *ids, size_t n, char out[17]);

/* Is a directory entry a slot name (16 lowercase hex digits)? */
bool vg_slot_name_valid(const char *name);

#endif
