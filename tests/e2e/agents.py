"""agents.py -- vgpu's node agent and scheduler, started against the real cluster.

What an operator applies from deploy/base is applied here too: the namespace,
the service accounts and the RBAC of the device plugin and of the scheduler
(enforced: the API server runs with RBAC). The programs then run as host
processes with exactly those identities: each gets a kubeconfig holding a
token of its own ServiceAccount (TokenRequest, `kubectl create token`), so a
missing permission in deploy/ fails here as it would in a cluster.

They run on the host rather than as the DaemonSet/Deployment of deploy/
because this cluster has no kube-proxy (a pod cannot reach the API server's
Service address) and no registry for the vgpu image; docs/e2e.md says so.

- vgpu-device-plugin: the e2e configuration (config.yaml.in: every dialect
  at once), the kubelet's device-plugin dir and pod-resources socket, the
  simulated GPUs, metrics on 127.0.0.1.
- vgpu-scheduler: the extender on 127.0.0.1.
- kube-scheduler (the cluster's own binary) as the second scheduler
  `vgpu-scheduler`, configured by deploy/base/scheduler-config.yaml rendered
  to kubescheduler.config.k8s.io/v1beta1, which 1.20 reads (the v1 file in
  deploy/ is for 1.25+).
"""
import os
import signal
import subprocess
import urllib.request

import yaml

import kube

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RBAC_KINDS = ("Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role",
              "RoleBinding")
EXTENDER_PORT = 18888
METRICS_PORT = 19400
SCHEDULER_PORT = 10269


def deploy_rbac_objects():
    """The namespace, service accounts and RBAC of deploy/base, unchanged."""
    objs = []
    for name in ("namespace.yaml", "rbac-device-plugin.yaml", "rbac-scheduler.yaml"):
        with open(os.path.join(ROOT, "deploy", "base", name)) as f:
            objs += [o for o in yaml.safe_load_all(f) if o and o.get("kind") in RBAC_KINDS]
    return objs


def scheduler_config_v1beta1(kubeconfig, extender_url):
    """deploy/base/scheduler-config.yaml for kube-scheduler 1.20: the same
    profile and extender, as v1beta1, with this cluster's kubeconfig and the
    extender's loopback port."""
    with open(os.path.join(ROOT, "deploy", "base", "scheduler-config.yaml")) as f:
        cfg = yaml.safe_load(f)
    cfg["apiVersion"] = "kubescheduler.config.k8s.io/v1beta1"
    cfg["clientConnection"] = {"kubeconfig": kubeconfig}
    for ext in cfg["extenders"]:
        ext["urlPrefix"] = extender_url
    return cfg


def write_token_kubeconfig(path, sa, namespace, env):
    token = kube.kubectl("create", "token", sa, "-n", namespace, "--duration=24h").strip()
    cfg = {
        "apiVersion": "v1", "kind": "Config", "current-context": "e2e",
        "clusters": [{"name": "e2e", "cluster": {"server": env["VGPU_E2E_APISERVER"],
                                                 "certificate-authority": env["VGPU_E2E_CA"]}}],
        "users": [{"name": sa, "user": {"token": token}}],
        "contexts": [{"name": "e2e", "context": {"cluster": "e2e", "user": sa}}],
    }
    with open(path, "w") as f:
        yaml.safe_dump(cfg, f)
    os.chmod(path, 0o600)
    return path


