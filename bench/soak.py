#!/usr/bin/env python3
"""Soak and fault-injection benchmark (issue 10): a paging workload runs
under `comex run --replicas 2` with four `comex memnode` processes over TCP
(started here, each in a network namespace when slow events are on) while, every 20-60 s (uniform, seeded), a random
memnode is disturbed in a random way:

  kill     SIGKILL, left down --pause s, restarted on its port (a crash);
  stop     SIGSTOP for --stop s, then SIGCONT (a hang: the client hedges its
           reads and writes to the other copies within hedge-floor, holds it
           suspect, and takes it back once it answers in time again);
  starve   a CPU quota of 5 % (a cpu cgroup) for --stop s (a starved host:
           the memnode answers, slowly);
  slow     its link, 10 Gbit/s tbf on a veth into its own network namespace,
           drops to 100 Mbit/s for --stop s (a crawling NIC or a congested
           path; with this kind every memnode sits in a namespace);
  restart  SIGTERM (a planned departure: it drains, its clients move their
           pages), then started again on its port.

Each configuration runs a phase without failures (--baseline s) and then the
failure phase (--duration s). The workload, bench/pager_bench (random, 20 %
writes, --progress 1), is looped; every iteration's checksum is compared with
the native run's, so every page is read back and checked once per pass, and
every iteration starts while the failures go on (a memnode may be down at
its start). From the workload's progress lines the script builds the
touches/s timeline of both phases and reports the throughput dip in the
--window s after each event against the no-failure phase's mean, as
Infiniswap's Fig. 16 does; from the client's log, when each failure was
noticed and when re-replication made every page whole again.

Writes bench/results/soak-<UTC>.json (schema comex-bench-soak/2),
docs/SOAK.md and docs/img/soak-throughput.png (generated). Exit status 1 when
an iteration printed a wrong checksum, exited non-zero, or (replicas 2) lost
a page although no event came before the previous one was repaired.

  python3 bench/soak.py [--build DIR] [--duration 1800] [--baseline 300] [--configs r2] [--seed 1] [--quick]
"""

import json
import random
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import benchlib
from benchlib import ROOT, summary

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import sysenv  # noqa: E402

SCHEMA = "comex-bench-soak/2"
NODES = ("a", "b", "c", "d")
KINDS = ("kill", "stop", "restart", "starve", "slow")
FAST_GBIT = 10     # a memnode's link (slow: each sits in a network namespace behind tbf)
SLOW_BITS = 100e6  # its link during a slow event
OP_TIMEOUT_S = 20  # comex run --op-timeout (its default): a hang is hedged long before it
STOP_S = 8         # a stop or a starvation lasts this long
STARVE_QUOTA = 0.05  # the CPU share a starved memnode gets
CPU_CGROUP = Path("/sys/fs/cgroup/cpu")  # cgroup v1's cpu controller (v2: /sys/fs/cgroup with cpu.max)
CONFIGS = {"r2": ["--replicas=2"], "r1-backup": ["--replicas=1", "--backup-dir={tmp}/backup"]}
# Counters of --stats-json kept per iteration and summed per phase.
COUNTERS = ("pages_evicted", "pages_written", "pages_failed_over", "pages_rereplicated", "pages_lost",
            "pages_corrupt", "memnodes_rejoined", "memnodes_drained", "pages_migrated", "pages_backup_read",
            "budget_overshoots", "reads_hedged", "writes_hedged", "memnodes_suspected", "reads_steered")
FAILED = re.compile(r"memnode \S+ \(nid \d+\) failed:|drained, \d+ of our pages|memnode \S+ is late:")
REPAIRED = re.compile(r"out of use \(failed or drained\).*?every page has its \d+ copies", re.S)
PROGRESS = re.compile(r"^pager_bench: progress (\d+) (\d+)$", re.M)
PLOT = ROOT / "docs" / "img" / "soak-throughput.png"


