#!/usr/bin/env bash
# bench/soak.sh -- `make soak`: VGPU_SOAK_SECONDS (default 3600) of pod churn on the
# real e2e cluster (tests/e2e/e2e.py, case soak): tenants allocating and killed with
# SIGKILL, every grant checked; afterwards no slot or per-pod metric series left, and
# the node agent's and vgpu-scheduler's RSS sampled each minute. Not part of make
# test (it takes an hour). The log goes to bench/results/<date>-soak/soak.log.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${VGPU_SOAK_OUT:-bench/results/$(date +%F)-soak}
mkdir -p "$out"
echo "soak: ${VGPU_SOAK_SECONDS:-3600} s; log in $out/soak.log"
VGPU_SOAK_SECONDS=${VGPU_SOAK_SECONDS:-3600} bash tests/e2e/run.sh soak 2>&1 | tee "$out/soak.log"
exit "${PIPESTATUS[0]}"
