# Sourced by tests/e2e_run_*.sh: what every `comex run` correctness test needs.
# Each program runs natively first (its output is the reference), then under
# `comex run` at a fraction of its footprint; outputs must be identical and
# the pager's stats must show remote traffic. Failures are collected, so one
# run reports every broken case; the script exits 1 if any failed.
set -u
bin=${COMEX_BIN:?}; build=${COMEX_BUILD:?}; src=${COMEX_SRC:?}
progs=${COMEX_PROGS:-$build/progs}
# A hang guard only (seconds): a run that takes longer than this is reported as
# hung. It is far above any expected run time; nothing asserts on timing.
hang_guard=${COMEX_TEST_HANG_GUARD:-400}
# Every process waits to start its runtime until it has allocated this much
# (option start-after, docs/DECISIONS.md D87), far below the default 8M, so
# that the lazy start runs under every test with a local-mem of 16M or more
# (below, the runtime starts at exec, as with start-after 0).
export COMEX_START_AFTER=${COMEX_START_AFTER:-256K}

# LD_PRELOAD of a sanitized runtime into arbitrary programs is not supported
# (ASan must be the first library loaded and would check the programs too).
if grep -q "COMEX_SANITIZE:BOOL=ON" "$build/CMakeCache.txt" 2>/dev/null; then
  echo "skip: comex run tests do not run in the sanitizer build (LD_PRELOAD of a sanitized runtime is unsupported)"
  exit 77
fi
# userfaultfd must be allowed: root, vm.unprivileged_userfaultfd=1 or /dev/userfaultfd.
if [ "$(id -u)" -ne 0 ] && [ "$(cat /proc/sys/vm/unprivileged_userfaultfd 2>/dev/null)" != 1 ] \
   && ! [ -r /dev/userfaultfd -a -w /dev/userfaultfd ]; then
  echo "skip: no userfaultfd permission (run as root, or sysctl vm.unprivileged_userfaultfd=1)"
  exit 77
fi
for p in "$bin" "$progs/prog_mt"; do
  [ -x "$p" ] || { echo "FAIL: $p is not built"; exit 1; }
done
command -v python3 >/dev/null || { echo "FAIL: python3 is needed (scripts/deps.sh installs it)"; exit 1; }

