#!/usr/bin/python3
"""The container images (images/): that `make images` (images/build.sh) and images/Dockerfile
build the same two images, that each installs exactly the Debian packages its programs link, and
that the archives `make images` wrote are what deploy/ expects. No network, no container engine.

Always:
- images/Dockerfile has the stages vgpu-node and vgpu-scheduler (those with images/<name>.files),
  each FROM debian:<suite>-slim, installing images/<name>.packages without Recommends and
  copying what the build stage staged from images/<name>.files; the build stage stages each;
- vgpu-scheduler runs as 65532:65532, vgpu-node as root; each ENTRYPOINT is its first program;
- deploy/base/kustomization.yaml names both, with the project's version (CMakeLists.txt) as the
  tag, which is also the Dockerfile's VERSION default;
- with --bin-dir/--lib-dir: images/<name>.packages is exactly the set of Debian packages (as dpkg
  on this machine says) that own the libraries the image's programs link (readelf -d NEEDED),
  libc6 aside; every program's --version prints the project's version.
With --images-dir DIR, for each DIR/<name>.tar that exists (`make images`), read with tarfile:
the index names the image <newName>:<newTag>; the config has the Dockerfile stage's user,
entrypoint, cmd, PATH and version label; two layers, the first a Debian root with /bin/sh, cp,
chmod, mv and every listed package installed (its dpkg status), no manual pages or docs but
copyright files; the second exactly the image's files under /opt/vgpu, executable.
"""

import gzip
import io
import json
import os
import re
import subprocess
import sys
import tarfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "images"))
import spec  # noqa: E402

FAILURES = []
NAMES = ("vgpu-node", "vgpu-scheduler")
FIRST_PROGRAM = {"vgpu-node": "vgpu-device-plugin", "vgpu-scheduler": "vgpu-scheduler"}
USER = {"vgpu-node": "0:0", "vgpu-scheduler": "65532:65532"}


def check(cond, what):
    if not cond:
        FAILURES.append(what)
        print("FAIL:", what)
    return cond


def arg(name):
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else None


def project_version():
    with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
        m = re.search(r"project\(vgpu VERSION (\S+)", f.read())
    return m.group(1) if m else None


def check_dockerfile(version):
    stages = spec.stages()
    names = spec.image_names()
    check(sorted(names) == sorted(NAMES), "the Dockerfile's image stages: %s" % names)
    build = " ".join(r for w, r in stages.get("build", {"ins": []})["ins"] if w == "RUN")
    m = re.search(r"for image in ([\w\s-]+?); do\s+bash /src/images/build.sh stage", build)
    check(m and sorted(m.group(1).split()) == sorted(names),
          "the build stage stages every image: %s" % (m and m.group(1)))
    check("scripts/deps.sh --build" in build and "cmake --install" in build,
          "the build stage installs scripts/deps.sh --build and uses CMake's install rules")
    for name in names:
        st = stages[name]
        check(re.match(r"debian:[a-z]+-slim$", spec.base_image(name)) is not None,
              "%s is built on debian:<suite>-slim, not %s" % (name, spec.base_image(name)))
        ins = st["ins"]
        check(("COPY", "images/%s.packages /tmp/packages" % name) in ins,
              "%s copies images/%s.packages" % (name, name))
        runs = [r for w, r in ins if w == "RUN"]
        check(any("sed -e 's/#.*//' /tmp/packages | xargs -r apt-get install -y "
                  "--no-install-recommends" in r and "rm -rf /var/lib/apt/lists/*" in r
                  for r in runs),
              "%s installs /tmp/packages without Recommends and drops the apt lists" % name)
        check(("COPY", "--from=build /stage/%s/ /" % name) in ins,
              "%s copies the build stage's /stage/%s" % (name, name))
        cfg = spec.config(name, env={})
        check(cfg["user"] == USER[name], "%s USER %s, got %s" % (name, USER[name], cfg["user"]))
        check(cfg["entrypoint"] == [FIRST_PROGRAM[name]],
              "%s ENTRYPOINT [%s]: %s" % (name, FIRST_PROGRAM[name], cfg["entrypoint"]))
        check(dict(cfg["env"]).get("PATH", "").startswith("/opt/vgpu/bin:"),
              "%s PATH starts with /opt/vgpu/bin" % name)
        check(cfg["labels"].get("org.opencontainers.image.version") == version,
              "%s's VERSION default is the project's %s: %s"
              % (name, version, cfg["labels"].get("org.opencontainers.image.version")))
        files = spec.entries(os.path.join(ROOT, "images", name + ".files"))
        check("bin/" + FIRST_PROGRAM[name] in files, "%s.files has bin/%s" % (name, FIRST_PROGRAM[name]))
    node_files = spec.entries(os.path.join(ROOT, "images", "vgpu-node.files"))
    check({"bin/vgpu", "lib/libvgpu.so"} <= set(node_files),
          "vgpu-node has the vgpu CLI and lib/libvgpu.so (the init container copies "
          "/opt/vgpu/lib/libvgpu.so): %s" % node_files)