class Memnodes:
    """The memnodes, each disturbed (KINDS) and brought back."""

    def __init__(self, comex, tmp, token, pool_mib, netns):
        # idle-spin 0: four polling memnodes would take the shared machine's cores (only
        # failures are injected and counted here, no latency is compared);
        # drain-timeout 30 s: a restart is bounded even if a client cannot answer
        self.ns = {n: sysenv.NetNs(sysenv.NetNs.next_idx(), FAST_GBIT) if netns else None for n in NODES}
        for ns in self.ns.values():
            if ns:
                ns.create()
        self.nodes = {n: sysenv.Memnode(comex, token, pool_mib << 20, tmp, name=n, base_env=benchlib.clean_env(),
                                        netns=self.ns[n], extra=("--idle-spin=0", "--drain-timeout=30s"))
                      for n in NODES}
        for m in self.nodes.values():
            m.start()

    def addresses(self):
        return ",".join(self.nodes[n].addr for n in NODES)

    def disturb(self, name, kind):
        m = self.nodes[name]
        if kind == "starve":
            starve(m.p.pid, True)
            return
        if kind == "slow":
            self.ns[name].shape(SLOW_BITS)
            return
        m.signal({"kill": signal.SIGKILL, "stop": signal.SIGSTOP, "restart": signal.SIGTERM}[kind])
        if kind == "kill":
            m.p.wait()

    def recover(self, name, kind):
        """True once name is back in service (call again until then)."""
        m = self.nodes[name]
        if kind == "starve":
            starve(m.p.pid, False)
            return True
        if kind == "slow":
            self.ns[name].shape(FAST_GBIT * 1e9)
            return True
        if kind == "stop":
            m.signal(signal.SIGCONT)
            return True
        if m.alive():  # a restart still draining
            return False
        m.close()
        m.start()      # on its port
        return True

    def stop(self):
        for m in self.nodes.values():
            if m.alive():
                m.signal(signal.SIGCONT)
            m.close()
        for ns in self.ns.values():
            if ns:
                ns.destroy()


def starve(pid, on):
    """Moves pid (all its threads) into a cpu cgroup limited to STARVE_QUOTA
    of one CPU, or back to the root one."""
    v2 = not (CPU_CGROUP / "cpu.cfs_quota_us").exists()
    root = Path("/sys/fs/cgroup") if v2 else CPU_CGROUP
    cg = root / "comex-soak-starved"
    if on:
        cg.mkdir(exist_ok=True)
        if v2:
            (cg / "cpu.max").write_text(f"{int(STARVE_QUOTA * 100000)} 100000")
        else:
            (cg / "cpu.cfs_period_us").write_text("100000")
            (cg / "cpu.cfs_quota_us").write_text(str(int(STARVE_QUOTA * 100000)))
    (cg if on else root).joinpath("cgroup.procs").write_text(str(pid))


class Iteration:
    """One `comex run` of the workload, in the background."""

    def __init__(self, cmd, tmp, tag):
        self.tmp, self.tag, self.events = tmp, tag, 0
        self.err = tmp / f"{tag}.err"
        self.t0 = time.monotonic()
        with open(tmp / f"{tag}.out", "w") as out, open(self.err, "w") as err:
            self.p = subprocess.Popen(cmd, stdout=out, stderr=err, env=benchlib.clean_env())

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
        prog = [(int(ns) / 1e9, int(n)) for ns, n in PROGRESS.findall(err)]
        rec = {"tag": self.tag, "t0": self.t0, "wall_s": round(wall, 3), "exit_code": rc,
               "correct": checksum == ref_checksum, "checksum": checksum, "events_during": self.events,
               "progress": prog, **{k: stats.get(k) for k in COUNTERS}}
        if rc or not rec["correct"]:
            rec["errors"] = [ln for ln in err.splitlines() if ln.startswith(("comex: error", "comex: warning"))][:5]
        return rec


