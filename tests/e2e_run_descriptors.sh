#!/usr/bin/env bash
# e2e_run_descriptors: the runtime's descriptors are out of the program's way (docs/DECISIONS.md D47): programs that close every descriptor (close_range by syscall() and by libc, a close loop, closefrom, a forked child before exec) keep their memory, descriptor numbers and counts are as natively (also while a forked child's pager takes over and makes its descriptors), /proc/self/fd listed while the program pages never changes, socket activation's descriptors and LISTEN_PID arrive, and an exec'd child with too low an RLIMIT_NOFILE runs unmanaged (D41).
. "${COMEX_SRC:?}/tests/progs/lib.sh"
echo "e2e_run_descriptors: prog_closefds at 128 MiB under comex run --local-mem 32M matches its native runs"

for mode in syscall libc loop closefrom fork dup; do
  compare "close-$mode" 32M budget -- "$progs/prog_closefds" "$mode" 128
done
# a forked child's pager takes over while the child opens and closes: the
# runtime's passing descriptors never take the child's numbers (D47); no
# budget check: lazy-fork off brings every page home for the fork
compare close-takeover 32M --lazy-fork=false -- "$progs/prog_closefds" takeover 128
# /proc/self/fd listed over and over while the program pages: the runtime's
# periodic reads of /proc make no descriptor in the program's table (D47)
compare fdwatch 32M budget -- "$progs/prog_fdwatch" 128 3
compare fdwatch-fifo 32M budget --sched fifo -- "$progs/prog_fdwatch" 128 3
compare fdwatch-fork 32M -- "$progs/prog_fdwatch" 128 3 fork

# systemd socket activation through comex run as the launcher: descriptors
# 3 and 4 and a LISTEN_PID naming the program
if want listen; then
  python3 "$src/tests/progs/activate.py" "$progs/prog_closefds" listen 64 >"$dir/listen.native" 2>&1 \
    || fail listen "native run failed: $(tail -n 2 "$dir/listen.native")"
  timeout -k 10 "$hang_guard" python3 "$src/tests/progs/activate.py" "$bin" run --local-mem 16M \
    --stats-json "$dir/listen.json" -- "$progs/prog_closefds" listen 64 >"$dir/listen.comex" 2>"$dir/listen.err" \
    || fail listen "comex run failed: $(tail -n 3 "$dir/listen.err")"
  if ! grep -q "2 of LISTEN_FDS=2 are listening" "$dir/listen.native"; then
    fail listen "the native run did not get its sockets: $(head -n 3 "$dir/listen.native")"
  elif ! cmp -s "$dir/listen.native" "$dir/listen.comex"; then
    fail listen "the program saw other descriptors than natively"; diff "$dir/listen.native" "$dir/listen.comex" | head -n 6
  else
    echo "ok: listen: $(grep LISTEN_PID "$dir/listen.comex")"
  fi
fi

# an exec'd child whose RLIMIT_NOFILE is too low for the runtime runs
# unmanaged, with a warning and a count in its parent's counters
if want lownofile; then
  child="ulimit -Sn 32; $progs/prog_closefds libc 64; exit \$?" # a child: not exec'd in bash's place
  bash -c "$child" >"$dir/lownofile.native" 2>&1 || fail lownofile "native run failed"
  timeout -k 10 "$hang_guard" "$bin" run --local-mem 16M --stats-json "$dir/lownofile.json" -- bash -c "$child" \
    >"$dir/lownofile.comex" 2>"$dir/lownofile.err" || fail lownofile "comex run failed: $(tail -n 3 "$dir/lownofile.err")"
  n=$(stats_get lownofile children_unmanaged 2>/dev/null || echo 0)
  if ! cmp -s "$dir/lownofile.native" "$dir/lownofile.comex"; then
    fail lownofile "output differs from the native run"; diff "$dir/lownofile.native" "$dir/lownofile.comex" | head -n 6
  elif ! grep -q "prog_closefds (pid [0-9]*) runs without comex" "$dir/lownofile.err"; then
    fail lownofile "no warning that the child runs unmanaged: $(head -n 3 "$dir/lownofile.err")"
  elif [ "$n" -lt 1 ]; then
    fail lownofile "children_unmanaged is $n in the parent's counters"
  else
    echo "ok: lownofile: child ran unmanaged with the warning, children_unmanaged=$n"
  fi
fi
finish
