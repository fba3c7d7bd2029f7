#!/usr/bin/env bash
# e2e_run_replicas: with replicas 2 a memnode SIGKILLed or SIGSTOPped mid-run loses no page (reads fail over, output identical); with three memnodes the lost copies are made again, so a second failure loses nothing either, and a drain moves no page; with backup-dir the only memnode may die.
. "${COMEX_SRC:?}/tests/progs/lib.sh"
. "$src/tests/progs/memnodes.sh"
echo "e2e_run_replicas: replicas 2, one memnode killed / stopped mid-run, re-replication then a second failure; backup-dir with the only memnode killed"
pybuild_job 80000 # job, its native output, lm: 25 % of its native peak
# Pages written before a memnode is made to fail: mid-run (the job writes
# about 4 times as many), counted by the pager, not timed.
after=${COMEX_TEST_FAIL_AFTER:-10000}

# node_pid I: the pid of memnode number I (a, b, c in --memnode order)
node_pid() { local v=pid_$(echo abc | cut -c$(($1 + 1))); echo "${!v}"; }

# 0. No failure, replicas 2, frames not kept for written pages
# (keep-frames false): every evicted page has one frame on each memnode and
# every frame a page gives up is given up on both, so at the end the pager
# holds exactly as many frames on one as on the other.
if want frames; then
  mn_start a --pool 256M && mn_start b --pool 256M && {
    rc=0
    under_comex frames "$lm" --memnode "127.0.0.1:$port_a,127.0.0.1:$port_b" --token-file "$dir/token" \
      --replicas 2 --keep-frames false -- "${job[@]}" || rc=$?
    held=$(python3 -c 'import json,sys; print(" ".join(str(m["frames_held"]) for m in json.load(open(sys.argv[1]))["memnodes"]))' \
      "$dir/frames.json" 2>/dev/null)
    if [ $rc -ne 0 ] || ! cmp -s "$dir/job.native" "$dir/frames.comex"; then
      fail frames "exit $rc or output differs: $(grep -E '^comex: (error|warning)' "$dir/frames.err" | head -n 3)"
    elif [ "$(echo $held | cut -d' ' -f1)" != "$(echo $held | cut -d' ' -f2)" ] || [ "$(echo $held | cut -d' ' -f1)" -le 0 ]; then
      fail frames "frames held on the two memnodes at the end: $held (equal and > 0 expected)"
    else
      echo "ok: frames: replicas 2, output identical, $(echo $held | cut -d' ' -f1) frames held on each memnode at the end"
    fi
  }
  for v in pid_a pid_b; do [ -n "${!v:-}" ] && { kill -KILL "${!v}"; wait "${!v}"; } 2>/dev/null; done
  unset pid_a pid_b
fi

# 1-2. Two memnodes, replicas 2: the one that holds the first copies (the
# program's preferred memnode, which reads go to) is SIGKILLed (the
# connection drops) or SIGSTOPped (it hangs: its requests are hedged to the
# other copy at once, and it is failed once one stays unanswered for
# op-timeout, here 5 s) while the program pages.
for sig in KILL STOP; do
  name=$(echo "sig$sig" | tr 'A-Z' 'a-z')
  want "$name" || continue
  mn_start a --pool 256M && mn_start b --pool 256M &&
  OPT_TIMEOUT=$([ $sig = STOP ] && echo 5s || echo 20s) start_job "$name" "127.0.0.1:$port_a,127.0.0.1:$port_b" &&
  written_at_least "$name" "$after" && {
    pref=$(counter "$prog" preferred_node)
    kill -"$sig" "$(node_pid "$pref")"
    if ended_identical "$name"; then
      fo=$(stats_get "$name" pages_failed_over); lost=$(stats_get "$name" pages_lost)
      if [ "$fo" -le 0 ] || [ "$lost" -ne 0 ]; then
        fail "$name" "pages_failed_over=$fo (> 0 expected) pages_lost=$lost"
      else
        echo "ok: $name: memnode $pref got SIG$sig after $after pages written; $fo pages failed over, output identical"
      fi
    fi
  }
  for v in pid_a pid_b; do [ -n "${!v:-}" ] && { kill -KILL "${!v}"; wait "${!v}"; } 2>/dev/null; done
  unset pid_a pid_b
done

