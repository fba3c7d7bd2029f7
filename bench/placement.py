#!/usr/bin/env python3
"""Placement benchmark for comex (issue 11 item 7): many programs, many memnodes.

Eight memnodes of unequal pools, each in its own network namespace behind a
veth pair shaped to --rate Gbit/s (the comex-net modes of bench/harness), and
four programs (bench/pager_bench, of different sizes and access patterns)
started at once under `comex run` with a quarter of their memory local. The
same set runs once per placement policy (hash, p2c, weighted; option
`placement`), --runs times, the policies interleaved (order reversed on odd
runs), fresh memnodes every time. Per run it records

  - total time: from starting the four programs to the last one's exit, and
    each program's own time;
  - per-memnode load: `comex status --json` is sampled every --sample-s while
    the programs run; the sample with the most memory in use is the load
    (the memnodes' used bytes, the frames every client holds there, unused
    frames of the clients' local pools included);
  - imbalance: max/mean of the used bytes per memnode (the issue's measure,
    Infiniswap §5.4), and max/mean of the fill (used/pool) per memnode,
    which is what decides whether one memnode fills while others sit empty
    when the pools are unequal;
  - cost: ALLOCs granted and refused (NACK) and all requests, from each
    memnode's Prometheus endpoint (--metrics-listen), and the programs'
    remote faults (their --stats-json).

Every program's checksum must equal its native run's (a hard failure
otherwise). Results are medians over the runs with min/max, in

  bench/results/placement-<UTC>.json   (schema comex-bench-placement/2)
  docs/PLACEMENT.md                    (the section between the bench markers)
  docs/img/bench-placement.png         (per-memnode fill and imbalance per policy)

Needs root (network namespaces, tc). Times are noisy on a shared machine;
the imbalance figures are not (they depend on where pages went, not on speed).

  python3 bench/placement.py [--build build] [--runs 3] [--rate 25] [--policies hash,p2c,weighted]
  python3 bench/placement.py --quick          # one small run, outputs checked, nothing written
  python3 bench/placement.py --render-only    # rewrite the doc section and plot from the newest JSON
"""

import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402
from benchlib import ROOT, summary  # noqa: E402
from harness import sysenv  # noqa: E402
from harness.sysenv import UNDO, NetNs, kill_tree, log, read  # noqa: E402

SCHEMA = "comex-bench-placement/2"   # /2: options.spin; comex's own busy-polling by default (/1: none)
NAME = "placement"
DOC_PATH = ROOT / "docs" / "PLACEMENT.md"
PLOT_PATH = ROOT / "docs" / "img" / "bench-placement.png"
BEGIN, END = "<!-- bench/placement.py: begin -->", "<!-- bench/placement.py: end -->"

POLICIES = ("hash", "p2c", "weighted")
# 1 GiB of pools for 336 MiB of remote pages: room for the frames each
# client keeps ahead in its local pool for every memnode it uses (up to two
# 4 MiB chunks at the default replenish-order and -threshold), which p2c and
# weighted take on all eight memnodes
POOLS_MIB = [48, 64, 96, 112, 128, 160, 192, 224]
PROGRAMS = [(64, "rand"), (96, "seq"), (128, "rand"), (160, "seq")]   # MiB, pattern: 448 MiB, 3/4 remote
QUICK_POOLS_MIB = [24, 32, 48, 56, 64, 80, 96, 112]
QUICK_PROGRAMS = [(24, "rand"), (32, "seq"), (40, "rand"), (48, "seq")]
PASSES = 2
WRITE_PCT = 10
LOCAL_FRACTION = 4          # local-mem = size / 4 + the runtime's write buffers
WBUF_PAGES = 256            # comex default, per memnode, counts against local-mem
RUN_TIMEOUT_S = 900
MIB = 1 << 20


# ------------------------------------------------------------------ memnodes

