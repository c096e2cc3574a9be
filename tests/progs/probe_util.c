/* probe_util.c -- see probe_util.h. */
#include "probe_util.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "size.h"

void fail(const char *what, CUresult rc) {
  printf("{\"error\":\"%s\",\"rc\":%d}\n", what, (int)rc);
  exit(3);
}

int env_int(const char *name) {
  const char *v = getenv(name);
  return v != NULL ? atoi(v) : 0;
}

void setup(void) {
  CUcontext ctx;
  CUresult rc = cuInit(0);
  if (rc != CUDA_SUCCESS) fail("cuInit", rc);
  if ((rc = cuDevicePrimaryCtxRetain(&ctx, env_int("PROBE_DEVICE"))) != CUDA_SUCCESS)
    fail("retain", rc);
  if ((rc = cuCtxSetCurrent(ctx)) != CUDA_SUCCESS) fail("setcurrent", rc);
}

size_t arg_size(const char *s) {
  uint64_t v;
  struct vg_err err;
  if (vg_parse_size(s, &v, &err) != 0) {
    fprintf(stderr, "%s: %s\n", program_invocation_short_name, err.msg);
    exit(2);
  }
  return (size_t)v;
}

double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

CUfunction nop_kernel(void) {
  static const char ptx[] =
      ".version 7.0\n.target sm_50\n.address_size 64\n.visible .entry vg_nop()\n{\n\tret;\n}\n";
  CUmodule mod;
  CUfunction f;
  if (cuModuleLoadData(&mod, ptx) != 0 || cuModuleGetFunction(&f, mod, "vg_nop") != 0)
    fail("module", 0);
  return f;
}

CUgraphExec make_graph(CUfunction f, bool capture, CUstream stream) {
  CUgraph graph = NULL;
  CUgraphExec exec = NULL;
  if (capture) {
    if (cuStreamBeginCapture_v2(stream, CU_STREAM_CAPTURE_MODE_GLOBAL) != 0) fail("capture", 0);
    for (int i = 0; i < GRAPH_NODES; i++)
      cuLaunchKernel(f, 432, 1, 1, 256, 1, 1, 0, stream, NULL, NULL);
    if (cuStreamEndCapture(stream, &graph) != 0) fail("endcapture", 0);
  } else {
    if (cuGraphCreate(&graph, 0) != 0) fail("graphcreate", 0);
    CUDA_KERNEL_NODE_PARAMS p = {.func = f,
                                 .gridDimX = 432,
                                 .gridDimY = 1,
                                 .gridDimZ = 1,
                                 .blockDimX = 256,
                                 .blockDimY = 1,
                                 .blockDimZ = 1};
    CUgraphNode node;
    for (int i = 0; i < GRAPH_NODES; i++)
      if (cuGraphAddKernelNode_v2(&node, graph, NULL, 0, &p) != 0) fail("addnode", 0);
  }
  if (cuGraphInstantiateWithFlags(&exec, graph, 0) != 0) fail("instantiate", 0);
  return exec;
}
