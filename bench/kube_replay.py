#!/usr/bin/python3
"""kube_replay.py -- the Alibaba GPU trace placed by the real kube-scheduler
with vgpu-scheduler, beside vgpu-replay's in-process vgpu and fgd on the very
same nodes and pods (issue 28, item 4). bench/kube-replay.sh runs it; `make
bench-kube` runs that.

For each seed: the seed's node subset and arrival list (kube_trace.py); a
throwaway control plane (scripts/e2e/cluster.sh up-control-plane: etcd and
kube-apiserver 1.20.2, no kubelet, under its own state dir);
vgpu-scheduler from build/bin as a host process with the deployed flags
(deploy/base/scheduler.yaml); kube-scheduler with the deployed configuration
(deploy/base/scheduler-config.yaml as v1beta1, as tests/e2e/install.py makes
it), overriding only its kubeconfig, leader election and the extender's URL;
the Nodes and pods, measured (kube_trace.run_pods, with the CPU and RSS of
kube-apiserver, kube-scheduler and vgpu-scheduler); everything stopped by pid
and the state removed, also on failure and Ctrl-C; then vgpu-replay
--in-order with vgpu and with fgd on the same pods. Prints a table; the last
line is one JSON object (its keys: --help).

Python's standard library, plus python3-yaml (a Debian package that
scripts/deps.sh installs; tests/e2e reads deploy/ with it too) for deploy/'s
YAML.
"""
import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time
import urllib.parse

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
from install import http_ok, scheduler_config_v1beta1  # noqa: E402
from kube_api import Api  # noqa: E402
from kube_trace import (EXTENDER_VERBS, inproc, log, read_csv, run_pods,  # noqa: E402
                        write_in_order, write_seed_files)

CLUSTER_SH = os.path.join(ROOT, "scripts", "e2e", "cluster.sh")
DEFAULT_TRACE_DIR = os.path.join(os.path.dirname(ROOT), "shared", "data", "alibaba-gpu-v2023")


# ---------------------------------------------------------------- the bench's control plane

def deployed_extender_args():
    """The extender container's arguments in deploy/base/scheduler.yaml,
    less --listen and --kubeconfig (this machine's own)."""
    with open(os.path.join(ROOT, "deploy", "base", "scheduler.yaml")) as f:
        for doc in yaml.safe_load_all(f):
            for c in ((((doc or {}).get("spec") or {}).get("template") or {}).get("spec") or
                      {}).get("containers") or []:
                if c.get("image") == "vgpu-scheduler":
                    argv = (c.get("command") or [])[1:] + (c.get("args") or [])
                    return [a for a in argv if not a.startswith(("--listen", "--kubeconfig"))]
    raise SystemExit("kube-replay: no vgpu-scheduler container in deploy/base/scheduler.yaml")


def scheduler_config(port, kubeconfig, plain=False):
    """deploy/base/scheduler-config.yaml as the e2e deploys it on 1.20
    (v1beta1), with this machine's kubeconfig, no leader election, and the
    extender at 127.0.0.1:port; plain: kube-scheduler's defaults instead
    (no extender, its own percentageOfNodesToScore), the profile's name kept."""
    cfg = scheduler_config_v1beta1()
    if plain:
        cfg.pop("extenders", None)
        cfg.pop("percentageOfNodesToScore", None)
    cfg["clientConnection"] = dict(cfg.get("clientConnection") or {}, kubeconfig=kubeconfig)
    cfg["leaderElection"] = {"leaderElect": False}
    for ext in cfg.get("extenders") or []:
        url = urllib.parse.urlsplit(ext["urlPrefix"])
        ext["urlPrefix"] = urllib.parse.urlunsplit(url._replace(netloc="127.0.0.1:%d" % port))
    return cfg


