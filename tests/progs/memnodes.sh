# Sourced after lib.sh by the tests that start, stop, drain and restart
# memnodes under a running program (e2e_run_drain.sh, e2e_run_rejoin.sh,
# e2e_run_replicas.sh, e2e_run_integrity.sh).
# The program is prog_gate: it fills its memory and then waits (or keeps
# rewriting it) until the test opens its gate, so every step happens at a
# known point of the run, never after a sleep.
gate=$progs/prog_gate
"$bin" token "$dir/token" >/dev/null || { fail token "comex token"; finish; }

# mn_start NAME [memnode options]: a memnode on a free loopback port (or on
# the --listen given), run through the command prefix mn_wrap (an array,
# e.g. ip netns exec NS) when set; sets port_NAME and pid_NAME, logs to
# $dir/NAME.log
mn_start() {
  local name=$1 port=; shift
  "${die_with_test[@]}" ${mn_wrap[@]+"${mn_wrap[@]}"} "$bin" memnode --listen 127.0.0.1:0 --pool 128M \
    --token-file "$dir/token" "$@" 2>"$dir/$name.log" &
  local pid=$!; pids+=("$pid")
  for _ in $(seq 1 300); do
    port=$(sed -n 's/.* on port \([0-9][0-9]*\).*/\1/p' "$dir/$name.log" | head -n 1)
    [ -n "$port" ] && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  [ -n "$port" ] || { fail "$name" "memnode did not start: $(tail -n 2 "$dir/$name.log")"; return 1; }
  printf -v "port_$name" %s "$port"; printf -v "pid_$name" %s "$pid"
}
# start_prog NAME LOCALMEM MEMNODES MiB [idle]: prog_gate under comex run in
# the background (sets run_pid), returns once it has filled its memory.
# MEMNODES is --memnode's value, or "--config FILE"; the array run_opts, when
# set, adds comex run options.
start_prog() {
  local name=$1 lm=$2 mns=$3 mib=$4 mode=${5:-} where
  if [[ $mns == --config* ]]; then where=($mns); else where=(--memnode "$mns"); fi
  rm -f "$dir/$name.gate"
  native "$name" "$gate" "$mib" / || { fail "$name" "native run failed"; return 1; }
  timeout -k 10 "$hang_guard" "$bin" run --local-mem "$lm" "${where[@]}" --token-file "$dir/token" --log-level 2 \
    ${run_opts[@]+"${run_opts[@]}"} --stats-json "$dir/$name.json" -- "$gate" "$mib" "$dir/$name.gate" $mode \
    >"$dir/$name.comex" 2>"$dir/$name.err" &
  run_pid=$!; pids+=("$run_pid")
  wait_filled "$name"
}
# wait_filled NAME: until prog_gate under comex run ($run_pid, output in
# $dir/NAME.comex) says it filled its memory; false (a failure recorded) when
# it ends first or the hang guard passes
wait_filled() {
  local name=$1
  for _ in $(seq 1 $((hang_guard * 10))); do
    grep -q filled "$dir/$name.comex" && return 0
    kill -0 "$run_pid" 2>/dev/null || break
    sleep 0.1
  done
  fail "$name" "program did not fill its memory: $(tail -n 3 "$dir/$name.err")"; return 1
}
# drained NAME PID: the memnode exited 0 after a complete drain
drained() {
  local name=$1 pid=$2 rc=0
  wait "$pid" || rc=$?
  [ $rc -eq 0 ] || { fail "$name" "memnode exit status $rc: $(tail -n 3 "$dir/$name.log")"; return 1; }
  grep -q "drain complete" "$dir/$name.log" || { fail "$name" "no complete drain: $(tail -n 3 "$dir/$name.log")"; return 1; }
}
# moved NAME: pages the client reported moved in its DONE to memnode NAME
moved() { sed -n 's/.*DONE, moved \([0-9]*\) pages.*/\1/p' "$dir/$1.log" | awk '{s += $1} END {print s + 0}'; }
# finished NAME: opens the gate; the program must end with the native output
finished() {
  local name=$1 rc=0
  touch "$dir/$name.gate"
  wait "$run_pid" || rc=$?
  [ $rc -eq 0 ] || { fail "$name" "exit status $rc under comex run: $(grep -E '^comex: (error|warning)' "$dir/$name.err" | head -n 3)"; return 1; }
  cmp -s "$dir/$name.native" "$dir/$name.comex" || { fail "$name" "output differs from the native run"; diff "$dir/$name.native" "$dir/$name.comex" | head -n 4; return 1; }
}

