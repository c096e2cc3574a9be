/*
 * vgpu_sim_tool.c -- `vgpu-sim`: inject faults into the simulated GPU.
 *
 *   vgpu-sim fault --device N --xid CODE   record XID CODE on device N
 *   vgpu-sim fault --device N --lost       device N falls off the bus
 *   vgpu-sim fault --device N --clear      forget both (the GPU was reset)
 *   vgpu-sim status                        one line per device
 *
 * It attaches to the same state file as the simulated libraries
 * ($VGPU_SIM_STATE, created from VGPU_SIM_* if it does not exist yet) and
 * changes vg_sim_device.fault (layout in sim_state.h) under the state lock.
 * What NVML then reports: nvml_events.c and docs/inventory.md.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_state.h"
#include "opt.h"

static void print_usage(FILE *to) {
  fprintf(to,
          "usage: vgpu-sim fault --device N (--xid CODE | --lost | --clear)\n"
          "       vgpu-sim status\n"
          "       vgpu-sim --help | --version\n");
}

static int usage(void) {
  print_usage(stderr);
  return 2;
}

static int parse_uint(const char *s, unsigned long max, unsigned long *out) {
  char *end;
  errno = 0;
  unsigned long v = strtoul(s, &end, 10);
  if (s[0] < '0' || s[0] > '9' || *end != '\0' || errno != 0 || v > max) return -1;
  *out = v;
  return 0;
}

static int attach(struct vg_sim *sim) {
  struct vg_err err;
  if (vg_sim_attach(sim, false, &err) != 0) {
    fprintf(stderr, "vgpu-sim: %s\n", err.msg);
    return -1;
  }
  return 0;
}

static int status(void) {
  struct vg_sim sim;
  if (attach(&sim) != 0) return 1;
  for (unsigned i = 0; i < sim.st->config.devices; i++) {
    const struct vg_sim_device *d = &sim.st->dev[i];
    uint32_t f = __atomic_load_n(&d->fault, __ATOMIC_ACQUIRE);
    unsigned seq = (f & VG_SIM_FAULT_XID_SEQ_MASK) >> VG_SIM_FAULT_XID_SEQ_SHIFT;
    printf("device %u %s %s xid_events=%u last_xid=%u\n", i, d->uuid,
           (f & VG_SIM_FAULT_LOST) ? "lost" : "ok", seq, f >> VG_SIM_FAULT_XID_SHIFT);
  }
  return 0;
}

static int fault(int argc, char **argv) {
  unsigned long dev = ULONG_MAX, xid = 0;
  enum { NONE, XID, LOST, CLEAR } what = NONE;
  for (int i = 0; i < argc; i++) {
    if (strcmp(argv[i], "--device") == 0 && i + 1 < argc) {
      if (parse_uint(argv[++i], VG_SIM_MAX_DEVICES - 1, &dev) != 0) {
        fprintf(stderr, "vgpu-sim: bad --device '%s'\n", argv[i]);
        return 2;
      }
    } else if (strcmp(argv[i], "--xid") == 0 && i + 1 < argc && what == NONE) {
      if (parse_uint(argv[++i], 0xffff, &xid) != 0 || xid == 0) {
        fprintf(stderr, "vgpu-sim: bad --xid '%s' (1..65535)\n", argv[i]);
        return 2;
      }
      what = XID;
    } else if (strcmp(argv[i], "--lost") == 0 && what == NONE) {
      what = LOST;
    } else if (strcmp(argv[i], "--clear") == 0 && what == NONE) {
      what = CLEAR;
    } else {
      static const char *const known[] = {"--device", "--xid", "--lost", "--clear", NULL};
      if (argv[i][0] == '-' && vg_opt_suggest(argv[i], known) != NULL)
        vg_opt_unknown("vgpu-sim fault", argv[i], known);
      else
        fprintf(stderr, "vgpu-sim fault: unexpected argument '%s' (see vgpu-sim --help)\n",
                argv[i]);
      return 2; /* one line, as every program answers a mistyped option */
    }
  }
  if (dev == ULONG_MAX || what == NONE) return usage();
  struct vg_sim sim;
  if (attach(&sim) != 0) return 1;
  if (dev >= sim.st->config.devices) {
    fprintf(stderr, "vgpu-sim: no device %lu (the simulator has %u)\n", dev,
            sim.st->config.devices);
    return 1;
  }
  uint32_t *fp = &sim.st->dev[dev].fault;
  vg_sim_lock(&sim);
  uint32_t f = __atomic_load_n(fp, __ATOMIC_ACQUIRE);
  switch (what) {
    case XID: {
      uint32_t seq = ((f & VG_SIM_FAULT_XID_SEQ_MASK) >> VG_SIM_FAULT_XID_SEQ_SHIFT) + 1;
      f = (f & VG_SIM_FAULT_LOST) |
          ((seq << VG_SIM_FAULT_XID_SEQ_SHIFT) & VG_SIM_FAULT_XID_SEQ_MASK) |
          ((uint32_t)xid << VG_SIM_FAULT_XID_SHIFT);
      break;
    }
    case LOST:
      f |= VG_SIM_FAULT_LOST;
      break;
    default: /* CLEAR: the count stays, so no old XID is delivered again */
      f &= VG_SIM_FAULT_XID_SEQ_MASK;
      break;
  }
  __atomic_store_n(fp, f, __ATOMIC_RELEASE);
  vg_sim_unlock(&sim);
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 2 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
    print_usage(stdout);
    return 0;
  }
  if (argc == 2 && strcmp(argv[1], "--version") == 0) {
    printf("vgpu-sim %s\n", VG_VERSION);
    return 0;
  }
  if (argc >= 2 && strcmp(argv[1], "status") == 0 && argc == 2) return status();
  if (argc >= 2 && strcmp(argv[1], "fault") == 0) return fault(argc - 2, argv + 2);
  if (argc >= 2) {
    static const char *const options[] = {"--help", "--version", NULL};
    static const char *const verbs[] = {"status", "fault", NULL};
    if (argv[1][0] == '-') {
      vg_opt_unknown("vgpu-sim", argv[1], options);
    } else {
      const char *near = vg_opt_suggest(argv[1], verbs);
      fprintf(stderr, "vgpu-sim: unknown command '%s'%s%s%s\n", argv[1],
              near ? " (did you mean " : "", near ? near : "", near ? "?)" : "");
    }
    return 2; /* one line, as every program answers a mistyped option */
  }
  return usage();
}
