#!/usr/bin/python3
"""A small stand-in Kubernetes API server for vgpu's tests (stdlib only).

It implements the few endpoints vgpu uses with their real semantics:
objects in memory under one global resourceVersion counter, GET and list
(fieldSelector spec.nodeName=X), JSON merge patch (RFC 7386) with a
metadata.resourceVersion precondition (409 Conflict Status), pods/binding
(sets spec.nodeName, merges annotations, 409 if already bound), the status
subresource of nodes and pods (PATCH .../status: the same merge patch, the spec
and ownerReferences kept as kube-apiserver keeps them), and watch
(?watch=1&resourceVersion=) as a chunked stream of newline-separated JSON
events with BOOKMARKs when allowWatchBookmarks is set, 410 Gone when the rv is
older than the compaction point, and the stream closed after timeoutSeconds.
Every API request needs "Authorization: Bearer <token>" (401 otherwise).
Resource quantities (pod containers' limits and requests, node capacity and
allocatable) are stored canonical, as kube-apiserver does: 3000 comes back
"3k", 2048Mi "2Gi", 3e3 "3e3" (canonical_quantity below).

Test-only endpoints (same token):
  POST /_test/nodes            body: a Node object   -> creates it
  POST /_test/pods             body: a Pod object    -> creates it (ADDED)
  DELETE /_test/pods/<ns>/<n>                        -> deletes it (DELETED)
  POST /_test/compact          -> history before the current rv is gone (410)
  POST /_test/fail?n=N         -> the next N API requests get 500
  POST /_test/slow_events?ms=N -> every later Event POST is answered N ms late
  POST /_test/close_watches    -> every open watch stream ends now
  POST /_test/conflict_next?n=N -> the next N patches get 409 regardless
  GET /_test/events            -> {"items": [the core/v1 Events POSTed]}
  GET /_test/requests          -> {"counts": {"GET /api/v1/nodes": n, "WATCH /api/v1/pods": n,
                                  ...}}: the API requests served so far, by verb and path
                                  (no query), so tests and benches can tell which calls
                                  a request to the scheduler cost
pods/<name>/eviction (an Eviction) deletes the pod at once (no PDBs); the versions it takes
are $VG_FAKE_EVICTION_VERSIONS (default "policy/v1,policy/v1beta1"; a 1.20 server: v1beta1).
Pod lists also take labelSelector (key, !key, key=value, key!=value).

Usage: fake_apiserver.py [--token T] [--bookmark-interval S]
Prints "PORT <n>" on stdout once listening on 127.0.0.1.
"""

import argparse
import os
import copy
import json
import math
import re
import sys
import threading
import time
import urllib.parse
from fractions import Fraction
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Store:
    def __init__(self):
        self.lock = threading.Condition()
        self.rv = 100
        self.nodes = {}
        self.pods = {}  # (ns, name) -> pod
        self.events = []  # (rv, type, kind, object)
        self.compacted = 0
        self.fail_next = 0
        self.slow_events_ms = 0  # POST /_test/slow_events: a slow kube-apiserver for Events
        self.conflict_next = 0
        self.close_gen = 0
        self.uid = 0
        self.core_events = []  # core/v1 Event objects POSTed (GET /_test/events)
        self.requests = {}  # "VERB /path" -> API requests served (GET /_test/requests)

    def bump(self, obj):
        self.rv += 1
        obj.setdefault("metadata", {})["resourceVersion"] = str(self.rv)
        return self.rv

    def record(self, etype, kind, obj):
        self.events.append((self.rv, etype, kind, copy.deepcopy(obj)))
        self.lock.notify_all()


_QUANTITY = re.compile(r"([+-]?)([0-9]*)(?:\.([0-9]*))?(.*)")
_DECIMAL_SI = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15,
               "E": 18}
_BINARY_SI = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]
_SI_BY_EXP = {e: s for s, e in _DECIMAL_SI.items()}


