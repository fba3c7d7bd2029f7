#!/usr/bin/env bash
# e2e_run_startup: processes under comex run --memnode (TCP) that stay within their budget load neither UCX nor OpenSSL and open no connection of their own; nor does one with the embedded memnode; option encrypt loads OpenSSL and option shm the UCX plugin (docs/DECISIONS.md D80); a short process starts no runtime thread, no userfaultfd and no region (start-after, D87), a growing one starts them and pages; a region RLIMIT_AS refuses, or mimalloc missing, is said at exec; a late start that cannot make its threads leaves the program unmanaged; comex top lists a waiting process as not paging.
. "${COMEX_SRC:?}/tests/progs/lib.sh"
echo "e2e_run_startup: libraries a managed process loads, and the connections 20 short processes open"
memnode_start || finish
tcp=("$bin" run --memnode "127.0.0.1:$mn_port" --token-file "$dir/token")

# maps NAME COMEX-RUN...: the mappings of a cat run under comex run, in $dir/NAME.maps
maps() {
  local name=$1; shift
  if ! "$@" -- cat /proc/self/maps >"$dir/$name.maps" 2>"$dir/$name.err"; then
    fail "$name" "comex run failed: $(tail -n 2 "$dir/$name.err")"; return 1
  fi
  grep -q 'libcomex-rt\.so' "$dir/$name.maps" || { fail "$name" "the runtime is not loaded"; return 1; }
}
loaded() { grep -o "$2[^ ]*" "$dir/$1.maps" | sort -u | tr '\n' ' '; }

if maps tcp "${tcp[@]}"; then
  libs=$(loaded tcp 'lib\(comex-ucx\|ucp\|ucs\|uct\|crypto\)')
  [ -z "$libs" ] && echo "ok: tcp: neither UCX nor OpenSSL loaded" || fail tcp "loaded $libs"
fi
if maps encrypt "${tcp[@]}" --start-after 0 --encrypt; then
  [ -n "$(loaded encrypt libcrypto)" ] && [ -z "$(loaded encrypt 'lib\(comex-ucx\|ucp\)')" ] \
    && echo "ok: encrypt: $(loaded encrypt libcrypto)" || fail encrypt "libcrypto not loaded, or UCX loaded: $(loaded encrypt 'lib[a-z-]*\.so')"
fi
if maps embedded "$bin" run; then
  libs=$(loaded embedded 'lib\(comex-ucx\|ucp\|ucs\|uct\|crypto\)')
  [ -z "$libs" ] && echo "ok: embedded: neither UCX nor OpenSSL loaded" || fail embedded "loaded $libs"
fi
if maps shm "$bin" run --start-after 0 --shm true; then
  [ -n "$(loaded shm libcomex-ucx)" ] && [ -n "$(loaded shm libucp)" ] \
    && echo "ok: shm: $(loaded shm 'lib\(comex-ucx\|ucp\)')" || fail shm "the UCX plugin is not loaded"
fi

