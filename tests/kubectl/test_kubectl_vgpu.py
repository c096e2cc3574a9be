#!/usr/bin/python3
"""kubectl-vgpu resize against the fake API server (tests/k8s/fake_apiserver.py).

Each case loads pods into a fresh fake API server and runs the real binary the
way kubectl would. Where the node agent and vgpu-scheduler would answer, a
responder thread in this script plays them: it waits for the request on the
pod, then writes vgpu.io/resize-node and vgpu.io/resize-status with the
request's id (or an older id, which must not count), as the protocol of
src/k8s/resize.h says. What the program wrote is checked on the pod itself:
the request's JSON, the label, and that both came in one patch (the fake
bumps resourceVersion once per write).

Usage: test_kubectl_vgpu.py --bin PATH --fake PATH --version X.Y.Z
"""

import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

TOKEN = "kubectl-vgpu-token"
MIB = 1 << 20
FAILURES = []
REQ = "vgpu.io/resize-request"
NODE_ACK = "vgpu.io/resize-node"
STATUS = "vgpu.io/resize-status"
LABEL = "vgpu.io/resize"


def check(cond, what):
    if not cond:
        FAILURES.append(what)
        print("FAIL:", what)


def gpu(uuid, memory_mib, cores, index=0):
    return {"uuid": uuid, "index": index, "memory": memory_mib * MIB, "cores": cores}


def pod_object(name, ctrs=None, ns="default", node="node-a", annotations=None, labels=None,
               phase="Running"):
    """ctrs: {container: [gpu(...), ...]} -> vgpu.io/assigned; None: no annotation."""
    ann = dict(annotations or {})
    if ctrs is not None:
        ann["vgpu.io/assigned"] = json.dumps({"version": 1, "node": node, "containers": [
            {"name": c, "resource": "nvidia.com/vgpu", "gpus": g} for c, g in ctrs.items()]})
    names = list(ctrs or {"main": None}) + ["sidecar"]
    return {"metadata": {"name": name, "namespace": ns, "annotations": ann,
                         "labels": dict(labels or {})},
            "spec": {"nodeName": node, "containers": [{"name": c, "image": "busybox"}
                                                      for c in names]},
            "status": {"phase": phase}}


def write_kubeconfig(tmp, name, server, token, namespace=None):
    path = os.path.join(tmp, name)
    ns = "    namespace: %s\n" % namespace if namespace else ""
    with open(path, "w") as f:
        f.write("apiVersion: v1\nkind: Config\ncurrent-context: test\n"
                "clusters:\n- name: c\n  cluster:\n    server: %s\n"
                "users:\n- name: u\n  user:\n    token: %s\n"
                "contexts:\n- name: test\n  context:\n    cluster: c\n    user: u\n%s"
                % (server, token, ns))
    return path


