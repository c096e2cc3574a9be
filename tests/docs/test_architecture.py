#!/usr/bin/env python3
"""test_architecture.py SOURCE_DIR [--doc FILE] -- the map of the house stays true.

docs/architecture.md tells a newcomer where things are; a map that names files and functions
that moved is worse than none. This test fails when:

  1. a path written in backticks in docs/architecture.md, README.md or another page of docs/
     (`src/...`, `tests/...`, `docs/...`, `deploy/...`, ...) does not exist; a path with `*`
     must match a file, one with `{a,b}` is each of its expansions;
  2. a name written `path:symbol` in docs/architecture.md is not defined in that file (a
     function, variable, macro, typedef, struct, enum or enumerator; a .h file may declare it),
     or a backticked `name()` is defined nowhere under src/;
  3. a file of the repository cites a docs/*.md page that does not exist, or cites documents
     the repository does not hold (design.md, "the research note", research/*.md);
  4. a Prometheus family (vgpu_*) of a metrics source (src/*/*metrics*.c) is named neither in
     docs/metrics.md nor in docs/admission.md (the recipe "A new metric").

--doc FILE checks FILE instead of docs/architecture.md (to see the test fail on a copy).
"""
import glob
import os
import re
import sys

TOP_DIRS = ("src", "tests", "docs", "deploy", "images", "bench", "scripts", "examples", "man",
            "completions")
TOP_FILES = ("README.md", "Makefile", "CMakeLists.txt", "LICENSE")

# Paths the pages name that the reader makes (docs/install.md's registry overlay).
MADE_BY_READER = {"deploy/overlays/registry"}

# Names the pages may use before the code has them (none today): allowed to be
# missing; an entry that exists is reported so it can go.
PLANNED = set()

# `path`, or `path:symbol` with symbol a name or `struct name` (enum, union).
PATH_RE = re.compile(r"`((?:%s)/[^`\s:]*(?::(?:(?:struct|enum|union) )?[A-Za-z_]\w*)?|(?:%s))`"
                     % ("|".join(TOP_DIRS), "|".join(re.escape(f) for f in TOP_FILES)))
CALL_RE = re.compile(r"`([A-Za-z_][A-Za-z0-9_]*)\(\)`")


def expand(path):
    """`a.{h,c}` -> a.h, a.c."""
    m = re.search(r"\{([^}]*)\}", path)
    if not m:
        return [path]
    out = []
    for alt in m.group(1).split(","):
        out += expand(path[:m.start()] + alt + path[m.end():])
    return out


def path_ok(root, path):
    if "*" in path:
        return bool(glob.glob(os.path.join(root, path)))
    return os.path.exists(os.path.join(root, path))


def is_pattern(path):
    """A placeholder rather than a path: src/scheduler/policy_NAME.c, tests/fuzz/corpus/<t>/."""
    return "<" in path or "..." in path or re.search(r"(^|[/_.-])NAME([/_.-]|$)", path)


def definition_res(symbol):
    """Regexes of a line that defines or declares symbol."""
    kind, _, name = symbol.rpartition(" ")
    n = re.escape(name)
    if kind in ("struct", "enum", "union"):
        return [re.compile(r"^\s*(typedef\s+)?%s\s+%s\b\s*(\{|;)" % (kind, n), re.M)]
    return [
        re.compile(r"^\s*#\s*define\s+%s\b" % n, re.M),
        re.compile(r"^typedef\b.*\b%s\b" % n, re.M),
        # a top-level function, its prototype, or a variable (not indented: not a call)
        re.compile(r"^[A-Za-z_][^;{}\n]*?[\s*]%s\s*(\(|\[|=|;|,)" % n, re.M),
        re.compile(r"^\s+%s\s*(=[^=]|,|$)" % n, re.M),  # an enumerator
        re.compile(r"^(def|class)\s+%s\b|^%s\s*=|^%s\(\)\s*\{" % (n, n, n), re.M),  # py, sh
    ]


def defined_in(text, symbol):
    return any(r.search(text) for r in definition_res(symbol))


