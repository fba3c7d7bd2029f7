#!/usr/bin/env python3
"""Redis BGSAVE under comex run at 25 % of its footprint, lazy fork against
eager fork (docs/DECISIONS.md D45; issue 9 item 8).

redis-server (embedded memnode, shared memory) is filled with DEBUG POPULATE
to about --size-mib of data, then BGSAVE forks a child that writes every key
to disk while the parent keeps serving. With `--lazy-fork false` the fork
first brings every remote page home (D45); with `--lazy-fork true` the parent's
handler serves the child from a snapshot. Per run: redis's own fork time
(INFO `latest_fork_usec`), the BGSAVE wall time (polled every 20 ms), the
parent's peak resident memory, the bytes read from the memnode during the
BGSAVE (live counters before and after), the pages served to the child,
and the dump's check: loaded by a plain redis-server it must give the same
DEBUG DIGEST as the data had. Modes alternate within each repetition; medians
of --runs. Writes bench/results/fork-<UTC>.json (schema comex-bench-fork/2)
and prints a table; exits 1 when a dump's digest differs.

  python3 bench/fork.py [--build DIR] [--runs 3] [--size-mib 512] [--fraction 0.25] [--quick]
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402
from benchlib import summary  # noqa: E402

SCHEMA = "comex-bench-fork/2"   # /1 had "version": 1 and "bench": "fork" where the schema now stands
VALUE_BYTES = 1000  # per key; redis's own overhead adds about 100 bytes


def cli(sock, *args, timeout=600):
    r = subprocess.run(["redis-cli", "-s", sock, *args], capture_output=True, text=True, timeout=timeout)
    return r.stdout.strip()


def info(sock, section):
    out = {}
    for line in cli(sock, "INFO", section).splitlines():
        if ":" in line:
            k, v = line.split(":", 1)
            out[k] = v.strip()
    return out


def start_server(d, prefix, log):
    sock = str(d / "sock")
    cmd = prefix + ["redis-server", "--port", "0", "--unixsocket", sock, "--dir", str(d), "--dbfilename",
                    "dump.rdb", "--save", "", "--appendonly", "no", "--enable-debug-command", "local"]
    p = subprocess.Popen(cmd, stdout=open(log, "w"), stderr=subprocess.STDOUT)
    for _ in range(600):
        if os.path.exists(sock) and cli(sock, "PING") == "PONG":
            return p, sock
        if p.poll() is not None:
            raise RuntimeError(f"redis-server exited ({p.returncode}): {Path(log).read_text()[:1500]}")
        time.sleep(0.05)
    raise RuntimeError("redis-server did not start")


def stop(p, sock):
    cli(sock, "SHUTDOWN", "NOSAVE")
    try:
        p.wait(timeout=120)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()


def populate(sock, keys):
    cli(sock, "DEBUG", "POPULATE", str(keys), "k", str(VALUE_BYTES))
    return cli(sock, "DEBUG", "DIGEST")


def native_peak(keys, work):
    d = Path(tempfile.mkdtemp(dir=work))
    p, sock = start_server(d, [], d / "log")
    digest = populate(sock, keys)
    hwm = int(next(line.split()[1] for line in open(f"/proc/{p.pid}/status") if line.startswith("VmHWM")))
    stop(p, sock)
    shutil.rmtree(d)
    return hwm, digest


def dump_digest(d, work):
    p2 = Path(tempfile.mkdtemp(dir=work))
    shutil.copy(d / "dump.rdb", p2 / "dump.rdb")
    p, sock = start_server(p2, [], p2 / "log")
    digest = cli(sock, "DEBUG", "DIGEST")
    stop(p, sock)
    shutil.rmtree(p2)
    return digest


def live_stats(build, pid):
    """The runtime's live counters (comex stats PID)."""
    out = subprocess.run([str(Path(build) / "comex"), "stats", str(pid)], capture_output=True, text=True, timeout=30)
    return json.loads(out.stdout)


def server_pid(sock):
    return int(info(sock, "server")["process_id"])


