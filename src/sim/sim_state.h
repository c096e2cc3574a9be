/*
 * sim_state.h -- the simulated GPU's device state, shared by every process.
 *
 * A real GPU is one piece of hardware that every process on the machine sees:
 * memory one process allocates is gone for the others, and kernels of all
 * processes queue on the same engines. The simulator models that with one
 * memory-mapped file ($VGPU_SIM_STATE, default /dev/shm/vgpu-sim-<uid>.state)
 * opened through shmfile.h. It holds:
 *
 *  - the configuration (device count, memory, SMs, name, cost model), fixed
 *    by whichever process created the file;
 *  - per device: memory in use, the kernel timeline (busy_until) and a ring
 *    of recent busy intervals from which NVML computes utilisation;
 *  - per process slot: what that process holds on each device.
 *
 * Every update happens under one robust process-shared mutex. A device's
 * mem_used is always the sum of its slots' used bytes; slots whose owner died
 * (its POSIX lock byte is free, see shmfile.h) are "reaped": their memory goes
 * back to the device, as a real driver frees a dead process's memory.
 *
 * This file is linked, hidden, into both libcuda.so.1 and libnvidia-ml.so.1;
 * each library has its own copy of the process-local variables.
 */
#ifndef VG_SIM_STATE_H
#define VG_SIM_STATE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "err.h"
#include "shmfile.h"

#define VG_SIM_MAGIC 0x4d495356u /* "VSIM" little-endian */
#define VG_SIM_VERSION_MAJOR 3
#define VG_SIM_VERSION_MINOR 0
#define VG_SIM_MAX_DEVICES 16
#define VG_SIM_MAX_PROCS 1024
#define VG_SIM_RING 4096 /* busy intervals remembered per device */
#define VG_SIM_NAME_LEN 96
#define VG_SIM_UUID_LEN 96
#define VG_SIM_BUSID_LEN 32
#define VG_SIM_GRANULE (2ull << 20) /* every device allocation is a multiple */
#define VG_SIM_NO_SLOT UINT32_MAX

/* Fault bits in vg_sim_device.fault (set by tests or future injection). */
#define VG_SIM_FAULT_LOST 0x1u
/* XID events (vgpu-sim fault --xid), packed into the same word so that the
 * state file's layout does not change: bits 8..15 count the XID events
 * recorded so far (mod 256), bits 16..31 hold the last XID code. NVML's event
 * API (nvml_events.c) reports a change of the count as one
 * nvmlEventTypeXidCriticalError event. Read and written with __atomic. */
#define VG_SIM_FAULT_XID_SEQ_SHIFT 8
#define VG_SIM_FAULT_XID_SEQ_MASK 0xff00u
#define VG_SIM_FAULT_XID_SHIFT 16

struct vg_sim_config {
  uint32_t devices;
  uint32_t sms;
  uint64_t memory[VG_SIM_MAX_DEVICES];
  uint64_t context_mem;
  uint64_t wave_ns;
  /* The driver's own timing (docs/simulator.md, "Timing profiles"): what a
   * launch call costs the host, the GPU time an event record takes on its
   * stream, how late a synchronize wakes after the work ends, and the least
   * share of a wave's time a thinly filled wave takes (0: every wave takes
   * the whole wave time, the "ideal" profile). */
  uint64_t launch_ns, event_ns, sync_ns;
  uint32_t min_wave_pct, pad;
  char name[VG_SIM_NAME_LEN];
};

/* One stretch of the device timeline during which one process's kernels ran
 * back to back. Contiguous kernels of the same slot are merged. */
struct vg_sim_interval {
  uint64_t start;
  uint64_t end;
  uint32_t slot;
  uint32_t gen;
};

struct vg_sim_device {
  char name[VG_SIM_NAME_LEN];
  char uuid[VG_SIM_UUID_LEN];
  char bus_id[VG_SIM_BUSID_LEN]; /* NVML form: 00000000:10:00.0 */
  uint64_t mem_total;
  uint64_t mem_used;
  uint32_t sms;
  uint32_t fault;
  uint64_t busy_until; /* CLOCK_MONOTONIC ns when queued work ends */
  uint64_t busy_ns;    /* all kernel time ever queued */
  uint64_t ring_next;  /* intervals ever written; ring[(n-1) % RING] is last */
  struct vg_sim_interval ring[VG_SIM_RING];
};

struct vg_sim_slot {
  uint32_t in_use;
  uint32_t gen; /* bumped at every claim: tells reused slots apart */
  int32_t pid;
  uint32_t pad;
  uint64_t pidns;   /* inode of the owner's PID namespace */
  uint64_t started; /* the owner's start time (/proc/self/stat field 22, clock ticks) */
  uint64_t used[VG_SIM_MAX_DEVICES];
  uint64_t busy_ns[VG_SIM_MAX_DEVICES];
  uint32_t contexts[VG_SIM_MAX_DEVICES];
};

