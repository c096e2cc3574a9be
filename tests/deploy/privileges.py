"""privileges.py -- docs/install.md's "Privileges" table, read once for the two checks of it.

Each row is one `kubectl auth can-i` question: who (a service account of vgpu-system), verb,
resource (that command's arguments after the verb: RESOURCE[.GROUP][/NAME], --subresource=S,
-n NAMESPACE or -A), allowed (yes, no, or "evict overlay": yes only with deploy/overlays/evict)
and why. tests/deploy/test_deploy.py compares the rows with the rendered RBAC; the e2e case
least-privilege (tests/e2e/e2e.py) asks the real API server each one.
"""
import os
import shlex

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOC = os.path.join(ROOT, "docs", "install.md")
HEADING = "### Privileges"
COLUMNS = ["who", "verb", "resource", "allowed", "why"]
ANSWERS = ("yes", "no", "evict overlay")
NS = "vgpu-system"
BUILTIN = "built-in role `"


class Row:
    """One row; scope is the namespace, or "*" for -A and for a cluster-scoped resource."""

    def __init__(self, line, cells):
        self.line = line
        self.who, self.verb, resource, self.allowed, self.why = cells
        self.args = shlex.split(resource.replace("`", ""))
        if not self.args or self.allowed not in ANSWERS or not self.who or not self.verb:
            raise ValueError("%s:%d: a row needs who, verb, resource and allowed (one of %s): %s"
                             % (DOC, line, ", ".join(ANSWERS), " | ".join(cells)))
        self.resource, _, self.name = self.args[0].partition("/")
        self.resource, _, self.group = self.resource.partition(".")
        self.sub, self.scope = "", "*"
        rest = self.args[1:]
        while rest:
            flag = rest.pop(0)
            if flag.startswith("--subresource="):
                self.sub = flag.split("=", 1)[1]
            elif flag == "-n" and rest:
                self.scope = rest.pop(0)
            elif flag != "-A":
                raise ValueError("%s:%d: resource %r: unknown argument %r (RESOURCE[.GROUP][/NAME] "
                                 "--subresource=S -n NS -A)" % (DOC, line, resource, flag))

    def key(self):
        """What a rendered rule must match: (who, verb, group, resource/sub, name, scope)."""
        res = self.resource + ("/" + self.sub if self.sub else "")
        return (self.who, self.verb, self.group, res, self.name, self.scope)

    def builtin_roles(self):
        """The Kubernetes roles its why cites as "built-in role `NAME`"."""
        return [part.split("`", 1)[0] for part in self.why.split(BUILTIN)[1:]]

    def user(self):
        return "system:serviceaccount:%s:%s" % (NS, self.who)

    def can_i(self):
        """kubectl's arguments for this row."""
        return ["auth", "can-i", self.verb] + self.args + ["--as", self.user()]

    def __str__(self):
        return "%s:%d: %s %s %s (%s)" % (os.path.relpath(DOC, ROOT), self.line, self.who,
                                         self.verb, " ".join(self.args), self.allowed)


def rows(path=DOC):
    """Every row of the table under HEADING; ValueError naming the line when one is malformed."""
    with open(path) as f:
        lines = f.read().split("\n")
    if HEADING not in lines:
        raise ValueError("%s: no %r section" % (path, HEADING))
    out, in_table = [], False
    for n, text in enumerate(lines[lines.index(HEADING) + 1:], lines.index(HEADING) + 2):
        if text.startswith("#"):
            break
        if not text.startswith("|"):
            if in_table:
                break
            continue
        cells = [c.strip() for c in text.strip().strip("|").split("|")]
        if not in_table:
            if cells != COLUMNS:
                raise ValueError("%s:%d: the table's columns must be %s, got %s"
                                 % (path, n, COLUMNS, cells))
            in_table = True
        elif not set(text) <= set("|-: "):
            out.append(Row(n, cells))
    if not out:
        raise ValueError("%s: the %r table has no rows" % (path, HEADING))
    return out
