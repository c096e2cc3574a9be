#!/usr/bin/python3
"""steer_latency.py -- what following the scheduler costs at pod admission.

GetPreferredAllocation with steering (docs/allocation.md, "Steering") asks the
kubelet's PodResources API and the API server which assigned container is
being admitted. This bench measures that call as the kubelet makes it, one
pod at a time, with P pods already bound to the node (each with a
`vgpu.io/assigned` annotation), against the same call on a plugin started
without an API server (no steering: the plugin's local rule only). Both run
in one go on the simulated GPU; the API server is tests/k8s/fake_apiserver.py
(Python, so its list times are an upper bound for a real one on localhost)
and PodResources is the fake kubelet's, served in this process.

Every steered answer is also checked: the IDs must lie on the pod's assigned
GPU. Prints p50/p95 per node size and the ratio to the unsteered call.

Usage: bench/steer_latency.py [--build DIR] [--pods 10,50,110] [--calls N]
"""
import argparse
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ROOT, TOKEN, percentile, start_fake_api, start_plugin  # noqa: E402
from common import post as api_post  # noqa: E402
sys.path.insert(0, os.path.join(ROOT, "tests", "plugin"))
import fake_kubelet  # noqa: E402

GPUS = 4


def assignment(uuid):
    return json.dumps({"version": 1, "node": "node1", "containers": [
        {"name": "c", "resource": "nvidia.com/vgpu",
         "gpus": [{"uuid": uuid, "index": 0, "memory": 1 << 30, "cores": 10}]}]})


def measure(stub, pb, pr, ids, uuids, pods, calls, steered):
    """calls admissions in a row, each of a pod bound to node1; returns latencies (s)."""
    lat, wrong = [], 0
    for n in range(calls):
        pod = "p%d" % (n % pods)
        pr.unassign("default", pod)
        pr.admitting("default", pod, "c")
        held = pr.held("nvidia.com/vgpu")
        avail = [i for i in ids if i not in held]
        req = pb.PreferredAllocationRequest(container_requests=[
            pb.ContainerPreferredAllocationRequest(available_deviceIDs=avail,
                                                   allocation_size=1)])
        t0 = time.perf_counter()
        got = list(stub.GetPreferredAllocation(req).container_responses[0].deviceIDs)
        lat.append(time.perf_counter() - t0)
        if steered and not got[0].startswith(uuids[(n % pods) % GPUS] + "::"):
            wrong += 1
        pr.assign("default", pod, "c", "nvidia.com/vgpu", got)
    return lat, wrong


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--pods", default="10,50,110")
    ap.add_argument("--calls", type=int, default=200)
    args = ap.parse_args()
    import grpc
    pb, svc = fake_kubelet.load_stubs(os.path.join(ROOT, "src", "plugin", "proto"))
    prpb = fake_kubelet.load_podresources(os.path.join(ROOT, "src", "plugin", "proto"))
    work = tempfile.mkdtemp(prefix="vgpu-bench-steer-")
    api, port, kubeconfig = start_fake_api(work)
    api_post(port, "/_test/nodes", {"metadata": {"name": "node1"}}, TOKEN)
    pr = fake_kubelet.PodResources(grpc, prpb, os.path.join(work, "pod-resources.sock"))
    pr.start()
    steered_proc, steered_sock = start_plugin(
        args.build, work, "steered", GPUS, 128, ["--kubeconfig", kubeconfig, "--node-name",
                                                 "node1", "--podresources-socket", pr.sock])
    plain_proc, plain_sock = start_plugin(args.build, work, "plain", GPUS, 128)
    try:
        stubs = {}
        for name, sock in (("steered", steered_sock), ("plain", plain_sock)):
            stubs[name] = svc.DevicePluginStub(grpc.insecure_channel("unix:" + sock))
        ids = [d.ID for d in next(stubs["plain"].ListAndWatch(pb.Empty())).devices]
        uuids = sorted({i.split("::")[0] for i in ids})
        print("GetPreferredAllocation at admission, simulated GPU (%d GPUs), %d calls per row, "
              "fake API server" % (GPUS, args.calls))
        print("%-12s %12s %12s %12s %12s %8s %8s" % ("pods on node", "plain p50", "steered p50",
                                                    "plain p95", "steered p95", "p50 x", "wrong"))
        made = 0
        for pods in [int(x) for x in args.pods.split(",")]:
            for i in range(made, pods):
                api_post(port, "/_test/pods", {
                    "metadata": {"name": "p%d" % i, "namespace": "default",
                                 "annotations": {"vgpu.io/assigned": assignment(uuids[i % GPUS])}},
                    "spec": {"nodeName": "node1", "containers": [{"name": "c"}]}}, TOKEN)
            made = pods
            plain, _ = measure(stubs["plain"], pb, pr, ids, uuids, pods, args.calls, False)
            steer, wrong = measure(stubs["steered"], pb, pr, ids, uuids, pods, args.calls, True)
            p50p, p50s = percentile(plain, 50) * 1e3, percentile(steer, 50) * 1e3
            print("%-12d %12.3f %12.3f %12.3f %12.3f %8.1f %8d" %
                  (pods, p50p, p50s, percentile(plain, 95) * 1e3, percentile(steer, 95) * 1e3,
                   p50s / p50p, wrong))
    finally:
        for p in (steered_proc, plain_proc, api):
            p.terminate()
            p.wait()
        pr.stop()


if __name__ == "__main__":
    main()
