#!/usr/bin/env bash
# e2e_run_cgroup: comex run --local-mem auto, outside a memory cgroup, runs a program inside it: the runtime follows the cgroup's room, past what the fixed 64 MiB headroom would give, and gives memory back to a polite hog that joins the cgroup later; the program ends with the native output and nothing in the cgroup is OOM-killed; in an unlimited child of a limited cgroup, local-mem auto comes from the ancestor's limit (one cgroup reader for the launcher, the runtime and the memnode).
. "${COMEX_SRC:?}/tests/progs/lib.sh"
. "$src/tests/progs/memnodes.sh"
. "$src/tests/progs/memcg.sh"
limit_mib=160 mib=200 hog_mib=48
echo "e2e_run_cgroup: prog_gate $mib MiB in a $limit_mib MiB cgroup under comex run --local-mem auto, then a polite $hog_mib MiB hog beside it"
memcg_make follow $((limit_mib << 20))

# live NAME KEY: a counter of the program in the cgroup, read while it runs
live() {
  local pid; pid=$(head -n 1 "$cg/cgroup.procs")
  [ -n "$pid" ] && "$bin" stats "$pid" 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)[sys.argv[1]])' "$1"
}
# until_budget OP MIB: waits until the program's budget OP MIB holds
until_budget() {
  local b
  for _ in $(seq 1 $((hang_guard * 5))); do
    b=$(live budget_bytes) && [ -n "$b" ] && [ $((b >> 20)) "$1" "$2" ] && return 0
    kill -0 "$run_pid" 2>/dev/null || return 1
    sleep 0.2
  done
  return 1
}

native follow "$gate" "$mib" / || { fail follow "native run failed"; finish; }
timeout -k 10 "$hang_guard" "$bin" run --local-mem auto --stats-json "$dir/follow.json" -- \
  "${memcg_enter[@]}" "$gate" "$mib" "$dir/follow.gate" >"$dir/follow.comex" 2>"$dir/follow.err" &
run_pid=$!; pids+=("$run_pid")
wait_filled follow || { echo "    OOM kills in the cgroup: $(memcg_ooms)"; finish; }

# Fixed, auto would leave 64 MiB of headroom: a budget of at most 96 MiB.
if until_budget -gt $((limit_mib - 40)); then
  echo "ok: grow: budget $(( $(live budget_bytes) >> 20 )) MiB of a $limit_mib MiB cgroup"
else
  fail grow "the budget did not follow the cgroup past $((limit_mib - 40)) MiB: $(( $(live budget_bytes) >> 20 )) MiB"
fi
if hog_start $hog_mib polite; then
  if until_budget -le $((limit_mib - hog_mib)); then
    echo "ok: shrink: budget $(( $(live budget_bytes) >> 20 )) MiB with the hog's $hog_mib MiB beside it"
  else
    fail shrink "budget $(( $(live budget_bytes) >> 20 )) MiB with the hog beside it"
  fi
fi
if finished follow; then echo "ok: follow: the program's output equals the native run"; fi
hog_stop
ooms=$(memcg_ooms)
[ "$ooms" = 0 ] || fail oom "$ooms OOM kills in the cgroup"
grep -E '^comex: (error|warning)' "$dir/follow.err" | head -n 3

# The limit set only on an ancestor: comex run and its program run in a
# child cgroup with no limit of its own. With cgroup-follow off, local-mem auto is that
# ancestor's limit less headroom (64 MiB), found by the same reader the
# runtime follows (before, the launcher read only the program's own cgroup
# and took all of RAM less headroom)
child=$cg/child
if mkdir "$child" 2>/dev/null; then
  native ancestor "$gate" 32 / || fail ancestor "native run failed"
  if ! timeout -k 10 "$hang_guard" sh -c 'echo $$ >"$0/cgroup.procs" && shift && exec "$@"' "$child" x \
      "$bin" run --local-mem auto --cgroup-follow=false --stats-json "$dir/ancestor.json" -- "$gate" 32 / \
      >"$dir/ancestor.comex" 2>"$dir/ancestor.err"; then
    fail ancestor "exit status $? under comex run: $(grep -E '^comex: (error|warning)' "$dir/ancestor.err" | head -n 2)"
  elif ! cmp -s "$dir/ancestor.native" "$dir/ancestor.comex"; then
    fail ancestor "output differs from the native run"
  else
    lm=$(( $(stats_get ancestor local_mem_bytes) >> 20 ))
    if [ "$lm" -gt $((limit_mib - 64)) ]; then
      fail ancestor "local-mem auto is $lm MiB in a child of a $limit_mib MiB cgroup (expected at most $((limit_mib - 64)) MiB)"
    else
      echo "ok: ancestor: local-mem auto $lm MiB in an unlimited child of the $limit_mib MiB cgroup"
    fi
  fi
  rmdir "$child" 2>/dev/null
fi
finish
