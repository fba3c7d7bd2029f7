#!/usr/bin/env bash
# e2e_run_features: one small program per pager feature (fork, read(2) into evicted memory, writers racing eviction, discards racing remote reads under each prefetch policy and an unpinned handler's reads without the pager lock (fault-handlers one, per-cpu's shared handler), a fork bringing PROT_NONE pages home during such a read, mremap, MADV_DONTNEED, exec, signals, the core-dumping signals' dispositions, an evicted locale, encrypted pages, a memfd and a file mapped MAP_FIXED over evicted memory, a program's own userfaultfd, protections/JIT/locks/advice, an idle program with stdin /dev/null, aligned allocations, the embedded memnode's pool file read by an exec'd program) filling 4x --local-mem, same output as natively, remote traffic.
. "${COMEX_SRC:?}/tests/progs/lib.sh"
echo "e2e_run_features: feature programs at 128 MiB under comex run --local-mem 32M match their native runs"

# stat_positive CASE COUNTER WHY [SHOWN...]: when CASE ran, COUNTER of its
# stats is above 0 (else it fails, saying WHY); the SHOWN counters are printed
stat_positive() {
  local c=$1 k=$2 why=$3 n line x; shift 3
  want "$c" && [ -s "$dir/$c.json" ] || return 0
  n=$(stats_get "$c" "$k"); line="$c: $k=$n"
  for x in "$@"; do line+=" $x=$(stats_get "$c" "$x")"; done
  echo "$line"
  [ "$n" -gt 0 ] || fail "$c-stats" "$k is 0: $why"
}

# a forked child is served lazily from the parent's snapshot (DECISIONS.md D45):
# the parent stays within its budget, and the children (and the grandchild,
# whose parent brings its pages home first) read remote pages through it
compare fork      32M budget -- "$progs/prog_fork" 128
if [ -s "$dir/fork.json" ]; then
  python3 - "$dir/fork.json" <<'PY' || fail fork-lazy "the forked children were not served lazily"
import json, sys
s = json.load(open(sys.argv[1]))
print("fork-lazy: forks_lazy=%d pages_child_served=%d" % (s["forks_lazy"], s["pages_child_served"]))
sys.exit(0 if s["forks_lazy"] >= 2 and s["pages_child_served"] > 0 else 1)
PY
fi
# lazy-fork off: every page comes home before fork (D45), so no budget check
compare forkeager 32M --lazy-fork false -- "$progs/prog_fork" 128
# a daemon's parent exits right after fork: at its exit it hands the child
# every page the child has not read yet (D45); the child then verifies all
daemon_file() { # FILE: waits for it (the child outlives its launcher)
  for _ in $(seq 1 $((hang_guard * 10))); do [ -s "$1" ] && return 0; sleep 0.1; done; return 1
}
if want forkdaemon; then
  "$progs/prog_fork" 64 "$dir/daemon.native" >/dev/null 2>&1 && daemon_file "$dir/daemon.native" \
    || fail forkdaemon "native run failed"
  timeout -k 10 "$hang_guard" "$bin" run --local-mem 16M -- "$progs/prog_fork" 64 "$dir/daemon.comex" \
    >/dev/null 2>"$dir/daemon.err" || fail forkdaemon "comex run failed"
  if ! daemon_file "$dir/daemon.comex"; then
    fail forkdaemon "the daemon child wrote nothing (it died or hung after its parent exited)"
  elif ! cmp -s "$dir/daemon.native" "$dir/daemon.comex"; then
    fail forkdaemon "the daemon child saw other memory than natively"; diff "$dir/daemon.native" "$dir/daemon.comex"
  else
    echo "ok: forkdaemon: $(cat "$dir/daemon.comex")"
  fi
  # the parent killed right after the fork cannot hand the child its pages:
  # the child must stop with a message, never go on with zeros
  rm -f "$dir/daemon.native"; { "$progs/prog_fork" 64 "$dir/daemon.native" crash &>/dev/null & wait $!; } 2>/dev/null
  daemon_file "$dir/daemon.native" || fail forkcrash "native run failed"
  timeout -k 10 "$hang_guard" "$bin" run --local-mem 16M -- "$progs/prog_fork" 64 "$dir/crash.comex" crash \
    >/dev/null 2>"$dir/crash.err"
  for _ in $(seq 1 $((hang_guard * 10))); do
    [ -s "$dir/crash.comex" ] || grep -q "parent process died before handing" "$dir/crash.err" && break; sleep 0.1
  done
  if [ -s "$dir/crash.comex" ] && ! cmp -s "$dir/daemon.native" "$dir/crash.comex"; then
    fail forkcrash "the child of a killed parent went on with other memory than natively"
  elif [ -s "$dir/crash.comex" ] || grep -q "parent process died before handing" "$dir/crash.err"; then
    echo "ok: forkcrash: $( [ -s "$dir/crash.comex" ] && echo "child had every page" || echo "child stopped with the message")"
  else
    fail forkcrash "the child of a killed parent neither finished nor said why it stopped"
  fi
