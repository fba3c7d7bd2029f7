#!/usr/bin/env bash
# e2e_swap_gray: comex swap up --replicas 2 over two memnodes with op-timeout 10 min; prog_gate_static rewrites 96 MiB in a memory cgroup at 24 MiB while one memnode is stopped (SIGSTOP): the daemon reads from the other copy and writes elsewhere (hedge counters above zero, the memnode suspect in comex swap status), the program pages on; resumed, the memnode is taken back; the output is what it prints without a limit.
. "${COMEX_SRC:?}/tests/progs/lib.sh"
. "$src/tests/progs/memnodes.sh"
. "$src/tests/progs/memcg.sh"
. "$src/tests/progs/swapdev.sh"
echo "e2e_swap_gray: comex swap up --replicas 2 on two memnodes; prog_gate_static 96 MiB at 24 MiB; one memnode stopped while it pages, then resumed"
swap_memcg swapgray

mn_start a --pool 256M || finish
mn_start b --pool 256M || finish
swap_up --size 192M --replicas 2 --memnode "127.0.0.1:$port_a,127.0.0.1:$port_b" --token-file "$dir/token" \
  --op-timeout 600s --log-level 2 || finish

gate_swapped 96 24M || finish

# grows KEY BY: the device's counter KEY grows by BY while the program runs
grows() {
  local from; from=$(counter "$1")
  while kill -0 "$prog" 2>/dev/null; do
    [ "$(counter "$1")" -ge $((from + $2)) ] && return 0
    sleep 0.2
  done
  fail "$1" "the program ended while waiting for $1 to grow by $2"; return 1
}

kill -STOP "$pid_a"
# two passes' worth of swap-ins (a request reads up to 32 pages; 96 MiB is
# 24576 pages) with a stopped: only hedged reads and writes get them through
if grows reads 1500; then
  rh=$(counter reads_hedged); wh=$(counter writes_hedged); ms=$(counter memnodes_suspected)
  if [ $((rh + wh)) -le 0 ] || [ "$ms" -le 0 ]; then
    fail hedge "reads_hedged=$rh writes_hedged=$wh memnodes_suspected=$ms with memnode a stopped"
  else
    echo "ok: hedge: memnode a stopped; the program swapped on: $rh reads and $wh writes hedged"
  fi
  "$bin" swap status --swap-dir "$swapdir" | grep -q "(suspect: 0" ||
    fail status "comex swap status does not show memnode 0 suspect: $("$bin" swap status --swap-dir "$swapdir" | tail -n 1)"
fi
kill -CONT "$pid_a"
wait_log "$(ls "$swapdir"/*.log | head -n 1)" "memnode 127.0.0.1:$port_a answers in time again" ||
  fail back "memnode a was not taken back after SIGCONT: $(grep -E 'late|again' "$swapdir"/*.log | tail -n 2)"
touch "$dir/gate.open"
rc=0; wait $prog || rc=$?
if [ $rc -ne 0 ]; then
  fail gate "exit $rc: $(tail -n 2 "$dir/gate.swap-err")"
elif ! cmp -s "$dir/gate.native" "$dir/gate.swap"; then
  fail gate "output differs from the run without a limit: $(diff "$dir/gate.native" "$dir/gate.swap" | head -n 4)"
else
  echo "ok: gate: every page read back and rewritten while memnode a stood still and after; same output"
fi
grep -q "failed:" "$swapdir"/*.log && fail failed "a memnode was declared failed: $(grep 'failed:' "$swapdir"/*.log | head -n 1)"
swap_down && echo "ok: down"
finish
