#!/usr/bin/env bash
# e2e_readme: README.md's command blocks run as a reader would run them, on a clean state. Each block the test runs is marked `<!-- readme-test: NAME -->` just before its ```sh fence (a marked block missing fails the test); its commands (continuation lines joined, comments dropped) run in the order memnode, run, watch, swap, with the placeholders filled in (/etc/comex -> a directory not made yet, mem1:7300 and mem2:7300 -> two memnodes started by the block's own memnode line, sizes made small, ./their_program -> a Python program, /dev/loop0 -> the device swap up printed; swap-dir's parent absent, HOME and XDG dirs absent). Each command's exit status and output are checked: token writes a 0600 file, check passes, run prints what the program prints natively and writes its --stats-json, status shows both memnodes up, swap up prints a loop device that swap status lists with 2 copies and swap down removes; a command the test does not know fails it. The memnodes' logs must show no error and no connection ended by a timeout (the launcher's check says goodbye). Root only.
set -u
build=${COMEX_BUILD:?}; bin=${COMEX_BIN:?}; src=${COMEX_SRC:?}
py=/usr/bin/python3
[ "$(id -u)" -eq 0 ] || { echo "skip: the README's commands are run as root"; exit 77; }
if grep -q "COMEX_SANITIZE:BOOL=ON" "$build/CMakeCache.txt" 2>/dev/null; then
  echo "skip: the preloaded runtime is not built in the sanitizer build"; exit 77
fi
[ -w /dev/fuse ] || { echo "skip: no /dev/fuse (comex swap)"; exit 77; }
for c in losetup mkswap swapon swapoff; do
  command -v "$c" >/dev/null || { echo "skip: $c is not installed (comex swap)"; exit 77; }
done

