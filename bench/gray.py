#!/usr/bin/env python3
"""Gray failures (issue 37): what a memnode that hangs or slows costs a
program, with hedged reads and suspect memnodes, against the same without
them (--hedge-floor 0: the op-timeout wait). Two `comex memnode` processes
(TCP), the workload bench/pager_bench (random, 20 % writes, a checksum
checked every run) at 25 % of its native peak:

  run            comex run --replicas 2, both memnodes healthy (hedging on)
  run-nohedge    the same with --hedge-floor 0: what hedging costs when
                 nothing is wrong (its extra reads are counted as well)
  run-stop       memnode a SIGSTOPped STOP_SHARE of the healthy time into
                 the run, until it ends; run-stop-nohedge: without hedging
  run-slowlink   both memnodes in network namespaces behind tbf, one at
                 FAST_GBIT, the other 10x slower; against run-fastlink,
                 both at FAST_GBIT
  run-slowlink3  three memnodes, two at FAST_GBIT and one 10x slower: with
                 somewhere else to go, copies and reads avoid the slow one
  swap, swap-stop  comex swap up --replicas 2 on the two memnodes, the
                 workload in a memory cgroup at 25 %, a stopped as above
  wait           replicas 1, one memnode, stopped mid-run: how long until
                 the program's counters (comex top, comex stats) and its log
                 name the memnode it waits on

Writes bench/results/gray-<UTC>.json (schema comex-bench-gray/1) and the
table between the gray markers of docs/RELIABILITY.md.

  python3 bench/gray.py [--build build] [--runs 3] [--cells run,run-stop,...] [--quick]
"""

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402
from harness import sysenv  # noqa: E402

SCHEMA = "comex-bench-gray/1"
CELLS = ("run", "run-nohedge", "run-stop", "run-stop-nohedge", "run-fastlink", "run-slowlink", "run-slowlink3",
         "swap", "swap-stop", "wait")
