"""kube_api.py -- a small Kubernetes API client for the benches that drive a
real kube-apiserver (kube_replay.py): requests over keep-alive HTTPS
connections, one per thread, a pod watch that notes when each pod is bound,
and a sampler of a few processes' CPU and memory from /proc.

Python's standard library only. The kubeconfig is read with `kubectl config
view --raw -o json` (kubectl is part of the e2e's packages), so any
kubeconfig kubectl can read works; it must carry the CA and a client
certificate (as scripts/e2e/cluster-pki.sh writes them), embedded or as files.
"""
import base64
import http.client
import json
import os
import ssl
import subprocess
import threading
import time
import urllib.parse


class ApiError(Exception):
    pass


def _material(work, name, data, path):
    """A certificate or key as a file: the path given, or the data written out."""
    if path:
        return path
    out = os.path.join(work, name)
    with open(out, "wb") as f:
        f.write(base64.b64decode(data))
    os.chmod(out, 0o600)
    return out


class Api:
    """The API server of one kubeconfig (its current context)."""

    def __init__(self, kubeconfig, work):
        view = json.loads(subprocess.run(
            ["kubectl", "config", "view", "--raw", "--minify", "-o", "json",
             "--kubeconfig", kubeconfig], check=True, capture_output=True, text=True,
            timeout=30).stdout)
        cluster, user = view["clusters"][0]["cluster"], view["users"][0]["user"]
        url = urllib.parse.urlsplit(cluster["server"])
        self.host, self.port = url.hostname, url.port or 443
        os.makedirs(work, exist_ok=True)
        self.ctx = ssl.create_default_context(cafile=_material(
            work, "ca.crt", cluster.get("certificate-authority-data"),
            cluster.get("certificate-authority")))
        self.ctx.load_cert_chain(
            _material(work, "client.crt", user.get("client-certificate-data"),
                      user.get("client-certificate")),
            _material(work, "client.key", user.get("client-key-data"), user.get("client-key")))
        self.local = threading.local()

    def connect(self, timeout=60):
        return http.client.HTTPSConnection(self.host, self.port, context=self.ctx, timeout=timeout)

    def request(self, method, path, body=None, ok=(200, 201, 202)):
        """One request on this thread's connection (made again once if it
        broke); the decoded JSON answer. ApiError unless the status is ok."""
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        for attempt in (0, 1):
            conn = getattr(self.local, "conn", None) or self.connect()
            self.local.conn = conn
            try:
                conn.request(method, path, body=data, headers=headers)
                resp = conn.getresponse()
                raw = resp.read()
                break
            except (OSError, http.client.HTTPException):
                conn.close()
                self.local.conn = None
                if attempt:
                    raise
        answer = json.loads(raw) if raw else {}
        if resp.status not in ok:
            raise ApiError("%s %s: HTTP %d: %s" % (method, path, resp.status,
                                                  answer.get("message", raw[:300])))
        return answer

    def create(self, path, obj, exist_ok=False):
        return self.request("POST", path, obj, ok=(200, 201, 202) + ((409,) if exist_ok else ()))


