"""Workloads: unmodified programs with a correctness check. Each takes a
target footprint in MiB (`size`); its `run` starts the program(s) through a
RunCtx (which puts them in the mode's cgroup and under `comex run` when the
mode says so) and returns metrics plus a `check` string that must equal the
local run's.

  python  tests/progs/pybuild.py: builds, mutates and hashes a dict of records
  numpy   bench/harness/progs/npjob.py: gathers, sort, histogram over arrays
  sqlite  sqlite3 :memory: running a generated SQL script (verified output)
  sort    GNU sort of a generated file in one in-memory buffer (sha256 of output)
  mt      tests/progs/prog_mt: 4 threads writing/verifying one array
  redis   redis-server loaded with known data, redis-benchmark GET then SET;
          throughput and p50/p99, data verified by DEBUG DIGEST and values
  seq     bench/pager_bench --pattern seq (access_s)
  rand    bench/pager_bench --pattern rand (access_s)
  go      bench/harness/progs/gojob.go: a static Go program (comex swap modes only)"""

import hashlib
import json
import os
import random
import re
import resource
import socket
import subprocess
import time

from .sysenv import ROOT, benchlib, kill_session, kill_tree, log, read

PY = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else None
MIB = 1 << 20


class WorkloadError(Exception):
    pass


def popen(ctx, argv, i, stats, stdin=None, stdout=subprocess.PIPE, stderr=None, cwd=None):
    # a shell joins the cgroup, then execs the program (thread-safe, unlike preexec_fn)
    return subprocess.Popen(ctx.command(argv, i, stats), stdin=stdin, stdout=stdout, stderr=stderr,
                            env=ctx.env(), start_new_session=True, cwd=cwd)


def run_program(ctx, argv, i, stats, errpath, timeout, stdin_path=None, keep_tail=4096):
    """Runs one program to completion; hashes its stdout as it streams."""
    h = hashlib.sha256()
    tail = b""
    fin = open(stdin_path, "rb") if stdin_path else subprocess.DEVNULL
    ferr = open(errpath, "wb")
    t0 = time.monotonic()
    p = popen(ctx, argv, i, stats, stdin=fin, stderr=ferr)
    deadline = t0 + timeout
    timed_out = False
    try:
        os.set_blocking(p.stdout.fileno(), True)
        import selectors
        sel = selectors.DefaultSelector()
        sel.register(p.stdout, selectors.EVENT_READ)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                timed_out = True
                break
            if not sel.select(min(left, 1.0)):
                continue
            chunk = os.read(p.stdout.fileno(), 1 << 20)
            if not chunk:
                break
            h.update(chunk)
            tail = (tail + chunk)[-keep_tail:]
        if timed_out:
            try:
                os.killpg(p.pid, 9)
            except OSError:
                pass
        _, status, ru = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        kill_session(p.pid)   # e.g. comex run's embedded memnode, after a timeout
    finally:
        if p.returncode is None:
            kill_tree(p)
        p.stdout.close()
        ferr.close()
        if stdin_path:
            fin.close()
    t1 = time.monotonic()
    return {"time_s": t1 - t0, "rc": p.returncode, "timed_out": timed_out, "stdout_sha256": h.hexdigest(),
            "tail": tail.decode(errors="replace"), "maxrss_kib": ru.ru_maxrss, "majflt": ru.ru_majflt,
            "minflt": ru.ru_minflt, "utime_s": ru.ru_utime, "stime_s": ru.ru_stime}


