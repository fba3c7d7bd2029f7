#!/usr/bin/env bash
# e2e_run_integrity: a memnode that answers every N-th READ with one byte changed (test hook test-corrupt-reads, set as COMEX_TEST_CORRUPT_READS) is caught by the page checksum: replicas 2 read the other copy, backup-dir reads the file, replicas 1 without backup stops the program naming the page; frames changed in the embedded memnode's pool file, which the program reads in place, stop it the same way; outputs identical or none.
. "${COMEX_SRC:?}/tests/progs/lib.sh"
. "$src/tests/progs/memnodes.sh"
echo "e2e_run_integrity: one memnode corrupting every ${COMEX_TEST_CORRUPT_EVERY:-20}-th READ; replicas 2, replicas 1 + backup-dir, replicas 1 alone; frames changed in the embedded pool file"
pybuild_job 80000 # job, its native output, lm: 25 % of its native peak
# The hook's N: small enough that a run of tens of thousands of reads gets
# hundreds of changed pages, large enough that most reads are good.
every=${COMEX_TEST_CORRUPT_EVERY:-20}

# run_job NAME MEMNODES [comex options]: the job under comex run against
# MEMNODES (--memnode's value); its exit status
run_job() {
  local name=$1 mns=$2; shift 2
  under_comex "$name" "$lm" --memnode "$mns" --token-file "$dir/token" "$@" -- "${job[@]}"
}
# counters NAME KEY...: "KEY=VALUE ..." from the run's --stats-json
counters() {
  python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); print(" ".join("%s=%d" % (k, s[k]) for k in sys.argv[2:]))' \
    "$dir/$1.json" "${@:2}" 2>/dev/null || echo "stats unreadable"
}
# positive NAME KEY...: every KEY of the run's stats is > 0
positive() {
  python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); sys.exit(any(s[k] <= 0 for k in sys.argv[2:]))' \
    "$dir/$1.json" "${@:2}" 2>/dev/null
}
# identical NAME RC KEY...: exit 0, the native output, every KEY > 0
identical() {
  local name=$1 rc=$2; shift 2
  if [ "$rc" -ne 0 ]; then
    fail "$name" "exit status $rc: $(grep -E '^comex: (error|warning)' "$dir/$name.err" | head -n 3)"
  elif ! cmp -s "$dir/job.native" "$dir/$name.comex"; then
    fail "$name" "output differs from the native run"; diff "$dir/job.native" "$dir/$name.comex" | head -n 4
  elif ! positive "$name" "$@"; then
    fail "$name" "$(counters "$name" "$@") (each > 0 expected)"
  else
    echo "ok: $name: output identical, $(counters "$name" "$@")"
  fi
}
stop_memnodes() {
  for v in pid_a pid_b; do [ -n "${!v:-}" ] && { kill -KILL "${!v}"; wait "${!v}"; } 2>/dev/null; done
  unset pid_a pid_b
}

# 0. The hook refuses a value that is not a count, naming it.
if want badvalue; then
  rc=0; COMEX_TEST_CORRUPT_READS=x timeout 20 "$bin" memnode --listen 127.0.0.1:0 --token-file "$dir/token" \
    2>"$dir/badvalue.log" || rc=$?
  if [ $rc -eq 0 ] || ! grep -q "option test-corrupt-reads (from environment): 'x'" "$dir/badvalue.log"; then
    fail badvalue "exit $rc: $(tail -n 2 "$dir/badvalue.log")"
  else
    echo "ok: badvalue: $(grep -m1 test-corrupt-reads "$dir/badvalue.log")"
  fi
fi

# 1. replicas 2 on two memnodes, a corrupting: the default placement
# (weighted) puts first copies on both, so a gets reads; each page it
# changes is read from its copy on b (which never changes one).
if want replicas; then
  COMEX_TEST_CORRUPT_READS=$every mn_start a --pool 256M && mn_start b --pool 256M && {
    rc=0; run_job replicas "127.0.0.1:$port_a,127.0.0.1:$port_b" --replicas 2 || rc=$?
    identical replicas $rc pages_corrupt pages_failed_over
  }
  stop_memnodes
fi

# 2. replicas 1 with backup-dir, the only memnode corrupting: the changed
# pages are read back from the backup file.
if want backup; then
  mkdir -p "$dir/backup"
  COMEX_TEST_CORRUPT_READS=$every mn_start a --pool 256M && {
    rc=0; run_job backup "127.0.0.1:$port_a" --backup-dir "$dir/backup" || rc=$?
    identical backup $rc pages_corrupt pages_backup_read
  }
  stop_memnodes
