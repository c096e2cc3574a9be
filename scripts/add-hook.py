#!/usr/bin/env python3
"""add-hook.py LIST NAME... -- add entry-point names to an X-macro list in
src/lib/hooks.h (VG_CUDA_HOOKS, VG_CUDA_USED, VG_NVML_HOOKS, VG_NVML_USED),
keeping it in strcmp order (driver.c looks hooks up by binary search)."""
import re
import sys

path = "src/lib/hooks.h"
text = open(path).read()
lst, names = sys.argv[1], sys.argv[2:]
m = re.search(r"#define %s\(X\)[^\n]*\n((?:[^\n]*\\\n)*[^\n]*\n)" % lst, text)
if not m:
    sys.exit("no list %s in %s" % (lst, path))
have = re.findall(r"X\((\w+)\)", m.group(1))
items = sorted(set(have) | set(names), key=lambda s: s.encode())
lines = ["#define %s(X)" % lst] + ["  X(%s)" % n for n in items]
width = max(len(l) for l in lines) + 1
body = "\n".join(l.ljust(width) + "\\" for l in lines[:-1]) + "\n" + lines[-1] + "\n"
text = text[: m.start()] + body + text[m.end():]
open(path, "w").write(text)
