#!/usr/bin/env bash
# e2e_run_exit: what comex run reports when the program ends: a program's own non-zero exit keeps its status and shows no memnode log (log-level 3 does), a comex failure (126) shows it; --stats-json is written when the program is ended by SIGTERM or SIGINT sent to comex run, or by a SIGKILL of its own; a launcher killed (SIGKILL, or SIGPIPE on its stderr) leaves no memnode, program, /dev/shm counters or temporary directory behind.
. "${COMEX_SRC:?}/tests/progs/lib.sh"
echo "e2e_run_exit: exit statuses, the embedded memnode's log, --stats-json on signals"
marker="the embedded memnode's last log lines"

# 1. exit 3 by design: status 3, no memnode log; at log-level 3 the log
if want exit3; then
  rc=0; "$bin" run --local-mem 32M -- sh -c 'exit 3' >"$dir/exit3.out" 2>"$dir/exit3.err" || rc=$?
  if [ $rc -ne 3 ]; then fail exit3 "exit status $rc, not the program's 3"
  elif grep -q "$marker" "$dir/exit3.err"; then fail exit3 "the memnode's log was shown for the program's own exit 3"
  else
    rc=0; "$bin" run --local-mem 32M --log-level 3 -- sh -c 'exit 3' >/dev/null 2>"$dir/exit3d.err" || rc=$?
    if [ $rc -ne 3 ] || ! grep -q "$marker" "$dir/exit3d.err"; then
      fail exit3 "log-level 3: exit $rc, memnode log $(grep -c "$marker" "$dir/exit3d.err") times"
    else echo "ok: exit3 (status 3, memnode log only at log-level 3)"; fi
  fi
fi

# 2. the runtime cannot start (a budget below its buffers): 126 and the log
if want fail126; then
  rc=0; "$bin" run --local-mem 1M -- /bin/true >/dev/null 2>"$dir/fail126.err" || rc=$?
  if [ $rc -ne 126 ] || ! grep -q "$marker" "$dir/fail126.err"; then
    fail fail126 "exit $rc, memnode log $(grep -c "$marker" "$dir/fail126.err") times: $(head -n 2 "$dir/fail126.err")"
  else echo "ok: fail126 (the runtime's failure shows the memnode log)"; fi
fi

# 3. signals: prog_gate fills 64 MiB at 16M local (pages remote), then waits;
# the signal ends it; the stats must be there and show the evictions.
# sig NAME SIGNAL WHO: WHO is "run" (the signal goes to comex run, which
# passes it on) or "prog" (SIGKILL straight to the program, as the OOM killer)
sig() {
  local name=$1 s=$2 who=$3 want_rc=$4 pid target
  want "$name" || return 0
  # default dispositions: a background job of a script would ignore SIGINT
  python3 -c 'import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)
os.execvp(sys.argv[1], sys.argv[1:])' "$bin" run --local-mem 16M --stats-json "$dir/$name.json" -- \
    "$progs/prog_gate" 64 "$dir/never" idle >"$dir/$name.out" 2>"$dir/$name.err" &
  pid=$!; pids+=("$pid")
  for _ in $(seq 1 $((hang_guard * 10))); do
    grep -q filled "$dir/$name.out" && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  grep -q filled "$dir/$name.out" || { fail "$name" "program did not fill: $(tail -n 2 "$dir/$name.err")"; return; }
  target=$pid
  [ "$who" = prog ] && target=$(pgrep -P "$pid" -f prog_gate | head -n 1)
  kill "-$s" "$target"
  local rc=0; wait "$pid" || rc=$?
  if [ $rc -ne "$want_rc" ]; then fail "$name" "exit status $rc, want $want_rc: $(tail -n 2 "$dir/$name.err")"; return; fi
  if ! python3 - "$dir/$name.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
if s["pages_evicted"] <= 0 or s["local_mem_bytes"] <= 0:
    print("stats without evictions: %s" % {k: s[k] for k in ("pages_evicted", "local_mem_bytes")}); sys.exit(1)
print("pages_evicted=%d" % s["pages_evicted"])
PY
  then fail "$name" "no usable --stats-json after $s"; return; fi
  echo "ok: $name (exit $rc, --stats-json written)"
}
sig sigterm TERM run 143
sig sigint INT run 130
sig sigkill KILL prog 137

