#!/bin/bash
# load.sh -- vgpu-scheduler and vgpu-webhook under load (issue 27): idle
# connections held, simultaneous /filter calls, /healthz latency beside idle
# connections, peak RSS under the largest bodies, a /filter over 5,000 node
# names. Starts the real binaries from build/ (or --build DIR) on 127.0.0.1
# only; prints figures, not a test; stops by itself (every wait is bounded).
# `make bench-load`. Options: see bench/load.py.
set -euo pipefail
cd "$(dirname "$0")/.."
exec /usr/bin/python3 bench/load.py "$@"
