#!/usr/bin/env bash
# e2e_run_smoke: a Python program at 25 % of its footprint under comex run prints what it prints natively, with remote traffic.
set -euo pipefail
build=${COMEX_BUILD:?}; bin=${COMEX_BIN:?}; src=${COMEX_SRC:?}
if grep -q "COMEX_SANITIZE:BOOL=ON" "$build/CMakeCache.txt"; then
  echo "skip: the preloaded runtime is not built in the sanitizer build"; exit 77
fi
[ -x /usr/bin/python3 ] || { echo "skip: no /usr/bin/python3"; exit 77; }
dir=$(mktemp -d /tmp/comex-e2e-run.XXXXXX)
trap 'rm -rf "$dir"' EXIT
/usr/bin/python3 "$src/scripts/demo_prog.py" 200000 >"$dir/native.out" 2>/dev/null
"$bin" run --local-mem 16M --stats-json "$dir/stats.json" -- \
  /usr/bin/python3 "$src/scripts/demo_prog.py" 200000 >"$dir/comex.out"
cmp "$dir/native.out" "$dir/comex.out"
python3 - "$dir/stats.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
assert s["faults_remote"] > 0 and s["pages_written"] > 0, s
assert s["resident_peak_bytes"] <= s["local_mem_bytes"], s
print("ok: faults_remote=%d pages_evicted=%d" % (s["faults_remote"], s["pages_evicted"]))
PY
# A static program is refused with a clear message, not run unmanaged.
if command -v busybox >/dev/null && ! ldd "$(command -v busybox)" >/dev/null 2>&1; then
  if "$bin" run --local-mem 16M -- busybox true 2>"$dir/err"; then echo "static binary was not refused"; exit 1; fi
  grep -q "statically linked" "$dir/err"
fi
