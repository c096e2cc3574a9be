/*
 * test_sim_graph.c -- event and stream queries, CUDA graphs and stream
 * capture: what the compute limiter needs to measure and throttle work that
 * does not go through cuLaunchKernel.
 *
 * Timing bounds are generous on the slow side (a loaded machine oversleeps)
 * but every timed check also has a lower bound: the work takes at least its
 * simulated time.
 */
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "sim_test.h"

#define MS 1000000ull

#define ILLEGAL_STATE ((CUresult)401)
#define COOPERATIVE_TOO_LARGE ((CUresult)720)
#define CAPTURE_UNSUPPORTED ((CUresult)900)
#define CAPTURE_INVALIDATED ((CUresult)901)
#define CAPTURED_EVENT ((CUresult)907)
#define CAPTURE_WRONG_THREAD ((CUresult)908)

/* exported by the simulator (and the real driver), not declared in cuda_abi.h */
CUresult cuStreamQuery_ptsz(CUstream hStream);

static const char g_ptx[] = ".version 7.0\n.target sm_80\n.visible .entry k(\n)\n{\n\tret;\n}\n";

/* VGPU_SIM_SMS=10, VGPU_SIM_WAVE_US=2000: 20 blocks of 1024 threads are one
 * 2 ms wave, so K10 is a 10 ms kernel. */
static const char *const g_env[] = {"VGPU_SIM_SMS=10", "VGPU_SIM_WAVE_US=2000", NULL};
#define K10_BLOCKS (20 * 5)

static CUfunction load_kernel(void) {
  CUmodule m;
  CUfunction f;
  OK(cuModuleLoadData(&m, g_ptx));
  OK(cuModuleGetFunction(&f, m, "k"));
  return f;
}

static CUDA_KERNEL_NODE_PARAMS k10_params(CUfunction f) {
  CUDA_KERNEL_NODE_PARAMS p;
  memset(&p, 0, sizeof(p));
  p.func = f;
  p.gridDimX = K10_BLOCKS;
  p.gridDimY = p.gridDimZ = 1;
  p.blockDimX = 1024;
  p.blockDimY = p.blockDimZ = 1;
  return p;
}

/* A graph of n 10 ms kernels, each depending on the one before. */
static CUgraph k10_graph(CUfunction f, int n) {
  CUgraph g;
  OK(cuGraphCreate(&g, 0));
  CUDA_KERNEL_NODE_PARAMS p = k10_params(f);
  CUgraphNode prev = NULL;
  for (int i = 0; i < n; i++) {
    CUgraphNode node;
    OK(cuGraphAddKernelNode_v2(&node, g, prev != NULL ? &prev : NULL, prev != NULL, &p));
    prev = node;
  }
  return g;
}

static unsigned long long realtime_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (unsigned long long)ts.tv_sec * 1000000ull + (unsigned long long)ts.tv_nsec / 1000;
}

/* --- cuEventQuery / cuStreamQuery --- */

