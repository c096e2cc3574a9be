#!/usr/bin/env bash
# verbs.sh VGPU OUT VERB... -- writes a help2man include file (OUT) with a
# VERBS section: each `vgpu VERB --help`, verbatim, so that vgpu.1 documents
# every verb's options. One page rather than vgpu-run.1 and siblings: the
# verbs are short and share one SIZE/PCT grammar, and `man vgpu` is where a
# user looks first.
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: $0 VGPU OUT VERB..." >&2; exit 2; }
vgpu=$1 out=$2
shift 2

# roff: a backslash is \e, - is \- (an ASCII minus, not a hyphen, so that
# options can be searched and copied), and a line starting with . or ' would
# be a request.
roff_escape() { sed -e 's/\\/\\e/g' -e 's/-/\\-/g' -e "s/^\\([.']\\)/\\\\\\&\\1/"; }

{
  echo "[VERBS]"
  printf '%s\n' 'Each verb prints its own help with \fBvgpu\fR \fIVERB\fR \fB\-\-help\fR:'
  for verb in "$@"; do
    echo ".SS \"vgpu $verb\""
    echo ".nf"
    "$vgpu" "$verb" --help | roff_escape
    echo ".fi"
  done
} >"$out.tmp"
mv "$out.tmp" "$out"