# 3. Three memnodes: the preferred one, p, is killed (the extra copies of
# its pages are on p + 1); the pager makes the copies p held again on the
# others; only then (its log says so) p + 1 is killed too: every page still
# has a copy on p + 2, nothing is lost.
if want rereplicate; then
  mn_start a --pool 256M && mn_start b --pool 256M && mn_start c --pool 256M &&
  start_job rereplicate "127.0.0.1:$port_a,127.0.0.1:$port_b,127.0.0.1:$port_c" &&
  written_at_least rereplicate "$after" && {
    pref=$(counter "$prog" preferred_node)
    kill -KILL "$(node_pid "$pref")"
    # the repair pass that ends with every page whole, after p was forgotten
    while kill -0 "$run_pid" 2>/dev/null; do
      sed -n "/memnode $pref out of use (failed or drained): the other copies/,\$p" "$dir/rereplicate.err" |
        grep -q "re-replicated: .* every page has its 2 copies" && break
      sleep 0.1
    done
    kill -0 "$run_pid" 2>/dev/null || echo "note: rereplicate: the program ended before the copies were made again"
    kill -KILL "$(node_pid $(((pref + 1) % 3)))"
    if ended_identical rereplicate; then
      rr=$(stats_get rereplicate pages_rereplicated); lost=$(stats_get rereplicate pages_lost)
      if [ "$rr" -le 0 ] || [ "$lost" -ne 0 ]; then
        fail rereplicate "pages_rereplicated=$rr (> 0 expected) pages_lost=$lost"
      else
        echo "ok: rereplicate: $rr copies made again after memnode $pref died, then $(((pref + 1) % 3)) died too; output identical"
      fi
    fi
  }
  for v in pid_a pid_b pid_c; do [ -n "${!v:-}" ] && { kill -KILL "${!v}"; wait "${!v}"; } 2>/dev/null; done
fi
# 3b. Three memnodes, the preferred one drained ('comex drain') mid-run:
# its first copies are replaced by the extra copies elsewhere (no page needs
# to move), it exits after DONE holding none of our frames, copies are re-made.
if want drain; then
  mn_start a --pool 256M && mn_start b --pool 256M && mn_start c --pool 256M &&
  start_job drain "127.0.0.1:$port_a,127.0.0.1:$port_b,127.0.0.1:$port_c" && written_at_least drain "$after" && {
    pref=$(counter "$prog" preferred_node); pn=$(echo abc | cut -c$((pref + 1))); pp=port_$pn
    "$bin" drain --token-file "$dir/token" "127.0.0.1:${!pp}" >"$dir/drain.out" 2>&1 ||
      fail drain "comex drain: $(cat "$dir/drain.out")"
    if drained "$pn" "$(node_pid "$pref")" && ended_identical drain; then
      dr=$(stats_get drain memnodes_drained); lost=$(stats_get drain pages_lost)
      held=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["memnodes"][int(sys.argv[2])]["frames_held"])' \
        "$dir/drain.json" "$pref")
      if [ "$dr" -ne 1 ] || [ "$lost" -ne 0 ] || [ "$held" -ne 0 ]; then
        fail drain "memnodes_drained=$dr pages_lost=$lost frames still held on the drained memnode=$held"
      else
        echo "ok: drain: memnode $pref drained mid-run with replicas 2 ($(stats_get drain pages_rereplicated) copies re-made), output identical"
      fi
    fi
  }
  for v in pid_a pid_b pid_c; do [ -n "${!v:-}" ] && { kill -KILL "${!v}"; wait "${!v}"; } 2>/dev/null; done
  unset pid_a pid_b pid_c
fi

# 4. One memnode, replicas 1, backup-dir: it is killed mid-run; the pages
# only it held are read back from the backup file.
if want backup; then
  mkdir -p "$dir/backup"
  mn_start a --pool 256M &&
  start_job backup "127.0.0.1:$port_a" --backup-dir "$dir/backup" && written_at_least backup "$after" && {
    kill -KILL "$pid_a"
    if ended_identical backup; then
      br=$(stats_get backup pages_backup_read); bw=$(stats_get backup pages_backup_written)
      if [ "$br" -le 0 ]; then
        fail backup "pages_backup_read=$br (> 0 expected), pages_backup_written=$bw"
      elif [ -n "$(ls -A "$dir/backup")" ]; then
        fail backup "the backup file was left behind: $(ls "$dir/backup")"
      else
        echo "ok: backup: the only memnode killed after $after pages written; $br pages read back from the backup file ($bw written), output identical"
      fi
    fi
  }
  [ -n "${pid_a:-}" ] && { kill -KILL "$pid_a"; wait "$pid_a"; } 2>/dev/null
  # a directory that does not exist is refused, naming it
  rc=0; "$bin" run --local-mem 32M --backup-dir "$dir/nonexistent" -- true 2>"$dir/nodir.err" || rc=$?
  if [ $rc -eq 0 ] || ! grep -q "backup-dir.*$dir/nonexistent" "$dir/nodir.err"; then
    fail backup-nodir "exit $rc: $(grep comex: "$dir/nodir.err" | head -n 2)"
  else
    echo "ok: backup-nodir: $(grep -m1 "backup-dir" "$dir/nodir.err")"
  fi
fi
finish