static void queries(void) {
  sim_primary(0);
  CUfunction f = load_kernel();
  CUstream s;
  CUevent e, never;
  OK(cuStreamCreate(&s, 0));
  OK(cuEventCreate(&e, 0));
  OK(cuEventCreate(&never, 0));
  OK(cuEventQuery(never)); /* never recorded: nothing to wait for */
  OK(cuStreamQuery(s));    /* idle */
  OK(cuStreamQuery(NULL));
  OK(cuLaunchKernel(f, K10_BLOCKS * 5, 1, 1, 1024, 1, 1, 0, s, NULL, NULL)); /* 50 ms */
  OK(cuEventRecord(e, s));
  CHECK_CU(cuEventQuery(e), CUDA_ERROR_NOT_READY);
  CHECK_CU(cuStreamQuery(s), CUDA_ERROR_NOT_READY);
  CHECK_CU(cuStreamQuery(NULL), CUDA_ERROR_NOT_READY); /* the context's work */
  CHECK_CU(cuStreamQuery_ptsz(CU_STREAM_PER_THREAD), CUDA_ERROR_NOT_READY);
  /* polling sees completion no earlier than the kernel's end */
  uint64_t t0 = sim_now_ns();
  while (cuEventQuery(e) == CUDA_ERROR_NOT_READY) {
    struct timespec nap = {0, 1000000};
    nanosleep(&nap, NULL);
  }
  uint64_t polled = sim_now_ns() - t0;
  CHECK(polled >= 40 * MS && polled < 500 * MS);
  OK(cuEventQuery(e));
  OK(cuStreamQuery(s));
  OK(cuStreamQuery(NULL));
  /* after a synchronize, everything is done */
  OK(cuLaunchKernel(f, K10_BLOCKS, 1, 1, 1024, 1, 1, 0, s, NULL, NULL));
  OK(cuEventRecord(e, s));
  CHECK_CU(cuEventQuery(e), CUDA_ERROR_NOT_READY);
  OK(cuStreamSynchronize(s));
  OK(cuEventQuery(e));
  OK(cuStreamQuery(s));
  /* bad handles */
  OK(cuStreamDestroy_v2(s));
  CHECK_CU(cuStreamQuery(s), CUDA_ERROR_INVALID_HANDLE);
  OK(cuEventDestroy_v2(e));
  CHECK_CU(cuEventQuery(e), CUDA_ERROR_INVALID_HANDLE);
  CHECK_CU(cuEventQuery(NULL), CUDA_ERROR_INVALID_HANDLE);
}

static void test_queries(void **state) {
  (void)state;
  sim_run(queries, g_env);
}

/* --- graphs --- */

/* A graph of 8 kernels of 10 ms takes 80 ms, launched in one call that
 * returns at once; events around it time it; NVML counts it. */
static void graph_time(void) {
  NV_OK(nvmlInit_v2());
  nvmlDevice_t d;
  NV_OK(nvmlDeviceGetHandleByIndex_v2(0, &d));
  sim_primary(0);
  CUfunction f = load_kernel();
  CUgraph g = k10_graph(f, 8);
  CUgraphExec x;
  OK(cuGraphInstantiateWithFlags(&x, g, 0));
  CUstream s;
  CUevent a, b;
  OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  OK(cuEventCreate(&a, 0));
  OK(cuEventCreate(&b, 0));
  uint64_t t0 = sim_now_ns();
  OK(cuEventRecord(a, s));
  OK(cuGraphLaunch(x, s));
  OK(cuEventRecord(b, s));
  CHECK(sim_now_ns() - t0 < 40 * MS); /* asynchronous: one submission */
  CHECK_CU(cuEventQuery(b), CUDA_ERROR_NOT_READY);
  OK(cuStreamSynchronize(s));
  uint64_t took = sim_now_ns() - t0;
  CHECK(took >= 80 * MS && took < 600 * MS);
  float ms = 0;
  OK(cuEventElapsedTime(&ms, a, b));
  CHECK(ms >= 79.9f && ms < 100.0f);
  /* the graph is a snapshot: adding to the graph later does not change x */
  CUDA_KERNEL_NODE_PARAMS p = k10_params(f);
  CUgraphNode extra;
  OK(cuGraphAddKernelNode_v2(&extra, g, NULL, 0, &p));
  /* relaunch on the default stream through the _ptsz entry point, twice */
  OK(cuEventRecord(a, NULL));
  OK(cuGraphLaunch_ptsz(x, NULL));
  OK(cuGraphLaunch(x, NULL));
  OK(cuEventRecord(b, NULL));
  OK(cuCtxSynchronize());
  OK(cuEventElapsedTime(&ms, a, b));
  CHECK(ms >= 159.9f && ms < 200.0f);
  /* 240 ms of graph work, the last 160 ms of it just now: NVML sees it */
  unsigned long long now_us = realtime_us();
  nvmlUtilization_t u;
  NV_OK(nvmlDeviceGetUtilizationRates(d, &u));
  CHECK(u.gpu >= 15 && u.gpu <= 40);
  unsigned n = 4;
  nvmlProcessUtilizationSample_t samples[4];
  NV_OK(nvmlDeviceGetProcessUtilization(d, samples, &n, now_us - 120000));
  CHECK(n == 1 && samples[0].pid == (unsigned)getpid());
  CHECK(samples[0].smUtil >= 85 && samples[0].smUtil <= 100);
  OK(cuGraphExecDestroy(x));
  OK(cuGraphDestroy(g));
}

