#!/usr/bin/env bash
# e2e_run_gray: gray failures. Under replicas 2 a memnode that hangs (SIGSTOP) costs no page and no op-timeout wait, also while the other one answers late at times, or is slow: the program pages on from the other copies, the memnode shows suspect in comex top, status and the metrics, and is taken back once resumed; answers that come late, after a hedge, never land in a page; with a single copy the program waits, named in the log and comex top; a stopped memnode's polling core goes to the other; a memnode slow to write gets few new pages.
. "${COMEX_SRC:?}/tests/progs/lib.sh"
. "$src/tests/progs/memnodes.sh"
echo "e2e_run_gray: a memnode stopped (SIGSTOP) or answering late under replicas 2; a single copy waited for, visibly"
mib=96; lm=24M
pages=$((mib * 256)) # a pass of prog_gate reads and rewrites this many pages

# node_of I: the name (a, b) of memnode number I in --memnode order
node_of() { echo ab | cut -c$(($1 + 1)); }
# grows NAME KEY BY: waits while the program runs until its counter KEY has
# grown by BY from now (it makes progress); false if it ended first
grows() {
  local name=$1 key=$2 by=$3 from; from=$(counter "$prog" "$key")
  while kill -0 "$run_pid" 2>/dev/null; do
    [ "$(counter "$prog" "$key")" -ge $((from + by)) ] && return 0
    sleep 0.2
  done
  local rc=0; wait "$run_pid" || rc=$?
  fail "$name" "the program ended (exit $rc) while waiting for $key to grow by $by: $(tail -n 4 "$dir/$name.err")"; return 1
}
# shows NAME PATTERN CMD...: waits until CMD's output matches PATTERN (the
# program still running); false if it never does
shows() {
  local name=$1 pat=$2; shift 2
  while kill -0 "$run_pid" 2>/dev/null; do
    "$@" 2>/dev/null | grep -q -- "$pat" && return 0
    sleep 0.2
  done
  fail "$name" "'$*' never showed '$pat': $("$@" 2>&1 | tail -n 2)"; return 1
}
stop_nodes() {
  unset run_opts
  for v in pid_a pid_b pid_c; do [ -n "${!v:-}" ] && { kill -CONT "${!v}"; kill -KILL "${!v}"; wait "${!v}"; } 2>/dev/null; done
  unset pid_a pid_b pid_c
}

# 1. Replicas 2, op-timeout 10 min: the memnode the program reads from is
# stopped while it pages. Only hedging keeps it going: it must make two
# whole passes over its memory while the memnode stands still, and show
# the memnode suspect everywhere; resumed, the memnode is taken back.
# stoplate: the same while the other memnode stalls 60 ms on every 100th
# read (a loaded host): both are suspect at times, and the one that still
# answers must be used, every page keeping its two copies (a late copy is
# waited for, not given up, while its memnode answers).
for case in stop stoplate; do
if want $case; then
  run_opts=(--replicas 2 --op-timeout 600s)
  late_b=(); [ $case = stoplate ] && late_b=(--test-late-reads 100 --test-late-by 60ms)
  mn_start a --pool 256M && mn_start b --pool 256M "${late_b[@]}" &&
  start_prog $case "$lm" "127.0.0.1:$port_a,127.0.0.1:$port_b" $mib &&
  find_prog $case && {
    pref=$(counter "$prog" preferred_node); pn=$(node_of "$pref"); [ $case = stoplate ] && pn=a # not the late one
    pp=port_$pn; addr="127.0.0.1:${!pp}"
    pv=pid_$pn; kill -STOP "${!pv}"
    grows $case pages_written $((2 * pages)) &&
    shows $case "$addr([0-9]*M,suspect" "$bin" top --once &&
    shows $case "comex_program_memnode_suspect{.*memnode=\"$addr\"} 1" "$bin" exporter --once &&
    shows $case "^$addr .* suspect" "$bin" status --interval 0 --token-file "$dir/token" \
      --memnode "127.0.0.1:$port_a,127.0.0.1:$port_b" && {
      kill -CONT "${!pv}"
      wait_log "$dir/$case.err" "memnode $addr answers in time again" ||
        fail $case "the memnode was not taken back after SIGCONT: $(grep -E 'late|again' "$dir/$case.err" | tail -n 2)"
      grows $case pages_written "$pages" # and it is used again: the program pages on
      if finished $case; then
        rh=$(stats_get $case reads_hedged); wh=$(stats_get $case writes_hedged)
        ms=$(stats_get $case memnodes_suspected); lost=$(stats_get $case pages_lost)
        if [ $((rh + wh)) -le 0 ] || [ "$ms" -le 0 ] || [ "$lost" -ne 0 ] || grep -q "failed:" "$dir/$case.err"; then
          fail $case "reads_hedged=$rh writes_hedged=$wh memnodes_suspected=$ms pages_lost=$lost; $(grep 'failed:' "$dir/$case.err" | head -n 1)"
        else
          echo "ok: $case: memnode $addr stopped for two passes: $rh reads and $wh writes hedged, suspect $ms time(s), taken back, output identical"
        fi
      fi
    }
  }
  stop_nodes
