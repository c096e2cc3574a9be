#!/usr/bin/env python3
"""console_diff.py EXPECTED ACTUAL -- does a command's output match what a page shows?

test_readme.sh runs each command of a page's ```console block and gives this the lines the page
prints under it (EXPECTED) and what the command printed, stdout and stderr together (ACTUAL).
They must be equal line for line once what varies from run to run or machine to machine is
masked the same way on both sides: a run's region path and PIDs, the date nvidia-smi prints,
utilisation that NVML measured, and vgpu-burn's timings and rates. Everything else -- limits,
sizes a program computes, layout versions, table layout, wording -- must match exactly, so a
page whose output drifts from the program fails. A line "..." on the page stands for any number
of lines (a page may cut a long series short). Exit 0 when they match; else 1 and a diff.
"""
import difflib
import re
import sys

# (pattern, replacement), applied in order to every line of both sides.
MASKS = [
    # A run's region file: $XDG_RUNTIME_DIR/vgpu-runs/PID.cache or $TMPDIR/vgpu-runs-UID/PID.cache.
    (re.compile(r"\S*/vgpu-runs[^/\s]*/\d+\.cache"), "<region>"),
    # vgpu status's process rows start with the PID; its width moves the columns.
    (re.compile(r"^\d+ +(?=\d+ +\d+ MiB)"), "<pid> "),
    # nvidia-smi's process rows: GPU, GI, CI, then the PID.
    (re.compile(r"^(\|\s+\d+\s+\S+\s+\S+)\s+\d+(?=\s+[CG]\s)"), r"\1 <pid>"),
    # nvidia-smi's first line: the date and time.
    (re.compile(r"^[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4}$"), "<date>"),
    # nvidia-smi's GPU-Util, measured by NVML, beside the Memory-Usage cell.
    (re.compile(r"(MiB \|)\s+\d+%"), r"\1 <util>%"),
    # Utilisation measured by NVML or charged by the limiter: a percentage with a decimal.
    (re.compile(r"\b\d+\.\d%"), "<util>%"),
    # vgpu-burn's throughput: interval ends, kernel counts, rates and GFLOP/s.
    (re.compile(r"\b(t|kernels|kps)=[\d.]+"), r"\1=<n>"),
    (re.compile(r"ran \d+ kernels in [\d.]+ s: [\d.]+ kernels/s"), "ran <n> kernels in <n> s: <n> kernels/s"),
    (re.compile(r"; [\d.]+ GFLOP/s"), "; <n> GFLOP/s"),
]


def mask(line):
    line = line.rstrip("\n")
    for pattern, repl in MASKS:
        line = pattern.sub(repl, line)
    return line


def matches(expected, actual):
    """Line for line, where an expected "..." takes any number of actual lines."""
    if not expected:
        return not actual
    if expected[0] == "...":
        return any(matches(expected[1:], actual[i:]) for i in range(len(actual) + 1))
    return bool(actual) and expected[0] == actual[0] and matches(expected[1:], actual[1:])


def main():
    with open(sys.argv[1], encoding="utf-8", errors="replace") as f:
        expected = [mask(l) for l in f]
    with open(sys.argv[2], encoding="utf-8", errors="replace") as f:
        actual = [mask(l) for l in f]
    if matches(expected, actual):
        return 0
    for line in difflib.unified_diff(expected, actual, "the page (masked)", "the command (masked)",
                                     lineterm=""):
        print(line)
    return 1


if __name__ == "__main__":
    sys.exit(main())