def parse_quantity(text):
    """resource.Quantity's grammar -> (value as a Fraction, format), or None.
    As kube-apiserver does, the value is rounded up (away from 0) to 1n."""
    m = _QUANTITY.fullmatch(text)
    if m is None:
        return None
    sign, whole, frac, suffix = m.groups()
    frac = frac or ""
    if not whole and not frac:
        return None
    mantissa = Fraction(int(whole or "0")) + Fraction(int(frac or "0"), 10 ** len(frac))
    if suffix in _DECIMAL_SI:
        value, fmt = mantissa * Fraction(10) ** _DECIMAL_SI[suffix], "DecimalSI"
    elif suffix in _BINARY_SI[1:]:
        value, fmt = mantissa * 2 ** (10 * _BINARY_SI.index(suffix)), "BinarySI"
    elif re.fullmatch(r"[eE][+-]?[0-9]{1,4}", suffix):
        value, fmt = mantissa * Fraction(10) ** int(suffix[1:]), "DecimalExponent"
    else:
        return None
    nano = math.ceil(value * 10 ** 9)
    return Fraction(-nano if sign == "-" else nano, 10 ** 9), fmt


def canonical_quantity(q):
    """What kube-apiserver writes back for a quantity (Quantity.String): the
    suffix family the user wrote, and in it the largest suffix that keeps
    the number whole. Binary values under 1024 or not whole are written in
    decimal SI; decimal mantissas have no trailing zeros and exponents that
    are multiples of 3. A value that is not a quantity is returned as is (the
    real server refuses the object; the tests keep it to reach readers'
    error paths). JSON numbers become strings, as the real server's do."""
    if isinstance(q, bool) or not isinstance(q, (str, int, float)):
        return q
    parsed = parse_quantity(q.strip() if isinstance(q, str) else repr(q))
    if parsed is None:
        return q
    value, fmt = parsed
    if value == 0:
        return "0"
    if fmt == "BinarySI":
        if abs(value) < 1024 or value.denominator != 1:
            fmt = "DecimalSI"
        else:
            n, e = int(value), 0
            while n % 1024 == 0 and e < len(_BINARY_SI) - 1:
                n, e = n // 1024, e + 1
            return "%d%s" % (n, _BINARY_SI[e])
    n, e = int(value * 10 ** 9), -9  # whole nanos
    while n % 10 == 0:
        n, e = n // 10, e + 1
    n, e = n * 10 ** (e % 3), e - e % 3
    if fmt == "DecimalExponent":
        return "%d%s" % (n, "e%d" % e if e else "")
    if e > 18:
        n, e = n * 10 ** (e - 18), 18
    return "%d%s" % (n, _SI_BY_EXP[e])


def canonicalize(kind, obj):
    """Every quantity of a Pod's containers or a Node's status, in place."""
    maps = []
    if kind == "Pod":
        spec = obj.get("spec") or {}
        for ctr in (spec.get("containers") or []) + (spec.get("initContainers") or []):
            res = (ctr or {}).get("resources") or {}
            maps += [res.get("limits"), res.get("requests")]
        maps.append(spec.get("overhead"))
    else:
        st = obj.get("status") or {}
        maps += [st.get("capacity"), st.get("allocatable")]
    for m in maps:
        if isinstance(m, dict):
            for k in m:
                m[k] = canonical_quantity(m[k])