fi
done

# 1b. Three memnodes; b answers every READ 300 us late, so it is slow
# (D84: its reads go to the other copy) but never late; c is small, so
# most of a's pages have their other copy on b. a is stopped: those pages
# must be read from b, a slow last copy, not steered away and back to a
# for another round (D85). With hedge-floor 5 s such a round waits 10 s on
# a, and two passes of them run past the hang guard.
if want stopslow; then
  run_opts=(--replicas 2 --op-timeout 600s --hedge-floor 5s) # a round on a is 10 s: a page that waits for one shows
  mn_start a --pool 256M && mn_start b --pool 256M --test-late-reads 1 --test-late-by 300us &&
    mn_start c --pool 32M &&
  start_prog stopslow "$lm" "127.0.0.1:$port_a,127.0.0.1:$port_b,127.0.0.1:$port_c" $mib &&
  find_prog stopslow && {
    if ! wait_log "$dir/stopslow.err" "memnode 127.0.0.1:$port_b answers reads in .*: slow"; then
      fail stopslow "memnode b was never found slow: $(grep -E 'slow|late' "$dir/stopslow.err" | tail -n 2)"
    else
      kill -STOP "$pid_a"
      grows stopslow pages_written $((2 * pages)) && {
        kill -CONT "$pid_a"
        if finished stopslow; then
          fo=$(stats_get stopslow pages_failed_over); lost=$(stats_get stopslow pages_lost)
          if [ "$fo" -le 0 ] || [ "$lost" -ne 0 ] || grep -q "failed:" "$dir/stopslow.err"; then
            fail stopslow "pages_failed_over=$fo pages_lost=$lost; $(grep 'failed:' "$dir/stopslow.err" | head -n 1)"
          else
            echo "ok: stopslow: memnode a stopped for two passes, b slow: $fo pages read from their other copy, output identical"
          fi
        fi
      }
    fi
  }
  stop_nodes
fi

# 1c. Three alike memnodes; c acknowledges every WRITE 3 ms late, as behind
# a slow link (a 64 KiB write takes ~0.5 ms at 1 Gbit/s, ~60 us here). The
# client judges it slow to write (D86: 4x its peers and 400 us more) and
# p2c, which sees an eighth of its room, stops choosing it: it ends with
# under half the pages of either peer, where p2c among alike memnodes gives
# each about a third. Replicas 1, so every page is written once, where
# placement put it.
if want writeslow; then
  mn_start a --pool 256M && mn_start b --pool 256M && mn_start c --pool 256M --test-late-writes 1 --test-late-by 3ms &&
  compare writeslow "$lm" --memnode "127.0.0.1:$port_a,127.0.0.1:$port_b,127.0.0.1:$port_c" --token-file "$dir/token" \
    --placement p2c --log-level 2 -- "$progs/prog_mt" 64 &&
  if [[ " ${failed[*]} " != *" writeslow "* ]]; then
    held=$(python3 -c 'import json,sys; print(*[m["frames_held"] for m in json.load(open(sys.argv[1]))["memnodes"]])' \
      "$dir/writeslow.json")
    read -r ha hb hc <<<"$held"
    if ! grep -q "memnode 127.0.0.1:$port_c takes writes in .*: slow" "$dir/writeslow.err"; then
      fail writeslow "memnode c was never found slow to write (frames held $held): $(grep -E 'writes in' "$dir/writeslow.err" | tail -n 2)"
    elif [ $((ha + hb)) -lt 2048 ] || [ $((4 * hc)) -ge $((ha + hb)) ]; then
      fail writeslow "frames held a b c: $held; c should hold under half of either peer's share"
    else
      echo "ok: writeslow: memnode c found slow to write; frames held a b c: $held, output identical"
    fi
  fi
  stop_nodes
fi

