"""kube_trace.py -- the Alibaba GPU trace's nodes and pods as Kubernetes
objects, placed by whatever scheduler a cluster runs, and measured from the
API objects, beside vgpu-replay's in-process model on the very same pods.
bench/kube_replay.py runs it on a throwaway control plane; tests/e2e's
kube-replay case on the e2e cluster.

- Files (write_seed_files): vgpu-replay --node-count N --write-nodes
  --write-arrival: one seed's subset of N trace nodes and the pods it places,
  in its order, cut at 100 % of the subset's GPU capacity, shares in whole
  percents (docs/placement.md).
- Nodes (node_object): allocatable = the trace's CPU and memory, pods: 1000,
  and the vgpu.io/gpu-inventory the node agent would publish for the node's
  GPUs (vgpu dialect, resource nvidia.com/gpu, 100 slices per GPU so that
  slices never limit a share, contextReserve 0, type = the trace's model
  name, memory by MODEL_GIB); label LABEL; status Ready.
- Pods (pod_object), created in order from a few connections: a share of P %
  asks nvidia.com/gpu 1 with gpucores and gpumem-percentage P, N whole GPUs
  ask nvidia.com/gpu N with gpucores 100, a model list "A|B" becomes
  nvidia.com/use-gputype "A,B"; every pod asks its CPU and memory (requests =
  limits), names schedulerName vgpu-scheduler, mounts no token, selects the
  LABEL Nodes and tolerates every taint.
- run_pods: a watch notes when each pod is bound (this machine's monotonic
  clock); the run ends when every pod is bound or unschedulable and no bind
  came for a few seconds, or at the deadline. Then, from the API objects: the
  unallocated GPU % after the last pod (as vgpu-replay --in-order reports it:
  100 x (capacity - GPU requests of the bound pods) / capacity) and its curve
  over arrival, every bound GPU pod's vgpu.io/assigned against its request,
  every GPU's assigned memory and compute against the inventory; pods/s,
  create-to-bind p50/p99, vgpu-scheduler's per-verb latency and node failures
  (/metrics, the run's difference), CPU and peak RSS of given processes.
- inproc: vgpu-replay --in-order on the same nodes and pods, in the order the
  API server stored them (their resourceVersions: creates from several
  connections can swap neighbours, and the scheduler's queue takes them in
  that order; write_in_order).

Python's standard library only.
"""
import csv
import json
import os
import queue
import statistics
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kube_api import ApiError, PodWatch, ProcSampler  # noqa: E402

NODE_LIST = "openb_node_list_gpu_node.csv"
GIB = 1 << 30
# GPU memory per trace model, GiB. G2 and G3 are Alibaba's unnamed models: 24 and 32 are a
# guess. Nothing here depends on it: every share asks a percentage of its GPU's memory.
MODEL_GIB = {"P100": 16, "T4": 16, "V100M16": 16, "V100M32": 32, "A10": 24, "G2": 24, "G3": 32}
SLICES = 100  # deviceSplitCount: more slices per GPU than any share can need
RESOURCE = "nvidia.com/gpu"
LABEL = "vgpu.io/kube-replay"  # on every Node and pod made here; pods select such Nodes
PAUSE_IMAGE = "localhost/vgpu-e2e/pause:v1.20.2"  # never pulled: no kubelet runs these pods
EXTENDER_VERBS = ("filter", "prioritize", "bind")
# vgpu-scheduler's node failure reasons (/metrics) that say the Nodes made here are wrong, not
# that a pod did not fit; any of them fails the run.
BAD_REASONS = ("no_inventory", "bad_inventory", "not_advertised", "bad_assignment", "api")
CURVE_POINTS = (50, 80, 90, 95, 100)


def log(msg):
    print("kube-replay: " + msg, file=sys.stderr, flush=True)


def read_csv(path):
    with open(path) as f:
        return list(csv.DictReader(f))


# ---------------------------------------------------------------- the trace's files

def write_seed_files(build, trace_dir, trace, nodes, seed, work):
    """vgpu-replay's node subset and arrival list of one seed; their paths."""
    nodes_csv, arrival_csv = os.path.join(work, "nodes.csv"), os.path.join(work, "arrival.csv")
    os.makedirs(work, exist_ok=True)
    subprocess.run([os.path.join(build, "bin", "vgpu-replay"),
                    "--nodes", os.path.join(trace_dir, NODE_LIST),
                    "--pods", os.path.join(trace_dir, "openb_pod_list_%s.csv" % trace),
                    "--seeds", str(seed), "--node-count", str(nodes), "--write-nodes", nodes_csv,
                    "--write-arrival", arrival_csv], check=True, stdout=subprocess.DEVNULL,
                   timeout=600)
    return nodes_csv, arrival_csv


