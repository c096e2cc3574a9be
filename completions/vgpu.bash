# bash completion for vgpu: the verbs, each verb's options, file names after
# --cache, and after `vgpu run ... --` the command and its own arguments.
# Installed to share/bash-completion/completions/vgpu, where bash-completion
# loads it on first use; it needs none of bash-completion's helpers, but
# hands `run -- CMD ...` to CMD's own completion when they are there.
# tests/integration/test_completion.sh checks it offers every option that
# `vgpu VERB --help` prints.

# The options of VERB (the top level when empty), one string.
_vgpu_options() {
  case $1 in
    run) echo "--sim --memory --cores --devices --cache --quiet -q --help" ;;
    status) echo "--cache --json --sim --help" ;;
    set) echo "--cache --memory --cores --device --help" ;;
    smi) echo "--sim --help" ;;
    *) echo "--help --version" ;;
  esac
}

# After `vgpu run [OPTIONS] --`: the command's name, then its own completion
# (bash-completion's _command_offset) or file names.
_vgpu_run_command() {
  local start=$1
  if [ "$COMP_CWORD" -gt "$start" ] && declare -F _command_offset >/dev/null; then
    _command_offset "$start"
    return
  fi
  local cur=${COMP_WORDS[COMP_CWORD]}
  if [ "$COMP_CWORD" -eq "$start" ]; then
    mapfile -t COMPREPLY < <(compgen -c -- "$cur")
  else
    compopt -o filenames 2>/dev/null
    mapfile -t COMPREPLY < <(compgen -f -- "$cur")
  fi
}

_vgpu() {
  local cur=${COMP_WORDS[COMP_CWORD]} prev="" verb="" i
  [ "$COMP_CWORD" -gt 0 ] && prev=${COMP_WORDS[COMP_CWORD - 1]}
  COMPREPLY=()
  for ((i = 1; i < COMP_CWORD; i++)); do
    case ${COMP_WORDS[i]} in
      --)
        if [ "$verb" = run ]; then
          _vgpu_run_command $((i + 1))
          return
        fi
        ;;
      -*) ;;
      *) [ -z "$verb" ] && verb=${COMP_WORDS[i]} ;;
    esac
  done
  case $prev in
    --cache)
      compopt -o filenames 2>/dev/null
      mapfile -t COMPREPLY < <(compgen -f -- "$cur")
      return
      ;;
    --memory | --cores | --devices | --device) return ;; # a value: nothing to offer
  esac
  if [ -z "$verb" ] && [[ $cur != -* ]]; then
    mapfile -t COMPREPLY < <(compgen -W "run status set smi" -- "$cur")
  else
    mapfile -t COMPREPLY < <(compgen -W "$(_vgpu_options "$verb")" -- "$cur")
  fi
}
complete -F _vgpu vgpu