def command(a, nodes, tmp, cfg, lm, token, wl, tag):
    opts = [o.format(tmp=tmp) for o in CONFIGS[cfg]]
    return [str(a.build / "comex"), "run", f"--local-mem={lm}", f"--token-file={token}", f"--op-timeout={a.op_timeout}s",
            "--memnode=" + nodes.addresses(), f"--stats-json={tmp / tag}.json", *opts, "--"] + wl


def phase(a, nodes, tmp, cfg, name, seconds, rng, wl, lm, token, ref):
    """Loops the workload for `seconds`, disturbing memnodes when rng is
    given. Returns the phase's record."""
    iters, events = [], []
    t_start = time.monotonic()
    t_end = t_start + seconds
    guard = a.guard
    cur, n_iter, busy = None, 0, None  # busy: (event, node, kind, recover at)
    next_event = t_start + rng.uniform(a.interval_min, a.interval_max) if rng else None
    while True:
        now = time.monotonic()
        if cur and cur.p.poll() is None and now - cur.t0 > guard:
            cur.p.kill()
        if cur and cur.p.poll() is not None:
            iters.append(cur.record(ref))
            cur = None
        if cur is None and now < t_end:
            tag = f"{cfg}-{name}-i{n_iter}"
            cur, n_iter = Iteration(command(a, nodes, tmp, cfg, lm, token, wl, tag), tmp, tag), n_iter + 1
        if busy and now >= busy[3] and nodes.recover(busy[1], busy[2]):
            busy[0]["back_s"] = round(time.monotonic() - t_start - busy[0]["t_s"], 3)
            busy = None
        if rng and not busy and cur and now >= next_event and now < t_end:
            last = events[-1] if events else None
            repaired = cfg != "r2" or last is None or "repaired_s" in last or last["iteration_over"]()
            if repaired or now >= next_event + a.repair_wait:
                node, kind = rng.choice(NODES), rng.choice(a.kinds)
                offset = len(cur.err_text())  # before the event: the client may log it at once
                nodes.disturb(node, kind)
                cur.events += 1
                it = cur
                ev = {"t_s": round(now - t_start, 3), "node": node, "kind": kind, "iteration": cur.tag,
                      "previous_repaired": repaired, "iteration_over": lambda it=it: it.p.poll() is not None,
                      "_it": it, "_offset": offset}
                events.append(ev)
                pause = {"kill": a.pause, "stop": a.stop, "starve": a.stop, "slow": a.stop, "restart": 0.0}[kind]
                busy = (ev, node, kind, now + pause)
                next_event = now + rng.uniform(a.interval_min, a.interval_max)
        for ev in events[-2:]:  # the failure noticed and repaired, from the client's log
            text = ev["_it"].err_text()[ev["_offset"]:]
            if "detected_s" not in ev and FAILED.search(text):
                ev["detected_s"] = round(now - t_start - ev["t_s"], 3)
            if cfg == "r2" and "repaired_s" not in ev and REPAIRED.search(text):
                ev["repaired_s"] = round(now - t_start - ev["t_s"], 3)
        if cur is None and busy is None and now >= t_end:
            break
        time.sleep(0.05)
    for ev in events:
        for k in ("iteration_over", "_it", "_offset"):
            ev.pop(k)
    totals = {k: sum(i[k] or 0 for i in iters) for k in COUNTERS}
    rec = {"config": cfg, "phase": name, "t_start": t_start, "seconds": round(time.monotonic() - t_start, 3),
           "iterations": iters, "events": events,
           "events_before_repair": sum(not e["previous_repaired"] for e in events),
           "wrong_outputs": sum(not i["correct"] for i in iters),
           "nonzero_exits": sum(i["exit_code"] != 0 for i in iters), **totals}
    print(f"{cfg} {name}: {len(iters)} iterations, {len(events)} events, {rec['wrong_outputs']} wrong, "
          f"{rec['nonzero_exits']} non-zero exits, lost {totals['pages_lost']}, failed over "
          f"{totals['pages_failed_over']}, re-replicated {totals['pages_rereplicated']}, rejoined "
          f"{totals['memnodes_rejoined']}", file=sys.stderr, flush=True)
    return rec