def running_clusters():
    """Other clusters' etcd and kube-apiserver processes (pid, name)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/comm" % pid) as f:
                comm = f.read().strip()
        except OSError:
            continue
        if comm in ("etcd", "kube-apiserver"):
            found.append((int(pid), comm))
    return found


def wait_machine_free(limit_s):
    """Only one cluster at a time on this machine: waits (30 s polls) until
    no etcd or kube-apiserver runs, at most limit_s."""
    deadline = time.monotonic() + limit_s
    while True:
        found = running_clusters()
        if not found:
            return
        if time.monotonic() >= deadline:
            raise SystemExit("kube-replay: another cluster still runs after %d s: %s" % (
                limit_s, found))
        log("another cluster runs (%s): waiting" % ", ".join("%s %d" % (n, p) for p, n in found))
        time.sleep(30)


class ControlPlane:
    """etcd, kube-apiserver and kube-scheduler by scripts/e2e/cluster.sh under
    state/, vgpu-scheduler started here; down() stops them all by pid."""

    def __init__(self, state, build, plain=False):
        self.state, self.build, self.plain = state, build, plain
        self.extender = None
        self.port = None
        self.admin = os.path.join(state, "kubeconfig", "admin.kubeconfig")
        self.ext_log = os.path.join(os.path.dirname(state), "vgpu-scheduler.log")

    def cluster_sh(self, verb, timeout, **env):
        subprocess.run(["bash", CLUSTER_SH, verb], check=True, timeout=timeout,
                       env=dict(os.environ, VGPU_E2E_STATE=self.state, **env))

    def up(self):
        self.cluster_sh("up-control-plane", 1800)  # builds Kubernetes first when not cached
        if not self.plain:
            self.start_extender()
        cfg = os.path.join(os.path.dirname(self.state), "scheduler-config.json")
        with open(cfg, "w") as f:
            json.dump(scheduler_config(self.port, os.path.join(
                self.state, "kubeconfig", "scheduler.kubeconfig"), self.plain), f, indent=1)
        self.cluster_sh("restart-scheduler", 300, VGPU_E2E_SCHEDULER_CONFIG=cfg)

    def start_extender(self):
        out = os.path.join(os.path.dirname(self.state), "vgpu-scheduler.out")
        argv = [os.path.join(self.build, "bin", "vgpu-scheduler")] + deployed_extender_args() + \
            ["--listen", "127.0.0.1:0", "--kubeconfig", self.admin]
        with open(out, "w") as o, open(self.ext_log, "w") as e:
            self.extender = subprocess.Popen(argv, stdout=o, stderr=e, stdin=subprocess.DEVNULL,
                                             start_new_session=True)
        log("started vgpu-scheduler (pid %d): %s" % (self.extender.pid, " ".join(argv[1:])))
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and self.extender.poll() is None:
            with open(out) as f:
                text = f.read()
            if text.startswith("PORT ") and self.port is None:
                self.port = int(text.split()[1])
            if self.port and http_ok("http://127.0.0.1:%d/healthz" % self.port):
                return
            time.sleep(0.2)
        raise SystemExit("kube-replay: vgpu-scheduler did not come up; see " + self.ext_log)

    def metrics_url(self):
        return "http://127.0.0.1:%d/metrics" % self.port if self.port else None

    def pids(self):
        out = {}
        for name in ("kube-apiserver", "kube-scheduler"):
            with open(os.path.join(self.state, "pids", name)) as f:
                out[name] = int(f.read().split()[0])
        if self.extender:
            out["vgpu-scheduler"] = self.extender.pid
        return out

    def tails(self, lines=15):
        for path in (os.path.join(self.state, "logs", "kube-scheduler.log"), self.ext_log,
                     os.path.join(self.state, "logs", "kube-apiserver.log")):
            if os.path.exists(path):
                with open(path, errors="replace") as f:
                    tail = f.readlines()[-lines:]
                log("---- last lines of %s\n%s" % (path, "".join(tail)))

    def down(self):
        if self.extender and self.extender.poll() is None:
            self.extender.terminate()
            try:
                self.extender.wait(20)
            except subprocess.TimeoutExpired:
                self.extender.kill()
                self.extender.wait(10)
        self.cluster_sh("down", 300)


# ---------------------------------------------------------------- the bench

def one_seed(args, seed, root):
    work = os.path.join(root, "seed-%d" % seed)
    nodes_csv, arrival_csv = write_seed_files(args.build, args.trace_dir, args.trace, args.nodes,
                                              seed, work)
    wait_machine_free(args.wait_other_s)
    t0 = time.monotonic()
    cp = ControlPlane(os.path.join(work, "cluster"), args.build, args.plain)
    ok = False
    try:
        cp.up()
        log("seed %d: control plane up in %.0f s" % (seed, time.monotonic() - t0))
        api = Api(cp.admin, os.path.join(work, "api"))
        deadline = args.deadline_s or 300 + 2 * (len(read_csv(arrival_csv)))
        res = run_pods(api, nodes_csv, arrival_csv, "kube-replay", deadline, args.conns,
                       metrics_url=cp.metrics_url(), pids=cp.pids(), plain=args.plain)
        ok = True
    finally:
        if not ok:
            cp.tails()
        cp.down()
    res["seconds"] = round(time.monotonic() - t0, 1)
    if not args.plain:  # no vgpu-scheduler ran
        with open(cp.ext_log, errors="replace") as f:
            res["problems"] += ["vgpu-scheduler: " + line.strip() for line in f
                                if "gpu-inventory" in line]
    in_order = write_in_order(arrival_csv, res["order"], os.path.join(work, "arrival-stored.csv"))
    for policy in ("vgpu", "fgd"):
        res["inproc_" + policy] = None if args.plain else inproc(args.build, nodes_csv, in_order,
                                                                  seed, policy)
    res["seed"] = seed
    return res


def mean(values):
    values = [v for v in values if v is not None]
    return round(statistics.mean(values), 4) if values else None


def fmt_proc(p):
    return "%.0fs %.1fc %.0fM" % (p["cpu_s"], p["peak_cores"], p["peak_rss_mib"])


def report(args, results):
    print("kube-scheduler 1.20.2 + vgpu-scheduler vs vgpu-replay --in-order, trace %s, %d nodes"
          % (args.trace, args.nodes))
    print("%-5s %5s %5s %6s %7s %7s %7s %7s %8s %8s  %-26s %s" % (
        "seed", "pods", "bound", "unsch", "kube%", "vgpu%", "fgd%", "pods/s", "p50ms", "p99ms",
        "extender mean ms f/p/b", "seconds"))
    for r in results:
        ext = "/".join("%s" % (r["extender"].get(v, {}).get("mean_ms")) for v in EXTENDER_VERBS)
        pct = ["-" if r[k] is None else "%.2f" % r[k] for k in
               ("kube_unallocated_pct", "inproc_vgpu", "inproc_fgd")]
        print("%-5d %5d %5d %6d %7s %7s %7s %7s %8s %8s  %-26s %s" % (
            r["seed"], r["pods"], r["bound"], r["unschedulable"], pct[0], pct[1], pct[2],
            r["pods_per_s"], r["bind_p50_ms"],
            r["bind_p99_ms"], ext, r["seconds"]))
        print("      CPU s / peak cores / peak RSS: " + ", ".join(
            "%s %s" % (n, fmt_proc(p)) for n, p in r["procs"].items()))
        print("      kube curve (arrived%%: unallocated%%): %s" % r["curve"])
        print("      extender calls f/p/b %s, p99 <= %s ms; %d pods stored out of list order; "
              "%d binds seen by a re-list; binds by result %s" % (
                  "/".join(str(r["extender"].get(v, {}).get("calls")) for v in EXTENDER_VERBS),
                  "/".join(str(r["extender"].get(v, {}).get("p99_le_ms")) for v in
                           EXTENDER_VERBS), r["reordered"], r["bound_by_list"], r["binds"]))
        for p in r["problems"][:10]:
            print("      PROBLEM: " + p)
        if r["node_failures"]:
            print("      vgpu-scheduler node failures: %s" % r["node_failures"])
        if not r["finished"]:
            print("      DEADLINE: not every pod was bound or unschedulable in time")
    keys = {"kube_unallocated_pct_at_100": "kube_unallocated_pct",
            "inproc_vgpu_unallocated_pct_at_100": "inproc_vgpu",
            "inproc_fgd_unallocated_pct_at_100": "inproc_fgd", "pods_per_s": "pods_per_s",
            "bind_p50_ms": "bind_p50_ms", "bind_p99_ms": "bind_p99_ms", "seconds": "seconds"}
    out = {"trace": args.trace, "nodes": args.nodes, "seeds": args.seeds}
    for key, field in keys.items():
        out[key] = mean([r[field] for r in results])
        out[key + "_per_seed"] = [r[field] for r in results]
    out["pods_per_seed"] = [r["pods"] for r in results]
    out["extender_mean_ms"] = {v: mean([r["extender"].get(v, {}).get("mean_ms") for r in results])
                               for v in EXTENDER_VERBS}
    out["procs"] = {n: {k: max(r["procs"][n][k] for r in results) for k in
                        ("cpu_s", "peak_cores", "peak_rss_mib")} for n in results[0]["procs"]}
    out["problems"] = sum(len(r["problems"]) for r in results)
    out["node_failures"] = sum(sum(r["node_failures"].values()) for r in results)
    out["all_settled"] = all(r["finished"] for r in results)
    print(json.dumps(out, separators=(",", ":")))
    return 0 if not out["problems"] and not out["node_failures"] and out["all_settled"] else 1


def interrupted(signum, frame):
    """SIGTERM as Ctrl-C: the finally blocks stop what was started."""
    raise KeyboardInterrupt("signal %d" % signum)


def parse_seeds(text):
    lo, _, hi = text.partition("-")
    lo, hi = int(lo), int(hi or lo)
    if hi < lo:
        raise argparse.ArgumentTypeError("seeds A-B with A <= B")
    return list(range(lo, hi + 1))


def main():
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="The last line is JSON: kube_unallocated_pct_at_100, inproc_vgpu_..., "
        "inproc_fgd_unallocated_pct_at_100, pods_per_s, bind_p50_ms, bind_p99_ms, seconds "
        "(means over the seeds; each also as <key>_per_seed), extender_mean_ms per verb, "
        "procs (the largest CPU s, peak cores, peak RSS MiB of kube-apiserver, kube-scheduler, "
        "vgpu-scheduler), problems (assignments that do not match a request or put a GPU over "
        "its memory or compute), node_failures (vgpu-scheduler's, e.g. bad_inventory), "
        "all_settled, nodes, seeds, trace. Exit 1 when problems or node failures were seen "
        "or a seed hit its deadline.")
    ap.add_argument("--nodes", type=int, default=100, help="trace nodes per seed (default 100)")
    ap.add_argument("--seeds", default="42", help="A or A-B (default 42)")
    ap.add_argument("--trace", default="default",
                    help="pod trace: openb_pod_list_TRACE.csv (default: default)")
    ap.add_argument("--trace-dir", default=os.environ.get("VGPU_TRACE_DIR", DEFAULT_TRACE_DIR),
                    help="the Alibaba GPU trace folder (default $VGPU_TRACE_DIR, else %s)"
                    % DEFAULT_TRACE_DIR)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"), help="vgpu's build folder")
    ap.add_argument("--conns", type=int, default=4, help="connections creating pods (4)")
    ap.add_argument("--plain", action="store_true",
                    help="the yardstick: the same Nodes and pods without GPU resources through "
                    "kube-scheduler's default configuration, no extender (pods/s and latency; "
                    "no placement figures)")
    ap.add_argument("--deadline-s", type=int, default=0,
                    help="per seed, from the first create (default 300 + 2 s per pod)")
    ap.add_argument("--wait-other-s", type=int, default=1800,
                    help="how long to wait for another cluster on this machine to go (1800)")
    ap.add_argument("--state", default="/tmp/vgpu-kube-replay",
                    help="state folder, removed at the end (default /tmp/vgpu-kube-replay)")
    args = ap.parse_args()
    seeds = parse_seeds(args.seeds)
    if os.geteuid() != 0:
        sys.exit("kube-replay: needs root (the control plane's scripts, scripts/e2e, do)")
    if os.path.exists(args.state):
        sys.exit("kube-replay: %s exists: another kube-replay running, or left by a killed one "
                 "(remove it after checking nothing runs from it)" % args.state)
    signal.signal(signal.SIGTERM, interrupted)
    results = []
    try:
        for seed in seeds:
            results.append(one_seed(args, seed, args.state))
    except KeyboardInterrupt as e:
        log("interrupted (%s): everything started was stopped" % (e or "Ctrl-C"))
        return 130
    finally:
        shutil.rmtree(args.state, ignore_errors=True)
    return report(args, results)


if __name__ == "__main__":
    sys.exit(main())