class Workload:
    name = "?"
    metric = "time_s"          # primary metric
    higher_is_better = False
    description = ""
    # how it walks its memory, for the report's targets (docs/BENCH.md):
    # sequential | streaming | random | mixed
    access = "mixed"

    def __init__(self, size_mib, build, workdir):
        self.size = size_mib
        self.build = build
        self.workdir = workdir
        self.dir = os.path.join(workdir, "wl-%s-%d" % (self.name, size_mib))
        os.makedirs(self.dir, exist_ok=True)

    def precondition(self):
        return None

    def prepare(self):
        pass

    def refused_by(self, mode):
        """Why this program cannot run in mode, or None."""
        return None

    def argv(self):
        raise NotImplementedError

    def stdin_path(self):
        return None

    def params(self):
        return {"size_mib": self.size, "argv": self.argv(), "stdin": self.stdin_path()}

    def run(self, ctx, i, stats, timeout, tag):
        """One program instance; returns a result dict."""
        r = run_program(ctx, self.argv(), i, stats, os.path.join(self.workdir, "%s.err" % tag), timeout,
                        self.stdin_path())
        r["check"] = r["stdout_sha256"]
        r["footprint_kib"] = r["maxrss_kib"]
        self.post(r)
        return r

    def post(self, r):
        pass


class Python(Workload):
    name = "python"
    access = "random"
    description = "Python: build, mutate and hash a dict of records (tests/progs/pybuild.py)"

    def precondition(self):
        return None if PY else "/usr/bin/python3 is missing"

    def argv(self):
        # ~0.68 KiB of peak RSS per record (measured: 250000 -> 163 MiB)
        return [PY, str(ROOT / "tests/progs/pybuild.py"), str(int(self.size * 1530))]