# wait_log FILE PATTERN [N]: until FILE has N (default 1) lines matching
# PATTERN; false if the hang guard passes first
wait_log() {
  local n=${3:-1}
  for _ in $(seq 1 $((hang_guard * 10))); do
    local c; c=$(grep -c -- "$2" "$1" 2>/dev/null) # nothing while FILE does not exist yet
    [ "${c:-0}" -ge "$n" ] && return 0
    sleep 0.1
  done
  return 1
}

# pybuild_job N: the Python job of e2e_run_programs (pybuild.py N records)
# for the replica and integrity tests: sets job (its command), runs it
# natively (output in $dir/job.native) and sets lm to 25 % of its peak RSS.
pybuild_job() {
  local py
  py=$(python3 -c 'import sys; print(sys.executable)') # the interpreter itself, not a wrapper script
  job=("$py" "$src/tests/progs/pybuild.py" "$1")
  native job "${job[@]}" || { fail native "pybuild.py fails natively"; finish; }
  lm="$((peak_kib / 4))K"
}

# The tests that make a memnode fail under a job (pybuild_job's) in the
# middle of its run (e2e_run_replicas.sh, e2e_run_network.sh):
# counter PID KEY: a live counter of the program PID (0 while unreadable)
counter() {
  "$bin" stats "$1" 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)[sys.argv[1]])' "$2" 2>/dev/null || echo 0
}
# start_job NAME MEMNODES [comex options]: the job under comex run (default
# replicas 2), in the background; sets run_pid and prog (the program's own
# pid, for its counters). op-timeout is the default 20 s (a killed memnode's
# connection fails at once; only a hung one waits for it) unless OPT_TIMEOUT
# says otherwise: on a loaded machine a healthy but starved memnode must not
# be taken for a failed one.
start_job() {
  local name=$1 mns=$2; shift 2
  timeout -k 10 "$hang_guard" "$bin" run --local-mem "$lm" --memnode "$mns" --token-file "$dir/token" --log-level 2 \
    "${@:---replicas=2}" --op-timeout "${OPT_TIMEOUT:-20s}" --stats-json "$dir/$name.json" -- "${job[@]}" >"$dir/$name.comex" 2>"$dir/$name.err" &
  run_pid=$!; pids+=("$run_pid")
  find_prog "$name"
}
# find_prog NAME: sets prog, the pid of the program comex run ($run_pid,
# under timeout) started, once its counters exist
find_prog() {
  local c=; prog=
  for _ in $(seq 1 $((hang_guard * 10))); do # timeout -> comex run -> the program
    c=$(pgrep -P "$run_pid" | head -n 1); [ -n "$c" ] && prog=$(pgrep -P "$c" | head -n 1)
    [ -n "$prog" ] && [ -e "/dev/shm/comex-stats.$prog" ] && return 0
    kill -0 "$run_pid" 2>/dev/null || break
    sleep 0.1
  done
  fail "$1" "the program did not start: $(tail -n 3 "$dir/$1.err")"; return 1
}
# written_at_least NAME N: waits until the program has written N pages out
written_at_least() {
  local name=$1 n=$2
  while kill -0 "$run_pid" 2>/dev/null; do
    [ "$(counter "$prog" pages_written)" -ge "$n" ] && return 0
    sleep 0.1
  done
  fail "$name" "the program ended before writing $n pages (make COMEX_TEST_FAIL_AFTER smaller)"; return 1
}
# ended_identical NAME: the run ends with status 0 and the native output
ended_identical() {
  local name=$1 rc=0
  wait "$run_pid" || rc=$?
  [ $rc -eq 0 ] || { fail "$name" "exit status $rc: $(grep -E '^comex: (error|warning)' "$dir/$name.err" | head -n 3)"; return 1; }
  cmp -s "$dir/job.native" "$dir/$name.comex" || { fail "$name" "output differs from the native run"; return 1; }
}