class Cluster:
    """A fresh fake API server and a kubeconfig pointing at it."""

    def __init__(self, fake, tmp):
        self.proc = subprocess.Popen(["/usr/bin/python3", fake, "--token", TOKEN],
                                     stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline().split()
        assert line[:1] == ["PORT"], "fake API server did not start"
        self.url = "http://127.0.0.1:%s" % line[1]
        self.tmp = tmp
        self.kubeconfig = write_kubeconfig(tmp, "kubeconfig-" + line[1], self.url, TOKEN)

    def call(self, method, path, obj=None, ctype="application/json"):
        data = json.dumps(obj).encode() if obj is not None else None
        req = urllib.request.Request(self.url + path, data=data, method=method,
                                     headers={"Authorization": "Bearer " + TOKEN,
                                              "Content-Type": ctype})
        with urllib.request.urlopen(req) as r:
            return json.loads(r.read())

    def add(self, pod):
        return self.call("POST", "/_test/pods", pod)

    def get(self, name, ns="default"):
        return self.call("GET", "/api/v1/namespaces/%s/pods/%s" % (ns, name))

    def annotate(self, name, ann, ns="default", labels=None):
        meta = {"annotations": ann}
        if labels is not None:
            meta["labels"] = labels
        return self.call("PATCH", "/api/v1/namespaces/%s/pods/%s" % (ns, name),
                         {"metadata": meta}, "application/merge-patch+json")

    def close(self):
        self.proc.kill()
        self.proc.wait()


def run(binary, args, env_extra=None, home=None, timeout=60):
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    env["HOME"] = home or "/nonexistent-home"
    env.pop("KUBERNETES_SERVICE_HOST", None)
    env.update(env_extra or {})
    p = subprocess.run([binary] + args, env=env, capture_output=True, text=True,
                       timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def annotations(pod):
    return pod["metadata"].get("annotations") or {}


class Responder(threading.Thread):
    """Plays the node agent and vgpu-scheduler for one pod: waits for a request
    annotation, remembers the pod as first seen with it, then writes each of
    `steps` in turn. A step is ("node",) for the acknowledgement, (phase, reason)
    for a status with the request's id, or ("old", phase) for a status with an
    older id, which the program must not take as its answer."""

    def __init__(self, cluster, name, steps, ns="default", delay=0.2):
        super().__init__(daemon=True)
        self.c, self.name, self.ns, self.steps, self.delay = cluster, name, ns, steps, delay
        self.seen = None  # the pod when the request first appeared
        self.error = None

    def run(self):
        try:
            deadline = time.monotonic() + 20
            while self.seen is None and time.monotonic() < deadline:
                pod = self.c.get(self.name, self.ns)
                if REQ in annotations(pod):
                    self.seen = pod
                time.sleep(0.02)
            if self.seen is None:
                return
            rid = json.loads(annotations(self.seen)[REQ])["id"]
            for step in self.steps:
                time.sleep(self.delay)
                self.write(step, rid)
        except Exception as e:  # reported by the test that started it
            self.error = repr(e)

    def write(self, step, rid):
        if step[0] == "node":
            ann = {NODE_ACK: json.dumps({"id": rid})}
        elif step[0] == "old":
            ann = {STATUS: json.dumps({"id": "1-00000000", "phase": step[1], "reason": "old"})}
        else:
            ann = {STATUS: json.dumps({"id": rid, "phase": step[0], "reason": step[1]})}
        final = step[0] in ("Applied", "Refused")
        self.c.annotate(self.name, ann, self.ns, labels={LABEL: None} if final else None)

    def request(self):
        return json.loads(annotations(self.seen)[REQ]) if self.seen else None


def one_gpu_pod(name="app", **kw):
    return pod_object(name, {"main": [gpu("GPU-aaa", 2000, 30)]}, **kw)


def test_applied(args, c):
    """The request is written once with the right JSON and label; an older
    Refused status is not the answer; ours Applied is."""
    created = c.add(one_gpu_pod())
    r = Responder(c, "app", [("old", "Refused"), ("node",), ("Accepted", "fits"),
                             ("Applied", "grant rewritten")])
    r.start()
    rc, out, err = run(args.bin, ["resize", "app", "--memory", "3000m", "--kubeconfig",
                                  c.kubeconfig])
    r.join(10)
    check(r.error is None, "applied: responder failed: %s" % r.error)
    check(rc == 0, "applied: exit %d (%r)" % (rc, err))
    check(out == "pod/app container main resized: memory 3000 MiB, cores 30 % per GPU "
          "(was 2000 MiB, 30 %)\n", "applied: output %r" % out)
    req = r.request()
    check(req is not None and set(req) == {"id", "container", "memory"} and
          req["container"] == "main" and req["memory"] == 3000 * MIB,
          "applied: request JSON %s" % req)
    check(req is not None and re.fullmatch(r"\d+-[0-9a-f]{8}", req["id"]) is not None,
          "applied: request id %s" % req)
    seen = r.seen or {"metadata": {}}
    check(seen["metadata"].get("labels", {}).get(LABEL) == "requested",
          "applied: the label came with the request: %s" % seen["metadata"])
    check(int(seen["metadata"].get("resourceVersion", 0)) ==
          int(created["metadata"]["resourceVersion"]) + 1,
          "applied: request and label in one patch (rv %s after %s)"
          % (seen["metadata"].get("resourceVersion"), created["metadata"]["resourceVersion"]))
    check("accepted by vgpu-scheduler" in err, "applied: progress line on Accepted: %r" % err)


def test_refused(args, c):
    c.add(one_gpu_pod("ref"))
    reason = "GPU-aaa has 1000 MiB free; the request needs 2000 MiB more"
    r = Responder(c, "ref", [("node",), ("Refused", reason)])
    r.start()
    rc, out, err = run(args.bin, ["resize", "pod/ref", "--memory", "4g", "--cores", "50",
                                  "--kubeconfig", c.kubeconfig])
    r.join(10)
    check(rc == 1, "refused: exit %d" % rc)
    check(out == "", "refused: nothing on stdout: %r" % out)
    check("kubectl vgpu resize: refused: " + reason in err, "refused: reason %r" % err)
    req = r.request() or {}
    check(req.get("memory") == 4 << 30 and req.get("cores") == 50, "refused: request %s" % req)
    # The same with -o json: the status on stdout, the reason still on stderr.
    r = Responder(c, "ref", [("node",), ("Refused", reason)])
    c.annotate("ref", {REQ: None})  # so the responder waits for the new request
    r.start()
    rc, out, err = run(args.bin, ["resize", "ref", "--cores", "0", "-o", "json",
                                  "--kubeconfig", c.kubeconfig])
    r.join(10)
    doc = json.loads(out) if out.startswith("{") else {}
    check(rc == 1 and doc.get("phase") == "Refused" and doc.get("reason") == reason and
          doc.get("cores") == 0 and doc.get("memory") == 2000 * MIB and
          doc.get("id") == (r.request() or {}).get("id") and doc.get("container") == "main",
          "refused -o json: %d %r" % (rc, out))


def test_json_applied(args, c):
    c.add(pod_object("js", {"main": [gpu("GPU-aaa", 2000, 30)]}, ns="team"))
    r = Responder(c, "js", [("node",), ("Accepted", ""), ("Applied", "done")], ns="team")
    r.start()
    rc, out, err = run(args.bin, ["resize", "js", "-n", "team", "--cores", "60", "-ojson",
                                  "--kubeconfig", c.kubeconfig])
    r.join(10)
    doc = json.loads(out) if out.startswith("{") else {}
    want = {"id": (r.request() or {}).get("id"), "phase": "Applied", "reason": "done",
            "namespace": "team", "pod": "js", "container": "main", "node": "node-a",
            "memory": 2000 * MIB, "cores": 60, "was": {"memory": 2000 * MIB, "cores": 30}}
    check(rc == 0 and doc == want, "-o json applied: %d %s" % (rc, out))


def request_id(c, name, ns="default"):
    return json.loads(annotations(c.get(name, ns))[REQ])["id"]


def test_timeouts(args, c):
    """Nobody answers; an older answer is present; then each party in turn is missing."""
    old = {NODE_ACK: json.dumps({"id": "1-00000000"}),
           STATUS: json.dumps({"id": "1-00000000", "phase": "Applied", "reason": "old"})}
    c.add(one_gpu_pod("slow", annotations=old))
    t0 = time.monotonic()
    rc, out, err = run(args.bin, ["resize", "slow", "--cores", "10", "--timeout", "1",
                                  "--kubeconfig", c.kubeconfig])
    took = time.monotonic() - t0
    rid = request_id(c, "slow")
    check(rc == 2, "timeout: exit %d (an older Applied must not count) %r" % (rc, err))
    check("the node agent on node node-a has not acknowledged resize %s within 1 s "
          "(is vgpu-device-plugin running there?)" % rid in err, "timeout: node agent %r" % err)
    check(0.9 < took < 10, "timeout: took %.1f s for --timeout 1" % took)
    check(out == "", "timeout: nothing on stdout")

    for name, steps, want in (
            ("noscheduler", [("node",)], "vgpu-scheduler has not answered resize %s within 2 s"),
            ("noapply", [("node",), ("Accepted", "")],
             "the node agent on node node-a has not applied resize %s within 2 s")):
        c.add(one_gpu_pod(name))
        r = Responder(c, name, steps, delay=0.05)
        r.start()
        rc, out, err = run(args.bin, ["resize", name, "--memory", "1g", "--timeout", "2s",
                                      "--kubeconfig", c.kubeconfig])
        r.join(10)
        check(rc == 2 and want % request_id(c, name) in err, "%s: %d %r" % (name, rc, err))


def test_no_wait(args, c):
    c.add(pod_object("nw", {"main": [gpu("GPU-aaa", 2000, 20, 0), gpu("GPU-bbb", 4000, 50, 1)]}))
    t0 = time.monotonic()
    rc, out, err = run(args.bin, ["resize", "nw", "--memory", "1Gi", "--no-wait",
                                  "--kubeconfig", c.kubeconfig])
    took = time.monotonic() - t0
    pod = c.get("nw")
    req = json.loads(annotations(pod).get(REQ, "{}"))
    check(rc == 0 and took < 5, "--no-wait: exit %d after %.1f s (%r)" % (rc, took, err))
    check(req.get("memory") == 1 << 30 and "cores" not in req, "--no-wait: request %s" % req)
    check(pod["metadata"]["labels"].get(LABEL) == "requested", "--no-wait: label")
    check(out == "pod/nw container main: resize %s requested: memory 1 GiB, cores 20 %%/50 %% "
          "per GPU (was 2000 MiB/4000 MiB, 20 %%/50 %%); not waiting for the answer\n"
          % req.get("id"), "--no-wait: output %r" % out)
    # No compute limit (cores 0) reads "unlimited", as vgpu status says.
    c.add(pod_object("unl", {"main": [gpu("GPU-uuu", 2000, 0)]}))
    rc, out, err = run(args.bin, ["resize", "unl", "--memory", "3000m", "--no-wait",
                                  "--kubeconfig", c.kubeconfig])
    check(rc == 0 and "memory 3000 MiB, cores unlimited per GPU (was 2000 MiB, unlimited)" in out,
          "--no-wait, no compute limit: exit %d, output %r" % (rc, out))
    # A request that has its final answer but whose label is still there does
    # not block a new one.
    c.annotate("nw", {STATUS: json.dumps({"id": req.get("id"), "phase": "Applied"})})
    rc, out, err = run(args.bin, ["resize", "nw", "--cores", "40", "--no-wait", "-o", "json",
                                  "--kubeconfig", c.kubeconfig])
    doc = json.loads(out) if out.startswith("{") else {}
    check(rc == 0 and doc.get("phase", "x") is None and doc.get("cores") == 40 and
          doc.get("id") == request_id(c, "nw") != req.get("id"),
          "--no-wait after an answered request: %d %r %r" % (rc, out, err))


def test_conflicts(args, c):
    """409 on the write: read again and retry; give up after a few."""
    c.add(one_gpu_pod("busy"))
    c.call("POST", "/_test/conflict_next?n=2", {})
    rc, out, err = run(args.bin, ["resize", "busy", "--cores", "5", "--no-wait",
                                  "--kubeconfig", c.kubeconfig])
    check(rc == 0 and REQ in annotations(c.get("busy")), "2 conflicts: %d %r" % (rc, err))
    c.add(one_gpu_pod("busier"))
    c.call("POST", "/_test/conflict_next?n=50", {})
    rc, out, err = run(args.bin, ["resize", "busier", "--cores", "5", "--no-wait",
                                  "--kubeconfig", c.kubeconfig])
    c.call("POST", "/_test/conflict_next?n=0", {})
    check(rc == 1 and "changed 5 times" in err and REQ not in annotations(c.get("busier")),
          "endless conflicts: %d %r" % (rc, err))


def test_bad_input(args, c):
    c.add(one_gpu_pod("one"))
    c.add(pod_object("two", {"a": [gpu("GPU-aaa", 1000, 0)], "b": [gpu("GPU-bbb", 1000, 0)]}))
    c.add(pod_object("unplaced", None))
    c.add(pod_object("broken", None, annotations={"vgpu.io/assigned": "{\"version\": 2}"}))
    c.add(one_gpu_pod("done", phase="Succeeded"))
    opened = {REQ: json.dumps({"id": "5-0000abcd", "container": "main", "cores": 10})}
    c.add(one_gpu_pod("open", annotations=opened, labels={LABEL: "requested"}))
    accepted = dict(opened, **{STATUS: json.dumps({"id": "5-0000abcd", "phase": "Accepted"})})
    c.add(one_gpu_pod("open-accepted", annotations=accepted, labels={LABEL: "requested"}))
    kc = ["--kubeconfig", c.kubeconfig]
    cases = [
        (["resize", "one"] + kc, 64, "nothing to change: give --memory SIZE, --cores PCT or both"),
        (["resize", "one", "--cores", "101"] + kc, 64, "--cores: '101' is out of range"),
        (["resize", "one", "--cores", "-1"] + kc, 64, "--cores: '-1' is not a percentage"),
        (["resize", "one", "--memory", "lots"] + kc, 64, "--memory: 'lots' is not a size"),
        (["resize", "one", "--memory", "3x"] + kc, 64, "unknown unit 'x'"),
        (["resize", "one", "--memory", "0"] + kc, 64, "--memory '0': a container needs some"),
        (["resize", "one", "--memory", "2048t"] + kc, 64, "more than 1 PiB per GPU"),
        (["resize", "one", "--cores", "5", "--timeout", "0"] + kc, 64, "--timeout '0'"),
        (["resize", "one", "--cores", "5", "-o", "yaml"] + kc, 64, "-o 'yaml'"),
        (["resize", "one", "--cores", "5", "--bogus"] + kc, 64, "unknown option '--bogus'"),
        (["resize", "one", "--cores", "5", "-n"], 64, "-n needs a value"),
        (["resize", "--cores", "5"] + kc, 64, "which pod?"),
        (["resize", "one", "two", "--cores", "5"] + kc, 64, "one pod at a time"),
        (["resize", "deployment/x", "--cores", "5"] + kc, 64, "only pods can be resized"),
        (["frobnicate"], 64, "unknown command 'frobnicate'"),
        ([], 64, "usage: kubectl vgpu resize POD"),
        (["resize", "one", "-c", "side", "--cores", "5"] + kc, 1,
         "container side has no GPU slice placed by vgpu-scheduler in pod default/one "
         "(vgpu.io/assigned has: main)"),
        (["resize", "two", "--cores", "5"] + kc, 1,
         "pod default/two has 2 containers with GPUs (a, b): choose one with -c"),
        (["resize", "unplaced", "--cores", "5"] + kc, 1,
         "pod default/unplaced has no vgpu.io/assigned annotation: vgpu-scheduler has not "
         "placed it"),
        (["resize", "broken", "--cores", "5"] + kc, 1, "pod default/broken: annotation "
         "vgpu.io/assigned: version 2"),
        (["resize", "done", "--cores", "5"] + kc, 1, "has ended (phase Succeeded)"),
        (["resize", "ghost", "--cores", "5"] + kc, 1,
         'pod "ghost" not found in namespace "default"'),
        (["resize", "one", "-n", "elsewhere", "--cores", "5"] + kc, 1,
         'pod "one" not found in namespace "elsewhere"'),
        (["resize", "open", "--cores", "5"] + kc, 1,
         "a resize (id 5-0000abcd, container main) is still in progress; wait for it"),
        (["resize", "open-accepted", "--cores", "5"] + kc, 1,
         "a resize (id 5-0000abcd, container main) is still in progress; wait for it"),
    ]
    for argv, want_rc, want in cases:
        rc, out, err = run(args.bin, argv)
        check(rc == want_rc and want in err, "%s: exit %d (want %d), stderr %r"
              % (" ".join(argv[:5]), rc, want_rc, err))
        check(out == "", "%s: nothing on stdout: %r" % (" ".join(argv[:5]), out))
    for name in ("one", "two", "open", "open-accepted"):
        check(json.loads(annotations(c.get(name)).get(REQ, '{"id": "5-0000abcd"}'))["id"] ==
              "5-0000abcd", "%s: refused requests write nothing" % name)


def test_help_version(args):
    for argv in (["--help"], ["-h"], ["resize", "--help"], ["resize", "-h"]):
        rc, out, err = run(args.bin, argv)
        check(rc == 0 and out.startswith("usage: kubectl vgpu resize POD") and err == "",
              "%s: %d %r" % (argv, rc, out[:80]))
    rc, out, _ = run(args.bin, ["resize", "--help"])
    for opt in ("-n, --namespace", "-c, --container", "--memory SIZE", "--cores PCT",
                "--timeout SECONDS", "--no-wait", "--kubeconfig FILE", "-o, --output json",
                "Exit status: 0", "64 bad usage", "a bare number is bytes"):
        check(opt in out, "resize --help documents %r" % opt)
    for argv in (["--version"], ["resize", "--version"]):
        rc, out, err = run(args.bin, argv)
        check(rc == 0 and out == "kubectl-vgpu %s\n" % args.version, "%s: %r" % (argv, out))


def test_config(args, c, tmp):
    """The namespace and the kubeconfig are found the way kubectl finds them."""
    c.add(one_gpu_pod("cfg", ns="team"))
    c.add(one_gpu_pod("cfg"))
    team = write_kubeconfig(tmp, "team", c.url, TOKEN, namespace="team")
    rc, _, err = run(args.bin, ["resize", "cfg", "--cores", "1", "--no-wait"],
                     env_extra={"KUBECONFIG": team + ":" + os.path.join(tmp, "nothing")})
    check(rc == 0 and REQ in annotations(c.get("cfg", "team")) and
          REQ not in annotations(c.get("cfg")),
          "$KUBECONFIG's first file and its context namespace: %d %r" % (rc, err))
    home = os.path.join(tmp, "home")
    os.makedirs(os.path.join(home, ".kube"), exist_ok=True)
    shutil.copy(c.kubeconfig, os.path.join(home, ".kube", "config"))
    rc, _, err = run(args.bin, ["resize", "--no-wait", "--cores=2", "pod/cfg"], home=home)
    check(rc == 0 and REQ in annotations(c.get("cfg")), "~/.kube/config, namespace default: "
          "%d %r" % (rc, err))
    rc, _, err = run(args.bin, ["resize", "cfg", "--cores", "2"])
    check(rc == 1 and "no kubeconfig" in err, "no kubeconfig at all: %d %r" % (rc, err))
    bad = write_kubeconfig(tmp, "wrong-token", c.url, "not-the-token")
    rc, _, err = run(args.bin, ["resize", "cfg", "--cores", "2", "--kubeconfig", bad])
    check(rc == 1 and "refused the credentials from %s" % bad in err, "401: %d %r" % (rc, err))
    kubectl = shutil.which("kubectl")
    if kubectl:
        c.add(one_gpu_pod("viakubectl"))
        path = os.path.dirname(os.path.abspath(args.bin)) + ":" + os.environ["PATH"]
        rc, out, err = run(kubectl, ["vgpu", "resize", "viakubectl", "--cores", "3", "--no-wait",
                                     "--kubeconfig", c.kubeconfig], env_extra={"PATH": path})
        check(rc == 0 and "resize" in out and REQ in annotations(c.get("viakubectl")),
              "kubectl vgpu resize runs the plugin: %d %r" % (rc, err))
    else:
        print("kubectl not installed: the plugin mechanism is not exercised")


def test_unreachable(args, tmp):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    kc = write_kubeconfig(tmp, "dead", "http://127.0.0.1:%d" % port, TOKEN)
    rc, out, err = run(args.bin, ["resize", "x", "--cores", "1", "--kubeconfig", kc])
    check(rc == 1 and "cannot reach the Kubernetes API server http://127.0.0.1:%d (from %s)"
          % (port, kc) in err, "unreachable: %d %r" % (rc, err))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--fake", required=True)
    ap.add_argument("--version", required=True)
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="kubectl-vgpu-test-")
    try:
        test_help_version(args)
        test_unreachable(args, tmp)
        c = Cluster(args.fake, tmp)
        try:
            for t in (test_applied, test_refused, test_json_applied, test_timeouts,
                      test_no_wait, test_conflicts, test_bad_input):
                print("--", t.__name__, flush=True)
                t(args, c)
            test_config(args, c, tmp)
        finally:
            c.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if FAILURES:
        print("%d failure(s)" % len(FAILURES))
        return 1
    print("all kubectl-vgpu checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
