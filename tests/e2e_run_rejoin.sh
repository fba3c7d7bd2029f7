#!/usr/bin/env bash
# e2e_run_rejoin: a memnode that comes back (restarted on its port after a drain or a SIGKILL), was down when the program started, or is added to the config file while a program runs is connected to and used for new pages; a program whose only memnode comes up after it started waits for it (connect-timeout), or is refused with a message when none does; the program's output equals the native run and no page is lost.
. "${COMEX_SRC:?}/tests/progs/lib.sh"
. "$src/tests/progs/memnodes.sh"
echo "e2e_run_rejoin: restart after drain and after SIGKILL, memnode down at start, memnode added to the config file, the only memnode late"

# 1. Two memnodes. a is drained and restarted on its port: the program
# reconnects. Then b is drained: with a back, b's pages go to a, not home.
# Then b is restarted, killed with SIGKILL (it holds nothing: the program
# is idle) and restarted once more: each time the program reconnects.
if want restart; then
  mn_start a && mn_start b && start_prog restart 16M "127.0.0.1:$port_a,127.0.0.1:$port_b" 64 idle && {
    err=$dir/restart.err
    kill -TERM "$pid_a"; drained a "$pid_a" &&
    mn_start a2 --listen "127.0.0.1:$port_a" &&
    { wait_log "$err" "127.0.0.1:$port_a (nid [0-9]*) connected" || fail restart "no reconnection to the restarted memnode"; } &&
    { "$bin" drain --token-file "$dir/token" "127.0.0.1:$port_b" >/dev/null || fail restart "comex drain failed"; } &&
    drained b "$pid_b" &&
    mn_start b2 --listen "127.0.0.1:$port_b" &&
    { wait_log "$err" "127.0.0.1:$port_b (nid [0-9]*) connected" || fail restart "no reconnection to b2"; } && {
      kill -KILL "$pid_b2"; wait "$pid_b2" 2>/dev/null
      mn_start b3 --listen "127.0.0.1:$port_b" &&
      { wait_log "$err" "127.0.0.1:$port_b (nid [0-9]*) connected" 2 || fail restart "no reconnection after SIGKILL"; } &&
      finished restart && {
        n=$(moved b); home=$(stats_get restart pages_migrated_home); rj=$(stats_get restart memnodes_rejoined)
        lost=$(stats_get restart pages_lost)
        if [ "$n" -le 0 ] || [ "$home" -ne 0 ] || [ "$rj" -ne 3 ] || [ "$lost" -ne 0 ]; then
          fail restart "b's DONE moved $n pages, pages_migrated_home=$home (0 expected: a was back), memnodes_rejoined=$rj (3), pages_lost=$lost"
        else
          echo "ok: restart: reconnected 3 times, b's $n pages went to the restarted a, output identical"
        fi
      }
    }
  }
  for v in pid_a2 pid_b3; do [ -n "${!v:-}" ] && { kill -KILL "${!v}"; wait "${!v}"; } 2>/dev/null; done
fi

# 2. A config file names one memnode; a second is added to the file while the
# program runs: the program connects to it, and when the first is drained its
# pages go to the new one, not home.
if want added; then
  mn_start c && mn_start d && {
    printf 'memnode = 127.0.0.1:%s\n' "$port_c" >"$dir/added.conf"
    start_prog added 16M "--config $dir/added.conf" 64 idle && {
      printf 'memnode = 127.0.0.1:%s, 127.0.0.1:%s\n' "$port_c" "$port_d" >"$dir/added.conf.new"
      mv "$dir/added.conf.new" "$dir/added.conf"
      if ! wait_log "$dir/added.err" "127.0.0.1:$port_d (nid [0-9]*) connected"; then
        fail added "the memnode added to the config file was not connected to"
      elif ! "$bin" drain --token-file "$dir/token" "127.0.0.1:$port_c" >/dev/null; then
        fail added "comex drain failed"
      elif drained c "$pid_c" && finished added; then
        n=$(moved c); home=$(stats_get added pages_migrated_home)
        if [ "$n" -le 0 ] || [ "$home" -ne 0 ]; then
          fail added "c's DONE moved $n pages, pages_migrated_home=$home (0 expected: d had room)"
        else
          echo "ok: added: the new memnode took c's $n pages, output identical"
        fi
      fi
    }
  }
  for v in pid_d; do [ -n "${!v:-}" ] && { kill -KILL "${!v}"; wait "${!v}"; } 2>/dev/null; done