def timeline(ph):
    """Touches per second of the phase, one value per whole second."""
    n = int(ph["seconds"])
    bins = [0.0] * max(n, 1)
    for it in ph["iterations"]:
        prev = 0
        for t, touched in it["progress"]:
            k = int(t - ph["t_start"])
            if 0 <= k < len(bins):
                bins[k] += touched - prev
            prev = touched
    return bins


def dips(ph, bins, base, window):
    """Per event: mean throughput in the window after it, / the baseline mean."""
    out = []
    for ev in ph["events"]:
        k = int(ev["t_s"])
        w = bins[k:k + window]
        if len(w) == window and base:
            ev["dip"] = round(statistics.mean(w) / base, 3)
            out.append(ev)
    return out


def analyse(cfg, base_ph, fail_ph, window):
    bb, fb = timeline(base_ph), timeline(fail_ph)
    base = statistics.mean(bb) if bb else 0.0
    dipped = dips(fail_ph, fb, base, window)
    by_kind = {k: summary([e["dip"] for e in dipped if e["kind"] == k], 3) for k in KINDS
               if any(e["kind"] == k for e in dipped)}
    evs = fail_ph["events"]
    return {"baseline_touches_per_s": round(base, 1),
            "failure_touches_per_s": round(statistics.mean(fb), 1) if fb else 0.0,
            "throughput_ratio": round(statistics.mean(fb) / base, 3) if base and fb else None,
            "dip_by_kind": by_kind, "window_s": window,
            "detected_s": summary([e["detected_s"] for e in evs if "detected_s" in e] or [0.0], 3),
            "repaired_s": summary([e["repaired_s"] for e in evs if "repaired_s" in e] or [0.0], 3),
            "events_repaired": sum("repaired_s" in e for e in evs),
            "events_by_kind": {k: sum(e["kind"] == k for e in evs) for k in KINDS},
            "timeline_baseline": bb, "timeline_failures": fb}


def failures(cfg, ph):
    """What is wrong with a phase: a wrong output, a failed program, a lost page (r2)."""
    bad = [f"{ph['wrong_outputs']} wrong outputs"] if ph["wrong_outputs"] else []
    bad += [f"{ph['nonzero_exits']} non-zero exits"] if ph["nonzero_exits"] else []
    bad += [f"{ph['pages_corrupt']} corrupt pages"] if ph["pages_corrupt"] else []
    if ph["pages_lost"] and cfg == "r2" and not ph["events_before_repair"]:
        bad.append(f"{ph['pages_lost']} pages lost")
    first = next((i for i in ph["iterations"] if i["exit_code"] or not i["correct"]), None)
    if first:
        bad.append(f"first bad iteration {first['tag']}: exit {first['exit_code']}, checksum {first['checksum']}, "
                   f"{first['wall_s']} s, {first['events_during']} events during it: {' | '.join(first['errors'])}")
    return bad


def plot(doc, path):
    plt = benchlib.pyplot("soak (`/usr/bin/python3 bench/soak.py --render JSON` draws it later)")
    if plt is None:
        return None
    cfgs = list(doc["configs"].items())
    fig, axes = plt.subplots(len(cfgs), 1, figsize=(11, 3.2 * len(cfgs)), squeeze=False)
    colours = {"kill": "tab:red", "stop": "tab:orange", "restart": "tab:green", "starve": "tab:purple",
               "slow": "tab:cyan"}
    for ax, (name, c) in zip(axes[:, 0], cfgs):
        an = c["analysis"]
        fb = an["timeline_failures"]
        ax.plot(range(len(fb)), [v / 1000 for v in fb], lw=0.6, color="tab:blue", label="with failures")
        ax.axhline(an["baseline_touches_per_s"] / 1000, color="black", ls="--", lw=1,
                   label="mean without failures")
        for ev in c["failures"]["events"]:
            ax.axvline(ev["t_s"], color=colours[ev["kind"]], lw=0.8, alpha=0.8)
        for k, col in colours.items():
            ax.plot([], [], color=col, label=k)
        ax.set_title(f"{name} ({' '.join(CONFIGS[name]).replace('={tmp}/backup', ' DIR')})")
        ax.set_xlabel("seconds into the failure phase")
        ax.set_ylabel("thousand page touches / s")
        ax.legend(loc="upper right", fontsize=7, ncol=5)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    return path


