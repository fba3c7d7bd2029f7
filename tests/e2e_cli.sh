#!/usr/bin/env bash
# CLI contract: generated docs current, bad options named, commands' own flags parsed and their usage taken from the command table, token rules, refusal to run open on a public address.
set -u
bin=${COMEX_BIN:?}; src=${COMEX_SRC:?}
dir=$(mktemp -d /tmp/comex-cli.XXXXXX); trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$bin" help-options --markdown | diff -u "$src/docs/OPTIONS.md" - >/dev/null \
  || fail "docs/OPTIONS.md is stale: run 'build/comex help-options --markdown > docs/OPTIONS.md'"

# --help: a usage line and the essentials; the tuning knobs only with --help all (issue 11 item 8)
out=$("$bin" run --help) || fail "comex run --help failed"
grep -q "^usage: comex run \[OPTIONS\] -- PROGRAM" <<<"$out" || fail "run --help has no usage line: $out"
for o in local-mem memnode token-file stats-json; do
  grep -q -- "--$o " <<<"$out" || fail "run --help lacks --$o"
done
grep -q -- "--evict-batch" <<<"$out" && fail "run --help shows the tuning knobs (--evict-batch)"
grep -q "comex run --help all" <<<"$out" || fail "run --help does not say where the other options are"
[ "$(wc -l <<<"$out")" -le 15 ] || fail "run --help is $(wc -l <<<"$out") lines"
all=$("$bin" run --help all) || fail "comex run --help all failed"
n=$("$bin" help-options --markdown | grep -c '| [^|]*run[^|]* | [^|]*|$')
[ "$(grep -c '^  --' <<<"$all")" -eq "$n" ] || fail "run --help all lists $(grep -c '^  --' <<<"$all") options, the table $n"
grep -q -- "--evict-batch" <<<"$all" || fail "run --help all lacks --evict-batch"
out=$("$bin" memnode --help) || fail "comex memnode --help failed"
grep -q -- "--pool " <<<"$out" && grep -q -- "--listen " <<<"$out" || fail "memnode --help lacks --pool/--listen"
grep -q -- "--idle-spin" <<<"$out" && fail "memnode --help shows --idle-spin"
"$bin" memnode --help all | grep -q -- "--idle-spin" || fail "memnode --help all lacks --idle-spin"

out=$("$bin" memnode --pool lots 2>&1) && fail "bad size accepted"
grep -q "option pool (from command line): 'lots' is not a size" <<<"$out" || fail "bad size message: $out"
# "--flag false" is the flag's value, not the first non-option (a program for comex run)
out=$("$bin" memnode --mlock false --pool lots 2>&1) && fail "bad size after a boolean accepted"
grep -q "option pool (from command line): 'lots'" <<<"$out" || fail "boolean flag took no value: $out"
out=$(COMEX_IDLE_SPIN=fast "$bin" memnode 2>&1) && fail "bad env accepted"
grep -q "option idle-spin (from environment)" <<<"$out" || fail "env error does not name the option: $out"
printf 'pool = 1G\nbogus = 1\n' >"$dir/bad.conf"
out=$("$bin" memnode --config "$dir/bad.conf" 2>&1) && fail "unknown config key accepted"
grep -q "unknown option 'bogus' (from $dir/bad.conf)" <<<"$out" || fail "config error: $out"
out=$("$bin" memnode --no-such-flag 1 2>&1) && fail "unknown flag accepted"
grep -q "unknown option --no-such-flag" <<<"$out" || fail "flag error: $out"

out=$("$bin" memnode --pool 4M 2>&1) && fail "memnode without token started"
grep -q "no cluster token" <<<"$out" || fail "no-token message: $out"
out=$("$bin" memnode --pool 4M --allow-no-token --listen 0.0.0.0:0 2>&1) && fail "open memnode on a public address started"
grep -q "refusing to listen on 0.0.0.0:0 without a token" <<<"$out" || fail "public no-token message: $out"

# commands' own flags (the command table's): anywhere, --flag=value too; a
# wrong one gets the table's usage line (the one comex --help shows), exit 2
table_usage() { "$bin" --help | grep -A0 "^  $1 " | sed "s/^  $1  */usage: comex $1 /"; }
for c in top exporter home; do
  out=$("$bin" $c --bogus-flag 2>&1); rc=$?
  [ $rc -eq 2 ] && grep -qxF "$(table_usage $c)" <<<"$out" || fail "$c --bogus-flag: exit $rc, not the table's usage: $out"
done
out=$("$bin" top --interval 2>&1) && fail "top --interval without a value accepted"
grep -q "top: --interval takes SECONDS" <<<"$out" || fail "top --interval without a value: $out"
out=$("$bin" top --interval=0.01 2>&1) && fail "top --interval=0.01 accepted"
grep -q "top: --interval takes seconds, 0.1 to 3600, got '0.01'" <<<"$out" || fail "top --interval=0.01: $out"
"$bin" top --interval=0.1 --once >/dev/null || fail "top --interval=0.1 --once"
out=$("$bin" status --interval 0 extra 2>&1) && fail "status with an argument accepted"
grep -q "unexpected argument 'extra'" <<<"$out" && grep -qxF "$(table_usage status)" <<<"$out" || fail "status argument: $out"
[ "$("$bin" swap status --json --swap-dir "$dir/none")" = "[]" ] || fail "swap status --json before an option"
out=$("$bin" swap up --json 2>&1) && fail "swap up --json accepted"
grep -qxF "$(table_usage swap)" <<<"$out" || fail "swap up --json: $out"

"$bin" token "$dir/tok" >/dev/null || fail "token generation"
[ "$(stat -c %a "$dir/tok")" = 600 ] || fail "token mode is not 0600"
"$bin" token "$dir/new/comex/tok" >/dev/null || fail "token in a directory not made yet (/etc/comex on a fresh machine)"
[ "$(stat -c %a "$dir/new/comex/tok")" = 600 ] || fail "token in a new directory: mode is not 0600"
"$bin" token "$dir/tok" >/dev/null 2>&1 && fail "token overwrote an existing file"
chmod 644 "$dir/tok"
out=$("$bin" memnode --pool 4M --token-file "$dir/tok" 2>&1) && fail "world-readable token accepted"
grep -q "chmod 600" <<<"$out" || fail "token permission message does not say how to fix: $out"
grep -q "$(head -c 16 "$dir/tok")" <<<"$out" && fail "token content leaked into the log"
out=$("$bin" memnode --pool 4M --data-path magic --allow-no-token 2>&1) && fail "bad data-path accepted"
grep -q "option data-path" <<<"$out" || fail "data-path message: $out"
echo "e2e_cli: ok"
