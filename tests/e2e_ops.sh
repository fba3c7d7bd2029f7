#!/usr/bin/env bash
# Operator tools against a real program under comex run and real memnodes: comex top, comex status (table and JSON, a failed node, imbalance), Prometheus scrapes of the memnode and the exporter validated by a parser; as root, a comex swap device shown by top and the exporter; the program's output matches its native run.
set -u
build=${COMEX_BUILD:?}; bin=${COMEX_BIN:?}; src=${COMEX_SRC:?}
py=/usr/bin/python3
if grep -q "COMEX_SANITIZE:BOOL=ON" "$build/CMakeCache.txt"; then
  echo "skip: the preloaded runtime is not built in the sanitizer build"; exit 77
fi
if [ "$(id -u)" -ne 0 ] && [ "$(cat /proc/sys/vm/unprivileged_userfaultfd 2>/dev/null)" != 1 ]; then
  echo "skip: no userfaultfd permission"; exit 77
fi
$py -c 'import prometheus_client' 2>/dev/null || { echo "FAIL: python3-prometheus-client missing (scripts/deps.sh)"; exit 1; }
command -v curl >/dev/null || { echo "FAIL: curl missing (scripts/deps.sh)"; exit 1; }
dir=$(mktemp -d /tmp/comex-e2e-ops.XXXXXX)
pids=()
swapname=e2eops$$ swapdev=
cleanup() {
  [ -n "$swapdev" ] && "$bin" swap down --swap-dir "$dir/swap" "$swapdev"
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
  rm -rf "$dir"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; for f in "$dir"/*.log; do echo "== $f"; tail -20 "$f"; done; exit 1; }
# Waits until log FILE of process PID holds PATTERN (ending in the port
# number) and prints the number (readiness, not timing).
port_in() {
  local f=$1 p=$2 pat=$3 port
  while :; do
    port=$(grep -o "$pat" "$f" 2>/dev/null | head -1 | tr -dc 0-9)
    [ -n "$port" ] && { echo "$port"; return 0; }
    kill -0 "$p" 2>/dev/null || return 1
    sleep 0.05
  done
}
port_of() { port_in "$1" "$2" '(port [0-9]*)'; }
memnode_port() { port_in "$1" "$2" 'on port [0-9]*'; }

"$bin" token "$dir/tok" >/dev/null || fail "token"
"$bin" memnode --listen 127.0.0.1:0 --pool 256M --token-file "$dir/tok" --idle-spin 0 \
  --metrics-listen 127.0.0.1:0 2>"$dir/mn1.log" & pids+=($!); mn1=$!
"$bin" memnode --listen 127.0.0.1:0 --pool 128M --token-file "$dir/tok" --idle-spin 0 2>"$dir/mn2.log" & pids+=($!); mn2=$!
a1=127.0.0.1:$(memnode_port "$dir/mn1.log" $mn1) || fail "memnode 1 did not start"
a2=127.0.0.1:$(memnode_port "$dir/mn2.log" $mn2) || fail "memnode 2 did not start"
mport=$(port_of "$dir/mn1.log" $mn1) || fail "memnode metrics did not start"

# reference output, then the same program under comex, left running
touch "$dir/stop.native"
$py "$src/tests/progs/busy_pages.py" 64 "$dir/ready.native" "$dir/stop.native" >"$dir/native.out" || fail "native run"
"$bin" run --memnode "$a1,$a2" --token-file "$dir/tok" --local-mem 24M -- \
  $py "$src/tests/progs/busy_pages.py" 64 "$dir/ready" "$dir/stop" >"$dir/comex.out" 2>"$dir/run.log" & prog=$!
pids+=($prog) # ended by cleanup when a check fails
while [ ! -e "$dir/ready" ]; do kill -0 $prog 2>/dev/null || fail "program under comex died"; sleep 0.1; done
pid=$(cat /proc/$prog/task/*/children 2>/dev/null | tr ' ' '\n' | grep . | head -1)
[ -n "$pid" ] && [ -e /dev/shm/comex-stats.$pid ] || pid=$prog
[ -e /dev/shm/comex-stats.$pid ] || fail "no counters for the program (pid $pid)"

