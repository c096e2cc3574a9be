/*
 * test_sim_launch.c -- the kernel cost model and the shared device timeline.
 *
 * Bounds are generous (a loaded CI machine oversleeps), but every test
 * checks both sides: work takes at least its simulated time, and not wildly
 * more.
 */
#include <string.h>

#include "sim_test.h"

static const char g_ptx[] = ".version 7.0\n.target sm_80\n.visible .entry k(\n)\n{\n\tret;\n}\n";

#define MS 1000000ull

static CUfunction load_kernel(void) {
  CUmodule m;
  CUfunction f;
  OK(cuModuleLoadData(&m, g_ptx));
  OK(cuModuleGetFunction(&f, m, "k"));
  return f;
}

/* With VGPU_SIM_SMS=10, VGPU_SIM_WAVE_US=2000: blocks of 1024 threads keep 2
 * per SM resident, so 20 blocks make one 2 ms wave. */
static void wave_time(void) {
  sim_primary(0);
  CUfunction f = load_kernel();
  CUevent start, end;
  OK(cuEventCreate(&start, 0));
  OK(cuEventCreate(&end, 0));
  uint64_t t0 = sim_now_ns();
  OK(cuEventRecord(start, NULL));
  OK(cuLaunchKernel(f, 20 * 25, 1, 1, 1024, 1, 1, 0, NULL, NULL, NULL)); /* 25 waves */
  OK(cuEventRecord(end, NULL));
  uint64_t launched = sim_now_ns() - t0;
  CHECK(launched < 25 * MS); /* asynchronous */
  float ms = 0;
  CHECK_CU(cuEventElapsedTime(&ms, start, end), CUDA_ERROR_NOT_READY);
  OK(cuEventSynchronize(end));
  uint64_t waited = sim_now_ns() - t0;
  CHECK(waited >= 50 * MS && waited < 500 * MS);
  OK(cuEventElapsedTime(&ms, start, end));
  CHECK(ms >= 49.9f && ms < 100.0f);
  /* 32 threads per block: 32 resident per SM (the cap), 320 blocks a wave */
  t0 = sim_now_ns();
  OK(cuLaunchKernel(f, 320 * 10 + 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL)); /* 11 waves */
  OK(cuCtxSynchronize());
  waited = sim_now_ns() - t0;
  CHECK(waited >= 22 * MS && waited < 300 * MS);
  /* 256 threads: 8 per SM, 80 a wave; a 3-D grid of 800 blocks is 10 waves */
  OK(cuEventRecord(start, NULL));
  OK(cuLaunchKernel(f, 10, 8, 10, 16, 16, 1, 0, NULL, NULL, NULL));
  OK(cuEventRecord(end, NULL));
  OK(cuEventSynchronize(end));
  OK(cuEventElapsedTime(&ms, start, end));
  CHECK(ms >= 19.9f && ms < 60.0f);
}

static void test_wave_time(void **state) {
  (void)state;
  const char *env[] = {"VGPU_SIM_SMS=10", "VGPU_SIM_WAVE_US=2000", NULL};
  sim_run(wave_time, env);
}

/* Streams wait for their own work; memcpy waits for the context's work. */
static void stream_sync(void) {
  sim_primary(0);
  CUfunction f = load_kernel();
  CUstream s;
  OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  uint64_t t0 = sim_now_ns();
  OK(cuLaunchKernel(f, 20 * 15, 1, 1, 1024, 1, 1, 0, s, NULL, NULL)); /* 30 ms */
  OK(cuStreamSynchronize(s));
  uint64_t waited = sim_now_ns() - t0;
  CHECK(waited >= 30 * MS && waited < 3000 * MS); /* upper bound: only "it ends" (loaded CI) */
  CUdeviceptr p;
  OK(cuMemAlloc_v2(&p, 4));
  t0 = sim_now_ns();
  OK(cuLaunchKernel(f, 20 * 10, 1, 1, 1024, 1, 1, 0, NULL, NULL, NULL)); /* 20 ms */
  int v;
  OK(cuMemcpyDtoH_v2(&v, p, 4));
  waited = sim_now_ns() - t0;
  CHECK(waited >= 20 * MS && waited < 3000 * MS);
}