def read(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


class Report:
    def __init__(self):
        self.errors = []
        self.planned_missing = set()
        self.planned_present = set()

    def error(self, msg):
        self.errors.append(msg)


def check_paths(root, page, text, rep):
    for lineno, line in enumerate(text.splitlines(), 1):
        for m in PATH_RE.finditer(line):
            token = m.group(1)
            path = token.split(":", 1)[0]
            if is_pattern(path) or path in MADE_BY_READER:
                continue
            for p in expand(path):
                if path_ok(root, p):
                    if p in PLANNED:
                        rep.planned_present.add(p)
                elif p in PLANNED:
                    rep.planned_missing.add(p)
                else:
                    rep.error("%s:%d: `%s` does not exist" % (page, lineno, p))


def check_symbols(root, page, text, rep):
    src_texts = None
    for lineno, line in enumerate(text.splitlines(), 1):
        for m in PATH_RE.finditer(line):
            token = m.group(1)
            if ":" not in token:
                continue
            path, symbol = token.split(":", 1)
            full = os.path.join(root, path)
            if not os.path.isfile(full):
                continue  # reported (or planned) by check_paths
            if not defined_in(read(full), symbol):
                rep.error("%s:%d: `%s` is not defined in %s" % (page, lineno, symbol, path))
        for m in CALL_RE.finditer(line):
            if src_texts is None:
                src_texts = [read(f) for f in glob.glob(os.path.join(root, "src/**/*.[ch]"),
                                                        recursive=True)]
            if not any(defined_in(t, m.group(1)) for t in src_texts):
                rep.error("%s:%d: `%s()` is defined nowhere under src/" % (page, lineno,
                                                                           m.group(1)))


CITED_DOC_RE = re.compile(r"(?<![\w/.])docs/[A-Za-z0-9_./-]+?\.md\b")
# Documents that were never in the repository: the project's design notes.
ABSENT_RE = re.compile(r"(?<![\w/.-])design\.md\b|research note|\bresearch/[\w-]+\.md")
CITING_FILES = ("src/**/*", "tests/**/*", "bench/*", "scripts/**/*", "deploy/**/*",
                "images/*", "docs/**/*.md", "examples/**/*", "README.md", "Makefile",
                "CMakeLists.txt", "man/*", "completions/*")


def check_citations(root, rep):
    seen = set()
    for pattern in CITING_FILES:
        for f in glob.glob(os.path.join(root, pattern), recursive=True):
            rel = os.path.relpath(f, root)
            if rel in seen or not os.path.isfile(f) or rel.startswith("bench/results/"):
                continue
            seen.add(rel)
            try:
                with open(f, encoding="utf-8") as fh:
                    text = fh.read()
            except UnicodeDecodeError:
                continue  # binary
            for lineno, line in enumerate(text.splitlines(), 1):
                for m in CITED_DOC_RE.finditer(line):
                    if not os.path.exists(os.path.join(root, m.group(0))):
                        rep.error("%s:%d: cites %s, which does not exist" % (rel, lineno,
                                                                             m.group(0)))
                m = ABSENT_RE.search(line)
                if m and rel != "tests/docs/test_architecture.py":
                    rep.error("%s:%d: cites %r, which is not in the repository" % (rel, lineno,
                                                                                   m.group(0)))


FAMILY_RE = re.compile(r"\bvgpu_[a-z0-9_]+")


def check_metrics(root, rep):
    docs = read(os.path.join(root, "docs/metrics.md")) + read(os.path.join(root,
                                                                           "docs/admission.md"))
    sources = sorted(glob.glob(os.path.join(root, "src/*/*metrics*.c")))
    if not sources:
        rep.error("no metrics sources (src/*/*metrics*.c): has the renderer moved?")
    families = set()
    for f in sources:
        for name in FAMILY_RE.findall(read(f)):
            families.add((re.sub(r"_(bucket|sum|count)$", "", name), os.path.relpath(f, root)))
    for name, src in sorted(families):
        if not re.search(r"\b%s\b" % re.escape(name), docs):
            rep.error("%s: metric family %s is in neither docs/metrics.md nor docs/admission.md"
                      % (src, name))
    return len(families)


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__)
    root = argv[1]
    doc = "docs/architecture.md"
    if len(argv) == 4 and argv[2] == "--doc":
        doc = os.path.relpath(os.path.abspath(argv[3]), os.path.abspath(root))
    rep = Report()
    arch = read(os.path.join(root, doc))
    check_paths(root, doc, arch, rep)
    check_symbols(root, doc, arch, rep)
    for page in ["README.md"] + sorted(glob.glob(os.path.join(root, "docs/**/*.md"),
                                                  recursive=True)):
        rel = os.path.relpath(os.path.join(root, page), root)
        if rel != "docs/architecture.md" and rel != doc:
            check_paths(root, rel, read(os.path.join(root, rel)), rep)
    check_citations(root, rep)
    nfam = check_metrics(root, rep)
    names = len(PATH_RE.findall(arch)) + len(CALL_RE.findall(arch))
    for p in sorted(rep.planned_present):
        print("note: %s exists now: remove it from PLANNED in %s" % (p, argv[0]))
    if rep.planned_missing:
        print("note: %d names of the planned layout (issue 30, parts 1-5) not checked yet: %s"
              % (len(rep.planned_missing), " ".join(sorted(rep.planned_missing))))
    for e in rep.errors:
        print("FAIL: " + e)
    if rep.errors:
        print("%d problems (docs/architecture.md says what this test checks)" % len(rep.errors))
        return 1
    print("PASS: %d names in %s, the pages' paths, doc citations, %d metric families" %
          (names, doc, nfam))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
