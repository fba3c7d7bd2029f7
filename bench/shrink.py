#!/usr/bin/env python3
"""The elastic shrink (issue 11 item 2): how fast a full memnode gives memory
back to its host when clients must move their pages off first.

Memnode `a` (--pool, --host-reserve) runs in a memory cgroup of its own (v1
or v2, made here; root needed); memnode `b` runs outside with room for
everything. tests/progs/prog_gate fills --program-mib under `comex run` with
only `a` in its config file, so its remote pages land there and leave `a`
almost no free block; then `b` is added to the file and the program connects
to it. A hog in `a`'s cgroup then takes enough memory that the host is
--deficit-mib below the reserve. Measured from the moment the hog starts
(it fills its memory in about a second): when it holds all of it, when `a`
sends its first SHRINK, when its pool in service (`comex
status --json`, polled every 50 ms) is --deficit-mib smaller, and the pages
the program moved (its log). The hog then leaves, the pool grows back, the
program's gate opens and its output must equal the native run's.
--runs repetitions; writes bench/results/shrink-<UTC>.json (schema
comex-bench-shrink/1) with per-run records and medians.

  python3 bench/shrink.py [--build DIR] [--runs 3] [--pool-mib 512] [--program-mib 480] [--deficit-mib 256]
"""

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import benchlib
from benchlib import clean_env, finish_machine_info, start_memnode, summary

SCHEMA = "comex-bench-shrink/1"
RESERVE_MIB = 512
POLL_S = 0.05


class Cgroup:
    """A memory cgroup (v2 when the root delegates memory, else v1) with a
    limit, removed (its processes killed) on close."""

    def __init__(self, name, limit_mib):
        v2 = Path("/sys/fs/cgroup/cgroup.controllers")
        if v2.exists() and "memory" in v2.read_text().split():
            self.path, limit = Path("/sys/fs/cgroup") / name, "memory.max"
        else:
            self.path, limit = Path("/sys/fs/cgroup/memory") / name, "memory.limit_in_bytes"
        self.path.mkdir()
        (self.path / limit).write_text(str(limit_mib << 20))
        self.limit_mib = limit_mib
        self.usage_file = self.path / ("memory.current" if limit == "memory.max" else "memory.usage_in_bytes")

    def wrap(self, cmd):
        """cmd, run inside this cgroup (joined before exec)."""
        return ["sh", "-c", 'echo $$ >"$0/cgroup.procs" && shift && exec "$@"', str(self.path), "x", *cmd]

    def usage_mib(self):
        return int(self.usage_file.read_text()) >> 20

    def close(self):
        for _ in range(50):
            pids = (self.path / "cgroup.procs").read_text().split()
            if not pids:
                break
            for p in pids:
                try:
                    os.kill(int(p), 9)
                except ProcessLookupError:
                    pass
            time.sleep(0.1)
        self.path.rmdir()


def wait_for(pred, limit_s, what):
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit_s:
        v = pred()
        if v:
            return v
        time.sleep(POLL_S)
    raise RuntimeError(f"timed out after {limit_s} s waiting for {what}")


def pool_mib(comex, token, port):
    out = subprocess.run([comex, "status", "--json", "--interval", "0", "--memnode", f"127.0.0.1:{port}",
                          "--token-file", str(token)], capture_output=True, text=True, env=clean_env())
    try:
        return int(json.loads(out.stdout)["memnodes"][0]["pool_bytes"]) >> 20
    except (ValueError, KeyError, IndexError):
        return None