# The lazy start (option start-after, D87): a short process started no
# runtime thread, opened no userfaultfd and reserved no region (with
# start-after 0 it does: the check can fail); its --stats-json is still
# written, empty of paging; a program that grows past start-after starts it
# and pages, output identical.
# threads NAME COMEX-RUN-OPTIONS...: "threads N uffd M region R" of a shell
# under comex run (R: its mappings of 2 GiB or more)
threads() {
  local name=$1; shift
  "${tcp[@]}" "$@" -- sh -c 'printf "threads %s uffd %s region %s\n" "$(ls /proc/$$/task | wc -l)" \
    "$(ls -l /proc/$$/fd | grep -c userfaultfd)" "$(python3 -c "import sys
print(sum(1 for l in open(\"/proc/%s/maps\" % sys.argv[1])
          if (lambda a, b: int(b, 16) - int(a, 16))(*l.split()[0].split(\"-\")) >= 1 << 31))" $$)"' \
    >"$dir/$name.out" 2>"$dir/$name.err" ||
    fail "$name" "comex run failed: $(tail -n 2 "$dir/$name.err")"
  cat "$dir/$name.out"
}
if want lazy; then
  lazy=$(threads lazy --start-after 8M --stats-json "$dir/lazy.json") eager=$(threads eager --start-after 0)
  ev=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["pages_evicted"])' "$dir/lazy.json" 2>&1)
  if [ "$lazy" != "threads 1 uffd 0 region 0" ] || [ "${eager#threads 1 uffd 0}" != "$eager" ] ||
     [ "${eager##* region }" = 0 ] || [ "$eager" = "" ]; then
    fail lazy "a short shell: '$lazy' with start-after 8M (want threads 1 uffd 0 region 0), '$eager' with 0"
  elif [ "$ev" != 0 ]; then
    fail lazy "its --stats-json: pages_evicted '$ev' (want 0)"
  else
    echo "ok: lazy: a short shell: $lazy (with start-after 0: $eager); its stats-json written"
  fi
fi
# a region the kernel refuses (RLIMIT_AS) is said at exec, though the
# runtime would start later: exit 126, the program not run
if want rlimit; then
  (ulimit -v 8000000; "${tcp[@]}" -- echo ran) >"$dir/rlimit.out" 2>"$dir/rlimit.err"; rc=$?
  if [ $rc -eq 126 ] && grep -q 'cannot reserve the managed region' "$dir/rlimit.err" && [ ! -s "$dir/rlimit.out" ]; then
    echo "ok: rlimit: refused at exec with RLIMIT_AS of 8 GB"
  else
    fail rlimit "exit $rc, out '$(cat "$dir/rlimit.out")' (want 126 and no output): $(tail -n 2 "$dir/rlimit.err")"
  fi
fi
# the allocator missing (mimalloc hidden by /dev/null bound over it in a
# mount namespace of the run's own) is said at exec, naming the package: exit
# 126, the program not run, never a late start leaving it unmanaged (D87)
if want noalloc; then
  mi=$(readlink -f "$(ldconfig -p | awk '/libmimalloc\.so\.2 /{print $NF; exit}')" 2>/dev/null)
  if [ -z "$mi" ] || [ ! -f "$mi" ] || ! unshare -m sh -c 'mount --bind /dev/null "$1"' sh "$mi" 2>/dev/null; then
    echo "skip: noalloc: needs mimalloc in the linker cache and unshare -m with a bind mount (root)"
  else
    timeout -k 10 "$hang_guard" unshare -m sh -c 'mount --bind /dev/null "$1" && shift && exec "$@"' sh "$mi" \
      "${tcp[@]}" -- echo ran >"$dir/noalloc.out" 2>"$dir/noalloc.err"; rc=$?
    if [ $rc -eq 126 ] && grep -q 'cannot load the allocator, mimalloc (Debian: apt-get install libmimalloc2.0)' \
       "$dir/noalloc.err" && [ ! -s "$dir/noalloc.out" ]; then
      echo "ok: noalloc: refused at exec, naming the package"
    else
      fail noalloc "exit $rc, out '$(cat "$dir/noalloc.out")' (want 126 and no output): $(tail -n 2 "$dir/noalloc.err")"
    fi
  fi
fi
# a late start that cannot make all the runtime's threads (the program alone
# in a pids cgroup of 3 tasks: two are made, the third refused) leaves it
# unmanaged, output as natively, with a warning: the program is running and
# must not be stopped (D41). The start makes every thread, parked, before the
# pager registers anything; those made then end.
if want threadlimit; then
  pg=/sys/fs/cgroup/pids/comex-test-$$
  if ! mkdir "$pg" 2>/dev/null || ! echo 3 >"$pg/pids.max"; then
    rmdir "$pg" 2>/dev/null
    echo "skip: threadlimit: no pids cgroup (v1) to make here"
  else
    trap 'cleanup; rmdir "$pg" 2>/dev/null' EXIT
    native threadlimit "$progs/prog_dontneed" 64 || fail threadlimit "native run failed"
    timeout -k 10 "$hang_guard" "${tcp[@]}" --local-mem 16M --start-after 256K -- \
      sh -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' sh "$pg" "$progs/prog_dontneed" 64 \
      >"$dir/threadlimit.comex" 2>"$dir/threadlimit.err"; rc=$?
    rmdir "$pg" || fail threadlimit "cannot remove the pids cgroup $pg"
    trap cleanup EXIT
    if [ $rc -ne 0 ]; then
      fail threadlimit "exit $rc (want 0, unmanaged): $(tail -n 2 "$dir/threadlimit.err")"
    elif ! cmp -s "$dir/threadlimit.native" "$dir/threadlimit.comex"; then
      fail threadlimit "output differs from the native run"
    elif ! grep -q "cannot start the runtime's threads; .* goes on without comex" "$dir/threadlimit.err"; then
      fail threadlimit "no warning that it went on unmanaged: $(tail -n 2 "$dir/threadlimit.err")"
    else
      echo "ok: threadlimit: went on unmanaged, output as natively"
    fi
  fi
fi
# a program that grows past it: the runtime starts on the thread that crossed it
compare lazygrow 32M budget --memnode "127.0.0.1:$mn_port" --token-file "$dir/token" --start-after 512K -- \
  "$progs/prog_mt" 96

# a process waiting to start (a shell under start-after) is listed by comex
# top as not paging, and comex top PID says why it has nothing to show
if want top; then
  "${tcp[@]}" -- sh -c 'sleep 30; true' >/dev/null 2>&1 & launcher=$!; pids+=("$launcher")
  for _ in $(seq 100); do shell=$(pgrep -P "$launcher" -x sh) && break; sleep 0.1; done
  "$bin" top --once --interval 0.2 >"$dir/top.out" 2>&1
  "$bin" top --once "${shell:-0}" >"$dir/top1.out" 2>&1; rc=$?
  pkill -P "${shell:-0}" sleep; wait "$launcher"
  if [ -z "$shell" ]; then
    fail top "the shell under comex run did not start"
  elif ! grep -q "^not paging (smaller than start-after, or unmanaged):.* $shell sh" "$dir/top.out"; then
    fail top "comex top does not list the waiting shell $shell: $(tail -n 2 "$dir/top.out")"
  elif [ $rc -ne 1 ] || ! grep -q "process $shell (sh) runs under comex but pages nothing" "$dir/top1.out"; then
    fail top "comex top $shell: exit $rc, '$(cat "$dir/top1.out")'"
  else
    echo "ok: top: the waiting shell listed as not paging"
  fi
fi
# 20 short processes and a shell: one connection, the launcher's check
before=$(grep -c ': connected$' "$dir/memnode.err")
if "${tcp[@]}" -- sh -c 'for i in $(seq 20); do /bin/true; done; echo done' >"$dir/loop.out" 2>"$dir/loop.err" \
   && grep -qx done "$dir/loop.out"; then
  after=$(grep -c ': connected$' "$dir/memnode.err")
  [ $((after - before)) -eq 1 ] && echo "ok: loop: 1 connection for 21 processes" \
    || fail loop "$((after - before)) connections for 21 processes that never evicted (want 1: the launcher's)"
else
  fail loop "comex run failed: $(tail -n 2 "$dir/loop.err")"
fi
finish