# 2. Both memnodes answer every 40th / 60th READ only after standing still
# for 150 ms: those reads are hedged to the other copy, and their answers,
# when they come, are dropped. Every page is checked against its hash on
# the way in, so a late answer landing anywhere would stop the program.
if want late; then
  mn_start a --pool 256M --test-late-reads 40 --test-late-by 150ms &&
  mn_start b --pool 256M --test-late-reads 60 --test-late-by 150ms && {
    native late "$gate" "$mib" /
    rc=0; under_comex late "$lm" --memnode "127.0.0.1:$port_a,127.0.0.1:$port_b" --token-file "$dir/token" \
      --replicas 2 --log-level 2 -- "$gate" "$mib" / || rc=$?
    if [ $rc -ne 0 ] || ! cmp -s "$dir/late.native" "$dir/late.comex"; then
      fail late "exit $rc or output differs: $(grep -E '^comex: (error|warning)' "$dir/late.err" | head -n 3)"
    else
      rh=$(stats_get late reads_hedged); bad=$(stats_get late pages_corrupt)
      if [ "$rh" -le 0 ] || [ "$bad" -ne 0 ] || ! grep -q "test-late-reads" "$dir/a.log"; then
        fail late "reads_hedged=$rh (> 0 expected) pages_corrupt=$bad"
      else
        echo "ok: late: $rh reads hedged past memnodes that stood still, late answers dropped, output identical"
      fi
    fi
  }
  stop_nodes
fi

# 3. One memnode, replicas 1: stopped, it is waited for (there is nothing
# else to read), and the wait is named in the log and in comex top; resumed,
# the program ends with its output.
if want single; then
  run_opts=(--op-timeout 600s)
  mn_start a --pool 256M &&
  start_prog single "$lm" "127.0.0.1:$port_a" $mib && find_prog single && {
    kill -STOP "$pid_a"
    shows single "127.0.0.1:$port_a(.*waiting" "$bin" top --once &&
    wait_log "$dir/single.err" "waiting for memnode 127.0.0.1:$port_a" &&
    shows single "comex_program_memnode_waiting_seconds{.*} [1-9]" "$bin" exporter --once
    kill -CONT "$pid_a"
    if finished single; then
      echo "ok: single: the wait on the stopped memnode was named in the log and comex top; output identical"
    fi
  }
  stop_nodes
fi

# 4. The polling core (D83): of three memnodes on a host with one core to
# poll on, the first two busy-poll, sharing it (POLLCORE_SHARE); stopped, the
# first loses its claim (to the second, which moves up to a core's first
# claim, or to the third), and the third polls; resumed, the first finds
# every claim taken and sleeps between requests. Skipped when a memnode of
# another test or user holds a claim already, or the machine has one core;
# run on cores 0 and 1 only.
if want pollcore; then
  # the memnodes of the cases before were killed (SIGKILL): their claims are
  # free once stale, POLLCORE_STALE_MS (100 ms) after their last renewal
  sleep 0.3
  mn_wrap=(taskset -c 0,1)
  mn_start a && mn_start b && mn_start c && {
    if ! grep -q "busy-polling on core" "$dir/a.log" || grep -q "busy-polling on core .*shared" "$dir/a.log"; then
      echo "skip: pollcore: memnode a does not busy-poll on a core of its own (one core, or another memnode holds a claim): $(tail -n 1 "$dir/a.log")"
    elif ! grep -q "busy-polling on core 1, shared" "$dir/b.log"; then
      fail pollcore "the second memnode did not share the core: $(tail -n 2 "$dir/b.log")"
    elif ! grep -q "every polling core is held" "$dir/c.log"; then
      fail pollcore "the third memnode did not find the core held: $(tail -n 2 "$dir/c.log")"
    else
      kill -STOP "$pid_a"
      # b moves up to a's stale claim (a core's first) and c takes b's, or c a's
      if ! wait_log "$dir/c.log" "busy-polling on core"; then
        fail pollcore "memnode c did not take a claim once a stopped: $(tail -n 2 "$dir/c.log")"
      else
        kill -CONT "$pid_a"
        if wait_log "$dir/a.log" "took polling core .* while this one stood still"; then
          echo "ok: pollcore: the stopped memnode's polling core went to the other; resumed, it sleeps"
        else
          fail pollcore "memnode a did not learn that it lost its core: $(tail -n 2 "$dir/a.log")"
        fi
      fi
    fi
  }
  unset mn_wrap
  stop_nodes
fi
finish
