#!/usr/bin/env bash
# e2e_swap_embedded: comex swap up without --memnode starts its own memnode (locked pool, reclaim-safe) and needs no --single-copy; a Go program and a static C program (both refused by comex run) in a memory cgroup at about 25 % of their footprint, with the device as their swap, print what they print without a limit, their pages on the embedded memnode; down ends the daemon and its memnode and leaves nothing behind.
. "${COMEX_SRC:?}/tests/progs/lib.sh"
. "$src/tests/progs/memcg.sh"
. "$src/tests/progs/swapdev.sh"
echo "e2e_swap_embedded: comex swap up (128 MiB, embedded memnode); a 64 MiB Go program and prog_gate_static 64 MiB in a memory cgroup at 16-24 MiB; down"
static=$progs/prog_gate_static
[ -x "$static" ] || { echo "FAIL: $static is not built"; exit 1; }
swap_memcg swapemb

swap_up --size 128M || finish
daemon=$(cat "$swapdir"/*.pid)
memnode=$(pgrep -P "$daemon" -f "comex memnode" | head -n 1)
if [ -z "$memnode" ]; then
  fail embedded "the daemon (pid $daemon) started no memnode"
else
  echo "ok: embedded memnode pid $memnode: $(tr '\0' ' ' </proc/"$memnode"/cmdline | grep -o -- '--pool [0-9]* .*--reclaim-safe true')"
  grep -q "^VmLck:[[:space:]]*[1-9]" /proc/"$memnode"/status || fail embedded "the embedded memnode's memory is not locked"
fi

if go_build goswap "$src/tests/progs/runtimes/swapped.go"; then
  # comex run refuses it: this is what comex swap is for
  "$bin" run --local-mem 16M -- "$dir/goswap" 1 >/dev/null 2>"$dir/gorefused.err" && fail go "comex run did not refuse a Go program"
  swapped go 24M "$dir/goswap" 64
fi
swapped static 16M "$static" 64 /
[ "$(counter errors)" -eq 0 ] || fail errors "the device counted $(counter errors) failed requests"

if swap_down; then
  sleep 0.5 # the memnode's SIGTERM from its ending daemon is being handled; not timing anything
  if kill -0 "$daemon" 2>/dev/null || { [ -n "$memnode" ] && kill -0 "$memnode" 2>/dev/null; }; then
    fail down "the daemon ($daemon) or its memnode ($memnode) still runs"
  else
    echo "ok: down: daemon and embedded memnode ended"
  fi
fi
finish
