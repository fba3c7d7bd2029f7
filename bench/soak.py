#!/usr/bin/env python3
"""Soak benchmark of memnode failures under a running program: three
`comex memnode` processes on loopback TCP (started here), bench/pager_bench
under `comex run` at 25 % of its native peak RSS, looped for --duration
seconds while one memnode after the other (round robin) is SIGKILLed, left
down for --pause seconds and restarted on its port (the client rejoins it).
Two configurations: `--replicas 2` (r2) and `--replicas 1 --backup-dir`
(r1-backup), --runs times each in alternating order; every run starts with
one iteration without kills (the wall-time reference).

Every iteration's checksum is compared with the native run's. Writes
bench/results/soak-<UTC>.json (schema comex-bench-soak/1) with per-kill,
per-iteration and per-run records, medians per configuration, and
docs/SOAK.md (generated). Exit status 1 when an iteration printed a wrong
checksum, exited non-zero, or (r2) lost a page. A new iteration starts only
while all three memnodes are up (`comex run` refuses to start when one of
its --memnode addresses cannot be reached).

  python3 bench/soak.py [--build DIR] [--duration 120] [--runs 3] [--configs r2,r1-backup] [--quick]
"""

import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import benchlib
from benchlib import ROOT, cpu_times, finish_machine_info, git_revision, machine_info, summary, utc_stamp

SCHEMA = "comex-bench-soak/1"
NODES = ("a", "b", "c")
CONFIGS = {"r2": ["--replicas=2"], "r1-backup": ["--replicas=1", "--backup-dir={tmp}/backup"]}
# Counters of --stats-json kept per iteration and summed per run.
COUNTERS = ("pages_evicted", "pages_written", "pages_failed_over", "pages_rereplicated", "pages_lost",
            "pages_corrupt", "memnodes_rejoined", "pages_backup_written", "pages_backup_read", "budget_overshoots")
CONNECTED = re.compile(r"client 0x[0-9a-f]+: connected")
FAILED = re.compile(r"memnode \S+ \(nid \d+\) failed:")
REPAIRED = re.compile(r"out of use \(failed or drained\).*?every page has its \d+ copies", re.S)


class Memnodes:
    """The three memnodes; kill() and restart() one of them on its port."""

    def __init__(self, comex, tmp, token, pool_mib):
        self.args = (comex, tmp, token, pool_mib)
        self.procs, self.ports = {}, {}
        for n in NODES:
            self.procs[n], self.ports[n] = self._start(n, 0)

    def _start(self, name, port):
        comex, tmp, token, pool_mib = self.args
        # idle-spin 0: three polling memnodes would take the shared machine's cores
        return benchlib.start_memnode(comex, tmp, name, token, pool_mib, port, extra=("--idle-spin=0",))

    def addresses(self):
        return ",".join(f"127.0.0.1:{self.ports[n]}" for n in NODES)

    def kill(self, name):
        self.procs[name].send_signal(signal.SIGKILL)
        self.procs[name].wait()

    def connections(self):
        """How many client connections each memnode has logged so far."""
        return [len(CONNECTED.findall(benchlib.read_text(self.args[1] / f"{n}.log") or "")) for n in NODES]

    def restart(self, name):
        self.procs[name], _ = self._start(name, self.ports[name])

    def stop(self):
        for p in self.procs.values():
            p.kill()
            p.wait()


