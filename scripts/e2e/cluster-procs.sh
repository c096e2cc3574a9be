# shellcheck shell=bash
# Process helpers of cluster.sh (sourced): every process the cluster starts is recorded as
# "PID STARTTIME" in $PIDS/NAME, and only a process whose pid AND start time still match is ever
# signalled, so a recycled pid is never hit. Nothing is looked up or killed by name.

# The start time (clock ticks since boot) of pid $1, empty when it is gone or a zombie.
proc_starttime() {
  local stat f
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
  read -ra f <<<"${stat##*) }" # the fields after "(comm) ": f[0] is field 3 (state), f[19] field 22
  [ "${f[0]}" = Z ] || echo "${f[19]}"
}

# The recorded pid of component $1 when it is still that very process, else nothing.
proc_pid() {
  local pid start
  [ -f "$PIDS/$1" ] || return 0
  read -r pid start <"$PIDS/$1" || return 0
  [ -n "$pid" ] && [ "$(proc_starttime "$pid")" = "$start" ] && echo "$pid"
  return 0
}

proc_alive() { [ -n "$(proc_pid "$1")" ]; }

# start_proc NAME CMD...: runs CMD in a session of its own (a test's Ctrl-C or a killed process
# group does not reach the cluster), output appended to $LOGS/NAME.log.
start_proc() {
  local name=$1 pid
  shift
  mkdir -p "$PIDS" "$LOGS"
  printf '%q ' "$@" >"$PIDS/$name.cmd"
  echo >>"$PIDS/$name.cmd"
  setsid "$@" >>"$LOGS/$name.log" 2>&1 </dev/null &
  pid=$!
  echo "$pid $(proc_starttime "$pid")" >"$PIDS/$name"
  e2e_log "started $name (pid $pid, log $LOGS/$name.log)"
}

# Waits until pid $1 with start time $2 is gone; at most $3 tenths of a second.
wait_gone() {
  local i
  for ((i = 0; i < $3; i++)); do
    [ "$(proc_starttime "$1")" = "$2" ] || return 0
    sleep 0.1
  done
  return 1
}

# stop_proc NAME: SIGTERM, up to 20 s, then SIGKILL; forgets the pid.
stop_proc() {
  local pid start
  [ -f "$PIDS/$1" ] || return 0
  read -r pid start <"$PIDS/$1" || true
  if [ -n "$pid" ] && [ "$(proc_starttime "$pid")" = "$start" ]; then
    kill -TERM "$pid" 2>/dev/null || true
    if ! wait_gone "$pid" "$start" 200; then
      e2e_log "$1 (pid $pid) ignored SIGTERM for 20 s: SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
      wait_gone "$pid" "$start" 100 || e2e_log "warning: $1 (pid $pid) survived SIGKILL"
    fi
    e2e_log "stopped $1 (pid $pid)"
  fi
  rm -f "$PIDS/$1"
}

# Prints the last lines of component $1's log to stderr.
log_tail() {
  [ -f "$LOGS/$1.log" ] || return 0
  echo "---- last lines of $LOGS/$1.log ----" >&2
  tail -n "${2:-40}" "$LOGS/$1.log" >&2
  echo "----" >&2
}

wait_failed() {
  log_tail "$1"
  [ -z "${WAIT_DIAG:-}" ] || $WAIT_DIAG >&2 || true
  e2e_die "$2; see $LOGS/$1.log"
}

# wait_for NAME WHAT CMD...: polls CMD every half second until it succeeds; fails with NAME's log
# tail (and the output of the command in $WAIT_DIAG, if set) when NAME's process dies or after
# $TIMEOUT seconds.
wait_for() {
  local name=$1 what=$2 deadline=$((SECONDS + TIMEOUT))
  shift 2
  e2e_log "waiting for $what"
  until "$@" >/dev/null 2>&1; do
    if ! proc_alive "$name"; then
      wait_failed "$name" "$name exited while waiting for $what"
    fi
    if [ "$SECONDS" -ge "$deadline" ]; then
      wait_failed "$name" "timed out after ${TIMEOUT}s waiting for $what"
    fi
    sleep 0.5
  done
}
