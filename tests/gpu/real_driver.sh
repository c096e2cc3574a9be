# real_driver.sh -- sourced by the GPU scripts (run.sh, sm-accuracy.sh).
#
# vg_real_driver_only: run against the real NVIDIA driver only -- drop the
# simulator (any */sim directory holding a libcuda.so.1, such as build/sim)
# from LD_LIBRARY_PATH, and any limit, simulator setting or preload
# inherited from the caller's shell.
# shellcheck shell=bash
vg_real_driver_only() {
  local clean_ld_path='' d var
  local -a ld_entries
  IFS=: read -r -a ld_entries <<<"${LD_LIBRARY_PATH:-}"
  for d in "${ld_entries[@]}"; do
    [ -n "$d" ] || continue
    case "${d%/}" in */sim) [ -e "$d/libcuda.so.1" ] && continue ;; esac
    clean_ld_path=${clean_ld_path:+$clean_ld_path:}$d
  done
  if [ -n "$clean_ld_path" ]; then export LD_LIBRARY_PATH="$clean_ld_path"; else unset LD_LIBRARY_PATH; fi
  while IFS= read -r var; do
    case "$var" in
      CUDA_DEVICE_MEMORY_LIMIT* | CUDA_DEVICE_SM_LIMIT* | CUDA_DEVICE_MEMORY_SHARED_CACHE | VGPU_SIM_* | LD_PRELOAD) unset "$var" ;;
    esac
  done < <(compgen -e)
}
