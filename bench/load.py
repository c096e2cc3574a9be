#!/usr/bin/python3
"""load.py -- the HTTP servers under load (issue 27): the real vgpu-scheduler
and vgpu-webhook from a build folder, on 127.0.0.1 only, with the fake API
server (tests/k8s/fake_apiserver.py) behind the scheduler. Prints figures;
not a test (bench/load.sh runs it; `make bench-load`).

  held       idle connections opened up to --conns (from 127.0.0.2-5, as
             several clients), how many the scheduler still holds a second
             later, and whether /healthz (from 127.0.0.1) answers then
  filters    2,000 /filter calls sent at once, each on its own connection:
             how many were answered within 60 s
  healthz    /healthz latency (20 calls, one after another, each on a new
             connection) while 1,100 idle connections from the prober's
             own address are open: scheduler (HTTP) and webhook (HTTPS)
  rss        the scheduler's peak RSS (VmHWM) after 8 /filter calls at once,
             each a body of --body-mib MiB (a Pod padded by an annotation):
             the largest each server accepts
  names      one /filter over 5,000 node names (2,500 nodes, each named
             twice), at --cache-ttl-ms 0 and at the default

Every loop is bounded and every wait has a deadline. Usage:
  bench/load.py [--build DIR] [--conns N] [--body-mib N] [--only a,b]
"""
import argparse
import urllib.request
import json
import os
import resource
import selectors
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ROOT, TOKEN, post, start_fake_api  # noqa: E402
from extender_latency import node_object, pod, start  # noqa: E402

HOST = "127.0.0.1"  # never any other address


def raise_nofile():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return hard


def open_idle(port, n, sources):
    """n idle TCP connections to port, spread over the source addresses."""
    socks = []
    for i in range(n):
        try:
            s = socket.create_connection((HOST, port), timeout=3,
                                         source_address=(sources[i % len(sources)], 0))
            s.setblocking(False)
            socks.append(s)
        except OSError:
            pass
    return socks


def still_open(socks):
    held = 0
    for s in socks:
        try:
            held += 1 if s.recv(1) else 0  # b"": closed by the server
        except BlockingIOError:
            held += 1
        except OSError:
            pass
    return held


def close_all(socks):
    for s in socks:
        s.close()


def get(port, path, tls=False, timeout=35.0):
    """(status or None, seconds) of one GET on a new connection."""
    t0 = time.perf_counter()
    try:
        s = socket.create_connection((HOST, port), timeout=timeout)
        if tls:
            ctx = ssl.create_default_context()
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
            s = ctx.wrap_socket(s)
        s.sendall(("GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" % path).encode())
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
        s.close()
        status = int(data.split(b" ", 2)[1]) if data.startswith(b"HTTP/") else None
    except (OSError, ValueError, IndexError):
        status = None
    return status, time.perf_counter() - t0


def request(path, body):
    return (("POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
             "Content-Length: %d\r\nConnection: close\r\n\r\n") % (path, len(body))).encode() + body


def simultaneous(port, reqs, deadline_s):
    """Sends each request on its own connection at once; answers received (status lines)."""
    socks = []
    for r in reqs:
        try:
            s = socket.create_connection((HOST, port), timeout=5)
            socks.append((s, r))
        except OSError:
            pass
    sel = selectors.DefaultSelector()
    for s, r in socks:
        try:
            s.sendall(r)
            s.setblocking(False)
            sel.register(s, selectors.EVENT_READ, [b""])
        except OSError:
            s.close()
    answered, end = 0, time.time() + deadline_s
    while sel.get_map() and time.time() < end:
        for key, _ in sel.select(timeout=1):
            try:
                chunk = key.fileobj.recv(65536)
            except OSError:
                chunk = b""
            if chunk:
                key.data[0] += chunk
                continue
            if key.data[0].startswith(b"HTTP/1.1 200"):
                answered += 1
            sel.unregister(key.fileobj)
            key.fileobj.close()
    for key in list(sel.get_map().values()):
        key.fileobj.close()
    return answered, len(socks)


def hwm_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(("VmHWM", "VmRSS")):
                yield line.split()[0].rstrip(":"), int(line.split()[1])


def names_args(names):
    return json.dumps({"Pod": pod(), "Nodes": None, "NodeNames": names}).encode()


def scheduler(build, kc, *extra):
    return start([os.path.join(build, "bin", "vgpu-scheduler"), "--listen", HOST + ":0",
                  "--kubeconfig", kc] + list(extra))


def stop(p):
    p.terminate()
    try:
        p.wait(timeout=10)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()


def bench_held(build, kc, conns):
    sched, port = scheduler(build, kc)
    try:
        socks = open_idle(port, conns, ["127.0.0.%d" % i for i in range(2, 6)])
        time.sleep(1)
        held = still_open(socks)
        status, dt = get(port, "/healthz", timeout=10)
        rss = dict(hwm_kib(sched.pid))["VmRSS"]
        print("held     %d idle connections opened of %d, %d held after 1 s; /healthz %s in %.0f ms;"
              " scheduler RSS %.0f MB" % (len(socks), conns, held, status or "no answer", dt * 1e3,
                                          rss / 1024), flush=True)
        close_all(socks)
    finally:
        stop(sched)


def bench_filters(build, kc, names):
    sched, port = scheduler(build, kc)
    try:
        body = names_args(names[:10])
        t0 = time.perf_counter()
        ok, sent = simultaneous(port, [request("/filter", body)] * 2000, 60)
        print("filters  2000 simultaneous /filter (10 names each): %d connected, %d answered 200 "
              "in %.1f s" % (sent, ok, time.perf_counter() - t0), flush=True)
    finally:
        stop(sched)