fi
compare readsys   32M budget -- "$progs/prog_readsys" 128
compare mremap    32M budget -- "$progs/prog_mremap" 48
compare dontneed  32M budget -- "$progs/prog_dontneed" 128
# a memfd (two views) and a file mapped MAP_FIXED over a reservation whose
# pages are remote, unmapped, remapped anonymous, mremapped (docs/DECISIONS.md D42)
compare foreign   32M budget -- "$progs/prog_foreign" 32
# a program with a userfaultfd of its own registers evicted memory: the pager
# lets go of it with its data (D44); it brings the range home first, so the
# budget is exceeded by that range for a moment (no budget check)
if "$progs/prog_uffd" 1 >/dev/null 2>&1; then
  compare uffd    32M        -- "$progs/prog_uffd" 32
else
  echo "skip: uffd: this user may not use userfaultfd for a program's own faults"
fi
# protections (read-only, PROT_NONE faults as natively), JIT code written,
# run, evicted, rewritten W^X, mlock/MAP_LOCKED/mlockall, madvise and mmap
# flags (docs/DECISIONS.md D43); a fork and mlockall bring pages home: no budget check
compare prot      16M        -- "$progs/prog_prot" 48
if want prot && [ -s "$dir/prot.json" ] && grep -q "locked at exit: 64 KiB" "$dir/prot.comex"; then
  python3 - "$dir/prot.json" <<'PY' || fail prot-stats "stats do not show the locked memory or the copied-out victims"
import json, sys
s = json.load(open(sys.argv[1]))
print("prot: locked_bytes=%d pages_copied_out=%d pages_unmovable=%d" % (s["locked_bytes"], s["pages_copied_out"], s["pages_unmovable"]))
sys.exit(0 if s["locked_bytes"] == 65536 and s["pages_copied_out"] > 0 else 1)
PY
fi
# the same on the synchronous eviction path (write-protect, copy, drop)
compare prot-sync 16M --wp-async false -- "$progs/prog_prot" 48
compare signals   32M budget -- "$progs/prog_signals" 128
# the core-dumping signals' dispositions as the program sets and reads them,
# before the lazy start, after it and in a forked child before its take-over
# (the runtime's handler standing in for SIG_DFL must never show: D48)
compare sigdisp   16M budget -- "$progs/prog_sigdisp" 64
# memalign/aligned_alloc/posix_memalign from 16 B to 64 KiB: aligned (mimalloc 2.0.9 was not, for some)
compare align     16M budget -- "$progs/prog_align"
# the runtime started (and mimalloc loaded) by a worker thread that ends;
# what the main thread frees of later workers' blocks is reused
compare heapowner 16M budget -- "$progs/prog_heapowner"
# UCX's own log lines (info level prints some at every start) go to stderr,
# never into the program's output
UCX_LOG_LEVEL=info compare ucxlog 32M -- "$progs/prog_readsys" 128
# writer threads race the reclaimer: a write during an eviction is never lost
compare wprace    16M budget -- "$progs/prog_wprace" 64 3 6
# writes that put back what was there leave a page clean by content: it is
# dropped at eviction without a rewrite (D21: with wp-async among
# pages_dropped_clean, six pages in seven here; without, a write fault told
# the pager and it counts pages_written_unchanged), and
# the pages really changed among them are not lost; unchanged pages between
# changed ones in the write buffer's run of frames are rewritten (write-fill,
# D26), so the same with write-fill off too
compare restore   16M budget -- "$progs/prog_restore" 64 4
compare restore-nofill 16M budget --write-fill false -- "$progs/prog_restore" 64 4
# without wp-async a write to a clean page faults and the page keeps its
# frame (dirty): unchanged at eviction, it is dropped all the same
compare restore-sync 16M budget --wp-async false -- "$progs/prog_restore" 64 4
if want restore-sync && [ -s "$dir/restore-sync.json" ]; then
  n=$(stats_get restore-sync pages_written_unchanged)
  echo "restore-sync: pages_written_unchanged=$n"
  [ "$n" -gt 0 ] ||
    fail restore-sync-stats "no dirty page written back unchanged was dropped without a rewrite"
