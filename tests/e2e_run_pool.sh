#!/usr/bin/env bash
# e2e_run_pool: comex run without --memnode grows its embedded memnode's pool with the program: prog_mt (200 MiB) at 25 % evicts ~150 MiB into an embedded pool that starts at 16 MiB, same output as natively, no budget overshoot; the same run with a fixed 16 MiB pool overshoots, with the warning and the counter (so the first run's pool did grow).
. "${COMEX_SRC:?}/tests/progs/lib.sh"
echo "e2e_run_pool: prog_mt 200 at --local-mem 56M with embedded-pool auto from 16M, then fixed 16M"

compare grow 56M budget --embedded-pool-start 16M -- "$progs/prog_mt" 200
if want grow && [ -s "$dir/grow.json" ]; then
  python3 - "$dir/grow.json" <<'PY' || fail grow "the pool did not grow (see above)"
import json, sys
s = json.load(open(sys.argv[1]))
evicted = s["pages_evicted"] * 4096
if s["budget_overshoots"] != 0 or evicted <= 16 << 20:
    print("budget_overshoots=%d evicted=%d MiB" % (s["budget_overshoots"], evicted >> 20)); sys.exit(1)
PY
fi

# The fixed pool that used to be the default: full, so pages stay resident
# beyond the budget, with a warning; the output is still right.
if want fixed; then
  native fixed "$progs/prog_mt" 200 || fail fixed "native run failed"
  if ! under_comex fixed 56M --embedded-pool 16M -- "$progs/prog_mt" 200; then
    fail fixed "exit status $? under comex run"
  elif ! cmp -s "$dir/fixed.native" "$dir/fixed.comex"; then
    fail fixed "output differs from the native run"
  elif ! grep -q "every memnode is full" "$dir/fixed.err"; then
    fail fixed "no warning that the memnode is full"; tail -n 5 "$dir/fixed.err"
  elif ! python3 -c 'import json,sys; sys.exit(json.load(open(sys.argv[1]))["budget_overshoots"] == 0)' \
         "$dir/fixed.json"; then
    fail fixed "budget_overshoots is 0 with a full fixed pool"
  else
    echo "ok: fixed (16 MiB pool full: warned, budget_overshoots counted)"
  fi
fi
finish
