# Sourced after lib.sh and memcg.sh by the comex swap tests (e2e_swap*.sh):
# what they need (else skip), a memory cgroup whose overflow may swap, the
# device's counters, a program run in the cgroup against its native output,
# and a cleanup of whatever a failed run left attached.
[ "$(id -u)" -eq 0 ] || { echo "skip: comex swap needs root"; exit 77; }
[ -w /dev/fuse ] || { echo "skip: no /dev/fuse"; exit 77; }
for c in losetup mkswap swapon swapoff; do
  command -v "$c" >/dev/null || { echo "skip: $c is not installed"; exit 77; }
done
swapdir=$dir/swap
device=

# swap_memcg TAG: memcg_make with swap allowed (memcg_make turns it off)
swap_memcg() {
  memcg_make "$1" 64M
  [ -f "$cg/memory.swappiness" ] && echo 60 >"$cg/memory.swappiness"
  [ -f "$cg/memory.swap.max" ] && echo max >"$cg/memory.swap.max"
  trap 'swap_cleanup; memcg_remove; cleanup' EXIT
}
swap_cleanup() { # whatever a failed run left attached
  [ -n "$device" ] && { swapoff "$device" 2>/dev/null; losetup -d "$device" 2>/dev/null; }
  for f in "$swapdir"/*.dev; do [ -e "$f" ] && umount -l "$f" 2>/dev/null; done
  for f in "$swapdir"/*.pid; do [ -f "$f" ] && kill -KILL "$(cat "$f")" 2>/dev/null; done
}

# swap_up ARGS...: comex swap up ARGS; sets device (the last line it
# printed) and checks that swapon lists it; false (a failure recorded) else
swap_up() {
  "$bin" swap up --swap-dir "$swapdir" "$@" >"$dir/up.out" 2>"$dir/up.err" ||
    { fail up "$(tail -n 5 "$dir/up.err")"; return 1; }
  device=$(tail -n 1 "$dir/up.out")
  if ! swapon --show=NAME --noheadings | grep -qx "$device"; then
    fail up "the device '$device' printed by up is not an active swap device"; return 1
  fi
  echo "ok: up: $device, $(swapon --show=NAME,SIZE,PRIO --noheadings | grep "^$device")"
  local transport; transport=$(counter transport)
  case "${COMEX_SWAP_URING:-auto}:$transport" in
    on:uring | off:read | auto:uring | auto:read) echo "ok: transport: FUSE requests by $transport (swap-uring ${COMEX_SWAP_URING:-auto})" ;;
    *) fail transport "comex swap status says transport '$transport' with swap-uring ${COMEX_SWAP_URING:-auto}"; return 1 ;;
  esac
}

# counter KEY: the device's counter from comex swap status --json
counter() {
  "$bin" swap status --swap-dir "$swapdir" --json |
    python3 -c 'import json,sys; d=json.load(sys.stdin); print(d[0][sys.argv[1]] if d else -1)' "$1"
}

# swapped NAME LIMIT CMD...: native, then in the cgroup at LIMIT; outputs
# equal, and pages went to the device
swapped() {
  local name=$1 limit=$2 before after; shift 2
  native "$name" "$@" || { fail "$name" "native run failed"; return; }
  echo "$limit" >"$cg/$limit_file"
  before=$(counter bytes_written)
  in_memcg "$@" >"$dir/$name.swap" 2>"$dir/$name.swap-err" || { fail "$name" "exit $? in the cgroup: $(tail -n 2 "$dir/$name.swap-err")"; return; }
  after=$(counter bytes_written)
  if ! cmp -s "$dir/$name.native" "$dir/$name.swap"; then
    fail "$name" "output differs from the run without a limit"
  elif [ "$after" -le "$before" ]; then
    fail "$name" "nothing was written to $device ($before -> $after bytes)"
  else
    echo "ok: $name: same output at $limit, $(( (after - before) >> 20 )) MiB written to $device"
  fi
}

# swap_down: comex swap down; the device detached and the daemon gone
swap_down() {
  "$bin" swap down --swap-dir "$swapdir" "$device" 2>"$dir/down.err" || { fail down "$(tail -n 3 "$dir/down.err")"; return 1; }
  if swapon --show=NAME --noheadings | grep -qx "$device" || losetup "$device" >/dev/null 2>&1; then
    fail down "$device is still attached"; return 1
  elif ls "$swapdir"/*.pid >/dev/null 2>&1; then
    fail down "a daemon's pid file is left: $(ls "$swapdir")"; return 1
  fi
  device=
}

# go_build NAME SOURCE: a static Go binary $dir/NAME from Debian's Go
# (scripts/deps.sh installs golang-go); false (a failure recorded) else
go_build() {
  local go=/usr/bin/go
  [ -x $go ] || { fail "$1" "$go is not installed (scripts/deps.sh installs golang-go)"; return 1; }
  GOCACHE=$dir/gocache GOPATH=$dir/gopath GOPROXY=off GO111MODULE=off GOFLAGS= CGO_ENABLED=0 \
    $go build -o "$dir/$1" "$2" 2>"$dir/$1.build-err" || { fail "$1" "go build: $(tail -n 3 "$dir/$1.build-err")"; return 1; }
}

# gate_swapped MIB LIMIT [idle]: prog_gate_static MIB natively (gate.native),
# then in the cgroup at LIMIT in the background (sets prog; output in
# gate.swap), until it has filled its memory; the gate is $dir/gate.open.
# False (a failure recorded) when it ends first
gate_swapped() {
  static=$progs/prog_gate_static
  [ -x "$static" ] || { fail gate "$static is not built"; return 1; }
  native gate "$static" "$1" / || { fail gate "native run failed"; return 1; }
  echo "$2" >"$cg/$limit_file"
  rm -f "$dir/gate.open"
  in_memcg timeout -k 10 "$hang_guard" "$static" "$1" "$dir/gate.open" ${3:-} >"$dir/gate.swap" 2>"$dir/gate.swap-err" &
  prog=$!; pids+=("$prog")
  for _ in $(seq 1 600); do grep -q filled "$dir/gate.swap" && break; kill -0 $prog 2>/dev/null || break; sleep 0.1; done
  grep -q filled "$dir/gate.swap" || { fail gate "did not fill: $(tail -n 2 "$dir/gate.swap-err")"; return 1; }
}