static void test_stream_sync(void **state) {
  (void)state;
  const char *env[] = {"VGPU_SIM_SMS=10", "VGPU_SIM_WAVE_US=2000", NULL};
  sim_run(stream_sync, env);
}

/* The launch queue is bounded: ten 20 ms kernels cannot all be queued at
 * once; launching blocks while more than 50 ms are queued. */
static void backpressure(void) {
  sim_primary(0);
  CUfunction f = load_kernel();
  uint64_t t0 = sim_now_ns();
  for (int i = 0; i < 10; i++)
    OK(cuLaunchKernel(f, 20 * 10, 1, 1, 1024, 1, 1, 0, NULL, NULL, NULL));
  uint64_t launched = sim_now_ns() - t0;
  OK(cuCtxSynchronize());
  uint64_t done = sim_now_ns() - t0;
  CHECK(launched >= 120 * MS); /* 200 ms of work, at most ~70 ms of it queued */
  CHECK(done >= 200 * MS && done < 3000 * MS);
}

static void test_backpressure(void **state) {
  (void)state;
  const char *env[] = {"VGPU_SIM_SMS=10", "VGPU_SIM_WAVE_US=2000", NULL};
  sim_run(backpressure, env);
}

/* Two processes share one timeline: 100 ms of work each takes ~200 ms. */
struct racer {
  struct sim_chan chan;
  int result_fd[2];
};

static void race(struct racer *r, bool child) {
  sim_primary(0);
  CUfunction f = load_kernel();
  int in = child ? r->chan.to_child[0] : r->chan.to_parent[0];
  int out = child ? r->chan.to_parent[1] : r->chan.to_child[1];
  sim_chan_send(out, 'r'); /* ready */
  sim_chan_recv(in);
  uint64_t t0 = sim_now_ns();
  OK(cuLaunchKernel(f, 20 * 50, 1, 1, 1024, 1, 1, 0, NULL, NULL, NULL)); /* 100 ms */
  OK(cuCtxSynchronize());
  uint64_t took = sim_now_ns() - t0;
  if (child) {
    CHECK(write(r->result_fd[1], &took, sizeof(took)) == sizeof(took));
  } else {
    uint64_t other = 0;
    CHECK(read(r->result_fd[0], &other, sizeof(other)) == sizeof(other));
    uint64_t slowest = took > other ? took : other;
    uint64_t fastest = took < other ? took : other;
    CHECK(fastest >= 100 * MS);
    CHECK(slowest >= 190 * MS && slowest < 3000 * MS);
  }
}

static void child_race(void *arg) { race(arg, true); }

static void serialise(void) {
  struct racer r;
  sim_chan_init(&r.chan);
  CHECK(pipe(r.result_fd) == 0);
  pid_t pid = sim_spawn(child_race, &r);
  race(&r, false);
  CHECK(sim_wait(pid) == 0);
}

static void test_two_processes_serialise(void **state) {
  (void)state;
  const char *env[] = {"VGPU_SIM_SMS=10", "VGPU_SIM_WAVE_US=2000", NULL};
  sim_run(serialise, env);
}

/* VGPU_SIM_WAVE_US=0: kernels are free, launches never wait. */
static void free_kernels(void) {
  sim_primary(0);
  CUfunction f = load_kernel();
  uint64_t t0 = sim_now_ns();
  for (int i = 0; i < 1000; i++)
    OK(cuLaunchKernel(f, 100000, 1, 1, 256, 1, 1, 0, NULL, NULL, NULL));
  OK(cuCtxSynchronize());
  CHECK(sim_now_ns() - t0 < 2000 * MS);
}

