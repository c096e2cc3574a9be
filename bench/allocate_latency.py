#!/usr/bin/python3
"""allocate_latency.py -- how long vgpu-device-plugin takes to answer Allocate,
and how that grows with the number of pods being admitted at once.

Starts the plugin on the simulated GPU without a kubelet (--kubelet-socket
""), reads its device IDs from ListAndWatch, then for each level of
concurrency N runs N client threads that each send Allocate requests for
distinct device IDs (one slot each, as the kubelet does per container) and
records every call's latency. Prints p50/p95/p99/max per level, the
throughput, and the ratio of p50 at each level to p50 with one request in
flight. Allocate takes no lock across pods and, without --kubeconfig as here,
calls no API (with it, the gate of docs/device-plugin.md adds one PodResources
List and one pod list per container, as steering does), and the plugin
answers calls on a worker pool; on a machine with few cores the calls still
share the CPUs, so p50 grows with N once they are busy (docs/benchmarks.md
has runs).

Usage: bench/allocate_latency.py [--build DIR] [--levels 1,8,32,64] [--calls N]
"""
import argparse
import os
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ROOT, percentile, start_plugin  # noqa: E402
sys.path.insert(0, os.path.join(ROOT, "tests", "plugin"))
import fake_kubelet  # noqa: E402  (stub generation only)


def run_level(stub, pb, ids, n, calls):
    latencies, lock = [], threading.Lock()
    per_thread = calls // n
    chunks = [ids[i * per_thread:(i + 1) * per_thread] for i in range(n)]

    def worker(mine):
        local = []
        for dev in mine:
            req = pb.AllocateRequest(
                container_requests=[pb.ContainerAllocateRequest(devices_ids=[dev])])
            t0 = time.perf_counter()
            stub.Allocate(req)
            local.append(time.perf_counter() - t0)
        with lock:
            latencies.extend(local)

    threads = [threading.Thread(target=worker, args=(c,)) for c in chunks]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    return latencies, wall


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--levels", default="1,8,32,64")
    ap.add_argument("--calls", type=int, default=480)
    args = ap.parse_args()
    import grpc
    pb, svc = fake_kubelet.load_stubs(os.path.join(ROOT, "src", "plugin", "proto"))
    levels = [int(x) for x in args.levels.split(",")]
    work = tempfile.mkdtemp(prefix="vgpu-bench-allocate-")
    slots = (args.calls * len(levels)) // 2 + 2
    if slots > 1024:
        sys.exit("--calls x levels needs more than 2 x 1024 device IDs; use fewer calls")
    proc, sock = start_plugin(args.build, work, "dp", gpus=2, slots=slots)
    try:
        channel = grpc.insecure_channel("unix:" + sock)
        stub = svc.DevicePluginStub(channel)
        devices = next(stub.ListAndWatch(pb.Empty())).devices
        ids = [d.ID for d in devices]
        print("vgpu-device-plugin Allocate latency on the simulated GPU (%d device IDs, %d calls "
              "per level)" % (len(ids), args.calls))
        print("%-10s %10s %10s %10s %10s %12s %8s" %
              ("in flight", "p50 ms", "p95 ms", "p99 ms", "max ms", "calls/s", "p50 x1"))
        base, offset = None, 0
        for n in levels:
            chunk = ids[offset:offset + args.calls]
            offset += args.calls
            lat, wall = run_level(stub, pb, chunk, n, args.calls)
            p50 = percentile(lat, 50) * 1e3
            base = base or p50
            print("%-10d %10.3f %10.3f %10.3f %10.3f %12.0f %8.2f" %
                  (n, p50, percentile(lat, 95) * 1e3, percentile(lat, 99) * 1e3,
                   max(lat) * 1e3, len(lat) / wall, p50 / base))
    finally:
        proc.terminate()
        proc.wait()


if __name__ == "__main__":
    main()