static void test_graph_time(void **state) {
  (void)state;
  sim_run(graph_time, g_env);
}

/* Graph launches queue on one timeline with everything else: a launch
 * after a graph waits for it, and an empty graph is free. */
static void graph_order(void) {
  sim_primary(0);
  CUfunction f = load_kernel();
  CUgraph g = k10_graph(f, 3), empty;
  OK(cuGraphCreate(&empty, 0));
  CUgraphExec x, xe;
  OK(cuGraphInstantiateWithFlags(&x, g, 0));
  OK(cuGraphInstantiateWithFlags(&xe, empty, 1 /* AUTO_FREE_ON_LAUNCH */));
  OK(cuGraphDestroy(g)); /* the exec outlives its graph */
  CUevent a, b;
  OK(cuEventCreate(&a, 0));
  OK(cuEventCreate(&b, 0));
  OK(cuEventRecord(a, NULL));
  OK(cuGraphLaunch(x, NULL));
  OK(cuLaunchKernel(f, K10_BLOCKS, 1, 1, 1024, 1, 1, 0, NULL, NULL, NULL));
  OK(cuGraphLaunch(xe, NULL));
  OK(cuEventRecord(b, NULL));
  OK(cuEventSynchronize(b));
  float ms = 0;
  OK(cuEventElapsedTime(&ms, a, b));
  CHECK(ms >= 39.9f && ms < 60.0f);
  OK(cuGraphExecDestroy(xe));
  OK(cuGraphExecDestroy(x));
}

static void test_graph_order(void **state) {
  (void)state;
  sim_run(graph_order, g_env);
}

