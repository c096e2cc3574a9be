#!/usr/bin/python3
"""walkthrough.py -- the seed documents' workflows, run on the simulated GPU.

Each walkthrough does on one machine what the seed does in a cluster, with
the real programs: vgpu-device-plugin registers with a fake kubelet
(tests/plugin/fake_kubelet.py, in this process) and reads pods from a fake
API server (tests/k8s/fake_apiserver.py); a pod is "admitted" the way the
kubelet does it (GetPreferredAllocation, Allocate, PodResources); the binder
writes its limits; then the commands the seed runs inside the container run
under `vgpu run --sim` on that container's own region file (what the
container's /usr/local/vgpu mount holds), and the node's view without it.

Every step prints what it ran and its output, and checks its numbers: the
script exits 1 at the first step that does not behave as the docs say.
docs/walkthroughs/ shows the output of real runs.

Usage: scripts/walkthrough.py {dynamic|gpushare|time-slicing|cce|all} [--build DIR]
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "plugin"))
import fake_kubelet  # noqa: E402

TOKEN = "walkthrough"
MIB = 1 << 20


def say(text):
    print("\n== " + text, flush=True)


def check(what, actual, ok, expected):
    if not ok:
        sys.exit("walkthrough: FAILED: %s is %s, expected %s" % (what, actual, expected))
    print("   ok: %s = %s" % (what, actual), flush=True)


class Node:
    """One simulated GPU node: API server, kubelet, device plugin."""

    def __init__(self, build, gpus, memory, config_text):
        import grpc
        self.build, self.grpc = build, grpc
        self.work = tempfile.mkdtemp(prefix="vgpu-walkthrough-")
        self.env = dict(os.environ, VGPU_SIM_STATE=os.path.join(self.work, "sim.state"),
                        VGPU_SIM_DEVICES=str(gpus), VGPU_SIM_MEMORY=memory,
                        LD_LIBRARY_PATH=os.path.join(build, "sim"))
        # NVIDIA_VISIBLE_DEVICES too: on a GPU machine it names real GPUs,
        # which the simulator would then hide (docs/simulator.md).
        for var in ("CUDA_DEVICE_SM_LIMIT", "CUDA_DEVICE_MEMORY_LIMIT",
                    "CUDA_DEVICE_MEMORY_SHARED_CACHE", "NVIDIA_VISIBLE_DEVICES"):
            self.env.pop(var, None)
        self.procs = []
        self.sched_port = None
        self.api_port = self.start_api()
        self.post("/_test/nodes", {"metadata": {"name": "node1"}, "status": {"addresses": [
            {"type": "InternalIP", "address": "192.168.0.72"}]}})
        proto = os.path.join(ROOT, "src", "plugin", "proto")
        pb, svc = fake_kubelet.load_stubs(proto)
        prpb = fake_kubelet.load_podresources(proto)
        self.dp = os.path.join(self.work, "device-plugins")
        os.makedirs(self.dp)
        self.kubelet = fake_kubelet.Kubelet(grpc, pb, svc, self.dp)
        self.kubelet.listen()
        self.pr = fake_kubelet.PodResources(grpc, prpb, os.path.join(self.work, "pod-resources"))
        self.pr.start()
        self.config = os.path.join(self.work, "config.yaml")
        with open(self.config, "w") as f:
            f.write(config_text)
        self.state = os.path.join(self.work, "state")

    def start_api(self):
        p = subprocess.Popen(["/usr/bin/python3", os.path.join(ROOT, "tests", "k8s",
                                                               "fake_apiserver.py"),
                              "--token", TOKEN], stdout=subprocess.PIPE, text=True)
        self.procs.append(p)
        port = int(p.stdout.readline().split()[1])
        self.kubeconfig = os.path.join(self.work, "kubeconfig")
        with open(self.kubeconfig, "w") as f:
            f.write("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n"
                    "    server: http://127.0.0.1:%d\nusers:\n- name: u\n  user:\n"
                    "    token: %s\ncontexts:\n- name: x\n  context:\n    cluster: c\n"
                    "    user: u\ncurrent-context: x\n" % (port, TOKEN))
        return port

    def post(self, path, obj):
        req = urllib.request.Request("http://127.0.0.1:%d%s" % (self.api_port, path),
                                     data=json.dumps(obj).encode(), method="POST",
                                     headers={"Content-Type": "application/json",
                                              "Authorization": "Bearer " + TOKEN})
        return json.loads(urllib.request.urlopen(req).read())

    def start_plugin(self, resources):
        cmd = [os.path.join(self.build, "bin", "vgpu-device-plugin"), "--config", self.config,
               "--plugin-dir", self.dp, "--state-dir", self.state,
               "--library", os.path.join(self.build, "lib", "libvgpu.so"),
               "--kubeconfig", self.kubeconfig, "--node-name", "node1",
               "--podresources-socket", self.pr.sock]
        self.log = open(os.path.join(self.work, "plugin.log"), "w")
        self.procs.append(subprocess.Popen(cmd, env=self.env, stdout=self.log, stderr=self.log))
        ok = self.kubelet.wait(lambda: len(self.kubelet.registrations) >= len(resources) and
                               all(self.kubelet.snapshots(r) for r in resources), 10)
        if not ok:
            sys.exit("walkthrough: the plugin did not register %s; see %s" %
                     (resources, self.log.name))
        print("$ vgpu-device-plugin --config config.yaml ...   (registered: %s)" %
              ", ".join(sorted(r["resource_name"] for r in self.kubelet.registrations)))

    def start_scheduler(self):
        p = subprocess.Popen([os.path.join(self.build, "bin", "vgpu-scheduler"), "--listen",
                              "127.0.0.1:0", "--kubeconfig", self.kubeconfig],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.procs.append(p)
        self.sched_port = int(p.stdout.readline().split()[1])
        print("$ vgpu-scheduler --listen 127.0.0.1:%d   (the kube-scheduler extender)" %
              self.sched_port)

    def schedule(self, pod, container, limits, resource, size):
        """The pod is created unbound, bound by vgpu-scheduler, then admitted."""
        self.post("/_test/pods", {
            "metadata": {"name": pod, "namespace": "default"},
            "spec": {"schedulerName": "vgpu-scheduler", "containers": [
                {"name": container, "resources": {"limits": limits}}]}})
        req = urllib.request.Request(
            "http://127.0.0.1:%d/bind" % self.sched_port, method="POST",
            data=json.dumps({"PodName": pod, "PodNamespace": "default", "PodUID": "",
                             "Node": "node1"}).encode(),
            headers={"Content-Type": "application/json"})
        err = json.loads(urllib.request.urlopen(req).read()).get("Error")
        if err:
            sys.exit("walkthrough: vgpu-scheduler could not bind %s: %s" % (pod, err))
        r = self.kubelet.admit(self.pr, "default", pod, container, resource, size, None)
        if not r.get("ok"):
            sys.exit("walkthrough: admission of %s failed: %s" % (pod, r))
        return r

    def filter(self, pod, limits):
        """The extender's filter verb for an unbound pod; node1's failure reason, if any."""
        obj = {"metadata": {"name": pod, "namespace": "default"},
               "spec": {"schedulerName": "vgpu-scheduler", "containers": [
                   {"name": pod, "resources": {"limits": limits}}]}}
        # As kube-scheduler does, send the pod as the API server stored it
        # (quantities canonical: 3000 -> "3k").
        stored = self.post("/_test/pods", obj)
        req = urllib.request.Request(
            "http://127.0.0.1:%d/filter" % self.sched_port, method="POST",
            data=json.dumps({"Pod": stored, "Nodes": None, "NodeNames": ["node1"]}).encode(),
            headers={"Content-Type": "application/json"})
        print("$ POST /filter   (kube-scheduler asks the extender about %s)" % pod)
        res = json.loads(urllib.request.urlopen(req).read())
        print("   " + json.dumps(res))
        return (res.get("FailedNodes") or {}).get("node1")

    def wait_inventory(self):
        url = "http://127.0.0.1:%d/api/v1/nodes/node1" % self.api_port
        for _ in range(200):
            req = urllib.request.Request(url, headers={"Authorization": "Bearer " + TOKEN})
            if b"vgpu.io/gpu-inventory" in urllib.request.urlopen(req).read():
                return
            time.sleep(0.05)
        sys.exit("walkthrough: the plugin never published the node's inventory")

    def allocatable(self, resource):
        snap = self.kubelet.snapshots(resource)[-1]
        return sum(1 for h in snap.values() if h == "Healthy")

    def admit(self, pod, container, limits, resource, size):
        """The seed's pod, placed by vgpu-scheduler (started the first time) and admitted:
        the device plugin refuses pods the extender did not place (docs/device-plugin.md)."""
        if self.sched_port is None:
            self.wait_inventory()
            self.start_scheduler()
        return self.schedule(pod, container, limits, resource, size)

    def region(self, admitted):
        for m in admitted["mounts"]:
            if m["container_path"] == "/usr/local/vgpu":
                return os.path.join(m["host_path"], "region.cache")
        return None

    def wait_bound(self, region):
        for _ in range(200):
            out = self.vgpu(["status", "--cache", region, "--json"], quiet=True)
            if '"limits_pending":false' in out:
                return json.loads(out.strip().splitlines()[-1])
            time.sleep(0.05)
        sys.exit("walkthrough: the binder never wrote %s; see %s" % (region, self.log.name))

    def run(self, argv, env=None, quiet=False, shown=None):
        e = dict(self.env, **(env or {}))
        if not quiet:
            prefix = " ".join("%s=%s" % kv for kv in (env or {}).items())
            print("$ " + (prefix + " " if prefix else "") + (shown or " ".join(argv)), flush=True)
        p = subprocess.run(argv, env=e, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True)
        if not quiet:  # the JSON line is for the checks; people read the rest
            shown_out = [ln for ln in p.stdout.splitlines() if not ln.startswith("{")]
            text = "\n".join(shown_out) + ("\n" if shown_out else "")
            print(text.replace(self.work, "<node>"), end="", flush=True)
        return p.stdout

    def vgpu(self, args, **kw):
        kw.setdefault("shown", "vgpu " + " ".join(args).replace(self.work, "<node>"))
        return self.run([os.path.join(self.build, "bin", "vgpu")] + args, **kw)

    def in_container(self, region, argv, env=None, shown=None):
        """A command inside the container: its region, libvgpu preloaded (-q: a container
        has no vgpu run to announce the limits)."""
        e = dict(env or {})
        return self.run([os.path.join(self.build, "bin", "vgpu"), "run", "-q", "--sim", "--cache",
                         region, "--"] + argv, env=e, shown=shown or " ".join(
                             os.path.basename(a) if i == 0 else a for i, a in enumerate(argv)))

    def burn(self):
        return os.path.join(self.build, "bin", "vgpu-burn")

    def close(self):
        for p in reversed(self.procs):
            p.terminate()
            p.wait()
        self.kubelet.stop()
        self.pr.stop()
        shutil.rmtree(self.work, ignore_errors=True)


def last_json(out):
    return json.loads([line for line in out.splitlines() if line.startswith("{")][-1])


def dynamic(build):
    """Seeds 000 / 001: HAMi's dynamic allocation of compute and memory."""
    node = Node(build, 1, "16g", "version: v1\ndialects:\n  vgpu:\n    deviceSplitCount: 10\n")
    try:
        say("The node agent serves the vgpu (HAMi) dialect")
        node.start_plugin(["nvidia.com/vgpu"])
        say("Create the pod of the seed: nvidia.com/vgpu 1, gpumem 200, gpucores 0")
        a = node.admit("gpu-burn-test", "container-1",
                       {"nvidia.com/vgpu": "1", "nvidia.com/gpumem": "200",
                        "nvidia.com/gpucores": "0"}, "nvidia.com/vgpu", 1)
        region = node.region(a)
        st = node.wait_bound(region)
        node.vgpu(["status", "--cache", region])
        check("memory limit bound from the pod", st["devices"][0]["mem_limit"],
              st["devices"][0]["mem_limit"] == 200 * MIB, 200 * MIB)
        say("Inside the container: gpu_burn with no compute limit")
        full = last_json(node.in_container(region, [node.burn(), "--seconds", "2", "--json"]))
        say("export CUDA_DEVICE_SM_LIMIT=10, then the same burn in the same container")
        ten = last_json(node.in_container(region, [node.burn(), "--seconds", "2", "--json"],
                                          env={"CUDA_DEVICE_SM_LIMIT": "10"}))
        ratio = 100.0 * ten["kernels_per_s"] / full["kernels_per_s"]
        check("throughput at 10 % vs unlimited (percent)", "%.1f" % ratio, 5 <= ratio <= 15,
              "10 +- 5")
        say("Memory: the container stops at its 200 MiB")
        out = last_json(node.in_container(region, [node.burn(), "--alloc", "1g", "--chunk", "10m",
                                                   "--json"]))
        check("allocated bytes", out["allocated_bytes"], out["allocated_bytes"] == 200 * MIB,
              200 * MIB)
        say("export CUDA_DEVICE_MEMORY_LIMIT_0=300m -- same cache file, no rename needed")
        out = last_json(node.in_container(region, [node.burn(), "--alloc", "1g", "--chunk", "10m",
                                                   "--json"],
                                          env={"CUDA_DEVICE_MEMORY_LIMIT_0": "300m"}))
        check("allocated bytes", out["allocated_bytes"], out["allocated_bytes"] == 300 * MIB,
              300 * MIB)
        node.vgpu(["status", "--cache", region])
    finally:
        node.close()