STOP_SHARE = 0.25    # a memnode is stopped this share of the healthy run's time in
FAST_GBIT = 10       # the healthy link of the slow-link cells; the slow one is 10x slower
# the cells whose memnodes sit in network namespaces: each one's link, Gbit/s
LINK_RATES = {"run-fastlink": [FAST_GBIT, FAST_GBIT], "run-slowlink": [FAST_GBIT, FAST_GBIT // 10],
              "run-slowlink3": [FAST_GBIT, FAST_GBIT, FAST_GBIT // 10]}
DOC = benchlib.ROOT / "docs" / "RELIABILITY.md"
BEGIN, END = "<!-- gray:begin (bench/gray.py) -->", "<!-- gray:end -->"


def workload(a):
    return benchlib.pager_bench_argv(a.build, "rand", a.size_mib, passes=a.passes, write_pct=20)


class Nodes:
    """Memnodes a, b (and c), on loopback or (rates) each in a network
    namespace behind tbf at its rate in Gbit/s."""

    def __init__(self, a, tmp, token, count=2, rates=None):
        self.nodes, self.ns = [], []
        for i in range(count):
            ns = sysenv.NetNs(sysenv.NetNs.next_idx(), rates[i]) if rates else None
            if ns:
                ns.create()
                self.ns.append(ns)
            m = sysenv.Memnode(a.comex, token, (a.size_mib * 2 + 64) << 20, tmp, netns=ns, name="abc"[i],
                               base_env=benchlib.clean_env())
            m.start()
            self.nodes.append(m)
        self.procs = [m.p for m in self.nodes]

    def csv(self):
        return ",".join(m.addr for m in self.nodes)

    def close(self):
        for m in self.nodes:
            m.signal(signal.SIGCONT)
            m.close()
        for ns in self.ns:
            ns.destroy()


def stats_of(pid):
    """The live counters of process pid (comex stats), or {}."""
    p = subprocess.run([A.comex, "stats", str(pid)], capture_output=True, text=True, env=benchlib.clean_env())
    try:
        return json.loads(p.stdout) if p.returncode == 0 else {}
    except ValueError:
        return {}


def program_pid(launcher):
    """The program comex run (pid launcher) started, once it has counters."""
    for _ in range(600):
        kids = subprocess.run(["pgrep", "-P", str(launcher)], capture_output=True, text=True).stdout.split()
        for k in kids:
            if os.path.exists(f"/dev/shm/comex-stats.{k}"):
                return int(k)
        time.sleep(0.02)
    return None


def one_run(a, tmp, tag, argv, ref, stop=None, stop_at=None, on_stop=None, preexec=None):
    """argv in the background; stop (a memnode process) SIGSTOPped stop_at s
    in, on_stop(t_stop, proc, its stderr path, stop) called then, SIGCONT
    at the end. Returns the
    run's record."""
    t0 = time.monotonic()
    with open(tmp / f"{tag}.out", "w") as out, open(tmp / f"{tag}.err", "w") as err:
        p = subprocess.Popen(argv, stdout=out, stderr=err, env=benchlib.clean_env(), preexec_fn=preexec)
    extra, stopped = {}, False
    while p.poll() is None:
        if stop and not stopped and time.monotonic() - t0 >= stop_at:
            stop.send_signal(signal.SIGSTOP)
            stopped = True
            if on_stop:
                extra.update(on_stop(time.monotonic(), p, tmp / f"{tag}.err", stop))
        time.sleep(0.01)
    wall = time.monotonic() - t0
    if stopped:
        stop.send_signal(signal.SIGCONT)
    lines = [ln for ln in (benchlib.read_text(tmp / f"{tag}.out") or "").splitlines() if ln.startswith("{")]
    out = json.loads(lines[-1]) if lines else {}
    checksum = out.get("checksum")
    stats = json.loads(benchlib.read_text(tmp / f"{tag}.json") or "{}")
    rec = {"wall_s": round(wall, 3), "exit_code": p.returncode, "correct": checksum == ref, "stopped": stopped,
           "fill_s": out.get("fill_s"), "access_s": out.get("access_s"),
           **{k: stats.get(k) for k in ("remote_reads", "reads_hedged", "reads_steered", "writes_hedged", "memnodes_suspected",
                                        "pages_failed_over", "pages_lost", "bytes_written")}, **extra}
    if p.returncode or not rec["correct"]:
        rec["errors"] = [ln for ln in (benchlib.read_text(tmp / f"{tag}.err") or "").splitlines()
                         if ln.startswith("comex: error")][:3]
    return rec


def run_cmd(a, tmp, tag, nodes, lm, *opts):
    return [a.comex, "run", f"--local-mem={lm}", f"--token-file={tmp / 'token'}", "--memnode=" + nodes.csv(),
            f"--stats-json={tmp / tag}.json", *opts, "--", *workload(a)]


def watch_wait(a):
    """on_stop for the wait cell: how long until the program's counters and
    its log name the memnode it waits on; then the memnode is resumed."""
    def on_stop(t_stop, p, err_path, node):
        pid, seen, logged = program_pid(p.pid), None, None
        while (seen is None or logged is None) and time.monotonic() - t_stop < 10 and p.poll() is None:
            s = stats_of(pid) if pid and seen is None else {}
            if seen is None and any(m.get("waited_on") for m in s.get("memnodes", [])):
                seen = time.monotonic() - t_stop
            if logged is None and "waiting for memnode" in (benchlib.read_text(err_path) or ""):
                logged = time.monotonic() - t_stop
            time.sleep(0.02)
        node.send_signal(signal.SIGCONT)
        return {"named_in_counters_s": seen and round(seen, 3), "named_in_log_s": logged and round(logged, 3)}
    return on_stop


def swap_cell(a, tmp, tag, nodes, ref, peak_kib, stop_at=None):
    """The workload in a memory cgroup at 25 % swapping to comex swap."""
    sd = tmp / "swapdir"
    up = subprocess.run([a.comex, "swap", "up", "--swap-dir", str(sd), "--size", f"{a.size_mib * 2}M",
                         "--replicas", "2", "--memnode", nodes.csv(), "--token-file", str(tmp / "token")],
                        capture_output=True, text=True, env=benchlib.clean_env())
    if up.returncode:
        raise RuntimeError(f"comex swap up: {up.stderr.strip()[-500:]}")
    dev = up.stdout.strip().splitlines()[-1]
    cg = sysenv.Cgroup(peak_kib * 1024 // 4, True, name=tag)
    try:
        rec = one_run(a, tmp, tag, workload(a), ref, nodes.procs[0] if stop_at else None, stop_at,
                      preexec=cg.enter_fn())
    finally:
        cg.remove()
        subprocess.run([a.comex, "swap", "down", "--swap-dir", str(sd), dev], capture_output=True,
                       env=benchlib.clean_env())
    return rec


def cell_runs(a, tmp, cell, ref, lm, peak_kib, healthy_s):
    token = tmp / "token"
    stop_at = max(0.5, STOP_SHARE * healthy_s) if healthy_s else 1.0
    rates = LINK_RATES.get(cell)
    nodes = Nodes(a, tmp, token, count=1 if cell == "wait" else len(rates) if rates else 2, rates=rates)
    runs = []
    try:
        for i in range(a.runs):
            tag = f"{cell}-{i}"
            if cell.startswith("swap"):
                runs.append(swap_cell(a, tmp, tag, nodes, ref, peak_kib, stop_at if cell == "swap-stop" else None))
                continue
            opts = ["--replicas=2"] if cell != "wait" else ["--replicas=1"]
            if cell.endswith("nohedge"):
                opts.append("--hedge-floor=0")
            stop = nodes.procs[0] if cell in ("run-stop", "run-stop-nohedge", "wait") else None
            runs.append(one_run(a, tmp, tag, run_cmd(a, tmp, tag, nodes, lm, *opts), ref, stop, stop_at,
                                watch_wait(a) if cell == "wait" else None))
    finally:
        nodes.close()
    walls = [r["wall_s"] for r in runs]
    return {"runs": runs, "wall_s": benchlib.summary(walls, 3), "stop_at_s": stop_at if "stop" in cell else None,
            "all_correct": all(r["correct"] and r["exit_code"] == 0 for r in runs)}


def targets(c, w):
    """The issue's targets from the cells measured (workload w); None where a
    cell is missing."""
    med = {k: v["wall_s"]["median"] for k, v in c.items() if "wall_s" in v}
    t = {}
    if "run" in med and "run-stop" in med:
        t["run_stop_added_s"] = round(med["run-stop"] - med["run"], 3)
    if "run" in med and "run-stop-nohedge" in med:
        t["run_stop_nohedge_added_s"] = round(med["run-stop-nohedge"] - med["run"], 3)
    if "swap" in med and "swap-stop" in med:
        t["swap_stop_added_s"] = round(med["swap-stop"] - med["swap"], 3)
    if "run-fastlink" in med and "run-slowlink" in med:
        t["slowlink_ratio"] = round(med["run-slowlink"] / med["run-fastlink"], 3)
        written = benchlib.summary([r.get("bytes_written") or 0 for r in c["run-slowlink"]["runs"]])["median"]
        # where the time goes: the slow memnode takes one copy of every page
        # written (replicas 2 on two memnodes), half the bytes, at its rate
        t["slowlink_copies_wire_s"] = round(written / 2 * 8 / (FAST_GBIT / 10 * 1e9), 3) if written else None
        # the floor while every copy is written before its page is let go
        # (D79): the fill evicts all but local-mem of the pages, new, at
        # memory speed, and their copies on the slow memnode cross its link
        # before the fill can end; the passes after it leave that link idle
        # enough to keep up (their dirty evictions are spread out)
        fills = [r.get("fill_s") for r in c["run-fastlink"]["runs"] if r.get("fill_s") is not None]
        evicted = w["size_mib"] * 2**20 - int(w["local_mem"].rstrip("K")) * 1024
        if fills and evicted > 0:
            fill, wire = benchlib.summary(fills)["median"], evicted * 8 / (FAST_GBIT / 10 * 1e9)
            t["slowlink_fill_wire_s"] = round(wire, 3)
            t["slowlink_floor_ratio"] = round((med["run-fastlink"] - fill + max(fill, wire)) / med["run-fastlink"], 3)
    if "run-fastlink" in med and "run-slowlink3" in med:
        t["slowlink3_ratio"] = round(med["run-slowlink3"] / med["run-fastlink"], 3)
    if "run" in med and "run-nohedge" in med:
        t["hedging_overhead"] = round(med["run"] / med["run-nohedge"] - 1, 4)
        runs = c["run"]["runs"]
        reads = max(1, sum(r["remote_reads"] or 0 for r in runs))
        t["healthy_extra_reads"] = round(sum(r["reads_hedged"] or 0 for r in runs) / reads, 4)
        t["healthy_steered_reads"] = round(sum(r.get("reads_steered") or 0 for r in runs) / reads, 4)
    if "wait" in c:
        ws = [r.get("named_in_counters_s") for r in c["wait"]["runs"] if r.get("named_in_counters_s") is not None]
        ls = [r.get("named_in_log_s") for r in c["wait"]["runs"] if r.get("named_in_log_s") is not None]
        t["wait_named_counters_s"] = max(ws) if ws else None
        t["wait_named_log_s"] = max(ls) if ls else None
    return t


def markdown(doc, json_name):
    c, t = doc["cells"], doc["targets"]
    w = doc["workload"]
    rows = [f"Measured by `bench/gray.py` ({json_name}): `pager_bench --pattern rand --size-mib {w['size_mib']} "
            f"--passes {w['passes']} --write-pct 20` at {w['local_mem']} (25 % of its peak), two `comex memnode` "
            f"processes over TCP, medians of {doc['runs']} runs; memnode a stopped {STOP_SHARE:.0%} of the healthy "
            "time into a run, until it ends.", "",
            "| cell | median s (min-max) | hedged reads / writes, steered reads (median) | suspected | all correct |",
            "|---|---|---|---:|---|"]
    for name, v in c.items():
        if "wall_s" not in v:
            continue
        rs, s = v["runs"], v["wall_s"]
        mid = sorted(rs, key=lambda r: r["wall_s"])[len(rs) // 2]
        rows.append(benchlib.md_row(name, f"{s['median']:.2f} ({s['min']:.2f}-{s['max']:.2f})",
                                    f"{mid.get('reads_hedged') or 0} / {mid.get('writes_hedged') or 0}, "
                                    f"{mid.get('reads_steered') or 0}",
                                    mid.get("memnodes_suspected") or 0, "yes" if v["all_correct"] else "**no**"))
    fmt = {k: ("n/a" if v is None else v) for k, v in t.items()}
    rows += ["", "| target | measured | goal |", "|---|---|---|",
             f"| added run time, one of two memnodes stopped, `comex run` | {fmt.get('run_stop_added_s', 'n/a')} s "
             f"(without hedging: {fmt.get('run_stop_nohedge_added_s', 'n/a')} s) | ≤ 1 s |",
             f"| the same, `comex swap` | {fmt.get('swap_stop_added_s', 'n/a')} s | ≤ 1 s |",
             f"| one memnode behind a 10x slower link | {fmt.get('slowlink_ratio', 'n/a')}x its time with both "
             f"fast (its copies alone take {fmt.get('slowlink_copies_wire_s', 'n/a')} s of that link, those of the "
             f"fill {fmt.get('slowlink_fill_wire_s', 'n/a')} s: {fmt.get('slowlink_floor_ratio', 'n/a')}x at least "
             "while a page leaves only once both copies are written) | ≤ 1.2x |",
             f"| one of three memnodes behind a 10x slower link, the other two fast | "
             f"{fmt.get('slowlink3_ratio', 'n/a')}x the time with two fast memnodes | ≤ 1.2x |",
             f"| hedging when all is healthy | {benchlib.pct(t.get('hedging_overhead'))} time, "
             f"{benchlib.pct(t.get('healthy_extra_reads'))} of reads sent again after a late answer, "
             f"{benchlib.pct(t.get('healthy_steered_reads'))} steered at once to a faster copy | ≤ 3 % |",
             f"| single copy stopped: the wait named | counters (comex top, stats) after "
             f"{fmt.get('wait_named_counters_s', 'n/a')} s, log after {fmt.get('wait_named_log_s', 'n/a')} s "
             "(the slowest run) | ≤ 1 s |"]
    if doc.get("warnings"):
        rows += ["", "Warnings: " + "; ".join(doc["warnings"])]
    return "\n".join(rows)


def render(doc, json_name):
    text = DOC.read_text()
    if BEGIN not in text:
        text += f"\n## Gray failures: measured\n\n{BEGIN}\n{END}\n"
    head, rest = text.split(BEGIN, 1)
    DOC.write_text(head + BEGIN + "\n" + markdown(doc, json_name) + "\n" + END + rest.split(END, 1)[1])


A = None


def main(argv):
    global A
    ap = benchlib.arg_parser(__doc__.split("\n\n")[0])
    ap.add_argument("--cells", default=",".join(CELLS))
    ap.add_argument("--size-mib", type=int, default=256)
    ap.add_argument("--passes", type=int, default=2)
    a = A = benchlib.quick(ap.parse_args(argv), size_mib=48, passes=1, cells="run,run-stop,wait")
    a.build = Path(a.build).resolve()
    a.comex = str(a.build / "comex")
    cells = a.cells.split(",")
    bad = [c for c in cells if c not in CELLS]
    if bad:
        ap.error(f"--cells: unknown {bad} (known: {', '.join(CELLS)})")
    if any(c in LINK_RATES for c in cells) and sysenv.NetNs.precondition():
        ap.error(sysenv.NetNs.precondition())
    doc, times0 = benchlib.start_doc(SCHEMA, runs=a.runs, cells={})
    with tempfile.TemporaryDirectory(prefix="comex-gray-") as td:
        tmp = Path(td)
        subprocess.run([a.comex, "token", str(tmp / "token")], check=True, stdout=subprocess.DEVNULL,
                       env=benchlib.clean_env())
        rc, native_s, peak_kib, res = benchlib.run_logged(workload(a), tmp, "native")
        if rc or not res:
            raise RuntimeError(f"native run failed: {benchlib.read_text(tmp / 'native.err')}")
        lm = f"{peak_kib // 4}K"
        doc["workload"] = {"argv": workload(a)[1:], "size_mib": a.size_mib, "passes": a.passes,
                           "native_wall_s": round(native_s, 3), "native_peak_kib": peak_kib, "local_mem": lm}
        healthy = {}
        try:
            for cell in cells:
                base = "swap" if cell.startswith("swap") else "run"
                c = cell_runs(a, tmp, cell, res["checksum"], lm, peak_kib, healthy.get(base))
                doc["cells"][cell] = c
                if cell in ("run", "swap"):
                    healthy[cell] = c["wall_s"]["median"]
                print(f"{cell}: {c['wall_s']['median']:.2f} s, correct {c['all_correct']}", file=sys.stderr)
        finally:
            sysenv.UNDO.run_all()
    doc["targets"] = targets(doc["cells"], doc["workload"])
    ok = all(c["all_correct"] for c in doc["cells"].values())
    if not ok:
        print("FAIL: a run's output or exit status was wrong: " + json.dumps(
            {k: [r.get("errors") for r in v["runs"]] for k, v in doc["cells"].items()}), file=sys.stderr)
    path = benchlib.finish_doc(doc, times0, "gray", args=a)
    print(json.dumps(doc["targets"]))
    if path and not a.quick:
        render(doc, path.name)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
