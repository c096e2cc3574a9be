#!/usr/bin/python3
"""A fake kubelet for testing vgpu-device-plugin: an independent implementation
of the kubelet side of the device plugin API v1beta1 (python3-grpcio), behaving
as the kubelet does (k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1, docs/allocation.md):

- serves Registration on <dir>/kubelet.sock after wiping the plugin sockets;
- Register rejects versions other than v1beta1 and resource names that are
  not extended resource names, and, still inside the call, dials the plugin's
  endpoint and calls GetDevicePluginOptions before replying;
- then runs ListAndWatch, each message being the full device snapshot;
- allocation is GetPreferredAllocation (when the plugin offers it) followed
  by Allocate with one container;
- restart: stop, wipe the sockets in the directory, serve kubelet.sock again.

Commands, one per line on stdin; one JSON object per line on stdout:
  listen                      start serving kubelet.sock (with --defer)
  registrations N SECONDS     wait until N registrations were accepted
  devices MESSAGES SECONDS [RESOURCE]
                              wait until MESSAGES ListAndWatch messages came
  allocate ID,ID,... [RESOURCE]
                              GetPreferredAllocation + Allocate (one container)
  (RESOURCE: a registered resource name; default the last one registered --
  the kubelet keeps one endpoint and one device list per resource)
  restart                     simulate a kubelet restart
  quit
With --podresources SOCKET it also serves the PodResources API v1
(/v1.PodResourcesLister/List, from podresources.proto in --proto-dir) there,
listing what these commands assigned, as the kubelet lists its pods:
  assign NS POD CONTAINER RESOURCE ID,ID,...   the container holds these IDs
  unassign NS POD                              the pod is gone
  podresources_calls                           how many List calls came
  admit NS POD CONTAINER RESOURCE SIZE [ID,ID,...]
      one container's admission as the kubelet does it: the pod is listed
      (its container holding nothing yet), GetPreferredAllocation gets the
      healthy IDs no container holds, the preferred IDs that are available
      are taken and the rest filled in order, Allocate, and then the IDs are
      listed for the container. With IDs given, those are taken instead of
      the preference (a kubelet that ignores it). A failed Allocate unlists
      the pod, as a rejected pod's admission ends.
Usage: fake_kubelet.py --dir DIR --proto-dir DIR [--defer] [--podresources SOCKET]
"""
import argparse
import json
import os
import re
import stat
import subprocess
import sys
import tempfile
import threading
import time
from concurrent import futures

HERE = os.path.dirname(os.path.abspath(__file__))


def load_stubs(proto_dir):
    out = tempfile.mkdtemp(prefix="fake-kubelet-stubs-")
    cmd = ["protoc", "--proto_path=" + proto_dir, "--proto_path=" + HERE,
           "--python_out=" + out, "--grpc_out=" + out,
           "--plugin=protoc-gen-grpc=/usr/bin/grpc_python_plugin",
           "deviceplugin.proto", "deviceplugin_services.proto"]
    subprocess.run(cmd, check=True)
    sys.path.insert(0, out)
    import deviceplugin_pb2 as pb
    import deviceplugin_services_pb2_grpc as svc
    return pb, svc


def load_podresources(proto_dir):
    out = tempfile.mkdtemp(prefix="fake-kubelet-podresources-")
    subprocess.run(["protoc", "--proto_path=" + proto_dir, "--python_out=" + out,
                    "podresources.proto"], check=True)
    sys.path.insert(0, out)
    import podresources_pb2 as prpb
    return prpb


class PodResources:
    """The kubelet's PodResourcesLister (List only), on its own socket."""

    def __init__(self, grpc, prpb, sock):
        self.grpc, self.prpb, self.sock = grpc, prpb, sock
        self.lock = threading.Lock()
        self.pods = {}  # (ns, pod) -> {container: {resource: [ids]}}, in assignment order
        self.calls = 0
        self.server = None

    def List(self, request, context):
        with self.lock:
            self.calls += 1
            pods = [(k, {c: dict(r) for c, r in v.items()}) for k, v in self.pods.items()]
        resp = self.prpb.ListPodResourcesResponse()
        for (ns, name), containers in pods:
            pr = resp.pod_resources.add(name=name, namespace=ns)
            for cname, resources in containers.items():
                cr = pr.containers.add(name=cname)
                for rname, ids in resources.items():
                    cr.devices.add(resource_name=rname, device_ids=ids)
        return resp

    def assign(self, ns, pod, container, resource, ids):
        with self.lock:
            self.pods.setdefault((ns, pod), {}).setdefault(container, {})[resource] = ids

    def admitting(self, ns, pod, container):
        with self.lock:
            self.pods.setdefault((ns, pod), {}).setdefault(container, {})

    def held(self, resource):
        with self.lock:
            return {i for cs in self.pods.values() for rs in cs.values()
                    for r, ids in rs.items() if r == resource for i in ids}

    def unassign(self, ns, pod):
        with self.lock:
            return self.pods.pop((ns, pod), None) is not None

    def start(self):
        handler = self.grpc.method_handlers_generic_handler("v1.PodResourcesLister", {
            "List": self.grpc.unary_unary_rpc_method_handler(
                self.List,
                request_deserializer=self.prpb.ListPodResourcesRequest.FromString,
                response_serializer=self.prpb.ListPodResourcesResponse.SerializeToString)})
        self.server = self.grpc.server(futures.ThreadPoolExecutor(max_workers=8))
        self.server.add_generic_rpc_handlers((handler,))
        self.server.add_insecure_port("unix:" + self.sock)
        self.server.start()

    def stop(self):
        if self.server is not None:
            self.server.stop(0).wait()
            self.server = None


