#!/usr/bin/python3
"""test_install.py -- `make install` (cmake --install) gives a tree that works
on its own: from PREFIX/bin, vgpu finds PREFIX/lib/libvgpu.so and the
simulated driver in PREFIX/lib/vgpu-sim, so `vgpu run --sim` limits an
installed vgpu-burn and `vgpu smi --sim` shows the simulated GPUs; nothing of
the simulator is on the loader's path.

Usage: test_install.py BUILD_DIR
"""
import os
import shutil
import subprocess
import sys
import tempfile


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
                    "lib/vgpu-sim/libnvidia-ml.so.1"):
            check(os.path.exists(os.path.join(prefix, rel)), "%s is not installed" % rel)
        env = {k: v for k, v in os.environ.items()
               if k not in ("LD_LIBRARY_PATH", "VGPU_SIM_DIR", "VGPU_LIBRARY", "LD_PRELOAD")}
        env["CUDA_DEVICE_MEMORY_SHARED_CACHE"] = os.path.join(prefix, "region.cache")
        vgpu = os.path.join(prefix, "bin", "vgpu")
        p = subprocess.run([vgpu, "run", "--sim", "--memory", "200m", "--",
                            os.path.join(prefix, "bin", "vgpu-burn"), "--alloc", "1g", "--chunk",
                            "10m"], env=env, capture_output=True, text=True, timeout=60)
        check(p.returncode == 0 and "allocated 209715200 bytes (200 MiB)" in p.stdout,
              "installed vgpu run --sim: exit %d\n%s%s" % (p.returncode, p.stdout, p.stderr))
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