fi
for c in restore restore-nofill; do
  want "$c" && [ -s "$dir/$c.json" ] || continue
  python3 - "$dir/$c.json" "$c" <<'PY' || fail "$c-stats" "no page written back unchanged was dropped without a rewrite, or write-fill did not act as set"
import json, sys
s, c = json.load(open(sys.argv[1])), sys.argv[2]
print("%s: pages_dropped_clean=%d pages_written_fill=%d pages_written_clean=%d" % (c, s["pages_dropped_clean"], s["pages_written_fill"], s["pages_written_clean"]))
# pages_written_clean is 0 without wp-async (writes to clean pages fault then)
if s["pages_written_clean"] == 0:
    sys.exit(0)
# every page came back and was written each round, one in seven changed:
# rewriting the six restored ones too would make these at most equal
kept = s["pages_dropped_clean"] + s["pages_written_fill"]
sys.exit(0 if s["pages_dropped_clean"] > 0 and kept >= 2 * s["pages_written_clean"] and
         (s["pages_written_fill"] > 0) == (c == "restore") else 1)
PY
done
# the handler reads remote pages without the pager lock: chunks discarded or
# remapped meanwhile by another thread must never be mapped from a stale copy
compare discardrace 16M budget -- "$progs/prog_discardrace" 96 2 3000
# the other prefetch policies (prefetch.h) take the same remote-fault path
# as the default: a fixed window mapped at once, and COMEX's read buffer
# whose neighbours wait for their own faults; both with threads streaming and
# a mutator discarding meanwhile (the read is made without the pager lock)
compare window    16M budget --prefetch-policy window -- "$progs/prog_discardrace" 96 2 3000
compare readbuf   16M budget --prefetch-map false -- "$progs/prog_discardrace" 96 2 3000
# Those reads are made in place from the embedded memnode's pool: a read
# without the lock (D28) is an unpinned handler's from a memnode over TCP,
# with fault-handlers one, or per-cpu's shared handler while several threads
# fault. unlocked: the discards race such reads. bringrace: a fork (lazy-fork
# off: every page comes home first, a PROT_NONE one read by the forking
# thread itself, under the lock) while the handler reads without it; a
# memnode standing still 50 ms on every 20th read makes the two meet in
# most runs (plan_waits, printed: 0 in 2 runs of 12; the plan and landing
# area once shared gave a stale page or a crash in 3 runs of 3)
if want unlocked || want bringrace || want unlocked-one || want bringrace-one; then
  . "$src/tests/progs/memnodes.sh"
  if mn_start tcpnode && mn_start latenode --test-late-reads 20 --test-late-by 50ms; then
    for h in per-cpu one; do
      c=${h/per-cpu/}; c=${c:+-$c}
      compare unlocked$c 16M budget --memnode "127.0.0.1:$port_tcpnode" --token-file "$dir/token" \
        --fault-handlers $h -- "$progs/prog_discardrace" 96 2 3000
      compare bringrace$c 16M --memnode "127.0.0.1:$port_latenode" --token-file "$dir/token" \
        --fault-handlers $h --lazy-fork false -- "$progs/prog_bringrace" 48 2 10
    done
  fi
  # what they are for: reads without the lock happened (a change to the
  # listener could leave every read under it, and these cases would pass);
  # a wait for such a read is likely, not certain, so it is only printed
  for c in unlocked bringrace unlocked-one bringrace-one; do
    stat_positive "$c" plans_unlocked "no plan was read without the pager lock" plan_waits
  done
