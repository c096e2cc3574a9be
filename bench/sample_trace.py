#!/usr/bin/env python3
"""bench/sample_trace.py -- writes bench/sample-trace/, a small SYNTHETIC trace in the
columns of the Alibaba GPU trace (cluster-trace-gpu-v2023, docs/placement.md "Replay"),
so that `make bench-replay` runs on a fresh clone without the public data set.

No row comes from the real trace: every node and pod is drawn here from a fixed seed, with
proportions chosen by hand to resemble the trace's kinds of pods (CPU-only, GPU-sharing,
whole GPUs, multi-GPU, pods constrained to a GPU model) so that every policy and every
workload family of bench/families.sh has something to place. Its numbers say nothing about
the FGD paper's: the real trace (VGPU_TRACE_DIR) is for that.

  python3 bench/sample_trace.py [OUT_DIR]     (default bench/sample-trace; same seed, same files)
"""
import os
import random
import sys

SEED = 2023
NODES = 60
PODS = 400
# (GPUs per node, share of nodes) and (model, share of GPU nodes), by hand.
NODE_GPUS = [(0, 0.05), (1, 0.05), (2, 0.40), (4, 0.05), (8, 0.45)]
MODELS = [("G2", 0.45), ("T4", 0.30), ("P100", 0.12), ("V100M16", 0.08), ("G3", 0.05)]
NODE_SHAPES = [(32000, 131072), (64000, 262144), (96000, 393216), (128000, 786432)]
# Pod kinds: (kind, share). sharing: one GPU, a fraction of it; multi: 2, 4 or 8 GPUs.
POD_KINDS = [("cpu", 0.10), ("sharing", 0.45), ("whole", 0.32), ("multi", 0.13)]
SPEC_SHARE = 0.10  # of GPU pods, those naming the GPU models they may use (gpu_spec)


def pick(rng, table):
    """One value of a (value, share) table, by its share."""
    x = rng.random() * sum(share for _, share in table)
    for value, share in table:
        x -= share
        if x < 0:
            return value
    return table[-1][0]


def node_rows(rng):
    for i in range(NODES):
        gpus = pick(rng, NODE_GPUS)
        cpu, mem = rng.choice(NODE_SHAPES)
        model = pick(rng, MODELS) if gpus else ""
        yield f"synthetic-node-{i:03d},{cpu},{mem},{gpus},{model}"


def gpu_ask(rng, kind):
    """(num_gpu, gpu_milli) of a pod of this kind."""
    if kind == "cpu":
        return 0, 0
    if kind == "sharing":
        return 1, rng.choice([100, 200, 250, 300, 400, 500, 600, 750])
    if kind == "whole":
        return 1, 1000
    return rng.choice([2, 2, 4, 8]), 1000


def pod_rows(rng):
    t = 0
    for i in range(PODS):
        kind = pick(rng, POD_KINDS)
        num, milli = gpu_ask(rng, kind)
        # CPU and memory grow with the GPUs asked for, within the smallest 8-GPU node's.
        cpu = min(rng.choice([1000, 2000, 4000, 8000, 12000]) * max(num, 1), 32000)
        mem = min(rng.choice([4096, 8192, 16384, 32768]) * max(num, 1), 131072)
        spec = ""
        if num and rng.random() < SPEC_SHARE:
            spec = "|".join(sorted(rng.sample(["G2", "T4", "P100", "V100M16"], 2)))
        t += rng.randint(0, 60000)
        end = t + rng.randint(600000, 12000000)
        yield f"synthetic-pod-{i:04d},{cpu},{mem},{num},{milli},{spec},LS,Running,{t},{end},{t}"


def write(path, header, rows):
    with open(path, "w", encoding="ascii") as f:
        f.write(header + "\n")
        for row in rows:
            f.write(row + "\n")


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "sample-trace")
    os.makedirs(out, exist_ok=True)
    rng = random.Random(SEED)
    write(os.path.join(out, "openb_node_list_gpu_node.csv"), "sn,cpu_milli,memory_mib,gpu,model",
          node_rows(rng))
    write(os.path.join(out, "openb_pod_list_default.csv"),
          "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,"
          "creation_time,deletion_time,scheduled_time", pod_rows(rng))


if __name__ == "__main__":
    main()