static void graph_errors(void) {
  CUgraph g;
  CHECK_CU(cuGraphCreate(&g, 0), CUDA_ERROR_NOT_INITIALIZED);
  sim_primary(0);
  CUfunction f = load_kernel();
  CHECK_CU(cuGraphCreate(NULL, 0), CUDA_ERROR_INVALID_VALUE);
  CHECK_CU(cuGraphCreate(&g, 1), CUDA_ERROR_INVALID_VALUE);
  OK(cuGraphCreate(&g, 0));
  CUgraph other;
  OK(cuGraphCreate(&other, 0));
  CUDA_KERNEL_NODE_PARAMS p = k10_params(f);
  CUgraphNode node, foreign;
  /* NULL arguments and bad handles */
  CHECK_CU(cuGraphAddKernelNode_v2(NULL, g, NULL, 0, &p), CUDA_ERROR_INVALID_VALUE);
  CHECK_CU(cuGraphAddKernelNode_v2(&node, NULL, NULL, 0, &p), CUDA_ERROR_INVALID_VALUE);
  CHECK_CU(cuGraphAddKernelNode_v2(&node, g, NULL, 0, NULL), CUDA_ERROR_INVALID_VALUE);
  CHECK_CU(cuGraphAddKernelNode_v2(&node, (CUgraph)&p, NULL, 0, &p), CUDA_ERROR_INVALID_VALUE);
  CHECK_CU(cuGraphAddKernelNode_v2(&node, g, NULL, 1, &p), CUDA_ERROR_INVALID_VALUE);
  OK(cuGraphAddKernelNode_v2(&foreign, other, NULL, 0, &p));
  CHECK_CU(cuGraphAddKernelNode_v2(&node, g, &foreign, 1, &p), CUDA_ERROR_INVALID_VALUE);
  /* the kernel is validated like a launch */
  CUDA_KERNEL_NODE_PARAMS bad = p;
  bad.func = NULL;
  CHECK_CU(cuGraphAddKernelNode_v2(&node, g, NULL, 0, &bad), CUDA_ERROR_INVALID_VALUE);
  bad.func = (CUfunction)&bad;
  CHECK_CU(cuGraphAddKernelNode_v2(&node, g, NULL, 0, &bad), CUDA_ERROR_INVALID_VALUE);
  bad = p;
  bad.blockDimX = 2048;
  CHECK_CU(cuGraphAddKernelNode_v2(&node, g, NULL, 0, &bad), CUDA_ERROR_INVALID_VALUE);
  bad = p;
  bad.gridDimY = 0;
  CHECK_CU(cuGraphAddKernelNode_v2(&node, g, NULL, 0, &bad), CUDA_ERROR_INVALID_VALUE);
  void *args[1] = {NULL};
  bad = p;
  bad.kernelParams = args;
  bad.extra = args;
  CHECK_CU(cuGraphAddKernelNode_v2(&node, g, NULL, 0, &bad), CUDA_ERROR_INVALID_VALUE);
  OK(cuGraphAddKernelNode_v2(&node, g, NULL, 0, &p));
  /* instantiation */
  CUgraphExec x;
  CHECK_CU(cuGraphInstantiateWithFlags(NULL, g, 0), CUDA_ERROR_INVALID_VALUE);
  CHECK_CU(cuGraphInstantiateWithFlags(&x, NULL, 0), CUDA_ERROR_INVALID_VALUE);
  CHECK_CU(cuGraphInstantiateWithFlags(&x, g, 2 /* UPLOAD */), CUDA_ERROR_INVALID_VALUE);
  CHECK_CU(cuGraphInstantiateWithFlags(&x, (CUgraph)&p, 0), CUDA_ERROR_INVALID_VALUE);
  OK(cuGraphInstantiateWithFlags(&x, g, 0));
  /* launch */
  CHECK_CU(cuGraphLaunch(NULL, NULL), CUDA_ERROR_INVALID_VALUE);
  CHECK_CU(cuGraphLaunch((CUgraphExec)&p, NULL), CUDA_ERROR_INVALID_VALUE);
  CHECK_CU(cuGraphLaunch(x, (CUstream)&p), CUDA_ERROR_INVALID_HANDLE);
  OK(cuGraphLaunch(x, NULL));
  OK(cuGraphExecDestroy(x));
  CHECK_CU(cuGraphLaunch(x, NULL), CUDA_ERROR_INVALID_VALUE); /* destroyed */
  CHECK_CU(cuGraphExecDestroy(x), CUDA_ERROR_INVALID_VALUE);
  CHECK_CU(cuGraphExecDestroy(NULL), CUDA_ERROR_INVALID_VALUE);
  /* a graph whose kernel's module is gone cannot be instantiated */
  CUmodule m2;
  CUfunction f2;
  OK(cuModuleLoadData(&m2, g_ptx));
  OK(cuModuleGetFunction(&f2, m2, "k"));
  CUDA_KERNEL_NODE_PARAMS p2 = k10_params(f2);
  OK(cuGraphAddKernelNode_v2(&node, other, NULL, 0, &p2));
  OK(cuModuleUnload(m2));
  CHECK_CU(cuGraphInstantiateWithFlags(&x, other, 0), CUDA_ERROR_INVALID_VALUE);
  /* destroy */
  OK(cuGraphDestroy(g));
  CHECK_CU(cuGraphDestroy(g), CUDA_ERROR_INVALID_VALUE);
  CHECK_CU(cuGraphDestroy(NULL), CUDA_ERROR_INVALID_VALUE);
  CHECK_CU(cuGraphAddKernelNode_v2(&node, g, NULL, 0, &p), CUDA_ERROR_INVALID_VALUE);
  OK(cuGraphDestroy(other));
  /* an exec dies with its context, like every other object made in it */
  CUcontext c;
  OK(cuCtxCreate_v2(&c, 0, 0));
  CUfunction fc = load_kernel();
  OK(cuGraphCreate(&g, 0));
  p = k10_params(fc);
  OK(cuGraphAddKernelNode_v2(&node, g, NULL, 0, &p));
  OK(cuGraphInstantiateWithFlags(&x, g, 0));
  OK(cuCtxDestroy_v2(c));
  CHECK_CU(cuGraphLaunch(x, NULL), CUDA_ERROR_INVALID_VALUE);
  OK(cuGraphDestroy(g)); /* graphs are not owned by a context */
}

