#!/usr/bin/python3
"""test_install.py -- `make install` (cmake --install) gives a tree that works
on its own: from PREFIX/bin, vgpu finds PREFIX/lib/libvgpu.so and the
simulated driver in PREFIX/lib/vgpu-sim, so `vgpu run --sim` limits an
installed vgpu-burn and `vgpu smi --sim` shows the simulated GPUs; nothing of
the simulator is on the loader's path. Every program's man page is installed
and renders (groff), with a NAME description and every option the program's
--help prints (for vgpu, also every verb's); vgpu's bash completion is where
bash-completion looks for it.

Usage: test_install.py BUILD_DIR
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile


PROGRAMS = ("vgpu", "vgpu-burn", "vgpu-sim", "kubectl-inspect-gpushare", "kubectl-vgpu",
            "vgpu-device-plugin", "vgpu-scheduler", "vgpu-webhook")
VERBS = ("run", "status", "set", "smi")


def help_options(argv, env):
    """The long options that `argv --help` prints."""
    p = subprocess.run(argv + ["--help"], env=env, capture_output=True, text=True, timeout=30)
    return set(re.findall(r"--[a-z][a-z0-9-]*[a-z0-9]", p.stdout))


def check_man_page(prefix, prog, env, check):
    """PREFIX/share/man/man1/PROG.1 renders and shows PROG's options."""
    page = os.path.join(prefix, "share", "man", "man1", prog + ".1")
    if not os.path.exists(page):
        check(False, "%s is not installed" % page)
        return
    # No formatting, a long line, no hyphenation: options come out whole.
    p = subprocess.run(["groff", "-man", "-Tutf8", "-P-cbou", "-rLL=300n", "-rHY=0", page],
                       env=env, capture_output=True, text=True, timeout=30)
    text = p.stdout.replace("\u2010", "-").replace("\u2212", "-")
    check(p.returncode == 0 and not p.stderr, "groff %s: exit %d, %s" % (page, p.returncode,
                                                                          p.stderr))
    # As man shows it on an 80-column terminal, with groff's line-breaking warnings
    # (`man -l --warnings`): a word too long to break or a line it cannot adjust.
    p = subprocess.run(["groff", "-man", "-Tutf8", "-rLL=78n", "-wbreak", page], env=env,
                       capture_output=True, text=True, timeout=30)
    check(p.returncode == 0 and not p.stderr, "man %s at 80 columns warns: %s" % (page, p.stderr))
    check(re.search(r"^NAME\n\s+%s - \S" % re.escape(prog), text, re.M) is not None,
          "%s.1: no NAME line with a description:\n%s" % (prog, text[:300]))
    argv = [os.path.join(prefix, "bin", prog)]
    want = help_options(argv, env)
    if prog == "vgpu":
        for verb in VERBS:
            want |= help_options(argv + [verb], env)
    check(len(want) > 0, "%s --help prints no options" % prog)
    missing = sorted(o for o in want if o not in text)
    check(not missing, "%s.1 lacks options %s" % (prog, missing))


def main():
    build = sys.argv[1]
    prefix = tempfile.mkdtemp(prefix="vg-install-")
    failures = []

    def check(cond, what):
        if not cond:
            failures.append(what)
            print("FAIL:", what)
    try:
        p = subprocess.run(["cmake", "--install", build, "--prefix", prefix],
                           capture_output=True, text=True, timeout=120)
        check(p.returncode == 0, "cmake --install: %s" % p.stderr)
        for rel in ("bin/vgpu", "bin/vgpu-burn", "bin/vgpu-sim", "bin/kubectl-inspect-gpushare",
                    "bin/kubectl-vgpu", "bin/vgpu-device-plugin", "bin/vgpu-scheduler",
                    "bin/vgpu-webhook", "lib/libvgpu.so", "lib/vgpu-sim/libcuda.so.1",
                    "lib/vgpu-sim/libnvidia-ml.so.1", "share/bash-completion/completions/vgpu"):
            check(os.path.exists(os.path.join(prefix, rel)), "%s is not installed" % rel)
        env = {k: v for k, v in os.environ.items()
               if k not in ("LD_LIBRARY_PATH", "VGPU_SIM_DIR", "VGPU_LIBRARY", "LD_PRELOAD")}
        env["CUDA_DEVICE_MEMORY_SHARED_CACHE"] = os.path.join(prefix, "region.cache")
        # A simulated GPU of its own: the default /dev/shm state may be another build's, of
        # another layout (a second checkout's tests, an e2e), which the simulator refuses.
        env["VGPU_SIM_STATE"] = os.path.join(prefix, "sim.state")
        vgpu = os.path.join(prefix, "bin", "vgpu")
        p = subprocess.run([vgpu, "run", "--sim", "--memory", "200m", "--",
                            os.path.join(prefix, "bin", "vgpu-burn"), "--alloc", "1g", "--chunk",
                            "10m"], env=env, capture_output=True, text=True, timeout=60)
        check(p.returncode == 0 and "allocated 209715200 bytes (200 MiB)" in p.stdout,
              "installed vgpu run --sim: exit %d\n%s%s" % (p.returncode, p.stdout, p.stderr))
        for prog in PROGRAMS:
            check_man_page(prefix, prog, env, check)
        p = subprocess.run([vgpu, "smi", "--sim"], env=env, capture_output=True, text=True,
                           timeout=60)
        check(p.returncode == 0 and "MiB /" in p.stdout,
              "installed vgpu smi --sim: exit %d\n%s%s" % (p.returncode, p.stdout, p.stderr))
    finally:
        shutil.rmtree(prefix, ignore_errors=True)
    print("all passed" if not failures else "%d failure(s)" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
