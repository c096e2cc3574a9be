/*
 * device_id.h -- the device IDs the plugin advertises to the kubelet:
 * "<GPU UUID>::<n>", n a decimal number unique on its GPU (docs/allocation.md).
 *
 * The kubelet hands these back in GetPreferredAllocation, Allocate and
 * PodResources; the plugin, the binder and steering all need the GPU an ID
 * is on, so the format is written and read here only.
 */
#ifndef VG_PLUGIN_DEVICE_ID_H
#define VG_PLUGIN_DEVICE_ID_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Writes uuid's n-th ID into out; false when it does not fit. */
bool vg_device_id_format(char *out, size_t len, const char *uuid, uint64_t n);
/* Splits id into the length of its UUID part and its number; false unless id
 * is a non-empty UUID, "::" and a decimal number. */
bool vg_device_id_parse(const char *id, size_t *uuid_len, uint64_t *n);
/* Is id one of the IDs on the GPU uuid? */
bool vg_device_id_on(const char *id, const char *uuid);

#endif