class Iteration:
    """One `comex run` of the workload, in the background."""

    def __init__(self, cmd, tmp, tag, nodes):
        self.tmp, self.tag, self.kills, self.nodes = tmp, tag, 0, nodes
        self.conns0, self.connected = nodes.connections(), False
        self.err = tmp / f"{tag}.err"
        self.t0 = time.monotonic()
        with open(tmp / f"{tag}.out", "w") as out, open(self.err, "w") as err:
            self.p = subprocess.Popen(cmd, stdout=out, stderr=err, env=benchlib.clean_env())

    def is_connected(self):
        """The program has reached every memnode (each logged a new client):
        a kill before that makes `comex run` refuse to start, which is not
        what the soak measures."""
        if not self.connected:
            self.connected = all(b > a for a, b in zip(self.conns0, self.nodes.connections()))
        return self.connected

    def err_text(self):
        return benchlib.read_text(self.err) or ""

    def record(self, ref_checksum):
        rc = self.p.wait()
        wall = time.monotonic() - self.t0
        lines = [ln for ln in (benchlib.read_text(self.tmp / f"{self.tag}.out") or "").splitlines()
                 if ln.startswith("{")]
        checksum = json.loads(lines[-1]).get("checksum") if lines else None
        stats = json.loads(benchlib.read_text(self.tmp / f"{self.tag}.json") or "{}")
        err = self.err_text()
        rec = {"tag": self.tag, "wall_s": round(wall, 3), "exit_code": rc, "correct": checksum == ref_checksum,
               "checksum": checksum, "kills_during": self.kills,
               "failures_logged": len(FAILED.findall(err)),
               "rejoins_logged": err.count("connected: new pages may go there"),
               **{k: stats.get(k) for k in COUNTERS}}
        if rc or not rec["correct"]:
            rec["errors"] = [ln for ln in err.splitlines() if ln.startswith(("comex: error", "comex: warning"))][:5]
        return rec


def soak_run(a, nodes, tmp, cfg, run_no, wl, lm, token, ref):
    """One run of configuration cfg: a reference iteration, then --duration
    seconds of iterations with kills. Returns its record."""
    def command(tag):
        opts = [o.format(tmp=tmp) for o in CONFIGS[cfg]]
        return [str(a.build / "comex"), "run", f"--local-mem={lm}", f"--token-file={token}",
                "--memnode=" + nodes.addresses(), f"--stats-json={tmp / tag}.json", *opts, "--"] + wl

    (tmp / "backup").mkdir(exist_ok=True)
    base = Iteration(command(f"{cfg}-{run_no}-base"), tmp, f"{cfg}-{run_no}-base", nodes).record(ref)
    if base["exit_code"] or not base["correct"]:
        raise RuntimeError(f"{cfg}: the reference iteration without kills failed: {base}")
    guard = max(300.0, 20 * base["wall_s"])  # an iteration this long is taken as hung and killed
    print(f"{cfg} run {run_no}: reference {base['wall_s']:.1f} s, correct {base['correct']}", file=sys.stderr)
    iters, kills = [], []
    t_start = time.monotonic()
    t_end = t_start + a.duration
    cur, n_iter, down, next_kill = None, 0, None, t_start + a.interval
    last = None  # (iteration, err offset) at the last kill, for the repair wait
    while True:
        now = time.monotonic()
        if cur and cur.p.poll() is None and now - cur.t0 > guard:
            cur.p.kill()
        if cur and cur.p.poll() is not None:
            iters.append(cur.record(ref))
            cur = None
        # no iteration starts while a memnode is down: `comex run` refuses
        # to start when one of its --memnode addresses cannot be reached
        if cur is None and now < t_end and down is None:
            tag = f"{cfg}-{run_no}-i{n_iter}"
            cur, n_iter = Iteration(command(tag), tmp, tag, nodes), n_iter + 1
        if down and (now >= down[1] or now >= t_end):
            nodes.restart(down[0])
            kills[-1]["down_s"] = round(time.monotonic() - kills[-1]["t_s"] - t_start, 3)
            down, next_kill = None, time.monotonic() + a.interval
        elif not down and cur and now >= next_kill and now < t_end and cur.is_connected():
            # the previous failure repaired: its iteration ended, or it logged
            # every page whole again (None: nothing to repair without replicas)
            repaired = None if "backup" in cfg else (last is None or last[0].p.poll() is not None or
                                                     REPAIRED.search(last[0].err_text()[last[1]:]) is not None)
            if repaired is not False or now >= next_kill + a.repair_wait:
                name = NODES[(len(kills) + run_no) % len(NODES)]
                offset = len(cur.err_text())  # before the kill: the client may log the failure at once
                nodes.kill(name)
                cur.kills += 1
                kills.append({"t_s": round(now - t_start, 3), "node": name, "port": nodes.ports[name],
                              "iteration": cur.tag, "waited_for_repair_s": round(now - next_kill, 3),
                              "previous_repaired": repaired})
                last, down = (cur, offset), (name, now + a.pause)
        if last and "detected_s" not in kills[-1] and FAILED.search(last[0].err_text()[last[1]:]):
            kills[-1]["detected_s"] = round(now - t_start - kills[-1]["t_s"], 3)
        if cur is None and down is None and now >= t_end:
            break
        time.sleep(0.05)
    walls = [i["wall_s"] for i in iters]
    detected = [k["detected_s"] for k in kills if "detected_s" in k]
    totals = {k: sum(i[k] or 0 for i in iters) for k in COUNTERS}
    rec = {"config": cfg, "run": run_no, "reference": base, "iterations": iters, "kills": kills,
           "soak_s": round(time.monotonic() - t_start, 3), "kills_done": len(kills),
           "kills_before_repair": sum(k["previous_repaired"] is False for k in kills),
           "wrong_outputs": sum(not i["correct"] for i in iters), "nonzero_exits": sum(i["exit_code"] != 0 for i in iters),
           "kills_detected": len(detected), "detected_median_s": statistics.median(detected) if detected else None,
           "iteration_wall_median_s": statistics.median(walls), "slowdown": statistics.median(walls) / base["wall_s"],
           **totals}
    print(f"{cfg} run {run_no}: {len(iters)} iterations, {len(kills)} kills, {rec['wrong_outputs']} wrong, "
          f"{rec['nonzero_exits']} non-zero exits, lost {totals['pages_lost']}, failed over "
          f"{totals['pages_failed_over']}, rejoined {totals['memnodes_rejoined']}, "
          f"median iteration {rec['iteration_wall_median_s']:.1f} s vs {base['wall_s']:.1f} s", file=sys.stderr)
    return rec