def inproc(build, nodes_csv, arrival_csv, seed, policy):
    """vgpu-replay --in-order: the unallocated GPU % after the last pod."""
    out = subprocess.run([os.path.join(build, "bin", "vgpu-replay"), "--nodes", nodes_csv,
                          "--pods", arrival_csv, "--seeds", str(seed), "--in-order",
                          "--policy", policy, "--json"], check=True, capture_output=True,
                         text=True, timeout=600).stdout
    return json.loads(out.splitlines()[-1])["unallocated_pct_after_last"]


# ---------------------------------------------------------------- the objects

def check_models(models):
    """use-gputype matches a GPU's type by case-insensitive substring: no
    model name may be part of another's."""
    for a in models:
        for b in models:
            if a != b and a.lower() in b.lower():
                raise SystemExit("kube-replay: GPU model %s is part of %s: a pod asking for %s "
                                 "could be placed on %s" % (a, b, a, b))


def node_name(row):
    return "kr-" + row["sn"].lower()


def gpu_uuid(node_index, gpu):
    return "GPU-%08x-%04x-4000-8000-6b7265706c61" % (node_index, gpu)


def inventory(name, index, row):
    """vgpu.io/gpu-inventory as the node agent publishes it (docs/inventory.md)."""
    mem = MODEL_GIB.get(row["model"], 16) * GIB
    gpus = [{"index": g, "uuid": gpu_uuid(index, g), "type": row["model"], "memory": mem,
             "numa": None, "health": "Healthy",
             "resources": [{"name": RESOURCE, "dialect": "vgpu", "count": SLICES, "unit": 0,
                            "memory": mem, "cores": 100}]}
            for g in range(int(row["gpu"]))]
    return {"version": 1, "node": name, "contextReserve": 0, "gpus": gpus}


def node_object(index, row):
    name = node_name(row)
    have = {"cpu": "%sm" % row["cpu_milli"], "memory": "%sMi" % row["memory_mib"],
            "pods": "1000", RESOURCE: str(int(row["gpu"]) * SLICES)}
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return {"apiVersion": "v1", "kind": "Node",
            # Not vgpu.io/gpu=true: the device plugin's DaemonSet would follow it (the e2e's).
            "metadata": {"name": name, "labels": {LABEL: "true", "kubernetes.io/hostname": name},
                         "annotations": {"vgpu.io/gpu-inventory": json.dumps(
                             inventory(name, index, row), separators=(",", ":"))}},
            "status": {"capacity": have, "allocatable": have,
                       "conditions": [{"type": "Ready", "status": "True", "reason": "KubeReplay",
                                       "lastHeartbeatTime": now, "lastTransitionTime": now}]}}


def gpu_milli(row):
    return int(row["num_gpu"]) * int(row["gpu_milli"])


