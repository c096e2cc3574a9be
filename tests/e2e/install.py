"""install.py -- vgpu installed on the real cluster as docs/install.md says.

The steps are the install guide's, in its order, so the guide is followed
here on every run:

1. images: `make images` built build/images/*.tar; on this one-node cluster
   they are imported into containerd (`ctr images import`), as an operator
   without a registry would; the kube-scheduler image is the cluster's own
   binary (images.sh kube-scheduler), tagged as deploy/ expects;
2. label the GPU node vgpu.io/gpu=true;
3. preflight: deploy/preflight.sh against the cluster (a pod of the node
   image on the GPU node checks the runtime gives it NVML and GPUs, the
   kubelet's sockets, the API);
4. `kubectl apply -k` of the overlay deploy/kube-version.sh writes, as
   docs/install.md says (kube-scheduler's tag = the cluster's version, its
   configuration as the apiVersion that release reads: v1beta1 on 1.20),
   over an overlay of deploy/base with every dialect at once
   (config.yaml.in, as a copied overlay with your own config.yaml is,
   docs/deploy.md), and (1.20) the label that keeps kube-system out of the
   webhook. One e2e-only setting: the plugin's --slot-grace=15, so
   cleanup-after-delete does not wait a minute;
5. wait: every DaemonSet and Deployment rolled out, every Job complete;
6. (uninstall) `kubectl delete -k`, then the node's /usr/local/vgpu and
   /var/lib/vgpu removed; uninstalled() says what is left.

Nothing of vgpu runs on the host: the device plugin, the extender, the
webhook and kube-scheduler run in pods from the images. The simulated GPUs
reach the device plugin's container as the real driver would, through the
runtime (tests/e2e/sim-runtime: NVIDIA_VISIBLE_DEVICES=all in its spec).
"""
import json
import os
import shutil
import subprocess
import tempfile
import urllib.request

import yaml

import kube

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NS = "vgpu-system"
PLUGIN = "vgpu-device-plugin"
PLUGIN_LABEL = "app.kubernetes.io/name=" + PLUGIN
METRICS_PORT = 9400
HOST_DIRS = ("/usr/local/vgpu", "/var/lib/vgpu")
STATE_DIR = "/var/lib/vgpu"
SLOTS_DIR = os.path.join(STATE_DIR, "slots")
GPU_LABEL = "vgpu.io/gpu"


def scheduler_config_v1beta1():
    """deploy/base/scheduler-config.yaml as deploy/kube-version.sh writes it for
    Kubernetes 1.20 (kubescheduler.config.k8s.io/v1beta1): what bench/kube_replay.py
    runs its kube-scheduler with."""
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(["bash", os.path.join(ROOT, "deploy", "kube-version.sh"), "--version",
                        "v1.20.2", tmp], check=True, capture_output=True, timeout=30)
        with open(os.path.join(tmp, "scheduler-config.yaml")) as f:
            return yaml.safe_load(f)


def e2e_plugin_config():
    """config.yaml.in: every dialect on one node."""
    with open(os.path.join(ROOT, "tests", "e2e", "config.yaml.in")) as f:
        return f.read()


def image_archives(build):
    d = os.path.join(build, "images")
    tars = sorted(os.path.join(d, t) for t in os.listdir(d) if t.endswith(".tar")) \
        if os.path.isdir(d) else []
    if not tars:
        raise kube.E2EError("no image archives in %s: run make images" % d)
    return tars


