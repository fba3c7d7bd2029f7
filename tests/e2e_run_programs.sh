#!/usr/bin/env bash
# e2e_run_programs: real programs (Python, sqlite3, sort, a 4-thread C program, redis-server with BGSAVE) at 25 % of their footprint under comex run give their native results.
. "${COMEX_SRC:?}/tests/progs/lib.sh"
echo "e2e_run_programs: Python, sqlite3, sort, prog_mt and redis-server at 25 % of their native peak RSS match their native runs"
for p in sqlite3 sort redis-server redis-cli; do
  command -v $p >/dev/null || { echo "skip: $p is not installed (scripts/deps.sh installs it)"; exit 77; }
done
py=$(python3 -c 'import sys; print(sys.executable)') # the interpreter itself, not a wrapper script

# COMEX_TEST_ONLY="python sqlite sort mt redis" runs only the named ones.
# 1. Python building and checksumming a large data structure (~160 MiB)
compare python quarter budget -- "$py" "$src/tests/progs/pybuild.py" 250000

# 2. sqlite3: an in-memory database whose page cache grows to ~150 MiB
cat >"$dir/db.sql" <<'SQL'
PRAGMA cache_size = -200000;
CREATE TABLE t(id INTEGER PRIMARY KEY, k TEXT, v TEXT, n INTEGER);
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 300000)
INSERT INTO t SELECT x, printf('key%08d', (x * 7919) % 300007), printf('%.*c%d', 150 + x % 50, 'v', x * 31),
                     (x * 2654435761) % 1000003 FROM c;
CREATE INDEX t_k ON t(k);
CREATE INDEX t_n ON t(n);
UPDATE t SET v = upper(v) WHERE id % 3 = 0;
DELETE FROM t WHERE id % 11 = 0;
SELECT count(*), sum(n), sum(length(v)), total(id) FROM t;
SELECT n % 97 AS b, count(*), sum(length(k)), min(k), max(v) FROM t GROUP BY b ORDER BY b;
SELECT k, n FROM t WHERE k BETWEEN 'key00100000' AND 'key00100020' ORDER BY k;
SELECT count(*), sum(a.n + b.n) FROM t a JOIN t b ON a.n = b.id WHERE a.id % 5 = 0;
PRAGMA integrity_check;
SQL
stdin=$dir/db.sql compare sqlite quarter budget -- sqlite3 :memory:

# 3. sort of a ~50 MB file with a 200 MB in-memory buffer
python3 - "$dir/sort.in" <<'PY'
import random, sys
r = random.Random(7)
with open(sys.argv[1], "w") as f:
    for i in range(700000):
        f.write("%016x %s %d\n" % (r.getrandbits(64), r.randbytes(r.randint(5, 40)).hex(), i))
PY
compare sort quarter budget -- sort -S 200M "$dir/sort.in"

# 4. four threads writing and verifying patterns in one 160 MiB array
compare mt quarter budget -- "$progs/prog_mt" 160 4

# 5. redis-server loaded with data, BGSAVE (fork) while the parent keeps
#    writing; the dump, loaded by a plain redis-server, holds exactly the data.
python3 - "$dir/load.resp" <<'PY'
import random, sys
r = random.Random(11)
def cmd(*a):
    out = b"*%d\r\n" % len(a)
    for x in a:
        x = x if isinstance(x, bytes) else str(x).encode()
        out += b"$%d\r\n%s\r\n" % (len(x), x)
    return out
with open(sys.argv[1], "wb") as f:
    for i in range(60000):
        f.write(cmd("SET", "s:%d" % i, r.randbytes(r.randint(50, 400)).hex()))
    for i in range(2000):
        f.write(cmd("HSET", "h:%d" % i, *[v for j in range(20) for v in ("f%d" % j, r.getrandbits(48))]))
        f.write(cmd("RPUSH", "l:%d" % i, *[r.randbytes(16).hex() for j in range(20)]))
PY
python3 - "$dir/change.resp" <<'PY'
import sys
with open(sys.argv[1], "wb") as f:
    for i in range(0, 60000, 7):
        v = b"changed-%d" % i
        f.write(b"*3\r\n$3\r\nSET\r\n$%d\r\ns:%d\r\n$%d\r\n%s\r\n" % (len(b"s:%d" % i), i, len(v), v))