# --- comex top
"$bin" top --once --interval 0.5 "$pid" >"$dir/top.out" 2>"$dir/top.log" || fail "top --once PID"
cat "$dir/top.out"
$py - "$dir/top.out" "$pid" "$a1" "$a2" <<'PY' || fail "top output"
import sys
lines = open(sys.argv[1]).read().splitlines()
pid, addrs = sys.argv[2], sys.argv[3:]
head = lines[1].split()
row = [l for l in lines[2:] if l.split()[0] == pid]
assert len(row) == 1, lines
f = dict(zip(head, row[0].split()))
assert f["BUDGET"] == "24.0M", f
assert float(f["REMOTE"].rstrip("M")) > 0, f
assert any(a + "(" in row[0] for a in addrs), (addrs, row[0])  # the memnode(s) holding its pages
# latency percentiles whenever the interval (0.5 s) had remote faults; the
# fault count and the histogram are separate counters, so a snapshot may
# split one fault between them: ask for two
if float(f["REMOTE/s"]) * 0.5 >= 2:
    assert 0 < float(f["P50us"]) <= float(f["P99us"]), f
if f["P50us"] != "-":
    assert float(f["P50us"]) <= float(f["P99us"]), f
print("ok: top", f["REMOTE"], f["REMOTE/s"], f["P50us"], f["P99us"])
PY
"$bin" top --once --interval 0.2 >"$dir/top_all.out" || fail "top --once"
grep -q "^ *$pid " "$dir/top_all.out" || fail "top without PID does not list $pid"
out=$("$bin" top --once 999999999 2>&1) && fail "top of a non-comex pid succeeded"
grep -q "not running under comex" <<<"$out" || fail "top bad pid message: $out"

# --- comex status: two live memnodes and one that is not there
dead=127.0.0.1:1
"$bin" status --memnode "$a1,$a2" --token-file "$dir/tok" --interval 0.3 --clients >"$dir/status.out" \
  || fail "status exit code with every memnode up"
cat "$dir/status.out"
grep -q "^$a1 .* up " "$dir/status.out" || fail "status table: no up line for $a1"
grep -q "client 0x" "$dir/status.out" || fail "status --clients: no client row"
"$bin" status --memnode "$a1,$a2,$dead" --token-file "$dir/tok" --interval 0.3 --json >"$dir/status.json" \
  && fail "status exit 0 with a failed memnode"
$py - "$dir/status.json" "$a1" "$a2" "$dead" <<'PY' || fail "status JSON"
import json, sys
s = json.load(open(sys.argv[1]))
n = {m["addr"]: m for m in s["memnodes"]}
a1, a2, dead = n[sys.argv[2]], n[sys.argv[3]], n[sys.argv[4]]
assert s["schema"] == "comex-status/1" and s["up"] == 2 and s["failed"] == 1, s
assert dead["state"] == "failed" and dead["error"], dead
for m in (a1, a2):
    assert m["state"] == "up" and m["pool_bytes"] == m["used_bytes"] + m["free_bytes"], m
    assert m["clients"] == 1, m  # the program; status's own connection is not counted
    assert sum(c["used_bytes"] for c in m["clients_usage"]) == m["used_bytes"], m
assert a1["pool_bytes"] == 256 << 20 and a2["pool_bytes"] == 128 << 20, s
used = [a1["used_bytes"], a2["used_bytes"]]
assert sum(used) > 0, s
assert abs(s["imbalance"] - max(used) / (sum(used) / 2)) < 1e-3, s
assert s["used_bytes"] == sum(used), s
print("ok: status used", used, "imbalance", s["imbalance"])
PY
out=$("$bin" status --memnode "$a1" --interval 0 2>&1) && fail "status without the token succeeded"
grep -q "failed" <<<"$out" || fail "status without token: $out"

# --- a comex swap device (on its embedded memnode): top shows it
if [ "$(id -u)" -eq 0 ] && [ -w /dev/fuse ] && command -v losetup >/dev/null && command -v swapon >/dev/null; then
  swapdev=$("$bin" swap up --size 32M --priority 0 --name $swapname --swap-dir "$dir/swap" 2>"$dir/swapup.log" |
    tail -n 1)
  [ -n "$swapdev" ] || fail "swap up"
  "$bin" top --once --interval 0.2 >"$dir/top_swap.out" || fail "top --once with a swap device"
  grep -q "^$swapname  *[0-9][0-9]*  *32.0M " "$dir/top_swap.out" || fail "top without the swap device: $(cat "$dir/top_swap.out")"
  echo "ok: top: $(grep "^$swapname " "$dir/top_swap.out")"
else
  echo "skip: the swap device part (root, /dev/fuse, losetup and swapon needed)"
