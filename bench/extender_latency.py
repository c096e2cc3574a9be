#!/usr/bin/python3
"""extender_latency.py -- how long vgpu-scheduler takes to filter and
prioritize one pod over the Alibaba cluster (1,213 GPU nodes).

The nodes of openb_node_list_gpu_node.csv are loaded into the fake API server
(tests/k8s/fake_apiserver.py), each with a vgpu.io/gpu-inventory annotation
for its GPUs (vgpu dialect, 4 slots, 16 or 32 GiB by model), and a quarter of
them get a bound pod holding half of GPU 0. Then the real vgpu-scheduler
answers, from one client, a filter over all nodes followed by a prioritize
over the nodes that passed, as kube-scheduler calls them for one pod; each
pair is one sample (client wall time, HTTP included).

Three modes:
  names-warm  nodeCacheCapable (NodeNames), the node views cached (the
              steady state: --cache-ttl-ms longer than the run)
  names-cold  NodeNames, --cache-ttl-ms 0 --no-watch: every request reads every
              node and its pods from the API server (the fake, in Python); with
              the watches on, TTL 0 is served from the watch-fed store like
              names-warm (bench/extender_names.py measures that)
  nodes       full NodeList in the body (nodeCacheCapable: false)
Prints median and p90 per mode, in ms, of the client's wall time for the
pair (two HTTP requests, one connection each, and Python's JSON on the
client side included), and the mean time the scheduler itself spent in the
two verbs (its /metrics vgpu_scheduler_request_duration_seconds_sum).

With --callgrind the scheduler runs under valgrind's callgrind, counting
instructions only inside the two verbs and only after the warm-up request;
the line then also gives instructions per pair (stable from run to run, where
the milliseconds are not) and the profile is left in --callgrind-out.

Usage: bench/extender_latency.py [--build DIR] [--samples N] [--modes a,b]
                                 [--callgrind] [--callgrind-out FILE] [--trace-dir DIR]
The trace folder (the Alibaba GPU cluster trace 2023, alibaba-gpu-v2023) is
--trace-dir, else $VGPU_TRACE_DIR, else ../shared/data/alibaba-gpu-v2023 next
to the repository.
"""
import argparse
import csv
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ROOT, TOKEN, post, start_fake_api  # noqa: E402
NODE_LIST = "openb_node_list_gpu_node.csv"
DEFAULT_TRACE_DIR = os.path.join(os.path.dirname(ROOT), "shared", "data", "alibaba-gpu-v2023")
GIB = 1 << 30


def start(cmd, env=None):
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    line = p.stdout.readline()
    if not line.startswith("PORT "):
        p.kill()
        sys.exit("%s did not print its port: %r" % (cmd[0], line))
    return p, int(line.split()[1])


def node_object(row):
    mem = 32 if row["model"] in ("V100M32", "A10") else 16
    gpus = [{"index": i, "uuid": "GPU-%s-%d" % (row["sn"], i), "type": row["model"],
             "memory": mem * GIB, "numa": None, "health": "Healthy",
             "resources": [{"name": "nvidia.com/vgpu", "dialect": "vgpu", "count": 4, "unit": 0,
                            "memory": mem * GIB, "cores": 100}]}
            for i in range(int(row["gpu"]))]
    inv = {"version": 1, "node": row["sn"], "contextReserve": 0, "gpus": gpus}
    return {"kind": "Node", "apiVersion": "v1",
            "metadata": {"name": row["sn"], "labels": {"kubernetes.io/hostname": row["sn"]},
                         "annotations": {"vgpu.io/gpu-inventory":
                                         json.dumps(inv, separators=(",", ":"))}},
            "status": {"allocatable": {"cpu": str(int(row["cpu_milli"]) // 1000),
                                       "memory": "%sMi" % row["memory_mib"]}}}


def holder(row, mem):
    a = {"version": 1, "node": row["sn"], "containers": [
        {"name": "main", "resource": "nvidia.com/vgpu",
         "gpus": [{"uuid": "GPU-%s-0" % row["sn"], "index": 0, "memory": mem * GIB // 2,
                   "cores": 50}]}]}
    return {"metadata": {"name": "hold-" + row["sn"], "namespace": "default",
                         "annotations": {"vgpu.io/assigned": json.dumps(a)}},
            "spec": {"nodeName": row["sn"], "containers": [{"name": "main"}]},
            "status": {"phase": "Running"}}


def pod():
    return {"metadata": {"name": "bench", "namespace": "default", "uid": "u-bench"},
            "spec": {"containers": [{"name": "main", "resources": {"limits": {
                "nvidia.com/vgpu": "1", "nvidia.com/gpumem": "4096",
                "nvidia.com/gpucores": "25"}}}], "schedulerName": "default-scheduler"},
            "status": {"phase": "Pending"}}


def server_seconds(port):
    """Seconds the scheduler spent in filter + prioritize so far (/metrics)."""
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=10) as r:
        text = r.read().decode()
    total = 0.0
    for line in text.splitlines():
        if line.startswith("vgpu_scheduler_request_duration_seconds_sum") and "bind" not in line:
            total += float(line.split()[-1])
    return total


