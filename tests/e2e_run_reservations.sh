#!/usr/bin/env bash
# e2e_run_reservations: reservations of any size are managed and the budget counts the runtime (docs/DECISIONS.md D50, D51): 256 GiB touched sparsely, in 64 KiB pieces or in pages far apart, keeps local-mem with the runtime's tables included and no --region; a mapping larger than the region is said and counted, its budget reported as not kept, never silently.
. "${COMEX_SRC:?}/tests/progs/lib.sh"
echo "e2e_run_reservations: prog_sparse (a MAP_NORESERVE reservation written in pieces spread over all of it)"

# own_kib NAME: the process's peak own memory from the program's stderr
# (VmHWM less the file and shared-memory pages resident at its end), KiB
own_kib() {
  awk '/^VmHWM:/ {h = $2} /^RssFile:/ {f = $2} /^RssShmem:/ {s = $2} END {print h - f - s}' "$dir/$1.err"
}

# kept NAME MIB ARGS...: prog_sparse ARGS at --local-mem MIB, with no
# --region: the same output as natively, managed (pages evicted, nothing
# mapped outside the region), the process's own memory (the runtime's
# tables and buffers included) within local-mem plus 8 MiB for the lag of
# the outside measure (one 100 ms tick), and never reported as not kept
kept() {
  local name=$1 mib=$2 own native_own outside tables unkept; shift 2
  native "$name" "$progs/prog_sparse" "$@" || { fail "$name" "native run failed"; return; }
  native_own=$(awk '/^VmHWM:/ {h = $2} /^RssFile:/ {f = $2} END {print h - f}' "$dir/$name.native-err")
  if ! under_comex "$name" "${mib}M" -- "$progs/prog_sparse" "$@"; then
    fail "$name" "exit status $? under comex run: $(grep -E '^comex: (error|warning)' "$dir/$name.err" | head -n 3)"
    return
  elif ! cmp -s "$dir/$name.native" "$dir/$name.comex"; then
    fail "$name" "output differs from the native run: $(cat "$dir/$name.comex")"
    return
  fi
  own=$(own_kib "$name"); outside=$(stats_get "$name" bytes_mapped_outside)
  unkept=$(stats_get "$name" budget_unkept_ms); tables=$(($(stats_get "$name" outside_anon_peak_bytes) >> 20))
  if [ "$outside" != 0 ]; then
    fail "$name" "$((outside >> 20)) MiB were mapped outside the managed region (the default region is too small)"
  elif [ "$(stats_get "$name" pages_evicted)" -le 0 ]; then
    fail "$name" "nothing was evicted: the reservation is not managed"
  elif [ "$own" -gt $(((mib + 8) * 1024)) ]; then
    fail "$name" "the process's own memory peaked at $((own >> 10)) MiB at --local-mem ${mib}M (natively $((native_own >> 10)) MiB; outside the region $tables MiB)"
  elif [ "$unkept" != 0 ] || grep -q 'was not kept' "$dir/$name.err"; then
    fail "$name" "local-mem was reported as not kept ($unkept ms): $(grep 'not kept' "$dir/$name.err")"
  else
    echo "ok: $name: same output; own memory peaked at $((own >> 10)) MiB at --local-mem ${mib}M (natively $((native_own >> 10)) MiB), $tables MiB of it outside the region at most"
  fi
}

# 256 GiB, 384 MiB written in 64 KiB pieces (6144 pieces 42 MiB apart), at
# 96 MiB: the runtime's tables are about 5 MiB here (D51)
want sparse && kept sparse 96 256 384 64
# 64 MiB in 4 KiB pieces over 256 GiB: 16384 pages touched alone, 16 MiB
# apart. Each costs a table leaf and a directory block (about 640 bytes,
# D51), not two 4 KiB table pages (128 MiB before): 32 MiB is kept
want scatter && kept scatter 32 256 64 4 1

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
       [ "$(stats_get beyond budget_unkept_ms)" = 0 ] ||
       ! grep -q '^comex: warning: local-mem (32 MiB) was not kept' "$dir/beyond.err"; then
    fail beyond "not counted: bytes_mapped_outside $(stats_get beyond bytes_mapped_outside), outside_anon_peak_bytes $(stats_get beyond outside_anon_peak_bytes), budget_unkept_ms $(stats_get beyond budget_unkept_ms)"
  else
    echo "ok: beyond: the 128 GiB mapping outside a 64G region is said, counted ($(($(stats_get beyond outside_anon_peak_bytes) >> 20)) MiB outside at peak) and local-mem reported as not kept"
  fi
fi
finish