class Numpy(Workload):
    name = "numpy"
    description = "numpy: random gathers, sort, element-wise passes, histogram (bench/harness/progs/npjob.py)"

    def precondition(self):
        if not PY:
            return "/usr/bin/python3 is missing"
        if subprocess.run([PY, "-c", "import numpy"], capture_output=True).returncode:
            return "python3-numpy is not installed (scripts/deps.sh installs it)"
        return None

    def argv(self):
        # peak RSS is about twice the argument (temporaries of the gathers)
        return [PY, str(ROOT / "bench/harness/progs/npjob.py"), str(max(8, self.size // 2))]


class Sqlite(Workload):
    name = "sqlite"
    description = "sqlite3 :memory: inserting, indexing, updating, joining and aggregating a table"

    def precondition(self):
        return None if shutil_which("sqlite3") else "sqlite3 is not installed"

    def rows(self):
        return int(self.size * 1100)

    def stdin_path(self):
        return os.path.join(self.dir, "db.sql")

    def prepare(self):
        n = self.rows()
        with open(self.stdin_path(), "w") as f:
            f.write("""PRAGMA cache_size = -%d;
CREATE TABLE t(id INTEGER PRIMARY KEY, k TEXT, v TEXT, n INTEGER);
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < %d)
INSERT INTO t SELECT x, printf('key%%08d', (x * 7919) %% %d), printf('%%.*c%%d', 150 + x %% 50, 'v', x * 31),
                     (x * 2654435761) %% 1000003 FROM c;
CREATE INDEX t_k ON t(k);
CREATE INDEX t_n ON t(n);
UPDATE t SET v = upper(v) WHERE id %% 3 = 0;
DELETE FROM t WHERE id %% 11 = 0;
SELECT count(*), sum(n), sum(length(v)), total(id) FROM t;
SELECT n %% 97 AS b, count(*), sum(length(k)), min(k), max(v) FROM t GROUP BY b ORDER BY b;
SELECT k, n FROM t WHERE k BETWEEN 'key00100000' AND 'key00100020' ORDER BY k;
SELECT count(*), sum(a.n + b.n) FROM t a JOIN t b ON a.n = b.id WHERE a.id %% 5 = 0;
PRAGMA integrity_check;
""" % (self.size * 4096, n, n + 7))

    def argv(self):
        return ["sqlite3", ":memory:"]


class Sort(Workload):
    name = "sort"
    access = "streaming"
    description = "GNU sort of a generated text file in one in-memory buffer (LC_ALL=C)"

    def input(self):
        return os.path.join(self.dir, "sort.in")

    def prepare(self):
        # sort's footprint is about 1.5x its input (lines + line table)
        target = int(self.size * MIB / 1.6)
        if os.path.exists(self.input()) and os.path.getsize(self.input()) >= target:
            return
        r = random.Random(7)
        with open(self.input(), "w") as f:
            size, i = 0, 0
            while size < target:
                line = "%016x %s %d\n" % (r.getrandbits(64), r.randbytes(r.randint(5, 40)).hex(), i)
                f.write(line)
                size += len(line)
                i += 1

    def argv(self):
        return ["env", "LC_ALL=C", "sort", "--parallel=2", "-S", "%dM" % (self.size * 2), self.input()]


class Mt(Workload):
    name = "mt"
    access = "streaming"
    description = "4 threads writing and verifying patterns in one array (tests/progs/prog_mt.c)"

    def bin(self):
        return os.path.join(self.build, "progs", "prog_mt")

    def precondition(self):
        return None if os.access(self.bin(), os.X_OK) else "%s is not built" % self.bin()

    def argv(self):
        return [self.bin(), str(max(4, self.size - 8)), "4"]


class PagerBench(Workload):
    metric = "time_s"   # the whole run (fill + passes); access_s is kept for the latency analysis
    pattern = "seq"
    passes = 3

    def bin(self):
        return os.path.join(self.build, "pager_bench")

    def precondition(self):
        return None if os.access(self.bin(), os.X_OK) else \
            "%s is not built yet (bench/pager_bench.c)" % self.bin()

    def argv(self):
        return benchlib.pager_bench_argv(self.build, self.pattern, max(4, self.size - 4), self.passes, 20)

    def post(self, r):
        line = [l for l in r["tail"].splitlines() if l.startswith("{")]
        if r["rc"] == 0 and line:
            j = json.loads(line[-1])
            r["check"] = j["checksum"]
            r["access_s"] = j["access_s"]
            r["fill_s"] = j.get("fill_s")
        elif r["rc"] == 0:
            r["rc"] = -1000
            r["error"] = "pager_bench printed no JSON line"


class Seq(PagerBench):
    name = "seq"
    access = "sequential"
    pattern = "seq"
    description = "pager_bench --pattern seq: every page in order, 3 passes, 20 % writes"


class Rand(PagerBench):
    name = "rand"
    access = "random"
    pattern = "rand"
    description = "pager_bench --pattern rand: every page in a random order, 3 passes, 20 % writes"


class Go(Workload):
    name = "go"
    access = "random"
    description = "Go: records in a map, random updates, sorted and hashed (bench/harness/progs/gojob.go; static, " \
                  "which comex run refuses: comex-swap modes only)"

    def go(self):
        # Debian's Go (scripts/deps.sh installs golang-go), else one on PATH
        return "/usr/bin/go" if os.access("/usr/bin/go", os.X_OK) else shutil_which("go")

    def bin(self):
        return os.path.join(self.dir, "gojob")

    def precondition(self):
        return None if self.go() else "no Go toolchain (scripts/deps.sh installs golang-go)"

    def prepare(self):
        env = dict(os.environ, GOCACHE=os.path.join(self.dir, "gocache"), GOPATH=os.path.join(self.dir, "gopath"),
                   GO111MODULE="off", GOPROXY="off", GOFLAGS="", CGO_ENABLED="0")
        subprocess.run([self.go(), "build", "-o", self.bin(), str(ROOT / "bench/harness/progs/gojob.go")],
                       env=env, check=True)

    def refused_by(self, mode):
        return "comex run refuses Go programs (comex swap serves them)" if mode.comex else None

    def argv(self):
        # about 0.5 KiB of peak RSS per record (measured: 800000 -> 396 MiB)
        return [self.bin(), str(self.size * 2000)]


def shutil_which(x):
    import shutil
    return shutil.which(x)


# ---------------------------------------------------------------- redis

class Resp:
    """A minimal RESP client over a unix socket."""

    def __init__(self, path, timeout=600):
        self.s = socket.socket(socket.AF_UNIX)
        self.s.settimeout(timeout)
        self.s.connect(path)
        self.buf = b""

    def _line(self):
        while b"\r\n" not in self.buf:
            d = self.s.recv(1 << 20)
            if not d:
                raise WorkloadError("redis closed the connection")
            self.buf += d
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _exact(self, n):
        while len(self.buf) < n + 2:
            d = self.s.recv(1 << 20)
            if not d:
                raise WorkloadError("redis closed the connection")
            self.buf += d
        out, self.buf = self.buf[:n], self.buf[n + 2:]
        return out

    def reply(self):
        line = self._line()
        t, rest = line[:1], line[1:]
        if t == b"+":
            return rest.decode()
        if t == b"-":
            raise WorkloadError("redis error: %s" % rest.decode())
        if t == b":":
            return int(rest)
        if t == b"$":
            n = int(rest)
            return None if n < 0 else self._exact(n)
        if t == b"*":
            n = int(rest)
            return None if n < 0 else [self.reply() for _ in range(n)]
        raise WorkloadError("bad RESP reply %r" % line[:80])

    def cmd(self, *args):
        self.s.sendall(encode(args))
        return self.reply()

    def close(self):
        self.s.close()


def encode(args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


class Redis(Workload):
    name = "redis"
    access = "random"
    metric = "get_rps"
    higher_is_better = True
    description = ("redis-server (unix socket) loaded with known data, then redis-benchmark: uniform random GETs, "
                   "then SETs, over the whole key space (50 clients)")
    VALUE = 1024

    def precondition(self):
        for p in ("redis-server", "redis-benchmark", "redis-cli"):
            if not shutil_which(p):
                return "%s is not installed (scripts/deps.sh installs redis-server and redis-tools)" % p
        return None

    def nkeys(self):
        # ~1.25 KiB of RSS per 1 KiB value (dict entry, sds header, jemalloc class)
        return max(1000, int(self.size * MIB / 1280))

    def value(self, i):
        # base64-like text: not trivially compressible, so zram is not flattered
        r = random.Random(i)
        head = b"v:%012d:" % i
        return head + bytes(r.choice(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
                            for _ in range(self.VALUE - len(head)))

    def load_path(self):
        return os.path.join(self.dir, "load.resp")

    def prepare(self):
        p = self.load_path()
        if os.path.exists(p) and os.path.getsize(p) > 0:
            return
        tmp = p + ".tmp"
        with open(tmp, "wb") as f:
            for i in range(self.nkeys()):
                f.write(encode((b"SET", b"key:%012d" % i, self.value(i))))
        os.rename(tmp, p)

    def ops(self):
        return max(20000, self.nkeys())

    def params(self):
        return {"size_mib": self.size, "keys": self.nkeys(), "value_bytes": self.VALUE, "get_ops": self.ops(),
                "set_ops": self.ops() // 4, "clients": 50}

    def argv(self):
        return ["redis-server"]

    def run(self, ctx, i, stats, timeout, tag):
        d = os.path.join(self.workdir, "redis-%s" % tag)
        os.makedirs(d, exist_ok=True)
        sock = os.path.join(d, "sock")
        for f in ("sock", "redis.pid"):
            try:
                os.unlink(os.path.join(d, f))
            except FileNotFoundError:
                pass
        argv = ["redis-server", "--port", "0", "--unixsocket", sock, "--dir", d, "--pidfile",
                os.path.join(d, "redis.pid"), "--save", "", "--appendonly", "no", "--enable-debug-command", "local",
                "--daemonize", "no", "--logfile", os.path.join(d, "log"), "--maxclients", "200"]
        err = open(os.path.join(self.workdir, "%s.err" % tag), "wb")
        t0 = time.monotonic()
        deadline = t0 + timeout
        p = popen(ctx, argv, i, stats, stdout=err, stderr=err)
        err.close()
        r = {"rc": None}
        try:
            c = None
            while time.monotonic() < deadline:
                if p.poll() is not None:
                    raise WorkloadError("redis-server exited with %s at start" % p.returncode)
                try:
                    c = Resp(sock)
                    if c.cmd("PING") == "PONG":
                        break
                except (OSError, WorkloadError):
                    c = None
                time.sleep(0.05)
            if c is None:
                raise WorkloadError("redis-server did not answer")
            t_load = time.monotonic()
            with open(self.load_path(), "rb") as fin:
                lp = subprocess.run(["redis-cli", "-s", sock, "--pipe"], stdin=fin, capture_output=True, text=True,
                                    timeout=max(10, deadline - time.monotonic()))
            if lp.returncode or "errors: 0" not in lp.stdout:
                raise WorkloadError("loading failed: %s %s" % (lp.stdout[-300:], lp.stderr[-300:]))
            r["load_s"] = time.monotonic() - t_load
            dbsize = c.cmd("DBSIZE")
            digest_load = c.cmd("DEBUG", "DIGEST")
            bench = {}
            for test, n in (("get", self.ops()), ("set", self.ops() // 4)):
                bp = subprocess.run(["redis-benchmark", "-s", sock, "-t", test, "-n", str(n), "-r", str(self.nkeys()),
                                     "-d", str(self.VALUE), "-c", "50", "--csv"], capture_output=True, text=True,
                                    timeout=max(10, deadline - time.monotonic()))
                if bp.returncode:
                    raise WorkloadError("redis-benchmark %s failed: %s" % (test, bp.stderr[-300:]))
                rows = [l for l in bp.stdout.splitlines() if l.startswith('"') and not l.startswith('"test"')]
                vals = [x.strip('"') for x in rows[-1].split(",")]
                bench[test] = {"rps": float(vals[1]), "avg_ms": float(vals[2]), "p50_ms": float(vals[4]),
                               "p95_ms": float(vals[5]), "p99_ms": float(vals[6]), "max_ms": float(vals[7])}
                if test == "get":
                    digest_get = c.cmd("DEBUG", "DIGEST")
            # after the SETs every value is its original or redis-benchmark's 'xxx...' payload
            # every sampled value is its original or redis-benchmark's one SET payload
            bad = changed = 0
            payloads = set()
            step = 8
            keys = list(range(0, self.nkeys(), step))
            for k in range(0, len(keys), 500):
                batch = keys[k:k + 500]
                vals = c.cmd("MGET", *[b"key:%012d" % j for j in batch])
                for j, v in zip(batch, vals):
                    if v == self.value(j):
                        continue
                    if v is None or v.startswith(b"v:") or len(v) != self.VALUE:
                        bad += 1
                    else:
                        changed += 1
                        payloads.add(v)
            if len(payloads) > 1:
                bad += len(payloads) - 1
            dbsize2 = c.cmd("DBSIZE")
            hwm = 0
            pid = read(os.path.join(d, "redis.pid"))
            if pid:
                for line in (read("/proc/%s/status" % pid, "") or "").splitlines():
                    if line.startswith("VmHWM:"):
                        hwm = int(line.split()[1])
            try:
                c.cmd("SHUTDOWN", "NOSAVE")
            except (OSError, WorkloadError):
                pass
            c.close()
            try:
                p.wait(max(5, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                raise WorkloadError("redis-server did not exit after SHUTDOWN")
            r["rc"] = p.returncode
            r["time_s"] = time.monotonic() - t0
            r.update(get_rps=bench["get"]["rps"], set_rps=bench["set"]["rps"], get=bench["get"], set=bench["set"],
                     get_p50_ms=bench["get"]["p50_ms"], get_p99_ms=bench["get"]["p99_ms"],
                     set_p50_ms=bench["set"]["p50_ms"], set_p99_ms=bench["set"]["p99_ms"],
                     footprint_kib=hwm, values_checked=len(keys), values_changed=changed, values_bad=bad)
            r["check"] = "dbsize=%s/%s digest=%s get_digest_same=%s bad_values=%d" % (
                dbsize, dbsize2, digest_load.decode() if isinstance(digest_load, bytes) else digest_load,
                digest_get == digest_load, bad)
        except (WorkloadError, subprocess.TimeoutExpired, OSError) as e:
            r["error"] = str(e)[:500]
            r["timed_out"] = isinstance(e, subprocess.TimeoutExpired) or time.monotonic() >= deadline
            r["rc"] = r["rc"] if r["rc"] is not None else -1000
            r["time_s"] = time.monotonic() - t0
        finally:
            kill_tree(p, grace=5)
        return r


WORKLOADS = {w.name: w for w in (Python, Numpy, Sqlite, Sort, Mt, Redis, Seq, Rand, Go)}
ALL_WORKLOADS = list(WORKLOADS)
