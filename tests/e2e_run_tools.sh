#!/usr/bin/env bash
# e2e_run_tools: debuggers and core dumps read a program's evicted memory (docs/DECISIONS.md D48): gdb attached after `comex home PID` reads every sampled word of an array that was mostly evicted, and the core of a program that aborts under comex holds it too, without the reserved region's size.
. "${COMEX_SRC:?}/tests/progs/lib.sh"
echo "e2e_run_tools: prog_tools 128 MiB under comex run --local-mem 32M, read by gdb attached and from its core"
command -v gdb >/dev/null || { echo "skip: gdb is not installed (scripts/deps.sh installs it)"; exit 77; }

mib=128
words=$((mib * 131072))
# words across the whole array, the first and last included
samples=(1 $((words / 7)) $((words / 3)) $((words / 2 + 5)) $((words - 4097)) $((words - 1)))
gdb_args() { for i in "${samples[@]}"; do printf -- "-ex\nprint a[%d]\n" "$i"; done; }
expected() { for i in "${samples[@]}"; do echo $((i * 2654435761)); done; } # a[i], below 2^63 here
# gdb's "$N = VALUE" lines, the values only
values() { sed -n 's/^\$[0-9]* = //p'; }

if want attach; then
  fifo=$dir/attach.in; mkfifo "$fifo"
  timeout -k 10 "$hang_guard" "$bin" run --local-mem 32M --stats-json "$dir/attach.json" -- \
    "$progs/prog_tools" $mib wait <"$fifo" >"$dir/attach.out" 2>"$dir/attach.err" &
  pids+=($!)
  exec 7>"$fifo" # the go-ahead, written once gdb is done
  for _ in $(seq 1 $((hang_guard * 10))); do grep -q '^ready' "$dir/attach.out" && break; sleep 0.1; done
  read -r _ pid _ <"$dir/attach.out"
  if [ -z "$pid" ]; then
    fail attach "the program never got ready: $(tail -n 3 "$dir/attach.err")"
  else
    evicted=$("$bin" stats "$pid" | python3 -c 'import json,sys; print(json.load(sys.stdin)["pages_evicted"])')
    "$bin" home "$pid" >"$dir/home.out" 2>&1 || fail attach "comex home failed: $(cat "$dir/home.out")"
    mapfile -t args < <(gdb_args)
    gdb -p "$pid" -batch -nx "${args[@]}" >"$dir/gdb.out" 2>&1
    if [ "$(values <"$dir/gdb.out")" != "$(expected)" ]; then
      fail attach "gdb read other values than the program wrote (evicted before: $evicted pages)"
      grep -E '^\$|Cannot' "$dir/gdb.out" | head -n 6 | sed 's/^/    /'
    else
      echo "ok: attach: gdb read ${#samples[@]} words of a $mib MiB array after comex home ($evicted pages had been evicted): $(head -n 1 "$dir/home.out")"
    fi
    "$bin" home --release "$pid" >/dev/null 2>&1 || fail attach "comex home --release failed"
  fi
  echo go >&7; exec 7>&-
  wait "${pids[-1]}" || fail attach "the program failed after the debugger: $(tail -n 3 "$dir/attach.err")"
  [ "$evicted" -gt 0 ] 2>/dev/null || fail attach "nothing was evicted before gdb attached: the test proves nothing"
fi

if want core; then
  pattern=$(cat /proc/sys/kernel/core_pattern)
  if [[ $pattern == \|* ]]; then
    echo "skip: core: kernel.core_pattern pipes cores to $pattern"
  else
    mkdir -p "$dir/native" "$dir/comex"
    (cd "$dir/native" && ulimit -c unlimited && exec "$progs/prog_tools" $mib abort) >/dev/null 2>&1
    (cd "$dir/comex" && ulimit -c unlimited && timeout -k 10 "$hang_guard" "$bin" run --local-mem 32M \
      --stats-json "$dir/core.json" -- "$progs/prog_tools" $mib abort) >/dev/null 2>"$dir/core.err"
    ncore=$(ls "$dir"/native/core* 2>/dev/null | head -n 1); ccore=$(ls "$dir"/comex/core* 2>/dev/null | head -n 1)
    mapfile -t args < <(gdb_args)
    if [ -z "$ncore" ]; then
      echo "skip: core: the native run left no core (core_pattern '$pattern')"
    elif [ -z "$ccore" ]; then
      fail core "no core under comex run: $(tail -n 3 "$dir/core.err")"
    elif [ "$(gdb -batch -nx "${args[@]}" "$progs/prog_tools" "$ccore" 2>/dev/null | values)" != "$(expected)" ]; then
      fail core "gdb reads other values from the core than the program wrote"
      gdb -batch -nx "${args[@]}" "$progs/prog_tools" "$ccore" 2>&1 | grep -E '^\$|Cannot' | head -n 6 | sed 's/^/    /'
    else
      nsize=$(stat -c %s "$ncore"); csize=$(stat -c %s "$ccore")
      if [ "$csize" -gt $((nsize + 128 * 1048576)) ]; then
        fail core "the core's size is $((csize >> 20)) MiB against $((nsize >> 20)) MiB natively"
      else
        echo "ok: core: gdb reads the array from the core ($((csize >> 20)) MiB, natively $((nsize >> 20)) MiB; $(stats_get core pages_evicted) pages had been evicted)"
      fi
    fi
  fi
fi
finish
