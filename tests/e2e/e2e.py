#!/usr/bin/python3
"""e2e.py -- vgpu on a real single-node Kubernetes (scripts/e2e/cluster.sh).

Each case names what it proves, creates its own pods, checks what users and
operators see (pod state and events, the container's own view, the Node, the
metrics, `kubectl inspect gpushare`), deletes what it created and prints one
line: PASS, FAIL (with why and the objects' state), XFAIL (a known defect an
open issue owns, still shown failing) or XPASS (that defect no longer shows:
promote the case). The last line is `N passed, N failed`.

Run by tests/e2e/run.sh, which builds and starts the cluster and exports its
coordinates (cluster.sh env) plus VGPU_E2E_BUILD (the vgpu build dir),
VGPU_E2E_SIM_STATE and VGPU_E2E_WORK. Usage: e2e.py [CASE...]
"""
import calendar
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import traceback

import yaml

import install
import kube
from kube import E2EError
from transcript import Transcript

sys.path.insert(0, os.path.join(install.ROOT, "tests", "deploy"))
import privileges  # noqa: E402  docs/install.md's Privileges table (tests/deploy/privileges.py)

NS = "e2e"
IMAGE = "localhost/vgpu-e2e/workload:latest"
OLD_IMAGE = "localhost/vgpu-e2e/old-workload:latest"  # Debian bullseye, glibc 2.31 (images.sh)
MIB = 1 << 20
GPU_MEMORY = 8192 * MIB  # run.sh creates two simulated GPUs of 8 GiB


class XFail(Exception):
    """The known defect showed, as the case's issue says it still does."""


class Ctx:
    def __init__(self):
        self.env = dict(os.environ)
        self.node = self.env["VGPU_E2E_NODE"]
        self.build = self.env["VGPU_E2E_BUILD"]
        self.work = self.env["VGPU_E2E_WORK"]
        self.agents = install.Installation(self.env, self.build, self.work)
        self.created = []
        self.seed_files = []  # the seeds' YAMLs a case applied (delete_seeds)

    def sim(self, *args):
        proc = subprocess.run([os.path.join(self.build, "bin", "vgpu-sim"), *args],
                              env=dict(self.env, LD_LIBRARY_PATH=os.path.join(self.build, "sim"),
                                       VGPU_SIM_STATE=self.env["VGPU_E2E_SIM_STATE"]),
                              capture_output=True, text=True, timeout=30)
        if proc.returncode != 0:
            raise E2EError("vgpu-sim %s: %s" % (" ".join(args), proc.stderr.strip()))
        return proc.stdout


# ---------------------------------------------------------------- pods

PROBE = r"""
echo "== env"; env | grep -E '^(NVIDIA|CUDA|ALIYUN|VGPU)' | sort
echo "== preload"; cat /etc/ld.so.preload 2>&1
echo "== slot"; ls /usr/local/vgpu 2>&1
echo "== burn"; vgpu-burn --alloc 16g --chunk 64m --json 2>&1 | tail -n 1
echo "== status"; vgpu status --json 2>&1 | tail -n 1
echo "== cli"; /usr/local/vgpu/bin/vgpu --version 2>&1; /usr/local/vgpu/bin/vgpu status --json 2>&1 | tail -n 1
echo "== done"
"""