class Installation:
    """vgpu on the cluster; start() installs (steps 1-5), stop() uninstalls."""

    def __init__(self, env, build, work):
        self.env, self.build, self.work = env, build, work
        self.dialects = os.path.join(work, "dialects")  # deploy/base, every dialect
        self.overlay = os.path.join(work, "overlay")  # what deploy/kube-version.sh wrote over it
        self.node = env["VGPU_E2E_NODE"]

    # ---- the steps

    def run(self, argv, timeout=300):
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
        if proc.returncode != 0:
            raise kube.E2EError("%s failed (%d):\n%s%s" % (" ".join(argv), proc.returncode,
                                                         proc.stdout[-3000:], proc.stderr[-3000:]))
        return proc.stdout

    def preflight(self):
        return self.run(["bash", os.path.join(ROOT, "deploy", "preflight.sh"), "--node", self.node],
                        timeout=240)

    def load_images(self):
        images = os.path.join(ROOT, "scripts", "e2e", "images.sh")
        self.run(["bash", images, "kube-scheduler"])
        self.run(["bash", images, "import", os.path.join(ROOT, "build", "e2e", "images",
                                                          "kube-scheduler.tar"), *image_archives(self.build)])

    def label_node(self):
        kube.kubectl("label", "node", self.node, GPU_LABEL + "=true", "--overwrite")

    def write_overlay(self):
        """deploy/base with config.yaml.in and the e2e's slot grace, then the
        overlay over it that deploy/kube-version.sh writes for this cluster
        (docs/install.md, step 4: the same command users run)."""
        for d in (self.dialects, self.overlay):
            if os.path.isdir(d):
                shutil.rmtree(d)
        os.makedirs(self.dialects)
        with open(os.path.join(self.dialects, "config.yaml"), "w") as f:
            f.write(e2e_plugin_config())
        kustomization = {
            "resources": [os.path.relpath(os.path.join(ROOT, "deploy", "base"), self.dialects)],
            "configMapGenerator": [
                {"name": "vgpu-device-plugin-config", "namespace": NS, "files": ["config.yaml"]}],
            "patches": [{"target": {"kind": "DaemonSet", "name": PLUGIN}, "patch": json.dumps([
                {"op": "add", "path": "/spec/template/spec/containers/0/command/-",
                 "value": "--slot-grace=15"}])}],
        }
        with open(os.path.join(self.dialects, "kustomization.yaml"), "w") as f:
            yaml.safe_dump(kustomization, f)
        print("    " + self.run(["bash", os.path.join(ROOT, "deploy", "kube-version.sh"), "--base",
                                 self.dialects, self.overlay]).strip(), flush=True)

    def apply_renamed(self, renames):
        """vgpu with resources renamed as docs/configuration.md's "Renaming a
        resource" tells an operator: the name in the device plugin's configuration,
        the same `--resource KEY=NAME` on vgpu-scheduler and vgpu-webhook, and the new
        name in kube-scheduler's managedResources; an overlay over the installed one.
        renames: {configuration key: name}, e.g. {"vgpu.resourceMem": "example.com/vram"};
        {} puts the installation back as it was. Waits for the new pods."""
        if not renames:
            kube.kubectl("apply", "-k", self.overlay, timeout=120)
            self.wait_ready()
            return
        d = os.path.join(self.work, "renamed")
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        config = yaml.safe_load(e2e_plugin_config())
        for key, name in renames.items():
            dialect, field = key.split(".")
            config["dialects"][dialect][field] = name
        with open(os.path.join(d, "config.yaml"), "w") as f:
            yaml.safe_dump(config, f)
        sched = os.path.join(self.overlay, "scheduler-config.yaml")  # kube-version.sh's, if any
        if not os.path.exists(sched):
            sched = os.path.join(ROOT, "deploy", "base", "scheduler-config.yaml")
        with open(sched) as f:
            sched = yaml.safe_load(f)
        for name in renames.values():
            sched["extenders"][0]["managedResources"].append(
                {"name": name, "ignoredByScheduler": True})
        with open(os.path.join(d, "scheduler-config.yaml"), "w") as f:
            yaml.safe_dump(sched, f)
        flags = [{"op": "add", "path": "/spec/template/spec/containers/%d/command/-", "value":
                  "--resource=%s=%s" % kv} for kv in sorted(renames.items())]
        def patch(name, container):
            return {"target": {"kind": "Deployment", "name": name}, "patch": json.dumps(
                [dict(op, path=op["path"] % container) for op in flags])}
        kustomization = {
            "bases": [os.path.relpath(self.overlay, d)],
            "configMapGenerator": [
                {"name": "vgpu-device-plugin-config", "namespace": NS, "behavior": "replace",
                 "files": ["config.yaml"]},
                {"name": "vgpu-scheduler-config", "namespace": NS, "behavior": "replace",
                 "files": ["scheduler-config.yaml"]}],
            "patches": [patch("vgpu-scheduler", 1), patch("vgpu-webhook", 0)],
        }
        with open(os.path.join(d, "kustomization.yaml"), "w") as f:
            yaml.safe_dump(kustomization, f)
        kube.kubectl("apply", "-k", d, timeout=120)
        self.wait_ready()

    def kube_version(self):
        v = json.loads(kube.kubectl("version", "-o", "json"))["serverVersion"]["gitVersion"]
        return v.lstrip("v").split("-")[0].split("+")[0]

    def rendered(self):
        return [o for o in yaml.safe_load_all(kube.kubectl("kustomize", self.overlay)) if o]

    def apply(self):
        self.write_overlay()
        if tuple(int(x) for x in self.kube_version().split(".")[:2]) < (1, 21):
            # No kubernetes.io/metadata.name label before 1.21: kube-system is kept out of the
            # webhook by this label instead (docs/install.md, step 4).
            kube.kubectl("label", "namespace", "kube-system", "vgpu.io/admission=ignore",
                         "--overwrite")
        kube.kubectl("apply", "-k", self.overlay, timeout=120)
        self.wait_ready()

    def wait_ready(self):
        for o in self.rendered():
            kind, name = o["kind"], o["metadata"]["name"]
            ns = o["metadata"].get("namespace", NS)
            if kind in ("DaemonSet", "Deployment"):
                kube.kubectl("-n", ns, "rollout", "status", "%s/%s" % (kind.lower(), name),
                             "--timeout=180s", timeout=200)
            elif kind == "Job":
                kube.kubectl("-n", ns, "wait", "--for=condition=complete", "job/" + name,
                             "--timeout=120s", timeout=140)
        kube.wait_for("the device plugin's /healthz", self.plugin_healthy, 60,
                      state=lambda: self.tail(PLUGIN))

    def start(self):
        self.load_images()
        self.label_node()
        self.preflight()
        self.apply()

    # ---- uninstall

    def stop(self):
        """Uninstall: the objects, then the node's directories."""
        # Not --wait: a 1.20 kubelet can take a minute to remove a deleted pod's object (e2e.md),
        # and the namespace waits for that; what matters is that nothing of vgpu runs.
        if os.path.isdir(self.overlay):
            kube.kubectl("delete", "-k", self.overlay, "--ignore-not-found", "--wait=false",
                         timeout=120, check=False)
        for pod in self.pods():
            name = pod["metadata"]["name"]
            kube.wait_for("pod %s/%s to stop" % (NS, name), lambda: kube.pod_stopped(name, NS), 120,
                          state=lambda: kube.pod_summary(name, NS))
        kube.kubectl("label", "node", self.node, GPU_LABEL + "-", check=False)
        kube.kubectl("label", "namespace", "kube-system", "vgpu.io/admission-", check=False)
        for d in HOST_DIRS:
            shutil.rmtree(d, ignore_errors=True)

    def leftovers(self):
        """What an uninstall left behind: objects of vgpu, host paths, sockets.
        The namespace may still be Terminating (its pods' objects go when the
        kubelet gets round to it); its containers have stopped (stop())."""
        left = []
        for kind in ("clusterrole", "clusterrolebinding", "mutatingwebhookconfiguration"):
            out = kube.kubectl("get", kind, "-o", "name", check=False)
            left += [n for n in out.split() if "vgpu" in n]
        ns = kube.get("namespace", NS)
        if ns and ns["status"].get("phase") != "Terminating":
            left.append("namespace/" + NS)
        left += [d for d in HOST_DIRS if os.path.exists(d)]
        sockets = "/var/lib/kubelet/device-plugins"
        left += [os.path.join(sockets, s) for s in os.listdir(sockets) if s.startswith("vgpu")]
        labels = (kube.node(self.node)["metadata"].get("labels") or {})
        left += ["node label " + GPU_LABEL] if GPU_LABEL in labels else []
        return left

    # ---- what the cases use

    def pods(self, selector=None):
        args = ["-n", NS, "get", "pods", "-o", "json"] + (["-l", selector] if selector else [])
        return json.loads(kube.kubectl(*args, check=False) or '{"items": []}')["items"]

    def plugin_pod(self):
        pods = [p for p in self.pods(PLUGIN_LABEL)
                if not p["metadata"].get("deletionTimestamp") and p["status"].get("podIP")]
        return pods[0] if pods else None

    def plugin_healthy(self):
        pod = self.plugin_pod()
        return pod is not None and http_ok("http://%s:%d/healthz" % (pod["status"]["podIP"],
                                                                    METRICS_PORT))

    def signal_plugin(self, sig):
        """The signal to the plugin, as docs/device-plugin.md tells operators:
        by its PID file (the pod shares the host's PID namespace, so PID 1
        there is the host's init)."""
        pod = self.plugin_pod()
        kube.kubectl("-n", NS, "exec", pod["metadata"]["name"], "-c", "device-plugin", "--",
                     "/bin/sh", "-c", "kill -%d $(cat /var/lib/vgpu/device-plugin.pid)" % int(sig))

    def restart_plugin(self):
        """The DaemonSet's pod deleted; the controller makes the next one."""
        old = self.plugin_pod()["metadata"]["name"]
        kube.kubectl("-n", NS, "delete", "pod", old, "--wait=true", timeout=120)
        kube.kubectl("-n", NS, "rollout", "status", "daemonset/" + PLUGIN, "--timeout=120s",
                     timeout=140)
        kube.wait_for("the new device plugin's /healthz", self.plugin_healthy, 60,
                      state=lambda: self.tail(PLUGIN))

    def plugin_flag(self, flag, on):
        """Adds (on) or removes one option of the device plugin's command, as
        an operator patches the DaemonSet, and waits for the new pod."""
        ds = json.loads(kube.kubectl("-n", NS, "get", "daemonset", PLUGIN, "-o", "json"))
        cmd = ds["spec"]["template"]["spec"]["containers"][0]["command"]
        if (flag in cmd) == on:
            return
        path = "/spec/template/spec/containers/0/command/"
        op = ({"op": "add", "path": path + "-", "value": flag} if on else
              {"op": "remove", "path": path + str(cmd.index(flag))})
        kube.kubectl("-n", NS, "patch", "daemonset", PLUGIN, "--type", "json", "-p",
                     json.dumps([op]))
        kube.kubectl("-n", NS, "rollout", "status", "daemonset/" + PLUGIN, "--timeout=120s",
                     timeout=140)
        kube.wait_for("the device plugin's /healthz", self.plugin_healthy, 60,
                      state=lambda: self.tail(PLUGIN))

    def tail(self, app, lines=30):
        return kube.kubectl("-n", NS, "logs", "-l", "app.kubernetes.io/name=" + app,
                            "--all-containers", "--tail=%d" % lines, check=False)

    def metrics(self):
        pod = self.plugin_pod()
        if pod is None:
            raise kube.E2EError("no running device plugin pod")
        url = "http://%s:%d/metrics" % (pod["status"]["podIP"], METRICS_PORT)
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.read().decode()


def http_ok(url):
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            return r.status == 200
    except OSError:
        return False