tmp=$(mktemp -d /tmp/comex-e2e-readme.XXXXXX)
blocks="memnode run watch swap" # run in this order: memnodes first, swap last
# a clean state: none of these directories exists yet
etc=$tmp/etc
export HOME=$tmp/home XDG_CONFIG_HOME=$tmp/home/.config XDG_RUNTIME_DIR=$tmp/run/user
export COMEX_SWAP_DIR=$tmp/run/comex/swap # the default /run/comex/swap, off the host's
mkdir "$tmp/bin" && ln -s "$bin" "$tmp/bin/comex" && export PATH=$tmp/bin:$PATH
memnodes=() device=
cleanup() {
  if [ -n "$device" ]; then
    comex swap down "$device" >/dev/null 2>&1 || { swapoff "$device"; losetup -d "$device"; } 2>/dev/null
  fi
  for p in "${memnodes[@]}"; do kill -TERM "$p" 2>/dev/null; done
  for p in "${memnodes[@]}"; do wait "$p" 2>/dev/null; done
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*"
  for f in "$tmp"/*.log "$tmp"/*.err; do [ -s "$f" ] && { echo "== $f"; tail -n 15 "$f"; }; done
  exit 1
}

# The marked blocks of README.md as lines "NAME<TAB>cmd<TAB>COMMAND" and
# "NAME<TAB>out<TAB>TEXT" (a line of output the README shows)
$py - "$src/README.md" $blocks >"$tmp/blocks" <<'PY' || exit 1
import re, sys
text = open(sys.argv[1]).read().splitlines()
found = {}
i = 0
while i < len(text):
    m = re.match(r"\s*<!--\s*readme-test:\s*([\w-]+)", text[i])
    i += 1
    if not m:
        continue
    while i < len(text) and not text[i].strip():
        i += 1
    if i >= len(text) or not text[i].startswith("```sh"):
        sys.exit(f"FAIL: README.md: the readme-test marker {m.group(1)} is not followed by a ```sh block")
    lines, i = [], i + 1
    while i < len(text) and not text[i].startswith("```"):
        lines.append(text[i])
        i += 1
    cmds, cont = [], False
    for line in lines:
        line = re.sub(r"(^|\s)#.*$", "", line).rstrip()  # a comment (no command here quotes a #)
        if not line:
            cont = False
            continue
        joined = line.endswith("\\")
        line = line.rstrip("\\").strip()
        if cont:
            cmds[-1][1] += " " + line
        else:
            cmds.append(["cmd" if re.match(r"(comex|make)\b", line) else "out", line])
        cont = joined
    found[m.group(1)] = cmds
missing = [b for b in sys.argv[2:] if b not in found]
if missing:
    sys.exit(f"FAIL: README.md has no block marked <!-- readme-test: {missing[0]} --> (blocks marked: {sorted(found)})")
for b in sys.argv[2:]:
    for kind, line in found[b]:
        print(f"{b}\t{kind}\t{line}")
PY

# the program of `comex run`: 96 MiB that does not compress, and its hash
cat >"$tmp/prog.py" <<'PY'
import hashlib, random
r = random.Random(7)
blocks = [r.randbytes(1 << 20) for _ in range(96)]
h = hashlib.sha256()
for b in blocks:
    h.update(b)
print(h.hexdigest())
PY
$py "$tmp/prog.py" >"$tmp/native.out" || fail "the program does not run natively"
free_port() { $py -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
p1=$(free_port) p2=$(free_port)
while [ "$p2" = "$p1" ]; do p2=$(free_port); done

# Fills the README's placeholders in command $1 (port $2 for a memnode's listen address)
fill() {
  sed -e "s|/etc/comex/|$etc/comex/|g" -e "s|mem1:7300|127.0.0.1:$p1|g" -e "s|mem2:7300|127.0.0.1:$p2|g" \
      -e "s|0\.0\.0\.0:7300|127.0.0.1:${2:-0}|g" -e "s|--pool [0-9]*G\b|--pool 192M|g" \
      -e "s|--size [0-9]*G\b|--size 64M|g" -e "s|--local-mem [0-9]*G\b|--local-mem 32M|g" \
      -e "s|\./their_program|$py $tmp/prog.py|g" -e "s| stats\.json | $tmp/stats.json |g" \
      -e "s|/dev/loop0|${device:-/dev/loop0}|g" <<<"$1"
}
n=0
# run_cmd BLOCK COMMAND: runs one README command and checks what it did
run_cmd() {
  local block=$1 cmd=$2 c out rc
  n=$((n + 1))
  case "$cmd" in
    "comex token "*)
      c=$(fill "$cmd"); out=$(eval "$c" 2>"$tmp/$n.err") || fail "[$block] $c: exit $?"
      local f=${c##* }
      [ "$(stat -c %a "$f" 2>/dev/null)" = 600 ] || fail "[$block] $c: no 0600 token file $f ($out)" ;;
    "comex memnode "*--metrics-listen*)
      echo "not run: $cmd (Prometheus endpoint: e2e_ops)"; return ;;
    "comex memnode "*)
      for port in $p1 $p2; do # mem1 and mem2
        c=$(fill "$cmd" $port)
        eval "exec $c" 2>"$tmp/memnode-$port.log" & memnodes+=($!)
        until grep -q "on port $port" "$tmp/memnode-$port.log" 2>/dev/null; do
          kill -0 $! 2>/dev/null || fail "[$block] $c: the memnode exited"
          sleep 0.05
        done
        echo "ok: [$block] $c"
      done
      return ;;
    "comex check "*)
      c=$(fill "$cmd"); out=$(eval "$c" 2>"$tmp/$n.err") || fail "[$block] $c: exit $?: $out"
      grep -q "^check passed" <<<"$out" || fail "[$block] $c: $out" ;;
    "comex run "*)
      c=$(fill "$cmd")
      rm -f "$tmp/stats.json"
      out=$(eval "timeout -k 10 300 $c" 2>"$tmp/$n.err") || fail "[$block] $c: exit $?"
      [ "$out" = "$(cat "$tmp/native.out")" ] || fail "[$block] $c: printed '$out', natively '$(cat "$tmp/native.out")'"
      if [[ $c == *--stats-json* ]]; then
        $py -c 'import json, sys; assert json.load(open(sys.argv[1]))["schema"] == "comex-stats/1"' "$tmp/stats.json" \
          || fail "[$block] $c: no --stats-json written"
      fi ;;
    "comex stats PID"* | "comex home PID"*)
      echo "not run: $cmd (a running program's PID: e2e_run_tools)"; return ;;
    "comex status "*)
      c=$(fill "$cmd"); out=$(eval "$c" 2>"$tmp/$n.err") || fail "[$block] $c: exit $?: $out"
      for port in $p1 $p2; do
        grep -q "^127.0.0.1:$port .* up " <<<"$out" || fail "[$block] $c: 127.0.0.1:$port is not up: $out"
      done ;;
    "comex swap up "*)
      c=$(fill "$cmd"); out=$(eval "$c" 2>"$tmp/$n.err") || fail "[$block] $c: exit $?"
      device=$(tail -n 1 <<<"$out")
      swapon --show=NAME --noheadings | grep -qx "$device" || fail "[$block] $c: printed '$out', no active swap device" ;;
    "comex swap status"*)
      c=$(fill "$cmd"); out=$(eval "$c" 2>"$tmp/$n.err") || fail "[$block] $c: exit $?"
      if [ -n "$device" ]; then
        [ "$(awk -v d="$device" '$2 == d { print $6 }' <<<"$out")" = 2 ] ||
          fail "[$block] $c: no row for $device with 2 copies: $out"
      fi ;;
    "comex swap down "*)
      c=$(fill "$cmd"); out=$(eval "$c" 2>"$tmp/$n.err") || fail "[$block] $c: exit $?"
      swapon --show=NAME --noheadings | grep -qx "$device" && fail "[$block] $c: $device still swaps"
      [ "$(comex swap status | wc -l)" -eq 1 ] || fail "[$block] $c: swap status still lists a device"
      device= ;;
    "comex top"* | "comex exporter"* | "make "*)
      echo "not run: $cmd (e2e_ops, e2e_install)"; return ;;
    *)
      fail "[$block] README.md runs '$cmd', which tests/e2e_readme.sh does not know how to run and check: teach it" ;;
  esac
  echo "ok: [$block] $c"
}

for block in $blocks; do
  last=
  while IFS=$'\t' read -r b kind line; do
    [ "$b" = "$block" ] || continue
    if [ "$kind" = cmd ]; then
      run_cmd "$block" "$line"; last=$line
    else # output the README shows for the command before
      case "$last:$line" in
        "comex swap up "*:/dev/loop0) [[ $device == /dev/loop[0-9]* ]] || fail "[$block] swap up printed '$device', not a loop device" ;;
        *) fail "[$block] README.md shows '$line' after '$last': tests/e2e_readme.sh does not know what to check" ;;
      esac
    fi
  done <"$tmp/blocks"
done
[ ${#memnodes[@]} -eq 2 ] || fail "no memnode was started by the README's blocks"

# the memnodes saw every client say goodbye or go, and nothing failed
for port in $p1 $p2; do
  if grep -E "error|timed out" "$tmp/memnode-$port.log"; then
    fail "memnode 127.0.0.1:$port logged the lines above"
  fi
done
echo "ok: the memnodes' logs have no error and no connection that timed out"
