#!/usr/bin/python3
"""What images/build.sh (`make images`) needs to know about an image, from the files that say it
once: the image's stage of images/Dockerfile and the stages it is FROM (base, ENV, USER, WORKDIR,
ENTRYPOINT, CMD, LABEL), images/<image>.packages and .files, and deploy/base/kustomization.yaml
(the reference).

  spec.py names               the images: the Dockerfile's stages that take images/<name>.files
  spec.py ref NAME            newName:newTag of NAME in deploy/base/kustomization.yaml
  spec.py suite NAME          the Debian suite of the stage's base (debian:bookworm-slim: bookworm)
  spec.py config NAME         `umoci config` arguments, one a line, for the stage's config; ARG
                              values (VERSION, REVISION, SOURCE) come from the environment when
                              set there, else from the Dockerfile; empty labels are left out
tests/images/test_images.py imports it too.
"""

import json
import os
import re
import shlex
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DOCKERFILE = os.path.join(HERE, "Dockerfile")
KUSTOMIZATION = os.path.join(ROOT, "deploy", "base", "kustomization.yaml")


def entries(path):
    """The entries of images/*.packages and *.files: '#' starts a comment (images/build.sh's
    entries, in shell, for the Dockerfile's build stage, which has no Python)."""
    with open(path) as f:
        return [w for line in f for w in [line.split("#", 1)[0].strip()] if w]


def instructions(path=DOCKERFILE):
    """[(INSTRUCTION, rest)] with continuation lines joined and comments dropped."""
    out, cur = [], ""
    with open(path) as f:
        for line in f:
            s = line.rstrip("\n")
            if not cur and (not s.strip() or s.lstrip().startswith("#")):
                continue
            if s.endswith("\\"):
                cur += s[:-1] + " "
                continue
            cur += s
            word, _, rest = cur.strip().partition(" ")
            out.append((word.upper(), rest.strip()))
            cur = ""
    return out


def stages(path=DOCKERFILE):
    """{stage name: {"from": image, "ins": [(INSTRUCTION, rest)]}}."""
    out, cur = {}, None
    for word, rest in instructions(path):
        if word == "FROM":
            m = re.match(r"(\S+)(?:\s+AS\s+(\S+))?$", rest, re.I)
            cur = {"from": m.group(1), "ins": []}
            out[m.group(2) or m.group(1)] = cur
        elif cur is not None:
            cur["ins"].append((word, rest))
    return out


def image_names(path=DOCKERFILE):
    return [n for n in stages(path)
            if os.path.exists(os.path.join(HERE, n + ".files"))]


def lineage(name):
    """The stage and the stages it is FROM, base first."""
    st = stages()
    out = [st[name]]
    while out[0]["from"] in st:
        out.insert(0, st[out[0]["from"]])
    return out


def base_image(name):
    """The image a stage is built on, through the stages it is FROM."""
    return lineage(name)[0]["from"]


def suite(name):
    base = base_image(name)
    m = re.match(r"debian:([a-z]+)(-slim)?$", base)
    if not m:
        raise SystemExit("spec.py: stage %s is FROM %s, not debian:SUITE[-slim]" % (name, base))
    return m.group(1)


def pairs(rest, args):
    """KEY=VALUE words (ENV, LABEL) with ${ARG} and $ARG substituted."""
    out = []
    for word in shlex.split(rest):
        k, _, v = word.partition("=")
        v = re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: args.get(m.group(1) or m.group(2), ""), v)
        out.append((k, v))
    return out


def config(name, env=os.environ):
    """The stage's image config, with what it inherits from the stages it is FROM:
    {"env": [(k, v)], "labels": {}, "user", "workdir", "entrypoint": [], "cmd": []}."""
    cfg = {"env": [], "labels": {}, "user": "", "workdir": "", "entrypoint": None, "cmd": None}
    for stage in lineage(name):
        stage_config(stage, cfg, env)
    return cfg


def stage_config(stage, cfg, env):
    args = {}  # a stage's ARGs are its own
    for word, rest in stage["ins"]:
        if word == "ARG":
            k, _, v = rest.partition("=")
            args[k] = env.get(k, v)
        elif word == "ENV":
            cfg["env"] += pairs(rest, args)
        elif word == "LABEL":
            cfg["labels"].update(pairs(rest, args))
        elif word == "USER":
            cfg["user"] = rest
        elif word == "WORKDIR":
            cfg["workdir"] = rest
        elif word in ("ENTRYPOINT", "CMD"):
            cfg[word.lower()] = json.loads(rest)


def umoci_args(name):
    c = config(name)
    out = []
    for k, v in c["env"]:
        out += ["--config.env", "%s=%s" % (k, v)]
    for k, v in sorted(c["labels"].items()):
        if v:
            out += ["--config.label", "%s=%s" % (k, v)]
    if c["user"]:
        out += ["--config.user", c["user"]]
    if c["workdir"]:
        out += ["--config.workingdir", c["workdir"]]
    for a in c["entrypoint"] or []:
        out += ["--config.entrypoint", a]
    for a in c["cmd"] or []:
        out += ["--config.cmd", a]
    return out


def refs(path=KUSTOMIZATION):
    """{logical image name: newName:newTag} from the kustomization's images: entries."""
    import yaml
    with open(path) as f:
        k = yaml.safe_load(f)
    return {i["name"]: "%s:%s" % (i.get("newName", i["name"]), i["newTag"])
            for i in k.get("images", [])}


def main(argv):
    cmd, rest = (argv[1], argv[2:]) if len(argv) > 1 else ("", [])
    if cmd == "names" and not rest:
        lines = image_names()
    elif cmd == "ref" and len(rest) == 1:
        r = refs()
        if rest[0] not in r:
            raise SystemExit("spec.py: no images: entry named %s in %s" % (rest[0], KUSTOMIZATION))
        lines = [r[rest[0]]]
    elif cmd == "suite" and len(rest) == 1:
        lines = [suite(rest[0])]
    elif cmd == "config" and len(rest) == 1:
        lines = umoci_args(rest[0])
    else:
        sys.stderr.write(__doc__)
        return 2
    for line in lines:
        if "\n" in line:
            raise SystemExit("spec.py: a newline in %r" % line)
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
