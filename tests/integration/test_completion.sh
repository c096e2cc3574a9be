#!/usr/bin/env bash
# test_completion.sh COMPLETION VGPU -- the bash completion for vgpu
# (completions/vgpu.bash) offers the verbs, each verb's options, file names
# after --cache and commands after `run --`; and every verb and option that
# VGPU's --help and `VERB --help` print, so help and completion cannot drift.
set -uo pipefail
[ $# -eq 2 ] || { echo "usage: $0 COMPLETION VGPU" >&2; exit 2; }
completion=$1 vgpu=$2
# shellcheck source=/dev/null
source "$completion"
failures=0
tmp=$(mktemp -d "${TMPDIR:-/tmp}/vg-completion.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# complete WORD... -- COMPREPLY for the command line WORDS, the last one being
# completed, one candidate a line.
complete_line() {
  COMP_WORDS=("$@")
  COMP_CWORD=$(($# - 1))
  COMP_LINE="$*"
  COMP_POINT=${#COMP_LINE}
  COMPREPLY=()
  _vgpu vgpu "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
  printf '%s\n' "${COMPREPLY[@]}"
}

# expect WANT_REGEX_OR_- WORDS...: every line of WANT (space-separated) is
# offered; "-" expects nothing at all.
offers() {
  local want=$1
  shift
  local got w
  got=$(complete_line "$@")
  if [ "$want" = - ]; then
    [ -z "$got" ] && return 0
    echo "FAIL: '$*' offers '$(echo "$got" | tr '\n' ' ')', want nothing"
    failures=$((failures + 1))
    return 0
  fi
  for w in $want; do
    if ! grep -qxF -- "$w" <<<"$got"; then
      echo "FAIL: '$*' does not offer '$w' (offers: $(echo "$got" | tr '\n' ' '))"
      failures=$((failures + 1))
    fi
  done
}

# not_offers WORD COMMAND-LINE...: WORD is not among the candidates.
not_offers() {
  local bad=$1
  shift
  if complete_line "$@" | grep -qxF -- "$bad"; then
    echo "FAIL: '$*' offers '$bad'"
    failures=$((failures + 1))
  fi
}

touch "$tmp/region.cache" "$tmp/other"
offers "run status set smi" vgpu ""
offers "run" vgpu r
offers "--help --version" vgpu --
offers "--sim --memory --cores --devices --cache" vgpu run --
offers "--device" vgpu set --cores 50 --dev
not_offers "--devices" vgpu set --dev
offers "--json" vgpu status --j
offers "$tmp/region.cache" vgpu status --cache "$tmp/reg"
offers "-" vgpu run --memory ""
offers "echo" vgpu run --memory 1g -- ec
offers "$tmp/other" vgpu run --sim -- cat "$tmp/oth"
not_offers "--sim" vgpu run -- ls --s

# help and completion agree: every verb of `vgpu --help`, every option of
# `vgpu VERB --help`.
verbs=$("$vgpu" --help | sed -n 's/^  \([a-z][a-z-]*\) .*/\1/p')
[ -n "$verbs" ] || { echo "FAIL: no verbs found in '$vgpu --help'"; failures=$((failures + 1)); }
for verb in $verbs; do
  offers "$verb" vgpu ""
  # The verb's own lines; the SIZE/PCT footer every verb shares names --cache for all.
  options=$("$vgpu" "$verb" --help | sed '/^SIZE:/,$d' | grep -o -- '--[a-z][a-z0-9-]*[a-z0-9]' | sort -u)
  [ -n "$options" ] || { echo "FAIL: '$vgpu $verb --help' prints no options"; failures=$((failures + 1)); }
  for o in $options; do offers "$o" vgpu "$verb" --; done
done

echo "$failures failure(s)"
[ "$failures" -eq 0 ]