static void test_free_kernels(void **state) {
  (void)state;
  const char *env[] = {"VGPU_SIM_WAVE_US=0", NULL};
  sim_run(free_kernels, env);
}

/* VGPU_SIM_TIMING=h200 (src/sim/sim_config.c has the figures): a full
 * wave of the big shape takes 81 us, a thin one (4 blocks of 64 threads)
 * 10 % of that, an event record 1.5 us of the stream's time -- so behind
 * other work the span from an event to one after a small kernel is that
 * kernel and one event, and two events back to back span one event. */
#define US 1000ull
static float span_us(CUevent a, CUevent b) {
  float ms = 0;
  OK(cuEventElapsedTime(&ms, a, b));
  return ms * 1000.0f;
}

static void h200_timing(void) {
  sim_primary(0);
  CUfunction f = load_kernel();
  CUevent ev[4];
  for (int i = 0; i < 4; i++) OK(cuEventCreate(&ev[i], 0));
  OK(cuLaunchKernel(f, 132 * 32 * 8, 1, 1, 256, 1, 1, 0, NULL, NULL, NULL)); /* 32 waves */
  OK(cuEventRecord(ev[0], NULL));
  OK(cuEventRecord(ev[1], NULL));
  OK(cuLaunchKernel(f, 4, 1, 1, 64, 1, 1, 0, NULL, NULL, NULL)); /* small */
  OK(cuEventRecord(ev[2], NULL));
  OK(cuLaunchKernel(f, 132 * 32, 1, 1, 256, 1, 1, 0, NULL, NULL, NULL)); /* big */
  OK(cuEventRecord(ev[3], NULL));
  OK(cuEventSynchronize(ev[3]));
  float event = span_us(ev[0], ev[1]), small = span_us(ev[1], ev[2]), big = span_us(ev[2], ev[3]);
  CHECK(event > 1.49f && event < 1.51f);
  CHECK(small > 9.59f && small < 9.61f); /* 8.1 + 1.5 */
  CHECK(big > 325.4f && big < 325.6f);   /* 4 x 81 + 1.5 */
  /* a launch call spends 3.2 us of the host's time */
  uint64_t t0 = sim_now_ns();
  for (int i = 0; i < 100; i++) OK(cuLaunchKernel(f, 4, 1, 1, 64, 1, 1, 0, NULL, NULL, NULL));
  CHECK(sim_now_ns() - t0 >= 320 * US);
  OK(cuCtxSynchronize());
}

static void test_h200_timing(void **state) {
  (void)state;
  const char *env[] = {"VGPU_SIM_TIMING=h200", NULL};
  sim_run(h200_timing, env);
}

/* VGPU_SIM_SYNC_NS: a synchronize that waits wakes that much after the
 * work ends; one on finished work returns at once. */
static void sync_wakeup(void) {
  sim_primary(0);
  CUfunction f = load_kernel();
  uint64_t t0 = sim_now_ns();
  OK(cuLaunchKernel(f, 20, 1, 1, 1024, 1, 1, 0, NULL, NULL, NULL)); /* 2 ms */
  OK(cuCtxSynchronize());
  uint64_t waited = sim_now_ns() - t0;
  CHECK(waited >= 32 * MS && waited < 3000 * MS);
  t0 = sim_now_ns();
  OK(cuCtxSynchronize());
  CHECK(sim_now_ns() - t0 < 25 * MS);
}

static void test_sync_wakeup(void **state) {
  (void)state;
  const char *env[] = {"VGPU_SIM_SMS=10", "VGPU_SIM_WAVE_US=2000", "VGPU_SIM_SYNC_NS=30000000",
                       NULL};
  sim_run(sync_wakeup, env);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_wave_time),    cmocka_unit_test(test_stream_sync),
      cmocka_unit_test(test_backpressure), cmocka_unit_test(test_two_processes_serialise),
      cmocka_unit_test(test_free_kernels), cmocka_unit_test(test_h200_timing),
      cmocka_unit_test(test_sync_wakeup),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