fi

# 3. replicas 1, no backup: the first changed page stops the program with a
# message naming it; whatever it printed before is a prefix of the native
# output (pybuild.py prints only at its end: nothing).
if want stop; then
  COMEX_TEST_CORRUPT_READS=$every mn_start a --pool 256M && {
    rc=0; run_job stop "127.0.0.1:$port_a" || rc=$?
    msg=$(grep -m1 -E "^comex: error: .*checksum mismatch.*page 0x[0-9a-f]+" "$dir/stop.err")
    out=$(wc -c <"$dir/stop.comex")
    if [ $rc -eq 0 ] || [ $rc -eq 124 ]; then
      fail stop "exit status $rc (the program should have been stopped): $(grep -E '^comex: (error|warning)' "$dir/stop.err" | head -n 3)"
    elif [ -z "$msg" ]; then
      fail stop "exit $rc without a checksum mismatch naming the page: $(grep -E '^comex: (error|warning)' "$dir/stop.err" | head -n 3)"
    elif ! head -c "$out" "$dir/job.native" | cmp -s - "$dir/stop.comex" || [ "$out" -ge "$(wc -c <"$dir/job.native")" ]; then
      fail stop "the stopped program printed output that is not a strict prefix of the native one"
    elif ! positive stop pages_corrupt; then
      fail stop "$(counters stop pages_corrupt) (> 0 expected)"
    else
      echo "ok: stop: exit $rc, ${out} bytes of output, $(counters stop pages_corrupt): ${msg#comex: error: }"
    fi
  }
  stop_memnodes
fi

# 4. the embedded memnode, whose pool the program maps and maps pages from
# in place (D38): prog_gate fills 48 MiB at 12M local and waits; every frame
# in the pool file then gets one byte changed; let go, the program reads its
# pages back and is stopped at the first one, named, without output.
if want inplace; then
  gate=$progs/prog_gate
  timeout -k 10 "$hang_guard" "$bin" run --local-mem 12M --embedded-pool 96M --stats-json "$dir/inplace.json" \
    -- "$gate" 48 "$dir/inplace.gate" idle >"$dir/inplace.comex" 2>"$dir/inplace.err" &
  job_pid=$!
  for _ in $(seq 600); do grep -q filled "$dir/inplace.comex" 2>/dev/null && break; sleep 0.05; done
  prog=$(pgrep -n -f "prog_gate 48 $dir/inplace.gate" || true)
  pool=$(tr '\0' '\n' <"/proc/${prog:-0}/environ" 2>/dev/null | sed -n 's/^COMEX_POOL_FILE=\(.*\)@.*/\1/p')
  changed=$(python3 - "$pool" <<'PY' 2>&1
import os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
n, size = 0, os.fstat(fd).st_size
for off in range(0, size, 4096):
    page = os.pread(fd, 4096, off)
    if page.count(0) != 4096:      # a frame holding a page: one byte changed
        os.pwrite(fd, bytes([page[100] ^ 0x5a]), off + 100)
        n += 1
print(n)
PY
  ) || changed="error: $changed"
  touch "$dir/inplace.gate"
  rc=0; wait "$job_pid" || rc=$?
  msg=$(grep -m1 -E "^comex: error: .*checksum mismatch.*page 0x[0-9a-f]+" "$dir/inplace.err")
  if ! [ "${changed:-0}" -gt 0 ] 2>/dev/null; then
    fail inplace "no frame changed in the pool file (${pool:-not found}): $changed"
  elif [ $rc -eq 0 ] || [ $rc -eq 124 ] || [ -z "$msg" ]; then
    fail inplace "exit status $rc, no checksum mismatch naming a page: $(grep -E '^comex: (error|warning)' "$dir/inplace.err" | head -n 3)"
  elif grep -qv '^filled$' "$dir/inplace.comex"; then
    fail inplace "the stopped program printed more than 'filled': $(head -c 200 "$dir/inplace.comex")"
  elif ! positive inplace pages_corrupt; then
    fail inplace "$(counters inplace pages_corrupt) (> 0 expected)"
  else
    echo "ok: inplace: $changed frames changed, exit $rc, $(counters inplace pages_corrupt): ${msg#comex: error: }"
  fi
fi
finish
