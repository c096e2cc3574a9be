#!/usr/bin/python3
"""The fake API server keeps quantities as kube-apiserver does (canonical form).

Our readers once passed every test and failed on a real cluster, because the
fake handed back "3000" where kube-apiserver hands back "3k". This pins the
fake to the real server's answers (the pairs below are kube-apiserver 1.20's),
both in the function and through HTTP: create a Pod and a Node, read them
back, list the Pods, patch the Node.

Usage: test_fake_quantity.py FAKE_APISERVER_PY
"""

import importlib.util
import json
import subprocess
import sys
import urllib.request

# What users write -> what kube-apiserver stores and returns.
CANONICAL = [
    ("3000", "3k"), ("2000", "2k"), ("8000", "8k"), (3000, "3k"), ("4096", "4096"),
    ("1000000", "1M"), ("1024Mi", "1Gi"), ("2048Mi", "2Gi"), ("1536Mi", "1536Mi"),
    ("1.5Gi", "1536Mi"), ("0.5Ki", "512"), ("1Ki", "1Ki"), ("3e3", "3e3"), ("1e4", "10e3"),
    ("1.5k", "1500"), ("1.5", "1500m"), ("0.1", "100m"), ("500m", "500m"), ("+3", "3"),
    ("007", "7"), ("0", "0"), ("0Gi", "0"), ("3.001n", "4n"), ("-3000", "-3k"), ("1E", "1E"),
    (" 3000 ", "3k"),
    ("two", "two"),  # not a quantity: kept (the real server would refuse the pod)
]

FAILURES = []


def check(cond, what):
    if not cond:
        FAILURES.append(what)
        print("FAIL:", what)


def load(path):
    spec = importlib.util.spec_from_file_location("fake_apiserver", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_function(fake):
    for given, want in CANONICAL:
        got = fake.canonical_quantity(given)
        check(got == want, "%r -> %r, want %r" % (given, got, want))


def request(url, method="GET", obj=None, ctype="application/json"):
    data = json.dumps(obj).encode() if obj is not None else None
    req = urllib.request.Request(url, data=data, method=method, headers={
        "Authorization": "Bearer t", "Content-Type": ctype})
    with urllib.request.urlopen(req) as r:
        return json.loads(r.read())


def test_http(path):
    proc = subprocess.Popen(["/usr/bin/python3", path, "--token", "t"], stdout=subprocess.PIPE,
                            text=True)
    try:
        url = "http://127.0.0.1:%s" % proc.stdout.readline().split()[1]
        limits = {"nvidia.com/gpumem": "3000", "aliyun.com/gpu-mem": 8000,
                  "nvidia.com/vgpu": "1e0", "memory": "1024Mi"}
        pod = {"metadata": {"name": "p", "namespace": "default"},
               "spec": {"containers": [{"name": "c", "resources": {
                   "limits": limits, "requests": dict(limits)}}],
                   "initContainers": [{"name": "i", "resources": {"limits": {"cpu": "1000m"}}}]}}
        request(url + "/_test/pods", "POST", pod)
        got = request(url + "/api/v1/namespaces/default/pods/p")
        want = {"nvidia.com/gpumem": "3k", "aliyun.com/gpu-mem": "8k", "nvidia.com/vgpu": "1",
                "memory": "1Gi"}
        res = got["spec"]["containers"][0]["resources"]
        check(res["limits"] == want, "pod limits: %s" % res["limits"])
        check(res["requests"] == want, "pod requests: %s" % res["requests"])
        check(got["spec"]["initContainers"][0]["resources"]["limits"] == {"cpu": "1"},
              "init container: %s" % got["spec"]["initContainers"])
        listed = request(url + "/api/v1/pods")["items"][0]
        check(listed["spec"]["containers"][0]["resources"]["limits"] == want, "pod list")
        node = {"metadata": {"name": "n"}, "status": {"capacity": {"aliyun.com/gpu-mem": "16000"},
                                                      "allocatable": {"memory": "2048Mi"}}}
        request(url + "/_test/nodes", "POST", node)
        got = request(url + "/api/v1/nodes/n")["status"]
        check(got == {"capacity": {"aliyun.com/gpu-mem": "16k"},
                      "allocatable": {"memory": "2Gi"}}, "node status: %s" % got)
        patched = request(url + "/api/v1/nodes/n", "PATCH",
                          {"status": {"capacity": {"aliyun.com/gpu-mem": "32000"}}},
                          "application/merge-patch+json")
        check(patched["status"]["capacity"] == {"aliyun.com/gpu-mem": "32k"},
              "patched node: %s" % patched["status"])
    finally:
        proc.kill()
        proc.wait()


def main():
    fake = load(sys.argv[1])
    test_function(fake)
    test_http(sys.argv[1])
    print("%d failure(s)" % len(FAILURES))
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
