"""The dialect table of src/common/dialect.c, read from its source, for the
Python tests: each resource role's dialect, default name and the device
plugin's configuration key that renames it (None when it cannot be renamed).
The C table is the one source of the names; this reads it rather than
repeating it, and refuses a table it cannot read."""

import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SOURCE = os.path.join(ROOT, "src", "common", "dialect.c")
ROW = re.compile(r'\[VG_ROLE_(\w+)\]\s*=\s*\{\s*\.dialect\s*=\s*VG_DIALECT_(\w+),\s*'
                 r'\.default_name\s*=\s*"([^"]+)",\s*\.key\s*=\s*(NULL|"[^"]+")')
DIALECTS = {"VGPU": "vgpu", "GPUSHARE": "gpushare", "TIMESLICING": "timeSlicing", "CCE": "cce"}


def roles():
    """[{"role", "dialect", "name", "key"}] in the table's order."""
    with open(SOURCE) as f:
        text = f.read()
    rows = [{"role": r, "dialect": DIALECTS[d], "name": n,
             "key": None if k == "NULL" else k.strip('"')} for r, d, n, k in ROW.findall(text)]
    count = len(re.findall(r"^\s*\[VG_ROLE_\w+\]\s*=", text, re.M))
    if not rows or len(rows) != count:
        raise SystemExit("%s: read %d of %d table rows" % (SOURCE, len(rows), count))
    return rows


def default_names():
    return {r["name"] for r in roles()}


def configured_names(dialect, options):
    """The names of one dialect's roles under a device plugin configuration's
    options for it (its `vgpu:` map, ...): renamed where a key says so."""
    out = set()
    for r in roles():
        if r["dialect"] != dialect:
            continue
        field = r["key"].split(".", 1)[1] if r["key"] else None
        out.add((options or {}).get(field, r["name"]) if field else r["name"])
    return out