def run_once(args, lazy, local_kib, keys, digest, work):
    d = Path(tempfile.mkdtemp(dir=work))
    stats = d / "stats.json"
    prefix = [str(Path(args.build) / "comex"), "run", "--local-mem", f"{local_kib}K", "--stats-json", str(stats),
              "--lazy-fork", "true" if lazy else "false", "--"]
    p, sock = start_server(d, prefix, d / "log")
    ok = populate(sock, keys) == digest
    pid = server_pid(sock)
    s0 = live_stats(args.build, pid)
    t0 = time.monotonic()
    assert cli(sock, "BGSAVE") == "Background saving started"
    while info(sock, "persistence").get("rdb_bgsave_in_progress") != "0":
        time.sleep(0.02)
    bgsave_s = time.monotonic() - t0
    pers, st = info(sock, "persistence"), info(sock, "stats")
    s1 = live_stats(args.build, pid)
    stop(p, sock)
    s = json.loads(stats.read_text())
    saved = pers.get("rdb_last_bgsave_status") == "ok"
    ok = ok and saved and dump_digest(d, work) == digest
    shutil.rmtree(d)
    return {"lazy_fork": lazy, "correct": ok, "fork_ms": int(st.get("latest_fork_usec", 0)) / 1000.0,
            "bgsave_s": round(bgsave_s, 3), "resident_peak_mib": round(s["resident_peak_bytes"] / 2**20, 1),
            "local_mem_mib": round(s["local_mem_bytes"] / 2**20, 1), "bytes_read_mib": round((s1["bytes_read"] - s0["bytes_read"]) / 2**20, 1),
            "resident_before_mib": round(s0["resident_bytes"] / 2**20, 1),
            "resident_after_mib": round(s1["resident_bytes"] / 2**20, 1),
            "pages_child_served": s.get("pages_child_served", 0), "forks_lazy": s.get("forks_lazy", 0),
            "budget_overshoots": s["budget_overshoots"]}


def main(argv):
    ap = benchlib.arg_parser(__doc__.split("\n\n")[0])
    ap.add_argument("--size-mib", type=int, default=512, help="data loaded into redis (default 512)")
    ap.add_argument("--fraction", type=float, default=0.25, help="--local-mem as a fraction of the native peak")
    args = benchlib.quick(ap.parse_args(argv), size_mib=24)
    for tool in ("redis-server", "redis-cli"):
        if not shutil.which(tool):
            print(f"fork: {tool} is not installed (scripts/deps.sh installs redis)", file=sys.stderr)
            return 77
    args.build = str(Path(args.build).resolve())
    doc, times0 = benchlib.start_doc(SCHEMA, size_mib=args.size_mib, fraction=args.fraction)
    keys = args.size_mib * 2**20 // (VALUE_BYTES + 100)
    work = tempfile.mkdtemp(prefix="comex-fork-bench.")
    try:
        hwm_kib, digest = native_peak(keys, work)
        local_kib = int(hwm_kib * args.fraction)
        runs = []
        for r in range(args.runs):
            for lazy in ((False, True) if r % 2 == 0 else (True, False)):
                rec = run_once(args, lazy, local_kib, keys, digest, work)
                rec["run"] = r
                runs.append(rec)
                print(json.dumps(rec), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    by = {}
    for lazy in (False, True):
        recs = [x for x in runs if x["lazy_fork"] == lazy]
        by["lazy" if lazy else "eager"] = {k: summary([x[k] for x in recs], 3)
                                            for k in ("fork_ms", "bgsave_s", "resident_peak_mib", "bytes_read_mib",
                                                      "pages_child_served", "budget_overshoots")}
        by["lazy" if lazy else "eager"]["all_correct"] = all(x["correct"] for x in recs)
    doc.update(native_peak_kib=hwm_kib, local_mem_kib=local_kib, keys=keys, value_bytes=VALUE_BYTES, runs=runs,
               summary=by)
    benchlib.finish_doc(doc, times0, "fork", args)
    print(f"\nredis {args.size_mib} MiB (native peak {hwm_kib // 1024} MiB), --local-mem {local_kib // 1024} MiB, "
          f"medians of {args.runs}:")
    print(f"{'mode':6} {'fork ms':>9} {'BGSAVE s':>9} {'parent peak MiB':>16} {'BGSAVE read MiB':>16} "
          f"{'child pages':>12} ok")
    for mode, s in by.items():
        print(f"{mode:6} {s['fork_ms']['median']:9.1f} {s['bgsave_s']['median']:9.2f} "
              f"{s['resident_peak_mib']['median']:16.1f} {s['bytes_read_mib']['median']:16.1f} "
              f"{s['pages_child_served']['median']:12.0f} {s['all_correct']}")
    bad = [x for x in runs if not x["correct"]]
    benchlib.check(not bad, f"{len(bad)} BGSAVE(s) gave a dump whose digest differs from the data's")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