fi
stat_positive window pages_prefetch_mapped "the policy's neighbours were never used"
stat_positive readbuf faults_rbuf_hit "the policy's neighbours were never used"
# encrypt: every page leaves sealed (AES-256-GCM) and is opened on its way back
compare encrypt   32M budget --encrypt -- "$progs/prog_readsys" 128
# libc calls of the runtime itself (UCX's keepalive, here every 50 ms) must not
# read the program's locale once it is evicted
UCX_KEEPALIVE_INTERVAL=50ms compare locale 32M budget -- "$progs/prog_locale" 128
compare exec      32M budget -- "$progs/prog_exec" 96
# every image of the exec chain (exec'd, posix_spawned, forked then exec'd) has its own runtime
if [ -s "$dir/exec.err" ] && [ -s "$dir/exec.comex" ]; then
  for stage in 0 s 1 2; do
    grep -q "prog_exec stage $stage: runtime mapped: yes" "$dir/exec.err" \
      || fail exec-runtime "stage $stage of prog_exec ran without the comex runtime"
  done
fi

# the embedded memnode's pool file (D38): the program, and a program it
# execs (here through sh, as benchmark harnesses and scripts do), read and
# write its pages themselves; with embedded-direct=false they go by messages.
# Same output either way.
if want poolfile; then
  native poolfile "$progs/prog_sparse" 1 128 64 || fail poolfile "native run failed"
  for direct in true false; do
    # start-after 0: sh starts its runtime too, though it allocates little
    if ! "$bin" run --local-mem 32M --start-after 0 --log-level 2 --embedded-direct=$direct --stats-json "$dir/poolfile-$direct.json" -- \
         sh -c 'exec "$0" 1 128 64' "$progs/prog_sparse" >"$dir/poolfile-$direct.comex" 2>"$dir/poolfile-$direct.err"; then
      fail poolfile "exit status $? under comex run --embedded-direct=$direct: $(tail -n 2 "$dir/poolfile-$direct.err")"
      continue
    fi
    cmp -s "$dir/poolfile.native" "$dir/poolfile-$direct.comex" || fail poolfile "output differs with embedded-direct=$direct"
    n=$(grep -c 'pages move through its pool file' "$dir/poolfile-$direct.err")
    reads=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["remote_reads"])' "$dir/poolfile-$direct.json")
    [ "$reads" -gt 0 ] || fail poolfile "no remote reads with embedded-direct=$direct: the test proves nothing"
    if [ "$direct" = true ] && [ "$n" -lt 2 ]; then
      fail poolfile "the pool file was used by $n of the 2 processes (sh and the program it exec'd)"
    elif [ "$direct" = false ] && [ "$n" != 0 ]; then
      fail poolfile "the pool file was used with embedded-direct=false"
    fi
  done
  echo "ok: poolfile: same output through the pool file (sh and the program it exec'd) and by messages"
fi

# an idle program whose stdin is readable at once (/dev/null) costs no CPU:
# the fault handler polled descriptor 0 for unused child slots and spun a
# whole core (D45). A sleeping process uses about 0.01 s in 2 s; a spinning
# handler uses about 2 s. The bound is CPU used, not time taken.
if want idle; then
  "$bin" run --local-mem 32M --start-after 0 -- sh -c 'sleep 2; cat /proc/$$/stat' </dev/null >"$dir/idle.out" 2>"$dir/idle.err" \
    || fail idle "exit status $? under comex run: $(tail -n 2 "$dir/idle.err")"
  ticks=$(awk '{print $14 + $15}' "$dir/idle.out") # utime + stime of every thread, in clock ticks
  hz=$(getconf CLK_TCK)
  if [ -z "$ticks" ]; then
    fail idle "no /proc/PID/stat line from the program"
  elif [ "$ticks" -gt $((hz / 2)) ]; then
    fail idle "a program sleeping 2 s used $ticks ticks of CPU (of $hz a second) under comex run with stdin /dev/null"
  else
    echo "ok: idle: a program sleeping 2 s with stdin /dev/null used $ticks ticks of CPU ($hz a second)"
  fi
fi
finish
