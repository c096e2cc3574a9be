#!/usr/bin/python3
"""test_no_driver.py -- vgpu-burn and the benchmarks open libcuda.so.1 only
after reading their command line (src/cudadl): without a driver on the
loader's path, -h, --help and --version still exit 0, and a real command
stops with the "no NVIDIA driver found" message (non-zero). Under the
simulator, vgpu-burn --driver prints the simulator's libcuda.so.1.

On a machine whose system libcuda.so.1 loads (a GPU host), the no-driver
message cannot be provoked; that part is skipped there.

Usage: test_no_driver.py BUILD_DIR
"""
import ctypes
import os
import subprocess
import sys

PROGRAMS = ("vgpu-burn", "vgpu-bench-hook", "vgpu-bench-launch", "vgpu-bench-timing")
MESSAGE = ("no NVIDIA driver found (libcuda.so.1 does not load: ",
           "); on a machine without a GPU run it under 'vgpu run --sim'")
FAILURES = []


def check(cond, what):
    if not cond:
        FAILURES.append(what)
        print("FAIL:", what)


def run(argv, env):
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=30,
                          stdin=subprocess.DEVNULL)


def system_driver_loads():
    try:
        ctypes.CDLL("libcuda.so.1")
        return True
    except OSError:
        return False


def main():
    build = sys.argv[1]
    bare = {k: v for k, v in os.environ.items()
            if k not in ("LD_LIBRARY_PATH", "LD_PRELOAD", "VGPU_SIM_DIR")}
    has_driver = system_driver_loads()  # this process has no simulator on its path either
    for prog in PROGRAMS:
        path = os.path.join(build, "bin", prog)
        for flag in ("-h", "--help", "--version"):
            p = run([path, flag], bare)
            check(p.returncode == 0 and p.stdout and not p.stderr,
                  "%s %s without a driver: exit %d, stderr %r" % (prog, flag, p.returncode,
                                                                   p.stderr[:200]))
        if has_driver:
            continue
        p = run([path], bare)
        check(p.returncode != 0 and p.stderr.startswith(prog + ": " + MESSAGE[0])
              and p.stderr.rstrip("\n").endswith(MESSAGE[1]),
              "%s without a driver: exit %d, stderr %r" % (prog, p.returncode, p.stderr))
    if has_driver:
        print("SKIP the no-driver message: this machine's libcuda.so.1 loads")
    sim = dict(bare, LD_LIBRARY_PATH=os.path.join(build, "sim"))
    p = run([os.path.join(build, "bin", "vgpu-burn"), "--driver"], sim)
    want = os.path.realpath(os.path.join(build, "sim", "libcuda.so.1"))
    check(p.returncode == 0 and p.stdout == want + "\n",
          "vgpu-burn --driver under the simulator: exit %d, stdout %r (want %r), stderr %r"
          % (p.returncode, p.stdout, want, p.stderr))
    print("all passed" if not FAILURES else "%d failure(s)" % len(FAILURES))
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