# 4. the launcher itself dies (issue 10 item 7): comex run SIGKILLed while
# prog_gate waits with pages remote, and comex run killed by SIGPIPE when it
# logs the program's end into a closed pipe. Nothing may be left behind: no
# memnode, no program, no /dev/shm counters, no temporary directory.
# left_behind RUNPID: waits (bounded) for the run's memnode and program to go,
# then reports what remains.
left_behind() {
  local name=$1 mn=$2 prog=$3 tdir=$4 left=""
  for _ in $(seq 1 300); do # 30 s: an orphaned memnode waits up to 10 s for the program
    kill -0 "$mn" 2>/dev/null || kill -0 "$prog" 2>/dev/null || [ -d "$tdir" ] || \
      [ -e "/dev/shm/comex-stats.$prog" ] || break
    sleep 0.1
  done
  kill -0 "$mn" 2>/dev/null && left+=" memnode $mn"
  kill -0 "$prog" 2>/dev/null && left+=" program $prog"
  [ -e "/dev/shm/comex-stats.$prog" ] && left+=" /dev/shm/comex-stats.$prog"
  [ -d "$tdir" ] && left+=" $tdir"
  if [ -n "$left" ]; then
    fail "$name" "left behind:$left"; kill -9 "$mn" "$prog" 2>/dev/null
  else echo "ok: $name (memnode, program, counters and $tdir all gone)"; fi
}
# the run's memnode, program and temporary directory, once the program filled
run_parts() {
  local pid=$1 out=$2 mn prog
  for _ in $(seq 1 $((hang_guard * 10))); do
    grep -q filled "$out" 2>/dev/null && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  mn=$(pgrep -P "$pid" -f "comex memnode" | head -n 1)
  prog=$(pgrep -P "$pid" -f prog_gate | head -n 1)
  echo "$mn $prog $(tr '\0' '\n' <"/proc/$mn/cmdline" 2>/dev/null | grep -m1 /token | xargs -r dirname)"
}
if want launcherkill; then
  "$bin" run --local-mem 16M -- "$progs/prog_gate" 64 "$dir/never" idle >"$dir/launcherkill.out" 2>"$dir/launcherkill.err" &
  pid=$!; pids+=("$pid")
  read -r mn prog tdir <<<"$(run_parts "$pid" "$dir/launcherkill.out")"
  if [ -z "$mn" ] || [ -z "$prog" ] || [ -z "$tdir" ] || [ ! -e "/dev/shm/comex-stats.$prog" ]; then
    fail launcherkill "run not set up: memnode '$mn' program '$prog' dir '$tdir': $(tail -n 2 "$dir/launcherkill.err")"
  else
    kill -9 "$pid"; wait "$pid" 2>/dev/null || true
    left_behind launcherkill "$mn" "$prog" "$tdir"
  fi
fi
if want sweep; then
  # counters of a process that is gone, as a SIGKILLed forked child leaves
  # them: the next comex run removes them, and keeps those of a live one
  gone=$(sh -c 'echo $$'); alive=$$
  : >"/dev/shm/comex-stats.$gone"
  live_made=0; [ -e "/dev/shm/comex-stats.$alive" ] || { : >"/dev/shm/comex-stats.$alive"; live_made=1; }
  "$bin" run --local-mem 32M -- /bin/true >/dev/null 2>"$dir/sweep.err" || true
  if [ -e "/dev/shm/comex-stats.$gone" ]; then fail sweep "/dev/shm/comex-stats.$gone of a gone process stayed"
  elif [ ! -e "/dev/shm/comex-stats.$alive" ]; then fail sweep "the counters of a live process were removed"
  else echo "ok: sweep (a gone process's counters removed, a live one's kept)"; fi
  [ $live_made = 1 ] && rm -f "/dev/shm/comex-stats.$alive"
  rm -f "/dev/shm/comex-stats.$gone"
fi
if want launcherpipe; then
  # the program ends at once when told; comex run then logs its end to the
  # pipe whose reader is gone, and dies of SIGPIPE before stopping its memnode
  mkfifo "$dir/pipe"
  "$bin" run --local-mem 16M -- "$progs/prog_gate" 64 "$dir/go" idle >"$dir/launcherpipe.out" 2>"$dir/pipe" &
  pid=$!; pids+=("$pid")
  exec 7<"$dir/pipe"
  read -r mn prog tdir <<<"$(run_parts "$pid" "$dir/launcherpipe.out")"
  exec 7<&-
  if [ -z "$mn" ] || [ -z "$prog" ] || [ -z "$tdir" ]; then
    fail launcherpipe "run not set up: memnode '$mn' program '$prog' dir '$tdir'"
  else
    kill -TERM "$prog"; wait "$pid" 2>/dev/null || true
    left_behind launcherpipe "$mn" "$prog" "$tdir"
  fi
fi
finish