def pod_object(index, row, ns, plain=False):
    """plain: the same pod without GPU resources or annotations (the
    yardstick run of bench/kube_replay.py --plain)."""
    res = {"cpu": "%sm" % row["cpu_milli"], "memory": "%sMi" % row["memory_mib"]}
    num, milli = int(row["num_gpu"]), int(row["gpu_milli"])
    if plain:
        pass
    elif num == 1 and milli < 1000:  # a share: whole percents (vgpu-replay rounded them up)
        res.update({RESOURCE: "1", "nvidia.com/gpucores": str(-(-milli // 10)),
                    "nvidia.com/gpumem-percentage": str(-(-milli // 10))})
    elif num:
        res.update({RESOURCE: str(num), "nvidia.com/gpucores": "100"})
    elif os.environ.get("VGPU_KUBE_REPLAY_CPU_PODS", "extender") == "extender":
        # The trace's GPU-less pods are placed by the same scheduler as the
        # rest, as in the replay. kube-scheduler asks an extender only about
        # pods naming one of its managedResources (which must be extended
        # resources: cpu cannot be one), so they name nvidia.com/gpu 0, which
        # asks for nothing (docs/scheduler.md, "Pods without GPUs").
        # VGPU_KUBE_REPLAY_CPU_PODS=kube leaves them to kube-scheduler's own
        # score plugins instead.
        res.update({RESOURCE: "0"})
    ann = {"nvidia.com/use-gputype": row["gpu_spec"].replace("|", ",")} \
        if row.get("gpu_spec") and not plain else {}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "kr-%05d" % index, "namespace": ns, "labels": {LABEL: "true"},
                         "annotations": ann},
            "spec": {"schedulerName": "vgpu-scheduler", "automountServiceAccountToken": False,
                     "terminationGracePeriodSeconds": 0, "nodeSelector": {LABEL: "true"},
                     # The e2e cluster's node lifecycle controller taints kubelet-less Nodes.
                     "tolerations": [{"operator": "Exists"}],
                     "containers": [{"name": "main", "image": PAUSE_IMAGE,
                                     "resources": {"requests": res, "limits": res}}]}}


# ---------------------------------------------------------------- vgpu-scheduler's /metrics

def read_metrics(url):
    """{verb: (count, sum_s, {le: cumulative})}, node failures by reason,
    binds by result."""
    if not url:
        return None
    with urllib.request.urlopen(url, timeout=10) as r:
        text = r.read().decode()
    verbs, failures, binds = {}, {}, {}
    for line in text.splitlines():
        if line.startswith("#") or " " not in line:
            continue
        key, value = line.rsplit(" ", 1)
        name, _, labels = key.partition("{")
        lab = dict(kv.split("=", 1) for kv in labels.rstrip("}").split(",") if "=" in kv)
        lab = {k: v.strip('"') for k, v in lab.items()}
        if name.startswith("vgpu_scheduler_request_duration_seconds"):
            count, total, buckets = verbs.setdefault(lab["verb"], [0, 0.0, {}])
            if name.endswith("_count"):
                verbs[lab["verb"]][0] = float(value)
            elif name.endswith("_sum"):
                verbs[lab["verb"]][1] = float(value)
            elif name.endswith("_bucket"):
                buckets[lab["le"]] = float(value)
        elif name == "vgpu_scheduler_node_failures_total":
            failures[lab["reason"]] = float(value)
        elif name == "vgpu_scheduler_binds_total":
            binds[lab["result"]] = float(value)
    return {"verbs": verbs, "failures": failures, "binds": binds}


def metrics_delta(before, after):
    """Over the run: per verb calls, mean ms and the p99's bucket bound (ms);
    the node failures that say our Nodes are wrong; binds by result."""
    if not before or not after:
        return {}, {}, {}
    out = {}
    for verb in EXTENDER_VERBS:
        b = before["verbs"].get(verb, [0, 0.0, {}])
        a = after["verbs"].get(verb, [0, 0.0, {}])
        calls = a[0] - b[0]
        p99 = None
        bounds = sorted((float(le), a[2][le] - b[2].get(le, 0)) for le in a[2] if le != "+Inf")
        for le, cum in bounds:
            if calls and cum >= 0.99 * calls:
                p99 = le * 1e3
                break
        out[verb] = {"calls": int(calls), "mean_ms": round((a[1] - b[1]) / calls * 1e3, 2)
                     if calls else None, "p99_le_ms": p99}
    def delta(key):
        return {k: int(v - before[key].get(k, 0)) for k, v in after[key].items()
                if v - before[key].get(k, 0)}
    failures = delta("failures")
    return out, {r: n for r, n in failures.items() if r in BAD_REASONS}, delta("binds")


# ---------------------------------------------------------------- one run on a cluster

def ensure_namespace(api, ns):
    api.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                      "metadata": {"name": ns}}, exist_ok=True)
    # No controller-manager makes it in the bench's cluster; the ServiceAccount admission
    # plugin wants it even for pods that mount no token.
    api.create("/api/v1/namespaces/%s/serviceaccounts" % ns,
               {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}},
               exist_ok=True)


def create_in_order(api, path, objs, conns):
    """POSTs objs, dispatched in list order to `conns` connections; per object
    the monotonic time its request was sent and its resourceVersion."""
    sent, rv, errors = [None] * len(objs), [None] * len(objs), []
    work = queue.Queue()
    for i in range(len(objs)):
        work.put(i)

    def worker():
        while not errors:
            try:
                i = work.get_nowait()
            except queue.Empty:
                return
            sent[i] = time.monotonic()
            try:
                rv[i] = int(api.create(path, objs[i])["metadata"]["resourceVersion"])
            except Exception as e:  # noqa: BLE001 -- the first one is raised below
                errors.append(e)
    threads = [threading.Thread(target=worker, daemon=True) for _ in range(conns)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return sent, rv


def wait_settled(watch, names, deadline_s, settle_s, start):
    """Until every pod is bound or unschedulable and no bind came for
    settle_s; False when deadline_s passed first."""
    deadline, next_note = start + deadline_s, start + 15
    while time.monotonic() < deadline:
        if watch.error:
            raise watch.error
        now = time.monotonic()
        done = watch.settled(names) == len(names)
        if done and now - (watch.last_bind() or start) >= settle_s:
            return True
        if now >= next_note:
            log("%d of %d pods bound, %d unschedulable, %.0f s" % (
                len(watch.bound), len(names), len(watch.unschedulable), now - start))
            next_note = now + 15
        time.sleep(0.25)
    return False


def curve(order, reqs, bound, cap):
    """vgpu-replay's curve (replay.c): the mean unallocated GPU % of the
    events at each rounded arrived %, gaps filled from a neighbour; each pod's
    outcome is its final one (kube-scheduler never places a pod later that
    did not fit, and nothing is deleted)."""
    sums, counts, arrived, used = {}, {}, 0, 0
    for i in order:
        arrived += reqs[i]
        used += reqs[i] if bound[i] else 0
        x = int(100 * arrived / cap + 0.5)
        sums[x] = sums.get(x, 0) + 100 - 100 * used / cap
        counts[x] = counts.get(x, 0) + 1
    out = {}
    for x in CURVE_POINTS:
        for k in (x, x - 1, x + 1):
            if k in counts:
                out[x] = round(sums[k] / counts[k], 4)
                break
    return out


def check_assignments(pods, rows, node_objs):
    """Every bound GPU pod's vgpu.io/assigned against its request, and every
    GPU's assigned memory and compute against the inventory. ([problems], GPUs)"""
    gpu_mem = {}
    for n in node_objs:
        inv = json.loads(n["metadata"]["annotations"]["vgpu.io/gpu-inventory"])
        for g in inv["gpus"]:
            gpu_mem[g["uuid"]] = (n["metadata"]["name"], g["memory"])
    mem, cores, problems = {}, {}, []
    for pod in pods:
        name, node = pod["metadata"]["name"], pod["spec"].get("nodeName")
        row = rows[name]
        if not node or not gpu_milli(row):
            continue
        raw = (pod["metadata"].get("annotations") or {}).get("vgpu.io/assigned")
        entries = [g for c in json.loads(raw)["containers"] for g in c["gpus"]] if raw else []
        if len(entries) != int(row["num_gpu"]) or \
                sum(g["cores"] for g in entries) * 10 != gpu_milli(row):
            problems.append("%s asks %s x %s milli, assigned %s" % (
                name, row["num_gpu"], row["gpu_milli"], raw))
        for g in entries:
            where = gpu_mem.get(g["uuid"])
            if not where or where[0] != node:
                problems.append("%s on %s assigned GPU %s of another node" % (name, node,
                                                                             g["uuid"]))
            mem[g["uuid"]] = mem.get(g["uuid"], 0) + g["memory"]
            cores[g["uuid"]] = cores.get(g["uuid"], 0) + g["cores"]
    for uuid in mem:
        if uuid in gpu_mem and (mem[uuid] > gpu_mem[uuid][1] or cores[uuid] > 100):
            problems.append("GPU %s over: %d of %d bytes, %d %% compute" % (
                uuid, mem[uuid], gpu_mem[uuid][1], cores[uuid]))
    return problems, len(gpu_mem)


def list_labelled(api, path):
    return api.request("GET", "%s?labelSelector=%s" % (path, urllib.parse.quote(LABEL)))["items"]


def run_pods(api, nodes_csv, arrival_csv, ns, deadline_s, conns=4, settle_s=5.0,
             metrics_url=None, pids=None, plain=False):
    """Steps 3-5 of the module's docstring on the cluster api reaches. Nodes
    and pods stay; delete_objects() removes them."""
    node_rows, rows = read_csv(nodes_csv), read_csv(arrival_csv)
    check_models({r["model"] for r in node_rows if int(r["gpu"])})
    ensure_namespace(api, ns)
    t = time.monotonic()
    create_in_order(api, "/api/v1/nodes", [node_object(i, r) for i, r in enumerate(node_rows)],
                    conns)
    log("%d Nodes created in %.1f s" % (len(node_rows), time.monotonic() - t))
    watch = PodWatch(api, ns)
    watch.start()
    if not watch.synced.wait(60) or watch.error:
        raise ApiError("the pod watch did not start: %s" % watch.error)
    before = read_metrics(metrics_url)
    sampler = ProcSampler(pids or {})
    sampler.start()
    pods = [pod_object(i, r, ns, plain) for i, r in enumerate(rows)]
    names = [p["metadata"]["name"] for p in pods]
    start = time.monotonic()
    sent, rv = create_in_order(api, "/api/v1/namespaces/%s/pods" % ns, pods, conns)
    log("%d pods created in %.1f s" % (len(pods), time.monotonic() - start))
    finished = wait_settled(watch, names, deadline_s, settle_s, start)
    procs = sampler.stop()
    after = read_metrics(metrics_url)
    watch.stop()
    final = list_labelled(api, "/api/v1/namespaces/%s/pods" % ns)
    node_objs = list_labelled(api, "/api/v1/nodes")
    by_name = dict(zip(names, rows))
    problems, ngpus = ([], 0) if plain else check_assignments(final, by_name, node_objs)
    bound = {p["metadata"]["name"] for p in final if p["spec"].get("nodeName")}
    order = sorted(range(len(rows)), key=lambda i: rv[i])  # the API server's order
    cap = 1000 * sum(int(r["gpu"]) for r in node_rows)
    reqs = [gpu_milli(r) for r in rows]
    held = sum(reqs[i] for i in range(len(rows)) if names[i] in bound)
    lat = sorted((watch.bound[n] - sent[i]) * 1e3 for i, n in enumerate(names) if n in watch.bound)
    last = watch.last_bind() or start
    extender, failures, binds = metrics_delta(before, after)
    return {
        "pods": len(rows), "bound": len(bound), "unschedulable": len(rows) - len(bound),
        "finished": finished, "nodes": len(node_rows), "gpus": ngpus,
        "kube_unallocated_pct": None if plain else round(100.0 * (cap - held) / cap, 4),
        "curve": curve(order, reqs, [n in bound for n in names], cap),
        "order": order, "reordered": sum(1 for k, i in enumerate(order) if k != i),
        "pods_per_s": round(len(watch.bound) / (last - start), 2) if last > start else None,
        "bind_p50_ms": round(statistics.median(lat), 1) if lat else None,
        "bind_p99_ms": round(lat[min(len(lat) - 1, int(0.99 * len(lat)))], 1) if lat else None,
        "bound_by_list": watch.relisted, "extender": extender, "node_failures": failures,
        "binds": binds,
        "problems": problems, "procs": procs}


def write_in_order(arrival_csv, order, out):
    """The arrival list in the API server's order (the same pods)."""
    with open(arrival_csv) as f:
        lines = f.read().splitlines()
    with open(out, "w") as f:
        f.write("\n".join([lines[0]] + [lines[1 + i] for i in order]) + "\n")
    return out


def delete_objects(api, ns, timeout=180):
    """Every pod and Node made here (at once: no kubelet waits on them), then
    the namespace (its controller must run); waits until all are gone."""
    gone = {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0}
    sel = urllib.parse.quote(LABEL)
    api.request("DELETE", "/api/v1/namespaces/%s/pods?labelSelector=%s" % (ns, sel), gone,
                ok=(200, 404))
    api.request("DELETE", "/api/v1/nodes?labelSelector=%s" % sel, gone, ok=(200, 404))
    deadline = time.monotonic() + timeout

    def left():
        return len(list_labelled(api, "/api/v1/nodes")) + len(
            list_labelled(api, "/api/v1/namespaces/%s/pods" % ns))
    while left() and time.monotonic() < deadline:
        time.sleep(1)
    api.request("DELETE", "/api/v1/namespaces/%s" % ns, gone, ok=(200, 202, 404))
    while time.monotonic() < deadline:
        if api.request("GET", "/api/v1/namespaces/%s" % ns, ok=(200, 404)).get("kind") != \
                "Namespace":
            return
        time.sleep(1)
    raise ApiError("kube-replay's Nodes, pods or namespace %s still there after %d s "
                   "(%d Nodes and pods)" % (ns, timeout, left()))