def failures(cfg, run):
    """What is wrong with a run: a wrong output, a failed program, a lost page (r2)."""
    bad = [f"{run['wrong_outputs']} wrong outputs"] if run["wrong_outputs"] else []
    bad += [f"{run['nonzero_exits']} non-zero exits"] if run["nonzero_exits"] else []
    bad += [f"{run['pages_corrupt']} corrupt pages"] if run["pages_corrupt"] else []
    if run["pages_lost"] and "backup" not in cfg:  # promised only when no kill came before the repair
        bad.append(f"{run['pages_lost']} pages lost" + (f" ({run['kills_before_repair']} kills before the previous "
                                                         f"failure was repaired)" if run["kills_before_repair"] else ""))
    first = next((i for i in run["iterations"] if i["exit_code"] or not i["correct"]), None)
    if first:
        bad.append(f"first bad iteration {first['tag']}: exit {first['exit_code']}, checksum {first['checksum']}, "
                   f"{first['wall_s']} s, {first['kills_during']} kills during it: {' | '.join(first['errors'])}")
    return bad


def markdown(doc, json_name):
    w = doc["workload"]
    m = doc["machine"]
    out = [f"# Soak: memnodes killed and restarted under a running program",
           "", f"<!-- generated by bench/soak.py from bench/results/{json_name}; do not edit -->", "",
           f"`pager_bench --pattern {w['pattern']} --size-mib {w['size_mib']} --passes {w['passes']} "
           f"--write-pct {w['write_pct']}` under `comex run --local-mem {w['local_mem']}` (25 % of its native "
           f"peak RSS), three memnodes on loopback TCP (`idle-spin 0`), looped for {w['duration_s']} s per run "
           f"while one memnode after the other is SIGKILLed, left down {w['pause_s']} s and restarted on its "
           f"port, the next kill {w['interval_s']} s after the restart (with `replicas 2` also after the "
           f"re-replication of the previous failure, up to {w['repair_wait_s']} s). {w['runs']} runs per "
           f"configuration; counters are summed over a run's iterations, then the median over runs is shown "
           f"(min-max). Wall time: median iteration with kills / the run's reference iteration without kills.",
           "", f"Machine: {m['cores']} cores, kernel {m['kernel']}, load average {' '.join(m['loadavg_start'])} at "
           f"the start, {' '.join(m.get('loadavg_end', []))} at the end; git {doc['git']['rev'][:12]}"
           f"{' (dirty)' if doc['git']['dirty'] else ''}.", "",
           "| configuration | iterations | kills | wrong or missing outputs | non-zero exits | pages lost | pages corrupt "
           "| failed over | re-replicated | backup reads | memnodes rejoined | wall with kills / without |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]

    def cell(s, digits=0):
        f = f"{{:.{digits}f}}"
        return f.format(s["median"]) + ("" if s["min"] == s["max"] else f" ({f.format(s['min'])}-{f.format(s['max'])})")
    for name, c in doc["configs"].items():
        s = c["summary"]
        out.append(f"| {name} (`{' '.join(CONFIGS[name]).replace('={tmp}/backup', ' DIR')}`) | {cell(s['iterations'])} "
                   f"| {cell(s['kills_done'])} | {c['wrong_outputs_total']} | {c['nonzero_exits_total']} "
                   f"| {cell(s['pages_lost'])} | {cell(s['pages_corrupt'])} | {cell(s['pages_failed_over'])} "
                   f"| {cell(s['pages_rereplicated'])} | {cell(s['pages_backup_read'])} "
                   f"| {cell(s['memnodes_rejoined'])} | {cell(s['slowdown'], 2)} |")
    out += [""] + [f"{name}: the client logged a failure {c['detected_s']['median']:.2f} s after its kill "
                   f"(median of {c['detected_s']['n']} kills, max {c['detected_s']['max']:.2f} s, polled every "
                   f"50 ms; {c['kills_undetected']} kills not logged before their iteration ended)."
                   for name, c in doc["configs"].items()]
    out += ["", "With `replicas 1` + `backup-dir`, `pages lost` counts remote copies lost with a killed memnode; "
            "their pages are read back from the backup file (`backup reads`), so the output stays correct.", ""]
    for name, c in doc["configs"].items():
        for p in c["problems"]:
            out.append(f"- **{name}: {p}**")
    return "\n".join(out).rstrip() + "\n"


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--duration", type=float, default=120, help="seconds of kills per run (default 120)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--configs", default="r2,r1-backup")
    ap.add_argument("--size-mib", type=int, default=256)
    ap.add_argument("--passes", type=int, default=3)
    ap.add_argument("--write-pct", type=int, default=20)
    ap.add_argument("--pattern", default="rand")
    ap.add_argument("--pause", type=float, default=2.0, help="seconds a killed memnode stays down")
    ap.add_argument("--interval", type=float, default=8.0, help="seconds from a restart to the next kill")
    ap.add_argument("--repair-wait", type=float, default=30.0,
                    help="replicas 2: wait at most this long for the previous failure's re-replication")
    ap.add_argument("--quick", action="store_true", help="a few seconds at 32 MiB, one run (smoke test)")
    ap.add_argument("--no-save", action="store_true", help="write neither the JSON nor docs/SOAK.md")
    ap.add_argument("--doc", default=str(ROOT / "docs" / "SOAK.md"))
    a = ap.parse_args(argv)
    if a.quick:
        a.duration, a.runs, a.size_mib, a.passes, a.pause, a.interval = 3, 1, 32, 2, 0.3, 0.8
    for c in a.configs.split(","):
        if c not in CONFIGS:
            ap.error(f"--configs: unknown configuration {c!r} (known: {', '.join(CONFIGS)})")
    a.build = Path(a.build).resolve()
    comex = str(a.build / "comex")
    times0, machine = cpu_times(), machine_info()
    wl = [str(a.build / "pager_bench"), "--pattern", a.pattern, "--size-mib", str(a.size_mib),
          "--passes", str(a.passes), "--write-pct", str(a.write_pct), "--seed", "1"]
    doc = {"schema": SCHEMA, "timestamp": utc_stamp(), "git": git_revision(), "machine": machine,
           "memnodes": "three `comex memnode` on 127.0.0.1 (TCP), pool = size + 64 MiB each, idle-spin 0",
           "configs": {}}
    with tempfile.TemporaryDirectory(prefix="comex-soak-") as td:
        tmp = Path(td)
        token = tmp / "token"
        subprocess.run([comex, "token", str(token)], check=True, stdout=subprocess.DEVNULL, env=benchlib.clean_env())
        rc, native_s, peak_kib, ref = benchlib.run_logged(wl, tmp, "native")
        if rc or not ref:
            raise RuntimeError(f"native run failed: {benchlib.read_text(tmp / 'native.err')}")
        lm = f"{peak_kib // 4}K"
        doc["workload"] = {"program": "pager_bench", "pattern": a.pattern, "size_mib": a.size_mib,
                           "passes": a.passes, "write_pct": a.write_pct, "native_wall_s": round(native_s, 3),
                           "native_peak_kib": peak_kib, "local_mem": lm, "checksum": ref["checksum"],
                           "duration_s": a.duration, "pause_s": a.pause, "interval_s": a.interval,
                           "repair_wait_s": a.repair_wait, "runs": a.runs, "quick": a.quick}
        nodes = Memnodes(comex, tmp, token, a.size_mib + 64)
        runs = {c: [] for c in a.configs.split(",")}
        try:
            for r in range(a.runs):
                order = list(runs) if r % 2 == 0 else list(runs)[::-1]
                for cfg in order:
                    runs[cfg].append(soak_run(a, nodes, tmp, cfg, r, wl, lm, token, ref["checksum"]))
        finally:
            nodes.stop()
    bad = False
    for cfg, rl in runs.items():
        problems = [f"run {r['run']}: {p}" for r in rl for p in failures(cfg, r)]
        bad |= bool(problems)
        doc["configs"][cfg] = {
            "options": CONFIGS[cfg], "runs": rl, "problems": problems,
            "wrong_outputs_total": sum(r["wrong_outputs"] for r in rl),
            "nonzero_exits_total": sum(r["nonzero_exits"] for r in rl),
            "detected_s": summary([k["detected_s"] for r in rl for k in r["kills"] if "detected_s" in k] or [0.0], 3),
            "kills_undetected": sum(r["kills_done"] - r["kills_detected"] for r in rl),
            "summary": {k: summary([float(r[k]) for r in rl], 4) for k in
                        ("kills_done", "kills_before_repair", "slowdown", "iteration_wall_median_s") + COUNTERS} |
            {"iterations": summary([float(len(r["iterations"])) for r in rl], 4)}}
    finish_machine_info(machine, times0)
    doc["warnings"] = benchlib.busy_warnings(machine)
    if not a.no_save:
        path = benchlib.write_json(doc, "soak")
        Path(a.doc).write_text(markdown(doc, path.name))
        print(path)
    for cfg, c in doc["configs"].items():
        s = c["summary"]
        print(f"{cfg}: {s['kills_done']['median']:.0f} kills, {c['wrong_outputs_total']} wrong outputs, "
              f"{c['nonzero_exits_total']} non-zero exits, pages lost {s['pages_lost']['median']:.0f}, "
              f"wall with kills / without {s['slowdown']['median']:.2f}, failure logged after "
              f"{c['detected_s']['median']:.2f} s (median)"
              + ("".join(f"\n  PROBLEM {p}" for p in c["problems"])))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
