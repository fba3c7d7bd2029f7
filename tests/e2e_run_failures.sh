#!/usr/bin/env bash
# e2e_run_failures: a wedged fault handler, a fault never answered, and a killed or stopped memnode stop the program with a message (never a hang, never wrong output); static binaries refused; exit status passed through.
. "${COMEX_SRC:?}/tests/progs/lib.sh"
echo "e2e_run_failures: watchdog on a wedged handler and an unanswered fault, SIGKILLed/SIGSTOPped memnode, static binary refusal, exit status"
wd=$progs/prog_watchdog
"$wd" 128 3 >"$dir/wd.native" && grep -q ", ok$" "$dir/wd.native" || { fail native "prog_watchdog fails natively"; finish; }

# stopped NAME: the run ended non-zero (not by the hang guard) with a message
# naming comex, and the program printed no result (its data was unreachable).
stopped() {
  local name=$1 rc=$2
  if [ "$rc" -eq 124 ]; then
    fail "$name" "hung (still running after ${hang_guard}s)"; return
  fi
  [ "$rc" -ne 0 ] || { fail "$name" "exit status 0"; return; }
  grep -q "ok$" "$dir/$name.comex" && { fail "$name" "the program finished and printed a result"; return; }
  grep -q "MISMATCH" "$dir/$name.err" && { fail "$name" "the program saw wrong data"; return; }
  grep -qi "comex" "$dir/$name.err" || { fail "$name" "no message naming comex on stderr"; return; }
  echo "ok: $name: exit $rc, $(grep -i comex "$dir/$name.err" | grep -v "comex: info: starting" | tail -n 2 | tr '\n' ' ')"
}

# 1. the fault handler stops serving after 2000 faults: the watchdog ends the program
rc=0
live_stats() { ls /dev/shm | grep '^comex-stats\.' | sort; }
before=$(live_stats)
COMEX_TEST_WEDGE_AFTER=2000 under_comex wedge 32M --watchdog 2s -- "$wd" 128 3 || rc=$?
stopped wedge $rc
# the killed program cannot remove its live counters: comex run does
for f in $(comm -13 <(echo "$before") <(live_stats)); do
  kill -0 "${f#comex-stats.}" 2>/dev/null || fail wedge "left /dev/shm/$f behind"
done

# 1b. the handler reads faults after 2000 and never answers them (it stays
#     idle, holding nothing): the watchdog sees the program thread asleep in
#     its fault and says so (this hung silently before)
rc=0
#     (6 s: on a loaded machine one slow batch of real faults can take 2 s,
#     and the handler-stuck probe would fire first)
COMEX_TEST_DROP_AFTER=2000 under_comex dropped 32M --watchdog 6s -- "$wd" 128 3 || rc=$?
stopped dropped $rc
grep -q "in one page fault of the managed region that no fault handler answers" "$dir/dropped.err" \
  || { fail dropped "the watchdog did not name the unanswered fault"; grep "comex: error" "$dir/dropped.err" | head -3; }
grep -q "pager lock is held by thread [0-9]* (a batch of faults)" "$dir/wedge.err" \
  || fail wedge "the watchdog did not say who holds the pager lock"

# 2. a separate memnode, SIGKILLed (then SIGSTOPped) while the program depends on it
"$bin" token "$dir/token" >/dev/null || { fail token "comex token"; finish; }
# memnode_dies NAME SIGNAL: runs prog_watchdog (endless passes) against the
# memnode, sends SIGNAL to the memnode once the program has filled its memory.
memnode_dies() {
  local name=$1 sig=$2 rc=0
  memnode_start || return
  timeout -k 10 "$hang_guard" "$bin" run --local-mem 32M --memnode "127.0.0.1:$mn_port" --token-file "$dir/token" \
    --op-timeout 2s --watchdog 10s --stats-json "$dir/$name.json" -- "$wd" 128 1000000000 \
    >"$dir/$name.comex" 2>"$dir/$name.err" &
  local run=$!; pids+=("$run")
  for _ in $(seq 1 $((hang_guard * 10))); do
    grep -q filled "$dir/$name.comex" && break
    kill -0 "$run" 2>/dev/null || break
    sleep 0.1
  done
  if ! grep -q filled "$dir/$name.comex"; then
    fail "$name" "program did not start paging: $(tail -n 3 "$dir/$name.err")"; kill -KILL "$mn_pid"; return
  fi
  kill -"$sig" "$mn_pid"
  wait "$run" || rc=$?
  kill -KILL "$mn_pid" 2>/dev/null; wait "$mn_pid" 2>/dev/null
  stopped "$name" $rc
}
memnode_dies memnode-killed KILL
memnode_dies memnode-stopped STOP

# 3. a statically linked program is refused with a clear message, not run unmanaged
static=
for s in /sbin/ldconfig /usr/sbin/ldconfig; do
  if [ -x "$s" ] && ldd "$s" 2>&1 | grep -Eq "statically linked|not a dynamic"; then static=$s; break; fi
done
if [ -z "$static" ]; then
  fail static "no static binary found to test with (/sbin/ldconfig is static on Debian)"
else
  rc=0
  "$bin" run --local-mem 32M -- "$static" --version >"$dir/static.out" 2>"$dir/static.err" || rc=$?
  if [ $rc -eq 0 ]; then fail static "$static was run (exit 0)"
  elif ! grep -qi "static" "$dir/static.err"; then fail static "refusal does not say why: $(head -n 2 "$dir/static.err")"
  elif [ -s "$dir/static.out" ]; then fail static "$static ran anyway"
  else echo "ok: static binary refused: $(head -n 1 "$dir/static.err")"; fi
fi

# 4. exit status: the program's own, 128+signal when killed
rc=0; "$bin" run --local-mem 32M -- sh -c 'exit 7' 2>/dev/null || rc=$?
[ $rc -eq 7 ] && echo "ok: exit status 7 passed through" || fail exit-status "exit 7 became $rc"
rc=0; "$bin" run --local-mem 32M -- sh -c 'kill -TERM $$' 2>/dev/null || rc=$?
[ $rc -eq 143 ] && echo "ok: SIGTERM gives 143" || fail exit-signal "killed by SIGTERM gave $rc, expected 143"
finish