def check_refs(version):
    refs = spec.refs()
    for name in NAMES:
        ref = refs.get(name, "")
        check(ref.endswith(":" + version),
              "kustomization.yaml names %s with the project's version %s: %s" % (name, version, ref))


def package_of(soname):
    """The Debian package that owns this machine's (native) library soname."""
    out = subprocess.run(["/sbin/ldconfig", "-p"], capture_output=True, text=True).stdout
    for m in re.finditer(r"^\s*(\S+) \([^)]*\) => (\S+)$", out, re.M):
        path = m.group(2)
        if m.group(1) != soname or re.search(r"/lib(32|x32)/|i386", path):
            continue
        for p in (path, path[4:] if path.startswith("/usr/") else "/usr" + path):
            r = subprocess.run(["dpkg-query", "-S", p], capture_output=True, text=True)
            if r.returncode == 0:
                return r.stdout.split(":")[0].split(",")[0].strip()
    return None


def check_packages(bindir, libdir, version):
    for name in NAMES:
        want = set()
        for f in spec.entries(os.path.join(ROOT, "images", name + ".files")):
            path = os.path.join(bindir if f.startswith("bin/") else libdir, os.path.basename(f))
            if not check(os.path.exists(path), "%s: %s is built (%s)" % (name, f, path)):
                continue
            dyn = subprocess.run(["readelf", "-d", path], capture_output=True, text=True).stdout
            for soname in re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", dyn):
                pkg = package_of(soname)
                check(pkg is not None, "%s: a package owns %s (%s)" % (name, soname, f))
                # libc6 is in every Debian root; a sanitizer build's runtimes are not shipped.
                if pkg and pkg != "libc6" and not re.match(r"lib(asan|ubsan)\d", pkg):
                    want.add(pkg)
            if f.startswith("bin/"):
                p = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30)
                check(p.returncode == 0 and p.stdout.strip().endswith(" " + version),
                      "%s --version prints %s: %r" % (f, version, p.stdout + p.stderr))
        have = set(spec.entries(os.path.join(ROOT, "images", name + ".packages")))
        check(have == want, "images/%s.packages %s is what its programs link: %s"
              % (name, sorted(have), sorted(want)))


def read_member(tar, name):
    """An OCI layout file from the archive, its name with or without the leading './'."""
    for n in (name, "./" + name):
        try:
            return tar.extractfile(n).read()
        except KeyError:
            pass
    raise SystemExit("%s: no %s in the archive" % (tar.name, name))


def read_blob(tar, digest):
    return read_member(tar, "blobs/sha256/" + digest.split(":", 1)[1])


def layer_members(tar, desc):
    data = read_blob(tar, desc["digest"])
    if "gzip" in desc["mediaType"]:
        data = gzip.decompress(data)
    layer = tarfile.open(fileobj=io.BytesIO(data))
    return layer, {m.name.lstrip("./").rstrip("/"): m for m in layer.getmembers()}