class PodWatch(threading.Thread):
    """Watches the pods of a namespace and notes, on this machine's monotonic
    clock, when each one is first seen bound (spec.nodeName) and when first
    seen unschedulable (condition PodScheduled False, reason Unschedulable).
    A watch that ends is resumed from a fresh list; a pod found bound by a
    list rather than an event gets the list's time (counted in `relisted`)."""

    def __init__(self, api, namespace):
        super().__init__(daemon=True)
        self.api, self.ns = api, namespace
        self.bound, self.unschedulable, self.node = {}, {}, {}
        self.relisted = 0
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.synced = threading.Event()
        self.error = None
        self.conn = None

    def note(self, pod, listed=False):
        now = time.monotonic()
        name = pod["metadata"]["name"]
        with self.lock:
            node = (pod.get("spec") or {}).get("nodeName")
            if node and name not in self.bound:
                self.bound[name], self.node[name] = now, node
                self.relisted += listed
            for c in (pod.get("status") or {}).get("conditions") or []:
                if (c.get("type") == "PodScheduled" and c.get("status") == "False" and
                        c.get("reason") == "Unschedulable" and name not in self.unschedulable):
                    self.unschedulable[name] = now

    def last_bind(self):
        with self.lock:
            return max(self.bound.values(), default=None)

    def settled(self, names):
        """How many of names are bound or unschedulable."""
        with self.lock:
            return sum(1 for n in names if n in self.bound or n in self.unschedulable)

    def run(self):
        base = "/api/v1/namespaces/%s/pods" % self.ns
        try:
            while not self.stopping.is_set():
                listed = self.api.request("GET", base)
                for pod in listed["items"]:
                    self.note(pod, listed=self.synced.is_set())
                self.synced.set()
                rv = listed["metadata"]["resourceVersion"]
                conn = self.conn = self.api.connect(timeout=None)
                try:
                    conn.request("GET", "%s?watch=1&resourceVersion=%s&timeoutSeconds=900" % (
                        base, rv), headers={"Accept": "application/json"})
                    resp = conn.getresponse()
                    while not self.stopping.is_set():
                        line = resp.readline()
                        if not line:
                            break
                        ev = json.loads(line)
                        if ev.get("type") in ("ADDED", "MODIFIED"):
                            self.note(ev["object"])
                        elif ev.get("type") == "ERROR":
                            break  # e.g. 410 Gone: list again
                finally:
                    conn.close()
        except Exception as e:  # noqa: BLE001 -- reported by the caller
            if not self.stopping.is_set():
                self.error = e
            self.synced.set()

    def stop(self):
        """Ends the watch (its connection closed: the API server would wait for it)."""
        self.stopping.set()
        if self.conn is not None and self.conn.sock is not None:
            try:
                self.conn.sock.shutdown(2)
            except OSError:  # the API server or the reader closed it first: ended anyway
                pass
        self.join(10)


def _read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


def proc_cpu_seconds(pid):
    stat = _read("/proc/%d/stat" % pid)
    if stat is None:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def proc_hwm_kib(pid):
    """The process's peak resident set (VmHWM), KiB."""
    for line in (_read("/proc/%d/status" % pid) or "").splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return None


class ProcSampler(threading.Thread):
    """CPU seconds used and peak resident memory of named processes (pids),
    from start() to stop(); also the busiest second's CPU (cores), sampled
    every `interval` s."""

    def __init__(self, pids, interval=0.5):
        super().__init__(daemon=True)
        self.pids, self.interval = dict(pids), interval
        self.first = {n: proc_cpu_seconds(p) for n, p in self.pids.items()}
        self.last = dict(self.first)
        self.peak_cores = {n: 0.0 for n in self.pids}
        self.hwm = {n: proc_hwm_kib(p) for n, p in self.pids.items()}
        self.stopping = threading.Event()

    def sample(self, since, prev):
        now = time.monotonic()
        for n, p in self.pids.items():
            cpu, hwm = proc_cpu_seconds(p), proc_hwm_kib(p)
            if cpu is not None:
                if prev.get(n) is not None and now > since:
                    self.peak_cores[n] = max(self.peak_cores[n], (cpu - prev[n]) / (now - since))
                prev[n] = self.last[n] = cpu
            if hwm is not None:
                self.hwm[n] = max(self.hwm[n] or 0, hwm)
        return now

    def run(self):
        prev, since = dict(self.first), time.monotonic()
        window = since
        while not self.stopping.wait(self.interval):
            if time.monotonic() - window >= 1.0:
                window = self.sample(window, prev)

    def stop(self):
        self.stopping.set()
        self.join(5)
        self.sample(time.monotonic(), {})
        return {n: {"cpu_s": round((self.last[n] or 0) - (self.first[n] or 0), 2),
                    "peak_cores": round(self.peak_cores[n], 2),
                    "peak_rss_mib": round((self.hwm[n] or 0) / 1024, 1)} for n in self.pids}