dir=$(mktemp -d /tmp/comex-e2e-run.XXXXXX)
pids=() # background processes this script started
cleanup() {
  local p f
  # daemons that wrote a pid file (redis-server under comex run is a grandchild)
  for f in "$dir"/*/*.pid; do [ -f "$f" ] && kill -KILL "$(cat "$f")" 2>/dev/null; done
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
  sleep 0.5
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
  if [ -n "${COMEX_TEST_KEEP:-}" ]; then echo "kept: $dir"; else rm -rf "$dir"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
export TMPDIR=$dir
failed=()
# Daemons a test starts in the background die with the test's shell, also
# when ctest's timeout kills it with no chance to run its EXIT trap (an
# orphaned memnode kept polling and slowed later benchmarks 2x).
die_with_test=(setpriv --pdeathsig KILL)
fail() { echo "FAIL: $*"; failed+=("$1"); }
finish() {
  if [ ${#failed[@]} -gt 0 ]; then echo "$(basename "$0" .sh): FAILED: ${failed[*]}"; exit 1; fi
  echo "$(basename "$0" .sh): ok"; exit 0
}

# native NAME CMD...: runs CMD with stdout to $dir/NAME.native and stderr to
# $dir/NAME.native-err (stdin passes through); sets peak_kib to its peak RSS.
# Returns its exit status.
native() {
  local name=$1; shift
  peak_kib=$(python3 -c '
import resource, subprocess, sys
with open(sys.argv[1], "wb") as out, open(sys.argv[1] + "-err", "wb") as err:
    rc = subprocess.call(sys.argv[2:], stdout=out, stderr=err)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
sys.exit(rc)' "$dir/$name.native" "$@")
}

# under_comex NAME LOCALMEM [comex options...] -- CMD...: runs CMD under comex
# run with stdout to $dir/NAME.comex, stderr to $dir/NAME.err and stats in
# $dir/NAME.json. Returns the exit status (124 when the hang guard fired).
under_comex() {
  local name=$1 lm=$2; shift 2
  timeout -k 10 "$hang_guard" "$bin" run --local-mem "$lm" --stats-json "$dir/$name.json" "$@" \
    >"$dir/$name.comex" 2>"$dir/$name.err"
}

# stats_ok NAME [budget]: the stats file has every required counter as an
# integer and shows remote traffic; with "budget", resident_peak_bytes stays
# within local_mem_bytes (not for programs that fork: a fork brings every page home).
stats_ok() {
  python3 - "$dir/$1.json" "${2:-}" <<'PY'
import json, sys
try:
    s = json.load(open(sys.argv[1]))
except Exception as e:
    print("stats file unreadable: %s" % e); sys.exit(1)
keys = ["faults_zero", "faults_wbuf_hit", "faults_rbuf_hit", "faults_remote", "pages_evicted", "pages_written",
        "pages_dropped_clean", "bytes_read", "bytes_written", "resident_peak_bytes", "local_mem_bytes"]
bad = [k for k in keys if not isinstance(s.get(k), int) or isinstance(s.get(k), bool)]
if bad:
    print("stats lack integer counters: %s" % bad); sys.exit(1)
if s["faults_remote"] <= 0 or s["pages_evicted"] <= 0 or s["bytes_read"] <= 0 or s["bytes_written"] <= 0:
    print("no remote traffic: faults_remote=%d pages_evicted=%d bytes_read=%d bytes_written=%d"
          % (s["faults_remote"], s["pages_evicted"], s["bytes_read"], s["bytes_written"])); sys.exit(1)
if sys.argv[2] == "budget" and s["resident_peak_bytes"] > s["local_mem_bytes"]:
    print("resident_peak_bytes %d > local_mem_bytes %d" % (s["resident_peak_bytes"], s["local_mem_bytes"])); sys.exit(1)
print("faults_remote=%d faults_rbuf_hit=%d pages_evicted=%d resident_peak=%dK local_mem=%dK"
      % (s["faults_remote"], s["faults_rbuf_hit"], s["pages_evicted"], s["resident_peak_bytes"] >> 10,
         s["local_mem_bytes"] >> 10))
PY
}

# stats_get NAME KEY: a counter from the program's --stats-json ($dir/NAME.json)
stats_get() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$dir/$1.json" "$2"; }

# want NAME: false when COMEX_TEST_ONLY (names separated by spaces) leaves NAME out.
want() { [ -z "${COMEX_TEST_ONLY:-}" ] || [[ " $COMEX_TEST_ONLY " == *" $1 "* ]]; }

# compare NAME LOCALMEM [budget] [comex options...] -- CMD...: the whole check
# for one program: native reference, run under comex, same output, stats.
# LOCALMEM "quarter" means 25 % of the native peak RSS.
compare() {
  local name=$1 lm=$2 budget=""; shift 2
  want "$name" || return 0
  if [ "${1:-}" = budget ]; then budget=budget; shift; fi
  local opts=()
  while [ "$1" != -- ]; do opts+=("$1"); shift; done
  shift
  if ! native "$name" "$@" <"${stdin:-/dev/null}"; then
    fail "$name" "native run failed: $*"; sed 's/^/    /' "$dir/$name.native-err" | tail -n 5; return
  fi
  [ "$lm" = quarter ] && lm="$((peak_kib / 4))K"
  local rc=0 t0=$SECONDS
  under_comex "$name" "$lm" "${opts[@]}" -- "$@" <"${stdin:-/dev/null}" || rc=$?
  if [ $rc -ne 0 ]; then
    [ $rc -eq 124 ] && fail "$name" "hung under comex run (no exit after ${hang_guard}s)" \
                    || fail "$name" "exit status $rc under comex run (0 natively)"
    # the runtime's own errors first (the memnode's log, printed after them, can be long)
    grep -E "^comex: (error|warning)" "$dir/$name.err" | head -n 5 | sed 's/^/    /'
    sed 's/^/    /' "$dir/$name.err" | tail -n 8
    return
  fi
  if ! cmp -s "$dir/$name.native" "$dir/$name.comex"; then
    fail "$name" "output differs from the native run"
    diff "$dir/$name.native" "$dir/$name.comex" | head -n 6 | sed 's/^/    /'
    return
  fi
  local st
  if ! st=$(stats_ok "$name" "$budget"); then fail "$name" "$st"; return; fi
  echo "ok: $name (native peak ${peak_kib}K, --local-mem $lm, $((SECONDS - t0))s): $st"
}

# memnode_start: starts a memnode (pool 256 MiB) on a free loopback port with
# the token $dir/token, made here if missing; sets mn_pid and mn_port.
memnode_start() {
  [ -s "$dir/token" ] || "$bin" token "$dir/token" >/dev/null || { fail token "comex token"; return 1; }
  : >"$dir/memnode.err"
  "$bin" memnode --listen 127.0.0.1:0 --pool 256M --token-file "$dir/token" 2>"$dir/memnode.err" &
  mn_pid=$!; pids+=("$mn_pid"); mn_port=
  for _ in $(seq 1 300); do
    mn_port=$(sed -n 's/.* on port \([0-9][0-9]*\).*/\1/p' "$dir/memnode.err" | head -n 1)
    [ -n "$mn_port" ] && return 0
    kill -0 "$mn_pid" 2>/dev/null || break
    sleep 0.1
  done
  fail memnode "memnode did not start: $(tail -n 2 "$dir/memnode.err")"; return 1
}
