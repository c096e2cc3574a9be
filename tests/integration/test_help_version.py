#!/usr/bin/python3
"""test_help_version.py -- every program vgpu builds answers -h, --help and
--version the same way (curl's rule): the usage on stdout and exit 0; one
line "<program> <version>" and exit 0. A mistyped option gets the same
answer everywhere too: exactly the one line "<program>: unknown option
'--helpp' (did you mean --help?)" on stderr (no usage after it) and a
non-zero exit.

No driver is on the library path: vgpu-burn and the benchmarks open
libcuda.so.1 only after reading their command line (test_no_driver.py).

Usage: test_help_version.py BUILD_DIR VERSION
"""
import os
import subprocess
import sys

FAILURES = []


def check(cond, what):
    if not cond:
        FAILURES.append(what)
        print("FAIL:", what)


def main():
    build, version = sys.argv[1], sys.argv[2]
    bindir = os.path.join(build, "bin")
    env = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "LD_PRELOAD")}
    programs = sorted(p for p in os.listdir(bindir) if os.access(os.path.join(bindir, p), os.X_OK))
    check(len(programs) >= 10, "only %d programs in %s" % (len(programs), bindir))
    for prog in programs:
        path = os.path.join(bindir, prog)
        for flag in ("-h", "--help"):
            p = subprocess.run([path, flag], env=env, capture_output=True, text=True, timeout=30,
                               stdin=subprocess.DEVNULL)
            check(p.returncode == 0 and "usage" in p.stdout.lower(),
                  "%s %s: exit %d, stdout %r, stderr %r" % (prog, flag, p.returncode,
                                                           p.stdout[:80], p.stderr[:200]))
        p = subprocess.run([path, "--version"], env=env, capture_output=True, text=True,
                           timeout=30, stdin=subprocess.DEVNULL)
        check(p.returncode == 0 and p.stdout == "%s %s\n" % (prog, version),
              "%s --version: exit %d, stdout %r, stderr %r" % (prog, p.returncode, p.stdout,
                                                              p.stderr[:200]))
        p = subprocess.run([path, "--helpp"], env=env, capture_output=True, text=True,
                           timeout=30, stdin=subprocess.DEVNULL)
        want = "%s: unknown option '--helpp' (did you mean --help?)" % prog
        check(p.returncode != 0 and p.stderr == want + "\n" and p.stdout == "",
              "%s --helpp: exit %d, stderr %r (want %r)" % (prog, p.returncode, p.stderr[:200],
                                                            want))
    print("%d programs checked" % len(programs))
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
