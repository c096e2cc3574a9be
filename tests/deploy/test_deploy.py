#!/usr/bin/python3
"""Renders every deploy/ overlay with the real `kubectl kustomize` (or
`kustomize build`) and checks what would be applied, structurally: kinds and
names, namespaces, images (each one `make images` builds, by the reference
deploy/base/kustomization.yaml gives it, or the stock kube-scheduler), RBAC verbs (least privilege, no wildcards, bindings
to our service accounts), the DaemonSet's host paths, library install step,
NODE_NAME and probes, the scheduler's KubeSchedulerConfiguration (extender
URL matching the sidecar's port, verbs, nodeCacheCapable, every dialect's
resources managed and ignored by kube-scheduler), the admission webhook
(Deployment locked down, Service, certs Job, MutatingWebhookConfiguration
policies and namespaceSelector), and that each overlay's
device plugin configuration is exactly the example of its dialect. Then
docs/install.md's Privileges table against the rendered RBAC (deploy/base and
deploy/overlays/evict: nothing granted that the table lacks, nothing it says
yes to missing, no "no" row granted), and deploy/kube-version.sh's overlay for
every minor release of install.md's matrix (apiVersion and image tag).

With --bin-dir DIR, every --flag the manifests pass to vgpu-device-plugin,
vgpu-scheduler and vgpu-webhook (and its certs Job) must be one that the built program's --help documents,
and the webhook's --scheduler-user / --node-user (given or default) must be the service accounts
those two run as.

Exit 77 (CTest: skipped) when neither kubectl nor kustomize is installed.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEPLOY = os.path.join(ROOT, "deploy")
NS = "vgpu-system"
sys.path.insert(0, os.path.join(ROOT, "images"))
import spec  # noqa: E402  images/spec.py: the images `make images` builds and their references
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dialects  # noqa: E402  tests/deploy/dialects.py: src/common/dialect.c's table
import privileges  # noqa: E402  tests/deploy/privileges.py: docs/install.md's Privileges table

# deploy/base/kustomization.yaml's images: entries (images/spec.py reads them for `make images`)
REFS = spec.refs()
NODE_IMAGE = REFS.get("vgpu-node", "vgpu-node")
CONTROL_IMAGE = REFS.get("vgpu-scheduler", "vgpu-scheduler")
KUBE_SCHEDULER_IMAGE = "registry.k8s.io/kube-scheduler:v1.29.4"
OVERLAYS = {"vgpu": "vgpu.yaml", "gpushare": "gpushare.yaml",
            "time-slicing": "nvidia-time-slicing.yaml", "cce": "cce.yaml"}
ALL_GPU_RESOURCES = dialects.default_names()
FAILURES = []


def check(cond, what):
    if not cond:
        FAILURES.append(what)
        print("FAIL:", what)


def renderer():
    if os.environ.get("VG_KUBECTL"):
        return [os.environ["VG_KUBECTL"], "kustomize"]
    if shutil.which("kubectl"):
        return ["kubectl", "kustomize"]
    if shutil.which("kustomize"):
        return ["kustomize", "build"]
    return None


def render(cmd, overlay):
    p = subprocess.run(cmd + [os.path.join(DEPLOY, "overlays", overlay)],
                       capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        raise SystemExit("%s %s failed: %s" % (" ".join(cmd), overlay, p.stderr))
    return [d for d in yaml.safe_load_all(p.stdout) if d]


def index(docs):
    out = {}
    for d in docs:
        key = (d["kind"], d["metadata"]["name"])
        check(key not in out, "duplicate object %s/%s" % key)
        out[key] = d
    return out


def by_prefix(objs, kind, prefix):
    found = [o for (k, n), o in objs.items() if k == kind and n.startswith(prefix + "-")]
    check(len(found) == 1, "one generated %s %s-<hash>, got %d" % (kind, prefix, len(found)))
    return found[0] if found else {"metadata": {"name": "?"}, "data": {}}


def rules_of(role):
    """{resource: set(verbs)}; resourceNames-limited rules keyed resource@names."""
    out = {}
    for r in role.get("rules", []):
        check("*" not in r.get("verbs", []) and "*" not in r.get("resources", []) and
              "*" not in r.get("apiGroups", []), "wildcard in %s" % role["metadata"]["name"])
        for res in r["resources"]:
            key = res + ("@" + ",".join(r["resourceNames"]) if r.get("resourceNames") else "")
            out.setdefault(key, set()).update(r["verbs"])
    return out


def check_rbac(objs):
    dp = rules_of(objs[("ClusterRole", "vgpu-device-plugin")])
    check(dp == {"nodes": {"get"}, "nodes/status": {"patch"}, "pods": {"get", "list", "watch"},
                 "pods/status": {"patch"}, "events": {"create"}},
          "device plugin ClusterRole is exactly get nodes, patch nodes/status, get/list/watch "
          "pods, patch pods/status, create events (no pods/eviction: deploy/overlays/evict): %s"
          % dp)
    ext = rules_of(objs[("ClusterRole", "vgpu-scheduler-extender")])
    check(ext == {"nodes": {"get", "list", "watch"}, "pods": {"get", "list", "watch"},
                  "pods/status": {"patch"}, "pods/binding": {"create"}, "events": {"create"}},
          "extender ClusterRole is exactly get/list/watch nodes, get/list/watch pods, patch "
          "pods/status, create pods/binding and events: %s" % ext)
    le = rules_of(objs[("Role", "vgpu-scheduler-leader-election")])
    check(le == {"leases": {"create"}, "leases@vgpu-scheduler": {"get", "update"}},
          "leader election Role: %s" % le)
    want = {
        ("ClusterRoleBinding", "vgpu-device-plugin"): ("ClusterRole", "vgpu-device-plugin",
                                                       "vgpu-device-plugin"),
        ("ClusterRoleBinding", "vgpu-scheduler-extender"): ("ClusterRole",
                                                            "vgpu-scheduler-extender",
                                                            "vgpu-scheduler"),
        ("ClusterRoleBinding", "vgpu-scheduler-as-kube-scheduler"): (
            "ClusterRole", "system:kube-scheduler", "vgpu-scheduler"),
        ("ClusterRoleBinding", "vgpu-scheduler-as-volume-scheduler"): (
            "ClusterRole", "system:volume-scheduler", "vgpu-scheduler"),
        ("RoleBinding", "vgpu-scheduler-authentication-reader"): (
            "Role", "extension-apiserver-authentication-reader", "vgpu-scheduler"),
        ("RoleBinding", "vgpu-scheduler-leader-election"): (
            "Role", "vgpu-scheduler-leader-election", "vgpu-scheduler"),
        ("RoleBinding", "vgpu-webhook-certs"): ("Role", "vgpu-webhook-certs",
                                                "vgpu-webhook-certs"),
        ("ClusterRoleBinding", "vgpu-webhook-certs"): ("ClusterRole", "vgpu-webhook-certs",
                                                       "vgpu-webhook-certs"),
    }
    for key, (rkind, rname, sa) in want.items():
        b = objs.get(key)
        check(b is not None, "binding %s/%s exists" % key)
        if b is None:
            continue
        check((b["roleRef"]["kind"], b["roleRef"]["name"]) == (rkind, rname),
              "%s/%s refers to %s/%s" % (key + (rkind, rname)))
        check(b["subjects"] == [{"kind": "ServiceAccount", "name": sa, "namespace": NS}],
              "%s/%s binds only ServiceAccount %s/%s" % (key + (NS, sa)))
    auth = objs[("RoleBinding", "vgpu-scheduler-authentication-reader")]
    check(auth["metadata"]["namespace"] == "kube-system",
          "the authentication reader binding lives in kube-system")
    wh = rules_of(objs[("Role", "vgpu-webhook-certs")])
    check(wh == {"secrets": {"create"}, "secrets@vgpu-webhook-tls": {"get", "update"},
                 "secrets@vgpu-assignment-key": {"get"}},
          "certs Job Role: create secrets, get/update vgpu-webhook-tls, get "
          "vgpu-assignment-key only: %s" % wh)
    whc = rules_of(objs[("ClusterRole", "vgpu-webhook-certs")])
    check(whc == {"mutatingwebhookconfigurations@vgpu-webhook": {"get", "patch"},
                  "validatingwebhookconfigurations@vgpu-guard": {"get", "patch"}},
          "certs Job ClusterRole: get/patch the two webhook configurations only: %s" % whc)
    for kind in ("ClusterRole", "Role"):
        ours = [n for (k, n) in objs if k == kind]
        check(set(ours) <= {"vgpu-device-plugin", "vgpu-scheduler-extender",
                            "vgpu-scheduler-leader-election", "vgpu-webhook-certs"},
              "no other %s objects: %s" % (kind, ours))


def host_paths(pod):
    return {v["name"]: v["hostPath"]["path"] for v in pod["volumes"] if "hostPath" in v}


def mounts(ctr):
    return {m["name"]: m["mountPath"] for m in ctr.get("volumeMounts", [])}


def check_probes(ctr, what, kinds=("livenessProbe", "readinessProbe")):
    for p in kinds:
        check(p in ctr, "%s has a %s" % (what, p))


def check_daemonset(objs, overlay, config_file):
    ds = objs[("DaemonSet", "vgpu-device-plugin")]
    pod = ds["spec"]["template"]["spec"]
    pod_meta = ds["spec"]["template"]["metadata"]
    check(pod["serviceAccountName"] == "vgpu-device-plugin", "DaemonSet service account")
    check(pod.get("hostPID") is True,
          "DaemonSet in the host's PID namespace (the backstop maps NVML's PIDs to containers)")
    hp = host_paths(pod)
    for path in ("/var/lib/kubelet/device-plugins", "/var/lib/kubelet/pod-resources",
                 "/var/lib/vgpu", "/usr/local/vgpu"):
        check(path in hp.values(), "DaemonSet mounts host path %s" % path)
    init = pod["initContainers"]
    check(len(init) == 1 and init[0]["image"] == NODE_IMAGE,
          "one init container with %s" % NODE_IMAGE)
    lib_mount = mounts(init[0]).get([n for n, p in hp.items() if p == "/usr/local/vgpu"][0])
    script = " ".join(init[0]["command"])
    check(lib_mount is not None and "/opt/vgpu/lib/libvgpu.so" in script and
          "mv -f" in script and lib_mount + "/libvgpu.so" in script,
          "init step installs libvgpu.so at the host's /usr/local/vgpu/libvgpu.so by rename")
    (ctr,) = pod["containers"]
    check(ctr["image"] == NODE_IMAGE, "device plugin image %s" % ctr["image"])
    check(ctr["command"][0] == "vgpu-device-plugin", "runs vgpu-device-plugin")
    m = mounts(ctr)
    for name, path in hp.items():
        check(m.get(name) == path, "device plugin mounts %s at %s" % (path, path))
    # Allocate mounts the CLI into containers only when it sees it (plugin.c, cli_path).
    lib = [v for v in ctr.get("volumeMounts", []) if hp.get(v["name"]) == "/usr/local/vgpu"]
    check(len(lib) == 1 and lib[0].get("readOnly") is True,
          "device plugin sees /usr/local/vgpu (libvgpu.so, the vgpu CLI) read-only: %s" % lib)
    check(lib_mount is not None and "/opt/vgpu/bin/vgpu " in script and
          lib_mount + "/vgpu" in script, "init step installs the vgpu CLI at /usr/local/vgpu/vgpu")
    env = {e["name"]: e for e in ctr["env"]}
    check(env.get("NODE_NAME", {}).get("valueFrom") == {"fieldRef": {"fieldPath": "spec.nodeName"}},
          "NODE_NAME from the downward API")
    check("--node-name=$(NODE_NAME)" in ctr["command"], "--node-name=$(NODE_NAME)")
    ports = {p.get("name"): p["containerPort"] for p in ctr.get("ports", [])}
    check("--metrics=0.0.0.0:%s" % ports.get("metrics") in ctr["command"] and
          pod_meta.get("annotations", {}).get("prometheus.io/port") == str(ports.get("metrics")),
          "metrics served on the port the container and the scrape annotation name")
    check_probes(ctr, "device plugin", ("livenessProbe", "readinessProbe", "startupProbe"))
    check(ctr["securityContext"].get("allowPrivilegeEscalation") is False and
          ctr["securityContext"]["capabilities"]["drop"] == ["ALL"],
          "device plugin drops all capabilities")
    # The config: generated ConfigMap, referenced by its hashed name, mounted where --config says.
    cm = by_prefix(objs, "ConfigMap", "vgpu-device-plugin-config")
    vol = [v for v in pod["volumes"] if "configMap" in v]
    check(len(vol) == 1 and vol[0]["configMap"]["name"] == cm["metadata"]["name"],
          "DaemonSet uses the generated ConfigMap %s" % cm["metadata"]["name"])
    check("--config=%s/config.yaml" % m.get(vol[0]["name"] if vol else "", "?") in ctr["command"],
          "--config points at the mounted config.yaml")
    with open(os.path.join(ROOT, "examples", "config", config_file)) as f:
        example = f.read()
    check(cm["data"].get("config.yaml") == example,
          "%s overlay's config.yaml is examples/config/%s unchanged" % (overlay, config_file))
    return yaml.safe_load(example)


def dialect_resources(config):
    """The resource names a device plugin config advertises or reads."""
    if "sharing" in config:
        config = {"dialects": {"timeSlicing": config}}
    out = set()
    for name, d in (config.get("dialects") or {}).items():
        d = d or {}
        if name == "timeSlicing":
            ts = d["sharing"]["timeSlicing"]
            suffix = ".shared" if ts.get("renameByDefault") else ""
            out |= {r["name"] + suffix for r in ts["resources"]}
        else:
            out |= dialects.configured_names(name, d)
    return out


def check_assignment_key(objs):
    """The Job makes the Secret vgpu-assignment-key; the extender and the
    node agent mount it read-only and name its file in --assignment-key."""
    job = objs[("Job", "vgpu-webhook-certs")]["spec"]["template"]["spec"]
    check("--assignment-key-secret=vgpu-assignment-key" in job["containers"][0]["command"],
          "certs Job makes the Secret vgpu-assignment-key")
    sched = objs[("Deployment", "vgpu-scheduler")]["spec"]["template"]["spec"]
    ds = objs[("DaemonSet", "vgpu-device-plugin")]["spec"]["template"]["spec"]
    ext = [c for c in sched["containers"] if c["name"] == "extender"][0]
    for pod, ctr, what in ((sched, ext, "extender"), (ds, ds["containers"][0], "device plugin")):
        vols = [v["name"] for v in pod["volumes"]
                if v.get("secret", {}).get("secretName") == "vgpu-assignment-key"]
        check(len(vols) == 1, "%s pod mounts Secret vgpu-assignment-key" % what)
        mount = [m for m in ctr.get("volumeMounts", []) if vols and m["name"] == vols[0]]
        check(len(mount) == 1 and mount[0].get("readOnly") is True,
              "%s mounts the assignment key read-only" % what)
        if mount:
            check("--assignment-key=%s/key" % mount[0]["mountPath"] in ctr["command"],
                  "%s --assignment-key names the mounted key" % what)


def check_scheduler(objs, config):
    dep = objs[("Deployment", "vgpu-scheduler")]
    pod = dep["spec"]["template"]["spec"]
    check(pod["serviceAccountName"] == "vgpu-scheduler", "scheduler service account")
    ctrs = {c["name"]: c for c in pod["containers"]}
    check(set(ctrs) == {"kube-scheduler", "extender"}, "kube-scheduler + extender sidecar")
    ks, ext = ctrs["kube-scheduler"], ctrs["extender"]
    check(ks["image"] == KUBE_SCHEDULER_IMAGE and ext["image"] == CONTROL_IMAGE,
          "scheduler images %s, %s" % (ks["image"], ext["image"]))
    check_probes(ks, "kube-scheduler")
    check_probes(ext, "extender")
    check(ext["livenessProbe"]["httpGet"]["path"] == "/healthz", "extender probe is /healthz")
    listen = [a for a in ext["command"] if a.startswith("--listen=")]
    port = int(listen[0].rsplit(":", 1)[1]) if listen else -1
    check(ext["livenessProbe"]["httpGet"]["port"] == port, "extender probe port = --listen port")
    cm = by_prefix(objs, "ConfigMap", "vgpu-scheduler-config")
    vol = [v for v in pod["volumes"] if "configMap" in v]
    check(len(vol) == 1 and vol[0]["configMap"]["name"] == cm["metadata"]["name"],
          "scheduler uses the generated ConfigMap")
    path = mounts(ks).get(vol[0]["name"] if vol else "", "?") + "/scheduler-config.yaml"
    check("--config=" + path in ks["command"], "kube-scheduler --config=%s" % path)
    sc = yaml.safe_load(cm["data"].get("scheduler-config.yaml", "{}"))
    check(sc.get("apiVersion") == "kubescheduler.config.k8s.io/v1" and
          sc.get("kind") == "KubeSchedulerConfiguration", "KubeSchedulerConfiguration v1")
    check([p["schedulerName"] for p in sc.get("profiles", [])] == ["vgpu-scheduler"],
          "one profile, schedulerName vgpu-scheduler")
    le = sc.get("leaderElection", {})
    check(le.get("resourceNamespace") == NS and le.get("resourceName") == "vgpu-scheduler",
          "leader election Lease matches the Role's resourceNames")
    (e,) = sc["extenders"]
    check(e["urlPrefix"] == "http://127.0.0.1:%d" % port, "urlPrefix reaches the sidecar")
    check((e["filterVerb"], e["prioritizeVerb"], e["bindVerb"]) == ("filter", "prioritize", "bind"),
          "extender verbs filter/prioritize/bind")
    check(e["nodeCacheCapable"] is True, "nodeCacheCapable")
    managed = {r["name"]: r for r in e["managedResources"]}
    check(set(managed) == ALL_GPU_RESOURCES, "managedResources: %s" % sorted(managed))
    check(all(r["ignoredByScheduler"] is True for r in managed.values()),
          "every managed resource ignoredByScheduler")
    check(sc.get("percentageOfNodesToScore") == 100, "every node filtered and scored")
    mine = dialect_resources(config)
    check(mine and mine <= set(managed), "overlay resources %s are managed" % sorted(mine))


def check_locked_down(ctr, what):
    sc = ctr.get("securityContext", {})
    check(sc.get("runAsNonRoot") is True and sc.get("runAsUser") == 65532 and
          sc.get("readOnlyRootFilesystem") is True and
          sc.get("allowPrivilegeEscalation") is False and sc["capabilities"]["drop"] == ["ALL"],
          "%s: non-root 65532, read-only root, all capabilities dropped" % what)


def check_webhook(objs):
    dep = objs[("Deployment", "vgpu-webhook")]["spec"]["template"]["spec"]
    (ctr,) = dep["containers"]
    check(ctr["image"] == CONTROL_IMAGE and ctr["command"][0] == "vgpu-webhook", "webhook image, command")
    check(dep.get("automountServiceAccountToken") is False, "the webhook mounts no API token")
    check_locked_down(ctr, "webhook")
    listen = [a for a in ctr["command"] if a.startswith("--listen=")]
    port = int(listen[0].rsplit(":", 1)[1]) if listen else -1
    for p in ("livenessProbe", "readinessProbe"):
        g = ctr[p]["httpGet"]
        check((g["path"], g["port"], g["scheme"]) == ("/healthz", port, "HTTPS"),
              "webhook %s: HTTPS /healthz on the --listen port" % p)
    secret = [v["secret"]["secretName"] for v in dep["volumes"] if "secret" in v]
    check(secret == ["vgpu-webhook-tls"], "webhook mounts Secret vgpu-webhook-tls")
    tls_dir = mounts(ctr).get("tls")
    check("--tls-cert=%s/tls.crt" % tls_dir in ctr["command"] and
          "--tls-key=%s/tls.key" % tls_dir in ctr["command"], "--tls-cert/--tls-key in the mount")
    svc = objs[("Service", "vgpu-webhook")]["spec"]
    check(svc["ports"] == [{"name": "https", "port": 443, "targetPort": port}] and
          svc["selector"] == {"app.kubernetes.io/name": "vgpu-webhook"}, "Service 443 -> %d" % port)
    job = objs[("Job", "vgpu-webhook-certs")]["spec"]["template"]["spec"]
    (jc,) = job["containers"]
    check(job["serviceAccountName"] == "vgpu-webhook-certs", "certs Job service account")
    check_locked_down(jc, "certs Job")
    check(jc["command"][:2] == ["vgpu-webhook", "certs"] and
          "--secret=vgpu-webhook-tls" in jc["command"] and
          "--webhook-config=vgpu-webhook" in jc["command"] and
          "--service=vgpu-webhook" in jc["command"] and "--namespace=" + NS in jc["command"],
          "certs Job names the Secret, the Service and the configuration")
    check("--validating-config=vgpu-guard" in jc["command"],
          "certs Job sets the guard's caBundle too")
    check_admission_scope(objs, port)
    check_webhook_availability(objs)


OUTSIDE_VGPU = [{"key": "vgpu.io/admission", "operator": "NotIn", "values": ["ignore"]},
                {"key": "kubernetes.io/metadata.name", "operator": "NotIn",
                 "values": [NS, "kube-system"]}]


def check_admission_scope(objs, port):
    """The blast radius of docs/admission.md ("When vgpu-webhook is down"): the route is
    CREATE only and Ignore; the guard is UPDATE of labelled pods only and Fail; both
    skip vgpu-system, kube-system and anything labelled vgpu.io/admission=ignore, which
    the API server checks before it calls."""
    (route,) = objs[("MutatingWebhookConfiguration", "vgpu-webhook")]["webhooks"]
    check((route["name"], route["failurePolicy"], route["reinvocationPolicy"],
           route["sideEffects"], route["admissionReviewVersions"]) ==
          ("pods.vgpu.io", "Ignore", "IfNeeded", "None", ["v1"]), "route policies")
    check(route["rules"] == [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                              "resources": ["pods"], "scope": "Namespaced"}],
          "route: pods CREATE only")
    check(route["objectSelector"] == {"matchExpressions": OUTSIDE_VGPU[:1]},
          "route: pods labelled vgpu.io/admission=ignore are not sent")
    (guard,) = objs[("ValidatingWebhookConfiguration", "vgpu-guard")]["webhooks"]
    check((guard["name"], guard["failurePolicy"], guard["sideEffects"]) ==
          ("guard.vgpu.io", "Fail", "None"), "guard policies")
    check(guard["rules"] == [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["UPDATE"],
                              "resources": ["pods"], "scope": "Namespaced"}],
          "guard: pods UPDATE only")
    check(guard["objectSelector"] == {"matchLabels": {"vgpu.io/managed": "true"}},
          "guard: only pods the route labelled")
    for w, path in ((route, "/mutate"), (guard, "/validate")):
        check(w["clientConfig"]["service"] == {"name": "vgpu-webhook", "namespace": NS,
                                               "path": path, "port": 443},
              "%s clientConfig" % w["name"])
        check(w["namespaceSelector"] == {"matchExpressions": OUTSIDE_VGPU},
              "%s leaves vgpu-system, kube-system and opted-out namespaces alone" % w["name"])
    check(objs[("Namespace", NS)]["metadata"]["labels"].get("vgpu.io/admission") == "ignore",
          "vgpu-system carries vgpu.io/admission=ignore (1.20 has no metadata.name label)")


def check_webhook_availability(objs):
    """Two replicas on different nodes where possible, none stopped before its successor
    runs, one kept through a drain, and only 8443 open."""
    dep = objs[("Deployment", "vgpu-webhook")]["spec"]
    check(dep["replicas"] >= 2 and dep["strategy"]["rollingUpdate"]["maxUnavailable"] == 0,
          "webhook: 2 replicas, rollouts never empty the Service")
    (term,) = dep["template"]["spec"]["affinity"]["podAntiAffinity"][
        "preferredDuringSchedulingIgnoredDuringExecution"]
    check(term["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname" and
          term["podAffinityTerm"]["labelSelector"]["matchLabels"] ==
          {"app.kubernetes.io/name": "vgpu-webhook"}, "webhook replicas spread over nodes")
    pdb = objs[("PodDisruptionBudget", "vgpu-webhook")]["spec"]
    check(pdb == {"minAvailable": 1,
                  "selector": {"matchLabels": {"app.kubernetes.io/name": "vgpu-webhook"}}},
          "PodDisruptionBudget keeps one webhook replica")
    pol = objs[("NetworkPolicy", "vgpu-webhook-ingress")]["spec"]
    check(pol["podSelector"]["matchLabels"] == {"app.kubernetes.io/name": "vgpu-webhook"} and
          pol["ingress"] == [{"ports": [{"protocol": "TCP", "port": 8443}]}],
          "webhook NetworkPolicy: 8443 only")


def check_images(objs):
    """Every image a pod uses is one `make images` builds (images/spec.py: a Dockerfile stage
    with images/<name>.files, named in the kustomization's images:) or the stock
    kube-scheduler, and vgpu's images all carry one tag."""
    built = {n: REFS.get(n) for n in spec.image_names()}
    check(set(built) == {"vgpu-node", "vgpu-scheduler"} and all(built.values()),
          "make images builds vgpu-node and vgpu-scheduler, each named in the kustomization: %s"
          % built)
    tags = {r.rsplit(":", 1)[1] for r in built.values() if r}
    check(len(tags) == 1, "vgpu's images have one tag: %s" % sorted(tags))
    allowed = set(v for v in built.values() if v) | {KUBE_SCHEDULER_IMAGE}
    for (kind, name), o in objs.items():
        pod = o.get("spec", {}).get("template", {}).get("spec", {})
        for c in pod.get("initContainers", []) + pod.get("containers", []):
            check(c["image"] in allowed, "%s/%s container %s: image %s is built by make images "
                  "or is %s" % (kind, name, c["name"], c["image"], KUBE_SCHEDULER_IMAGE))


def check_flags(objs, bindir):
    """Every --flag the manifests pass to our programs is one the built program documents
    in its --help (getopt_long, so --flag=value is accepted as written)."""
    ds = objs[("DaemonSet", "vgpu-device-plugin")]["spec"]["template"]["spec"]
    dep = objs[("Deployment", "vgpu-scheduler")]["spec"]["template"]["spec"]
    wh = objs[("Deployment", "vgpu-webhook")]["spec"]["template"]["spec"]["containers"]
    job = objs[("Job", "vgpu-webhook-certs")]["spec"]["template"]["spec"]["containers"]
    for ctr in ds["containers"] + [c for c in dep["containers"] if c["name"] == "extender"] + \
            wh + job:
        prog = ctr["command"][0]
        args = ctr["command"][1:]
        sub = args[:1] if args[:1] == ["certs"] else []  # vgpu-webhook certs
        p = subprocess.run([os.path.join(bindir, prog)] + sub + ["--help"], capture_output=True,
                           text=True, timeout=30)
        usage = p.stdout + p.stderr
        synopsis = usage.split("\n  --")[0]  # the usage lines, before the option list
        for arg in args[len(sub):]:
            flag = arg.split("=", 1)[0]
            check(re.search(r"[\s\[]" + re.escape(flag) + r"[\s\]]", synopsis) is not None,
                  "%s accepts %s (its usage: %s)" % (prog, flag, synopsis))


def check_webhook_users(objs, bindir):
    """The users the webhook lets write vgpu's pod annotations (--scheduler-user, --node-user,
    docs/admission.md) are the service accounts the scheduler and the device plugin run as:
    the ones the manifests pass, else the defaults its --help states."""
    (wh,) = objs[("Deployment", "vgpu-webhook")]["spec"]["template"]["spec"]["containers"]
    p = subprocess.run([os.path.join(bindir, "vgpu-webhook"), "--help"], capture_output=True,
                       text=True, timeout=30)
    for flag, kind, name in (("--scheduler-user", "Deployment", "vgpu-scheduler"),
                             ("--node-user", "DaemonSet", "vgpu-device-plugin")):
        pod = objs[(kind, name)]["spec"]["template"]["spec"]
        want = "system:serviceaccount:%s:%s" % (objs[(kind, name)]["metadata"]["namespace"],
                                                pod["serviceAccountName"])
        given = [a.split("=", 1)[1] for a in wh["command"] if a.startswith(flag + "=")]
        usage = re.sub(r"\s+", " ", p.stdout.split("  " + flag, 1)[-1].split("\n  --", 1)[0])
        check(want in given if given else "(default " + want + ")" in usage,
              "webhook %s is %s's service account %s (passed: %s)" % (flag, name, want, given))


def check_overlay(cmd, overlay, config_file, bindir):
    objs = index(render(cmd, overlay))
    kinds = sorted({k for k, _ in objs})
    check(kinds == ["ClusterRole", "ClusterRoleBinding", "ConfigMap", "DaemonSet", "Deployment",
                    "Job", "MutatingWebhookConfiguration", "Namespace", "NetworkPolicy",
                    "PodDisruptionBudget", "Role",
                    "RoleBinding", "Service", "ServiceAccount", "ValidatingWebhookConfiguration"],
          "%s: kinds %s" % (overlay, kinds))
    cluster_scoped = {"Namespace", "ClusterRole", "ClusterRoleBinding",
                      "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"}
    for (kind, name), o in objs.items():
        ns = o["metadata"].get("namespace")
        if kind in cluster_scoped:
            check(ns is None, "%s/%s is cluster-scoped" % (kind, name))
        elif name != "vgpu-scheduler-authentication-reader":
            check(ns == NS, "%s/%s in %s, got %s" % (kind, name, NS, ns))
    check_rbac(objs)
    config = check_daemonset(objs, overlay, config_file)
    check_scheduler(objs, config)
    check_webhook(objs)
    check_assignment_key(objs)


    check_images(objs)
    if bindir:
        check_flags(objs, bindir)
        check_webhook_users(objs, bindir)
    np = objs[("NetworkPolicy", "vgpu-scheduler-no-ingress")]["spec"]
    check(np["policyTypes"] == ["Ingress"] and not np.get("ingress") and
          np["podSelector"]["matchLabels"] == {"app.kubernetes.io/name": "vgpu-scheduler"},
          "the extender takes no ingress from other pods")
    print("%s: %d objects checked" % (overlay, len(objs)))


def check_cert_manager(cmd, bindir):
    """With cert-manager issuing the certificate, the certs Job stays for the assignment
    key alone (the scheduler's and the plugin's pods mount its Secret), with flags the
    program documents."""
    objs = index(render(cmd, "cert-manager"))
    job = objs.get(("Job", "vgpu-webhook-certs"))
    check(job is not None, "cert-manager overlay keeps the certs Job for the assignment key")
    if job is None:
        return
    args = job["spec"]["template"]["spec"]["containers"][0]["command"]
    check("--assignment-key-secret=vgpu-assignment-key" in args and
          "--assignment-key-only" in args and not any(a.startswith("--secret") for a in args),
          "cert-manager overlay: the Job makes only vgpu-assignment-key: %s" % args)
    check_assignment_key(objs)
    if bindir:
        check_flags(objs, bindir)
# The fields of MutatingAdmissionPolicySpec and MutatingAdmissionPolicyBindingSpec, the same in
# admissionregistration.k8s.io/v1alpha1, v1beta1 and v1 (the API reference of each version).
MAP_SPEC = {"paramKind", "matchConstraints", "variables", "mutations", "failurePolicy",
            "matchConditions", "reinvocationPolicy"}
MAP_BINDING_SPEC = {"policyName", "paramRef", "matchResources"}
MAP_VERSIONS = {"v1": "1.36+", "v1beta1": "1.34-1.35", "v1alpha1": "1.32-1.33"}


def check_admission_policies(cmd):
    """deploy/admission-policy/<version> renders the same policy under each apiVersion that
    serves it, with only the fields those types have, routing as the webhook's route does
    (CREATE, Ignore, the label, the opt-out selectors)."""
    rendered = {}
    for version in MAP_VERSIONS:
        p = subprocess.run(cmd + [os.path.join(DEPLOY, "admission-policy", version)],
                           capture_output=True, text=True, timeout=120)
        check(p.returncode == 0, "admission-policy/%s renders: %s" % (version, p.stderr))
        docs = [d for d in yaml.safe_load_all(p.stdout) if d] if p.returncode == 0 else []
        check(sorted(d["kind"] for d in docs) ==
              ["MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding"] and
              all(d["apiVersion"] == "admissionregistration.k8s.io/" + version for d in docs),
              "admission-policy/%s: a policy and its binding as %s" % (version, version))
        for d in docs:
            allowed = MAP_SPEC if d["kind"] == "MutatingAdmissionPolicy" else MAP_BINDING_SPEC
            check(set(d["spec"]) <= allowed, "admission-policy/%s %s: fields %s not in the type" %
                  (version, d["kind"], sorted(set(d["spec"]) - allowed)))
            rendered.setdefault(d["kind"], []).append(d["spec"])
    for kind, specs in rendered.items():
        check(all(sp == specs[0] for sp in specs), "%s differs between versions" % kind)
    policy = rendered.get("MutatingAdmissionPolicy", [{}])[0]
    rules = policy.get("matchConstraints", {}).get("resourceRules", [])
    check(policy.get("failurePolicy") == "Ignore" and
          [r["operations"] for r in rules] == [["CREATE"]] and
          "'vgpu.io/managed': 'true'" in json.dumps(policy.get("mutations")),
          "the policy routes on CREATE, Ignore, and labels vgpu.io/managed as the webhook does")
    binding = rendered.get("MutatingAdmissionPolicyBinding", [{}])[0].get("matchResources", {})
    check(binding.get("objectSelector") == {"matchExpressions": OUTSIDE_VGPU[:1]} and
          binding.get("namespaceSelector") == {"matchExpressions": OUTSIDE_VGPU},
          "the policy's binding skips what the webhook's selectors skip")


# ---- docs/install.md's "Privileges" table against the rendered RBAC

def grants(objs):
    """What the rendered objects grant: {key: role} with keys as privileges.Row.key() builds
    them (one per verb, resource and resourceName), and the roles bound that are not rendered
    (Kubernetes' built-in ones) as a set of (service account, role name)."""
    out, builtin = {}, set()
    for (kind, name), b in objs.items():
        if kind not in ("ClusterRoleBinding", "RoleBinding"):
            continue
        scope = "*" if kind == "ClusterRoleBinding" else b["metadata"].get("namespace", NS)
        role = objs.get((b["roleRef"]["kind"], b["roleRef"]["name"]))
        for sa in [s["name"] for s in b["subjects"] if s.get("namespace") == NS]:
            if role is None:
                builtin.add((sa, b["roleRef"]["name"]))
                continue
            for r in role.get("rules", []):
                for group in r.get("apiGroups", [""]):
                    for res in r["resources"]:
                        for verb in r["verbs"]:
                            for rname in r.get("resourceNames") or [""]:
                                out[(sa, verb, group, res, rname, scope)] = role["metadata"]["name"]
    return out, builtin


def covered(key, granted):
    """Whether a grant answers yes to the question key: the same subject, verb and resource;
    a rule without resourceNames covers every name; a cluster-wide one every namespace."""
    who, verb, group, res, name, scope = key
    return any(g[:4] == (who, verb, group, res) and g[4] in ("", name) and g[5] in ("*", scope)
               for g in granted)


def check_privilege_table(base, evict):
    """The table and the manifests cannot drift: every rendered grant has its yes row, every
    yes row (but those of built-in roles) is granted, every no row is not, the evict overlay
    adds exactly its rows, and every built-in role bound is named by a row."""
    try:
        rows = privileges.rows()
    except ValueError as e:
        check(False, str(e))
        return
    granted, builtin = grants(base)
    granted_evict, _ = grants(evict)
    yes = {r.key() for r in rows if r.allowed == "yes"}
    for key, role in sorted(granted.items()):
        check(key in yes, "%s: %s grants %s %s %s%s%s: no yes row in docs/install.md's Privileges"
              % (role, key[0], key[1], key[3], "." + key[2] if key[2] else "",
                 " name " + key[4] if key[4] else "", " in " + key[5] if key[5] != "*" else ""))
    for r in rows:
        if r.allowed == "yes" and not r.builtin_roles():
            check(covered(r.key(), granted), "%s: the manifests do not grant it" % r)
        if r.allowed == "no":
            check(not covered(r.key(), granted) and not covered(r.key(), granted_evict),
                  "%s: the manifests grant it" % r)
        if r.allowed == "evict overlay":
            check(not covered(r.key(), granted), "%s: deploy/base grants it" % r)
            check(covered(r.key(), granted_evict), "%s: deploy/overlays/evict does not grant it" % r)
        for role in r.builtin_roles():
            check((r.who, role) in builtin, "%s: cites built-in role %s, not bound to %s"
                  % (r, role, r.who))
    evict_rows = {r.key() for r in rows if r.allowed == "evict overlay"}
    added = {k for k in granted_evict if k not in granted}
    check(added == evict_rows, "deploy/overlays/evict adds exactly the evict overlay rows: "
          "adds %s, rows %s" % (sorted(added), sorted(evict_rows)))
    for sa, role in sorted(builtin):
        check(any(r.who == sa and role in r.builtin_roles() for r in rows),
              "%s is bound to built-in role %s: no row says what it is for" % (sa, role))
    accounts = {o["metadata"]["name"] for (k, _), o in base.items() if k == "ServiceAccount"}
    check(accounts == {r.who for r in rows}, "the table covers every ServiceAccount: %s, rows for %s"
          % (sorted(accounts), sorted({r.who for r in rows})))


def check_evict_overlay(cmd, base, bindir):
    """deploy/overlays/evict: the vgpu overlay plus the eviction grant and the agent's flag."""
    evict = index(render(cmd, "evict"))
    extra = sorted(k for k in evict if k not in base)
    check(extra == [("ClusterRole", "vgpu-device-plugin-evict"),
                    ("ClusterRoleBinding", "vgpu-device-plugin-evict")],
          "evict overlay adds only its ClusterRole and binding: %s" % extra)
    cmd_of = [o["spec"]["template"]["spec"]["containers"][0]["command"]
              for o in (base[("DaemonSet", "vgpu-device-plugin")],
                        evict[("DaemonSet", "vgpu-device-plugin")])]
    check(cmd_of[1] == cmd_of[0] + ["--backstop-policy=evict"],
          "evict overlay passes --backstop-policy=evict: %s" % cmd_of[1])
    check("--backstop-policy=evict" not in cmd_of[0], "deploy/base does not evict")
    if bindir:
        check_flags(evict, bindir)
    return evict


# ---- deploy/kube-version.sh: kube-scheduler follows the control plane

def matrix():
    """docs/install.md's version matrix: {minor: config apiVersion}; 'N and later' as N."""
    with open(privileges.DOC) as f:
        text = f.read()
    part = text.split("### Which kube-scheduler, by Kubernetes release", 1)[-1].split("\n\n")[1]
    out = {}
    for line in part.split("\n")[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        minors = [int(m) for m in re.findall(r"1\.(\d+)", cells[0])]
        if "–" in cells[0]:
            minors = list(range(minors[0], minors[1] + 1))
        for m in minors:
            out[m] = re.match(r"v\w+", cells[1]).group(0)
    return out


def check_kube_versions(cmd):
    """For every minor release of the matrix: the overlay deploy/kube-version.sh writes renders,
    runs the server's kube-scheduler and the configuration apiVersion the matrix says, and
    otherwise the base's configuration; a release below 1.20 is refused."""
    want = matrix()
    check(min(want) == 20 and sorted(want) == list(range(20, max(want) + 1)),
          "the matrix covers every minor release from 1.20: %s" % sorted(want))
    with open(os.path.join(DEPLOY, "base", "scheduler-config.yaml")) as f:
        base_cfg = yaml.safe_load(f)
    script = os.path.join(DEPLOY, "kube-version.sh")
    with tempfile.TemporaryDirectory() as tmp:
        for minor, api in sorted(want.items()):
            version = "v1.%d.3-vendor.1" % minor
            out = os.path.join(tmp, str(minor))
            p = subprocess.run(["bash", script, "--version", version, out], capture_output=True,
                               text=True, timeout=30)
            check(p.returncode == 0, "kube-version.sh %s: %s" % (version, p.stderr))
            if p.returncode != 0:
                continue
            p = subprocess.run(cmd + [out], capture_output=True, text=True, timeout=120)
            check(p.returncode == 0, "1.%d: the overlay renders: %s" % (minor, p.stderr))
            objs = index(d for d in yaml.safe_load_all(p.stdout) if d)
            cm = by_prefix(objs, "ConfigMap", "vgpu-scheduler-config")
            cfg = yaml.safe_load(cm["data"].get("scheduler-config.yaml", "{}"))
            check(cfg.get("apiVersion") == "kubescheduler.config.k8s.io/" + api,
                  "1.%d: configuration %s, want %s" % (minor, cfg.get("apiVersion"), api))
            check(dict(cfg, apiVersion=None) == dict(base_cfg, apiVersion=None),
                  "1.%d: otherwise deploy/base's configuration" % minor)
            dep = objs[("Deployment", "vgpu-scheduler")]["spec"]["template"]["spec"]
            images = [c["image"] for c in dep["containers"] if c["name"] == "kube-scheduler"]
            check(images == ["registry.k8s.io/kube-scheduler:v1.%d.3" % minor],
                  "1.%d: kube-scheduler image %s, want the server's version" % (minor, images))
            pdbs = [o["apiVersion"] for (k, _), o in objs.items() if k == "PodDisruptionBudget"]
            check(pdbs == ["policy/v1beta1" if minor < 21 else "policy/v1"],
                  "1.%d: the webhook's PodDisruptionBudget as %s (policy/v1 from 1.21)" % (minor, pdbs))
        p = subprocess.run(["bash", script, "--version", "v1.19.9", os.path.join(tmp, "old")],
                           capture_output=True, text=True, timeout=30)
        check(p.returncode == 2 and "needs Kubernetes 1.20 or later" in p.stderr,
              "kube-version.sh refuses 1.19: %d %s" % (p.returncode, p.stderr))


# ---- the registry recipe (docs/install.md step 1): one text in every doc, and it works

RECIPE_DOCS = ("README.md", "images/README.md", "docs/deploy.md", "docs/install.md")
RECIPE_KUSTOMIZATION = "deploy/base/kustomization.yaml"
SAMPLE_REGISTRY, SAMPLE_TAG = "registry.test:5000/team/vgpu", "9.9.9-rc1"


def recipe_in_doc(path):
    """The ```sh block between the registry-recipe markers of a Markdown file."""
    with open(os.path.join(ROOT, path)) as f:
        text = f.read()
    m = re.search(r"^<!-- registry-recipe: begin.*?^```sh\n(.*?)^```\n<!-- registry-recipe: end -->",
                  text, re.S | re.M)
    check(m is not None, "%s has the registry recipe between its markers" % path)
    return m.group(1) if m else ""


def recipe_in_kustomization():
    """The same recipe in deploy/base/kustomization.yaml's comment, each line after '#   '."""
    with open(os.path.join(ROOT, RECIPE_KUSTOMIZATION)) as f:
        text = f.read()
    m = re.search(r"^# registry-recipe: begin\n(.*?)^# registry-recipe: end\n", text, re.S | re.M)
    check(m is not None, "%s has the registry recipe between its markers" % RECIPE_KUSTOMIZATION)
    lines = m.group(1).splitlines() if m else []
    return "".join(l[4:] + "\n" if l.startswith("#   ") else "" for l in lines)


def run_recipe(cmd, recipe, dialect, work):
    """The recipe as written, with a sample registry, tag and dialect, in a copy of deploy/ and
    examples/: skopeo is a stand-in that records its arguments, kubectl the real one (or
    VG_KUBECTL). Returns (objects of the overlay it wrote, skopeo's calls)."""
    tree = os.path.join(work, dialect)
    for d in ("deploy", "examples"):
        shutil.copytree(os.path.join(ROOT, d), os.path.join(tree, d))
    bindir = os.path.join(work, "bin")
    os.makedirs(bindir, exist_ok=True)
    with open(os.path.join(bindir, "skopeo"), "w") as f:
        f.write('#!/bin/sh\necho "$*" >>"$SKOPEO_LOG"\n')
    os.chmod(os.path.join(bindir, "skopeo"), 0o755)
    kubectl = cmd[0] if cmd[-1] == "kustomize" else None
    link = os.path.join(bindir, "kubectl")
    if kubectl and os.path.dirname(kubectl) and not os.path.lexists(link):  # VG_KUBECTL's
        os.symlink(os.path.abspath(kubectl), link)
    script = recipe
    for var, value in (("REGISTRY", SAMPLE_REGISTRY), ("TAG", SAMPLE_TAG), ("DIALECT", dialect)):
        script, n = re.subn(r"^%s=\S+" % var, "%s=%s" % (var, value), script, flags=re.M)
        check(n == 1, "the recipe sets %s once" % var)
    log = os.path.join(work, dialect + ".skopeo")
    env = dict(os.environ, PATH=bindir + os.pathsep + os.environ["PATH"], SKOPEO_LOG=log)
    p = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=tree, env=env,
                       capture_output=True, text=True, timeout=120)
    check(p.returncode == 0, "the recipe runs (%s): %s" % (dialect, p.stderr[-2000:]))
    calls = open(log).read().splitlines() if os.path.exists(log) else []
    out = os.path.join(tree, "deploy", "overlays", "registry")
    r = subprocess.run(cmd + [out], capture_output=True, text=True, timeout=120)
    check(r.returncode == 0, "%s renders the recipe's overlay: %s" % (" ".join(cmd), r.stderr))
    check("localhost/vgpu" not in r.stdout,
          "the recipe's overlay (%s) still names localhost/vgpu anywhere" % dialect)
    return [d for d in yaml.safe_load_all(r.stdout) if d] if r.returncode == 0 else [], calls


def check_registry_recipe(cmd):
    recipe = recipe_in_doc(RECIPE_DOCS[0])
    for path in RECIPE_DOCS[1:]:
        check(recipe_in_doc(path) == recipe, "%s's registry recipe is README.md's, word for word"
              % path)
    check(recipe_in_kustomization() == recipe,
          "%s's registry recipe is README.md's, word for word" % RECIPE_KUSTOMIZATION)
    want = {n: "%s/%s:%s" % (SAMPLE_REGISTRY, n, SAMPLE_TAG) for n in ("vgpu-node", "vgpu-scheduler")}
    work = tempfile.mkdtemp(prefix="vgpu-recipe-")
    try:
        for dialect in OVERLAYS:
            objs, calls = run_recipe(cmd, recipe, dialect, work)
            check(sorted(calls) == sorted("copy oci-archive:build/images/%s.tar docker://%s"
                                          % (n, ref) for n, ref in want.items()),
                  "the recipe pushes both archives to the registry: %s" % calls)
            seen = set()
            for o in objs:
                pod = o.get("spec", {}).get("template", {}).get("spec", {})
                for c in pod.get("initContainers", []) + pod.get("containers", []):
                    seen.add(c["image"])
                    check(c["image"] in want.values() or c["image"] == KUBE_SCHEDULER_IMAGE,
                          "%s: %s/%s container %s pulls %s, not the registry's"
                          % (dialect, o["kind"], o["metadata"]["name"], c["name"], c["image"]))
            check(set(want.values()) <= seen, "%s: the recipe's overlay uses %s (got %s)"
                  % (dialect, sorted(want.values()), sorted(seen)))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("registry recipe: the same in %d files, rendered for %d overlays"
          % (len(RECIPE_DOCS) + 1, len(OVERLAYS)))


def main():
    bindir = sys.argv[sys.argv.index("--bin-dir") + 1] if "--bin-dir" in sys.argv else None
    cmd = renderer()
    if cmd is None:
        print("SKIP: neither kubectl nor kustomize is installed (scripts/deps.sh installs kubectl)")
        return 77
    print("rendering with:", " ".join(cmd))
    for overlay, config_file in OVERLAYS.items():
        check_overlay(cmd, overlay, config_file, bindir)
    check_cert_manager(cmd, bindir)
    check_admission_policies(cmd)
    base = index(render(cmd, "vgpu"))
    check_privilege_table(base, check_evict_overlay(cmd, base, bindir))
    check_kube_versions(cmd)
    check_registry_recipe(cmd)
    if FAILURES:
        print("%d failure(s)" % len(FAILURES))
        return 1
    print("all passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