def one(port, args_body, nodes_by_name):
    t0 = time.perf_counter()
    res = post(port, "/filter", args_body)
    if res.get("NodeNames") is not None:
        passed = res["NodeNames"]
        body = json.dumps({"Pod": pod(), "Nodes": None, "NodeNames": passed}).encode()
    else:
        items = res["Nodes"]["items"]
        passed = [n["metadata"]["name"] for n in items]
        body = json.dumps({"Pod": pod(), "Nodes": {"metadata": {}, "items": items},
                           "NodeNames": None}).encode()
    scores = post(port, "/prioritize", body)
    dt = (time.perf_counter() - t0) * 1e3
    if len(scores) != len(passed) or not passed:
        sys.exit("prioritize answered %d hosts for %d nodes" % (len(scores), len(passed)))
    return dt, len(passed)


def callgrind_total(path):
    with open(path) as f:
        for line in f:
            if line.startswith(("totals:", "summary:")):
                return int(line.split()[1])
    sys.exit("no totals in " + path)


def run_mode(mode, build, kubeconfig, rows, nodes, samples, cg_out=None):
    ttl = "0" if mode == "names-cold" else "600000"
    wrap = []
    if cg_out:
        wrap = ["valgrind", "--tool=callgrind", "--toggle-collect=do_filter",
                "--toggle-collect=do_prioritize", "--callgrind-out-file=" + cg_out]
    sched, port = start(wrap + [os.path.join(build, "bin", "vgpu-scheduler"), "--listen",
                                "127.0.0.1:0", "--kubeconfig", kubeconfig, "--cache-ttl-ms", ttl]
                  + (["--no-watch"] if mode == "names-cold" else []))
    try:
        if mode == "nodes":
            body = json.dumps({"Pod": pod(), "Nodes": {"metadata": {}, "items": nodes},
                               "NodeNames": None}).encode()
        else:
            body = json.dumps({"Pod": pod(), "Nodes": None,
                               "NodeNames": [r["sn"] for r in rows]}).encode()
        first, fit = one(port, body, None)  # warms the cache in names-warm
        if cg_out:  # forget the warm-up's instructions
            subprocess.run(["callgrind_control", "-z", str(sched.pid)], check=True,
                           stdout=subprocess.DEVNULL)
        before = server_seconds(port)
        times = [one(port, body, None)[0] for _ in range(samples)]
        server_ms = (server_seconds(port) - before) * 1e3 / samples
    finally:
        sched.terminate()
        sched.wait()
    ir = ""
    if cg_out:
        ir = " instructions/pair=%.2fM" % (callgrind_total(cg_out) / samples / 1e6)
    times.sort()
    p90 = times[min(len(times) - 1, int(round(0.9 * (len(times) - 1))))]
    print("%-10s nodes=%d fit=%d first=%.1f ms median=%.2f ms p90=%.2f ms (n=%d) "
          "server-side mean=%.2f ms%s"
          % (mode, len(rows), fit, first, statistics.median(times), p90, len(times), server_ms,
             ir),
          flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--samples", type=int, default=30)
    ap.add_argument("--modes", default="names-warm,nodes,names-cold")
    ap.add_argument("--callgrind", action="store_true",
                    help="count the verbs' instructions under valgrind (slow)")
    ap.add_argument("--callgrind-out", default="callgrind.out.extender")
    ap.add_argument("--trace-dir", default=os.environ.get("VGPU_TRACE_DIR", DEFAULT_TRACE_DIR),
                    help="the Alibaba GPU trace folder (default $VGPU_TRACE_DIR, else %s)"
                    % DEFAULT_TRACE_DIR)
    args = ap.parse_args()
    cg_out = os.path.abspath(args.callgrind_out) if args.callgrind else None
    csv_path = os.path.join(args.trace_dir, NODE_LIST)
    if not os.path.isfile(csv_path):
        sys.exit("extender_latency.py: no %s in %s: give the Alibaba GPU trace folder with "
                 "--trace-dir or VGPU_TRACE_DIR" % (NODE_LIST, args.trace_dir))
    with open(csv_path) as f:
        rows = list(csv.DictReader(f))
    with tempfile.TemporaryDirectory() as work:
        api, api_port, kc = start_fake_api(work)
        try:
            nodes = [node_object(r) for r in rows]
            rnd = random.Random(42)
            for n in nodes:
                post(api_port, "/_test/nodes", n, TOKEN)
            for r in rows:
                if rnd.random() < 0.25:
                    mem = 32 if r["model"] in ("V100M32", "A10") else 16
                    post(api_port, "/_test/pods", holder(r, mem), TOKEN)
            print("vgpu-scheduler filter+prioritize, one pod, %s" % os.uname().nodename)
            for mode in args.modes.split(","):
                samples = min(args.samples, 5) if mode == "names-cold" else args.samples
                run_mode(mode, args.build, kc, rows, nodes, samples, cg_out)
        finally:
            api.terminate()
            api.wait()


if __name__ == "__main__":
    main()