def gpushare(build):
    """Seed 002: Aliyun gpushare, aliyun.com/gpu-mem in MiB on 7606 MiB GPUs."""
    node = Node(build, 1, "7606m",
                "version: v1\ndialects:\n  gpushare:\n    memoryUnit: MiB\n")
    try:
        say("The node agent serves aliyun.com/gpu-mem in MiB; the extender places pods")
        node.start_plugin(["aliyun.com/gpu-mem"])
        n = node.allocatable("aliyun.com/gpu-mem")
        check("allocatable aliyun.com/gpu-mem (one GPU of 7606 MiB)", n, n == 7606, 7606)
        node.wait_inventory()
        node.start_scheduler()
        say("Pod binpack-1 asks for aliyun.com/gpu-mem: 3803 (half a GPU)")
        a = node.schedule("binpack-1", "binpack-1", {"aliyun.com/gpu-mem": "3803"},
                          "aliyun.com/gpu-mem", 3803)
        envs = a["envs"]
        for k in ("ALIYUN_COM_GPU_MEM_DEV", "ALIYUN_COM_GPU_MEM_CONTAINER",
                  "CUDA_DEVICE_MEMORY_LIMIT_0"):
            print("   %s=%s" % (k, envs.get(k)))
        check("ALIYUN_COM_GPU_MEM_DEV", envs.get("ALIYUN_COM_GPU_MEM_DEV"),
              envs.get("ALIYUN_COM_GPU_MEM_DEV") == "7606", "7606")
        check("ALIYUN_COM_GPU_MEM_CONTAINER", envs.get("ALIYUN_COM_GPU_MEM_CONTAINER"),
              envs.get("ALIYUN_COM_GPU_MEM_CONTAINER") == "3803", "3803")
        region = node.region(a)
        say("Unlike gpushare, the limit is enforced: the container cannot take more")
        out = last_json(node.in_container(region, [node.burn(), "--alloc", "7g", "--chunk", "64m",
                                                   "--json"]))
        check("allocated MiB", out["allocated_bytes"] // MIB,
              3803 - 64 < out["allocated_bytes"] // MIB <= 3803, "3739..3803 (64 MiB chunks)")
        node.in_container(region, [os.path.join(build, "bin", "vgpu"), "smi"],
                          shown="nvidia-smi   # vgpu smi, the container's view")
        say("kubectl inspect gpushare: half the GPU is allocated")
        inspect = os.path.join(build, "bin", "kubectl-inspect-gpushare")
        out = node.run([inspect, "--kubeconfig", node.kubeconfig],
                       shown="kubectl inspect gpushare")
        check("cluster total", out.strip().splitlines()[-1],
              out.strip().splitlines()[-1] == "3803/7606 (50%)", "3803/7606 (50%)")
        say("A second pod, binpack-2 (3803 MiB), fills the GPU; a third no longer fits")
        node.schedule("binpack-2", "binpack-2", {"aliyun.com/gpu-mem": "3803"},
                      "aliyun.com/gpu-mem", 3803)
        why = node.filter("binpack-3", {"aliyun.com/gpu-mem": "3803"})
        check("the extender's reason for node1", why,
              why is not None and "3803" in why and "%" not in why,
              "a reason naming the request, without '%' (kube-scheduler's Eventf mangles it)")
        out = node.run([inspect, "--kubeconfig", node.kubeconfig],
                       shown="kubectl inspect gpushare")
        check("cluster total", out.strip().splitlines()[-1],
              out.strip().splitlines()[-1] == "7606/7606 (100%)", "7606/7606 (100%)")
        node.run([inspect, "--kubeconfig", node.kubeconfig, "-d"],
                 shown="kubectl inspect gpushare -d")
    finally:
        node.close()


def time_slicing(build):
    """Seed 003: NVIDIA time-slicing, 4 replicas of a 16 GB GPU."""
    config = open(os.path.join(ROOT, "examples", "config", "nvidia-time-slicing.yaml")).read()
    node = Node(build, 1, "16g", config)
    try:
        say("The node agent reads NVIDIA's time-slicing config unchanged (replicas: 4)")
        node.start_plugin(["nvidia.com/gpu"])
        n = node.allocatable("nvidia.com/gpu")
        check("allocatable nvidia.com/gpu (the seed's jq check)", n, n == 4, 4)
        say("Four replicas of the gpu-test deployment, nvidia.com/gpu: 1 each")
        admitted = [node.admit("gpu-test-%d" % i, "cuda-container", {"nvidia.com/gpu": "1"},
                               "nvidia.com/gpu", 1) for i in range(4)]
        print("   replica 0 gets: %s, mounts: %s" % (admitted[0]["envs"], admitted[0]["mounts"]))
        check("isolation mounts (none, as NVIDIA does)", len(admitted[0]["mounts"]),
              len(admitted[0]["mounts"]) == 0, 0)
        say("No memory isolation: one replica can take the whole GPU from the others")
        out = last_json(node.run([node.burn(), "--alloc", "15g", "--chunk", "256m", "--hold", "0",
                                  "--json"], shown="vgpu-burn --alloc 15g  # replica 0"))
        check("replica 0 allocated GiB", out["allocated_bytes"] / (1 << 30),
              out["allocated_bytes"] >= 14 << 30, ">= 14")
    finally:
        node.close()
    say("vgpu's option: memoryPerReplica: equal -- each replica gets its share, enforced")
    config = open(os.path.join(ROOT, "examples", "config", "timeslicing.yaml")).read()
    print("   examples/config/timeslicing.yaml: NVIDIA's file under dialects.timeSlicing, plus "
          "memoryPerReplica: equal")
    node = Node(build, 1, "16g", config)
    try:
        node.start_plugin(["nvidia.com/gpu"])
        a = node.admit("gpu-test-0", "cuda-container", {"nvidia.com/gpu": "1"}, "nvidia.com/gpu",
                       1)
        limit = a["envs"].get("CUDA_DEVICE_MEMORY_LIMIT_0")
        check("CUDA_DEVICE_MEMORY_LIMIT_0 ((16384 - 4 x 256 context reserve) / 4 MiB)", limit,
              limit == "3840m", "3840m")
        out = last_json(node.in_container(node.region(a), [node.burn(), "--alloc", "15g", "--chunk",
                                                           "256m", "--json"],
                                          shown="vgpu-burn --alloc 15g  # replica 0"))
        check("replica 0 allocated MiB", out["allocated_bytes"] // MIB,
              out["allocated_bytes"] == 3840 * MIB, 3840)
    finally:
        node.close()


def cce(build):
    """Seed 004: Huawei CCE GPU virtualization, 40 x 128 MiB and 25 % compute."""
    node = Node(build, 1, "16160m", "version: v1\ndialects:\n  cce: {}\n")
    try:
        say("The node agent serves volcano.sh/gpu-mem.128Mi")
        node.start_plugin(["volcano.sh/gpu-mem.128Mi"])
        say("Pod gpu-app: volcano.sh/gpu-mem.128Mi: 40, volcano.sh/gpu-core.percentage: 25")
        a = node.admit("gpu-app", "container-1", {"volcano.sh/gpu-mem.128Mi": "40",
                                                  "volcano.sh/gpu-core.percentage": "25"},
                       "volcano.sh/gpu-mem.128Mi", 40)
        region = node.region(a)
        st = node.wait_bound(region)
        check("memory limit (MiB)", st["devices"][0]["mem_limit"] // MIB,
              st["devices"][0]["mem_limit"] == 5120 * MIB, 5120)
        check("compute limit (%)", st["devices"][0]["sm_limit"], st["devices"][0]["sm_limit"] == 25,
              25)
        say("kubectl exec -it gpu-app -- nvidia-smi   (the container's view)")
        out = node.in_container(region, [os.path.join(build, "bin", "vgpu"), "smi"],
                                shown="nvidia-smi")
        check("the container sees", re.search(r"\d+MiB / +\d+MiB", out).group(0),
              re.search(r"0MiB / +5120MiB", out) is not None, "0MiB / 5120MiB")
        say("nvidia-smi on the node")
        out = node.vgpu(["smi"], shown="nvidia-smi")
        check("the node sees", re.search(r"\d+MiB / +\d+MiB", out).group(0),
              re.search(r"0MiB / +16160MiB", out) is not None, "0MiB / 16160MiB")
        say("The compute share holds: a burn in the pod runs at about 25 %")
        full = last_json(node.run([node.burn(), "--seconds", "2", "--json"],
                                  shown="vgpu-burn --seconds 2   # on the node, no limit"))
        part = last_json(node.in_container(region, [node.burn(), "--seconds", "2", "--json"]))
        ratio = 100.0 * part["kernels_per_s"] / full["kernels_per_s"]
        check("throughput in the pod vs the whole GPU (percent)", "%.1f" % ratio,
              20 <= ratio <= 30, "25 +- 5")
    finally:
        node.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("which", choices=["dynamic", "gpushare", "time-slicing", "cce", "all"])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    args = ap.parse_args()
    todo = {"dynamic": dynamic, "gpushare": gpushare, "time-slicing": time_slicing, "cce": cce}
    for name, fn in todo.items():
        if args.which in (name, "all"):
            fn(os.path.abspath(args.build))
    print("\nwalkthrough: every step behaved as documented")


if __name__ == "__main__":
    main()
