/*
 * sim_state.c -- attaching to the shared device state, process slots, memory
 * charges and the reaper. See sim_state.h for the model.
 *
 * Two library copies live in one process (libcuda.so.1 and
 * libnvidia-ml.so.1 each link this file). Only libcuda claims a slot; NVML is
 * an observer. POSIX record locks never conflict with their own process, so
 * an observer cannot test its own process's slot by lock: it recognises it by
 * pid (read afresh, so a forked child is itself) and PID-namespace inode
 * instead and leaves it alone.
 *
 * For the same reason the state file is never closed once attached: closing
 * any descriptor of a file drops all of the process's record locks on it.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "sim_state.h"

static int init_state(void *base, size_t size, void *arg, struct vg_err *err) {
  (void)size;
  struct vg_sim_state *st = base;
  const struct vg_sim_config *cfg = arg;
  if (vg_shared_mutex_init(&st->lock) != 0)
    return vg_err_set(err, "cannot initialise the simulator state mutex");
  st->config = *cfg;
  for (unsigned i = 0; i < cfg->devices; i++) {
    struct vg_sim_device *d = &st->dev[i];
    snprintf(d->name, sizeof(d->name), "%s", cfg->name);
    vg_sim_device_uuid(i, d->uuid, sizeof(d->uuid));
    vg_sim_device_bus_id(i, d->bus_id, sizeof(d->bus_id));
    d->mem_total = cfg->memory[i];
    d->sms = cfg->sms;
  }
  return 0;
}

static bool config_equal(const struct vg_sim_config *a, const struct vg_sim_config *b) {
  if (a->devices != b->devices || a->sms != b->sms || a->context_mem != b->context_mem ||
      a->wave_ns != b->wave_ns || a->launch_ns != b->launch_ns || a->event_ns != b->event_ns ||
      a->sync_ns != b->sync_ns || a->min_wave_pct != b->min_wave_pct ||
      strcmp(a->name, b->name) != 0)
    return false;
  for (unsigned i = 0; i < a->devices; i++)
    if (a->memory[i] != b->memory[i]) return false;
  return true;
}

uint64_t vg_sim_start_ticks(const char *stat_path) {
  char buf[1024];
  int fd = open(stat_path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  ssize_t n = read(fd, buf, sizeof(buf) - 1);
  close(fd);
  if (n <= 0) return 0;
  buf[n] = '\0';
  /* "pid (comm) state ...": comm may hold spaces and ')', so fields are
   * counted after the last ')'; starttime is field 22, the 20th after it. */
  const char *p = strrchr(buf, ')');
  for (int field = 2; p != NULL && field < 22; field++) p = strchr(p + 1, ' ');
  return p != NULL ? (uint64_t)strtoull(p + 1, NULL, 10) : 0;
}

static uint64_t own_pidns(void) {
  struct stat st;
  return stat("/proc/self/ns/pid", &st) == 0 ? (uint64_t)st.st_ino : 0;
}

/* The robust mutex's previous holder died mid-update: the slots are the
 * truth, recompute the slot high-water mark and the device totals from them. */
static void repair_state(void *arg) {
  struct vg_sim_state *st = arg;
  for (unsigned s = 0; s < VG_SIM_MAX_PROCS; s++)
    if (st->slot[s].in_use && st->slots_hwm < s + 1) st->slots_hwm = s + 1;
  for (unsigned d = 0; d < VG_SIM_MAX_DEVICES; d++) {
    uint64_t sum = 0;
    for (unsigned s = 0; s < VG_SIM_MAX_PROCS; s++)
      if (st->slot[s].in_use) sum += st->slot[s].used[d];
    st->dev[d].mem_used = sum;
  }
}

void vg_sim_lock(struct vg_sim *sim) {
  vg_shared_mutex_lock(&sim->st->lock, VG_SHM_LOCK_WAIT_MS, repair_state, sim->st);
}

void vg_sim_unlock(struct vg_sim *sim) { vg_shared_mutex_unlock(&sim->st->lock); }

static void release_slot_locked(struct vg_sim_state *st, unsigned s) {
  struct vg_sim_slot *slot = &st->slot[s];
  for (unsigned d = 0; d < VG_SIM_MAX_DEVICES; d++) {
    uint64_t bytes = slot->used[d];
    st->dev[d].mem_used -= bytes < st->dev[d].mem_used ? bytes : st->dev[d].mem_used;
  }
  uint32_t gen = slot->gen;
  memset(slot, 0, sizeof(*slot));
  slot->gen = gen;
}

static bool slot_is_dead(struct vg_sim *sim, unsigned s) {
  const struct vg_sim_slot *slot = &sim->st->slot[s];
  if (s == sim->slot) return false;
  if (slot->pid == (int32_t)getpid() && slot->pidns == sim->pidns)
    return sim->slot != VG_SIM_NO_SLOT; /* our pid in another slot: a dead predecessor */
  return !vg_shm_slot_alive(&sim->shm, s);
}