def memnode(ctx, pool_mib, ns):
    """`comex memnode` in network namespace ns, with a metrics endpoint."""
    return sysenv.Memnode(ctx["comex"], ctx["token"], pool_mib * MIB, ctx["tmp"], netns=ns, name="mn-%s" % ns.name,
                          base_env=benchlib.clean_env(), env=benchlib.memnode_spin_env(ctx["spin"]),
                          extra=["--metrics-listen", "%s:0" % ns.ns_ip])


def counters(mn):
    """The memnode's Prometheus counters we report (name -> value)."""
    txt = urllib.request.urlopen(mn.metrics, timeout=10).read().decode()
    out = {}
    for key in ("chunk_grants_total", "nacks_total", "requests_total"):
        m = re.search(r"^comex_memnode_%s\{[^}]*\} (\S+)$" % key, txt, re.M)
        out[key] = float(m.group(1)) if m else None
    return out


# ------------------------------------------------------------------ one run

class Sampler(threading.Thread):
    """`comex status --json` every period s until stopped; keeps the sample
    with the most memory in use."""

    def __init__(self, ctx, addrs, period):
        super().__init__(daemon=True)
        self.ctx, self.addrs, self.period = ctx, addrs, period
        self.stop_ev = threading.Event()
        self.best, self.n, self.errors = None, 0, 0

    def sample(self):
        p = subprocess.run([self.ctx["comex"], "status", "--json", "--interval", "0", "--memnode",
                            ",".join(self.addrs), "--token-file", self.ctx["token"]],
                           capture_output=True, text=True, env=self.ctx["env"], timeout=60)
        doc = json.loads(p.stdout)
        used = [m.get("used_bytes", 0) for m in doc["memnodes"]]
        return {"t_s": round(time.monotonic() - self.t0, 2), "used_bytes": used,
                "failed": [m["addr"] for m in doc["memnodes"] if m["state"] != "up"]}

    def run(self):
        self.t0 = time.monotonic()
        while not self.stop_ev.wait(self.period):
            try:
                s = self.sample()
            except (OSError, ValueError, KeyError, subprocess.SubprocessError):
                self.errors += 1
                continue
            self.n += 1
            if self.best is None or sum(s["used_bytes"]) > sum(self.best["used_bytes"]):
                self.best = s


