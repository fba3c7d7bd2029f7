#!/usr/bin/env bash
# e2e_run_drain: planned departure loses nothing: a memnode told to leave (SIGTERM, or 'comex drain') has its clients move their pages to the other memnodes (or home when none has room) and exits after their DONE; the program's output equals the native run. A client that cannot answer within drain-timeout is reported loudly.
. "${COMEX_SRC:?}/tests/progs/lib.sh"
. "$src/tests/progs/memnodes.sh"
echo "e2e_run_drain: SIGTERM and 'comex drain' of memnodes holding a program's pages; drain-timeout with a stopped program"
# 1. Three memnodes; the program (96 MiB at 24 MiB local, idle behind its
# gate) has its pages on one or two of them. The fullest is sent SIGTERM:
# its pages must move to the others (they have room), then it exits.
if want sigterm; then
  mn_start a --drain-timeout 120s && mn_start b --drain-timeout 120s && mn_start c --drain-timeout 120s &&
  start_prog sigterm 24M "127.0.0.1:$port_a,127.0.0.1:$port_b,127.0.0.1:$port_c" 96 idle && {
    # which memnode holds most: 'comex check 1' reports each one's free memory
    "$bin" check --memnode "127.0.0.1:$port_a,127.0.0.1:$port_b,127.0.0.1:$port_c" --token-file "$dir/token" 1 \
      >"$dir/check.out" 2>&1 || fail sigterm "comex check failed: $(tail -n 2 "$dir/check.out")"
    full=$(python3 - "$dir/check.out" a b c <<'PY'
import re, sys
free = [int(x) for x in re.findall(r"memnode has (\d+) MiB free", open(sys.argv[1]).read())]
print(sys.argv[2 + free.index(min(free))] if len(free) == 3 else "")
PY
)
    if [ -z "$full" ]; then fail sigterm "could not tell which memnode holds the pages"; else
      victim_pid=pid_$full
      kill -TERM "${!victim_pid}"
      if drained "$full" "${!victim_pid}" && finished sigterm; then
        n=$(moved "$full"); mig=$(stats_get sigterm pages_migrated); dr=$(stats_get sigterm memnodes_drained)
        if [ "$n" -le 0 ] || [ "$mig" -le 0 ] || [ "$dr" -ne 1 ]; then
          fail sigterm "memnode $full: DONE reported $n pages moved, pages_migrated=$mig, memnodes_drained=$dr"
        else
          echo "ok: sigterm: memnode $full drained ($n pages moved to the others), output identical"
        fi
      fi
    fi
  }
  for v in pid_a pid_b pid_c; do [ -n "${!v:-}" ] && { kill -KILL "${!v}"; wait "${!v}"; } 2>/dev/null; done
fi

# 2. Two memnodes, the program rewriting all its memory meanwhile: 'comex
# drain' one, then the other. After the second, no memnode is left, so its
# pages come home (beyond the budget); the output must still be identical.
if want drain; then
  mn_start d && mn_start e &&
  start_prog drain 16M "127.0.0.1:$port_d,127.0.0.1:$port_e" 64 && {
    ok=1
    for m in d e; do
      p=port_$m; q=pid_$m
      "$bin" drain --token-file "$dir/token" "127.0.0.1:${!p}" >"$dir/drain-$m.out" 2>&1 ||
        { fail drain "comex drain $m: $(cat "$dir/drain-$m.out")"; ok=0; break; }
      grep -q "is draining" "$dir/drain-$m.out" || { fail drain "comex drain said: $(cat "$dir/drain-$m.out")"; ok=0; break; }
      drained "$m" "${!q}" || { ok=0; break; }
    done
    if [ $ok = 1 ] && finished drain; then
      home=$(stats_get drain pages_migrated_home); dr=$(stats_get drain memnodes_drained)
      if [ "$home" -le 0 ] || [ "$dr" -ne 2 ]; then
        fail drain "pages_migrated_home=$home memnodes_drained=$dr"
      else
        echo "ok: drain: both memnodes drained while the program ran, $home pages brought home, output identical"
      fi
    fi
  }
  for v in pid_d pid_e; do [ -n "${!v:-}" ] && { kill -KILL "${!v}"; wait "${!v}"; } 2>/dev/null; done
fi

# 3. A client that cannot answer (its program is stopped): the memnode gives
# up after drain-timeout and says so loudly; the program, continued, finds
# its memory gone and is stopped with a message, never wrong output.
if want timeout; then
  mn_start f --drain-timeout 1s &&
  start_prog timeout 16M "127.0.0.1:$port_f" 64 idle && {
    # the program itself (its command line starts with its path; comex run's does not)
    prog=$(pgrep -f "^$gate 64 $dir/timeout.gate" | head -n 1)
    if [ -z "$prog" ]; then fail timeout "cannot find the program's process"; finish; fi
    kill -STOP "$prog"
    kill -TERM "$pid_f"; rc=0; wait "$pid_f" || rc=$?
    kill -CONT "$prog"
    touch "$dir/timeout.gate"; prc=0; wait "$run_pid" || prc=$?
    if ! grep -q "DRAIN INCOMPLETE.* 1 clients still hold" "$dir/f.log"; then
      fail timeout "memnode did not report the incomplete drain: $(tail -n 2 "$dir/f.log")"
    elif [ $prc -eq 0 ] || grep -q "ok," "$dir/timeout.comex"; then
      fail timeout "the program finished (exit $prc) although its pages were gone"
    elif ! grep -qi "memnode" "$dir/timeout.err"; then
      fail timeout "the program's end names no memnode: $(tail -n 2 "$dir/timeout.err")"
    else
      echo "ok: timeout: $(grep -o 'DRAIN INCOMPLETE.*' "$dir/f.log" | cut -c1-80)...; program stopped (exit $prc)"
    fi
  }
fi
finish