fi
# 3. Two memnodes, the second down when the program starts: the program
# starts on the first and says it cannot reach the second. Once the second
# is up on its port it is connected, and when the first is drained its pages
# go there, not home.
if want down; then
  mn_start g && mn_start h && { kill -KILL "$pid_h"; wait "$pid_h" 2>/dev/null; true; } &&
    start_prog down 16M "127.0.0.1:$port_g,127.0.0.1:$port_h" 64 idle && {
    err=$dir/down.err
    if ! grep -q "127.0.0.1:$port_h: cannot reach it" "$err"; then
      fail down "no warning about the memnode that was down: $(head -n 2 "$err")"
    elif ! mn_start h2 --listen "127.0.0.1:$port_h"; then
      :
    elif ! wait_log "$err" "127.0.0.1:$port_h (nid [0-9]*) connected"; then
      fail down "the memnode that came up was not connected to"
    elif ! "$bin" drain --token-file "$dir/token" "127.0.0.1:$port_g" >/dev/null; then
      fail down "comex drain failed"
    elif drained g "$pid_g" && finished down; then
      n=$(moved g); home=$(stats_get down pages_migrated_home); lost=$(stats_get down pages_lost)
      if [ "$n" -le 0 ] || [ "$home" -ne 0 ] || [ "$lost" -ne 0 ]; then
        fail down "g's DONE moved $n pages, pages_migrated_home=$home (0 expected: h had room), pages_lost=$lost"
      else
        echo "ok: down: started without h, connected to it later, g's $n pages went there, output identical"
      fi
    fi
  }
  for v in pid_h2; do [ -n "${!v:-}" ] && { kill -KILL "${!v}"; wait "${!v}"; } 2>/dev/null; done
fi
# 4. The only memnode is not up yet when the program starts (systemd starts
# both at boot). With none coming up, the program is refused once
# connect-timeout has passed, saying so. With the memnode coming up while
# the runtime waits, the program runs to the native output on it.
if want late; then
  mn_start l && { kill -KILL "$pid_l"; wait "$pid_l" 2>/dev/null; true; } && {
    native late "$gate" 64 / || fail late "native run failed"
    rc=0
    timeout -k 10 "$hang_guard" "$bin" run --local-mem 16M --memnode "127.0.0.1:$port_l" --token-file "$dir/token" \
      --connect-timeout 2s -- "$gate" 64 / >"$dir/never.comex" 2>"$dir/never.err" || rc=$?
    if [ $rc -eq 0 ] || [ $rc -eq 124 ] || grep -q filled "$dir/never.comex"; then
      fail never "exit status $rc with no memnode ever up: $(tail -n 2 "$dir/never.err")"
    elif ! grep -q "none of the 1 memnodes could be reached within connect-timeout" "$dir/never.err"; then
      fail never "no message saying the memnode could not be reached: $(grep comex "$dir/never.err" | tail -n 2)"
    else
      echo "ok: never: refused after connect-timeout: $(grep 'could be reached' "$dir/never.err")"
    fi
    timeout -k 10 "$hang_guard" "$bin" run --local-mem 16M --memnode "127.0.0.1:$port_l" --token-file "$dir/token" \
      --connect-timeout "${hang_guard}s" --log-level 2 --stats-json "$dir/late.json" -- "$gate" 64 / \
      >"$dir/late.comex" 2>"$dir/late.err" &
    run_pid=$!; pids+=("$run_pid")
    if ! wait_log "$dir/late.err" "can be reached yet"; then
      fail late "the runtime did not say it waits for the memnode: $(tail -n 3 "$dir/late.err")"
    elif grep -q filled "$dir/late.comex"; then
      fail late "the program ran before any memnode was up"
    elif mn_start l2 --listen "127.0.0.1:$port_l" && finished late; then
      if [ "$(stats_get late faults_remote)" -le 0 ]; then
        fail late "no remote faults: the program did not use the memnode that came up"
      else
        echo "ok: late: waited for the memnode, then ran on it ($(stats_get late faults_remote) remote faults), output identical"
      fi
    fi
  }
  for v in pid_l2; do [ -n "${!v:-}" ] && { kill -KILL "${!v}"; wait "${!v}"; } 2>/dev/null; done
fi
finish
