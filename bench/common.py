"""common.py -- what the Python benches share: the fake API server with a
kubeconfig for it, the real device plugin on the simulated GPU, requests to
the fake, and percentiles. One way to start each, so the benches differ only
in what they measure."""
import json
import os
import subprocess
import sys
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOKEN = "bench-token"


def start_fake_api(work, token=TOKEN):
    """tests/k8s/fake_apiserver.py on a free port; (process, port, kubeconfig path)."""
    proc = subprocess.Popen(["/usr/bin/python3",
                             os.path.join(ROOT, "tests", "k8s", "fake_apiserver.py"),
                             "--token", token], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    line = proc.stdout.readline()
    if not line.startswith("PORT "):
        proc.kill()
        sys.exit("the fake API server did not print its port: %r" % line)
    port = int(line.split()[1])
    kubeconfig = os.path.join(work, "kubeconfig")
    with open(kubeconfig, "w") as f:
        f.write("apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters:\n- name: k\n"
                "  cluster:\n    server: http://127.0.0.1:%d\ncontexts:\n- name: c\n"
                "  context: {cluster: k, user: u}\nusers:\n- name: u\n  user:\n"
                "    token: %s\n" % (port, token))
    return proc, port, kubeconfig


def post(port, path, body, token=None):
    """POSTs body (bytes, or an object sent as JSON); the parsed JSON answer."""
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path), data=data,
                                 headers={"Content-Type": "application/json"})
    if token:
        req.add_header("Authorization", "Bearer " + token)
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.loads(r.read())


def start_plugin(build, work, name="dp", gpus=2, slots=128, extra=()):
    """vgpu-device-plugin on gpus simulated 80 GiB GPUs, no kubelet; (process, socket)."""
    env = dict(os.environ, LD_LIBRARY_PATH=os.path.join(build, "sim"),
               VGPU_SIM_STATE=os.path.join(work, "sim.state"),  # one simulated node
               VGPU_SIM_DEVICES=str(gpus), VGPU_SIM_MEMORY="80g")
    dp = os.path.join(work, name)
    os.makedirs(dp)
    cmd = [os.path.join(build, "bin", "vgpu-device-plugin"), "--plugin-dir", dp,
           "--kubelet-socket", "", "--state-dir", os.path.join(work, "state-" + name),
           "--slots", str(slots)] + list(extra)
    log = open(os.path.join(work, name + ".log"), "w")
    proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=log)
    sock = os.path.join(dp, "vgpu-nvidia.com_vgpu.sock")
    for _ in range(400):
        if os.path.exists(sock):
            return proc, sock
        time.sleep(0.025)
    proc.kill()
    sys.exit("plugin did not start; see " + log.name)


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(p / 100.0 * len(values)))]
