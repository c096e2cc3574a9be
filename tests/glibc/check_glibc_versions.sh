#!/usr/bin/env bash
# check_glibc_versions.sh MAX FILE... -- fails naming every dynamic symbol,
# and every version requirement, of FILE above GLIBC_MAX.
#
# libvgpu.so, the simulated driver and vgpu-burn are loaded into workload
# containers whose glibc may be as old as 2.17 (CentOS 7): one reference to a
# newer version makes ld.so refuse the whole file ("cannot be preloaded:
# ignored"), and the workload runs without limits (src/common/glibc_compat.h).
# Reads what ld.so reads: the dynamic symbol table and the version needs.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 MAX FILE..." >&2; exit 2; }
max=$1
shift
command -v objdump >/dev/null || { echo "check_glibc_versions: objdump (binutils) missing" >&2; exit 2; }

# Prints "VERSION NAME" for each reference of FILE (symbols, then version
# needs with the name "-") whose GLIBC_ version is above MAX.
above() {
  { objdump -T "$1" | sed -n 's/.*[( ]GLIBC_\([0-9.]*\)[) ]*[[:space:]]\+\([^[:space:]]\+\)$/\1 \2/p'
    objdump -p "$1" | sed -n 's/.*[[:space:]]GLIBC_\([0-9.]*\)$/\1 -/p'; } |
    awk -v max="$2" '
      function newer(a, b,   x, y, i, n) {
        n = split(a, x, "."); split(b, y, ".")
        for (i = 1; i <= (n > 3 ? n : 3); i++)
          if (x[i] + 0 != y[i] + 0) return x[i] + 0 > y[i] + 0
        return 0
      }
      newer($1, max) && !seen[$0]++'
}

bad=0
for f in "$@"; do
  [ -f "$f" ] || { echo "FAIL $f: not built"; bad=$((bad + 1)); continue; }
  before=$bad
  while read -r ver sym; do
    if [ "$sym" = - ]; then
      echo "FAIL $f: requires version GLIBC_$ver (> GLIBC_$max)"
    else
      echo "FAIL $f: $sym needs GLIBC_$ver (> GLIBC_$max)"
    fi
    bad=$((bad + 1))
  done < <(above "$f" "$max")
  [ "$bad" -eq "$before" ] && echo "ok   $f: nothing above GLIBC_$max"
done
[ "$bad" -eq 0 ] || { echo "$bad references above GLIBC_$max (src/common/glibc_compat.h pins them)"; exit 1; }