class Agents:
    """The three processes; start() waits until each serves, stop() ends
    only these processes."""

    def __init__(self, env, build, work):
        self.env, self.build, self.work = env, build, work
        self.procs = {}
        self.state_dir = os.path.join(work, "vgpu-state")
        self.config = os.path.join(work, "vgpu-config.yaml")
        os.makedirs(os.path.join(work, "logs"), exist_ok=True)

    def log_path(self, name):
        return os.path.join(self.work, "logs", name + ".log")

    def spawn(self, name, argv, extra_env=None):
        envp = dict(os.environ)
        envp.update(extra_env or {})
        log = open(self.log_path(name), "ab")
        self.procs[name] = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=envp,
                                            start_new_session=True)

    def setup_identities(self):
        for obj in deploy_rbac_objects():
            kube.apply(obj)
        ns = "vgpu-system"
        self.plugin_kc = write_token_kubeconfig(os.path.join(self.work, "plugin.kubeconfig"),
                                                "vgpu-device-plugin", ns, self.env)
        self.sched_kc = write_token_kubeconfig(os.path.join(self.work, "scheduler.kubeconfig"),
                                               "vgpu-scheduler", ns, self.env)

    def write_plugin_config(self):
        with open(os.path.join(ROOT, "tests", "e2e", "config.yaml.in")) as f:
            text = f.read()
        text = text.replace("@LIBRARY@", os.path.join(self.build, "lib", "libvgpu.so"))
        text = text.replace("@STATE_DIR@", self.state_dir)
        with open(self.config, "w") as f:
            f.write(text)

    def sim_env(self):
        return {"LD_LIBRARY_PATH": os.path.join(self.build, "sim"),
                "VGPU_SIM_STATE": self.env["VGPU_E2E_SIM_STATE"]}

    def start_plugin(self):
        root = self.env["VGPU_E2E_KUBELET_ROOT"]
        self.spawn("vgpu-device-plugin", [
            os.path.join(self.build, "bin", "vgpu-device-plugin"), "--config", self.config,
            "--node-name", self.env["VGPU_E2E_NODE"], "--kubeconfig", self.plugin_kc,
            "--plugin-dir", os.path.join(root, "device-plugins"),
            "--podresources-socket", os.path.join(root, "pod-resources", "kubelet.sock"),
            "--metrics", "127.0.0.1:%d" % METRICS_PORT,
            # 60 s by default; shorter so that cleanup-after-delete does not wait a minute.
            "--slot-grace", "15"], self.sim_env())
        kube.wait_for("the device plugin's /healthz", lambda: http_ok(
            "http://127.0.0.1:%d/healthz" % METRICS_PORT), 30,
            state=lambda: self.tail("vgpu-device-plugin"))

    def signal_plugin(self, sig):
        self.procs["vgpu-device-plugin"].send_signal(sig)

    def stop_plugin(self, sig=signal.SIGTERM):
        self.stop_one("vgpu-device-plugin", sig)

    def start_extender(self):
        self.spawn("vgpu-scheduler", [
            os.path.join(self.build, "bin", "vgpu-scheduler"),
            "--listen", "127.0.0.1:%d" % EXTENDER_PORT, "--kubeconfig", self.sched_kc])
        kube.wait_for("the extender's /healthz", lambda: http_ok(
            "http://127.0.0.1:%d/healthz" % EXTENDER_PORT), 30,
            state=lambda: self.tail("vgpu-scheduler"))

    def start_kube_scheduler(self):
        cfg_path = os.path.join(self.work, "scheduler-config.v1beta1.yaml")
        with open(cfg_path, "w") as f:
            yaml.safe_dump(scheduler_config_v1beta1(
                self.sched_kc, "http://127.0.0.1:%d" % EXTENDER_PORT), f)
        cert_dir = os.path.join(self.work, "kube-scheduler-certs")
        os.makedirs(cert_dir, exist_ok=True)
        self.previous_leader = self.scheduler_leads()
        self.spawn("kube-scheduler-vgpu", [
            os.path.join(self.env["VGPU_E2E_KUBE_BIN"], "kube-scheduler"), "--config", cfg_path,
            "--port=0", "--secure-port=%d" % SCHEDULER_PORT, "--bind-address=127.0.0.1",
            "--cert-dir", cert_dir, "--v=2"])
        kube.wait_for("kube-scheduler vgpu-scheduler to lead", self.scheduler_leads, 60,
                      state=lambda: self.tail("kube-scheduler-vgpu"))

    def scheduler_leads(self):
        """The lease's holder, once it is not a scheduler an earlier run left."""
        lease = kube.get("lease", "vgpu-scheduler", "vgpu-system")
        holder = lease["spec"].get("holderIdentity") if lease else None
        return holder if holder != getattr(self, "previous_leader", None) else None

    def start(self):
        os.makedirs(self.state_dir, exist_ok=True)
        self.setup_identities()
        self.write_plugin_config()
        self.start_plugin()
        self.start_extender()
        self.start_kube_scheduler()

    def stop_one(self, name, sig=signal.SIGTERM):
        proc = self.procs.pop(name, None)
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(sig)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def stop(self):
        for name in list(self.procs):
            self.stop_one(name)

    def tail(self, name, lines=30):
        try:
            with open(self.log_path(name), errors="replace") as f:
                return "".join(f.readlines()[-lines:])
        except OSError as e:
            return str(e)

    def metrics(self):
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % METRICS_PORT, timeout=5) as r:
            return r.read().decode()


def http_ok(url):
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            return r.status == 200
    except OSError:
        return False