static void test_graph_errors(void **state) {
  (void)state;
  sim_run(graph_errors, g_env);
}

/* --- stream capture --- */

/* Launches of every kind on a capturing stream are recorded, not run; the
 * captured graph then runs them all. */
static void capture(void) {
  sim_primary(0);
  CUfunction f = load_kernel();
  CUstream s;
  OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  uint64_t t0 = sim_now_ns();
  for (int i = 0; i < 20; i++) /* 200 ms if they ran: more than the queue holds */
    OK(cuLaunchKernel(f, K10_BLOCKS, 1, 1, 1024, 1, 1, 0, s, NULL, NULL));
  OK(cuLaunchKernel_ptsz(f, K10_BLOCKS, 1, 1, 1024, 1, 1, 0, s, NULL, NULL));
  CUlaunchConfig cfg;
  memset(&cfg, 0, sizeof(cfg));
  cfg.gridDimX = K10_BLOCKS;
  cfg.gridDimY = cfg.gridDimZ = 1;
  cfg.blockDimX = 1024;
  cfg.blockDimY = cfg.blockDimZ = 1;
  cfg.hStream = s;
  OK(cuLaunchKernelEx(&cfg, f, NULL, NULL));
  OK(cuLaunchKernelEx_ptsz(&cfg, f, NULL, NULL));
  /* one full wave, cooperative: 2 ms; too large is still refused */
  OK(cuLaunchCooperativeKernel(f, 20, 1, 1, 1024, 1, 1, 0, s, NULL));
  OK(cuLaunchCooperativeKernel_ptsz(f, 20, 1, 1, 1024, 1, 1, 0, s, NULL));
  CHECK_CU(cuLaunchCooperativeKernel(f, 21, 1, 1, 1024, 1, 1, 0, s, NULL), COOPERATIVE_TOO_LARGE);
  CHECK_CU(cuLaunchKernel(f, 0, 1, 1, 1024, 1, 1, 0, s, NULL, NULL), CUDA_ERROR_INVALID_VALUE);
  /* a graph launched into a capturing stream becomes part of the capture */
  CUgraph g2 = k10_graph(f, 2);
  CUgraphExec x2;
  OK(cuGraphInstantiateWithFlags(&x2, g2, 0));
  OK(cuGraphLaunch(x2, s));
  CHECK(sim_now_ns() - t0 < 50 * MS); /* nothing ran, nothing was queued */
  /* the device is idle: other streams are not affected */
  OK(cuStreamQuery(NULL));
  CUgraph g = NULL;
  OK(cuStreamEndCapture(s, &g));
  CHECK(g != NULL);
  OK(cuStreamQuery(s)); /* capture over: an idle stream again */
  CUgraphExec x;
  OK(cuGraphInstantiateWithFlags(&x, g, 0));
  /* 21 + 2 + 2 kernels of 10 ms, 2 cooperative ones of 2 ms */
  CUevent a, b;
  OK(cuEventCreate(&a, 0));
  OK(cuEventCreate(&b, 0));
  OK(cuEventRecord(a, s));
  OK(cuGraphLaunch(x, s));
  OK(cuEventRecord(b, s));
  OK(cuEventSynchronize(b));
  float ms = 0;
  OK(cuEventElapsedTime(&ms, a, b));
  CHECK(ms >= 253.9f && ms < 300.0f);
  /* the captured graph is an ordinary graph: nodes can be added */
  CUDA_KERNEL_NODE_PARAMS p = k10_params(f);
  CUgraphNode node;
  OK(cuGraphAddKernelNode_v2(&node, g, NULL, 0, &p));
  /* an empty capture gives an empty graph */
  CUgraph empty = NULL;
  OK(cuStreamBeginCapture_v2_ptsz(s, CU_STREAM_CAPTURE_MODE_RELAXED));
  OK(cuStreamEndCapture_ptsz(s, &empty));
  CHECK(empty != NULL);
  OK(cuGraphDestroy(empty));
  OK(cuGraphExecDestroy(x));
  OK(cuGraphDestroy(g));
  OK(cuGraphExecDestroy(x2));
  OK(cuGraphDestroy(g2));
  /* a stream destroyed while capturing takes its capture with it */
  OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
  OK(cuLaunchKernel(f, K10_BLOCKS, 1, 1, 1024, 1, 1, 0, s, NULL, NULL));
  OK(cuStreamDestroy_v2(s));
  OK(cuCtxSynchronize()); /* no capture left to block it */
}