struct vg_sim_state {
  struct vg_shm_header header;
  pthread_mutex_t lock;
  uint32_t slots_hwm; /* slots [slots_hwm, MAX) have never been used */
  uint32_t pad;
  struct vg_sim_config config;
  struct vg_sim_device dev[VG_SIM_MAX_DEVICES];
  struct vg_sim_slot slot[VG_SIM_MAX_PROCS];
};

/* A process's attachment to the state file. */
struct vg_sim {
  struct vg_shm shm;
  struct vg_sim_state *st;
  uint32_t slot; /* VG_SIM_NO_SLOT for observers (NVML) */
  uint32_t gen;
  pid_t pid;
  uint64_t pidns;
  uint64_t started;
};

/* Field 22 (starttime) of a /proc/<pid>/stat file; 0 when unreadable. The
 * same in every PID namespace, and readable without ptrace rights: with the
 * pid in its own namespace, it names a process from another namespace. */
uint64_t vg_sim_start_ticks(const char *stat_path);

/* --- configuration (sim_config.c) --- */

/* Reads VGPU_SIM_* from the environment; -1 with err naming variable and value. */
int vg_sim_config_from_env(struct vg_sim_config *cfg, struct vg_err *err);
/* Where the state lives in a container the e2e runtime gave the simulated
 * driver (tests/e2e/sim-runtime.in mounts it there). */
#define VG_SIM_CONTAINER_STATE "/run/vgpu-sim/state"
/* Path of the state file: $VGPU_SIM_STATE, else VG_SIM_CONTAINER_STATE when
 * it exists, else /dev/shm/vgpu-sim-<uid>.state. */
void vg_sim_state_path(char *buf, size_t len);
/* Deterministic identity of device i. */
void vg_sim_device_uuid(unsigned i, char *buf, size_t len);
void vg_sim_device_uuid_bytes(unsigned i, unsigned char out[16]);
void vg_sim_device_bus_id(unsigned i, char *buf, size_t len);
unsigned vg_sim_device_pci_bus(unsigned i);

/* --- visible devices (sim_visible.c) --- */

/* The devices NVIDIA_VISIBLE_DEVICES lets this process see, as physical
 * indices in ascending order (phys holds VG_SIM_MAX_DEVICES); *n may be 0.
 * Entries naming no GPU are skipped and described in *ignored (empty msg:
 * none). -1 with err naming the value on a malformed or ambiguous entry. */
int vg_sim_visible_devices(const struct vg_sim_state *st, unsigned *phys, unsigned *n,
                           struct vg_err *ignored, struct vg_err *err);
/* Position in cand[0..n) of the device whose UUID starts with token[0..len)
 * (case-insensitive): -1 if none, -2 if several. */
int vg_sim_match_uuid(const struct vg_sim_state *st, const unsigned *cand, unsigned n,
                      const char *token, size_t len);

/* --- attachment (sim_state.c) --- */

/* Parses the env config, opens (creating) the state file. claim: also take a
 * process slot (libcuda does; NVML only observes). Reaps dead slots. */
int vg_sim_attach(struct vg_sim *sim, bool claim, struct vg_err *err);

void vg_sim_lock(struct vg_sim *sim);
void vg_sim_unlock(struct vg_sim *sim);
/* Gives dead processes' memory back. Caller holds the lock. */
void vg_sim_reap_locked(struct vg_sim *sim);

/* Charges bytes of device dev to this process's slot if they fit (reaping
 * first when they do not); false when the device is full. */
bool vg_sim_charge(struct vg_sim *sim, unsigned dev, uint64_t bytes);
void vg_sim_refund(struct vg_sim *sim, unsigned dev, uint64_t bytes);
/* Context bookkeeping for NVML's process list. */
void vg_sim_context_count(struct vg_sim *sim, unsigned dev, int delta);
/* Device-wide used/total after reaping. */
void vg_sim_mem_info(struct vg_sim *sim, unsigned dev, uint64_t *used, uint64_t *total);

/* --- timeline (sim_timeline.c) --- */

uint64_t vg_sim_now_ns(void);
/* Sleeps until CLOCK_MONOTONIC reaches t (ns). */
void vg_sim_sleep_until(uint64_t t);
/* Queues duration ns of kernel work for this process on device dev, after
 * `after` (the stream's last end); returns the work's end time. Applies the
 * bounded-queue back-pressure (sleeps while the backlog exceeds 50 ms). */
uint64_t vg_sim_queue_work(struct vg_sim *sim, unsigned dev, uint64_t after, uint64_t duration);
/* Busy ns of device dev in [from, to] (slot VG_SIM_NO_SLOT: all processes),
 * from the interval ring. Caller holds the lock. */
uint64_t vg_sim_busy_in_window_locked(const struct vg_sim_device *d, uint32_t slot, uint32_t gen,
                                      uint64_t from, uint64_t to);
/* End of this slot's last interval on d that starts before `to` (0: none). */
uint64_t vg_sim_last_activity_locked(const struct vg_sim_device *d, uint32_t slot, uint32_t gen,
                                     uint64_t to);

#endif
