# bench/trace_dir.sh -- sourced by the trace benchmarks (replay.sh,
# families.sh): sets DATA to the Alibaba GPU trace folder -- $VGPU_TRACE_DIR
# (or $DATA), else ../shared/data/alibaba-gpu-v2023 next to the repository --
# and, when neither names one, to bench/sample-trace (a small synthetic trace
# in the same columns, bench/sample_trace.py) with SAMPLE_TRACE=1, so that a
# fresh clone runs at once. A folder named by the variables that holds no pod
# traces exits 2 naming the script: the real trace, when asked for, wins.
# shellcheck shell=bash
SAMPLE_TRACE=0
public="the trace is public: https://github.com/alibaba/clusterdata, folder cluster-trace-gpu-v2023 (its openb_node_list_gpu_node.csv and openb_pod_list_*.csv)"
DATA=${VGPU_TRACE_DIR:-${DATA:-}}
if [ -z "$DATA" ] && ! ls ../shared/data/alibaba-gpu-v2023/openb_pod_list_*.csv >/dev/null 2>&1; then
  DATA=bench/sample-trace SAMPLE_TRACE=1
  echo "bench/$(basename "$0"): no trace folder: replaying bench/sample-trace, a SYNTHETIC 400-pod sample (its numbers are not the paper's)" >&2
  echo "  for the real numbers set VGPU_TRACE_DIR to the Alibaba GPU trace folder (alibaba-gpu-v2023); $public" >&2
fi
DATA=${DATA:-../shared/data/alibaba-gpu-v2023}
if ! ls "$DATA"/openb_pod_list_*.csv >/dev/null 2>&1; then
  echo "bench/$(basename "$0"): no openb_pod_list_*.csv in $DATA: set VGPU_TRACE_DIR to the Alibaba GPU trace folder (alibaba-gpu-v2023)" >&2
  echo "  $public" >&2
  exit 2
fi