def check_archive(path, name):
    ref = spec.refs().get(name)
    cfg_want = spec.config(name, env={"VERSION": ref.rsplit(":", 1)[1]})
    with tarfile.open(path) as tar:
        index = json.loads(read_member(tar, "index.json"))
        (m,) = index["manifests"]
        ann = m.get("annotations", {})
        check(ann.get("io.containerd.image.name") == ref and
              ann.get("org.opencontainers.image.ref.name") == ref,
              "%s: the index names %s: %s" % (path, ref, ann))
        manifest = json.loads(read_blob(tar, m["digest"]))
        config = json.loads(read_blob(tar, manifest["config"]["digest"]))["config"]
        check(config.get("User") == cfg_want["user"], "%s: user %s" % (path, config.get("User")))
        check(config.get("Entrypoint") == cfg_want["entrypoint"] and
              config.get("Cmd") == cfg_want["cmd"],
              "%s: entrypoint %s cmd %s" % (path, config.get("Entrypoint"), config.get("Cmd")))
        check("PATH=" + dict(cfg_want["env"])["PATH"] in config.get("Env", []),
              "%s: PATH from the Dockerfile: %s" % (path, config.get("Env")))
        check(config.get("Labels", {}).get("org.opencontainers.image.version") == ref.split(":")[-1],
              "%s: version label" % path)
        layers = manifest["layers"]
        if not check(len(layers) == 2, "%s: two layers (base, vgpu), got %d" % (path, len(layers))):
            return
        base, members = layer_members(tar, layers[0])
        for f in ("bin/sh", "bin/cp", "bin/mv", "bin/chmod", "bin/ls"):  # /bin may be /usr/bin
            check(f in members or "usr/" + f in members, "%s: base has /%s" % (path, f))
        check(not any(n.startswith("usr/share/man/") and members[n].isfile() for n in members) and
              all(n.endswith("/copyright") for n in members
                  if n.startswith("usr/share/doc/") and members[n].isfile()),
              "%s: no manual pages, no documentation but copyright files" % path)
        check(all(n in ("usr/share/locale", "usr/share/locale/locale.alias") for n in members
                  if n.startswith("usr/share/locale")), "%s: no translations" % path)
        status = base.extractfile(members["var/lib/dpkg/status"]).read().decode()
        installed = set(re.findall(r"^Package: (\S+)\n(?:[^\n]+\n)*?Status: install ok installed",
                                   status, re.M))
        need = set(spec.entries(os.path.join(ROOT, "images", name + ".packages")))
        check(need <= installed, "%s: installed %s" % (path, sorted(need - installed)))
        _, files = layer_members(tar, layers[1])
        regular = {n for n, mm in files.items() if mm.isfile()}
        want = {"opt/vgpu/" + f for f in spec.entries(os.path.join(ROOT, "images", name + ".files"))}
        check(regular == want, "%s: the vgpu layer holds %s, got %s" % (path, sorted(want),
                                                                        sorted(regular)))
        check(all(files[f].mode & 0o111 for f in want & regular if "/bin/" in f),
              "%s: its programs are executable" % path)
    print("%s: checked (%s)" % (path, ref))


def main():
    version = project_version()
    check(version is not None, "CMakeLists.txt: project(vgpu VERSION x.y.z)")
    check_dockerfile(version)
    check_refs(version)
    bindir, libdir = arg("--bin-dir"), arg("--lib-dir")
    if "--sanitized" in sys.argv:
        # The images hold the release build; a sanitizer build's programs link more
        # (the runtime keeps every NEEDED entry: absl, re2, ssl... behind gRPC).
        print("package lists vs linked libraries: not checked in a sanitizer build")
    elif bindir and libdir:
        check_packages(bindir, libdir, version)
    images = arg("--images-dir")
    for name in NAMES:
        path = os.path.join(images or "", name + ".tar")
        if images and os.path.exists(path):
            check_archive(path, name)
        else:
            print("%s: no archive (make images), not checked" % path)
    if FAILURES:
        print("%d failure(s)" % len(FAILURES))
        return 1
    print("all passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
