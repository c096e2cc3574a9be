#!/usr/bin/python3
"""test_kube_trace_objects.py -- the Nodes and pods bench/kube_trace.py makes
(make bench-kube, the e2e's kube-replay case), read by the real
vgpu-scheduler on the fake API server: every model's inventory parses (no
node failure for it in /metrics), a share asks whole percents and fits, a pod
of N whole GPUs fits only nodes with N GPUs, a model list lets a pod onto
those models only, and a model name inside another's is refused.

usage: test_kube_trace_objects.py BUILD_DIR
"""
import json
import os
import sys
import tempfile
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.join(os.path.dirname(os.path.dirname(HERE)), "bench")
sys.path.insert(0, BENCH)
import kube_trace as kt  # noqa: E402
from common import TOKEN, post, start_fake_api  # noqa: E402
from extender_latency import start  # noqa: E402

failures = []


def expect(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL: " + what)


def row(**kw):
    r = {"cpu_milli": "1000", "memory_mib": "1024", "num_gpu": "1", "gpu_milli": "500",
         "gpu_spec": ""}
    r.update({k: str(v) for k, v in kw.items()})
    return r


def passing(port, pod, names):
    pod["metadata"]["uid"] = "u-" + pod["metadata"]["name"]
    res = post(port, "/filter", {"Pod": pod, "Nodes": None, "NodeNames": names})
    return sorted(res.get("NodeNames") or []), res


def main(build):
    models = sorted(kt.MODEL_GIB)
    rows = [{"sn": "node-%s" % m, "cpu_milli": "64000", "memory_mib": "262144",
             "gpu": "8" if m == "G2" else "2", "model": m} for m in models]
    names = sorted(kt.node_name(r) for r in rows)
    share = kt.pod_object(0, row(gpu_milli=470), "default")
    limits = share["spec"]["containers"][0]["resources"]["limits"]
    expect(limits == {"cpu": "1000m", "memory": "1024Mi", "nvidia.com/gpu": "1",
                      "nvidia.com/gpucores": "47", "nvidia.com/gpumem-percentage": "47"},
           "a 470 milli share asks %s" % limits)
    whole = kt.pod_object(1, row(num_gpu=4, gpu_milli=1000), "default")
    limits = whole["spec"]["containers"][0]["resources"]["limits"]
    expect(limits.get("nvidia.com/gpu") == "4" and limits.get("nvidia.com/gpucores") == "100",
           "4 whole GPUs ask %s" % limits)
    cpu = kt.pod_object(3, row(num_gpu=0, gpu_milli=0), "default")
    limits = cpu["spec"]["containers"][0]["resources"]["limits"]
    expect(limits == {"cpu": "1000m", "memory": "1024Mi", "nvidia.com/gpu": "0"},
           "a GPU-less pod names nvidia.com/gpu 0, so that the extender ranks it: %s" % limits)
    pinned = kt.pod_object(2, row(gpu_spec="T4|V100M32"), "default")
    expect(pinned["metadata"]["annotations"] == {"nvidia.com/use-gputype": "T4,V100M32"},
           "gpu_spec T4|V100M32 gives %s" % pinned["metadata"]["annotations"])
    try:
        kt.check_models({"V100", "V100M16"})
        expect(False, "V100 beside V100M16 was not refused")
    except SystemExit as e:
        expect("V100 is part of V100M16" in str(e), "refusal says %s" % e)
    kt.check_models(set(models))  # the traces' own models are told apart

    with tempfile.TemporaryDirectory() as work:
        api, api_port, kc = start_fake_api(work)
        sched = None
        try:
            for i, r in enumerate(rows):
                post(api_port, "/_test/nodes", kt.node_object(i, r), TOKEN)
            sched, port = start([os.path.join(build, "bin", "vgpu-scheduler"), "--listen",
                                 "127.0.0.1:0", "--kubeconfig", kc])
            got, res = passing(port, share, names)
            expect(got == names, "the share fits %s, not every node: %s" % (got, res))
            got, res = passing(port, whole, names)
            expect(got == ["kr-node-g2"], "4 whole GPUs fit %s (only the 8-GPU node): %s" % (
                got, res))
            got, res = passing(port, pinned, names)
            expect(got == ["kr-node-t4", "kr-node-v100m32"], "T4|V100M32 fits %s: %s" % (got, res))
            with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=10) as m:
                text = m.read().decode()
            bad = [x for x in text.splitlines()
                   if x.startswith("vgpu_scheduler_node_failures_total") and
                   any('"%s"' % r in x for r in kt.BAD_REASONS) and not x.endswith(" 0")]
            expect(not bad, "vgpu-scheduler failed the Nodes: %s" % bad)
        finally:
            if sched:
                sched.terminate()
                sched.wait()
            api.terminate()
            api.wait()
    if not failures:
        print("test_kube_trace_objects: all passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
