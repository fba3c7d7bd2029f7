#!/usr/bin/env bash
# make demo: start a local memnode, push pages through it with `comex check`,
# and show what it reports. (The pager demo, a real program with capped local
# memory, arrives with `comex run`.)
set -euo pipefail
build=${1:-build}
bin="$build/comex"
dir=$(mktemp -d /tmp/comex-demo.XXXXXX)
trap 'kill $mn 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$dir"' EXIT

"$bin" token "$dir/token" >/dev/null
"$bin" memnode --listen 127.0.0.1:0 --pool 256M --token-file "$dir/token" 2>"$dir/memnode.log" &
mn=$!
for _ in $(seq 300); do
  port=$(sed -n 's/.* on port \([0-9]*\).*/\1/p' "$dir/memnode.log")
  [ -n "$port" ] && break
  kill -0 $mn 2>/dev/null || { cat "$dir/memnode.log"; exit 1; }
  sleep 0.1
done
echo "== memnode: $(grep 'on port' "$dir/memnode.log" | sed 's/^comex-memnode: info: //')"
echo "== comex check: 40000 pages (156 MiB) through the validated data path over UCX"
"$bin" check --memnode "127.0.0.1:$port" --token-file "$dir/token" 40000
