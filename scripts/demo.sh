#!/usr/bin/env bash
# make demo: run a real program (Python building and scanning ~230 MiB of
# records) natively, then under `comex run` with 25 % of its peak memory as
# the local budget against an embedded memnode; check both print the same,
# and show the pager's fault breakdown. Ends with the side-by-side comparison
# against swap when scripts/demo_compare.sh is present.
set -euo pipefail
build=${1:-build}
bin="$build/comex"
src=$(cd "$(dirname "$0")" && pwd)
py=/usr/bin/python3
n=${COMEX_DEMO_RECORDS:-1000000}
dir=$(mktemp -d /tmp/comex-demo.XXXXXX)
trap 'rm -rf "$dir"' EXIT

echo "== native run: $py scripts/demo_prog.py $n"
t0=$(date +%s.%N)
$py "$src/demo_prog.py" "$n" >"$dir/native.out" 2>"$dir/native.err"
t1=$(date +%s.%N)
peak=$(sed -n 's/peak_rss_mib //p' "$dir/native.err")
budget=$(( peak / 4 ))
echo "   $(cat "$dir/native.out")"
echo "   peak resident ${peak} MiB"

echo "== comex run --local-mem ${budget}M (25 %), embedded memnode on loopback"
t2=$(date +%s.%N)
"$bin" run --local-mem "${budget}M" --stats-json "$dir/stats.json" -- \
  $py "$src/demo_prog.py" "$n" >"$dir/comex.out" 2>"$dir/comex.err" || { cat "$dir/comex.err"; exit 1; }
t3=$(date +%s.%N)
echo "   $(cat "$dir/comex.out")"
if cmp -s "$dir/native.out" "$dir/comex.out"; then
  echo "   output identical to the native run"
else
  echo "   OUTPUT DIFFERS from the native run" >&2; exit 1
fi
python3 - "$dir/stats.json" "$t0" "$t1" "$t2" "$t3" <<'PY'
import json, sys
s = json.load(open(sys.argv[1])); t = [float(x) for x in sys.argv[2:6]]
nat, cx = t[1] - t[0], t[3] - t[2]
mib = lambda b: b / 2**20
print("   %.1f s against %.1f s native (%.1fx); peak resident %.0f MiB of a %.0f MiB budget"
      % (cx, nat, cx / nat, mib(s["resident_peak_bytes"]), mib(s["local_mem_bytes"])))
print("   fault breakdown:")
for k, what in [("faults_zero", "first touch, zero-filled"),
                ("faults_wbuf_hit", "served from a write buffer"),
                ("faults_rbuf_hit", "served from the read buffer (prefetched)"),
                ("faults_remote", "remote reads (each maps its run of neighbours)"),
                ("pages_prefetch_mapped", "neighbour pages mapped by those reads"),
                ("faults_wp", "writes to clean pages (frame released)")]:
    print("     %-22s %10d  %s" % (k, s[k], what))
print("   pages evicted %d (written %d, dropped clean %d, dropped zero %d); %.0f MiB read, %.0f MiB written"
      % (s["pages_evicted"], s["pages_written"], s["pages_dropped_clean"], s["pages_dropped_zero"],
         mib(s["bytes_read"]), mib(s["bytes_written"])))
PY
if [ -x "$src/demo_compare.sh" ] || [ -f "$src/demo_compare.sh" ]; then
  bash "$src/demo_compare.sh" "$build"
fi