def markdown(doc, json_name, img):
    w, m = doc["workload"], doc["machine"]
    slow = "slow" in w["kinds"]
    out = ["# Soak: memnodes killed, stopped, restarted, starved and slowed under a running program", "",
           f"<!-- generated by bench/soak.py from bench/results/{json_name}; do not edit -->", "",
           f"`pager_bench --pattern {w['pattern']} --size-mib {w['size_mib']} --passes {w['passes']} "
           f"--write-pct {w['write_pct']} --progress 1`, looped under `comex run --local-mem {w['local_mem']}` "
           f"(25 % of its native peak RSS, `--op-timeout {w['op_timeout_s']}s`), {len(NODES)} memnodes over TCP "
           + (f"each in its own network namespace behind tbf at {FAST_GBIT} Gbit/s " if slow else "on loopback ")
           + f"(`idle-spin 0`). Each configuration: {w['baseline_s']:.0f} s without failures, then "
           f"{w['duration_s']:.0f} s in which a random memnode is disturbed every {w['interval_min_s']:.0f}-"
           f"{w['interval_max_s']:.0f} s (seed {w['seed']}): `kill` (SIGKILL, down {w['pause_s']:.0f} s, "
           f"restarted on its port), `stop` (SIGSTOP for {w['stop_s']:.0f} s, then SIGCONT), `restart` "
           f"(SIGTERM: it drains, then starts again), `starve` (a CPU quota of {STARVE_QUOTA:.0%} for "
           f"{w['stop_s']:.0f} s)"
           + (f" or `slow` (its link at {SLOW_BITS / 1e6:.0f} Mbit/s for {w['stop_s']:.0f} s)" if slow else "")
           + f", one memnode at a time; with `replicas 2` the next event "
           f"waits (up to {w['repair_wait_s']:.0f} s) until the previous one's re-replication is logged "
           "complete. Every iteration's checksum is compared with the native run's.", "",
           f"Machine: {m['cores']} cores, kernel {m['kernel']}, load average {' '.join(m['loadavg_start'])} at "
           f"the start, {' '.join(m.get('loadavg_end', []))} at the end; git {doc['git']['rev'][:12]}"
           f"{' (dirty)' if doc['git']['dirty'] else ''}; {doc['duration_s'] / 60:.0f} min in all.", "",
           f"| configuration | phase | s | iterations | events ({'/'.join(KINDS)}) | wrong outputs | non-zero exits "
           "| pages lost | pages corrupt | failed over | re-replicated | pages moved by drains | rejoined "
           "| hedged reads/writes, steered reads | suspected | touches/s |",
           "|---|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name, c in doc["configs"].items():
        for ph_name in ("baseline", "failures"):
            ph, an = c[ph_name], c["analysis"]
            kinds = "/".join(str(sum(e["kind"] == k for e in ph["events"])) for k in KINDS)
            tps = an["baseline_touches_per_s"] if ph_name == "baseline" else an["failure_touches_per_s"]
            out.append(f"| {name} | {ph_name} | {ph['seconds']:.0f} | {len(ph['iterations'])} | {kinds} "
                       f"| {ph['wrong_outputs']} | {ph['nonzero_exits']} | {ph['pages_lost']} | {ph['pages_corrupt']} "
                       f"| {ph['pages_failed_over']} | {ph['pages_rereplicated']} | {ph['pages_migrated']} "
                       f"| {ph['memnodes_rejoined']} | {ph.get('reads_hedged', 0)}/{ph.get('writes_hedged', 0)}, "
                       f"{ph.get('reads_steered') or 0} "
                       f"| {ph.get('memnodes_suspected', 0)} | {tps:,.0f} |")
    out += ["", "Pages lost: pages whose every remote copy was gone when a memnode failed (client counter "
            "`pages_lost`). With `backup-dir` they are still on the compute node's disk and are read back from "
            "the file when touched, so only the `replicas 2` rows without a backup count real losses.", ""]
    for name, c in doc["configs"].items():
        an = c["analysis"]
        dk = "; ".join(f"{k} {s['median']:.2f} ({s['min']:.2f}-{s['max']:.2f}, {s['n']} events)"
                       for k, s in an["dip_by_kind"].items())
        out.append(f"- **{name}**: throughput with failures {an['throughput_ratio']}x the no-failure phase's mean. "
                   f"Throughput in the {an['window_s']} s after an event, as a share of that mean (median, "
                   f"min-max): {dk or 'no event'}. The client logged a failure, a drain or a late memnode "
                   f"{an['detected_s']['median']:.2f} s after the event (median, max {an['detected_s']['max']:.2f} s; "
                   f"a stop or a starvation is noticed at the first request it leaves late, a starvation only "
                   f"if it makes one late)."
                   + (f" Re-replication made every page whole {an['repaired_s']['median']:.1f} s after the event "
                      f"(median, max {an['repaired_s']['max']:.1f} s; {an['events_repaired']} of "
                      f"{len(c['failures']['events'])} events logged it before their iteration ended)."
                      if name == "r2" else ""))
    if img:
        out += ["", f"![throughput over the failure phase](img/{img.name})", "",
                "Touches per second of the looped workload (the dips to zero between iterations are process "
                "start-up and the fill phase, which the progress lines do not count), with each event marked."]
    problems = [f"- **{name}: {p}**" for name, c in doc["configs"].items() for p in c["problems"]]
    out += [""] + (problems or ["No problem: every output correct, no program failed, no page lost."])
    return "\n".join(out).rstrip() + "\n"


def parse_args(argv):
    ap = benchlib.arg_parser(__doc__.split("\n\n")[0], runs=1)
    ap.add_argument("--duration", type=float, default=1800, help="seconds of the failure phase (default 1800)")
    ap.add_argument("--baseline", type=float, default=300, help="seconds of the no-failure phase (default 300)")
    ap.add_argument("--configs", default="r2")
    ap.add_argument("--kinds", default=",".join(KINDS))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--size-mib", type=int, default=256)
    ap.add_argument("--passes", type=int, default=3)
    ap.add_argument("--write-pct", type=int, default=20)
    ap.add_argument("--pattern", default="rand")
    ap.add_argument("--interval-min", type=float, default=20.0)
    ap.add_argument("--interval-max", type=float, default=60.0)
    ap.add_argument("--pause", type=float, default=5.0, help="seconds a killed memnode stays down")
    ap.add_argument("--stop", type=float, default=STOP_S, help="seconds a stopped, starved or slowed memnode stays so")
    ap.add_argument("--op-timeout", type=float, default=OP_TIMEOUT_S)
    ap.add_argument("--repair-wait", type=float, default=60.0,
                    help="replicas 2: wait at most this long for the previous event's re-replication")
    ap.add_argument("--window", type=int, default=20, help="seconds after an event its dip is measured over")
    ap.add_argument("--doc", default=str(ROOT / "docs" / "SOAK.md"))
    ap.add_argument("--render", metavar="JSON", help="run nothing: write the plot and --doc from a saved result")
    a = ap.parse_args(argv)
    benchlib.quick(a, duration=16, baseline=4, size_mib=32, passes=2, interval_min=3, interval_max=5, pause=1,
                   op_timeout=2, stop=3, window=2)
    a.kinds = a.kinds.split(",")
    for c in a.configs.split(","):
        if c not in CONFIGS:
            ap.error(f"--configs: unknown configuration {c!r} (known: {', '.join(CONFIGS)})")
    for k in a.kinds:
        if k not in KINDS:
            ap.error(f"--kinds: unknown event {k!r} (known: {', '.join(KINDS)})")
    a.build = Path(a.build).resolve()
    return a


def main(argv):
    a = parse_args(argv)
    if a.render:
        path = Path(a.render)
        Path(a.doc).write_text(markdown(json.loads(path.read_text()), path.name, plot(json.loads(path.read_text()), PLOT)))
        return 0
    comex = str(a.build / "comex")
    started = time.monotonic()
    wl = benchlib.pager_bench_argv(a.build, a.pattern, a.size_mib, a.passes, a.write_pct, progress=True)
    doc, times0 = benchlib.start_doc(
        SCHEMA, memnodes=f"{len(NODES)} `comex memnode` over TCP (with slow events each in a network namespace "
                         f"behind tbf at {FAST_GBIT} Gbit/s, else on 127.0.0.1), pool = size + 64 MiB each, idle-spin 0",
        configs={})
    sysenv.install_signal_handlers()
    try:
        with tempfile.TemporaryDirectory(prefix="comex-soak-") as td:
            tmp = Path(td)
            token = benchlib.make_token(comex, tmp)
            (tmp / "backup").mkdir()
            rc, native_s, peak_kib, ref = benchlib.run_logged(wl, tmp, "native")
            benchlib.check(rc == 0 and ref, f"native run failed: {benchlib.read_text(tmp / 'native.err')}")
            lm = f"{peak_kib // 4}K"
            a.guard = max(300.0, 40 * native_s)  # an iteration this long is taken as hung and killed
            doc["workload"] = {"program": "pager_bench", "pattern": a.pattern, "size_mib": a.size_mib,
                               "passes": a.passes, "write_pct": a.write_pct, "native_wall_s": round(native_s, 3),
                               "native_peak_kib": peak_kib, "local_mem": lm, "checksum": ref["checksum"],
                               "duration_s": a.duration, "baseline_s": a.baseline, "seed": a.seed, "kinds": a.kinds,
                               "interval_min_s": a.interval_min, "interval_max_s": a.interval_max,
                               "pause_s": a.pause, "stop_s": a.stop, "op_timeout_s": a.op_timeout,
                               "repair_wait_s": a.repair_wait, "quick": a.quick}
            nodes = Memnodes(comex, tmp, token, a.size_mib + 64, "slow" in a.kinds)
            try:
                for cfg in a.configs.split(","):
                    base = phase(a, nodes, tmp, cfg, "baseline", a.baseline, None, wl, lm, token, ref["checksum"])
                    fail = phase(a, nodes, tmp, cfg, "failures", a.duration, random.Random(a.seed), wl, lm, token,
                                 ref["checksum"])
                    doc["configs"][cfg] = {"options": CONFIGS[cfg], "baseline": base, "failures": fail,
                                           "analysis": analyse(cfg, base, fail, a.window),
                                           "problems": [f"{p['phase']}: {x}" for p in (base, fail)
                                                        for x in failures(cfg, p)]}
            finally:
                nodes.stop()
    finally:
        sysenv.UNDO.run_all()
    doc["duration_s"] = round(time.monotonic() - started, 1)
    bad = any(c["problems"] for c in doc["configs"].values())
    path = benchlib.finish_doc(doc, times0, "soak", a)
    if path and not a.out_dir:   # docs/SOAK.md and its plot come from bench/results only
        img = plot(doc, PLOT)
        Path(a.doc).write_text(markdown(doc, path.name, img))
    for cfg, c in doc["configs"].items():
        an = c["analysis"]
        print(f"{cfg}: {len(c['failures']['events'])} events {an['events_by_kind']}, "
              f"lost {c['failures']['pages_lost']}, throughput x{an['throughput_ratio']}, dips {an['dip_by_kind']}"
              + "".join(f"\n  PROBLEM {p}" for p in c["problems"]))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