def program_argv(ctx, prog, i, policy, addrs, stats):
    size, pattern = prog
    local = (size * MIB // LOCAL_FRACTION + len(addrs) * WBUF_PAGES * 4096) >> 10
    return ([ctx["comex"], "run"] + benchlib.run_spin_flags(ctx["spin"]) +
            ["--local-mem", "%dK" % local, "--token-file", ctx["token"], "--memnode", ",".join(addrs),
             "--placement", policy, "--stats-json", stats, "--"] + bench_argv(ctx, prog, i))


def bench_argv(ctx, prog, i):
    size, pattern = prog
    return benchlib.pager_bench_argv(ctx["build"], pattern, size, PASSES, WRITE_PCT, seed=i + 1)


def run_once(ctx, policy, run):
    tmp = ctx["tmp"]
    mns = [memnode(ctx, pool, ns) for pool, ns in zip(ctx["pools"], ctx["netns"])]
    rec = {"policy": policy, "run": run}
    try:
        for m in mns:
            m.start()
        addrs = [m.addr for m in mns]
        sampler = Sampler(ctx, addrs, ctx["sample_s"])
        sampler.start()
        procs, t0 = [], time.monotonic()
        for i, prog in enumerate(ctx["programs"]):
            stats = os.path.join(tmp, "stats-%s-%d-%d.json" % (policy, run, i))
            out = open(os.path.join(tmp, "out-%d.txt" % i), "w+")
            err = open(os.path.join(tmp, "err-%s-%d-%d.txt" % (policy, run, i)), "w")
            p = subprocess.Popen(program_argv(ctx, prog, i, policy, addrs, stats), stdout=out, stderr=err,
                                 env=ctx["env"], start_new_session=True)
            UNDO.push("program %d" % p.pid, lambda p=p: kill_tree(p))
            procs.append((p, out, err, stats, time.monotonic()))
        ended = [None] * len(procs)     # each program's exit time: polled, so none waits for another
        while None in ended and time.monotonic() - t0 < RUN_TIMEOUT_S:
            for i, (p, *_rest) in enumerate(procs):
                if ended[i] is None and p.poll() is not None:
                    ended[i] = time.monotonic()
            time.sleep(0.02)
        progs = []
        for i, (p, out, err, stats, t_start) in enumerate(procs):
            rc = p.returncode
            if ended[i] is None:
                kill_tree(p)
                rc, ended[i] = "timeout", time.monotonic()
            wall = ended[i] - t_start
            out.seek(0)
            progs.append(program_record(ctx, i, rc, out.read(), stats, err.name, wall))
            out.close()
            err.close()
        rec["total_s"] = round(max(x["finished_s"] for x in progs if x["finished_s"] is not None) if
                               all(x["finished_s"] is not None for x in progs) else 0, 3)
        sampler.stop_ev.set()
        sampler.join()
        rec["programs"] = progs
        rec["peak"] = sampler.best
        rec["samples"], rec["sample_errors"] = sampler.n, sampler.errors
        rec["memnode_counters"] = [counters(m) for m in mns]
        rec.update(balance(ctx["pools"], sampler.best))
    finally:
        for m in mns:
            m.close()
    return rec


def program_record(ctx, i, rc, out, stats, err_path, wall):
    size, pattern = ctx["programs"][i]
    r = {"size_mib": size, "pattern": pattern, "exit": rc, "wall_s": round(wall, 3), "finished_s": None}
    try:
        res = json.loads(out.strip().splitlines()[-1])
    except (ValueError, IndexError):
        res = {}
    r["checksum_ok"] = res.get("checksum") == ctx["checksums"][i]
    if rc == 0 and r["checksum_ok"]:
        r["finished_s"] = round(wall, 3)
    else:
        tail = (read(err_path, "") or "").strip().splitlines()[-5:]
        ctx["errors"].append("program %d (%d MiB %s): exit %s, checksum %s: %s" %
                             (i, size, pattern, rc, "ok" if r["checksum_ok"] else "WRONG", " | ".join(tail)))
    try:
        s = json.load(open(stats))
        r["frames_held"] = [m["frames_held"] for m in s["memnodes"]]
        r["faults_remote"] = s["faults_remote"]
        r["pages_evicted"] = s["pages_evicted"]
        r["access_s"] = res.get("access_s")
    except (OSError, ValueError, KeyError):
        r["frames_held"] = None
    return r


def balance(pools_mib, peak):
    if not peak or not sum(peak["used_bytes"]):
        return {"imbalance": None, "fill_imbalance": None, "max_fill": None}
    used = peak["used_bytes"]
    fill = [u / (p * MIB) for u, p in zip(used, pools_mib)]
    return {"imbalance": round(max(used) / statistics.mean(used), 3),
            "fill_imbalance": round(max(fill) / statistics.mean(fill), 3),
            "max_fill": round(max(fill), 3), "min_fill": round(min(fill), 3),
            "nodes_used": sum(1 for u in used if u > 0)}


# ------------------------------------------------------------------ aggregate

def aggregate(samples, policies, pools):
    out = []
    for pol in policies:
        recs = [r for r in samples if r["policy"] == pol and r.get("peak")]
        if not recs:
            continue
        n = len(pools)
        per_node = [statistics.median(r["peak"]["used_bytes"][k] for r in recs) for k in range(n)]
        cnt = {key: [sum(c[key] or 0 for c in r["memnode_counters"]) for r in recs]
               for key in ("chunk_grants_total", "nacks_total", "requests_total")}
        faults = [sum(p.get("faults_remote") or 0 for p in r["programs"]) for r in recs]
        row = {"policy": pol, "runs": len(recs),
               "total_s": summary([r["total_s"] for r in recs], 3),
               "program_s": [statistics.median(r["programs"][i]["wall_s"] for r in recs)
                             for i in range(len(recs[0]["programs"]))],
               "imbalance": summary([r["imbalance"] for r in recs], 3),
               "fill_imbalance": summary([r["fill_imbalance"] for r in recs], 3),
               "max_fill": summary([r["max_fill"] for r in recs], 3),
               "nodes_used": summary([r["nodes_used"] for r in recs], 1),
               "used_mib_per_memnode": [round(x / MIB, 1) for x in per_node],
               "chunk_grants": summary(cnt["chunk_grants_total"], 1),
               "nacks": summary(cnt["nacks_total"], 1),
               "requests": summary(cnt["requests_total"], 1),
               "faults_remote": summary(faults, 1)}
        out.append(row)
    return out


# ------------------------------------------------------------------ report

def plot(doc, path):
    plt = benchlib.pyplot("placement")
    if plt is None:
        return None
    pools = doc["options"]["pools_mib"]
    res = doc["results"]
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(11, 4), gridspec_kw={"width_ratios": [3, 1.3]})
    w = 0.8 / max(1, len(res))
    xs = range(len(pools))
    for k, r in enumerate(res):
        fill = [100 * u / p for u, p in zip(r["used_mib_per_memnode"], pools)]
        ax.bar([x - 0.4 + w * (k + 0.5) for x in xs], fill, w, label=r["policy"])
    ax.set_xticks(list(xs))
    ax.set_xticklabels(["%d\n%d MiB" % (i, p) for i, p in enumerate(pools)])
    ax.set_ylabel("pool in use at the peak (%)")
    ax.set_xlabel("memnode and its pool")
    ax.set_ylim(0, 105)
    ax.legend()
    ax.set_title("where 4 programs' pages went (median of %d runs)" % doc["options"]["runs"])
    names = [r["policy"] for r in res]
    ax2.bar([x - 0.2 for x in range(len(res))], [r["imbalance"]["median"] for r in res], 0.4,
            label="used max/mean")
    ax2.bar([x + 0.2 for x in range(len(res))], [r["fill_imbalance"]["median"] for r in res], 0.4,
            label="fill max/mean")
    ax2.set_xticks(range(len(res)))
    ax2.set_xticklabels(names)
    ax2.axhline(1.0, color="grey", lw=0.5)
    ax2.set_title("imbalance (1 = even)")
    ax2.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def rel(p):
    try:
        return str(Path(p).resolve().relative_to(ROOT))
    except ValueError:
        return str(p)