def emit(obj):
    sys.stdout.write(json.dumps(obj, sort_keys=True) + "\n")
    sys.stdout.flush()


# IsExtendedResourceName: has a domain, not kubernetes.io, no requests. prefix,
# and "requests." + name is a valid qualified name.
QUALIFIED = re.compile(r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
                       r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")


def extended_resource_error(name):
    if "/" not in name:
        return "resource name %r is not an extended resource name (no domain)" % name
    domain, base = name.split("/", 1)
    if domain == "kubernetes.io" or domain.endswith(".kubernetes.io"):
        return "resource name %r is in the kubernetes.io domain" % name
    if name.startswith("requests."):
        return "resource name %r has the requests. prefix" % name
    qualified = "requests." + name
    if not QUALIFIED.match(qualified) or len(base) > 63 or len(domain) > 253:
        return "resource name %r: %r is not a valid qualified name" % (name, qualified)
    return None


class Kubelet:
    def __init__(self, grpc, pb, svc, directory):
        self.grpc, self.pb, self.svc, self.dir = grpc, pb, svc, directory
        self.sock = os.path.join(directory, "kubelet.sock")
        self.server = None
        self.cond = threading.Condition()
        self.registrations = []
        self.rejections = []
        self.messages = {}  # resource -> list of snapshots {id: health}
        self.numa = {}  # resource -> {id: [NUMA node IDs] or None} of the last snapshot
        self.plugins = {}  # resource -> (endpoint, options, channel, stub)
        self.watch_calls = {}  # resource -> ListAndWatch call
        self.last = None  # the resource registered last

    # -- Registration service --
    def Register(self, request, context):
        rec = {"version": request.version, "endpoint": request.endpoint,
               "resource_name": request.resource_name,
               "get_preferred_allocation_available":
                   request.options.get_preferred_allocation_available,
               "pre_start_required": request.options.pre_start_required,
               "t": time.time()}
        reason = None
        if request.version != "v1beta1":
            reason = "requested API version %r is not supported by kubelet" % request.version
        else:
            reason = extended_resource_error(request.resource_name)
        if reason is None:
            channel = self.grpc.insecure_channel("unix:" + os.path.join(self.dir, request.endpoint))
            stub = self.svc.DevicePluginStub(channel)
            try:
                options = stub.GetDevicePluginOptions(self.pb.Empty(), timeout=10)
            except self.grpc.RpcError as e:
                reason = "GetDevicePluginOptions on %s failed: %s" % (request.endpoint, e.details())
                channel.close()
        if reason is not None:
            with self.cond:
                self.rejections.append(dict(rec, reason=reason))
                self.cond.notify_all()
            context.abort(self.grpc.StatusCode.INVALID_ARGUMENT, reason)
        rec["options_callback"] = {
            "get_preferred_allocation_available": options.get_preferred_allocation_available,
            "pre_start_required": options.pre_start_required}
        name = request.resource_name
        with self.cond:
            if name in self.watch_calls:
                self.watch_calls.pop(name).cancel()
            self.plugins[name] = (request.endpoint, options, channel, stub)
            self.last = name
            self.registrations.append(rec)
            self.cond.notify_all()
        threading.Thread(target=self.watch, args=(name, stub), daemon=True).start()
        return self.pb.Empty()

    def watch(self, name, stub):
        call = stub.ListAndWatch(self.pb.Empty())
        with self.cond:
            self.watch_calls[name] = call
        try:
            for resp in call:
                snap = {d.ID: d.health for d in resp.devices}  # a full snapshot each time
                numa = {d.ID: [n.ID for n in d.topology.nodes] if d.HasField("topology") else None
                        for d in resp.devices}
                with self.cond:
                    self.numa[name] = numa
                    self.messages.setdefault(name, []).append(snap)
                    self.cond.notify_all()
        except self.grpc.RpcError:
            pass

    # -- lifecycle --
    def wipe(self):
        for name in os.listdir(self.dir):
            path = os.path.join(self.dir, name)
            if name != "kubelet_internal_checkpoint" and stat.S_ISSOCK(os.lstat(path).st_mode):
                os.unlink(path)

    def listen(self):
        os.makedirs(self.dir, exist_ok=True)
        self.wipe()
        self.server = self.grpc.server(futures.ThreadPoolExecutor(max_workers=8))
        handler = self.svc.RegistrationServicer()
        handler.Register = self.Register
        self.svc.add_RegistrationServicer_to_server(handler, self.server)
        self.server.add_insecure_port("unix:" + self.sock)
        self.server.start()

    def stop(self):
        with self.cond:
            for call in self.watch_calls.values():
                call.cancel()
            self.watch_calls = {}
            self.plugins = {}
        if self.server is not None:
            self.server.stop(0).wait()
            self.server = None

    def wait(self, pred, seconds):
        deadline = time.time() + seconds
        with self.cond:
            while not pred():
                left = deadline - time.time()
                if left <= 0:
                    return False
                self.cond.wait(left)
        return True

    # -- allocation, as at pod admission --
    def snapshots(self, name):
        return self.messages.get(name if name is not None else self.last, [])

    def allocate_parallel(self, repeat, id_lists, name=None):
        """Allocate for every list in id_lists, repeat times each, all calls released at
        once from threads of their own (kubelets admit one pod at a time; this is the
        worst case for the plugin's locking)."""
        with self.cond:
            plugin = self.plugins.get(name if name is not None else self.last)
        if plugin is None:
            return {"ok": False, "error": "no plugin registered"}
        stub = plugin[3]
        jobs = [ids for ids in id_lists for _ in range(repeat)]
        barrier = threading.Barrier(len(jobs))
        results = [None] * len(jobs)

        def one(i):
            req = self.pb.AllocateRequest(container_requests=[
                self.pb.ContainerAllocateRequest(devices_ids=jobs[i])])
            barrier.wait()
            try:
                c = stub.Allocate(req, timeout=20).container_responses[0]
                results[i] = {"ok": True, "slot": [m.host_path for m in c.mounts
                                                   if m.container_path == "/usr/local/vgpu"]}
            except self.grpc.RpcError as e:
                results[i] = {"ok": False, "code": e.code().name, "details": e.details()}

        threads = [threading.Thread(target=one, args=(i,)) for i in range(len(jobs))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        failed = [r for r in results if not r["ok"]]
        slots = {}
        for ids, r in zip(jobs, results):
            if r["ok"]:
                slots.setdefault(",".join(ids), set()).update(r["slot"])
        return {"ok": not failed, "calls": len(jobs), "failed": failed,
                "slots": {k: sorted(v) for k, v in slots.items()}}

    def admit(self, pr, ns, pod, container, resource, size, forced):
        """One container's admission (devicemanager: devicesToAllocate + Allocate)."""
        with self.cond:
            plugin = self.plugins.get(resource)
            snaps = self.snapshots(resource)
            snap = snaps[-1] if snaps else {}
        if plugin is None:
            return {"ok": False, "error": "no plugin registered for " + resource}
        _, options, _, stub = plugin
        pr.admitting(ns, pod, container)
        held = pr.held(resource)
        available = sorted(i for i, h in snap.items() if h == "Healthy" and i not in held)
        result = {"ok": True, "preferred": []}
        try:
            if options.get_preferred_allocation_available:
                req = self.pb.PreferredAllocationRequest(container_requests=[
                    self.pb.ContainerPreferredAllocationRequest(
                        available_deviceIDs=available, must_include_deviceIDs=[],
                        allocation_size=size)])
                pref = stub.GetPreferredAllocation(req, timeout=10)
                result["preferred"] = list(pref.container_responses[0].deviceIDs)
            if forced:
                chosen = forced
            else:
                chosen = [i for i in result["preferred"] if i in available][:size]
                chosen += [i for i in available if i not in chosen][:size - len(chosen)]
            if len(chosen) < size:
                pr.unassign(ns, pod)
                return {"ok": False, "error": "only %d of %d %s free" % (len(chosen), size, resource)}
            req = self.pb.AllocateRequest(container_requests=[
                self.pb.ContainerAllocateRequest(devices_ids=chosen)])
            resp = stub.Allocate(req, timeout=10)
        except self.grpc.RpcError as e:
            pr.unassign(ns, pod)
            return {"ok": False, "code": e.code().name, "details": e.details()}
        pr.assign(ns, pod, container, resource, chosen)
        c = resp.container_responses[0]
        result["ids"] = chosen
        result["envs"] = dict(c.envs)
        result["mounts"] = [{"host_path": m.host_path, "container_path": m.container_path,
                             "read_only": m.read_only} for m in c.mounts]
        return result

    def allocate(self, ids, name=None):
        with self.cond:
            plugin = self.plugins.get(name if name is not None else self.last)
            snaps = self.snapshots(name)
            snap = snaps[-1] if snaps else {}
        if plugin is None:
            return {"ok": False, "error": "no plugin registered"}
        _, options, _, stub = plugin
        result = {"ok": True}
        try:
            if options.get_preferred_allocation_available:
                healthy = sorted(i for i, h in snap.items() if h == "Healthy")
                req = self.pb.PreferredAllocationRequest(container_requests=[
                    self.pb.ContainerPreferredAllocationRequest(
                        available_deviceIDs=healthy, must_include_deviceIDs=[],
                        allocation_size=len(ids))])
                pref = stub.GetPreferredAllocation(req, timeout=10)
                result["preferred"] = list(pref.container_responses[0].deviceIDs)
            req = self.pb.AllocateRequest(container_requests=[
                self.pb.ContainerAllocateRequest(devices_ids=ids)])
            resp = stub.Allocate(req, timeout=10)
        except self.grpc.RpcError as e:
            return {"ok": False, "code": e.code().name, "details": e.details()}
        c = resp.container_responses[0]
        result["containers"] = len(resp.container_responses)
        result["envs"] = dict(c.envs)
        result["mounts"] = [{"host_path": m.host_path, "container_path": m.container_path,
                             "read_only": m.read_only} for m in c.mounts]
        result["devices"] = [{"host_path": d.host_path, "container_path": d.container_path,
                              "permissions": d.permissions} for d in c.devices]
        return result


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--proto-dir", required=True)
    ap.add_argument("--defer", action="store_true")
    ap.add_argument("--podresources", default=None)
    args = ap.parse_args()
    pb, svc = load_stubs(args.proto_dir)
    import grpc
    k = Kubelet(grpc, pb, svc, args.dir)
    if not args.defer:
        k.listen()
    pr = None
    if args.podresources is not None:
        pr = PodResources(grpc, load_podresources(args.proto_dir), args.podresources)
        pr.start()
    emit({"ready": True, "listening": not args.defer, "socket": k.sock,
          "podresources": args.podresources})
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        cmd = words[0]
        if cmd == "listen":
            k.listen()
            emit({"ok": True, "t": time.time()})
        elif cmd == "registrations":
            n, secs = int(words[1]), float(words[2])
            ok = k.wait(lambda: len(k.registrations) >= n, secs)
            with k.cond:
                emit({"ok": ok, "registrations": k.registrations, "rejections": k.rejections,
                      "t": time.time()})
        elif cmd == "rejections":
            n, secs = int(words[1]), float(words[2])
            ok = k.wait(lambda: len(k.rejections) >= n, secs)
            with k.cond:
                emit({"ok": ok, "rejections": k.rejections})
        elif cmd == "devices":
            n, secs = int(words[1]), float(words[2])
            name = words[3] if len(words) > 3 else None
            ok = k.wait(lambda: len(k.snapshots(name)) >= n, secs)
            with k.cond:
                snaps = k.snapshots(name)
                snap = snaps[-1] if snaps else {}
                emit({"ok": ok, "messages": len(snaps), "devices": snap,
                      "healthy": sum(1 for h in snap.values() if h == "Healthy")})
        elif cmd == "topology":  # NUMA nodes per device ID in the last snapshot
            name = words[1] if len(words) > 1 else None
            with k.cond:
                numa = k.numa.get(name if name is not None else k.last, {})
                emit({"ok": bool(numa), "numa": numa})
        elif cmd == "allocate_parallel":  # allocate_parallel REPEAT IDS[,IDS...] ...
            emit(k.allocate_parallel(int(words[1]), [w.split(",") for w in words[2:]]))
        elif cmd == "allocate":
            emit(k.allocate(words[1].split(",") if len(words) > 1 else [],
                            words[2] if len(words) > 2 else None))
        elif cmd == "restart":
            k.stop()
            k.listen()
            emit({"ok": True, "t": time.time()})
        elif cmd == "assign" and pr is not None and len(words) == 6:
            pr.assign(words[1], words[2], words[3], words[4], words[5].split(","))
            emit({"ok": True})
        elif cmd == "unassign" and pr is not None and len(words) == 3:
            emit({"ok": pr.unassign(words[1], words[2])})
        elif cmd == "admit" and pr is not None and len(words) in (6, 7):
            forced = words[6].split(",") if len(words) == 7 else None
            emit(k.admit(pr, words[1], words[2], words[3], words[4], int(words[5]), forced))
        elif cmd == "podresources_calls" and pr is not None:
            with pr.lock:
                emit({"ok": True, "calls": pr.calls})
        elif cmd == "quit":
            break
        else:
            emit({"ok": False, "error": "unknown command %r" % cmd})
    k.stop()
    if pr is not None:
        pr.stop()


if __name__ == "__main__":
    main()
