/*
 * sim_visible.c -- which GPUs a process may see: NVIDIA_VISIBLE_DEVICES.
 *
 * On a real node the NVIDIA container toolkit reads NVIDIA_VISIBLE_DEVICES
 * when it creates a container and mounts only the listed GPUs' device nodes;
 * the driver inside then enumerates just those, renumbered from 0 in PCI
 * order (CUDA and NVML alike). The simulator has no device nodes to mount,
 * so both of its libraries apply the variable themselves when they attach.
 *
 * The value follows libnvidia-container's rules (docs/simulator.md has the
 * table): unset = every GPU (outside a container nothing restricts the
 * driver); "all"; "none", "void" or empty = none; otherwise a comma list of
 * indices, GPU-UUIDs (case-insensitive prefixes that name one GPU), PCI bus
 * ids and MIG-UUIDs. The order of the list and repeated entries change
 * nothing: the selection is a set, enumerated in physical order. Where the
 * toolkit would refuse to create the container -- an entry that names no GPU
 * -- the entry is skipped and reported back, so a test sees the message
 * instead of a container that never starts. A token that is none of those
 * forms, or a prefix that fits several GPUs (the toolkit silently takes the
 * first: here, with UUIDs alike but for their last digits, that would be
 * the wrong GPU), is an error.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sim_state.h"

#define VAR "NVIDIA_VISIBLE_DEVICES"

int vg_sim_match_uuid(const struct vg_sim_state *st, const unsigned *cand, unsigned n,
                      const char *token, size_t len) {
  int found = -1;
  for (unsigned i = 0; i < n; i++) {
    const char *uuid = st->dev[cand[i]].uuid;
    if (len > strlen(uuid) || strncasecmp(uuid, token, len) != 0) continue;
    if (found >= 0) return -2;
    found = (int)i;
  }
  return found;
}

/* "[domain:]bus:device[.function]" in hex, the whole token; the bus of the
 * simulated GPU it names, or -1 if it names none (-2: not a bus id). */
static int match_bus_id(const struct vg_sim_state *st, const char *token) {
  unsigned domain = 0, bus = 0, dev = 0, fn = 0;
  int used = 0;
  if (sscanf(token, "%x:%x:%x.%x%n", &domain, &bus, &dev, &fn, &used) != 4 &&
      sscanf(token, "%x:%x:%x%n", &domain, &bus, &dev, &used) != 3)
    return -2;
  if (token[used] != '\0') return -2;
  for (unsigned i = 0; i < st->config.devices; i++)
    if (domain == 0 && dev == 0 && fn == 0 && bus == vg_sim_device_pci_bus(i)) return (int)i;
  return -1;
}

static bool all_digits(const char *s) {
  if (*s == '\0') return false;
  for (; *s != '\0'; s++)
    if (!isdigit((unsigned char)*s)) return false;
  return true;
}

/* Notes an entry that names no GPU (the first few; the rest are counted). */
static void note_ignored(struct vg_err *ignored, const char *token, const char *why) {
  size_t used = strlen(ignored->msg);
  if (used + 1 >= sizeof(ignored->msg)) return;
  snprintf(ignored->msg + used, sizeof(ignored->msg) - used, "%s'%s' (%s)", used ? ", " : "", token,
           why);
}

/* One entry of the list: marks what it selects in sel[]. */
static int select_token(const struct vg_sim_state *st, const char *value, const char *token,
                        bool *sel, struct vg_err *ignored, struct vg_err *err) {
  unsigned count = st->config.devices;
  if (strcasecmp(token, "all") == 0) {
    for (unsigned i = 0; i < count; i++) sel[i] = true;
    return 0;
  }
  if (strncasecmp(token, "GPU-", 4) == 0 && token[4] != '\0') {
    unsigned every[VG_SIM_MAX_DEVICES];
    for (unsigned i = 0; i < count; i++) every[i] = i;
    int i = vg_sim_match_uuid(st, every, count, token, strlen(token));
    if (i == -2)
      return vg_err_set(err,
                        VAR
                        "='%s': '%s' is the beginning of several GPUs' UUIDs; give enough of "
                        "the UUID to name one",
                        value, token);
    if (i < 0)
      note_ignored(ignored, token, "no GPU has this UUID");
    else
      sel[i] = true;
    return 0;
  }
  if (strncasecmp(token, "MIG-", 4) == 0 && token[4] != '\0') {
    note_ignored(ignored, token, "MIG devices are not simulated");
    return 0;
  }
  if (all_digits(token)) {
    char *end;
    unsigned long i = strtoul(token, &end, 10);
    if (i < count && strlen(token) <= 6)
      sel[i] = true;
    else
      note_ignored(ignored, token, "no GPU has this index");
    return 0;
  }
  int bus = match_bus_id(st, token);
  if (bus >= 0) {
    sel[bus] = true;
    return 0;
  }
  if (bus == -1) {
    note_ignored(ignored, token, "no GPU has this PCI bus id");
    return 0;
  }
  return vg_err_set(err,
                    VAR
                    "='%s': '%s' is not a GPU index, GPU-UUID, PCI bus id or MIG-UUID (the "
                    "value may also be 'all', 'none' or 'void')",
                    value, token);
}

int vg_sim_visible_devices(const struct vg_sim_state *st, unsigned *phys, unsigned *n,
                           struct vg_err *ignored, struct vg_err *err) {
  unsigned count = st->config.devices;
  bool sel[VG_SIM_MAX_DEVICES] = {false};
  const char *value = getenv(VAR);
  ignored->msg[0] = '\0';
  *n = 0;
  if (value == NULL) {
    for (unsigned i = 0; i < count; i++) sel[i] = true;
  } else if (strcmp(value, "none") != 0 && strcmp(value, "void") != 0) {
    char token[128];
    for (const char *p = value; *p != '\0';) {
      size_t len = strcspn(p, ",");
      const char *start = p, *stop = p + len;
      while (start < stop && *start == ' ') start++;
      while (stop > start && stop[-1] == ' ') stop--;
      p += len + (p[len] == ',');
      if (stop == start) continue; /* "0,,1" and a trailing comma, as the toolkit */
      if ((size_t)(stop - start) >= sizeof(token))
        return vg_err_set(err, VAR "='%s': an entry is longer than any GPU identifier", value);
      snprintf(token, sizeof(token), "%.*s", (int)(stop - start), start);
      if (select_token(st, value, token, sel, ignored, err) != 0) return -1;
    }
  }
  for (unsigned i = 0; i < count; i++)
    if (sel[i]) phys[(*n)++] = i;
  return 0;
}