PY
rcli() { local s=$1; shift; redis-cli -s "$s" "$@" 2>/dev/null; }
# start_redis NAME SOCKDIR [prefix...]: starts redis-server (under the prefix
# command, if any) on a unix socket only, waits until it answers.
start_redis() {
  local name=$1 d=$2; shift 2
  mkdir -p "$d"
  "$@" redis-server --port 0 --unixsocket "$d/sock" --dir "$d" --dbfilename dump.rdb --pidfile "$d/redis.pid" --save '' \
    --appendonly no --enable-debug-command local --daemonize no --logfile "$d/log" \
    >"$dir/$name.comex" 2>"$dir/$name.err" &
  redis_pid=$!; pids+=("$redis_pid")
  for _ in $(seq 1 600); do
    [ "$(rcli "$d/sock" PING 2>/dev/null)" = PONG ] && return 0
    kill -0 "$redis_pid" 2>/dev/null || return 1
    sleep 0.2
  done
  return 1
}
load_redis() {
  local s=$1
  rcli "$s" DEBUG POPULATE 100000 p: 200 >/dev/null \
    && rcli "$s" --pipe <"$dir/load.resp" >"$dir/pipe.out" 2>&1 \
    && grep -q "errors: 0" "$dir/pipe.out"
}
redis_state() { # DBSIZE, DEBUG DIGEST and a few values
  local s=$1
  rcli "$s" DBSIZE; rcli "$s" DEBUG DIGEST
  rcli "$s" GET s:0; rcli "$s" GET s:59999; rcli "$s" HGET h:77 f5; rcli "$s" LINDEX l:1999 19
  rcli "$s" DEBUG DIGEST-VALUE p:123 s:700 h:1000 l:3
}
wait_bgsave() { # SOCKET PID: until the save is over (or the server is gone)
  local s=$1 pid=$2
  for _ in $(seq 1 $((hang_guard * 5))); do
    rcli "$s" INFO persistence | grep -q "rdb_bgsave_in_progress:0" && break
    kill -0 "$pid" 2>/dev/null || return 1
    sleep 0.2
  done
  rcli "$s" INFO persistence | grep -q "rdb_last_bgsave_status:ok"
}
redis_test() {
  local n=$dir/redis-native c=$dir/redis-comex p=$dir/redis-plain rc=0
  # native reference, and its peak RSS for the budget
  start_redis redis-native "$n" || { fail redis "native redis-server did not start"; return; }
  load_redis "$n/sock" || { fail redis "loading native redis failed"; return; }
  redis_state "$n/sock" >"$dir/redis.native"
  local hwm; hwm=$(awk '/VmHWM/ {print $2}' /proc/"$redis_pid"/status)
  rcli "$n/sock" SHUTDOWN NOSAVE >/dev/null 2>&1; wait "$redis_pid"
  local lm=$((hwm / 4))K
  # under comex
  start_redis redis-comex "$c" timeout -k 10 "$hang_guard" "$bin" run --local-mem "$lm" \
    --stats-json "$dir/redis.json" -- || { fail redis "redis-server under comex run did not start"; sed 's/^/    /' "$dir/redis-comex.err" | tail -5; return; }
  local cpid=$redis_pid
  if ! load_redis "$c/sock"; then fail redis "loading redis under comex run failed"; return; fi
  redis_state "$c/sock" >"$dir/redis.comex"
  kill -0 "$cpid" 2>/dev/null || { fail redis "redis-server under comex run died or hung"; sed 's/^/    /' "$dir/redis-comex.err" | tail -5; return; }
  if ! cmp -s "$dir/redis.native" "$dir/redis.comex"; then
    fail redis "data under comex run differs from native"; diff "$dir/redis.native" "$dir/redis.comex" | head -6; return
  fi
  [ "$(rcli "$c/sock" BGSAVE)" = "Background saving started" ] || { fail redis "BGSAVE refused"; return; }
  rcli "$c/sock" --pipe <"$dir/change.resp" >/dev/null 2>&1  # parent writes while the child saves
  if ! wait_bgsave "$c/sock" "$cpid"; then fail redis "BGSAVE under comex run failed"; tail -5 "$c/log" | sed 's/^/    /'; return; fi
  [ "$(rcli "$c/sock" GET s:7)" = changed-7 ] || fail redis "write during BGSAVE lost"
  rcli "$c/sock" SHUTDOWN NOSAVE >/dev/null 2>&1
  wait "$cpid" || rc=$?
  [ $rc -eq 0 ] || { fail redis "redis-server under comex run exited with $rc"; sed 's/^/    /' "$dir/redis-comex.err" | tail -5; return; }
  # the dump, loaded by a plain redis-server, must hold the data as it was at BGSAVE
  mkdir -p "$p"; cp "$c/dump.rdb" "$p/dump.rdb"
  start_redis redis-plain "$p" || { fail redis "plain redis-server did not load the dump"; tail -5 "$p/log" | sed 's/^/    /'; return; }
  redis_state "$p/sock" >"$dir/redis.dump"
  rcli "$p/sock" SHUTDOWN NOSAVE >/dev/null 2>&1; wait "$redis_pid"
  if ! cmp -s "$dir/redis.native" "$dir/redis.dump"; then
    fail redis "the BGSAVE dump differs from the data"; diff "$dir/redis.native" "$dir/redis.dump" | head -6; return
  fi
  local st
  if ! st=$(stats_ok redis); then fail redis "$st"; return; fi
  echo "ok: redis (native peak ${hwm}K, --local-mem $lm, BGSAVE dump verified): $st"
}
want redis && redis_test
finish
