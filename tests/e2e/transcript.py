"""transcript.py -- what a seed case ran and saw, kept in docs/walkthroughs.

Each seed case (e2e.py, `seed-*`) records the commands it runs on the real
cluster, what they printed and what it checked, in a Transcript. The
walkthrough page of that seed (docs/walkthroughs/<page>.md) holds the
transcript of a real run between two markers; at the end of the case the
page's block is compared with this run's, so a page can never show something
the product no longer does: a difference fails the case.

Some of what a run prints differs from run to run without meaning anything:
pod-name suffixes, resize ids, PIDs, dates, ages, addresses, rates and
timings. The comparison masks those (every number, the names of days and
months, the random suffixes of a Deployment's pods and of resize ids, widths
of padding and rules); the
text, commands, headers, units and order must match. The page keeps the
numbers of the run that last wrote it.

Write the pages from a run with VGPU_E2E_WRITE_DOCS=1 (tests/e2e/run.sh
CASE...); every run also leaves its transcripts in $VGPU_E2E_TRANSCRIPTS
(default build/e2e/transcripts).
"""
import difflib
import os
import re

import install
from kube import E2EError

DOCS = os.path.join(install.ROOT, "docs", "walkthroughs")
BEGIN = "<!-- e2e transcript of %s (tests/e2e/transcript.py): written by a run, do not edit -->"
END = "<!-- end of the e2e transcript of %s -->"
FENCE = "```"

# <Deployment>-<pod-template-hash>-<random>, as a ReplicaSet names its pods.
POD_SUFFIX = re.compile(r"\b([a-z0-9]+(?:-[a-z0-9]+)*?)-[a-z0-9]{6,10}-[a-z0-9]{5}\b")
# A resize request's id: <epoch seconds>-<8 random hex digits> (docs/resize.md).
RESIZE_ID = re.compile(r"\b\d{9,}-[0-9a-f]{8}\b")
DAYS_MONTHS = re.compile(r"\b(Mon|Tue|Wed|Thu|Fri|Sat|Sun|Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|"
                         r"Oct|Nov|Dec)\b")


def mask(text):
    """The text with what may change between two equal runs made uniform."""
    text = POD_SUFFIX.sub(r"\1-<pod>", text)
    text = RESIZE_ID.sub("<resize-id>", text)
    text = DAYS_MONTHS.sub("<d>", text)
    text = re.sub(r"\d+(\.\d+)?", "0", text)
    text = re.sub(r"-{3,}", "---", text)
    text = re.sub(r"={3,}", "===", text)
    return "\n".join(re.sub(r"[ \t]+", " ", line).strip() for line in text.splitlines())


class Transcript:
    """The commands of one seed case and what they printed, as a reader
    would type and see them."""

    def __init__(self, case, page):
        self.case, self.page, self.lines = case, page, []

    def say(self, text):
        """A step's heading."""
        if self.lines:
            self.lines.append("")
        self.lines.append("== " + text)

    def shell(self, command, output):
        """A command as the user types it, and what it printed."""
        self.lines.append("$ " + command)
        self.lines += output.rstrip("\n").splitlines()
        return output

    def ok(self, what):
        """A check the case made on what it saw."""
        self.lines.append("   ok: " + what)

    def text(self):
        return "\n".join(self.lines) + "\n"

    # ---- the page

    def path(self):
        return os.path.join(DOCS, self.page)

    def finish(self):
        """Leaves the transcript in $VGPU_E2E_TRANSCRIPTS, writes it into the
        page when VGPU_E2E_WRITE_DOCS=1, else fails when the page shows a
        different run."""
        out = os.environ.get("VGPU_E2E_TRANSCRIPTS",
                             os.path.join(install.ROOT, "build", "e2e", "transcripts"))
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, self.case + ".txt"), "w") as f:
            f.write(self.text())
        with open(self.path()) as f:
            page = f.read()
        begin, end = BEGIN % self.case, END % self.case
        if begin not in page or end not in page:
            raise E2EError("docs/walkthroughs/%s has no block for %s (the lines %r and %r)" % (
                self.page, self.case, begin, end))
        head, rest = page.split(begin, 1)
        shown, tail = rest.split(end, 1)
        block = "\n%s\n%s%s\n" % (FENCE, self.text(), FENCE)
        if os.environ.get("VGPU_E2E_WRITE_DOCS") == "1":
            with open(self.path(), "w") as f:
                f.write(head + begin + block + end + tail)
            return
        if mask(shown) != mask(block):
            diff = "\n".join(difflib.unified_diff(mask(shown).splitlines(),
                                                  mask(block).splitlines(), "page", "this run",
                                                  lineterm="", n=1))
            raise E2EError("docs/walkthroughs/%s does not show what this run did (numbers, "
                           "names and dates masked); rerun with VGPU_E2E_WRITE_DOCS=1 if the "
                           "change is intended:\n%s" % (self.page, diff))
