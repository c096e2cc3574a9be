#!/usr/bin/python3
"""extender_names.py -- issue 27: one /filter over 5,000 node names, at
--cache-ttl-ms 0 and at the default, the first request after the scheduler
started and the warm ones after it.

The fake API server (tests/k8s/fake_apiserver.py) holds --nodes nodes (5,000
by default), each with a vgpu.io/gpu-inventory annotation as in
extender_latency.py (2 A10s, 4 vgpu slots each), and a quarter of them a
bound pod holding half of GPU 0. Two sets of names are sent: every node once
("distinct"), and 5,000 names over half the nodes, each twice ("dups").
For each TTL and set a fresh vgpu-scheduler is started; the figures are the
time its Pod and Node watches took to come up (/metrics vgpu_scheduler_watch_up,
the list they start from included), then the client wall time of the first
/filter and of --warm more, the API requests the filters cost (the fake's
GET /_test/requests, before and after; the resize poller's pod lists count
too) and the scheduler's RSS after them. Prints figures; asserts nothing.

Usage: bench/extender_names.py [--build DIR] [--nodes N] [--warm N] [--no-watch]
"""
import argparse
import json
import os
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ROOT, TOKEN, post, start_fake_api  # noqa: E402
from extender_latency import holder, node_object, pod, start  # noqa: E402
from load import hwm_kib, stop  # noqa: E402


def api_counts(api_port):
    req = urllib.request.Request("http://127.0.0.1:%d/_test/requests" % api_port,
                                 headers={"Authorization": "Bearer " + TOKEN})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read()).get("counts", {})


def diff(after, before):
    d = {k: v - before.get(k, 0) for k, v in after.items() if v != before.get(k, 0)}
    return " ".join("%s=%d" % (k, v) for k, v in sorted(d.items())) or "none"


def watches_up(port, deadline_s):
    """Seconds until both watches stream, or None (never, or --no-watch)."""
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < deadline_s:
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=10) as r:
            text = r.read().decode()
        up = [ln for ln in text.splitlines()
              if ln.startswith("vgpu_scheduler_watch_up") and ln.rstrip().endswith(" 1")]
        if len(up) == 2:
            return time.perf_counter() - t0
        time.sleep(0.02)
    return None


def run(build, kc, api_port, ttl, label, names, warm, watch):
    extra = ["--cache-ttl-ms", ttl] if ttl is not None else []
    if not watch:
        extra.append("--no-watch")
    sched, port = start([os.path.join(build, "bin", "vgpu-scheduler"), "--listen",
                         "127.0.0.1:0", "--kubeconfig", kc] + extra)
    try:
        up = watches_up(port, 60) if watch else None
        body = json.dumps({"Pod": pod(), "Nodes": None, "NodeNames": names}).encode()
        times, passed = [], 0
        before = api_counts(api_port)
        for _ in range(1 + warm):
            t0 = time.perf_counter()
            res = post(port, "/filter", body)
            times.append((time.perf_counter() - t0) * 1e3)
            passed = len(res.get("NodeNames") or [])
        calls = diff(api_counts(api_port), before)
        rss = dict(hwm_kib(sched.pid)).get("VmRSS", 0)
        print("ttl %-4s %-8s %d names (%d distinct): watches up %s; first %.0f ms, warm %s ms; "
              "%d passed; API requests over the %d filters: %s; RSS %.0f MB"
              % (ttl if ttl is not None else "dflt", label, len(names), len(set(names)),
                 "%.2f s" % up if up is not None else "-", times[0],
                 " ".join("%.0f" % t for t in times[1:]), passed, 1 + warm, calls, rss / 1024),
              flush=True)
    finally:
        stop(sched)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--warm", type=int, default=3)
    ap.add_argument("--no-watch", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as work:
        api, api_port, kc = start_fake_api(work)
        try:
            names = ["names-node-%04d" % i for i in range(args.nodes)]
            for i, n in enumerate(names):
                row = {"sn": n, "model": "A10", "gpu": "2", "cpu_milli": "32000",
                       "memory_mib": "131072"}
                post(api_port, "/_test/nodes", node_object(row), TOKEN)
                if i % 4 == 0:
                    post(api_port, "/_test/pods", holder(row, 32), TOKEN)
            half = names[:len(names) // 2]
            dups = [half[i % len(half)] for i in range(len(names))]
            for ttl in ("0", None):
                for label, set_ in (("distinct", names), ("dups", dups)):
                    run(args.build, kc, api_port, ttl, label, set_, args.warm,
                        not args.no_watch)
        finally:
            api.terminate()
            api.wait()


if __name__ == "__main__":
    main()