void vg_sim_reap_locked(struct vg_sim *sim) {
  for (unsigned s = 0; s < sim->st->slots_hwm && s < VG_SIM_MAX_PROCS; s++) {
    if (!sim->st->slot[s].in_use || !slot_is_dead(sim, s)) continue;
    vg_debug("simulator: reaping dead process %d (slot %u)", (int)sim->st->slot[s].pid, s);
    release_slot_locked(sim->st, s);
  }
}

static int claim_slot(struct vg_sim *sim, struct vg_err *err) {
  for (unsigned s = 0; s < VG_SIM_MAX_PROCS; s++) {
    if (vg_shm_claim_slot(&sim->shm, s) != 0) continue;
    vg_sim_lock(sim);
    struct vg_sim_slot *slot = &sim->st->slot[s];
    if (slot->in_use) release_slot_locked(sim->st, s); /* the lock was free: owner died */
    slot->in_use = 1;
    slot->gen++;
    if (sim->st->slots_hwm < s + 1) sim->st->slots_hwm = s + 1;
    slot->pid = (int32_t)sim->pid;
    slot->pidns = sim->pidns;
    slot->started = sim->started;
    sim->slot = s;
    sim->gen = slot->gen;
    vg_sim_unlock(sim);
    return 0;
  }
  return vg_err_set(err, "simulator state %s: all %u process slots are in use", sim->shm.path,
                    VG_SIM_MAX_PROCS);
}

int vg_sim_attach(struct vg_sim *sim, bool claim, struct vg_err *err) {
  struct vg_sim_config cfg;
  if (vg_sim_config_from_env(&cfg, err) != 0) return -1;
  char path[PATH_MAX];
  vg_sim_state_path(path, sizeof(path));
  struct vg_shm_spec spec = {"simulator state",
                             VG_SIM_MAGIC,
                             VG_SIM_VERSION_MAJOR,
                             VG_SIM_VERSION_MINOR,
                             sizeof(struct vg_sim_state),
                             init_state,
                             &cfg};
  memset(sim, 0, sizeof(*sim));
  sim->slot = VG_SIM_NO_SLOT;
  if (vg_shm_open(&sim->shm, path, &spec, err) != 0) return -1;
  sim->st = sim->shm.base;
  sim->pid = getpid();
  sim->pidns = own_pidns();
  sim->started = vg_sim_start_ticks("/proc/self/stat");
  if (!sim->shm.created && !config_equal(&cfg, &sim->st->config))
    vg_info(
        "simulator state %s already exists; its configuration wins over VGPU_SIM_* "
        "(remove the file to apply new values)",
        path);
  if (claim && claim_slot(sim, err) != 0) {
    vg_shm_close(&sim->shm);
    return -1;
  }
  vg_sim_lock(sim);
  vg_sim_reap_locked(sim);
  vg_sim_unlock(sim);
  return 0;
}

static bool fits(const struct vg_sim_device *d, uint64_t bytes) {
  return d->mem_used <= d->mem_total && bytes <= d->mem_total - d->mem_used;
}

bool vg_sim_charge(struct vg_sim *sim, unsigned dev, uint64_t bytes) {
  struct vg_sim_device *d = &sim->st->dev[dev];
  vg_sim_lock(sim);
  if (!fits(d, bytes)) vg_sim_reap_locked(sim);
  bool ok = fits(d, bytes);
  if (ok) {
    d->mem_used += bytes;
    sim->st->slot[sim->slot].used[dev] += bytes;
  }
  vg_sim_unlock(sim);
  return ok;
}

void vg_sim_refund(struct vg_sim *sim, unsigned dev, uint64_t bytes) {
  struct vg_sim_device *d = &sim->st->dev[dev];
  struct vg_sim_slot *slot = &sim->st->slot[sim->slot];
  vg_sim_lock(sim);
  if (bytes > slot->used[dev]) bytes = slot->used[dev];
  slot->used[dev] -= bytes;
  d->mem_used -= bytes < d->mem_used ? bytes : d->mem_used;
  vg_sim_unlock(sim);
}

void vg_sim_context_count(struct vg_sim *sim, unsigned dev, int delta) {
  vg_sim_lock(sim);
  uint32_t *n = &sim->st->slot[sim->slot].contexts[dev];
  if (delta > 0 || *n > 0) *n = (uint32_t)((int)*n + delta);
  vg_sim_unlock(sim);
}

void vg_sim_mem_info(struct vg_sim *sim, unsigned dev, uint64_t *used, uint64_t *total) {
  vg_sim_lock(sim);
  vg_sim_reap_locked(sim);
  *used = sim->st->dev[dev].mem_used;
  *total = sim->st->dev[dev].mem_total;
  vg_sim_unlock(sim);
}