def mm(s, fmt="%.2f"):
    return (fmt + " (" + fmt + "-" + fmt + ")") % (s["median"], s["min"], s["max"])


def section(doc, json_path, plot_path):
    o = doc["options"]
    m = doc["machine"]
    lines = [BEGIN, "",
             "Generated by `bench/placement.py` from `%s` (%s, git %s%s)." %
             (rel(json_path), doc["timestamp"], doc["git"]["rev"][:10], ", dirty tree" if doc["git"]["dirty"] else ""),
             "",
             "Set-up: %d memnodes with pools of %s MiB (%d MiB in all), each in its own network namespace "
             "behind a veth pair shaped to %d Gbit/s (UCX over TCP); %d programs started at once under "
             "`comex run` with a quarter of their memory local: %s (bench/pager_bench, %d passes, %d %% writes). "
             "Medians of %d runs per policy (min-max in brackets), fresh memnodes for every run; the load is "
             "the `comex status` sample with the most memory in use. Machine: %s, %s cores, kernel %s; "
             "load average %s at the start (the machine was shared: times are noisy, the imbalance figures are not). "
             "Busy-polling: %s." %
             (len(o["pools_mib"]), ", ".join(map(str, o["pools_mib"])), sum(o["pools_mib"]), o["rate_gbit"],
              len(o["programs"]), ", ".join("%d MiB %s" % (s, p) for s, p in o["programs"]), o["passes"],
              o["write_pct"], o["runs"], m.get("cpu_model"), m.get("cores"), m.get("kernel"),
              " ".join(m.get("loadavg_start") or []),
              "comex's defaults" if o.get("spin") == "on" else "none (`--spin off`: idle-spin, handler-spin and "
              "client-spin 0)"),
             "",
             "| policy | total time (s) | imbalance: used max/mean | fill max/mean | fullest memnode | memnodes used "
             "| chunk ALLOCs | NACKs | remote faults |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in doc["results"]:
        lines.append("| %s | %s | %s | %s | %.0f %% | %g | %g | %g | %g |" % (
            r["policy"], mm(r["total_s"], "%.1f"), mm(r["imbalance"]), mm(r["fill_imbalance"]),
            100 * r["max_fill"]["median"], r["nodes_used"]["median"], r["chunk_grants"]["median"],
            r["nacks"]["median"], r["faults_remote"]["median"]))
    lines += ["", "Memory in use per memnode at the peak (MiB, median):", "",
              "| policy | " + " | ".join("mn%d (%d)" % (i, p) for i, p in enumerate(o["pools_mib"])) + " |",
              "|---|" + "---|" * len(o["pools_mib"])]
    for r in doc["results"]:
        lines.append("| %s | %s |" % (r["policy"], " | ".join("%.0f" % x for x in r["used_mib_per_memnode"])))
    lines += ["", "Each program's time (s, median): " + "; ".join(
        "%s: %s" % (r["policy"], ", ".join("%.1f" % x for x in r["program_s"])) for r in doc["results"]) + "."]
    if plot_path:
        lines += ["", "![placement](%s)" % os.path.relpath(plot_path, DOC_PATH.parent)]
    for w in doc.get("warnings", []):
        lines += ["", "Warning: " + w]
    lines += ["", END]
    return "\n".join(lines)


def render(doc, json_path, doc_path, plot_path):
    p = plot(doc, plot_path)
    text = section(doc, json_path, p)
    old = doc_path.read_text() if doc_path.exists() else "# Placement\n\n" + BEGIN + "\n" + END + "\n"
    if BEGIN in old and END in old:
        new = old[:old.index(BEGIN)] + text + old[old.index(END) + len(END):]
    else:
        new = old.rstrip() + "\n\n" + text + "\n"
    doc_path.write_text(new)


# ------------------------------------------------------------------ main

def parse_args(argv):
    ap = benchlib.arg_parser(__doc__.split("\n\n")[0], spin=True)
    ap.add_argument("--rate", type=int, default=25, help="Gbit/s of each memnode's link (tbf)")
    ap.add_argument("--policies", default=",".join(POLICIES))
    ap.add_argument("--sample-s", type=float, default=0.3, help="period of the comex status samples")
    ap.add_argument("--render-only", action="store_true")
    a = benchlib.quick(ap.parse_args(argv))
    a.policies = [p for p in a.policies.split(",") if p]
    bad = [p for p in a.policies if p not in POLICIES]
    if bad:
        ap.error("unknown policies %s (known: %s)" % (bad, ", ".join(POLICIES)))
    return a


def page_paths(out_dir):
    """(page, plot) in OUT_DIR, or docs/PLACEMENT.md and its plot."""
    if not out_dir:
        return DOC_PATH, PLOT_PATH
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    return Path(out_dir) / "PLACEMENT.md", Path(out_dir) / "bench-placement.png"


def native_checksums(ctx):
    sums = []
    for i, prog in enumerate(ctx["programs"]):
        p = subprocess.run(bench_argv(ctx, prog, i), capture_output=True, text=True, check=True)
        sums.append(benchlib.json_line(p.stdout)["checksum"])
    return sums


def main(argv):
    a = parse_args(argv)
    if a.render_only:
        f = benchlib.newest_json(NAME)
        if not f:
            sys.exit("placement.py: no bench/results/%s-*.json yet" % NAME)
        render(json.loads(f.read_text()), f, *page_paths(a.out_dir))
        return 0
    why = NetNs.precondition()
    if why:
        print("placement.py: %s" % why, file=sys.stderr)
        return 77
    build = Path(a.build).resolve()
    ctx = {"comex": str(build / "comex"), "bench": str(build / "pager_bench"), "build": build, "spin": a.spin,
           "pools": QUICK_POOLS_MIB if a.quick else POOLS_MIB,
           "programs": QUICK_PROGRAMS if a.quick else PROGRAMS, "sample_s": a.sample_s, "errors": []}
    for k in ("comex", "bench"):
        if not os.access(ctx[k], os.X_OK):
            sys.exit("placement.py: %s is not built" % ctx[k])
    sysenv.install_signal_handlers()
    started = time.monotonic()
    doc, times0 = benchlib.start_doc(SCHEMA)
    ctx["tmp"] = tempfile.mkdtemp(prefix="comex-placement-")
    samples = []
    try:
        ctx["token"] = benchlib.make_token(ctx["comex"], ctx["tmp"])
        ctx["checksums"] = native_checksums(ctx)
        ctx["netns"] = []
        for i in range(len(ctx["pools"])):
            ns = NetNs(i, a.rate)
            ns.create()
            ctx["netns"].append(ns)
        ctx["env"] = benchlib.clean_env("tcp", UCX_NET_DEVICES=ctx["netns"][0].bridge)
        for run in range(a.runs):
            order = a.policies if run % 2 == 0 else list(reversed(a.policies))
            for pol in order:
                log("run %d/%d: placement %s" % (run + 1, a.runs, pol))
                r = run_once(ctx, pol, run)
                log("  total %.1f s, imbalance %s, fill max/mean %s" %
                    (r.get("total_s", 0), r.get("imbalance"), r.get("fill_imbalance")))
                samples.append(r)
        network = [ns.describe() for ns in ctx["netns"]]
    finally:
        UNDO.run_all()
        subprocess.run(["rm", "-rf", ctx["tmp"]])
    doc.update({"options": {"runs": a.runs, "quick": a.quick, "rate_gbit": a.rate, "policies": a.policies,
                            "pools_mib": ctx["pools"], "programs": ctx["programs"], "passes": PASSES,
                            "write_pct": WRITE_PCT, "local_mem": "size/%d + %d pages per memnode of write buffer" %
                            (LOCAL_FRACTION, WBUF_PAGES), "sample_s": a.sample_s,
                            "native_checksums": ctx["checksums"], "spin": a.spin,
                            "run_flags": benchlib.run_spin_flags(a.spin),
                            "memnode_env": benchlib.memnode_spin_env(a.spin),
                            "duration_s": round(time.monotonic() - started, 1)},
                "network": network, "runs": samples, "results": aggregate(samples, a.policies, ctx["pools"]),
                "errors": ctx["errors"]})
    results = doc["results"]
    json_path = benchlib.finish_doc(doc, times0, NAME, a, warnings=[
        "%s: total time spread %.0f %% across runs" % (r["policy"], 100 * r["total_s"]["spread"])
        for r in results if r["total_s"]["spread"] > benchlib.SPREAD_LIMIT])
    if json_path is None:            # --quick, --no-save: the page is made, not written
        doc_path = None
        section(doc, "(not saved)", None)
    else:
        doc_path, plot_path = page_paths(a.out_dir)
        render(doc, json_path, doc_path, plot_path)
    print("wrote %s, %s" % (json_path, doc_path) if json_path else "placement: nothing written")
    for r in doc["results"]:
        print("  %-8s total %6.1f s  imbalance %.2f  fill max/mean %.2f  fullest %.0f %%  NACKs %g" %
              (r["policy"], r["total_s"]["median"], r["imbalance"]["median"], r["fill_imbalance"]["median"],
               100 * r["max_fill"]["median"], r["nacks"]["median"]))
    for e in doc["errors"]:
        print("error: " + e, file=sys.stderr)
    return 1 if doc["errors"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
