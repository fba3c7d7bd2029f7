#!/usr/bin/env bash
# e2e_run_daemons: a process ends when its last thread ends with pthread_exit (also a forked child's); a program that daemonizes under comex run (fork and exit, double fork with setsid, daemon(3)) after its memory was evicted keeps its memory and, once its parent is gone, a pager and budget of its own; redis-server --daemonize yes keeps its budget with the native data; the embedded memnode outlives comex run while the daemon uses it and leaves after it; a daemon of a run with a separate memnode over TCP takes over too (docs/DECISIONS.md D46, D80).
. "${COMEX_SRC:?}/tests/progs/lib.sh"
echo "e2e_run_daemons: prog_daemon 48+48 MiB at --local-mem 24M in three ways, redis --daemonize yes at 32M"

# a process ends when its last thread ends with pthread_exit, though the
# runtime's threads live on (a forked child's waiting thread, the handlers)
compare lastthread-main 16M -- "$progs/prog_lastthread" main 64
compare lastthread-fork 16M -- "$progs/prog_lastthread" fork 64

# wait_managed PID: until the daemon runs its own pager and has evicted
# (its counters exist and show evictions); prints its counters' summary
wait_managed() {
  local pid=$1
  for _ in $(seq 1 $((hang_guard * 10))); do
    kill -0 "$pid" 2>/dev/null || return 1
    if "$bin" stats "$pid" >"$dir/stats.$pid" 2>/dev/null && python3 - "$dir/stats.$pid" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
ok = s["pages_evicted"] > 0 and s["resident_bytes"] <= s["local_mem_bytes"]
print("resident %d KiB of local-mem %d KiB, %d pages evicted, %d remote faults"
      % (s["resident_bytes"] >> 10, s["local_mem_bytes"] >> 10, s["pages_evicted"], s["faults_remote"]))
sys.exit(0 if ok else 1)
PY
    then return 0; fi
    sleep 0.1
  done
  return 1
}

memnodes() { pgrep -f "$bin memnode --listen 127.0.0.1:0" | sort; }

# fork-tcp: the same with a separate memnode over TCP, where the child's
# take-over finds no UCX loaded (D80)
for mode in fork double daemon fork-tcp; do
  want "daemon-$mode" || continue
  mkdir -p "$dir/$mode.native" "$dir/$mode.comex"
  "$progs/prog_daemon" "${mode%-tcp}" 48 "$dir/$mode.native" || fail "daemon-$mode" "native run failed"
  before=$(memnodes); memnode=()
  if [ "$mode" = fork-tcp ]; then
    memnode_start || continue
    memnode=(--memnode "127.0.0.1:$mn_port" --token-file "$dir/token")
  fi
  timeout -k 10 "$hang_guard" "$bin" run --local-mem 24M "${memnode[@]}" -- "$progs/prog_daemon" "${mode%-tcp}" 48 \
    "$dir/$mode.comex" >/dev/null 2>"$dir/$mode.err" || fail "daemon-$mode" "comex run failed: $(tail -n 3 "$dir/$mode.err")"
  for d in native comex; do
    for _ in $(seq 1 $((hang_guard * 10))); do [ -s "$dir/$mode.$d/daemon.out" ] && break; sleep 0.1; done
  done
  pid=$(cat "$dir/$mode.comex/daemon.pid" 2>/dev/null)
  if ! cmp -s "$dir/$mode.native/daemon.out" "$dir/$mode.comex/daemon.out"; then
    fail "daemon-$mode" "the daemon saw other memory than natively (or none): $(cat "$dir/$mode.comex/daemon.out" 2>/dev/null)"
  elif ! summary=$(wait_managed "$pid"); then
    fail "daemon-$mode" "the daemon (pid $pid) did not keep a budget of its own: $(tail -n 1 "$dir/stats.$pid" 2>/dev/null)"
  else
    echo "ok: daemon-$mode: same memory as natively; the daemon: $summary"
  fi
  lingering=$(comm -13 <(echo "$before") <(memnodes))
  touch "$dir/$mode.native/stop" "$dir/$mode.comex/stop"
  [ "$mode" = fork-tcp ] && continue # no embedded memnode
  # the embedded memnode stays for the daemon, and leaves after it
  [ -n "$lingering" ] || fail "daemon-$mode" "no embedded memnode stayed for the daemon"
  for _ in $(seq 1 150); do [ -z "$(comm -12 <(echo "$lingering") <(memnodes))" ] && break; sleep 0.1; done
  [ -z "$(comm -12 <(echo "$lingering") <(memnodes))" ] || fail "daemon-$mode" "the embedded memnode outlived the daemon by 15 s"
done

if want redis && command -v redis-server >/dev/null; then
  port=$((20000 + RANDOM % 20000))
  digest() { # DIR [comex run options...]: starts redis daemonized, fills it, prints its digest, leaves it running
    local d=$1; shift
    "$@" redis-server --port "$port" --daemonize yes --save "" --appendonly no --enable-debug-command yes \
      --pidfile "$d/redis.pid" --logfile "$d/redis.log" --dir "$d" >/dev/null 2>"$d/start.err" || return 1
    for _ in $(seq 1 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
    redis-cli -p "$port" DEBUG POPULATE 200000 key 100 >/dev/null && redis-cli -p "$port" DEBUG DIGEST
  }
  mkdir -p "$dir/redis.native" "$dir/redis.comex"
  nd=$(digest "$dir/redis.native"); redis-cli -p "$port" shutdown nosave >/dev/null 2>&1
  for _ in $(seq 1 50); do redis-cli -p "$port" ping >/dev/null 2>&1 || break; sleep 0.1; done
  cd_=$(digest "$dir/redis.comex" timeout -k 10 "$hang_guard" "$bin" run --local-mem 32M --)
  pid=$(cat "$dir/redis.comex/redis.pid" 2>/dev/null)
  if [ -z "$nd" ] || [ "$nd" != "$cd_" ]; then
    fail redis "digest under comex '$cd_' against '$nd' natively: $(tail -n 3 "$dir/redis.comex/start.err")"
  elif ! summary=$(wait_managed "$pid"); then
    fail redis "redis (pid $pid) did not keep its budget: $(tail -n 1 "$dir/stats.$pid" 2>/dev/null)"
  else
    echo "ok: redis --daemonize yes: same digest as natively; $summary"
  fi
  redis-cli -p "$port" shutdown nosave >/dev/null 2>&1
fi
finish