static void test_capture(void **state) {
  (void)state;
  sim_run(capture, g_env);
}

struct end_arg {
  CUstream s;
  CUcontext ctx;
  CUresult rc;
};

static void *end_elsewhere(void *p) {
  struct end_arg *a = p;
  CUgraph g = NULL;
  a->rc = cuCtxSetCurrent(a->ctx);
  if (a->rc == CUDA_SUCCESS) a->rc = cuStreamEndCapture(a->s, &g);
  if (a->rc == CUDA_SUCCESS) cuGraphDestroy(g);
  return NULL;
}

static CUresult end_capture_on_thread(CUstream s, CUcontext ctx) {
  struct end_arg a = {s, ctx, CUDA_SUCCESS};
  pthread_t t;
  CHECK(pthread_create(&t, NULL, end_elsewhere, &a) == 0);
  CHECK(pthread_join(t, NULL) == 0);
  return a.rc;
}

static void capture_errors(void) {
  CUcontext ctx = sim_primary(0);
  CUfunction f = load_kernel();
  CUstream s;
  CUgraph g = (CUgraph)&g;
  OK(cuStreamCreate(&s, 0));
  /* the default streams cannot capture */
  CHECK_CU(cuStreamBeginCapture_v2(NULL, CU_STREAM_CAPTURE_MODE_GLOBAL), CAPTURE_UNSUPPORTED);
  CHECK_CU(cuStreamBeginCapture_v2(CU_STREAM_LEGACY, CU_STREAM_CAPTURE_MODE_GLOBAL),
           CAPTURE_UNSUPPORTED);
  CHECK_CU(cuStreamBeginCapture_v2_ptsz(CU_STREAM_PER_THREAD, CU_STREAM_CAPTURE_MODE_GLOBAL),
           CAPTURE_UNSUPPORTED);
  CHECK_CU(cuStreamBeginCapture_v2((CUstream)&g, CU_STREAM_CAPTURE_MODE_GLOBAL),
           CUDA_ERROR_INVALID_HANDLE);
  CHECK_CU(cuStreamBeginCapture_v2(s, (CUstreamCaptureMode)3), CUDA_ERROR_INVALID_VALUE);
  CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_ACTIVE;
  OK(cuStreamIsCapturing(s, &st));
  CHECK(st == CU_STREAM_CAPTURE_STATUS_NONE);
  CHECK_CU(cuStreamIsCapturing(s, NULL), CUDA_ERROR_INVALID_VALUE);
  CHECK_CU(cuStreamIsCapturing((CUstream)&g, &st), CUDA_ERROR_INVALID_HANDLE);
  /* ending a capture that never began */
  CHECK_CU(cuStreamEndCapture(s, &g), ILLEGAL_STATE);
  CHECK_CU(cuStreamEndCapture(NULL, &g), ILLEGAL_STATE);
  OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  OK(cuStreamIsCapturing(s, &st));
  CHECK(st == CU_STREAM_CAPTURE_STATUS_ACTIVE);
  OK(cuStreamIsCapturing_ptsz(s, &st));
  CHECK(st == CU_STREAM_CAPTURE_STATUS_ACTIVE);
  OK(cuStreamIsCapturing(NULL, &st)); /* the default streams never capture */
  CHECK(st == CU_STREAM_CAPTURE_STATUS_NONE);
  CHECK_CU(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL), ILLEGAL_STATE);
  CHECK_CU(cuStreamEndCapture(s, NULL), CUDA_ERROR_INVALID_VALUE);
  /* global and thread-local captures must end on the thread that began them */
  CHECK_CU(end_capture_on_thread(s, ctx), CAPTURE_WRONG_THREAD);
  /* an event recorded in a capture marks a point in the graph, not a time */
  CUevent e, plain;
  OK(cuEventCreate(&e, 0));
  OK(cuEventCreate(&plain, 0));
  OK(cuEventRecord(plain, NULL));
  OK(cuEventRecord(e, s));
  CHECK_CU(cuEventQuery(e), CAPTURED_EVENT);
  CHECK_CU(cuEventSynchronize(e), CAPTURED_EVENT);
  float ms;
  CHECK_CU(cuEventElapsedTime(&ms, plain, e), CAPTURED_EVENT);
  /* a global capture forbids a context-wide synchronize, which invalidates it */
  CHECK_CU(cuCtxSynchronize(), CAPTURE_UNSUPPORTED);
  OK(cuStreamIsCapturing(s, &st));
  CHECK(st == CU_STREAM_CAPTURE_STATUS_INVALIDATED);
  CHECK_CU(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, NULL, NULL), CAPTURE_INVALIDATED);
  CHECK_CU(cuEventRecord(e, s), CAPTURE_INVALIDATED);
  g = (CUgraph)&g;
  CHECK_CU(cuStreamEndCapture(s, &g), CAPTURE_INVALIDATED);
  CHECK(g == NULL);
  OK(cuStreamIsCapturing(s, &st));
  CHECK(st == CU_STREAM_CAPTURE_STATUS_NONE);
  OK(cuCtxSynchronize());
  OK(cuEventRecord(e, NULL)); /* recorded outside capture: an event again */
  OK(cuEventSynchronize(e));
  OK(cuEventQuery(e));
  /* synchronizing or querying the capturing stream invalidates the capture */
  OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_RELAXED));
  OK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, NULL, NULL));
  OK(cuCtxSynchronize()); /* relaxed mode does not forbid it */
  CHECK_CU(cuStreamSynchronize(s), CAPTURE_UNSUPPORTED);
  CHECK_CU(cuStreamSynchronize(s), CAPTURE_INVALIDATED);
  CHECK_CU(cuStreamEndCapture(s, &g), CAPTURE_INVALIDATED);
  CHECK(g == NULL);
  OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
  CHECK_CU(cuStreamQuery_ptsz(s), CAPTURE_UNSUPPORTED);
  CHECK_CU(cuStreamEndCapture_ptsz(s, &g), CAPTURE_INVALIDATED);
  OK(cuStreamSynchronize(s)); /* capture over: an ordinary stream again */
  OK(cuStreamQuery(s));
  /* relaxed captures may end on another thread */
  OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_RELAXED));
  OK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, NULL, NULL));
  OK(end_capture_on_thread(s, ctx));
  CHECK_CU(cuStreamEndCapture(s, &g), ILLEGAL_STATE);
  /* the new codes have names */
  const char *name = NULL;
  OK(cuGetErrorName(CAPTURE_UNSUPPORTED, &name));
  CHECK(strcmp(name, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED") == 0);
  OK(cuGetErrorName(CAPTURE_INVALIDATED, &name));
  CHECK(strcmp(name, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED") == 0);
  OK(cuGetErrorName(CAPTURED_EVENT, &name));
  CHECK(strcmp(name, "CUDA_ERROR_CAPTURED_EVENT") == 0);
  OK(cuGetErrorName(CAPTURE_WRONG_THREAD, &name));
  CHECK(strcmp(name, "CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD") == 0);
  OK(cuGetErrorName(ILLEGAL_STATE, &name));
  CHECK(strcmp(name, "CUDA_ERROR_ILLEGAL_STATE") == 0);
}

static void test_capture_errors(void **state) {
  (void)state;
  sim_run(capture_errors, g_env);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_queries),     cmocka_unit_test(test_graph_time),
      cmocka_unit_test(test_graph_order), cmocka_unit_test(test_graph_errors),
      cmocka_unit_test(test_capture),     cmocka_unit_test(test_capture_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