def one_run(a, comex, gate_prog, tmp, token, r, native_out):
    cg = Cgroup(f"comex-shrink-bench-{os.getpid()}-{r}", a.pool_mib + RESERVE_MIB + 1024)
    procs = []
    try:
        # started inside the cgroup, so that its pool is charged there and what
        # it gives back shows in the cgroup's usage, which it reads
        mn_a, port_a = start_memnode(comex, tmp, f"a{r}", token, a.pool_mib, wrap=cg.wrap,
                                     extra=("--host-reserve", f"{RESERVE_MIB}M", "--hugepages", "false"))[:2]
        procs.append(mn_a)
        mn_b, port_b = start_memnode(comex, tmp, f"b{r}", token, a.program_mib + 256)[:2]
        procs.append(mn_b)
        conf, gate = tmp / f"run{r}.conf", tmp / f"gate{r}"
        conf.write_text(f"memnode = 127.0.0.1:{port_a}\n")
        err = tmp / f"prog{r}.err"
        out = tmp / f"prog{r}.out"
        stats = tmp / f"prog{r}.json"
        with open(out, "w") as fo, open(err, "w") as fe:
            # log-level 2: the runtime says "connected" only when asked for info (D41)
            prog = subprocess.Popen([comex, "run", f"--local-mem={a.local_mib}M", "--log-level=2", f"--config={conf}",
                                     f"--token-file={token}", f"--stats-json={stats}", "--", gate_prog,
                                     str(a.program_mib), str(gate), "idle"], stdout=fo, stderr=fe, env=clean_env())
        procs.append(prog)
        wait_for(lambda: "filled" in (benchlib.read_text(out) or ""), 600, "the program to fill its memory")
        conf.write_text(f"memnode = 127.0.0.1:{port_a}, 127.0.0.1:{port_b}\n")
        wait_for(lambda: re.search(rf"127\.0\.0\.1:{port_b} \(nid \d+\) connected", benchlib.read_text(err) or ""),
                 60, "the program to connect to memnode b")
        pool0 = pool_mib(comex, token, port_a)
        # the host must end up deficit-mib short of the reserve: what the
        # cgroup still allows now, less the reserve, plus the deficit
        hog_mib = cg.limit_mib - cg.usage_mib() - RESERVE_MIB + a.deficit_mib
        ready, stop = tmp / f"hog{r}.ready", tmp / f"hog{r}.stop"
        t0 = time.monotonic()  # the host starts running short as the hog fills
        hog = subprocess.Popen(cg.wrap([sys.executable, "-c",
                                        "import os, sys, time\nb = bytearray(int(sys.argv[1]) << 20)\n"
                                        "for i in range(0, len(b), 4096): b[i] = 1\n"
                                        "open(sys.argv[2], 'w').write('ready')\n"
                                        "while not os.path.exists(sys.argv[3]): time.sleep(0.02)\n",
                                        str(hog_mib), str(ready), str(stop)]))
        procs.append(hog)
        wait_for(lambda: ready.exists(), 120, "the hog")
        t_ready = time.monotonic() - t0
        log_a = tmp / f"a{r}.log"
        wait_for(lambda: "asking the clients holding frames" in (benchlib.read_text(log_a) or ""), 60,
                 "memnode a's first SHRINK")
        t_shrink = time.monotonic() - t0
        target = pool0 - a.deficit_mib
        wait_for(lambda: (pool_mib(comex, token, port_a) or 1 << 30) <= target, 300,
                 f"memnode a's pool to fall to {target} MiB")
        t_given = time.monotonic() - t0
        pool1 = pool_mib(comex, token, port_a)
        moved = sum(int(m) for m in re.findall(r"(\d+) pages moved off frames", benchlib.read_text(err) or ""))
        stop.write_text("")
        hog.wait()
        wait_for(lambda: pool_mib(comex, token, port_a) == pool0, 300, "memnode a's pool to grow back")
        t_back = time.monotonic() - t0
        gate.write_text("")
        rc = prog.wait()
        if rc or (benchlib.read_text(out) or "") != native_out:
            raise RuntimeError(f"run {r}: exit {rc} or output differs from the native run: "
                               f"{(benchlib.read_text(err) or '')[-1500:]}")
        s = json.loads(stats.read_text())
        rec = {"hog_mib": hog_mib, "hog_ready_s": round(t_ready, 3), "pool_before_mib": pool0, "pool_after_mib": pool1,
               "first_shrink_s": round(t_shrink, 3), "deficit_given_s": round(t_given, 3),
               "grown_back_s": round(t_back, 3), "pages_moved_logged": moved,
               "pages_migrated": s["pages_migrated"], "pages_migrated_home": s["pages_migrated_home"],
               "moved_mib_per_s": round(moved / 256 / max(t_given - t_shrink, 1e-3), 1)}
        print(f"run {r}: hog filled after {t_ready:.2f} s, first SHRINK after {t_shrink:.2f} s, {a.deficit_mib} MiB given back after {t_given:.2f} s "
              f"({moved} pages moved), pool {pool0} -> {pool1} MiB", file=sys.stderr)
        return rec
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                p.kill()
            p.wait()
        cg.close()


def main(argv):
    ap = benchlib.arg_parser(__doc__.split("\n\n")[0])
    ap.add_argument("--pool-mib", type=int, default=512)
    ap.add_argument("--program-mib", type=int, default=480)
    ap.add_argument("--local-mib", type=int, default=64)
    ap.add_argument("--deficit-mib", type=int, default=256)
    ap.add_argument("--no-save", action="store_true")
    a = ap.parse_args(argv)
    if os.geteuid():
        sys.exit("bench/shrink.py: creating a memory cgroup needs root")
    build = Path(a.build).resolve()
    comex, gate_prog = str(build / "comex"), str(build / "progs" / "prog_gate")
    setup = {"pool_mib": a.pool_mib, "host_reserve_mib": RESERVE_MIB, "program_mib": a.program_mib,
             "local_mib": a.local_mib, "deficit_mib": a.deficit_mib, "runs": a.runs,
             "memnodes": "a in its own memory cgroup (--host-reserve), b outside; loopback TCP",
             "program": "prog_gate MiB GATE idle (fills, then waits; checked at the end)"}
    doc, times0 = benchlib.start_doc(SCHEMA, setup=setup, runs=[])
    with tempfile.TemporaryDirectory(prefix="comex-shrink-") as td:
        tmp = Path(td)
        token = tmp / "token"
        subprocess.run([comex, "token", str(token)], check=True, stdout=subprocess.DEVNULL, env=clean_env())
        native = subprocess.run([gate_prog, str(a.program_mib), "/"], capture_output=True, text=True, check=True)
        for r in range(a.runs):
            doc["runs"].append(one_run(a, comex, gate_prog, tmp, token, r, native.stdout))
    finish_machine_info(doc["machine"], times0)
    doc["summary"] = {k: summary([x[k] for x in doc["runs"]], 3)
                      for k in ("hog_ready_s", "first_shrink_s", "deficit_given_s", "grown_back_s", "pages_moved_logged",
                                "moved_mib_per_s")}
    for k, v in doc["summary"].items():
        print(f"{k}: median {v['median']} (min {v['min']}, max {v['max']})")
    if not a.no_save:
        print(benchlib.write_json(doc, "shrink"))


if __name__ == "__main__":
    main(sys.argv[1:])