def healthz_under_idle(name, port, tls):
    socks = open_idle(port, 1100, [HOST])
    time.sleep(1)
    held = still_open(socks)
    lat, tries = [], 0
    for tries in range(1, 21):
        status, dt = get(port, "/healthz", tls=tls)
        if status == 200:
            lat.append(dt * 1e3)
        if tries - len(lat) >= 3:  # each may take its 35 s: stop after three misses
            break
    close_all(socks)
    print("healthz  %-9s with %d idle connections (%d held): %d/%d answered, median %s ms, "
          "max %s ms" % (name, len(socks), held, len(lat), tries,
                         "%.1f" % statistics.median(lat) if lat else "-",
                         "%.1f" % max(lat) if lat else "-"), flush=True)


def bench_healthz(build, kc, work):
    sched, port = scheduler(build, kc)
    try:
        healthz_under_idle("scheduler", port, False)
    finally:
        stop(sched)
    cert, key = os.path.join(work, "tls.crt"), os.path.join(work, "tls.key")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key, "-out", cert,
                    "-days", "1", "-subj", "/CN=vgpu-webhook"], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wh, port = start([os.path.join(build, "bin", "vgpu-webhook"), "--tls-cert", cert,
                      "--tls-key", key, "--listen", HOST + ":0"])
    try:
        healthz_under_idle("webhook", port, True)
    finally:
        stop(wh)


def bench_rss(build, kc, body_mib):
    sched, port = scheduler(build, kc)
    try:
        p = pod()
        p["metadata"]["annotations"] = {"bench/pad": ""}
        base = len(names_args(["n-0"]))
        p["metadata"]["annotations"]["bench/pad"] = "x" * (body_mib * (1 << 20) - base - 64)
        body = json.dumps({"Pod": p, "Nodes": None, "NodeNames": ["n-0"]}).encode()
        before = dict(hwm_kib(sched.pid))
        ok, sent = simultaneous(port, [request("/filter", body)] * 8, 120)
        after = dict(hwm_kib(sched.pid))
        print("rss      8 simultaneous /filter of %.1f MiB: %d answered 200; VmHWM %.0f MB before, "
              "%.0f MB after" % (len(body) / (1 << 20), ok, before["VmHWM"] / 1024,
                                after["VmHWM"] / 1024), flush=True)
    finally:
        stop(sched)


def watches_synced(port, limit_s=60.0):
    """Seconds until /metrics says both watches are up (the store serves
    filters from then on, docs/scheduler.md "Freshness"); None past limit_s."""
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < limit_s:
        try:
            with urllib.request.urlopen("http://%s:%d/metrics" % (HOST, port), timeout=5) as r:
                text = r.read().decode()
            up = [x for x in text.splitlines() if x.startswith("vgpu_scheduler_watch_up{")]
            if len(up) == 2 and all(x.rstrip().endswith(" 1") for x in up):
                return time.perf_counter() - t0
        except OSError:
            pass
        time.sleep(0.05)
    return None


def bench_names(build, kc, names):
    many = [names[i % len(names)] for i in range(5000)]  # every node twice
    body = names_args(many)
    for ttl in ("0", None):
        sched, port = scheduler(build, kc, *(["--cache-ttl-ms", ttl] if ttl else []))
        try:
            synced = watches_synced(port)
            print("names    watches synced %s after start" % (
                "%.0f ms" % (synced * 1e3) if synced is not None else "NOT within 60 s"), flush=True)
            times = []
            for _ in range(3):
                t0 = time.perf_counter()
                res = post(port, "/filter", body)
                times.append((time.perf_counter() - t0) * 1e3)
            print("names    /filter over %d names (%d nodes), --cache-ttl-ms %s: %s ms (%d passed)"
                  % (len(many), len(names), ttl or "default (1000)",
                     " ".join("%.0f" % t for t in times), len(res.get("NodeNames") or [])),
                  flush=True)
        finally:
            stop(sched)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--conns", type=int, default=10000)
    ap.add_argument("--body-mib", type=int, default=8,
                    help="the /filter body in the rss figure (the largest the server takes)")
    ap.add_argument("--only", default="held,filters,healthz,rss,names")
    args = ap.parse_args()
    hard = raise_nofile()
    only = args.only.split(",")
    print("load.py: %s, %s, open-file limit %d, %d CPUs" % (os.path.abspath(args.build),
                                                           os.uname().nodename, hard,
                                                           os.cpu_count()), flush=True)
    with tempfile.TemporaryDirectory() as work:
        api, api_port, kc = start_fake_api(work)
        try:
            names = ["load-node-%04d" % i for i in range(2500)]
            for n in names:
                post(api_port, "/_test/nodes", node_object(
                    {"sn": n, "model": "A10", "gpu": "2", "cpu_milli": "32000",
                     "memory_mib": "131072"}), TOKEN)
            if "held" in only:
                bench_held(args.build, kc, args.conns)
            if "filters" in only:
                bench_filters(args.build, kc, names)
            if "healthz" in only:
                bench_healthz(args.build, kc, work)
            if "rss" in only:
                bench_rss(args.build, kc, args.body_mib)
            if "names" in only:
                bench_names(args.build, kc, names)
        finally:
            api.terminate()
            api.wait()


if __name__ == "__main__":
    main()