def merge_patch(target, patch):
    """RFC 7386."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if not isinstance(target, dict):
        target = {}
    for k, v in patch.items():
        if v is None:
            target.pop(k, None)
        else:
            target[k] = merge_patch(target.get(k), v)
    return target


def keep_spec(old, new):
    """The status subresource's rules (kube-apiserver's nodeStatusStrategy and
    podStatusStrategy, 1.20 to today): the spec and metadata.ownerReferences
    stay as they were; the rest of metadata (labels, annotations) and the
    status take the patch."""
    for was, now, key in ((old, new, "spec"), (old["metadata"], new["metadata"], "ownerReferences")):
        if key in was:
            now[key] = copy.deepcopy(was[key])
        else:
            now.pop(key, None)


def status(code, reason, message):
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "code": code}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fake-apiserver/1"

    def log_message(self, fmt, *args):
        pass

    # -- helpers
    def send_json(self, code, obj):
        body = (json.dumps(obj) + "\n").encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def fail(self, code, reason, message):
        self.send_json(code, status(code, reason, message))

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        try:
            return json.loads(raw or b"null")
        except ValueError:
            return ValueError

    def dispatch(self, method):
        st = self.server.store
        url = urllib.parse.urlsplit(self.path)
        q = {k: v[0] for k, v in urllib.parse.parse_qs(url.query).items()}
        parts = [urllib.parse.unquote(p) for p in url.path.strip("/").split("/")]
        if self.headers.get("Authorization") != "Bearer " + self.server.token:
            return self.fail(401, "Unauthorized", "Unauthorized")
        if parts[0] == "_test":
            return self.test_endpoint(method, parts[1:], q)
        with st.lock:
            verb = "WATCH" if q.get("watch") in ("1", "true") else method
            key = "%s %s" % (verb, url.path)
            st.requests[key] = st.requests.get(key, 0) + 1
            if st.fail_next > 0:
                st.fail_next -= 1
                return self.fail(500, "InternalError", "injected failure")
        if parts[:2] != ["api", "v1"]:
            return self.fail(404, "NotFound", "the server could not find the requested resource")
        p = parts[2:]
        if p == ["nodes"] and method == "GET":
            return self.list_or_watch("Node", q)
        if p == ["pods"] and method == "GET":
            return self.list_or_watch("Pod", q)
        if len(p) == 2 and p[0] == "nodes":
            return self.object_op(method, "Node", ("", p[1]))
        if len(p) == 3 and p[0] == "nodes" and p[2] == "status":
            return self.object_op(method, "Node", ("", p[1]), status_only=True)
        if len(p) == 4 and p[0] == "namespaces" and p[2] == "pods":
            return self.object_op(method, "Pod", (p[1], p[3]))
        if len(p) == 5 and p[0] == "namespaces" and p[2] == "pods" and p[4] == "status":
            return self.object_op(method, "Pod", (p[1], p[3]), status_only=True)
        if len(p) == 3 and p[0] == "namespaces" and p[2] == "events" and method == "POST":
            return self.create_event(p[1])
        if (len(p) == 5 and p[0] == "namespaces" and p[2] == "pods" and p[4] == "eviction" and
                method == "POST"):
            return self.evict(p[1], p[3])
        if len(p) == 5 and p[0] == "namespaces" and p[2] == "pods" and p[4] == "binding":
            if method == "POST":
                return self.binding(p[1], p[3])
        return self.fail(405, "MethodNotAllowed", "%s %s not supported" % (method, url.path))

    def do_GET(self):
        self.dispatch("GET")

    def do_POST(self):
        self.dispatch("POST")

    def do_PATCH(self):
        self.dispatch("PATCH")

    def do_DELETE(self):
        self.dispatch("DELETE")

    # -- objects
    def table(self, kind):
        st = self.server.store
        return st.nodes if kind == "Node" else st.pods

    def object_op(self, method, kind, key, status_only=False):
        st = self.server.store
        desc = kind.lower() + 's "%s"' % key[1]
        if method == "GET":
            with st.lock:
                obj = self.table(kind).get(key)
                obj = copy.deepcopy(obj)
            if obj is None:
                return self.fail(404, "NotFound", desc + " not found")
            return self.send_json(200, obj)
        if method != "PATCH":
            return self.fail(405, "MethodNotAllowed", method + " not supported")
        ctype = self.headers.get("Content-Type", "")
        if ctype != "application/merge-patch+json":
            return self.fail(415, "UnsupportedMediaType",
                             "the body of the request was in an unknown format - accepted media "
                             "types include: application/merge-patch+json")
        patch = self.body()
        if patch is ValueError or not isinstance(patch, dict):
            return self.fail(400, "BadRequest", "invalid merge patch body")
        with st.lock:
            obj = self.table(kind).get(key)
            if obj is None:
                return self.fail(404, "NotFound", desc + " not found")
            want = (patch.get("metadata") or {}).get("resourceVersion")
            if st.conflict_next > 0:
                st.conflict_next -= 1
                want = "stale"
            if want is not None and want != obj["metadata"]["resourceVersion"]:
                return self.fail(409, "Conflict",
                                 "Operation cannot be fulfilled on %s: the object has been "
                                 "modified; please apply your changes to the latest version "
                                 "and try again" % desc)
            new = merge_patch(copy.deepcopy(obj), patch)
            new["metadata"]["name"] = obj["metadata"]["name"]
            if status_only:
                keep_spec(obj, new)
            canonicalize(kind, new)
            st.bump(new)
            self.table(kind)[key] = new
            st.record("MODIFIED", kind, new)
            out = copy.deepcopy(new)
        return self.send_json(200, out)

    def binding(self, ns, name):
        st = self.server.store
        b = self.body()
        if b is ValueError or not isinstance(b, dict) or b.get("kind") != "Binding":
            return self.fail(400, "BadRequest", "body is not a Binding")
        target = (b.get("target") or {}).get("name")
        if not target:
            return self.fail(400, "BadRequest", "Binding has no target.name")
        meta = b.get("metadata") or {}
        with st.lock:
            pod = st.pods.get((ns, name))
            if pod is None:
                return self.fail(404, "NotFound", 'pods "%s" not found' % name)
            if meta.get("uid") and meta["uid"] != pod["metadata"].get("uid"):
                return self.fail(409, "Conflict", 'Operation cannot be fulfilled on pods/binding '
                                 '"%s": UID precondition failed' % name)
            if (pod.get("spec") or {}).get("nodeName"):
                return self.fail(409, "Conflict", 'Operation cannot be fulfilled on pods/binding '
                                 '"%s": pod %s is already assigned to node "%s"'
                                 % (name, name, pod["spec"]["nodeName"]))
            pod.setdefault("spec", {})["nodeName"] = target
            if meta.get("annotations"):
                pod["metadata"].setdefault("annotations", {}).update(meta["annotations"])
            st.bump(pod)
            st.record("MODIFIED", "Pod", pod)
        return self.send_json(201, {"kind": "Status", "apiVersion": "v1", "status": "Success",
                                    "code": 201, "metadata": {}})

    def evict(self, ns, name):
        """POST pods/<name>/eviction (policy/v1): no PodDisruptionBudgets
        here, so the pod is deleted at once (a DELETED event)."""
        st = self.server.store
        ev = self.body()
        if (ev is ValueError or not isinstance(ev, dict) or ev.get("kind") != "Eviction" or
                (ev.get("metadata") or {}).get("name") != name):
            return self.fail(400, "BadRequest", "body is not an Eviction of pod %s" % name)
        if ev.get("apiVersion") not in self.server.eviction_versions:
            # What kube-apiserver 1.20 answers policy/v1 (it came with 1.22).
            return self.fail(400, "BadRequest", 'no kind "Eviction" is registered for version '
                             '"%s"' % ev.get("apiVersion"))
        with st.lock:
            pod = st.pods.pop((ns, name), None)
            if pod is None:
                return self.fail(404, "NotFound", 'pods "%s" not found' % name)
            st.bump(pod)
            st.record("DELETED", "Pod", pod)
        return self.send_json(201, {"kind": "Status", "apiVersion": "v1", "status": "Success",
                                    "code": 201, "metadata": {}})

    def create_event(self, ns):
        """POST /api/v1/namespaces/<ns>/events: kept for /_test/events, with
        the checks kube-apiserver makes that a writer can get wrong."""
        st = self.server.store
        ev = self.body()
        with st.lock:
            delay = st.slow_events_ms / 1000.0
        time.sleep(delay)  # outside the lock: other requests and watches go on
        if ev is ValueError or not isinstance(ev, dict):
            return self.fail(400, "BadRequest", "body is not an Event")
        meta = ev.get("metadata") or {}
        inv = ev.get("involvedObject") or {}
        if meta.get("namespace", ns) != ns or inv.get("namespace") != ns:
            return self.fail(422, "Invalid", "Event is invalid: involvedObject.namespace: does "
                             "not match event.namespace")
        if not meta.get("name") or not ev.get("reason") or ev.get("type") not in ("Normal",
                                                                                   "Warning"):
            return self.fail(422, "Invalid", "Event is invalid: name, reason or type")
        with st.lock:
            if any(e["metadata"]["name"] == meta["name"] for e in st.core_events):
                return self.fail(409, "AlreadyExists",
                                 'events "%s" already exists' % meta["name"])
            meta["namespace"] = ns
            ev["metadata"] = meta
            st.bump(ev)
            st.core_events.append(copy.deepcopy(ev))
        return self.send_json(201, ev)

    # -- list and watch
    @staticmethod
    def labelled(obj, sel):
        """labelSelector: comma-separated "key", "!key", "key=value", "key!=value"."""
        labels = (obj.get("metadata") or {}).get("labels") or {}
        for term in filter(None, sel.split(",")):
            if "!=" in term:
                k, v = term.split("!=", 1)
                if labels.get(k) == v:
                    return False
            elif "=" in term:
                k, v = term.split("=", 1)
                if labels.get(k.rstrip("=")) != v:
                    return False
            elif term.startswith("!"):
                if term[1:] in labels:
                    return False
            elif term not in labels:
                return False
        return True

    @staticmethod
    def selected(kind, obj, sel):
        if not sel:
            return True
        for term in sel.split(","):
            field, _, value = term.partition("=")
            if field == "spec.nodeName":
                if (obj.get("spec") or {}).get("nodeName", "") != value:
                    return False
            elif field == "metadata.name":
                if obj["metadata"]["name"] != value:
                    return False
            else:
                return False
        return True

    def list_or_watch(self, kind, q):
        st = self.server.store
        sel = q.get("fieldSelector", "")
        if q.get("watch") in ("1", "true"):
            return self.watch(kind, q, sel)
        with st.lock:
            items = [copy.deepcopy(o) for o in self.table(kind).values()
                     if self.selected(kind, o, sel) and
                     self.labelled(o, q.get("labelSelector", ""))]
            rv = str(st.rv)
        self.send_json(200, {"kind": kind + "List", "apiVersion": "v1",
                             "metadata": {"resourceVersion": rv}, "items": items})

    def chunk(self, obj):
        data = (json.dumps(obj) + "\n").encode()
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def watch(self, kind, q, sel):
        st = self.server.store
        try:
            since = int(q.get("resourceVersion") or "0")
        except ValueError:
            return self.fail(400, "BadRequest", "invalid resourceVersion")
        with st.lock:
            if since and since < st.compacted:
                return self.fail(410, "Expired", "too old resource version: %d (%d)"
                                 % (since, st.compacted))
            if not since:
                since = st.rv
            gen = st.close_gen
            # What this watcher considers selected (as of now; good enough for
            # the tests, which watch from a fresh list's rv).
            seen = {(o["metadata"].get("namespace", ""), o["metadata"]["name"])
                    for o in self.table(kind).values() if self.selected(kind, o, sel)}
            first = set()
            for rv, etype, k, obj in st.events:
                if rv > since and k == kind:
                    key = (obj["metadata"].get("namespace", ""), obj["metadata"]["name"])
                    # An object whose first event since the watcher's rv is a
                    # deletion existed then: the DELETED must reach it (else
                    # a pod deleted between a list and its watch is never
                    # seen to go, as no real API server would do).
                    if key not in first and etype == "DELETED" and self.selected(kind, obj, sel):
                        seen.add(key)
                    elif key not in first:
                        seen.discard(key)
                    first.add(key)
        timeout = float(q.get("timeoutSeconds") or 1800)
        bookmarks = q.get("allowWatchBookmarks") == "true"
        deadline = time.monotonic() + timeout
        next_bookmark = time.monotonic() + self.server.bookmark_interval
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.flush()
        # Each watched object last reported at rv; a MODIFIED that moves a pod
        # out of the selection is a DELETED for this watcher, into it ADDED.
        try:
            while True:
                with st.lock:
                    now = time.monotonic()
                    if st.close_gen != gen or now >= deadline:
                        break
                    if since < st.compacted:
                        out = [{"type": "ERROR", "object": status(410, "Expired",
                                                                  "too old resource version")}]
                        since = st.rv
                        done = True
                    else:
                        done = False
                        out = []
                        for rv, etype, k, obj in st.events:
                            if rv <= since or k != kind:
                                continue
                            key = (obj["metadata"].get("namespace", ""), obj["metadata"]["name"])
                            now_in = self.selected(kind, obj, sel) and etype != "DELETED"
                            was_in = key in seen
                            if now_in and not was_in:
                                seen.add(key)
                                out.append({"type": "ADDED", "object": obj})
                            elif now_in:
                                out.append({"type": etype, "object": obj})
                            elif was_in:
                                seen.discard(key)
                                out.append({"type": "DELETED", "object": obj})
                        if st.events:
                            since = max(since, st.events[-1][0])
                    if not out and not done:
                        if bookmarks and now >= next_bookmark:
                            out = [{"type": "BOOKMARK", "object": {
                                "kind": kind, "apiVersion": "v1",
                                "metadata": {"resourceVersion": str(st.rv)}}}]
                            since = st.rv
                            next_bookmark = now + self.server.bookmark_interval
                        else:
                            st.lock.wait(min(0.05, max(0.0, deadline - now)))
                            continue
                for ev in out:
                    self.chunk(ev)
                if done:
                    break
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass
        self.close_connection = True

    # -- test endpoints
    def test_endpoint(self, method, p, q):
        st = self.server.store
        if method == "POST" and p in (["pods"], ["nodes"]):
            obj = self.body()
            if obj is ValueError or not isinstance(obj, dict):
                return self.fail(400, "BadRequest", "bad object")
            kind = "Pod" if p == ["pods"] else "Node"
            meta = obj.setdefault("metadata", {})
            with st.lock:
                if kind == "Pod":
                    meta.setdefault("namespace", "default")
                    key = (meta["namespace"], meta["name"])
                else:
                    key = ("", meta["name"])
                st.uid += 1
                meta.setdefault("uid", "uid-%d" % st.uid)
                # Set by the server, to the second, as the real one does.
                meta["creationTimestamp"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
                obj.setdefault("kind", kind)
                obj.setdefault("apiVersion", "v1")
                canonicalize(kind, obj)
                st.bump(obj)
                self.table(kind)[key] = obj
                st.record("ADDED", kind, obj)
                out = copy.deepcopy(obj)
            return self.send_json(201, out)
        if method == "DELETE" and len(p) == 3 and p[0] == "pods":
            with st.lock:
                obj = st.pods.pop((p[1], p[2]), None)
                if obj is None:
                    return self.fail(404, "NotFound", "no such pod")
                st.bump(obj)
                st.record("DELETED", "Pod", obj)
            return self.send_json(200, obj)
        if method == "GET" and p == ["events"]:
            with st.lock:
                items = copy.deepcopy(st.core_events)
            return self.send_json(200, {"items": items})
        if method == "GET" and p == ["requests"]:
            with st.lock:
                counts = dict(st.requests)
            return self.send_json(200, {"counts": counts})
        if method == "POST" and p == ["compact"]:
            with st.lock:
                st.rv += 1  # open watches are now behind the compaction point
                st.compacted = st.rv
                st.events = []
                st.lock.notify_all()
            return self.send_json(200, {"compacted": st.compacted})
        if method == "POST" and p == ["slow_events"]:
            with st.lock:
                st.slow_events_ms = int(q.get("ms", "0"))
            return self.send_json(200, {})
        if method == "POST" and p == ["fail"]:
            with st.lock:
                st.fail_next = int(q.get("n", "1"))
            return self.send_json(200, {})
        if method == "POST" and p == ["conflict_next"]:
            with st.lock:
                st.conflict_next = int(q.get("n", "1"))
            return self.send_json(200, {})
        if method == "POST" and p == ["close_watches"]:
            with st.lock:
                st.close_gen += 1
                st.lock.notify_all()
            return self.send_json(200, {})
        return self.fail(404, "NotFound", "no such test endpoint")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--token", default="test-token")
    ap.add_argument("--bookmark-interval", type=float, default=1.0)
    args = ap.parse_args()
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    srv.store = Store()
    srv.token = args.token
    srv.bookmark_interval = args.bookmark_interval
    # The Eviction versions pods/eviction takes: both since Kubernetes 1.22;
    # "policy/v1beta1" alone is a 1.20 API server.
    srv.eviction_versions = os.environ.get("VG_FAKE_EVICTION_VERSIONS",
                                           "policy/v1,policy/v1beta1").split(",")
    print("PORT %d" % srv.server_address[1], flush=True)
    try:
        srv.serve_forever(poll_interval=0.1)
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