def pod_spec(name, limits, script=PROBE, env=None, scheduler="vgpu-scheduler", node_name=None,
             annotations=None, image=IMAGE):
    container = {
        "name": "main", "image": image, "imagePullPolicy": "Never",
        "command": ["sh", "-c", script + "\nexec sleep 3600"],
        "resources": {"limits": limits},
    }
    if env:
        container["env"] = [{"name": k, "value": v} for k, v in env.items()]
    spec = {"containers": [container], "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 1}
    if os.environ.get("VGPU_E2E_HOST_NETWORK") == "1":
        spec["hostNetwork"] = True
    if scheduler:
        spec["schedulerName"] = scheduler
    if node_name:
        spec["nodeName"] = node_name
    meta = {"name": name, "namespace": NS, "annotations": annotations or {}}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def run_pod(ctx, name, limits, **kw):
    """Creates the pod, waits until it runs and has printed the probe; the log."""
    kube.apply(pod_spec(name, limits, **kw))
    ctx.created.append(name)
    kube.wait_running(name, NS)
    return kube.wait_log(name, NS, "== done")


def delete_pods(ctx, names=None):
    """Deletes the pods in one request and waits until none of their
    containers runs: the kubelet has then released their devices. It does
    not wait for the objects to go: a 1.20 kubelet removes a deleted pod only
    once its dead containers are removed, which a race in its cleanup can
    leave to the container GC, a minute later (cases that need the objects
    gone wait for that themselves)."""
    names = list(names if names is not None else ctx.created)
    if names:
        kube.kubectl("delete", "pod", "-n", NS, "--ignore-not-found", "--wait=false", *names)
    for name in names:
        kube.wait_for("pod %s/%s to stop" % (NS, name), lambda: kube.pod_stopped(name, NS), 120,
                      state=lambda: kube.pod_summary(name, NS))
        if name in ctx.created:
            ctx.created.remove(name)


def section(log, title):
    """The lines of one `== title` section of the probe's output."""
    m = re.search(r"^== %s\n(.*?)(?=^== )" % re.escape(title), log, re.S | re.M)
    return m.group(1).strip() if m else ""


def probe_env(log):
    return dict(line.split("=", 1) for line in section(log, "env").splitlines() if "=" in line)


def probe_json(log, title):
    text = section(log, title)
    try:
        return json.loads(text.splitlines()[-1])
    except (ValueError, IndexError):
        raise E2EError("%s printed no JSON:\n%s" % (title, log))


def assignment(name, ns=NS):
    pod = kube.get("pod", name, ns)
    raw = pod["metadata"].get("annotations", {}).get("vgpu.io/assigned")
    if raw is None:
        raise E2EError("no vgpu.io/assigned:\n" + kube.pod_summary(name, ns))
    return json.loads(raw)


def assigned_gpus(name, ns=NS):
    return [g for c in assignment(name, ns)["containers"] for g in c["gpus"]]


def check(cond, what, state=""):
    if not cond:
        raise E2EError(what + ("\n" + state if state else ""))


def check_inside(name, log, memory, cores=None, limited=True, ns=NS):
    """The container's own view: its GPU, the preload, its limits."""
    state = kube.pod_summary(name, ns) + "\nlog:\n" + log
    env = probe_env(log)
    gpus = assigned_gpus(name, ns)
    check(env.get("NVIDIA_VISIBLE_DEVICES") == ",".join(g["uuid"] for g in gpus),
          "NVIDIA_VISIBLE_DEVICES is not the assigned GPU", state)
    burn = probe_json(log, "burn")
    check(burn.get("device_total") is not None, "vgpu-burn saw no device", state)
    if not limited:
        check(burn["device_total"] == GPU_MEMORY, "an unlimited container sees less than the GPU",
              state)
        return
    check(env.get("CUDA_DEVICE_MEMORY_SHARED_CACHE") == "/usr/local/vgpu/region.cache",
          "no region file in the env", state)
    check(section(log, "preload") == "/usr/local/vgpu/libvgpu.so", "ld.so.preload is wrong", state)
    check("libvgpu.so" in section(log, "slot") and "region.cache" in section(log, "slot"),
          "the slot mount lacks the library or the region", state)
    check(burn["oom"] and burn["allocated_bytes"] <= memory,
          "allocated %d bytes past the %d-byte limit" % (burn["allocated_bytes"], memory), state)
    check(burn["allocated_bytes"] >= memory - 64 * MIB,
          "allocated only %d bytes of %d" % (burn["allocated_bytes"], memory), state)
    check(burn["device_total"] == memory, "cuDeviceTotalMem shows %d, not the limit %d" % (
        burn["device_total"], memory), state)
    # The CLI the node agent mounts (the image's own vgpu is /opt/vgpu/bin/vgpu): it runs, and
    # its status shows the container's limit (docs/coming-from.md, docs/device-plugin.md).
    cli = section(log, "cli").splitlines()
    check(bool(cli) and re.match(r"vgpu \d+\.\d+", cli[0]) is not None,
          "/usr/local/vgpu/bin/vgpu --version did not run in the container", state)
    mine = probe_json(log, "cli")
    check(mine.get("devices", [{}])[0].get("mem_limit") == memory,
          "/usr/local/vgpu/bin/vgpu status shows %s, not the limit %d" % (mine.get("devices"), memory),
          state)
    if cores is not None:
        status = probe_json(log, "status")
        dev = status["devices"][0]
        check(int(round(dev["sm_limit"])) == cores, "SM limit %s, not %d" % (dev["sm_limit"], cores),
              state)


def inspect_json(ctx):
    out = subprocess.run([os.path.join(ctx.build, "bin", "kubectl-inspect-gpushare"), "-o",
                          "json"], capture_output=True, text=True, timeout=30)
    if out.returncode != 0:
        raise E2EError("kubectl inspect gpushare: " + out.stderr)
    return json.loads(out.stdout)


def inspect_pod_memory(ctx, name):
    """Memory inspect shows for the pod on this node, summed over GPUs."""
    total = 0
    for n in inspect_json(ctx)["nodes"]:
        for g in n["gpus"]:
            total += sum(p["memory"] for p in g["pods"] if p["pod"] == name)
        total += sum(u["memory"] or 0 for u in n.get("unassigned", []) if u["pod"] == name)
    return total


def metric_lines(ctx, family, **labels):
    out = []
    for line in ctx.agents.metrics().splitlines():
        if line.startswith(family + "{") and all('%s="%s"' % kv in line for kv in labels.items()):
            out.append(line)
    return out


def metric_value(line):
    return float(line.rsplit(" ", 1)[1])


# ---------------------------------------------------------------- cases

CASES = []
EXPLICIT = set()  # cases run only when named (the soak): never in make test


def case(name, xfail=None, explicit=False):
    def register(fn):
        CASES.append((name, fn, xfail))
        if explicit:
            EXPLICIT.add(name)
        return fn
    return register


@case("registration")
def registration(ctx):
    """The plugin registers every dialect's resource with the real kubelet
    and publishes the GPU inventory on the Node."""
    want = {"nvidia.com/vgpu": 8, "aliyun.com/gpu-mem": 16384, "volcano.sh/gpu-mem.128Mi": 128,
            "nvidia.com/gpu": 4}
    wait_capacity(ctx, want)
    inv = inventory(ctx)
    check(len(inv["gpus"]) == 2, "inventory lists %d GPUs" % len(inv["gpus"]), json.dumps(inv))


def wait_capacity(ctx, want, timeout=90):
    """Waits until the Node's allocatable has exactly these counts."""
    def probe():
        return {r: kube.allocatable(ctx.node, r) for r in want} == want
    kube.wait_for("Node %s allocatable %s" % (ctx.node, want), probe, timeout,
                  state=lambda: json.dumps(kube.node(ctx.node)["status"].get("allocatable")))


def inventory(ctx):
    n = kube.node(ctx.node)
    raw = n["metadata"].get("annotations", {}).get("vgpu.io/gpu-inventory")
    check(raw is not None, "Node has no vgpu.io/gpu-inventory")
    return json.loads(raw)


def quantity_case(ctx, name, limits, memory, cores=None, limited=True):
    log = run_pod(ctx, name, limits)
    check_inside(name, log, memory, cores, limited)
    shown = inspect_pod_memory(ctx, name)
    check(shown == memory, "inspect shows %d bytes for %s, not %d" % (shown, name, memory),
          json.dumps(inspect_json(ctx)))


@case("quantities-vgpu")
def quantities_vgpu(ctx):
    """nvidia.com/gpumem 3000 reaches the extender as "3k", 4Gi (bytes: 4096
    MiB) and 3e3 as written: each schedules, binds, limits the container and
    shows in inspect."""
    quantity_case(ctx, "q-3000", {"nvidia.com/vgpu": "1", "nvidia.com/gpumem": "3000",
                                  "nvidia.com/gpucores": "30"}, 3000 * MIB, 30)
    quantity_case(ctx, "q-4gi", {"nvidia.com/vgpu": "1", "nvidia.com/gpumem": "4Gi"}, 4096 * MIB)
    delete_pods(ctx)
    quantity_case(ctx, "q-3e3", {"nvidia.com/vgpu": "1", "nvidia.com/gpumem": "3e3"}, 3000 * MIB)
    delete_pods(ctx)


@case("quantities-gpushare")
def quantities_gpushare(ctx):
    """aliyun.com/gpu-mem 4000 (MiB units) arrives as "4k"."""
    quantity_case(ctx, "q-gpushare", {"aliyun.com/gpu-mem": "4000"}, 4000 * MIB)
    delete_pods(ctx)


@case("quantities-cce")
def quantities_cce(ctx):
    """CCE's 40 x 128 MiB and 25 percent of compute."""
    quantity_case(ctx, "q-cce", {"volcano.sh/gpu-mem.128Mi": "40",
                                 "volcano.sh/gpu-core.percentage": "25"}, 40 * 128 * MIB, 25)
    delete_pods(ctx)


@case("quantities-time-slicing")
def quantities_time_slicing(ctx):
    """A time-slicing replica: one GPU, NVIDIA's behaviour (no limit)."""
    # Accounted (inspect) as its replica's share of the GPU; the container sees it all.
    quantity_case(ctx, "q-ts", {"nvidia.com/gpu": "1"}, GPU_MEMORY // 2, limited=False)
    delete_pods(ctx)


@case("renamed-memory")
def renamed_memory(ctx):
    """The device plugin configured with vgpu.resourceMem: example.com/vram, and
    vgpu-scheduler, vgpu-webhook and kube-scheduler told the same (docs/configuration.md,
    "Renaming a resource"): nvidia.com/vgpu 1 with example.com/vram 3000 is routed,
    placed by vgpu-scheduler on 3000 MiB and the container is limited to exactly that.
    Before the dialect table vgpu-scheduler knew only nvidia.com/gpumem and gave the
    pod the whole GPU. The installation is put back afterwards."""
    renames = {"vgpu.resourceMem": "example.com/vram"}
    ctx.agents.apply_renamed(renames)
    try:
        name = "q-vram"
        log = run_pod(ctx, name, {"nvidia.com/vgpu": "1", "example.com/vram": "3000"},
                      scheduler=None)  # the webhook routes it
        pod = kube.get("pod", name, NS)
        check(pod["spec"].get("schedulerName") == "vgpu-scheduler",
              "the webhook did not route the pod: schedulerName %s" % pod["spec"].get(
                  "schedulerName"))
        assigned = json.loads(pod["metadata"]["annotations"]["vgpu.io/assigned"])
        got = [g["memory"] for c in assigned["containers"] for g in c["gpus"]]
        check(got == [3000 * MIB], "vgpu-scheduler assigned %s, not 3000 MiB" % got)
        check_inside(name, log, 3000 * MIB, None, True)
        delete_pods(ctx)
    finally:
        delete_pods(ctx)
        ctx.agents.apply_renamed({})


def refusal_events(name):
    msgs = [e.get("message", "") for e in kube.events(name, NS) if e.get("reason") ==
            "FailedScheduling"]
    pod = kube.get("pod", name, NS)
    for c in pod["status"].get("conditions", []):
        if c["type"] == "PodScheduled" and c.get("message"):
            msgs.append(c["message"])
    return msgs


@case("refusal-reason")
def refusal_reason(ctx):
    """A pod the extender refuses stays Pending and `kubectl describe` shows
    the extender's reason, not 'code 400', never a garbled percent sign."""
    for name, limits, word in (
            ("refuse-mem", {"nvidia.com/vgpu": "1", "nvidia.com/gpumem": "100000"}, "100000 MiB"),
            ("refuse-cores", {"nvidia.com/vgpu": "1", "nvidia.com/gpucores": "150"}, "150"),
            ("refuse-pct", {"nvidia.com/vgpu": "1", "nvidia.com/gpumem-percentage": "150"}, "150")):
        kube.apply(pod_spec(name, limits))
        ctx.created.append(name)
        msgs = kube.wait_for("a FailedScheduling reason for %s" % name,
                             lambda: refusal_events(name), 60,
                             state=lambda: kube.pod_summary(name, NS))
        text = "\n".join(msgs)
        state = kube.pod_summary(name, NS)
        check(kube.pod_phase(name, NS) == "Pending", "a refused pod is not Pending", state)
        check("code 4" not in text and "code 5" not in text, "only an HTTP code reached the user",
              state)
        check("%!" not in text, "a percent sign was garbled by Eventf", state)
        check(word in text, "the reason does not quote the request (%s)" % word, state)
    delete_pods(ctx)


@case("gpu0-and-gpu1")
def gpu0_and_gpu1(ctx):
    """Every dialect on GPU 0 and on GPU 1 (spread): each container sees only
    its GPU, renumbered 0, with its limits, its env and mounts."""
    dialects = [
        ("vgpu", {"nvidia.com/vgpu": "1", "nvidia.com/gpumem": "2000", "nvidia.com/gpucores": "20"},
         2000 * MIB, 20, True),
        ("share", {"aliyun.com/gpu-mem": "2048"}, 2048 * MIB, None, True),
        ("cce", {"volcano.sh/gpu-mem.128Mi": "16", "volcano.sh/gpu-core.percentage": "10"},
         16 * 128 * MIB, 10, True),
        ("ts", {"nvidia.com/gpu": "1"}, GPU_MEMORY // 2, None, False),
    ]
    for tag, limits, memory, cores, limited in dialects:
        names = ["%s-a" % tag, "%s-b" % tag]
        logs = {}
        for n in names:
            kube.apply(pod_spec(n, limits, annotations={"vgpu.io/gpu-scheduler-policy": "spread"}))
            ctx.created.append(n)
        for n in names:
            kube.wait_running(n, NS)
            logs[n] = kube.wait_log(n, NS, "== done")
            check_inside(n, logs[n], memory, cores, limited)
        indices = sorted(g["index"] for n in names for g in assigned_gpus(n))
        check(indices == [0, 1], "%s pods were not spread over GPU 0 and GPU 1: %s" % (tag, indices))
        delete_pods(ctx)


@case("concurrent-admissions")
def concurrent_admissions(ctx):
    """Six pods created at once: the kubelet admits them one by one, each
    container gets its own assignment, slot and limit."""
    names = ["burst-%d" % i for i in range(6)]
    for i, n in enumerate(names):
        kube.apply(pod_spec(n, {"nvidia.com/vgpu": "1", "nvidia.com/gpumem": str(1000 + 100 * i)}))
        ctx.created.append(n)
    for i, n in enumerate(names):
        kube.wait_running(n, NS, timeout=180)
        log = kube.wait_log(n, NS, "== done")
        check_inside(n, log, (1000 + 100 * i) * MIB)
    slots = os.listdir(install.SLOTS_DIR)
    check(len(slots) >= 6, "%d slot directories for 6 containers" % len(slots))
    delete_pods(ctx)


# Where struct vg_region (src/common/region.h, layout 1.3) keeps device 0's
# memory limit and charge: a 32-byte header, the 64-byte mutex, generation,
# device_count, flags and 8 reserved words (176), then the 96-byte UUID.
REGION_DEV0_MEM_LIMIT = 272
REGION_DEV0_MEM_USED = 280


@case("tamper-env-limit")
def tamper_env_limit(ctx):
    """CUDA_DEVICE_MEMORY_LIMIT=10g in a 3000 MiB pod gets 3000 MiB, and the
    container is told why (the read-only grant)."""
    script = "echo '== told'; vgpu-burn --meminfo 2>&1 | grep -m 1 grant\n" + PROBE
    log = run_pod(ctx, "tamper-env", {"nvidia.com/vgpu": "1", "nvidia.com/gpumem": "3000"},
                  env={"CUDA_DEVICE_MEMORY_LIMIT": "10g"}, script=script)
    state = kube.pod_summary("tamper-env", NS) + "\nlog:\n" + log
    burn = probe_json(log, "burn")
    delete_pods(ctx)
    check(0 < burn["allocated_bytes"] <= 3000 * MIB,
          "got %d MiB in a 3000 MiB pod" % (burn["allocated_bytes"] // MIB), state)
    check("above this container's grant of 3000 MiB" in section(log, "told"),
          "the container was not told that its grant applies", state)


@case("tamper-vgpu-set")
def tamper_vgpu_set(ctx):
    """`vgpu set --memory 7g` inside a 2000 MiB pod is cut to the grant, says
    so, and the pod still gets 2000 MiB; lowering (1000 MiB) works."""
    script = ("echo '== set'; vgpu set --memory 7g 2>&1\n" + PROBE.replace("== done", "== high") +
              "vgpu set --memory 1000m 2>&1; echo '== low'\n"
              "vgpu-burn --alloc 16g --chunk 64m --json 2>&1 | tail -n 1\necho '== done'\n")
    log = run_pod(ctx, "tamper-set", {"nvidia.com/vgpu": "1", "nvidia.com/gpumem": "2000"},
                  script=script)
    state = kube.pod_summary("tamper-set", NS) + "\nlog:\n" + log
    delete_pods(ctx)
    check("above this container's grant" in section(log, "set"),
          "vgpu set did not say the grant applies", state)
    high = probe_json(log, "burn")
    low = json.loads(section(log, "low").splitlines()[-1])
    check(0 < high["allocated_bytes"] <= 2000 * MIB,
          "got %d MiB after vgpu set 7g in a 2000 MiB pod" % (high["allocated_bytes"] // MIB), state)
    check(0 < low["allocated_bytes"] <= 1000 * MIB,
          "lowering to 1000 MiB gave %d MiB" % (low["allocated_bytes"] // MIB), state)


@case("tamper-region-write")
def tamper_region_write(ctx):
    """A container that zeroes its region's limit and charge, points libvgpu
    at a region of its own and asks for 10g still gets at most its 2000 MiB
    grant; the grant itself cannot be written."""
    zero = "head -c 8 /dev/zero | dd of=/usr/local/vgpu/region.cache bs=1 seek=%d conv=notrunc 2>/dev/null\n"
    script = ("echo '== grant'; cat /usr/local/vgpu/grant/grant 2>&1\n"
              "echo '== write'; (echo 'gpu x' > /usr/local/vgpu/grant/grant) 2>&1; "
              "rm -f /usr/local/vgpu/grant/grant 2>&1; ls /usr/local/vgpu/grant 2>&1\n"
              "echo '== burn'\n" +
              zero % REGION_DEV0_MEM_LIMIT + zero % REGION_DEV0_MEM_USED +
              "CUDA_DEVICE_MEMORY_LIMIT=10g CUDA_DEVICE_MEMORY_SHARED_CACHE=/tmp/mine.cache "
              "vgpu-burn --alloc 16g --chunk 64m --json 2>&1 | tail -n 1\n"
              "echo '== done'\n")
    log = run_pod(ctx, "tamper-region", {"nvidia.com/vgpu": "1", "nvidia.com/gpumem": "2000"},
                  script=script)
    state = kube.pod_summary("tamper-region", NS) + "\nlog:\n" + log
    delete_pods(ctx)
    check(re.search(r"^gpu GPU-\S+ memory %d cores 0" % (2000 * MIB), section(log, "grant"), re.M),
          "the container cannot read its grant", state)
    check("Read-only file system" in section(log, "write") and
          "grant" in section(log, "write").splitlines()[-1],
          "the grant could be written or removed", state)
    burn = probe_json(log, "burn")
    check(0 < burn["allocated_bytes"] <= 2000 * MIB,
          "got %d MiB after rewriting the region" % (burn["allocated_bytes"] // MIB), state)


# The region's mutex follows its 32-byte header (src/common/region.h); in it,
# glibc's lock word is at +0 and the owner's TID at +8.
REGION_LOCK_WORD = 32
REGION_LOCK_OWNER = 40
# "Locked by PID 1", as a tenant's dd writes it: nobody ever took that lock.
FORGE_LOCK = "".join(
    "printf '\\001\\000\\000\\000' | dd of=/usr/local/vgpu/region.cache bs=1 seek=%d "
    "conv=notrunc 2>/dev/null\n" % off for off in (REGION_LOCK_WORD, REGION_LOCK_OWNER))
HOST_TARGET = os.path.join(install.STATE_DIR, "e2e-host-target")  # a file the agent can see
HOSTILE = {
    # Forges the owner of its region's lock.
    "forger": FORGE_LOCK + "echo '== done'\n",
    # Holds flock on its region for ever; a new process then tries GPU work.
    "flocker": ("(flock /usr/local/vgpu/region.cache sleep 100000 &)\nsleep 1\n"
                "echo '== burn'; vgpu-burn --alloc 3g --chunk 64m --json 2>&1 | tail -n 3\n"
                "echo '== done'\n"),
    # Tries to replace its region with a link to a file of the node's, and to
    # leave a file in its slot: the slot is read-only, the region a mount point.
    "linker": ("echo '== link'; ln -sf %s /usr/local/vgpu/region.cache 2>&1; "
               "ls -l /usr/local/vgpu/region.cache 2>&1\n"
               "echo '== junk'; (echo junk > /usr/local/vgpu/junk) 2>&1; "
               "ls /usr/local/vgpu 2>&1\n"
               "echo '== done'\n" % HOST_TARGET),
}

REFUSED = ("Read-only file system", "Device or resource busy")


def untrusted_total(ctx):
    return sum(metric_value(x) for x in metric_lines(ctx, "vgpu_untrusted_regions_total"))


def admitted_and_bound(ctx, name, memory=1000):
    """A vgpu pod that starts and whose limit holds: the binder reached it."""
    log = run_pod(ctx, name, {"nvidia.com/vgpu": "1", "nvidia.com/gpumem": str(memory)})
    burn = probe_json(log, "burn")
    check(0 < burn["allocated_bytes"] <= memory * MIB,
          "%s: allocated %d MiB under a %d MiB limit" % (name, burn["allocated_bytes"] // MIB,
                                                        memory),
          kube.pod_summary(name, NS) + "\nlog:\n" + log)


@case("hostile-tenants")
def hostile_tenants(ctx):
    """Three tenants attack their own region file: one forges its lock's owner,
    one holds flock on it for ever, one tries to swap it for a link to a node
    file and to leave junk in its slot (both refused: the slot is mounted
    read-only, the region is a mount point). Each hurts only itself: a
    neighbour GPU pod and a plain pod still start, the neighbour is bound and
    resized within 10 s, a resize of the forger is refused instead of hanging,
    the node agent restarts and binds again, the node file is untouched, the
    forger and the flock holder are reported (Events RegionUntrusted,
    vgpu_untrusted_regions_total),
    and the flock holder's own GPU work is refused rather than run
    unlimited."""
    with open(HOST_TARGET, "w") as f:
        f.write("node data\n")
    before = os.stat(HOST_TARGET)
    counted = untrusted_total(ctx)
    try:
        logs = {}
        for name, script in HOSTILE.items():
            kube.apply(pod_spec(name, {"nvidia.com/vgpu": "1", "nvidia.com/gpumem": "1000"},
                                script=script))
            ctx.created.append(name)
        for name in HOSTILE:
            kube.wait_running(name, NS)
            logs[name] = kube.wait_log(name, NS, "== done", timeout=120)
        link, junk = section(logs["linker"], "link"), section(logs["linker"], "junk")
        # busybox's ln -sf says "File exists" when it cannot unlink a mount point.
        check("->" not in link and link.splitlines()[-1].startswith("-rw"),
              "the region could be replaced by a link:\n" + link, kube.pod_summary("linker", NS))
        check(any(w in junk for w in REFUSED) and "\njunk" not in "\n" + junk,
              "a file could be left in the slot:\n" + junk, kube.pod_summary("linker", NS))
        burn = section(logs["flocker"], "burn")
        check("flock" in burn and not re.search(r'"allocated_bytes":[1-9]', burn),
              "the flock holder's new process was not refused with the flock named:\n" + burn,
              kube.pod_summary("flocker", NS))
        start = time.monotonic()
        admitted_and_bound(ctx, "neighbour")
        out = kubectl_vgpu(ctx, "resize", "neighbour", "-n", NS, "--memory", "1500m")
        check(out.returncode == 0 and out.seconds < 10,
              "resizing the neighbour: rc %d in %.1f s\n%s%s" % (
                  out.returncode, out.seconds, out.stdout, out.stderr),
              kube.pod_summary("neighbour", NS))
        print("    neighbour bound in %.1f s, resized in %.1f s" % (
            time.monotonic() - start - out.seconds, out.seconds), flush=True)
        kube.apply(pod_spec("plain", {"cpu": "100m"}, script="echo '== done'", scheduler=None))
        ctx.created.append("plain")
        kube.wait_running("plain", NS, timeout=60)
        out = kubectl_vgpu(ctx, "resize", "forger", "-n", NS, "--memory", "1500m")
        check(out.returncode != 0 and out.seconds < 60,
              "resizing the forger: rc %d in %.1f s\n%s%s" % (
                  out.returncode, out.seconds, out.stdout, out.stderr),
              kube.pod_summary("forger", NS))
        print("    forger's resize refused in %.1f s: %s" % (
            out.seconds, out.stderr.strip().splitlines()[-1] if out.stderr.strip() else ""),
              flush=True)
        for name, words in (("forger", "held past the deadline"), ("flocker", "held its flock")):
            kube.wait_for("a RegionUntrusted Event on %s" % name, lambda: any(
                words in m for m in resize_events(name, "RegionUntrusted")), 30,
                state=lambda: kube.pod_summary(name, NS))
        kube.wait_for("vgpu_untrusted_regions_total up by 2",
                      lambda: untrusted_total(ctx) >= counted + 2, 30,
                      state=lambda: metric_lines(ctx, "vgpu_untrusted_regions_total"))
        ctx.agents.restart_plugin()
        admitted_and_bound(ctx, "after-hostile")
        after = os.stat(HOST_TARGET)
        with open(HOST_TARGET) as f:
            text = f.read()
        check(text == "node data\n" and after.st_mtime == before.st_mtime and
              after.st_mode == before.st_mode,
              "the node file was changed: %r, mode %o" % (text[:40], after.st_mode))
        delete_pods(ctx)
    finally:
        os.unlink(HOST_TARGET)


@case("tamper-visible-devices")
def tamper_visible_devices(ctx):
    """NVIDIA_VISIBLE_DEVICES=all in the pod spec wins in the runtime (as in
    NVIDIA's toolkit), so both GPUs appear; libvgpu refuses the one the pod
    was not given and limits the other."""
    script = (PROBE + "echo '== other'; vgpu-burn --device 1 --alloc 1g --json 2>&1 | tail -n 3\n"
              "echo '== own'; vgpu-burn --device 0 --alloc 16g --chunk 64m --json 2>&1 | tail -n 1\n"
              "echo '== end'\n")
    name = "tamper-visible"
    kube.apply(pod_spec(name, {"nvidia.com/vgpu": "1", "nvidia.com/gpumem": "2000"}, script=script,
                        env={"NVIDIA_VISIBLE_DEVICES": "all"},
                        annotations={"vgpu.io/gpu-scheduler-policy": "spread"}))
    ctx.created.append(name)
    kube.wait_running(name, NS)
    log = kube.wait_log(name, NS, "== end")
    state = kube.pod_summary(name, NS) + "\nlog:\n" + log
    gpu = assigned_gpus(name)[0]
    check(probe_env(log).get("NVIDIA_VISIBLE_DEVICES") == "all", "the pod spec's value did not win",
          state)
    # Both GPUs are visible; which ordinal is ours depends on the assignment.
    own, other = ("own", "other") if gpu["index"] == 0 else ("other", "own")
    refused = section(log, other)
    check('"allocated_bytes":0' in refused or "failed" in refused or "CUDA_ERROR" in refused,
          "the GPU outside the assignment was usable", state)
    mine = json.loads(section(log, own).splitlines()[-1])
    check(mine["oom"] and mine["allocated_bytes"] <= 2000 * MIB,
          "the assigned GPU was not limited", state)
    delete_pods(ctx)


# The probe in the old image: its glibc first, no `vgpu status` (the CLI is built for this
# host's glibc; only vgpu-burn is in that image), and every line's stderr, where ld.so complains.
OLD_PROBE = 'echo "== glibc"; getconf GNU_LIBC_VERSION 2>&1\n' + "\n".join(
    line for line in PROBE.splitlines() if not line.startswith('echo "== status"'))


@case("old-userland-preload")
def old_userland_preload(ctx):
    """In an image with an old glibc (Debian bullseye's 2.31, as in UBI 8 or
    Ubuntu 20.04 CUDA images) ld.so loads libvgpu.so from /etc/ld.so.preload
    and the container's memory limit holds."""
    name = "old-userland"
    log = run_pod(ctx, name, {"nvidia.com/vgpu": "1", "nvidia.com/gpumem": "2000"},
                  script=OLD_PROBE, image=OLD_IMAGE)
    state = kube.pod_summary(name, NS) + "\nlog:\n" + log
    check(section(log, "glibc").startswith("glibc 2.31"), "the image's glibc is not 2.31", state)
    check("cannot be preloaded" not in log and "GLIBC_2." not in log,
          "ld.so refused libvgpu.so or the simulated driver", state)
    check_inside(name, log, 2000 * MIB)
    delete_pods(ctx)


@case("bypass-extender")
def bypass_extender(ctx):
    """A pod bound with spec.nodeName (no extender) is refused at admission
    with a reason saying what to do, takes no device, and the pods the
    extender places afterwards run."""
    name = "bypass"
    kube.apply(pod_spec(name, {"nvidia.com/vgpu": "1", "nvidia.com/gpumem": "2000"},
                        scheduler=None, node_name=ctx.node))
    ctx.created.append(name)
    kube.wait_phase(name, NS, ("Failed",), timeout=60)
    pod = kube.get("pod", name, NS)
    state = kube.pod_summary(name, NS)
    check("vgpu-scheduler" in (pod["status"].get("message") or ""),
          "the admission failure does not tell the user to use vgpu-scheduler", state)
    check(inspect_pod_memory(ctx, name) == 0, "inspect counts the refused pod", state)
    names = ["after-bypass-%d" % i for i in range(2)]
    for n in names:
        kube.apply(pod_spec(n, {"nvidia.com/vgpu": "1", "nvidia.com/gpumem": "1000"}))
        ctx.created.append(n)
    for n in names:
        kube.wait_running(n, NS)
    wait_capacity(ctx, {"nvidia.com/vgpu": 8})
    delete_pods(ctx)


MIXED_NODE = "mixed-foreign"
TOLERATE_ALL = [{"operator": "Exists"}]


def foreign_node(name, gpus):
    """A Node no kubelet stands behind, as NVIDIA's device plugin would
    leave one: plain nvidia.com/gpu in capacity and allocatable, no
    vgpu.io/gpu-inventory, Ready, no taints, no vgpu.io/gpu label (vgpu's
    DaemonSet stays off it)."""
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    have = {"cpu": "8", "memory": "32Gi", "pods": "110", "nvidia.com/gpu": str(gpus)}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {"capacity": have, "allocatable": have,
                       "conditions": [{"type": "Ready", "status": "True", "reason": "E2EMixed",
                                       "lastHeartbeatTime": now, "lastTransitionTime": now}]}}


def mixed_pod(name, limits, node=None):
    """A pod tolerating every taint (the node lifecycle controller taints the
    kubelet-less Node unreachable after 40 s); node: pinned there by
    nodeSelector."""
    pod = pod_spec(name, limits)
    pod["spec"]["tolerations"] = TOLERATE_ALL
    if node:
        pod["spec"]["nodeSelector"] = {"kubernetes.io/hostname": node}
    return pod


def bound_node(name):
    pod = kube.get("pod", name, NS)
    return pod and pod["spec"].get("nodeName")


def has_assignment(name):
    pod = kube.get("pod", name, NS)
    return "vgpu.io/assigned" in (pod["metadata"].get("annotations") or {})


@case("mixed-cluster")
def mixed_cluster(ctx):
    """A mixed cluster (issue 29): beside vgpu's node, a GPU node served by
    another device plugin -- a second Node object advertising plain
    nvidia.com/gpu: 2, no vgpu.io/gpu-inventory, no kubelet behind it.
    vgpu-scheduler (--foreign-gpu-nodes allow, the default) places a pod
    asking only nvidia.com/gpu: 1 there when it is pinned there by
    nodeSelector: bound by a plain Binding, no vgpu.io/assigned (the other
    plugin allocates). Unpinned, the same pod goes to vgpu's node, which
    ranks above every foreign one. A pod asking 2 more than the node has
    left (1 of 2: the first pod's request counts) and a pod asking
    nvidia.com/gpumem are not placed there, and their events say why. The
    pods tolerate every taint: the node lifecycle controller taints a Node
    without heartbeats after 40 s. The pods are force-deleted (no kubelet
    confirms a deletion there) and the Node deleted, also on failure."""
    kube.kubectl("create", "-f", "-", stdin=json.dumps(foreign_node(MIXED_NODE, 2)))
    names = ["mixed-plain", "mixed-prefer", "mixed-two", "mixed-gpumem"]
    try:
        kube.apply(mixed_pod("mixed-plain", {"nvidia.com/gpu": "1"}, MIXED_NODE))
        node = kube.wait_for("mixed-plain bound", lambda: bound_node("mixed-plain"), 60,
                             state=lambda: kube.pod_summary("mixed-plain", NS))
        state = kube.pod_summary("mixed-plain", NS)
        check(node == MIXED_NODE, "mixed-plain bound to %s, not %s" % (node, MIXED_NODE), state)
        check(not has_assignment("mixed-plain"),
              "a pod on another plugin's node carries vgpu.io/assigned", state)
        kube.apply(mixed_pod("mixed-prefer", {"nvidia.com/gpu": "1"}))
        ctx.created.append("mixed-prefer")
        node = kube.wait_for("mixed-prefer bound", lambda: bound_node("mixed-prefer"), 60,
                             state=lambda: kube.pod_summary("mixed-prefer", NS))
        state = kube.pod_summary("mixed-prefer", NS)
        check(node == ctx.node, "mixed-prefer went to %s, not vgpu's node %s" % (node, ctx.node),
              state)
        check(has_assignment("mixed-prefer"), "mixed-prefer has no vgpu.io/assigned", state)
        for name, limits, word in (
                ("mixed-two", {"nvidia.com/gpu": "2"},
                 "the pod asks for 2 nvidia.com/gpu, 1 of the node's 2 are not yet requested"),
                ("mixed-gpumem", {"nvidia.com/gpu": "1", "nvidia.com/gpumem": "1000"},
                 "which only nodes running vgpu-device-plugin serve")):
            kube.apply(mixed_pod(name, limits, MIXED_NODE))
            msgs = kube.wait_for("a FailedScheduling reason for %s" % name,
                                 lambda: [m for m in refusal_events(name) if word in m], 60,
                                 state=lambda: kube.pod_summary(name, NS))
            state = kube.pod_summary(name, NS)
            print("    %s: %s" % (name, msgs[0]), flush=True)
            check(not bound_node(name), "%s was bound" % name, state)
    finally:
        # mixed-prefer runs on the real node: deleted as usual, its devices released.
        unreal = [n for n in names if n != "mixed-prefer"]
        kube.kubectl("delete", "pod", "-n", NS, "--ignore-not-found", "--grace-period=0",
                     "--force", *unreal, check=False)
        kube.kubectl("delete", "node", MIXED_NODE, "--ignore-not-found", check=False)
        delete_pods(ctx, ["mixed-prefer"])
        kube.wait_for("the case's Node and pods to go", lambda: not kube.get(
            "node", MIXED_NODE) and not any(kube.get("pod", n, NS) for n in unreal), 120)


@case("health-xid")
def health_xid(ctx):
    """An XID 79 on GPU 1: allocatable drops by GPU 1's IDs, the inventory
    says why, nothing new lands on it; once the fault is gone and the
    operator says so (SIGUSR1: XID marks are sticky), everything returns."""
    ctx.sim("fault", "--device", "1", "--xid", "79")
    try:
        wait_capacity(ctx, {"nvidia.com/vgpu": 4})
        gpu1 = [g for g in inventory(ctx)["gpus"] if g["index"] == 1][0]
        check(gpu1.get("health") == "Unhealthy" and "79" in (gpu1.get("reason") or ""),
              "the inventory does not say why GPU 1 is unhealthy", json.dumps(gpu1))
        names = ["sick-%d" % i for i in range(2)]
        for n in names:
            kube.apply(pod_spec(n, {"nvidia.com/vgpu": "1", "nvidia.com/gpumem": "1000"},
                                annotations={"vgpu.io/gpu-scheduler-policy": "spread"}))
            ctx.created.append(n)
        for n in names:
            kube.wait_running(n, NS)
            check(all(g["index"] == 0 for g in assigned_gpus(n)), "a pod was placed on the failed "
                  "GPU", kube.pod_summary(n, NS))
        delete_pods(ctx)
    finally:
        ctx.sim("fault", "--device", "1", "--clear")
        ctx.agents.signal_plugin(signal.SIGUSR1)
    wait_capacity(ctx, {"nvidia.com/vgpu": 8})
    gpu1 = [g for g in inventory(ctx)["gpus"] if g["index"] == 1][0]
    check(gpu1.get("health") == "Healthy", "GPU 1 did not recover", json.dumps(gpu1))


def survives_restart(ctx, tag, restart, want, timeout):
    """A pod runs, RESTART() happens, allocatable returns to WANT, the pod is
    still running and a new pod is admitted."""
    survivor = "%s-survivor" % tag
    run_pod(ctx, survivor, {"nvidia.com/vgpu": "1", "nvidia.com/gpumem": "1000"})
    restart()
    wait_capacity(ctx, want, timeout)
    check(kube.pod_phase(survivor, NS) == "Running", "the running pod did not survive",
          kube.pod_summary(survivor, NS))
    run_pod(ctx, "after-%s-restart" % tag, {"nvidia.com/vgpu": "1", "nvidia.com/gpumem": "1000"})
    delete_pods(ctx)


@case("plugin-restart")
def plugin_restart(ctx):
    """The plugin stops and starts again: a running pod keeps running, the
    resources come back, a new pod is admitted."""
    survives_restart(ctx, "plugin", ctx.agents.restart_plugin, {"nvidia.com/vgpu": 8, "nvidia.com/gpu": 4}, 90)


@case("kubelet-restart")
def kubelet_restart(ctx):
    """The kubelet restarts (its device-plugin dir is wiped of our sockets'
    registrations): the plugin registers again, capacity returns, a running
    pod keeps its GPU, a new pod is admitted."""
    cluster = os.path.join(install.ROOT, "scripts", "e2e", "cluster.sh")
    survives_restart(ctx, "kubelet", lambda: subprocess.run(
        ["bash", cluster, "restart-kubelet"], check=True, timeout=240),
        {"nvidia.com/vgpu": 8, "aliyun.com/gpu-mem": 16384}, 120)


@case("cleanup-after-delete")
def cleanup_after_delete(ctx):
    """Deleting a pod removes its slot directory, its metrics series and its
    share in inspect and in the GPU's allocated memory."""
    slots = install.SLOTS_DIR
    start = time.time()
    run_pod(ctx, "doomed", {"nvidia.com/vgpu": "1", "nvidia.com/gpumem": "1500"})
    # Allocate stamps the slot it hands out (the same device IDs reuse a slot,
    # so a slot that existed before may be this pod's).
    mine = {d for d in os.listdir(slots) if os.stat(os.path.join(slots, d)).st_mtime >= start - 1}
    check(len(mine) == 1, "expected one slot directory allocated now, got %s" % sorted(mine))
    kube.wait_for("doomed's metrics series", lambda: metric_lines(
        ctx, "vgpu_container_memory_limit_bytes", pod="doomed"), 30)
    delete_pods(ctx, ["doomed"])
    kube.wait_for("doomed's slot directory to go", lambda: not (mine & set(os.listdir(slots))),
                  150, state=lambda: sorted(os.listdir(slots)))
    kube.wait_for("doomed's metrics series to go", lambda: not metric_lines(
        ctx, "vgpu_container_memory_limit_bytes", pod="doomed"), 60,
        state=lambda: metric_lines(ctx, "vgpu_container_memory_limit_bytes"))
    check(inspect_pod_memory(ctx, "doomed") == 0, "inspect still counts the deleted pod")
    for line in metric_lines(ctx, "vgpu_gpu_memory_allocated_bytes"):
        check(metric_value(line) == 0, "memory still allocated after every pod left: " + line)


@case("metrics-coherent")
def metrics_coherent(ctx):
    """With pods on both GPUs, no GPU reports more memory allocated than it
    has, and each GPU's allocated memory is the sum of its containers' limits."""
    for i in range(3):
        n = "m-%d" % i
        kube.apply(pod_spec(n, {"nvidia.com/vgpu": "1", "nvidia.com/gpumem": "2500"},
                            annotations={"vgpu.io/gpu-scheduler-policy": "spread"}))
        ctx.created.append(n)
    for i in range(3):
        kube.wait_running("m-%d" % i, NS)
    time.sleep(2)
    for line in metric_lines(ctx, "vgpu_gpu_memory_allocated_bytes"):
        uuid = re.search(r'uuid="([^"]+)"', line).group(1)
        limits = sum(metric_value(x) for x in metric_lines(
            ctx, "vgpu_container_memory_limit_bytes", uuid=uuid))
        check(metric_value(line) <= GPU_MEMORY, "more allocated than the GPU has: " + line)
        check(metric_value(line) == limits, "allocated %s != sum of limits %s" % (line, limits))
    delete_pods(ctx)


# ---------------------------------------------------------------- live resize

# One process allocating to its limit every half second, printing a JSON line
# per round: what a running workload sees of a resize (docs/resize.md).
ROUNDS = ("echo '== done'\n"
          "exec vgpu-burn --alloc 16g --chunk 64m --rounds 100000 --interval 0.5 --json\n")


def user_env(ctx):
    """The environment of a user with vgpu's kubectl plugins on PATH."""
    return dict(os.environ, PATH=os.path.join(ctx.build, "bin") + ":" + os.environ["PATH"])


def kubectl_vgpu(ctx, *args):
    """`kubectl vgpu ...` as a user runs it: kubectl finds the plugin on PATH.
    The result has .seconds, how long the command took."""
    env = user_env(ctx)
    start = time.monotonic()
    out = subprocess.run(["kubectl", "vgpu", *args], env=env, capture_output=True, text=True,
                         timeout=120)
    out.seconds = time.monotonic() - start
    return out


def rounds(name):
    return [json.loads(line) for line in kube.pod_log(name, NS).splitlines()
            if line.startswith("{")]


def wait_round(name, after, memory, what):
    """A round past the first `after` in which the process could take
    `memory` (within a 64 MiB chunk) and its device showed that much."""
    def seen():
        for r in rounds(name)[after:]:
            if (memory - 64 * MIB < r["allocated_bytes"] <= memory and
                    r["device_total"] == memory):
                return r
        return None
    return kube.wait_for(what, seen, 60, state=lambda: kube.pod_summary(name, NS) + "\nrounds:\n" +
                         "\n".join("%d MiB of %d MiB" % (r["allocated_bytes"] // MIB,
                                                         r["device_total"] // MIB)
                                    for r in rounds(name)[-5:]))


def started(name):
    st = kube.get("pod", name, NS)["status"]["containerStatuses"][0]
    return st["restartCount"], st["state"].get("running", {}).get("startedAt")


def resize_events(name, reason):
    return [e["message"] for e in kube.events(name, NS) if e.get("reason") == reason]


@case("resize-live")
def resize_live(ctx):
    """kubectl vgpu resize grows a running pod from 2000 MiB / 30 % to
    3000 MiB / 50 % and then shrinks it to 1000 MiB: the same process, never
    restarted, allocates to each new limit at its next round; the grant, vgpu
    status inside, vgpu.io/assigned, inspect, the metrics and an Event agree."""
    name = "rs-live"
    run_pod(ctx, name, {"nvidia.com/vgpu": "1", "nvidia.com/gpumem": "2000",
                        "nvidia.com/gpucores": "30"}, script=ROUNDS)
    wait_round(name, 0, 2000 * MIB, "a round at the 2000 MiB grant")
    before = started(name)
    out = kubectl_vgpu(ctx, "resize", name, "-n", NS, "--memory", "3000m", "--cores", "50")
    state = kube.pod_summary(name, NS)
    check(out.returncode == 0 and "3000 MiB" in out.stdout,
          "kubectl vgpu resize up: rc %d\n%s%s" % (out.returncode, out.stdout, out.stderr), state)
    print("    up:   %s (%.1f s)" % (out.stdout.strip(), out.seconds), flush=True)
    wait_round(name, len(rounds(name)), 3000 * MIB, "the running process at 3000 MiB")
    status = json.loads(kube.kubectl("exec", "-n", NS, name, "--", "vgpu", "status", "--json")
                        .strip().splitlines()[-1])
    dev = status["devices"][0]
    check(dev["grant_memory"] == 3000 * MIB and dev["grant_cores"] == 50 and
          dev["sm_limit"] == 50 and dev["mem_limit"] == 3000 * MIB,
          "vgpu status inside does not show the new grant: %s" % dev, state)
    gpu = assigned_gpus(name)[0]
    check(gpu["memory"] == 3000 * MIB and gpu["cores"] == 50,
          "vgpu.io/assigned was not updated: %s" % gpu, state)
    check(inspect_pod_memory(ctx, name) == 3000 * MIB, "inspect does not show 3000 MiB", state)
    kube.wait_for("the limit metric at 3000 MiB", lambda: any(
        metric_value(x) == 3000 * MIB for x in metric_lines(
            ctx, "vgpu_container_memory_limit_bytes", pod=name)), 30,
        state=lambda: metric_lines(ctx, "vgpu_container_memory_limit_bytes", pod=name))
    check(any("3000 MiB" in m for m in resize_events(name, "Resized")),
          "no Resized event", kube.pod_summary(name, NS))
    # Down: the process frees its memory between rounds, so the node finds it
    # below 1000 MiB unless it asks in the millisecond of a round's peak.
    for _ in range(3):
        out = kubectl_vgpu(ctx, "resize", name, "-n", NS, "--memory", "1000m")
        if out.returncode == 0 or "in use" not in out.stderr:
            break
    check(out.returncode == 0, "kubectl vgpu resize down: rc %d\n%s%s" % (
        out.returncode, out.stdout, out.stderr), kube.pod_summary(name, NS))
    print("    down: %s (%.1f s)" % (out.stdout.strip(), out.seconds), flush=True)
    wait_round(name, len(rounds(name)), 1000 * MIB, "the running process at 1000 MiB")
    check(started(name) == before, "the container restarted: %s then %s" % (before, started(name)))
    labels = kube.get("pod", name, NS)["metadata"].get("labels", {})
    check("vgpu.io/resize" not in labels, "the request was not closed: %s" % labels)
    delete_pods(ctx)


@case("resize-refused")
def resize_refused(ctx):
    """A resize past the GPU is refused by vgpu-scheduler and one below what
    the container holds by the node agent: each time kubectl vgpu resize
    exits 1 with the reason, the pod's Events carry it, and the grant and
    vgpu.io/assigned stay as they were."""
    name = "rs-hold"
    script = "echo '== done'\nexec vgpu-burn --alloc 1500m --chunk 64m --hold 900\n"
    run_pod(ctx, name, {"nvidia.com/vgpu": "1", "nvidia.com/gpumem": "2000"}, script=script)
    kube.wait_log(name, NS, "allocated 1572864000 bytes")
    state = kube.pod_summary(name, NS)
    out = kubectl_vgpu(ctx, "resize", name, "-n", NS, "--memory", "9000m")
    check(out.returncode == 1 and "refused" in out.stderr and "does not fit" in out.stderr,
          "growing past the GPU: rc %d\n%s%s" % (out.returncode, out.stdout, out.stderr), state)
    print("    " + out.stderr.strip(), flush=True)
    out = kubectl_vgpu(ctx, "resize", name, "-n", NS, "--memory", "1000m")
    check(out.returncode == 1 and "refused" in out.stderr and "in use" in out.stderr,
          "shrinking below what it holds: rc %d\n%s%s" % (out.returncode, out.stdout,
                                                          out.stderr), state)
    print("    " + out.stderr.strip(), flush=True)
    msgs = resize_events(name, "ResizeRefused")
    check(any("does not fit" in m for m in msgs) and any("in use" in m for m in msgs),
          "the refusals are not in the pod's events: %s" % msgs, kube.pod_summary(name, NS))
    check(assigned_gpus(name)[0]["memory"] == 2000 * MIB, "vgpu.io/assigned changed", state)
    grant = kube.kubectl("exec", "-n", NS, name, "--", "cat", "/usr/local/vgpu/grant/grant")
    check(re.search(r"^gpu GPU-\S+ memory %d " % (2000 * MIB), grant, re.M),
          "the grant changed:\n" + grant, state)
    delete_pods(ctx)


# ---------------------------------------------------------------- the backstop

# vgpu-burn through a loader that reads /tmp/no.so.preload instead of
# /etc/ld.so.preload (tests/e2e/run.sh builds it): libvgpu never loads.
BYPASS = ("echo '== done'\n"
          "exec ld-nopreload.so /opt/vgpu/bin/vgpu-burn --alloc 3g --chunk 64m --hold 900\n")


@case("backstop-unpreloaded")
def backstop_unpreloaded(ctx):
    """A process started through a loader that skips /etc/ld.so.preload runs
    without libvgpu and takes 3 GiB in a 1000 MiB pod (libvgpu cannot stop
    it); the node agent's backstop attributes NVML's memory to the container
    by its slot mount, sets vgpu_container_over_grant and records a Warning
    Event GPUMemoryOverGrant on the pod, which keeps running (policy report,
    the default). With --backstop-policy=evict patched into the DaemonSet and
    deploy/overlays/evict's grant applied (deploy/base grants no eviction) the
    pod is then evicted through the Eviction API (policy/v1beta1 on 1.20) and
    the Event says so; the option and the grant are removed again afterwards."""
    name = "bypass"
    run_pod(ctx, name, {"nvidia.com/vgpu": "1", "nvidia.com/gpumem": "1000"}, script=BYPASS)
    kube.wait_log(name, NS, "allocated 3221225472 bytes")  # nothing limited it

    def state():
        return kube.pod_summary(name, NS) + "\n" + "\n".join(
            metric_lines(ctx, "vgpu_container_gpu_memory_nvml_bytes", pod=name))

    def told(words):
        return [e["message"] for e in kube.events(name, NS)
                if e.get("reason") == "GPUMemoryOverGrant" and words in e["message"]]
    events = kube.wait_for("a GPUMemoryOverGrant event", lambda: told("above its grant"), 60,
                           state=state)
    print("    " + events[0], flush=True)
    check("above its grant of 1000 MiB" in events[0] and "container main" in events[0],
          "the event does not say what is over: %s" % events[0], state())
    over = metric_lines(ctx, "vgpu_container_over_grant", pod=name)
    check(over and metric_value(over[0]) == 1, "vgpu_container_over_grant is not 1: %s" % over,
          state())
    nvml = metric_lines(ctx, "vgpu_container_gpu_memory_nvml_bytes", pod=name)
    check(nvml and metric_value(nvml[0]) >= 3072 * MIB, "NVML's figure is not shown: %s" % nvml,
          state())
    check(kube.pod_phase(name, NS) == "Running", "policy report evicted the pod", state())
    evict_under_policy(ctx, name, told, 60,
                       state=lambda: state() + "\n" + ctx.agents.tail(install.PLUGIN))


def evict_under_policy(ctx, name, told, timeout, state, after=None):
    """With --backstop-policy=evict patched into the DaemonSet and
    deploy/overlays/evict's grant applied, pod `name` is evicted and an
    Event (told) says so; after() checks more before the pods are deleted.
    The option and the grant are removed again whatever happened."""
    kube.kubectl("apply", "-f", EVICT_RBAC)
    ctx.agents.plugin_flag("--backstop-policy=evict", True)
    try:
        def evicted():
            pod = kube.get("pod", name, NS)
            return pod is None or pod["metadata"].get("deletionTimestamp") is not None
        kube.wait_for("pod %s evicted" % name, evicted, timeout, state=state)
        check(told("evicting the pod"), "no event says the pod is evicted: %s" % told(""))
        if after is not None:
            after()
        delete_pods(ctx)
    finally:
        ctx.agents.plugin_flag("--backstop-policy=evict", False)
        kube.kubectl("delete", "-f", EVICT_RBAC, "--ignore-not-found")


# The same loader, vgpu-burn running kernels back to back: nothing throttles them.
BYPASS_SM = ("echo '== done'\n"
             "exec ld-nopreload.so /opt/vgpu/bin/vgpu-burn --seconds 900\n")


@case("backstop-compute")
def backstop_compute(ctx):
    """A process started through the loader that skips /etc/ld.so.preload runs
    kernels without libvgpu in a pod granted 30 % of the GPU's compute, and
    uses the whole GPU; the node agent's backstop sums NVML's per-process
    utilisation per container, and once every pass for --compute-sustain
    (30 s) said it was above 30 % + --compute-tolerance (10 points) it sets
    vgpu_container_compute_over_grant and records a Warning Event
    GPUComputeOverGrant on the pod naming the container, the share, the grant
    and how long, once; the pod keeps running (policy report). A neighbour
    granted the same 30 % running the same vgpu-burn under libvgpu is held to
    its share and never reported. With --backstop-policy=evict and
    deploy/overlays/evict's grant the bypassing pod is then evicted and the
    Event says so; the neighbour stays."""
    name, neighbour = "bypass-sm", "limited-sm"
    limits = {"nvidia.com/vgpu": "1", "nvidia.com/gpumem": "1000", "nvidia.com/gpucores": "30"}
    run_pod(ctx, name, limits, script=BYPASS_SM)
    run_pod(ctx, neighbour, limits,
            script="echo '== done'\nexec vgpu-burn --seconds 900\n")

    def state():
        return kube.pod_summary(name, NS) + "\n" + "\n".join(
            metric_lines(ctx, "vgpu_container_gpu_sm_nvml_ratio") +
            metric_lines(ctx, "vgpu_container_compute_over_grant") +
            metric_lines(ctx, "vgpu_gpu_compute_judged")) + "\n" + ctx.agents.tail(install.PLUGIN)

    def told(words, pod=name):
        return [e["message"] for e in kube.events(pod, NS)
                if e.get("reason") == "GPUComputeOverGrant" and words in e["message"]]
    # 30 s sustained, passes every 10 s, NVML's first sample: a minute and a half at most.
    events = kube.wait_for("a GPUComputeOverGrant event", lambda: told("above its compute grant"),
                           120, state=state)
    print("    " + events[0], flush=True)
    m = re.search(r"used (\d+) % of GPU .* for (\d+) s, above its compute grant of 30 %",
                  events[0])
    check(m and int(m.group(1)) > 40 and int(m.group(2)) >= 30 and
          "container main" in events[0], "the event does not say what is over: %s" % events[0],
          state())
    over = metric_lines(ctx, "vgpu_container_compute_over_grant", pod=name)
    check(over and metric_value(over[0]) == 1,
          "vgpu_container_compute_over_grant is not 1: %s" % over, state())
    sm = metric_lines(ctx, "vgpu_container_gpu_sm_nvml_ratio", pod=name)
    check(sm and metric_value(sm[0]) > 0.4, "NVML's share is not shown: %s" % sm, state())
    time.sleep(20)  # two more passes, still over: no second report
    check(len(told("above its compute grant")) == 1 and
          kube.pod_phase(name, NS) == "Running",
          "reported again, or policy report evicted the pod: %s" % told(""), state())
    held = metric_lines(ctx, "vgpu_container_compute_over_grant", pod=neighbour)
    check(not told("", neighbour) and all(metric_value(x) == 0 for x in held),
          "the neighbour under libvgpu was reported: %s" % told("", neighbour), state())

    def neighbour_stays():
        check(kube.pod_phase(neighbour, NS) == "Running" and not told("", neighbour),
              "the neighbour under libvgpu was evicted or reported", state())
    # A new agent: its own first reading, then 30 s sustained again.
    evict_under_policy(ctx, name, told, 120, state=state, after=neighbour_stays)


# ---------------------------------------------------------------- privileges

# deploy/overlays/evict's one grant beyond deploy/base: create pods/eviction for the node agent.
EVICT_RBAC = os.path.join(install.ROOT, "deploy", "overlays", "evict", "rbac-evict.yaml")


def can_i(row):
    """The real API server's answer to the row's question: "yes" or "no" (kubectl auth can-i
    exits 1 for no; anything else is an error)."""
    proc = subprocess.run(["kubectl"] + row.can_i(), capture_output=True, text=True, timeout=30)
    answer = proc.stdout.strip()
    if answer not in ("yes", "no"):
        raise E2EError("kubectl %s: exit %d, %s %s" % (" ".join(row.can_i()), proc.returncode,
                                                     answer, proc.stderr.strip()))
    return answer


def wrong_answers(rows, evict):
    """The rows whose answer differs from the table's, each with the answer; evict: whether
    deploy/overlays/evict's grant is applied (its rows then want yes)."""
    wrong = []
    for row in rows:
        want = "yes" if row.allowed == "yes" or (row.allowed == "evict overlay" and evict) else "no"
        got = can_i(row)
        if got != want:
            wrong.append("%s: the API server answers %s" % (row, got))
    return wrong


@case("least-privilege")
def least_privilege(ctx):
    """Every row of docs/install.md's Privileges table, asked of the real API
    server as `kubectl auth can-i VERB RESOURCE... --as
    system:serviceaccount:vgpu-system:WHO`: what vgpu's service accounts are
    granted (kube-scheduler's built-in roles included) and what they must be
    refused (the node agent's patch of Nodes and Pods, secrets); the evict
    overlay's rows are no as installed and yes with its grant applied."""
    rows = privileges.rows()
    wrong = wrong_answers(rows, evict=False)
    kube.kubectl("apply", "-f", EVICT_RBAC)
    try:
        evict_rows = [r for r in rows if r.allowed == "evict overlay"]
        check(evict_rows, "the table has no evict overlay rows")
        # RBAC changes reach the authorizer through its informer: a moment.
        kube.wait_for("the evict grant to take effect",
                      lambda: not wrong_answers(evict_rows[:1], evict=True), 30)
        wrong += ["with deploy/overlays/evict: " + w for w in wrong_answers(rows, evict=True)]
    finally:
        kube.kubectl("delete", "-f", EVICT_RBAC, "--ignore-not-found")
    print("    %d rows asked twice (without and with the evict overlay's grant)" % len(rows),
          flush=True)
    check(not wrong, "%d answers differ from docs/install.md:\n%s" % (len(wrong), "\n".join(wrong)))


# ---------------------------------------------------------------- admission

ORIGINAL = "vgpu.io/original-scheduler-name"


def create_refused(obj):
    """kubectl's error when the API server refuses to create OBJ, else None."""
    proc = subprocess.run(["kubectl", "create", "-f", "-"], input=json.dumps(obj),
                          capture_output=True, text=True, timeout=60)
    return proc.stderr.strip() if proc.returncode != 0 else None


@case("admission-routes")
def admission_routes(ctx):
    """The webhook on the real API server: a GPU pod naming no scheduler,
    default-scheduler or volcano is created with schedulerName vgpu-scheduler
    and the old name in vgpu.io/original-scheduler-name, and runs; one already
    naming vgpu-scheduler, and a pod without GPUs, are left as they are."""
    limits = {"nvidia.com/vgpu": "1", "nvidia.com/gpumem": "500"}
    for name, scheduler, original in (("route-none", None, "default-scheduler"),
                                      ("route-default", "default-scheduler", "default-scheduler"),
                                      ("route-volcano", "volcano", "volcano"),
                                      ("route-already", "vgpu-scheduler", None)):
        kube.apply(pod_spec(name, limits, scheduler=scheduler))
        ctx.created.append(name)
        pod = kube.get("pod", name, NS)
        state = kube.pod_summary(name, NS)
        check(pod["spec"]["schedulerName"] == "vgpu-scheduler", "not routed", state)
        check(pod["metadata"].get("annotations", {}).get(ORIGINAL) == original,
              "%s is not %s" % (ORIGINAL, original), state)
    kube.apply(pod_spec("route-cpu", {"cpu": "10m"}, scheduler=None))
    ctx.created.append("route-cpu")
    pod = kube.get("pod", "route-cpu", NS)
    check(pod["spec"]["schedulerName"] == "default-scheduler" and
          ORIGINAL not in pod["metadata"].get("annotations", {}),
          "a pod without GPUs was changed", kube.pod_summary("route-cpu", NS))
    for name in ("route-none", "route-default", "route-volcano", "route-already"):
        kube.wait_running(name, NS)
        check(assigned_gpus(name), "no GPU assigned", kube.pod_summary(name, NS))
    delete_pods(ctx)


@case("admission-opt-out")
def admission_opt_out(ctx):
    """vgpu.io/scheduler: skip leaves the pod to the scheduler it names,
    unchanged."""
    spec = pod_spec("opt-out", {"nvidia.com/vgpu": "1"}, scheduler="other-scheduler",
                    annotations={"vgpu.io/scheduler": "skip"})
    kube.apply(spec)
    ctx.created.append("opt-out")
    pod = kube.get("pod", "opt-out", NS)
    check(pod["spec"]["schedulerName"] == "other-scheduler" and
          ORIGINAL not in pod["metadata"]["annotations"], "an opted-out pod was changed",
          kube.pod_summary("opt-out", NS))
    delete_pods(ctx)


@case("admission-refusals")
def admission_refusals(ctx):
    """A privileged container or an init container asking for a GPU is
    refused at creation, and kubectl shows the webhook's reason."""
    priv = pod_spec("refuse-privileged", {"nvidia.com/vgpu": "1"}, scheduler=None)
    priv["spec"]["containers"][0]["securityContext"] = {"privileged": True}
    init = pod_spec("refuse-init", {"cpu": "10m"}, scheduler=None)
    init["spec"]["initContainers"] = [{"name": "prepare", "image": IMAGE,
                                       "imagePullPolicy": "Never", "command": ["true"],
                                       "resources": {"limits": {"aliyun.com/gpu-mem": "1000"}}}]
    for obj, words in ((priv, ("privileged", '"main"', "nvidia.com/vgpu")),
                       (init, ("init container", '"prepare"', "aliyun.com/gpu-mem"))):
        err = create_refused(obj)
        name = obj["metadata"]["name"]
        if err is None:
            ctx.created.append(name)
        check(err is not None, "%s was created" % name)
        check("pods.vgpu.io" in err and all(w in err for w in words),
              "the refusal does not say why (%s): %s" % (", ".join(words), err))


@case("admission-assignment-guard")
def admission_assignment_guard(ctx):
    """vgpu.io/assigned, from which the node agent writes a container's grant,
    cannot be rewritten by the pod's owner (kubectl annotate is refused with
    the reason) nor brought along at creation; the scheduler's own binding
    still writes it, and other annotations still change."""
    name = "guarded"
    run_pod(ctx, name, {"nvidia.com/vgpu": "1", "nvidia.com/gpumem": "1000"})
    state = kube.pod_summary(name, NS)
    before = kube.get("pod", name, NS)["metadata"]["annotations"].get("vgpu.io/assigned")
    check(before, "the scheduler's binding wrote no vgpu.io/assigned", state)
    bigger = json.loads(before)
    for c in bigger["containers"]:
        for g in c["gpus"]:
            g["memory"] = 8000 * MIB
    bigger = json.dumps(bigger, separators=(",", ":"))
    proc = subprocess.run(["kubectl", "annotate", "pod", "-n", NS, name, "--overwrite",
                           "vgpu.io/assigned=" + bigger], capture_output=True, text=True, timeout=60)
    after = kube.get("pod", name, NS)["metadata"]["annotations"].get("vgpu.io/assigned")
    check(proc.returncode != 0 and "cannot be changed" in proc.stderr,
          "kubectl annotate vgpu.io/assigned was not refused with the reason: rc %d %s" %
          (proc.returncode, proc.stderr.strip()), state)
    check(after == before, "vgpu.io/assigned changed: %s" % after, state)
    kube.kubectl("annotate", "pod", "-n", NS, name, "note=hello")  # other updates pass
    preset = pod_spec("preset-assigned", {"nvidia.com/vgpu": "1", "nvidia.com/gpumem": "1000"},
                      annotations={"vgpu.io/assigned": bigger})
    err = create_refused(preset)
    if err is None:
        ctx.created.append("preset-assigned")
    check(err is not None and "cannot be created with it" in err,
          "a pod was created with its own vgpu.io/assigned: %s" % err, state)
    delete_pods(ctx)


def webhook_endpoints():
    ep = kube.get("endpoints", "vgpu-webhook", install.NS) or {}
    return [a for sub in ep.get("subsets") or [] for a in sub.get("addresses") or []]


@case("admission-webhook-down")
def admission_webhook_down(ctx):
    """What an outage of vgpu-webhook does, as docs/admission.md ("When
    vgpu-webhook is down") states it, on the real API server: with no replica,
    pods without GPU resources are created, updated and run as usual in
    `default` and in a new namespace; a GPU pod is created unrouted and the node
    agent refuses it with the reason (it never runs outside a slice); an update
    of a running GPU pod is refused by the guard (fail closed, GPU pods only);
    a GPU pod the default scheduler cannot place gets vgpu-scheduler's NotRouted
    Event saying why; once the webhook is back, GPU pods are routed and run."""
    gpu = {"nvidia.com/vgpu": "1", "nvidia.com/gpumem": "500"}
    run_pod(ctx, "before-outage", gpu, scheduler=None)
    labels = kube.get("pod", "before-outage", NS)["metadata"].get("labels", {})
    check(labels.get("vgpu.io/managed") == "true", "the route did not label the GPU pod: %s" % labels)
    other = "vgpu-e2e-outage"
    kube.kubectl("create", "namespace", other)
    scale = ["-n", install.NS, "scale", "deployment/vgpu-webhook"]
    kube.kubectl(*scale, "--replicas=0")
    try:
        # What the API server calls: the Service's ready endpoints (the pods' objects may
        # linger a minute on a 1.20 kubelet after their containers stopped).
        kube.wait_for("the webhook's endpoints to empty", lambda: not webhook_endpoints(), 90,
                      state=lambda: json.dumps(kube.get("endpoints", "vgpu-webhook", install.NS)))
        for ns in (NS, other):
            plain_pod_through_outage(ctx, ns)
        gpu_pod_through_outage(ctx)
        proc = subprocess.run(["kubectl", "label", "pod", "-n", NS, "before-outage", "touched=yes"],
                              capture_output=True, text=True, timeout=60)
        check(proc.returncode != 0 and "guard.vgpu.io" in proc.stderr,
              "an update of a GPU pod passed while its guard was down: rc %d %s" %
              (proc.returncode, proc.stderr.strip()))
    finally:
        kube.kubectl(*scale, "--replicas=2")
        kube.kubectl("-n", install.NS, "rollout", "status", "deployment/vgpu-webhook",
                     "--timeout=120s", timeout=140)
        kube.kubectl("delete", "namespace", other, "--wait=false")
    kube.kubectl("label", "pod", "-n", NS, "before-outage", "touched=yes")
    run_pod(ctx, "after-webhook", gpu, scheduler=None)
    delete_pods(ctx)


def webhook_configs():
    """vgpu's admission webhook configurations: (kind, name, its webhooks)."""
    out = []
    for kind in ("mutatingwebhookconfiguration", "validatingwebhookconfiguration"):
        items = json.loads(kube.kubectl("get", kind, "-o", "json"))["items"]
        out += [(kind, o["metadata"]["name"], o.get("webhooks") or [])
                for o in items if "vgpu" in o["metadata"]["name"]]
    return out


def set_failure_policies(policies):
    """{(kind, name): [policy per webhook]} applied by a JSON patch each."""
    for (kind, name), pols in policies.items():
        ops = [{"op": "replace", "path": "/webhooks/%d/failurePolicy" % i, "value": p}
               for i, p in enumerate(pols)]
        if ops:
            kube.kubectl("patch", kind, name, "--type", "json", "-p", json.dumps(ops))


class WebhookBypassed:
    """What a tenant meets during a webhook outage where the webhook is
    failurePolicy Ignore: no webhook pod, every vgpu webhook set to Ignore;
    both restored on exit."""

    def __enter__(self):
        self.saved = {(k, n): [w.get("failurePolicy", "Fail") for w in hooks]
                      for k, n, hooks in webhook_configs()}
        kube.kubectl("-n", install.NS, "scale", "deployment/vgpu-webhook", "--replicas=0")
        set_failure_policies({key: ["Ignore"] * len(p) for key, p in self.saved.items()})
        kube.wait_for("the webhook's endpoints to empty", lambda: not webhook_endpoints(), 90,
                      state=lambda: json.dumps(kube.get("endpoints", "vgpu-webhook", install.NS)))
        return self

    def __exit__(self, *exc):
        set_failure_policies(self.saved)
        kube.kubectl("-n", install.NS, "scale", "deployment/vgpu-webhook", "--replicas=2")
        kube.kubectl("-n", install.NS, "rollout", "status", "deployment/vgpu-webhook",
                     "--timeout=120s", timeout=140)
        return False


@case("assignment-mac-forged")
def assignment_mac_forged(ctx):
    """While the webhook is down and set to Ignore, a tenant creates pods with
    spec.nodeName and vgpu.io/assigned copied from a running vgpu pod (with
    its vgpu.io/assigned-mac, or raised to the whole GPU without one): the
    kubelet refuses them at admission with the node agent's reason (the MAC
    is bound to the pod's UID), the refusals are counted, no memory is
    granted, and the pod vgpu-scheduler placed keeps running with its
    limits."""
    src = "mac-source"
    log = run_pod(ctx, src, {"nvidia.com/vgpu": "1", "nvidia.com/gpumem": "1000"})
    check_inside(src, log, 1000 * MIB)
    ann = kube.get("pod", src, NS)["metadata"]["annotations"]
    state = kube.pod_summary(src, NS)
    check(ann.get("vgpu.io/assigned-mac", "").startswith("v1:"),
          "vgpu-scheduler's binding wrote no vgpu.io/assigned-mac", state)
    bigger = json.loads(ann["vgpu.io/assigned"])
    for c in bigger["containers"]:
        for g in c["gpus"]:
            g["memory"] = GPU_MEMORY
    forgeries = {
        "forged-copy": ({"vgpu.io/assigned": ann["vgpu.io/assigned"],
                         "vgpu.io/assigned-mac": ann["vgpu.io/assigned-mac"]},
                        "(vgpu.io/assigned-mac does not match)"),
        "forged-bigger": ({"vgpu.io/assigned": json.dumps(bigger, separators=(",", ":"))},
                          "(vgpu.io/assigned-mac missing)"),
    }

    def refused():
        lines = metric_lines(ctx, "vgpu_allocate_checks_total", result="refused")
        return sum(metric_value(line) for line in lines)
    before = refused()
    with WebhookBypassed():
        for name, (annotations, _) in forgeries.items():
            obj = pod_spec(name, {"nvidia.com/vgpu": "1", "nvidia.com/gpumem": "1000"},
                           scheduler=None, node_name=ctx.node, annotations=annotations)
            err = create_refused(obj)
            check(err is None, "the API server refused %s with the webhook bypassed: %s" %
                  (name, err))
            ctx.created.append(name)
    for name, (_, detail) in forgeries.items():
        kube.wait_phase(name, NS, ("Failed",), timeout=90)
        pod = kube.get("pod", name, NS)
        state = kube.pod_summary(name, NS)
        want = ("pod %s/%s carries a vgpu.io/assigned that vgpu-scheduler did not sign %s" %
                (NS, name, detail))
        check(want in (pod["status"].get("message") or ""),
              "the kubelet's refusal does not say %r" % want, state)
        check(inspect_pod_memory(ctx, name) == 0, "inspect counts the refused pod", state)
    check(refused() >= before + len(forgeries),
          "vgpu_allocate_checks_total{result=refused} did not count the forgeries")
    check(kube.pod_phase(src, NS) == "Running", "the placed pod stopped",
          kube.pod_summary(src, NS))
    check_inside(src, kube.wait_log(src, NS, "== done"), 1000 * MIB)
    run_pod(ctx, "mac-after", {"nvidia.com/vgpu": "1", "nvidia.com/gpumem": "500"})
    delete_pods(ctx)
def plain_pod_through_outage(ctx, ns):
    """A pod without GPU resources in ns is created, labelled, annotated and
    runs while no webhook replica answers."""
    spec = pod_spec("plain-outage", {"cpu": "10m"}, scheduler=None)
    spec["metadata"]["namespace"] = ns
    err = create_refused(spec)
    check(err is None, "a pod without GPUs was refused in %s while the webhook was down: %s" %
          (ns, err))
    if ns == NS:
        ctx.created.append("plain-outage")
    kube.kubectl("label", "pod", "-n", ns, "plain-outage", "touched=yes")
    kube.kubectl("annotate", "pod", "-n", ns, "plain-outage", "note=outage")
    kube.wait_running("plain-outage", ns)


def gpu_pod_through_outage(ctx):
    """A GPU pod created while no replica answers is not routed (the API
    server's failurePolicy Ignore), goes to the default scheduler, and the
    node agent refuses it at admission, saying what to do."""
    name = "gpu-outage"
    err = create_refused(pod_spec(name, {"nvidia.com/vgpu": "1"}, scheduler=None))
    check(err is None, "the GPU pod was refused at creation: %s" % err)
    ctx.created.append(name)
    pod = kube.get("pod", name, NS)
    check(pod["spec"]["schedulerName"] == "default-scheduler" and
          "vgpu.io/managed" not in pod["metadata"].get("labels", {}),
          "a pod was routed with no webhook replica", kube.pod_summary(name, NS))
    kube.wait_phase(name, NS, ("Failed",), timeout=90)
    pod = kube.get("pod", name, NS)
    message = pod["status"].get("message") or ""
    check("not placed by vgpu-scheduler" in message,
          "the node agent did not refuse the unrouted GPU pod with the reason: %s" % message,
          kube.pod_summary(name, NS))
    # What no node advertises to the default scheduler leaves the pod Pending; vgpu-scheduler's
    # pod watch says why on it.
    name = "gpumem-outage"
    kube.apply(pod_spec(name, {"nvidia.com/vgpu": "1", "nvidia.com/gpumem": "500"},
                        scheduler=None))
    ctx.created.append(name)

    def told():
        return [e.get("message", "") for e in kube.events(name, NS)
                if e.get("reason") == "NotRouted" and e.get("type") == "Warning"]
    kube.wait_for("the NotRouted Event on %s" % name, told, 60,
                  state=lambda: kube.pod_summary(name, NS))
    check("delete the pod and create it again" in told()[0] and
          kube.pod_phase(name, NS) == "Pending",
          "the NotRouted Event does not say what to do: %s" % told(), kube.pod_summary(name, NS))


# ---------------------------------------------------------------- the seeds

SEEDS = os.path.join(install.ROOT, "tests", "e2e", "seeds")
SEED_NS = "default"
SEED_IMAGES = ("docker.io/chrstnhntschl/gpu_burn:latest", "docker.io/cheyang/gpu-player:v2",
               "nvcr.io/nvidia/cuda:12.6.1-base-ubuntu22.04")


def seed_objects(name):
    with open(os.path.join(SEEDS, name)) as f:
        text = f.read()
    # Seed 004 says to replace its placeholder with your image; seed 003's is ours.
    return text.replace("<your_image_address>", SEED_IMAGES[2])


def deployment_pods(app):
    out = kube.kubectl("-n", SEED_NS, "get", "pods", "-l", "app=" + app, "-o", "json")
    return [p for p in json.loads(out)["items"] if not p["metadata"].get("deletionTimestamp")]


def wait_seed_pods(app, replicas):
    def running():
        pods = deployment_pods(app)
        ok = [p for p in pods if p["status"].get("phase") == "Running"]
        return ok if len(ok) == replicas else None
    return kube.wait_for("%d running pod(s) of Deployment %s" % (replicas, app), running, 150,
                         state=lambda: "\n".join(kube.pod_summary(p["metadata"]["name"], SEED_NS)
                                                 for p in deployment_pods(app)))


def delete_seeds(files):
    """Deletes the seeds' objects and waits until their pods' containers
    stopped (their devices are free); then removes the stopped pods'
    objects, so the next case's pods are not held back by them."""
    names = []
    for file in files:
        for doc in yaml.safe_load_all(seed_objects(file)):
            names += [p["metadata"]["name"] for p in deployment_pods(doc["metadata"]["name"])]
        kube.kubectl("delete", "-f", "-", "--wait=false", "--ignore-not-found",
                     stdin=seed_objects(file))
    for name in names:
        kube.wait_for("pod %s/%s to stop" % (SEED_NS, name),
                      lambda: kube.pod_stopped(name, SEED_NS), 120,
                      state=lambda: kube.pod_summary(name, SEED_NS))
    # Their containers stopped; the scheduler counts a pod until its object
    # goes, which a 1.20 kubelet can leave a minute (see delete_pods).
    if names:
        kube.kubectl("delete", "pod", "-n", SEED_NS, "--force", "--grace-period=0",
                     "--ignore-not-found", *names, check=False)


def seed_pod(app):
    """The one running pod of a seed's Deployment, checked to have been
    routed to vgpu-scheduler by the webhook (the seed sets no scheduler, or
    Volcano's)."""
    pod = wait_seed_pods(app, 1)[0]
    name = pod["metadata"]["name"]
    check(pod["spec"].get("schedulerName") == "vgpu-scheduler",
          "admission did not send the pod to vgpu-scheduler", kube.pod_summary(name, SEED_NS))
    return name


def user_kubectl(ctx, *args, stdin=None, timeout=120):
    """kubectl as the seed's reader runs it, with vgpu's kubectl plugins on
    PATH; its stdout and stderr together, as a terminal shows them."""
    proc = subprocess.run(["kubectl", *args], input=stdin, env=user_env(ctx),
                          capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise E2EError("kubectl %s: exit %d\n%s%s" % (" ".join(args), proc.returncode,
                                                      proc.stdout, proc.stderr))
    return proc.stderr + proc.stdout


def apply_seed(ctx, tr, file, shown):
    """`kubectl apply -f` of the seed's YAML as written; the Deployment is
    deleted when the case ends (run_case's cleanup does not know it)."""
    ctx.seed_files.append(file)
    return tr.shell("kubectl apply -f " + shown,
                    user_kubectl(ctx, "apply", "-f", "-", stdin=seed_objects(file)))


def session(ctx, tr, pod, typed, timeout=240):
    """`kubectl exec -it POD -- /bin/bash` and the lines the seed types in it
    (stdin instead of a terminal: -i without -t)."""
    out = user_kubectl(ctx, "exec", "-i", pod, "--", "/bin/bash", stdin="\n".join(typed) + "\n",
                       timeout=timeout)
    tr.shell("kubectl exec -it %s -- /bin/bash" % pod, "".join("# %s\n" % t for t in typed) + out)
    return out


def burn_rate(out):
    m = re.search(r"ran \d+ kernels in [\d.]+ s: ([\d.]+) kernels/s", out)
    if not m:
        raise E2EError("gpu_burn printed no rate:\n" + out)
    return float(m.group(1))


def burn_allocated(out):
    m = re.search(r"allocated (\d+) bytes", out)
    if not m:
        raise E2EError("gpu_burn printed no allocation:\n" + out)
    return int(m.group(1))


def status_json(pod):
    return json.loads(kube.kubectl("exec", "-n", SEED_NS, pod, "--", "vgpu", "status", "--json")
                      .strip().splitlines()[-1])


@case("seed-000-dynamic")
def seed_000(ctx):
    """Seeds 000/001 (HAMi) as written: the Deployment (200 MiB, cores 0),
    `export CUDA_DEVICE_SM_LIMIT=10` then `./gpu_burn 60` runs at a tenth of
    the GPU, and `vgpu status` in the pod shows before and after; the
    memory step's 300m is held to the pod's 200 MiB grant (a tenant cannot
    raise its own limit, docs/security.md) and `kubectl vgpu resize` is how
    the 300 MiB is given."""
    tr = Transcript("seed-000-dynamic", "dynamic-allocation.md")
    tr.say("Create the seed's Deployment as written (200 MiB, compute unlimited)")
    apply_seed(ctx, tr, "000-vgpu.yaml", "gpu-burn-test.yaml")
    pod = seed_pod("gpu-burn-test")
    tr.ok("pod %s placed by vgpu-scheduler (the webhook routed it)" % pod)
    tr.say("Before: the pod's GPU resources, seen from inside (the seed's screenshot)")
    tr.shell("kubectl exec %s -- vgpu status" % pod,
             user_kubectl(ctx, "exec", pod, "--", "vgpu", "status"))
    dev = status_json(pod)["devices"][0]
    check(dev["mem_limit"] == 200 * MIB and dev["sm_limit"] in (0, 100),
          "before: limits are not 200 MiB and unlimited: %s" % dev)
    tr.ok("memory limit 200 MiB, compute unlimited")
    tr.say("gpu_burn with no compute limit, for comparison (not a step of the seed)")
    full = burn_rate(session(ctx, tr, pod, ["./gpu_burn 10"]))
    tr.say("Dynamic allocation of compute power: the seed's steps")
    limited = burn_rate(session(ctx, tr, pod, ["export CUDA_DEVICE_SM_LIMIT=10",
                                               "./gpu_burn 60"]))
    ratio = limited / full
    check(0.05 <= ratio <= 0.15, "at CUDA_DEVICE_SM_LIMIT=10 gpu_burn ran at %.1f %% of its "
          "unlimited rate" % (100 * ratio))
    tr.ok("throughput at 10 %% = %.0f %% of unlimited" % (100 * ratio))
    tr.say("After: the container's compute limit is now 10 %")
    tr.shell("kubectl exec %s -- vgpu status" % pod,
             user_kubectl(ctx, "exec", pod, "--", "vgpu", "status"))
    dev = status_json(pod)["devices"][0]
    check(round(dev["sm_limit"]) == 10, "after: SM limit %s, not 10" % dev["sm_limit"])
    tr.ok("SM limit 10 %")
    tr.say("Dynamic allocation of memory: the seed's steps (300m in a 200 MiB pod)")
    out = session(ctx, tr, pod, ["export CUDA_DEVICE_MEMORY_LIMIT_0=300m",
                                 "export CUDA_DEVICE_MEMORY_SHARED_CACHE=/usr/local/vgpu/d.cache",
                                 "./gpu_burn 60"])
    got = burn_allocated(out)
    check(got <= 200 * MIB and "above this container's grant" in out,
          "the tenant raised its own memory limit to %d bytes:\n%s" % (got, out))
    tr.ok("the pod's grant holds: %d MiB, and the program is told why" % (got // MIB))
    tr.say("Raising memory is the operator's: kubectl vgpu resize, no restart")
    tr.shell("kubectl vgpu resize %s --memory 300Mi" % pod,
             user_kubectl(ctx, "vgpu", "resize", pod, "--memory", "300Mi"))
    out = session(ctx, tr, pod, ["./gpu_burn 1"])
    got = burn_allocated(out)
    check(200 * MIB < got <= 300 * MIB, "after the resize gpu_burn got %d bytes" % got)
    tr.ok("gpu_burn now gets %d MiB" % (got // MIB))
    tr.finish()


def node_ip(ctx):
    for a in kube.node(ctx.node)["status"].get("addresses", []):
        if a["type"] == "InternalIP":
            return a["address"]
    return "unknown"


def aliyun_summary(nodes, unit):
    """Aliyun's `kubectl inspect gpushare` table for NODES [(name, ip,
    [(allocated, total) per GPU])], built here from its rules (Go's
    tabwriter, two spaces; the dash line: the first row's cells joined by
    tabs, plus 41), independently of vgpu's renderer; aliyun_table_rules
    checks these rules give seed 002's text for seed 002's cluster."""
    ngpus = max(len(g) for _, _, g in nodes)
    rows = [["NAME", "IPADDRESS"] + ["GPU%d(Allocated %s/Total %s)" % (i, unit, unit)
                                     for i in range(ngpus)] + ["GPU Memory"]]
    used = total = 0
    for name, ip, gpus in nodes:
        gpus = gpus + [(0, 0)] * (ngpus - len(gpus))
        a, t = sum(g[0] for g in gpus), sum(g[1] for g in gpus)
        rows.append([name, ip] + ["%d/%d" % g for g in gpus] + ["%d/%d" % (a, t)])
        used, total = used + a, total + t
    widths = [max(len(r[c]) for r in rows) + 2 for c in range(len(rows[0]))]
    text = "".join("".join(c.ljust(w) for c, w in zip(r[:-1], widths)) + r[-1] + "\n"
                   for r in rows)
    text += "-" * (len("\t".join(rows[1])) + 41) + "\n"
    return text + "Allocated/Total GPU Memory In Cluster:\n%d/%d (%d%%)\n" % (
        used, total, used * 100 // total)


def aliyun_table_rules():
    with open(os.path.join(install.ROOT, "tests", "inspect", "golden", "gpushare-mib.txt")) as f:
        seed = f.read()
    mine = aliyun_summary([("i-2ze0gl97vw1", "192.168.0.72", [(7606, 7606)]),
                           ("i-2ze0gl97vw2", "192.168.0.73", [(3803, 7606)]),
                           ("i-2ze0gl97vw3", "192.168.0.71", [(7606, 7606)])], "MiB")
    check(mine == seed, "the e2e's Aliyun table rules do not give seed 002's table:\n" + mine)


def wait_only_holder(ctx, keep):
    """Waits until pod KEEP is the only one inspect counts on the node. The
    pods of earlier cases have stopped, but a 1.20 kubelet may leave their
    objects a minute, and inspect (as the scheduler) counts a pod until its
    object is gone; those are removed with --force, as an operator would."""
    def others():
        doc = inspect_json(ctx)
        held = {(p["namespace"], p["pod"]) for n in doc["nodes"] for g in n["gpus"]
                for p in g["pods"]}
        held |= {(u["namespace"], u["pod"]) for n in doc["nodes"] for u in n["unassigned"]}
        return sorted(h for h in held if h[1] != keep)

    def quiet():
        left = others()
        for ns, name in left:
            obj = kube.get("pod", name, ns)
            if obj and obj["metadata"].get("deletionTimestamp") and kube.pod_stopped(name, ns):
                kube.kubectl("delete", "pod", "-n", ns, name, "--force", "--grace-period=0",
                             "--ignore-not-found", check=False)
        return not left
    kube.wait_for("pod %s to be the only one holding GPU memory" % keep, quiet, 120,
                  state=lambda: "others: %s" % others())


def aliyun_annotations(ctx, tr, pod, want):
    """The ALIYUN_COM_GPU_MEM_* annotations Aliyun's extender and device plugin
    write, as the pod carries them: vgpu-scheduler's at bind, ASSIGNED "true"
    and a new ASSUME_TIME (Unix nanoseconds) from the node agent's Allocate."""
    tr.say("The pod annotations Aliyun's tools read")
    out = tr.shell("kubectl get pod %s -o yaml | grep ALIYUN_COM_GPU_MEM" % pod, "".join(
        line + "\n" for line in user_kubectl(ctx, "get", "pod", pod, "-o", "yaml").splitlines()
        if line.strip().startswith("ALIYUN_COM_GPU_MEM")))
    got = {k.strip(): v.strip().strip('"') for k, v in
           (line.split(":", 1) for line in out.splitlines())}
    stamp = got.pop("ALIYUN_COM_GPU_MEM_ASSUME_TIME", "")
    check(got == want, "pod annotations ALIYUN_COM_GPU_MEM_*: %s, not %s" % (got, want))
    created = kube.get("pod", pod, SEED_NS)["metadata"]["creationTimestamp"]
    born = calendar.timegm(time.strptime(created, "%Y-%m-%dT%H:%M:%SZ"))
    check(stamp.isdigit() and born - 1 <= int(stamp) / 1e9 <= time.time(),
          "ALIYUN_COM_GPU_MEM_ASSUME_TIME %r is not a time in Unix nanoseconds since the pod "
          "was created (%s)" % (stamp, created))
    tr.ok("GPU %s, pod %s MiB of the GPU's %s, assigned by the node agent at its Allocate"
          % (want["ALIYUN_COM_GPU_MEM_IDX"], want["ALIYUN_COM_GPU_MEM_POD"],
             want["ALIYUN_COM_GPU_MEM_DEV"]))


@case("seed-002-gpushare")
def seed_002(ctx):
    """Seed 002 (Aliyun gpushare) as written: the binpack-1 Deployment
    (aliyun.com/gpu-mem: 3803), `kubectl inspect gpushare` byte for byte in
    Aliyun's layout, the two ALIYUN_COM_GPU_MEM_* variables the seed lists,
    and (unlike gpushare) the 3803 MiB enforced."""
    aliyun_table_rules()
    tr = Transcript("seed-002-gpushare", "gpushare.md")
    tr.say("Request GPU sharing: the seed's Deployment as written")
    apply_seed(ctx, tr, "002-gpushare.yaml", "binpack-1.yaml")
    pod = seed_pod("binpack-1")
    tr.ok("pod %s placed by vgpu-scheduler (the webhook routed it)" % pod)
    gpu = [g["uuid"] for g in assigned_gpus(pod, SEED_NS)][0]
    inv = {g["uuid"]: g["index"] for g in json.loads(kube.node(ctx.node)["metadata"]
                                                     ["annotations"]["vgpu.io/gpu-inventory"])
           ["gpus"]}
    total = GPU_MEMORY // MIB
    gpus = [(3803 if inv[gpu] == i else 0, total) for i in range(len(inv))]
    wait_only_holder(ctx, pod)
    want = aliyun_summary([(ctx.node, node_ip(ctx), gpus)], "MiB")
    tr.say("Query the allocation status of the shared GPU")
    got = tr.shell("kubectl inspect gpushare", user_kubectl(ctx, "inspect", "gpushare"))
    check(got == want, "kubectl inspect gpushare is not Aliyun's table:\n--- want\n%s--- got\n%s"
          % (want, got))
    tr.ok("byte for byte Aliyun's layout (seed 002's header, columns and dash line)")
    tr.shell("kubectl inspect gpushare -d", user_kubectl(ctx, "inspect", "gpushare", "-d"))
    tr.say("The environment variables the seed lists")
    out = tr.shell("kubectl exec %s -- env | grep ALIYUN_COM_GPU_MEM" % pod, "".join(
        line + "\n" for line in sorted(user_kubectl(ctx, "exec", pod, "--", "env").splitlines())
        if line.startswith("ALIYUN_COM_GPU_MEM")))
    env = dict(line.split("=", 1) for line in out.splitlines())
    want = {"ALIYUN_COM_GPU_MEM_DEV": str(total), "ALIYUN_COM_GPU_MEM_CONTAINER": "3803",
            "ALIYUN_COM_GPU_MEM_IDX": str(inv[gpu]), "ALIYUN_COM_GPU_MEM_POD": "3803"}
    check(env == want, "ALIYUN_COM_GPU_MEM_*: %s, not %s" % (env, want))
    tr.ok("GPU memory of the device %d MiB, of the container 3803 MiB, of the pod 3803 MiB, "
          "on GPU %d" % (total, inv[gpu]))
    aliyun_annotations(ctx, tr, pod, {"ALIYUN_COM_GPU_MEM_IDX": str(inv[gpu]),
                                      "ALIYUN_COM_GPU_MEM_POD": "3803",
                                      "ALIYUN_COM_GPU_MEM_DEV": str(total),
                                      "ALIYUN_COM_GPU_MEM_ASSIGNED": "true"})
    tr.say("Isolation: the container cannot take more than its 3803 MiB")
    out = tr.shell("kubectl exec %s -- vgpu-burn --alloc 8g --chunk 16m" % pod,
                   user_kubectl(ctx, "exec", pod, "--", "vgpu-burn", "--alloc", "8g",
                                "--chunk", "16m"))
    got = burn_allocated(out)
    check(3803 * MIB - 16 * MIB <= got <= 3803 * MIB, "allocated %d bytes of 3803 MiB" % got)
    tr.ok("stopped at %d MiB" % (got // MIB))
    tr.finish()


@case("seed-003-time-slicing")
def seed_003(ctx):
    """Seed 003 (NVIDIA time-slicing) with vgpu's names: the device plugin's
    rollout restart, the seed's jq query answers "4" (two GPUs, replicas: 2),
    `kubectl logs -l` shows the time-slicing configuration, and the 4
    replicas of nvidia.com/gpu: 1 all run, none memory-limited, sharing the
    GPU's memory as the seed warns."""
    tr = Transcript("seed-003-time-slicing", "time-slicing.md")
    tr.say("Restart the device plugin to pick up the configuration")
    tr.shell("kubectl rollout restart daemonset/vgpu-device-plugin -n vgpu-system",
             user_kubectl(ctx, "rollout", "restart", "daemonset/vgpu-device-plugin", "-n",
                          "vgpu-system"))
    kube.kubectl("-n", install.NS, "rollout", "status", "daemonset/" + install.PLUGIN,
                 "--timeout=120s", timeout=140)
    kube.wait_for("the device plugin's /healthz", ctx.agents.plugin_healthy, 60,
                  state=lambda: ctx.agents.tail(install.PLUGIN))
    tr.say("Verify: the node reports 4 GPUs")
    query = "kubectl get nodes -o json | jq '.items[].status.allocatable | .\"nvidia.com/gpu\"'"
    def four():
        p = subprocess.run(["sh", "-c", query], env=user_env(ctx), capture_output=True, text=True,
                           timeout=60)
        return p.stdout if p.stdout.strip() == '"4"' else None
    tr.shell(query, kube.wait_for("the node to report 4 nvidia.com/gpu", four, 90,
                                  state=lambda: json.dumps(kube.node(ctx.node)["status"]
                                                           ["allocatable"])))
    tr.ok("4 = 2 GPUs x replicas: 2")
    tr.say("Check the device plugin's logs")
    logs = user_kubectl(ctx, "logs", "-n", "vgpu-system", "-l",
                        "app.kubernetes.io/name=vgpu-device-plugin")
    lines = [line for line in logs.splitlines() if "nvidia.com/gpu" in line]
    tr.shell("kubectl logs -n vgpu-system -l app.kubernetes.io/name=vgpu-device-plugin "
             "| grep nvidia.com/gpu", "\n".join(lines))
    check(lines, "the device plugin's log does not mention nvidia.com/gpu:\n" + logs)
    tr.ok("the plugin logged what it serves")
    tr.say("The seed's Deployment: 4 replicas of nvidia.com/gpu: 1")
    apply_seed(ctx, tr, "003-time-slicing.yaml", "gpu-test.yaml")
    pods = wait_seed_pods("gpu-test", 4)
    tr.shell("kubectl get pods -l app=gpu-test",
             user_kubectl(ctx, "get", "pods", "-l", "app=gpu-test"))
    for p in pods:
        name = p["metadata"]["name"]
        log = kube.kubectl("-n", SEED_NS, "exec", name, "--", "sh", "-c", PROBE, timeout=90)
        check_inside(name, log, GPU_MEMORY, None, False, ns=SEED_NS)
    tr.ok("all 4 run; each sees the whole GPU's memory (no memory isolation, as the seed says)")
    tr.shell("kubectl exec %s -- nvidia-smi" % pods[0]["metadata"]["name"],
             user_kubectl(ctx, "exec", pods[0]["metadata"]["name"], "--", "nvidia-smi"))
    tr.finish()


def smi_memory(out):
    m = re.search(r"(\d+)MiB / +(\d+)MiB", out)
    if not m:
        raise E2EError("nvidia-smi shows no memory line:\n" + out)
    return int(m.group(1)), int(m.group(2))


@case("seed-004-cce")
def seed_004(ctx):
    """Seed 004 (Huawei CCE) as written (only its image placeholder
    replaced): 40 x 128 MiB and 25 %, schedulerName volcano; nvidia-smi in
    the pod shows 5120 MiB as in the seed, on the node the whole GPU; the
    node's allocatable counts are its GPUs' memory in 128 MiB units."""
    tr = Transcript("seed-004-cce", "cce.md")
    tr.say("Create the application (the seed's gpu-app.yaml, memory and compute)")
    apply_seed(ctx, tr, "004-cce.yaml", "gpu-app.yaml")
    pod = seed_pod("gpu-app")
    tr.ok("pod %s placed by vgpu-scheduler (the webhook routed it from volcano)" % pod)
    tr.say("Log in to the pod and check the GPU memory allocated to it")
    out = tr.shell("kubectl exec -it %s -- nvidia-smi" % pod,
                   user_kubectl(ctx, "exec", pod, "--", "nvidia-smi"))
    check(smi_memory(out)[1] == 5120 and "0MiB /  5120MiB" in out,
          "nvidia-smi in the pod does not show 0MiB /  5120MiB:\n" + out)
    tr.ok("the seed's memory line: 0MiB /  5120MiB")
    dev = status_json(pod)["devices"][0]
    check(round(dev["sm_limit"]) == 25, "SM limit %s, not 25" % dev["sm_limit"])
    tr.ok("compute limit 25 %")
    tr.say("nvidia-smi on the node: the whole GPU")
    host = subprocess.run([os.path.join(ctx.build, "bin", "vgpu"), "smi"], capture_output=True,
                          text=True, timeout=30,
                          env=dict(ctx.env, LD_LIBRARY_PATH=os.path.join(ctx.build, "sim"),
                                   VGPU_SIM_STATE=ctx.env["VGPU_E2E_SIM_STATE"]))
    tr.shell("nvidia-smi", host.stdout + host.stderr)
    check(host.returncode == 0 and smi_memory(host.stdout)[1] == GPU_MEMORY // MIB,
          "the node's nvidia-smi does not show the GPU's %d MiB" % (GPU_MEMORY // MIB))
    tr.ok("%d MiB on the node" % (GPU_MEMORY // MIB))
    tr.say("The node's allocatable virtual GPU resources")
    query = ("kubectl get node %s -o json | jq -c '.status.allocatable | with_entries("
             "select(.key | startswith(\"volcano.sh\")))'" % ctx.node)
    out = subprocess.run(["sh", "-c", query], capture_output=True, text=True, timeout=60)
    tr.shell(query.replace(ctx.node, "<node>"), out.stdout + out.stderr)
    alloc = json.loads(out.stdout)
    inv = json.loads(kube.node(ctx.node)["metadata"]["annotations"]["vgpu.io/gpu-inventory"])
    units = sum(r["count"] for g in inv["gpus"] for r in g["resources"]
                if r["name"] == "volcano.sh/gpu-mem.128Mi")
    check(alloc.get("volcano.sh/gpu-mem.128Mi") == str(units),
          "allocatable %s, the inventory says %d" % (alloc, units))
    tr.ok("volcano.sh/gpu-mem.128Mi = %s, what the GPU inventory advertises" % units)
    tr.finish()


KUBE_REPLAY_NS = "kube-replay"
KUBE_REPLAY_SEED = 42
KUBE_REPLAY_NODES = 100


def trace_dir():
    """The Alibaba GPU trace folder: $VGPU_TRACE_DIR, else
    ../shared/data/alibaba-gpu-v2023 next to the repository (bench/trace_dir.sh's rule)."""
    return os.environ.get("VGPU_TRACE_DIR") or os.path.join(
        os.path.dirname(install.ROOT), "shared", "data", "alibaba-gpu-v2023")


def install_recipe():
    """docs/install.md step 1's registry recipe, the block between its markers
    (tests/deploy checks every doc has the same)."""
    with open(os.path.join(install.ROOT, "docs", "install.md")) as f:
        m = re.search(r"^<!-- registry-recipe: begin.*?^```sh\n(.*?)^```\n", f.read(), re.S | re.M)
    if not m:
        raise E2EError("docs/install.md has no registry-recipe block")
    return m.group(1)


@case("registry-recipe")
def registry_recipe(ctx):
    """docs/install.md's registry recipe as written, against the cluster's own
    registry (127.0.0.1:15000): it pushes make images' archives with the real
    skopeo, writes the overlay, and every vgpu image the overlay renders is
    pulled by the real containerd from that registry and runs. The one
    addition: the e2e registry speaks plain HTTP, so skopeo gets
    --dest-tls-verify=false (a real registry has TLS)."""
    registry, tag = "127.0.0.1:15000/vgpu-recipe", "0.0.0-e2e"
    work = os.path.join(ctx.work, "recipe")
    shutil.rmtree(work, ignore_errors=True)
    for d in ("deploy", "examples"):
        shutil.copytree(os.path.join(install.ROOT, d), os.path.join(work, d))
    os.makedirs(os.path.join(work, "build"))
    os.symlink(os.path.join(ctx.build, "images"), os.path.join(work, "build", "images"))
    bindir = os.path.join(work, "bin")
    os.makedirs(bindir)
    with open(os.path.join(bindir, "skopeo"), "w") as f:
        f.write('#!/bin/sh\n[ "$1" = copy ] && shift && set -- copy --dest-tls-verify=false "$@"\n'
                'exec /usr/bin/skopeo "$@"\n')
    os.chmod(os.path.join(bindir, "skopeo"), 0o755)
    script = install_recipe()
    for var, value in (("REGISTRY", registry), ("TAG", tag), ("DIALECT", "vgpu")):
        script = re.sub(r"^%s=\S+" % var, "%s=%s" % (var, value), script, flags=re.M)
    proc = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=work, timeout=300,
                          env=dict(os.environ, PATH=bindir + os.pathsep + os.environ["PATH"]),
                          capture_output=True, text=True)
    check(proc.returncode == 0, "the recipe failed (%d):\n%s%s" % (proc.returncode,
                                                                    proc.stdout, proc.stderr))
    rendered = kube.kubectl("kustomize", os.path.join(work, "deploy", "overlays", "registry"))
    refs = set()
    for o in yaml.safe_load_all(rendered):
        pod = ((o or {}).get("spec") or {}).get("template", {}).get("spec", {})
        refs |= {c["image"] for c in pod.get("initContainers", []) + pod.get("containers", [])}
    want = {"%s/%s:%s" % (registry, n, tag) for n in ("vgpu-node", "vgpu-scheduler")}
    check(want <= refs and not any("localhost/vgpu" in r for r in refs),
          "the recipe's overlay uses %s, not %s" % (sorted(refs), sorted(want)))
    # Each image by the overlay's reference, pulled (IfNotPresent: nothing has it yet) and run.
    for name, ref, prog in (("recipe-node", "%s/vgpu-node:%s" % (registry, tag), "vgpu"),
                            ("recipe-control", "%s/vgpu-scheduler:%s" % (registry, tag),
                             "vgpu-scheduler")):
        kube.apply({"apiVersion": "v1", "kind": "Pod",
                    "metadata": {"name": name, "namespace": NS},
                    "spec": {"restartPolicy": "Never", "terminationGracePeriodSeconds": 1,
                             "containers": [{"name": "main", "image": ref,
                                             "imagePullPolicy": "IfNotPresent",
                                             "command": ["/opt/vgpu/bin/" + prog, "--version"]}]}})
        ctx.created.append(name)
        kube.wait_for("pod %s to pull %s and finish" % (name, ref),
                      lambda: kube.pod_phase(name, NS) in ("Succeeded", "Failed"), 180,
                      state=lambda: kube.pod_summary(name, NS))
        pod = kube.get("pod", name, NS)
        status = pod["status"]["containerStatuses"][0]
        check(pod["status"]["phase"] == "Succeeded" and ref in status["image"],
              "pod %s from %s did not run" % (name, ref), kube.pod_summary(name, NS))
        pulled = [e for e in kube.events(name, NS) if e.get("reason") == "Pulled"]
        check(any(ref in e.get("message", "") and "already present" not in e.get("message", "")
                  for e in pulled),
              "pod %s: no pull of %s from the registry: %s" % (name, ref, pulled))
        check(kube.pod_log(name, NS).startswith(prog + " "),
              "%s --version in %s printed %r" % (prog, ref, kube.pod_log(name, NS)))
    delete_pods(ctx)


@case("kube-replay")
def kube_replay(ctx):
    """kube-scheduler + vgpu-scheduler land within 1 point of vgpu-replay on 100 trace nodes.

    Issue 28, item 6: bench/kube-replay.sh's small version (bench/kube_trace.py).
    Seed 42's 100-node subset of the default trace and its arrival list
    (vgpu-replay --write-arrival), one kubelet-less Node per trace node with
    the inventory the node agent would publish, the ~620 pods created in
    order and left to the vgpu-scheduler this suite installed (kube-scheduler
    1.20.2 + the extender, in pods, as docs/install.md deploys them); then the
    unallocated GPU % from the API objects against vgpu-replay --in-order
    --policy vgpu on the very same nodes and pods, in the order the API
    server stored them. Fails when they differ by more than 1 point, or when
    an assignment is off its request, a GPU is over its memory or compute,
    or vgpu-scheduler finds a Node's inventory wrong; prints both figures
    either way.

    Run here rather than as a separate stage with its own control plane:
    this cluster already runs the product as installed, and one cluster at
    a time is all this machine allows, so a stage would need the e2e's
    cluster down and another brought up. The cost of sharing it: the node
    lifecycle controller taints kubelet-less Nodes after 40 s, so the pods
    tolerate every taint, and they select the case's Nodes by label so that
    none lands on the real node. Everything is deleted afterwards (pods at
    once, Nodes, the namespace), also on failure."""
    sys.path.insert(0, os.path.join(install.ROOT, "bench"))
    import kube_trace as kt
    from kube_api import Api
    data = trace_dir()
    check(os.path.isfile(os.path.join(data, kt.NODE_LIST)),
          "no Alibaba GPU trace in %s: set VGPU_TRACE_DIR" % data)
    work = os.path.join(ctx.work, "kube-replay")
    shutil.rmtree(work, ignore_errors=True)
    nodes_csv, arrival_csv = kt.write_seed_files(ctx.build, data, "default", KUBE_REPLAY_NODES,
                                                 KUBE_REPLAY_SEED, work)
    api = Api(ctx.env["KUBECONFIG"], os.path.join(work, "api"))
    sched = [p for p in ctx.agents.pods("app.kubernetes.io/name=vgpu-scheduler")
             if p["status"].get("podIP") and not p["metadata"].get("deletionTimestamp")]
    metrics = "http://%s:8888/metrics" % sched[0]["status"]["podIP"] if sched else None
    try:
        res = kt.run_pods(api, nodes_csv, arrival_csv, KUBE_REPLAY_NS, deadline_s=480,
                          metrics_url=metrics)
    finally:
        kt.delete_objects(api, KUBE_REPLAY_NS)
    stored = kt.write_in_order(arrival_csv, res["order"], os.path.join(work, "arrival-stored.csv"))
    vgpu = kt.inproc(ctx.build, nodes_csv, stored, KUBE_REPLAY_SEED, "vgpu")
    print("    kube-replay: %d pods, %d bound: unallocated GPU %.2f %% through kube-scheduler, "
          "%.2f %% in-process vgpu; %s pods/s, create-to-bind p99 %s ms; extender %s" % (
              res["pods"], res["bound"], res["kube_unallocated_pct"], vgpu, res["pods_per_s"],
              res["bind_p99_ms"], res["extender"]), flush=True)
    check(not res["problems"], "assignments off: %s" % "; ".join(res["problems"][:5]))
    check(not res["node_failures"], "vgpu-scheduler failed Nodes for %s" % res["node_failures"])
    check(res["finished"], "not every pod was bound or unschedulable in 480 s")
    check(abs(res["kube_unallocated_pct"] - vgpu) <= 1.0,
          "kube-scheduler + vgpu-scheduler leave %.2f %% of the GPUs unallocated, vgpu-replay's "
          "vgpu %.2f %% on the same pods: more than 1 point apart" % (
              res["kube_unallocated_pct"], vgpu))


@case("uninstall")
def uninstall(ctx):
    """docs/install.md's uninstall: kubectl delete -k and the node's two
    directories; no vgpu object, socket, label or host path is left."""
    ctx.agents.stop()
    left = ctx.agents.leftovers()
    check(not left, "left after uninstall: %s" % ", ".join(left))


# ---------------------------------------------------------------- runner

# ---------------------------------------------------------------- the soak (make soak)

SOAK_TENANT = ("echo '== done'\n"
               "while :; do vgpu-burn --alloc 16g --chunk 64m --hold 3 --json; done\n")
SOAK_KINDS = [({"nvidia.com/vgpu": "1", "nvidia.com/gpumem": "1000"}, 1000 * MIB),
              ({"aliyun.com/gpu-mem": "1500"}, 1500 * MIB),
              ({"nvidia.com/vgpu": "1", "nvidia.com/gpumem": "700", "nvidia.com/gpucores": "30"},
               700 * MIB)]


def host_rss_kib(pids):
    total = 0
    for pid in pids:
        try:
            with open("/proc/%s/status" % pid) as f:
                total += next(int(x.split()[1]) for x in f if x.startswith("VmRSS:"))
        except (OSError, StopIteration):
            pass
    return total


def pids_of(program):
    """The cluster's PIDs of program: its name, in a container (a mount
    namespace other than ours), so that a test's copy on the host is not
    counted, nor kube-scheduler whose flags name vgpu-scheduler."""
    mine = os.readlink("/proc/self/ns/mnt")
    pids = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                argv0 = f.read().split(b"\0")[0].decode(errors="replace")
            if (os.path.basename(argv0) == program and
                    os.readlink("/proc/%s/ns/mnt" % pid) != mine):
                pids.append(pid)
        except OSError:
            pass
    return pids


def soak_sample(ctx, t0, live):
    series = [x for x in ctx.agents.metrics().splitlines() if x and not x.startswith("#")]
    slots = os.listdir(install.SLOTS_DIR) if os.path.isdir(install.SLOTS_DIR) else []
    return {"t": round(time.monotonic() - t0), "pods": len(live),
            "plugin_rss_kib": host_rss_kib(pids_of("vgpu-device-plugin")),
            "scheduler_rss_kib": host_rss_kib(pids_of("vgpu-scheduler")),
            "series": len(series), "slots": len(slots)}


def soak_grants_held(name, grant):
    """Every allocation the tenant's processes reported stayed within its grant."""
    allocs = [json.loads(x)["allocated_bytes"] for x in kube.pod_log(name, NS).splitlines()
              if x.startswith("{")]
    check(all(a <= grant for a in allocs), "%s took %d MiB of a %d MiB grant" % (
        name, max(allocs) // MIB, grant // MIB), kube.pod_summary(name, NS))
    return len(allocs)


@case("soak", explicit=True)
def soak(ctx):
    """VGPU_SOAK_SECONDS (default 3600) of pod churn, tenants allocating and
    being killed with SIGKILL: every grant held throughout; afterwards no slot,
    region or per-pod metric series left, and the node agent's and the
    scheduler's RSS printed over time (make soak keeps them in bench/results)."""
    seconds = int(os.environ.get("VGPU_SOAK_SECONDS", "3600"))
    t0 = time.monotonic()
    live, samples, rounds_seen, kills, made = [], [], 0, 0, 0
    next_sample = 0
    while time.monotonic() - t0 < seconds:
        limits, grant = SOAK_KINDS[made % len(SOAK_KINDS)]
        name = "soak-%d" % made
        made += 1
        kube.apply(pod_spec(name, limits, script=SOAK_TENANT))
        ctx.created.append(name)
        live.append((name, grant))
        kube.wait_running(name, NS, timeout=180)
        # Kill one tenant process of an older pod with SIGKILL: its charge must come back.
        if len(live) > 2:
            victim = live[-3][0]
            kube.kubectl("exec", "-n", NS, victim, "--", "sh", "-c",
                         "kill -9 $(pidof vgpu-burn) 2>/dev/null; true", check=False)
            kills += 1
        if len(live) > 6:  # churn: the oldest goes
            old, old_grant = live.pop(0)
            rounds_seen += soak_grants_held(old, old_grant)
            delete_pods(ctx, [old])
        if time.monotonic() >= next_sample:
            samples.append(soak_sample(ctx, t0, live))
            print("    soak: " + json.dumps(samples[-1]), flush=True)
            next_sample = time.monotonic() + 60
    for name, grant in live:
        rounds_seen += soak_grants_held(name, grant)
    delete_pods(ctx, [n for n, _ in live])
    kube.wait_for("every slot collected", lambda: not os.listdir(install.SLOTS_DIR), 180,
                  state=lambda: sorted(os.listdir(install.SLOTS_DIR)))
    kube.wait_for("no per-pod metric series left", lambda: not metric_lines(
        ctx, "vgpu_container_memory_limit_bytes"), 120,
        state=lambda: metric_lines(ctx, "vgpu_container_memory_limit_bytes"))
    samples.append(soak_sample(ctx, t0, []))
    print("    soak: " + json.dumps(samples[-1]), flush=True)
    print("    soak: %d pods made, %d SIGKILLs, %d allocations checked against their grants" % (
        made, kills, rounds_seen), flush=True)
    quarter = max(1, len(samples) // 4)
    for key in ("plugin_rss_kib", "scheduler_rss_kib"):
        first = sum(x[key] for x in samples[:quarter]) / quarter
        last = sum(x[key] for x in samples[-quarter:]) / quarter
        print("    soak: %s first quarter %.0f, last quarter %.0f (x%.2f)" % (
            key, first, last, last / first if first else 0), flush=True)


def run_case(ctx, name, fn, xfail):
    start = time.monotonic()
    try:
        fn(ctx)
        verdict, why = ("XPASS", xfail) if xfail else ("PASS", "")
    except XFail as e:
        verdict, why = "XFAIL", "%s (%s)" % (e, xfail)
    except E2EError as e:
        verdict, why = "FAIL", str(e)
    except Exception as e:  # noqa: BLE001 -- any failure is this case's
        verdict, why = "FAIL", "".join(traceback.format_exception(type(e), e, e.__traceback__))
    finally:
        try:
            delete_pods(ctx)
            delete_seeds(ctx.seed_files)
            ctx.seed_files.clear()
        except Exception as e:  # noqa: BLE001
            print("  cleanup of %s failed: %s" % (name, e), flush=True)
    print("%-6s %-26s %5.1fs %s" % (verdict, name, time.monotonic() - start,
                                     fn.__doc__.strip().splitlines()[0]), flush=True)
    if why:
        print("       " + why.strip().replace("\n", "\n       "), flush=True)
    return verdict


def main(argv):
    wanted = set(argv[1:])
    unknown = wanted - {n for n, _, _ in CASES}
    if unknown:
        print("e2e.py: unknown case(s) %s; known: %s" % (", ".join(sorted(unknown)),
              " ".join(n for n, _, _ in CASES)), file=sys.stderr)
        return 2
    ctx = Ctx()
    kube.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    counts = {}
    try:
        ctx.agents.start()
        for name, fn, xfail in CASES:
            if name in wanted or (not wanted and name not in EXPLICIT):
                v = run_case(ctx, name, fn, xfail)
                counts[v] = counts.get(v, 0) + 1
    finally:
        ctx.agents.stop()
    passed = counts.get("PASS", 0) + counts.get("XFAIL", 0)
    failed = counts.get("FAIL", 0) + counts.get("XPASS", 0)
    print("%d passed, %d failed (%d expected failures)" % (passed, failed, counts.get("XFAIL", 0)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
