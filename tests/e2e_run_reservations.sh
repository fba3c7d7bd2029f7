#!/usr/bin/env bash
# e2e_run_reservations: reservations of any size are managed and the budget counts the runtime (docs/PAGER.md P45): 256 GiB touched sparsely keeps local-mem with the runtime's tables included and no --region; a budget the tables cannot leave room in, and a mapping larger than the region, are said and counted, never kept silently.
. "${COMEX_SRC:?}/tests/progs/lib.sh"
echo "e2e_run_reservations: prog_sparse (a MAP_NORESERVE reservation written in pieces spread over all of it)"

# own_kib NAME: the process's peak own memory from the program's stderr
# (VmHWM less the file and shared-memory pages resident at its end), KiB
own_kib() {
  awk '/^VmHWM:/ {h = $2} /^RssFile:/ {f = $2} /^RssShmem:/ {s = $2} END {print h - f - s}' "$dir/$1.err"
}

# 256 GiB, 384 MiB written in 64 KiB pieces (6144 pieces 42 MiB apart), at
# 96 MiB: the program, the runtime's tables (about 48 MiB here) and its
# buffers together stay within local-mem (plus 8 MiB for the lag of the
# outside measure, one 100 ms tick)
if want sparse; then
  native sparse "$progs/prog_sparse" 256 384 64 || fail sparse "native run failed"
  native_own=$(awk '/^VmHWM:/ {h = $2} /^RssFile:/ {f = $2} END {print h - f}' "$dir/sparse.native-err")
  if ! under_comex sparse 96M -- "$progs/prog_sparse" 256 384 64; then
    fail sparse "exit status $? under comex run: $(grep -E '^comex: (error|warning)' "$dir/sparse.err" | head -n 3)"
  elif ! cmp -s "$dir/sparse.native" "$dir/sparse.comex"; then
    fail sparse "output differs from the native run: $(cat "$dir/sparse.comex")"
  else
    own=$(own_kib sparse); outside=$(stats_get sparse bytes_mapped_outside)
    evicted=$(stats_get sparse pages_evicted); unkept=$(stats_get sparse budget_unkept_ms)
    tables=$(($(stats_get sparse outside_anon_peak_bytes) >> 20))
    if [ "$outside" != 0 ]; then
      fail sparse "$((outside >> 20)) MiB were mapped outside the managed region (the default region is too small)"
    elif [ "$evicted" -le 0 ]; then
      fail sparse "nothing was evicted: the reservation is not managed"
    elif [ "$own" -gt $(((96 + 8) * 1024)) ]; then
      fail sparse "the process's own memory peaked at $((own >> 10)) MiB at --local-mem 96M (natively $((native_own >> 10)) MiB; outside the region $tables MiB)"
    elif [ "$unkept" != 0 ] || grep -q 'was not kept' "$dir/sparse.err"; then
      fail sparse "local-mem was reported as not kept ($unkept ms): $(grep 'not kept' "$dir/sparse.err")"
    else
      echo "ok: sparse: same output; own memory peaked at $((own >> 10)) MiB at --local-mem 96M (natively $((native_own >> 10)) MiB), $tables MiB of it outside the region at most, $evicted pages evicted"
    fi
  fi
fi

# 64 MiB in 4 KiB pieces over 64 GiB: 16384 pieces, two table pages each
# (128 MiB of tables). At 32 MiB that budget cannot be kept: the program
# still runs right, the time at the floor is counted and a warning says so
if want unkept; then
  native unkept "$progs/prog_sparse" 64 64 4 1 || fail unkept "native run failed"
  if ! under_comex unkept 32M -- "$progs/prog_sparse" 64 64 4 1; then
    fail unkept "exit status $? under comex run: $(grep -E '^comex: (error|warning)' "$dir/unkept.err" | head -n 3)"
  elif ! cmp -s "$dir/unkept.native" "$dir/unkept.comex"; then
    fail unkept "output differs from the native run"
  elif [ "$(stats_get unkept budget_unkept_ms)" = 0 ] || ! grep -q '^comex: warning: local-mem (32 MiB) was not kept' "$dir/unkept.err"; then
    fail unkept "a budget the runtime's tables leave no room in was kept silently (budget_unkept_ms $(stats_get unkept budget_unkept_ms), outside peak $(($(stats_get unkept outside_anon_peak_bytes) >> 20)) MiB)"
  else
    echo "ok: unkept: same output; $(grep -o 'was not kept.*reached [0-9]* MiB' "$dir/unkept.err")"
  fi
fi

# a mapping larger than the region the user asked for: mapped by the
# kernel, said once with its size, and what it holds is counted (the
# program's managed pages get less room)
if want beyond; then
  native beyond "$progs/prog_sparse" 128 64 64 4 || fail beyond "native run failed"
  if ! under_comex beyond 32M --region 64G -- "$progs/prog_sparse" 128 64 64 4; then
    fail beyond "exit status $? under comex run"
  elif ! cmp -s "$dir/beyond.native" "$dir/beyond.comex"; then
    fail beyond "output differs from the native run"
  elif ! grep -q "warning: a mapping of 131072 MiB finds no room in the managed region" "$dir/beyond.err"; then
    fail beyond "no warning for a mapping outside the region: $(head -n 3 "$dir/beyond.err")"
  elif [ "$(stats_get beyond bytes_mapped_outside)" != $((128 << 30)) ] ||
       [ "$(stats_get beyond outside_anon_peak_bytes)" -lt $((64 << 20)) ] ||
       [ "$(stats_get beyond budget_unkept_ms)" = 0 ]; then
    fail beyond "not counted: bytes_mapped_outside $(stats_get beyond bytes_mapped_outside), outside_anon_peak_bytes $(stats_get beyond outside_anon_peak_bytes), budget_unkept_ms $(stats_get beyond budget_unkept_ms)"
  else
    echo "ok: beyond: the 128 GiB mapping outside a 64G region is said, counted ($(($(stats_get beyond outside_anon_peak_bytes) >> 20)) MiB outside at peak) and local-mem reported as not kept"
  fi
fi
finish
