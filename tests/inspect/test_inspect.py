#!/usr/bin/python3
"""kubectl-inspect-gpushare against the fake API server (tests/k8s/fake_apiserver.py).

Each fixture in fixtures/ describes nodes (their GPU inventory) and pods (their
requests and vgpu.io/assigned annotation) in a short form; this script turns
them into real Node and Pod objects, loads them into a fresh fake API server,
runs the real binary the way kubectl would, and compares what it prints with
golden/<fixture>.txt and golden/<fixture>-d.txt. The JSON output is parsed and
its numbers checked against the fixture itself; errors (unreachable cluster,
refused credentials, bad arguments) are checked for their message and exit status.

Usage: test_inspect.py --bin PATH --fake PATH [--update] [--seeds DIR]
(--update rewrites the goldens; --seeds, default $VGPU_SEEDS_DIR, also checks
the expected seed 002 table against the seed document itself)
"""

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = ["vgpu", "gpushare-mib", "gpushare-gib", "time-slicing", "cce", "warnings"]
UNITS = {"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30}
TOKEN = "inspect-token"
FAILURES = []


def size(v):
    """'16Gi' / '3000Mi' / 42 -> bytes."""
    if isinstance(v, int):
        return v
    for suffix, mult in UNITS.items():
        if v.endswith(suffix):
            return int(v[:-len(suffix)]) * mult
    return int(v)


def check(cond, what):
    if not cond:
        FAILURES.append(what)
        print("FAIL:", what)


def inventory(node):
    if "raw_inventory" in node:
        return node["raw_inventory"]
    gpus = []
    for i, g in enumerate(node["gpus"]):
        res = []
        for r in g["resources"]:
            r = dict(r)
            for k in ("unit", "memory"):
                if k in r:
                    r[k] = size(r[k])
            res.append(r)
        gpu = {"index": i, "uuid": g["uuid"], "type": g["type"], "memory": size(g["memory"]),
               "numa": None, "health": g["health"], "resources": res}
        if "reason" in g:
            gpu["reason"] = g["reason"]
        gpus.append(gpu)
    return json.dumps({"version": 1, "node": node["name"], "contextReserve": 0, "gpus": gpus})


def node_object(node):
    obj = {"metadata": {"name": node["name"], "annotations": {}},
           "status": {"addresses": [{"type": "Hostname", "address": node["name"]},
                                    {"type": "InternalIP", "address": node["ip"]}]}}
    if node.get("unschedulable"):
        obj["spec"] = {"unschedulable": True}
    if "gpus" in node or "raw_inventory" in node:
        obj["metadata"]["annotations"]["vgpu.io/gpu-inventory"] = inventory(node)
    return obj


def pod_object(pod):
    ann = {}
    if "assigned" in pod:
        ctrs = [{"name": c["name"], "resource": c["resource"],
                 "gpus": [dict(g, memory=size(g["memory"])) for g in c["gpus"]]}
                for c in pod["assigned"]]
        ann["vgpu.io/assigned"] = json.dumps({"version": 1, "node": pod["node"],
                                              "containers": ctrs})
    if "raw_assigned" in pod:
        ann["vgpu.io/assigned"] = pod["raw_assigned"]
    spec = {"containers": [{"name": c["name"], "image": "busybox",
                            "resources": {"limits": c["limits"]}} for c in pod["containers"]]}
    if pod.get("node"):
        spec["nodeName"] = pod["node"]
    return {"metadata": {"name": pod["name"], "namespace": pod["ns"], "annotations": ann},
            "spec": spec, "status": {"phase": pod.get("phase", "Running")}}


class Cluster:
    """A fresh fake API server and a kubeconfig pointing at it."""

    def __init__(self, fake, tmp, fixture=None):
        self.proc = subprocess.Popen(["/usr/bin/python3", fake, "--token", TOKEN],
                                     stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline().split()
        assert line[:1] == ["PORT"], "fake API server did not start"
        self.url = "http://127.0.0.1:%s" % line[1]
        self.kubeconfig = write_kubeconfig(tmp, "kubeconfig-" + line[1], self.url, TOKEN)
        if fixture:
            for n in fixture["nodes"]:
                self.post("/_test/nodes", node_object(n))
            for p in fixture["pods"]:
                self.post("/_test/pods", pod_object(p))

    def post(self, path, obj):
        req = urllib.request.Request(self.url + path, data=json.dumps(obj).encode(),
                                     method="POST",
                                     headers={"Authorization": "Bearer " + TOKEN,
                                              "Content-Type": "application/json"})
        urllib.request.urlopen(req).read()

    def close(self):
        self.proc.kill()
        self.proc.wait()


def write_kubeconfig(tmp, name, server, token):
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        f.write("apiVersion: v1\nkind: Config\ncurrent-context: test\n"
                "clusters:\n- name: c\n  cluster:\n    server: %s\n"
                "users:\n- name: u\n  user:\n    token: %s\n"
                "contexts:\n- name: test\n  context:\n    cluster: c\n    user: u\n"
                % (server, token))
    return path


def run(binary, args, env_extra=None, home=None):
    env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG",)}
    env["HOME"] = home or "/nonexistent-home"
    env.pop("KUBERNETES_SERVICE_HOST", None)
    env.update(env_extra or {})
    p = subprocess.run([binary] + args, env=env, capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


def golden(name, text, update):
    path = os.path.join(HERE, "golden", name)
    if update:
        with open(path, "w") as f:
            f.write(text)
        return
    with open(path) as f:
        want = f.read()
    if text != want:
        print("--- golden/%s\n%s--- got\n%s" % (name, want, text))
    check(text == want, "output differs from golden/" + name)


# Seed 002's `kubectl inspect gpushare`, byte for byte (the seed indents
# nothing; only the "# kubectl inspect gpushare" prompt line is left out).
SEED_002_TABLE = """\
NAME           IPADDRESS     GPU0(Allocated MiB/Total MiB)  GPU Memory
i-2ze0gl97vw1  192.168.0.72  7606/7606                      7606/7606
i-2ze0gl97vw2  192.168.0.73  3803/7606                      3803/7606
i-2ze0gl97vw3  192.168.0.71  7606/7606                      7606/7606
---------------------------------------------------------------------------------------
Allocated/Total GPU Memory In Cluster:
19015/22818 (83%)
"""


def test_seed_002(args):
    """The gpushare-mib fixture is seed 002's cluster (three nodes, one 7606
    MiB GPU each): the default table must be the seed's, byte for byte."""
    with open(os.path.join(HERE, "golden", "gpushare-mib.txt")) as f:
        check(f.read() == SEED_002_TABLE, "golden/gpushare-mib.txt is not seed 002's table")
    if not args.seeds:
        return
    seeds = [n for n in os.listdir(args.seeds) if n.startswith("002_")]
    if not seeds:
        print("SKIP: no seed 002 in %s" % args.seeds)
        return
    with open(os.path.join(args.seeds, seeds[0])) as f:
        check(SEED_002_TABLE in f.read(), "SEED_002_TABLE is not in " + seeds[0])


def test_goldens(args, tmp):
    for name in FIXTURES:
        with open(os.path.join(HERE, "fixtures", name + ".json")) as f:
            fixture = json.load(f)
        c = Cluster(args.fake, tmp, fixture)
        try:
            for suffix, extra in (("", []), ("-d", ["-d"]), ("-wide", ["-o", "wide"]),
                                  ("-wide-d", ["-d", "-owide"])):
                rc, out, err = run(args.bin, extra + ["--kubeconfig", c.kubeconfig])
                check(rc == 0, "%s%s: exit %d (%s)" % (name, suffix, rc, err))
                golden(name + suffix + ".txt", out, args.update)
                if name != "warnings":
                    check(err == "", "%s%s: unexpected stderr %r" % (name, suffix, err))
            rc, out, err = run(args.bin, ["-o", "json", "--kubeconfig", c.kubeconfig])
            check(rc == 0, "%s -o json: exit %d" % (name, rc))
            check_json(name, fixture, json.loads(out), err)
        finally:
            c.close()


def expected_nodes(fixture):
    """name -> (total bytes, assigned bytes per GPU uuid) from the fixture."""
    out = {}
    for n in fixture["nodes"]:
        if "gpus" not in n:
            continue
        per = {g["uuid"]: 0 for g in n["gpus"]}
        out[n["name"]] = (sum(size(g["memory"]) for g in n["gpus"]), per)
    for p in fixture["pods"]:
        if p.get("phase") in ("Succeeded", "Failed") or not p.get("node"):
            continue
        for c in p.get("assigned", []):
            for g in c["gpus"]:
                if g["uuid"] in out[p["node"]][1]:
                    out[p["node"]][1][g["uuid"]] += size(g["memory"])
    return out


def check_json(name, fixture, doc, err):
    want = expected_nodes(fixture)
    names = [n["name"] for n in doc["nodes"]]
    check(names == sorted(want), "%s json: nodes %s, want %s" % (name, names, sorted(want)))
    total = 0
    for n in doc["nodes"]:
        wtotal, per = want[n["name"]]
        check(n["memoryTotal"] == wtotal, "%s json: %s memoryTotal" % (name, n["name"]))
        for g in n["gpus"]:
            check(g["memoryAllocated"] == per[g["uuid"]],
                  "%s json: %s %s memoryAllocated %d, want %d"
                  % (name, n["name"], g["uuid"], g["memoryAllocated"], per[g["uuid"]]))
            check(g["memoryAllocated"] == sum(p["memory"] for p in g["pods"]),
                  "%s json: GPU %s pods do not add up" % (name, g["uuid"]))
        known = sum(u["memory"] or 0 for u in n["unassigned"])
        check(n["memoryUnassigned"] == known, "%s json: %s memoryUnassigned" % (name, n["name"]))
        check(n["memoryAllocated"] == sum(per.values()) + known,
              "%s json: %s memoryAllocated" % (name, n["name"]))
        total += wtotal
    check(doc["cluster"]["memoryTotal"] == total, "%s json: cluster total" % name)
    gpushare = {"gpushare-gib": "GiB"}
    check(doc["unit"] == gpushare.get(name, "MiB"), "%s json: unit %s" % (name, doc["unit"]))
    check(("warning: " in err) == (name == "warnings"), "%s json: stderr %r" % (name, err))


def test_specific_json(args, tmp):
    """Things the goldens show but a script relies on: unassigned entries and warnings."""
    with open(os.path.join(HERE, "fixtures", "time-slicing.json")) as f:
        c = Cluster(args.fake, tmp, json.load(f))
    try:
        doc = json.loads(run(args.bin, ["-ojson", "--kubeconfig", c.kubeconfig])[1])
        ts1, ts2 = doc["nodes"]
        check(ts1["unschedulable"] is False, "time-slicing: ts-1 is schedulable")
        check([u["memory"] for u in ts1["unassigned"]] == [None, None],
              "time-slicing: replicas without memory size must be null, got %s" % ts1)
        check(ts1["unassignedUnknown"] is True, "time-slicing: ts-1 unassignedUnknown")
        check(ts2["unassigned"][0]["memory"] == 2 * 3840 << 20 and
              ts2["unassigned"][0]["quantity"] == 2, "time-slicing: ts-2 2 replicas x 3840 MiB")
    finally:
        c.close()
    with open(os.path.join(HERE, "fixtures", "warnings.json")) as f:
        c = Cluster(args.fake, tmp, json.load(f))
    try:
        rc, out, err = run(args.bin, ["--output=json", "--kubeconfig", c.kubeconfig])
        doc = json.loads(out)
        w = "\n".join(doc["warnings"])
        check("node broken: annotation vgpu.io/gpu-inventory: gpus[0].memory" in w,
              "warnings: malformed inventory named: %s" % w)
        check("pod default/bad-annotation: annotation vgpu.io/assigned:" in w,
              "warnings: malformed assignment named")
        check("assigned GPU GPU-gone is not in node good's inventory" in w,
              "warnings: unknown GPU named")
        # The fake stores 1.5 canonical, as 1500m.
        check("aliyun.com/gpu-mem: quantity '1500m' is not a whole number" in w,
              "warnings: odd quantity named")
        check("pod default/huge container c: aliyun.com/gpu-mem: 9223372036854775807 is more "
              "memory than can be counted" in w, "warnings: huge quantity named")
        check("nodes use both GiB and MiB for aliyun.com/gpu-mem; showing MiB" in w,
              "warnings: mixed gpushare units named")
        check(err.count("warning: ") == len(doc["warnings"]) == 6, "warnings on stderr: %r" % err)
        un = {u["pod"]: u["memory"] for u in doc["nodes"][0]["unassigned"]}
        check([n["name"] for n in doc["nodes"]] == ["good", "good-mib"], "warnings: nodes")
        check(un == {"bad-annotation": 2 << 30, "ghost-gpu": 1 << 30, "huge": None},
              "warnings: unassigned %s" % un)
    finally:
        c.close()


def test_renamed(args, tmp):
    """A vgpu memory resource renamed in the device plugin's configuration
    (vgpu.resourceMem: example.com/vram) is what inspect reads a pod's memory from when
    given --resource vgpu.resourceMem=example.com/vram; without it the memory is unknown."""
    fixture = {"nodes": [{"name": "ren", "ip": "10.0.0.9", "gpus": [{
        "uuid": "GPU-ren-0", "type": "A100", "memory": "16Gi", "health": "Healthy",
        "resources": [{"name": "nvidia.com/vgpu", "dialect": "vgpu", "count": 4, "unit": 0,
                       "memory": "16Gi", "cores": 100}]}]}],
        "pods": [{"ns": "default", "name": "vram", "node": "ren", "containers": [
            {"name": "main", "limits": {"nvidia.com/vgpu": "1", "example.com/vram": "3000"}}]}]}
    c = Cluster(args.fake, tmp, fixture)
    try:
        for extra, want in ((["--resource", "vgpu.resourceMem=example.com/vram"], 3000 << 20),
                            ([], None)):
            rc, out, err = run(args.bin, ["-o", "json", "--kubeconfig", c.kubeconfig] + extra)
            un = json.loads(out)["nodes"][0]["unassigned"] if rc == 0 else err
            check(rc == 0 and [u["memory"] for u in un] == [want],
                  "renamed vgpu memory %s: %s" % (extra, un))
    finally:
        c.close()


def test_node_argument(args, tmp):
    with open(os.path.join(HERE, "fixtures", "vgpu.json")) as f:
        c = Cluster(args.fake, tmp, json.load(f))
    try:
        rc, out, err = run(args.bin, ["--kubeconfig", c.kubeconfig, "node-b"])
        check(rc == 0 and "node-b" in out and "node-a" not in out, "NODE: only node-b: " + out)
        check("Allocated/Total GPU Memory In Cluster:\n6096/32768 (18%)" in out,
              "NODE: totals of node-b alone: " + out)
        rc, out, err = run(args.bin, ["--kubeconfig", c.kubeconfig, "no-such-node"])
        check(rc == 1 and "node no-such-node not found" in err, "NODE missing: %d %r" % (rc, err))
        rc, out, err = run(args.bin, ["--kubeconfig", c.kubeconfig, "cpu-only"])
        check(rc == 1 and "no vgpu.io/gpu-inventory" in err, "NODE without inventory: %r" % err)
        # Through the real kubectl's plugin mechanism, when kubectl is installed.
        kubectl = shutil.which("kubectl")
        if kubectl:
            path = os.path.dirname(os.path.abspath(args.bin)) + ":" + os.environ["PATH"]
            rc, out, err = run(kubectl, ["inspect", "gpushare", "-d", "--kubeconfig",
                                         c.kubeconfig], env_extra={"PATH": path})
            check(rc == 0 and "NAME:       node-a" in out,
                  "kubectl inspect gpushare -d runs the plugin: %d %r" % (rc, err))
        else:
            print("kubectl not installed: the plugin mechanism is not exercised")
        # The kubeconfig is found the way kubectl finds it.
        rc, out, _ = run(args.bin, [], env_extra={"KUBECONFIG": c.kubeconfig})
        check(rc == 0 and "node-a" in out, "$KUBECONFIG is used")
        home = os.path.join(tmp, "home")
        os.makedirs(os.path.join(home, ".kube"), exist_ok=True)
        shutil.copy(c.kubeconfig, os.path.join(home, ".kube", "config"))
        rc, out, _ = run(args.bin, ["-d"], home=home)
        check(rc == 0 and "NAME:       node-a" in out, "~/.kube/config is used")
        bad = write_kubeconfig(tmp, "wrong-token", c.url, "not-the-token")
        rc, out, err = run(args.bin, ["--kubeconfig", bad])
        check(rc == 1 and "refused the credentials from %s" % bad in err and out == "",
              "401: %d %r" % (rc, err))
    finally:
        c.close()


def test_unreachable(args, tmp):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    url = "http://127.0.0.1:%d" % port
    kc = write_kubeconfig(tmp, "dead", url, TOKEN)
    rc, out, err = run(args.bin, ["--kubeconfig", kc])
    check(rc == 1, "unreachable: exit %d" % rc)
    check(out == "", "unreachable: nothing on stdout")
    check(err.startswith("kubectl-inspect-gpushare: cannot reach the Kubernetes API server %s "
                         "(from %s): " % (url, kc)), "unreachable message: %r" % err)
    check("Is the cluster running" in err, "unreachable: says what to check")
    rc, out, err = run(args.bin, [])
    check(rc == 1 and "no kubeconfig: give --kubeconfig FILE, set $KUBECONFIG, or create "
          "~/.kube/config" in err, "no kubeconfig at all: %d %r" % (rc, err))
    rc, out, err = run(args.bin, ["--kubeconfig", os.path.join(tmp, "missing")])
    check(rc == 1 and "missing" in err, "missing kubeconfig file: %d %r" % (rc, err))


def wait_for(what, fn, seconds=20):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        v = fn()
        if v:
            return v
        time.sleep(0.1)
    raise SystemExit("timed out waiting for " + what)


def test_end_to_end(args, tmp):
    """The real writers of both annotations, then inspect: vgpu-device-plugin on the
    simulated GPU (2 x 8 GiB, examples/config/mixed.yaml: all four dialects) publishes
    the inventory, vgpu-scheduler binds a vgpu pod, a gpushare pod placed by hand
    has no assignment."""
    build = os.path.dirname(os.path.dirname(os.path.abspath(args.bin)))
    root = os.path.dirname(os.path.dirname(HERE))
    c = Cluster(args.fake, tmp)
    procs = []
    try:
        c.post("/_test/nodes", {"metadata": {"name": "sim-node"}})
        c.post("/_test/pods", pod_object({
            "ns": "default", "name": "vgpu-pod", "node": None,
            "containers": [{"name": "main", "limits": {
                "nvidia.com/vgpu": "1", "nvidia.com/gpumem": "3000", "nvidia.com/gpucores": "30"}}]}))
        c.post("/_test/pods", pod_object({
            "ns": "default", "name": "share-pod", "node": "sim-node",
            "containers": [{"name": "main", "limits": {"aliyun.com/gpu-mem": "2"}}]}))
        env = dict(os.environ, LD_LIBRARY_PATH=os.path.join(build, "sim"),
                   VGPU_SIM_STATE=os.path.join(tmp, "sim.state"), VGPU_SIM_DEVICES="2",
                   VGPU_SIM_MEMORY="8g", ASAN_OPTIONS="detect_leaks=0")
        for d in ("plugins", "state"):
            os.makedirs(os.path.join(tmp, d), exist_ok=True)
        log = open(os.path.join(tmp, "plugin.log"), "w")
        procs.append(subprocess.Popen([
            os.path.join(build, "bin", "vgpu-device-plugin"),
            "--config", os.path.join(root, "examples", "config", "mixed.yaml"),
            "--plugin-dir", os.path.join(tmp, "plugins"), "--kubelet-socket", "",
            "--state-dir", os.path.join(tmp, "state"), "--library", "/opt/vgpu/libvgpu.so",
            "--kubeconfig", c.kubeconfig, "--node-name", "sim-node",
            "--podresources-socket", os.path.join(tmp, "none.sock")],
            env=env, stdout=log, stderr=log))

        def inventory_published():
            rc, out, _ = run(args.bin, ["-o", "json", "--kubeconfig", c.kubeconfig])
            return rc == 0 and json.loads(out)["nodes"]

        wait_for("the plugin's inventory", inventory_published)
        sched = subprocess.Popen([os.path.join(build, "bin", "vgpu-scheduler"), "--listen",
                                  "127.0.0.1:0", "--kubeconfig", c.kubeconfig],
                                 env=env, stdout=subprocess.PIPE, stderr=log, text=True)
        procs.append(sched)
        port = sched.stdout.readline().split()[1]
        with urllib.request.urlopen("http://127.0.0.1:%s/healthz" % port) as r:
            check(r.read().strip() == b"ok", "extender /healthz")
        bind = json.dumps({"PodName": "vgpu-pod", "PodNamespace": "default", "PodUID": "",
                           "Node": "sim-node"}).encode()
        req = urllib.request.Request("http://127.0.0.1:%s/bind" % port, data=bind,
                                     method="POST", headers={"Content-Type": "application/json"})
        result = json.loads(urllib.request.urlopen(req).read())
        check(result.get("Error") == "", "extender bind: %s" % result)

        rc, out, err = run(args.bin, ["-o", "json", "--kubeconfig", c.kubeconfig])
        doc = json.loads(out)
        (node,) = doc["nodes"]
        check(doc["unit"] == "GiB", "mixed.yaml's gpushare unit is GiB: %s" % doc["unit"])
        check([g["memoryTotal"] for g in node["gpus"]] == [8 << 30, 8 << 30],
              "two simulated 8 GiB GPUs: %s" % node["gpus"])
        pods = [p for g in node["gpus"] for p in g["pods"]]
        check(len(pods) == 1 and pods[0]["pod"] == "vgpu-pod" and
              pods[0]["memory"] == 3000 << 20 and pods[0]["cores"] == 30,
              "the scheduler's assignment is shown: %s" % pods)
        check(node["unassigned"] == [{"namespace": "default", "pod": "share-pod",
                                      "container": "main", "resource": "aliyun.com/gpu-mem",
                                      "quantity": 2, "memory": 2 << 30}],
              "the hand-placed gpushare pod is unassigned with 2 GiB: %s" % node["unassigned"])
        rc, out, err = run(args.bin, ["-d", "-o", "wide", "--kubeconfig", c.kubeconfig])
        if os.environ.get("VG_SHOW"):
            print(run(args.bin, ["--kubeconfig", c.kubeconfig])[1] + out)
        check(rc == 0 and "3 (30%)" in out and "share-pod" in out,
              "-d -o wide shows 3000 MiB as 3 GiB with 30%%:\n%s" % out)
        rc, out, err = run(args.bin, ["-d", "--kubeconfig", c.kubeconfig])
        check(rc == 0 and "vgpu-pod     default    3                0                0\n" in out
              and "Pending(Allocated)" in out and "(30%)" not in out,
              "-d (Aliyun's layout) shows vgpu-pod's 3 GiB, no compute share:\n%s" % out)
    finally:
        for p in procs:
            p.terminate()
            p.wait()
        c.close()


def test_bad_arguments(args, tmp):
    cases = [
        (["--bogus"], "unknown option '--bogus'"),
        (["-o", "yaml"], "unknown output format 'yaml' (use table, wide or json)"),
        (["-o"], "unknown output format '' (use table, wide or json)"),
        (["a", "b"], "one NODE at most (got a second one, 'b')"),
        (["-d", "-o", "json"], "-d and -o json do not go together"),
        (["--kubeconfig"], "--kubeconfig needs a file"),
        (["--resource", "vgpu.memory=a/b"], "--resource: unknown key 'vgpu.memory'"),
        (["--resource", "vgpu.resourceMem=vram"], "is not an extended resource name"),
    ]
    for argv, msg in cases:
        rc, out, err = run(args.bin, argv)
        check(rc == 2, "%s: exit %d, want 2" % (argv, rc))
        # One line, pointing at --help, and no usage after it (README: every program
        # answers alike).
        check(msg in err and err.count("\n") == 1 and "--help" in err and "usage:" not in err,
              "%s: %r" % (argv, err))
    rc, out, err = run(args.bin, ["--help"])
    check(rc == 0 and out.startswith("usage: kubectl inspect gpushare") and err == "",
          "--help: %d" % rc)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--fake", required=True)
    ap.add_argument("--update", action="store_true")
    ap.add_argument("--seeds", default=os.environ.get("VGPU_SEEDS_DIR"),
                    help="the seed documents (default $VGPU_SEEDS_DIR): check that the "
                    "expected table is seed 002's")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="vg-inspect-")
    try:
        for t in (test_goldens, test_specific_json, test_renamed, test_node_argument,
                  test_unreachable,
                  test_bad_arguments, test_end_to_end):
            t(args, tmp)
            print("%s: %s" % (t.__name__, "done"))
        test_seed_002(args)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if FAILURES:
        print("%d failure(s)" % len(FAILURES))
        return 1
    print("all passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
