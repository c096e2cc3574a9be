"""kube.py -- the few kubectl and containerd operations the e2e cases need.

Everything goes through the real kubectl against the real kube-apiserver of
scripts/e2e/cluster.sh (KUBECONFIG is the cluster's admin). Failures raise
E2EError with the object's state, so a failed case says why, as Kubernetes'
own e2e framework does.
"""
import glob
import json
import subprocess
import time


class E2EError(Exception):
    pass


def kubectl(*args, stdin=None, check=True, timeout=60):
    """kubectl ARGS; its stdout, or E2EError with stderr when it fails."""
    proc = subprocess.run(["kubectl", *args], input=stdin, capture_output=True, text=True,
                          timeout=timeout)
    if check and proc.returncode != 0:
        raise E2EError("kubectl %s: %s" % (" ".join(args), proc.stderr.strip()))
    return proc.stdout


def get(kind, name, namespace=None):
    """The object as a dict, or None when it does not exist."""
    args = ["get", kind, name, "-o", "json"] + (["-n", namespace] if namespace else [])
    proc = subprocess.run(["kubectl", *args], capture_output=True, text=True, timeout=60)
    if proc.returncode != 0:
        if "NotFound" in proc.stderr or "not found" in proc.stderr:
            return None
        raise E2EError("kubectl %s: %s" % (" ".join(args), proc.stderr.strip()))
    return json.loads(proc.stdout)


def apply(obj):
    return kubectl("apply", "-f", "-", stdin=json.dumps(obj))


def delete(kind, name, namespace=None, wait=True, grace=None):
    args = ["delete", kind, name, "--ignore-not-found", "--wait=%s" % ("true" if wait else "false")]
    if namespace:
        args += ["-n", namespace]
    if grace is not None:
        args += ["--grace-period=%d" % grace]
    kubectl(*args, timeout=180)


def wait_for(what, probe, timeout=90, interval=0.5, state=None):
    """Calls probe() until it returns a true value; E2EError naming WHAT and
    the last state (state() or the probe's last value) after TIMEOUT s."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = probe()
        if last:
            return last
        time.sleep(interval)
    detail = state() if state else last
    raise E2EError("timed out after %ds waiting for %s; state: %s" % (timeout, what, detail))


def pod_phase(name, namespace):
    pod = get("pod", name, namespace)
    return pod["status"].get("phase") if pod else None


def pod_stopped(name, namespace):
    """True when the pod is gone, or none of its containers runs any more."""
    pod = get("pod", name, namespace)
    if pod is None:
        return True
    statuses = pod["status"].get("containerStatuses", [])
    ended = pod["status"].get("phase") in ("Failed", "Succeeded")
    return ended or (pod["metadata"].get("deletionTimestamp") is not None and
                     all("running" not in c.get("state", {}) for c in statuses))


def pod_summary(name, namespace):
    """What a person debugging wants to see: phase, conditions, container
    states, node, annotations and the pod's events."""
    pod = get("pod", name, namespace)
    if pod is None:
        return "pod %s/%s does not exist" % (namespace, name)
    st = pod.get("status", {})
    lines = ["pod %s/%s phase=%s reason=%s message=%s node=%s" % (
        namespace, name, st.get("phase"), st.get("reason"), st.get("message"),
        pod["spec"].get("nodeName"))]
    for c in st.get("conditions", []):
        lines.append("  condition %s=%s %s %s" % (c["type"], c["status"], c.get("reason", ""),
                                                  c.get("message", "")))
    for c in st.get("containerStatuses", []):
        lines.append("  container %s state=%s" % (c["name"], json.dumps(c.get("state"))))
    for k, v in sorted(pod["metadata"].get("annotations", {}).items()):
        if k.startswith("vgpu.io/"):
            lines.append("  annotation %s=%s" % (k, v))
    for e in events(name, namespace):
        lines.append("  event %s %s: %s" % (e.get("type"), e.get("reason"), e.get("message")))
    return "\n".join(lines)


def events(name, namespace):
    out = kubectl("get", "events", "-n", namespace, "-o", "json",
                  "--field-selector", "involvedObject.name=%s" % name, check=False)
    try:
        return json.loads(out).get("items", [])
    except ValueError:
        return []


def wait_running(name, namespace, timeout=120):
    def probe():
        pod = get("pod", name, namespace)
        if pod and pod["status"].get("phase") in ("Failed", "Succeeded"):
            raise E2EError("pod ended instead of running:\n" + pod_summary(name, namespace))
        return pod and pod["status"].get("phase") == "Running"
    wait_for("pod %s/%s Running" % (namespace, name), probe, timeout,
             state=lambda: pod_summary(name, namespace))


def wait_phase(name, namespace, phases, timeout=120):
    def probe():
        return pod_phase(name, namespace) in phases
    wait_for("pod %s/%s in %s" % (namespace, name, "/".join(phases)), probe, timeout,
             state=lambda: pod_summary(name, namespace))


def pod_log(name, namespace, container=None):
    """The container's output: kubectl logs, else the kubelet's CRI log
    files under /var/log/pods (they do not need the kubelet's server)."""
    args = ["logs", name, "-n", namespace] + (["-c", container] if container else [])
    proc = subprocess.run(["kubectl", *args], capture_output=True, text=True, timeout=60)
    if proc.returncode == 0:
        return proc.stdout
    pod = get("pod", name, namespace)
    if pod is None:
        return ""
    uid = pod["metadata"]["uid"]
    ctr = container or pod["spec"]["containers"][0]["name"]
    files = sorted(glob.glob("/var/log/pods/%s_%s_%s/%s/*.log" % (namespace, name, uid, ctr)))
    text = []
    for path in files[-1:]:
        with open(path) as f:
            for line in f:  # CRI format: time stream tag message
                parts = line.rstrip("\n").split(" ", 3)
                text.append(parts[3] if len(parts) == 4 else "")
    return "\n".join(text) + ("\n" if text else "")


def wait_log(name, namespace, marker, timeout=90):
    """Waits until the container has printed MARKER; returns the whole log."""
    def printed():
        text = pod_log(name, namespace)
        return text if marker in text else None
    return wait_for("%r in the log of %s/%s" % (marker, namespace, name), printed, timeout,
                    state=lambda: pod_summary(name, namespace) + "\nlog:\n" +
                    pod_log(name, namespace))


def node(name):
    return get("node", name)


def allocatable(node_name, resource):
    n = node(node_name)
    value = n["status"].get("allocatable", {}).get(resource)
    return int(value) if value is not None else None
