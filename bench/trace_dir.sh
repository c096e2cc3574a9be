# bench/trace_dir.sh -- sourced by the trace benchmarks (replay.sh,
# families.sh): sets DATA to the Alibaba GPU trace folder -- $VGPU_TRACE_DIR
# (or $DATA), else ../shared/data/alibaba-gpu-v2023 next to the repository --
# and exits 2 naming the script when it holds no pod traces.
# shellcheck shell=bash
DATA=${VGPU_TRACE_DIR:-${DATA:-../shared/data/alibaba-gpu-v2023}}
if ! ls "$DATA"/openb_pod_list_*.csv >/dev/null 2>&1; then
  echo "bench/$(basename "$0"): no openb_pod_list_*.csv in $DATA: set VGPU_TRACE_DIR to the Alibaba GPU trace folder (alibaba-gpu-v2023)" >&2
  echo "  the trace is public: https://github.com/alibaba/clusterdata, folder cluster-trace-gpu-v2023 (its openb_node_list_gpu_node.csv and openb_pod_list_*.csv)" >&2
  exit 2
fi