fi

# --- Prometheus: the memnode's endpoint, the exporter's, and the exporter once
curl -sf "http://127.0.0.1:$mport/metrics" >"$dir/memnode.prom" || fail "scrape of the memnode"
$py "$src/tests/promcheck.py" "$dir/memnode.prom" comex_memnode_used_bytes comex_memnode_requests \
  comex_memnode_clients || fail "memnode exposition"
grep -q '^comex_memnode_requests_total{nid="[0-9]*"} [1-9]' "$dir/memnode.prom" || fail "memnode requests_total not > 0"
grep -q '^comex_memnode_clients{nid="[0-9]*"} [1-9]' "$dir/memnode.prom" || fail "memnode clients: the program is not counted"
grep -q '^comex_memnode_pool_bytes{nid="[0-9]*"} 268435456$' "$dir/memnode.prom" || fail "memnode pool_bytes"
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$mport/other")
[ "$code" = 404 ] || fail "GET /other answered $code, not 404"
"$bin" exporter --listen 127.0.0.1:0 2>"$dir/exporter.log" & pids+=($!); ex=$!
eport=$(port_of "$dir/exporter.log" $ex) || fail "exporter did not start"
curl -sf "http://127.0.0.1:$eport/metrics" >"$dir/exporter.prom" || fail "scrape of the exporter"
"$bin" exporter --once >"$dir/exporter_once.prom" || fail "exporter --once"
for f in exporter.prom exporter_once.prom; do
  $py "$src/tests/promcheck.py" "$dir/$f" comex_programs comex_program_faults comex_program_remote_fault_seconds \
    comex_program_resident_bytes comex_program_read_bytes comex_swap_devices ${swapdev:+comex_swap_reads \
    comex_swap_stored_bytes comex_swap_copies comex_swap_request_seconds} || fail "exporter exposition $f"
done
$py - "$dir/exporter.prom" "$pid" "${swapdev:+$swapname}" <<'PY' || fail "exporter values"
import sys
from prometheus_client.parser import text_string_to_metric_families
pid, swap = sys.argv[2], sys.argv[3]
fams = {f.name: f for f in text_string_to_metric_families(open(sys.argv[1]).read())}
def val(fam, name, **labels):
    return [s.value for s in fams[fam].samples if s.name == name and s.labels.get("pid") == pid
            and all(s.labels.get(k) == v for k, v in labels.items())]
assert val("comex_program_budget_bytes", "comex_program_budget_bytes") == [24 << 20]
remote = val("comex_program_faults", "comex_program_faults_total", kind="remote")[0]
count = val("comex_program_remote_fault_seconds", "comex_program_remote_fault_seconds_count")[0]
assert remote > 0 and count > 0, (remote, count)
assert sum(val("comex_program_remote_bytes", "comex_program_remote_bytes")) > 0
print("ok: exporter remote faults", remote, "histogram count", count)
if swap:  # the device: its size and copies; swapon read its header
    def dev(fam, name, **labels):
        return [s.value for s in fams[fam].samples if s.name == name and s.labels.get("device") == swap
                and all(s.labels.get(k) == v for k, v in labels.items())]
    assert fams["comex_swap_devices"].samples[0].value >= 1
    assert dev("comex_swap_size_bytes", "comex_swap_size_bytes") == [32 << 20]
    assert dev("comex_swap_copies", "comex_swap_copies") == [1]
    reads = dev("comex_swap_reads", "comex_swap_reads_total")[0]
    assert reads > 0 and dev("comex_swap_request_seconds", "comex_swap_request_seconds_count", op="read") == [reads]
    print("ok: exporter swap device", swap, "reads", reads)
PY
if [ -n "$swapdev" ]; then
  "$bin" swap down --swap-dir "$dir/swap" "$swapdev" || fail "swap down"
  swapdev=
  "$bin" exporter --once | grep -q "device=\"$swapname\"" && fail "the exporter shows the device after down"
  echo "ok: swap down: the exporter no longer shows $swapname"
fi
kill -TERM $ex; wait $ex || fail "exporter did not stop cleanly on SIGTERM"

# --- the program ends with the output of its native run
touch "$dir/stop"
wait $prog || fail "program under comex exited $?"
cmp "$dir/native.out" "$dir/comex.out" || fail "output differs from the native run"
[ ! -e /dev/shm/comex-stats.$pid ] || fail "counters left behind"
echo "ok: $(cat "$dir/comex.out")"
