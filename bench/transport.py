#!/usr/bin/env python3
"""Transport benchmark harness for comex (stdlib only, Python 3.11).

Runs bench/transport_bench (built beforehand, e.g. `make build`) against
fresh `comex memnode` processes and against a plain loopback TCP
request/response baseline, all in one run, and writes

  bench/results/transport-<UTC timestamp>.json   (schema comex-bench-transport/1)
  docs/TRANSPORT.md                              (regenerated from the newest JSON)

Every configuration is measured --runs times (each comex configuration close
in time to its raw TCP baseline, order reversed on odd runs); each result is
the median of the per-run medians with min/max across runs, and a warning
when that spread exceeds 10 %.

  python3 bench/transport.py [--build DIR] [--runs 3] [--iters 4096=N,...]
  python3 bench/transport.py --quick          # smoke run, seconds
  python3 bench/transport.py --render-only    # just rewrite docs/TRANSPORT.md
"""

import argparse
import dataclasses
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import benchlib
from benchlib import (ROOT, SPREAD_LIMIT, clean_env, cpu_times, finish_machine_info, git_revision, machine_info,
                      pct, read_text, spread)

SCHEMA = "comex-bench-transport/1"
DOCS_PATH = ROOT / "docs" / "TRANSPORT.md"

# Timed ops per direction per run; sized so the full run takes ~3-6 minutes.
DEFAULT_ITERS = {4096: 80000, 65536: 25000, 262144: 8000}
QUICK_ITERS = {4096: 500, 65536: 200, 262144: 100}
ACCEPT_LIMIT = 1.5           # issue: UCX within 1.5x of raw TCP for 4 KiB reads
CLIENT_CPU = 0               # the bench client's core; a polling memnode takes the last one
POOL_MIB = 64                # memnode pool; the bench needs at most 64 frames
BENCH_TIMEOUT_S = 900
MEMNODE_START_TIMEOUT_S = 30
POLL_WAIT_S = 60             # default --poll-wait: another memnode may hold the polling core
POLL_RETRY_S = 3
PRIVATE_SHM_MARK = "TRANSPORT_BENCH_PRIVATE_SHM"  # set once re-run in a private /dev/shm


@dataclasses.dataclass(frozen=True)
class Config:
    """One side-by-side configuration."""
    name: str
    kind: str                 # "rawtcp" or "comex"
    poll: bool                # server (memnode / raw server) busy-polls
    ucx_tls: str | None = None   # UCX_TLS for memnode and client; None = UCX's default
    data_path: str | None = None # memnode --data-path
    shm: bool = False            # option shm on memnode and client: UCX may use shared memory

    def describe(self):
        d = dataclasses.asdict(self)
        d["bench_flags"] = bench_flags(self, "<port>", "<token>")
        if self.kind == "rawtcp":
            d["server"] = "busy-polls recv(MSG_DONTWAIT)" if self.poll else "blocking recv"
            d["client"] = "--client-poll: spins 100 us, then blocking recv"
        else:
            d["memnode_flags"] = memnode_flags(self, "<token>")
            d["client"] = "client library defaults (client-spin 100us)"
        return d


CONFIGS = [
    Config("rawtcp-sleep", "rawtcp", poll=False),
    Config("rawtcp-poll", "rawtcp", poll=True),
    Config("ucx-tcp-validated-poll", "comex", True, "tcp", "validated"),
    Config("ucx-tcp-validated-sleep", "comex", False, "tcp", "validated"),
    Config("ucx-tcp-rma-poll", "comex", True, "tcp", "rma"),
    Config("ucx-tcp-rma-sleep", "comex", False, "tcp", "rma"),
    Config("ucx-default-validated-poll", "comex", True, None, "validated"),
    Config("ucx-default-rma-poll", "comex", True, None, "rma"),
    Config("ucx-shm-validated-poll", "comex", True, None, "validated", shm=True),
    Config("ucx-shm-validated-sleep", "comex", False, None, "validated", shm=True),
]

# 4 KiB read ratios reported against the acceptance criterion (comex / raw TCP,
# same server behaviour), then informational ones.
ACCEPT_PAIRS = [
    ("ucx-tcp-validated-poll", "rawtcp-poll"),
    ("ucx-tcp-rma-poll", "rawtcp-poll"),
    ("ucx-tcp-validated-sleep", "rawtcp-sleep"),
    ("ucx-tcp-rma-sleep", "rawtcp-sleep"),
]
INFO_PAIRS = [
    ("ucx-default-validated-poll", "rawtcp-poll"),
    ("ucx-default-rma-poll", "rawtcp-poll"),
    ("ucx-tcp-validated-poll", "rawtcp-sleep"),
    ("ucx-shm-validated-poll", "rawtcp-poll"),
    ("ucx-shm-validated-poll", "ucx-tcp-validated-poll"),
]


# ------------------------------------------------------------------ processes

def memnode_extra(cfg):
    """The configuration's memnode options beyond listen, pool and token."""
    flags = ["--data-path", cfg.data_path]
    if not cfg.poll:
        flags += ["--idle-spin", "0"]  # polling uses the default idle-spin
    if cfg.shm:
        flags += ["--shm", "true"]
    return flags


def memnode_flags(cfg, token):
    return benchlib.memnode_flags(token, POOL_MIB, extra=memnode_extra(cfg))


class Memnode:
    """A `comex memnode` process for one configuration and run, logging to tmp/NAME.log."""

    def __init__(self, comex, cfg, token, tmp, name):
        self.comex, self.cfg, self.token, self.tmp, self.name = comex, cfg, token, tmp, name
        self.log_path = Path(tmp) / f"{name}.log"
        self.proc, self.port, self.polling_core = None, None, None

    def start(self):
        self.proc, self.port, self.polling_core, _ = benchlib.start_memnode(
            self.comex, self.tmp, self.name, self.token, POOL_MIB, extra=memnode_extra(self.cfg),
            env=clean_env(self.cfg.ucx_tls), timeout=MEMNODE_START_TIMEOUT_S)

    def stop(self):
        """SIGTERM and wait; the memnode must exit with status 0."""
        if not self.proc or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else 0
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise RuntimeError("memnode ignored SIGTERM for 30 s; killed")

    def log_tail(self, lines=20):
        return (read_text(self.log_path) or "").splitlines()[-lines:]


def start_memnode(comex, cfg, token, tmp, name, poll_wait_s):
    """Starts a memnode. A polling one that found the polling core claimed by
    another memnode on this host (it then sleeps instead) is restarted every
    few seconds for up to poll_wait_s; after that it is used as it is and the
    run is flagged."""
    deadline = time.monotonic() + poll_wait_s
    while True:
        mn = Memnode(comex, cfg, token, tmp, name)
        mn.start()
        if not cfg.poll or mn.polling_core is not None or time.monotonic() >= deadline:
            return mn
        mn.stop()
        time.sleep(POLL_RETRY_S)


def bench_flags(cfg, port, token):
    """transport_bench flags beyond --size and --iters."""
    flags = ["--cpu", str(CLIENT_CPU)]
    if cfg.kind == "rawtcp":
        return flags + ["--client-poll"] + (["--server-poll"] if cfg.poll else [])
    return flags + ["--memnode", f"127.0.0.1:{port}", "--token-file", token] + (["--shm", "true"] if cfg.shm else [])


def run_bench(bench, cfg, size, iters, port, token):
    """One transport_bench process; its two result lines, keyed by op."""
    cmd = [bench, cfg.kind, "--size", str(size), "--iters", str(iters)] + bench_flags(cfg, port, token)
    p = subprocess.run(cmd, capture_output=True, text=True, env=clean_env(cfg.ucx_tls),
                       timeout=BENCH_TIMEOUT_S)
    if p.returncode:
        raise RuntimeError(f"{' '.join(cmd)} exited {p.returncode}: {p.stderr.strip()[-2000:]}")
    lines = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
    return {r["op"]: r for r in lines}


UCX_LANES_RE = re.compile(r"ep_cfg\[\d+\]: (.+)$")


def probe_lanes(bench, cfg, port, token):
    """The UCX lanes the client's endpoints use, from the 'ep_cfg' lines that
    UCX_LOG_LEVEL=info prints (UCX logs to stdout by default), in one short
    extra client run (not timed)."""
    cmd = [bench, "comex", "--size", "4096", "--iters", "1"] + bench_flags(cfg, port, token)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=BENCH_TIMEOUT_S,
                       env=dict(clean_env(cfg.ucx_tls), UCX_LOG_LEVEL="info"))
    lines = (p.stdout + p.stderr).splitlines()
    return sorted({m.group(1).strip() for line in lines if (m := UCX_LANES_RE.search(line))})


# ------------------------------------------------------------------ one run

def make_token(comex, tmp):
    path = Path(tmp) / "token"
    subprocess.run([comex, "token", str(path)], check=True, capture_output=True)
    os.chmod(path, 0o600)
    return str(path)


def measure_config(ctx, cfg, run):
    """All sizes of one configuration against one fresh server. Appends to
    ctx['samples'] and ctx['errors']."""
    mn = None
    try:
        if cfg.kind == "comex":
            mn = start_memnode(ctx["comex"], cfg, ctx["token"], ctx["tmp"], f"{cfg.name}-{run}", ctx["poll_wait_s"])
            ctx["polling"].setdefault(cfg.name, []).append(mn.polling_core)
            if cfg.name not in ctx["lanes"]:
                ctx["lanes"][cfg.name] = probe_lanes(ctx["bench"], cfg, mn.port, ctx["token"])
        for size, iters in ctx["iters"].items():
            res = run_bench(ctx["bench"], cfg, size, iters, mn.port if mn else None, ctx["token"])
            for op, r in res.items():
                if mn:
                    r["memnode_polling_core"] = mn.polling_core
                ctx["samples"].setdefault((cfg.name, op, size), []).append(dict(r, run=run))
            print(f"  run {run} {cfg.name:28s} {size:7d} B  read {res['read']['median_us']:8.1f} us"
                  f"  write {res['write']['median_us']:8.1f} us", flush=True)
    except (RuntimeError, subprocess.SubprocessError, OSError) as e:
        ctx["errors"].append({"config": cfg.name, "run": run, "error": str(e),
                              "memnode_log": mn.log_tail() if mn else None})
        print(f"  run {run} {cfg.name}: FAILED: {e}", file=sys.stderr, flush=True)
    finally:
        stop_checked(ctx, cfg, run, mn)


def stop_checked(ctx, cfg, run, mn):
    """Stops mn (if any), recording an unclean exit as an error."""
    if not mn:
        return
    try:
        rc = mn.stop()
    except RuntimeError as e:
        rc = str(e)
    if rc:
        ctx["errors"].append({"config": cfg.name, "run": run, "error": f"memnode stop: exit {rc}",
                              "memnode_log": mn.log_tail()})


def measurement_order(run):
    """Polling configurations, then sleeping ones, each group led by its raw
    TCP baseline, so that every comex configuration is measured close in
    time to the baseline it is compared with; odd runs go in reverse, so
    that a slow drift of the machine favours neither side."""
    groups = [c for c in CONFIGS if c.poll], [c for c in CONFIGS if not c.poll]
    order = [c for g in groups for c in sorted(g, key=lambda c: c.kind != "rawtcp")]
    return order[::-1] if run % 2 else order


def measure_all(ctx, runs):
    for run in range(runs):
        for cfg in measurement_order(run):
            measure_config(ctx, cfg, run)


# ------------------------------------------------------------------ analysis

def aggregate(samples):
    """One result per (config, op, size), in configuration order."""
    names = [c.name for c in CONFIGS]
    out = []
    for (cfg, op, size), runs in sorted(samples.items(),
                                        key=lambda kv: (names.index(kv[0][0]), kv[0][2], kv[0][1])):
        med = [r["median_us"] for r in runs]
        mbps = [r["mbps"] for r in runs]
        out.append({
            "config": cfg, "op": op, "size": size, "runs": runs,
            "median_of_medians_us": round(statistics.median(med), 3),
            "min": round(min(med), 3), "max": round(max(med), 3),
            "spread": round(spread(med), 4),
            "p99_us": round(statistics.median(r["p99_us"] for r in runs), 3),
            "mean_us": round(statistics.median(r["mean_us"] for r in runs), 3),
            "mbps": round(statistics.median(mbps), 1),
            "mbps_min": round(min(mbps), 1), "mbps_max": round(max(mbps), 1),
            "mbps_spread": round(spread(mbps), 4),
            "memnode_polled": polled(runs),
        })
    return out


def polled(runs):
    """'all', 'some' or 'none' of the runs had a busy-polling memnode; None
    for the raw TCP baseline (no memnode)."""
    cores = [r["memnode_polling_core"] for r in runs if "memnode_polling_core" in r]
    if not cores:
        return None
    n = sum(c is not None for c in cores)
    return "all" if n == len(cores) else "some" if n else "none"


def config_by_name(name):
    return next(c for c in CONFIGS if c.name == name)


def polling_as_configured(result):
    """False when a polling comex configuration's memnode slept in some run
    (another memnode held the polling core), which makes its numbers those
    of a sleeping memnode."""
    return not (config_by_name(result["config"]).poll and result["memnode_polled"] not in (None, "all"))


def find(results, config, op, size):
    return next((r for r in results if (r["config"], r["op"], r["size"]) == (config, op, size)), None)


def ratio_key(a, b):
    return f"4k_read_{a.replace('-', '_')}_vs_{b.replace('-', '_')}"


def ratios(results):
    """4 KiB read median ratios comex / raw TCP, overall and per run (runs
    with the same index were measured close together in time)."""
    out, detail = {}, {}
    for a, b in ACCEPT_PAIRS + INFO_PAIRS:
        ra, rb = find(results, a, "read", 4096), find(results, b, "read", 4096)
        if not ra or not rb:
            continue
        key = ratio_key(a, b)
        out[key] = round(ra["median_of_medians_us"] / rb["median_of_medians_us"], 3)
        by_run = {r["run"]: r["median_us"] for r in rb["runs"]}
        per_run = [round(r["median_us"] / by_run[r["run"]], 3) for r in ra["runs"] if r["run"] in by_run]
        detail[key] = {"per_run": per_run,
                       "median_of_per_run": round(statistics.median(per_run), 3) if per_run else None,
                       "acceptance": (a, b) in ACCEPT_PAIRS,
                       "valid": polling_as_configured(ra)}
    return out, detail


def acceptance(ratio_values, detail):
    checks = {k: {"ratio": v, "pass": v <= ACCEPT_LIMIT, "per_run": detail[k]["per_run"],
                  "median_of_per_run": detail[k]["median_of_per_run"],
                  "valid": detail[k]["valid"]}
              for k, v in ratio_values.items() if detail[k]["acceptance"]}
    valid = [c for c in checks.values() if c["valid"]]
    return {"criterion": f"UCX within {ACCEPT_LIMIT}x of raw TCP for 4 KiB reads (median latency)",
            "limit": ACCEPT_LIMIT, "checks": checks,
            "all_valid": bool(checks) and len(valid) == len(checks),
            "all_pass": bool(valid) and all(c["pass"] for c in valid)}


def warnings_for(results, polling, errors, machine, quick):
    w = []
    for r in results:
        for field, label in (("spread", "median latency"), ("mbps_spread", "bandwidth")):
            if r[field] > SPREAD_LIMIT:
                w.append(f"{r['config']} {r['op']} {r['size']} B: {label} spread across runs "
                         f"{r[field] * 100:.1f} % > {SPREAD_LIMIT * 100:.0f} %")
    for cfg in CONFIGS:
        if cfg.poll and cfg.kind == "comex" and None in polling.get(cfg.name, []):
            w.append(f"{cfg.name}: in some runs the memnode found its polling core claimed by another "
                     f"memnode on this host and slept instead; those numbers are not polling numbers")
    w += benchlib.busy_warnings(machine)
    return w + benchlib.closing_warnings(errors, "measurement(s)",
                                         quick and "too few iterations for meaningful numbers")


# ------------------------------------------------------------------ output

def write_json(doc):
    return benchlib.write_json(doc, "transport")


def newest_json():
    return benchlib.newest_json("transport")


def fmt_size(size):
    return f"{size // 1024} KiB"


def result_table(results):
    rows = ["| size | op | configuration | median µs (min–max of runs) | p99 µs | MB/s |",
            "|---:|---|---|---:|---:|---:|"]
    for size in sorted({r["size"] for r in results}):
        for op in ("read", "write"):
            for r in (x for x in results if x["size"] == size and x["op"] == op):
                flag = " ⚠" if r["spread"] > SPREAD_LIMIT else ""
                name = r["config"] + ("" if polling_as_configured(r) else " (slept!)")
                rows.append(f"| {fmt_size(size)} | {op} | {name} | {r['median_of_medians_us']:.1f} "
                            f"({r['min']:.1f}–{r['max']:.1f}){flag} | {r['p99_us']:.1f} | {r['mbps']:.0f} |")
    return "\n".join(rows)


def ratio_lines(doc):
    if not doc["ratios"]:
        return "- not measured (a configuration failed; see Errors)"
    lines = []
    for key, c in doc["acceptance"]["checks"].items():
        verdict = "within" if c["pass"] else "NOT within"
        per_run = ", ".join(f"{x:.2f}" for x in c["per_run"])
        mid = c.get("median_of_per_run")
        invalid = "" if c["valid"] else " — INVALID: the memnode did not poll in every run"
        lines.append(f"- `{key}` = **{c['ratio']:.2f}** — {verdict} {ACCEPT_LIMIT}x "
                     f"(per run: {per_run}; median of those {'n/a' if mid is None else f'{mid:.2f}'}){invalid}")
    for key, v in doc["ratios"].items():
        if key not in doc["acceptance"]["checks"]:
            lines.append(f"- `{key}` = {v:.2f} (informational)")
    return "\n".join(lines)


def med(results, config, op, size):
    r = find(results, config, op, size)
    return r["median_of_medians_us"] if r else None


def compare(a, b):
    """'x % lower/higher' of a relative to b."""
    if a is None or b is None:
        return "n/a"
    pct = (a - b) / b * 100
    return f"{abs(pct):.0f} % {'lower' if pct < 0 else 'higher'}"


def interpretation(doc):
    """Bullet points derived from the numbers in doc, so they stay true when
    the page is regenerated from a new run."""
    res = doc["results"]
    s = acceptance_sentences(doc["acceptance"])
    s += polling_sentences(res, doc["machine"]["cores"])
    s += path_sentences(res)
    s += default_tls_sentences(res, doc.get("ucx_client_lanes") or {})
    s += bandwidth_sentences(res)
    s += noise_sentences(res)
    return "\n".join(f"- {x}" for x in s)


def noise_sentences(res):
    flagged = [r for r in res if r["spread"] > SPREAD_LIMIT]
    if not flagged:
        return [f"Every median was stable across runs (spread ≤ {SPREAD_LIMIT * 100:.0f} %)."]
    worst = max(flagged, key=lambda r: r["spread"])
    return [f"{len(flagged)} of {len(res)} rows moved by more than {SPREAD_LIMIT * 100:.0f} % between runs "
            f"(⚠; worst: {worst['config']} {worst['op']} {fmt_size(worst['size'])}, "
            f"{worst['min']:.1f}–{worst['max']:.1f} µs). When the machine changes speed during a run, a "
            f"single run's numbers, and its ratios, can be far off; quote the medians over runs, and "
            f"re-run with more --runs before reading much into differences of a few µs."]


def acceptance_sentences(acc):
    valid = {k: c for k, c in acc["checks"].items() if c["valid"]}
    if not valid:
        return ["The acceptance criterion could not be evaluated: no valid pairing was measured."]
    worst = max(valid.items(), key=lambda kv: kv[1]["ratio"])
    best = min(valid.items(), key=lambda kv: kv[1]["ratio"])
    verdict = "holds for every valid pairing" if acc["all_pass"] else "is not met"
    s = [f"Acceptance ({acc['criterion']}) {verdict}: from {best[1]['ratio']:.2f}x (`{best[0]}`) "
         f"to {worst[1]['ratio']:.2f}x (`{worst[0]}`)."]
    if not acc["all_valid"]:
        s.append("Some pairings are invalid because a 'polling' memnode slept; see the ratio list.")
    return s


def polling_sentences(res, cores):
    s = []
    rs, rp = med(res, "rawtcp-sleep", "read", 4096), med(res, "rawtcp-poll", "read", 4096)
    if None not in (rs, rp):
        s.append(f"Raw TCP, 4 KiB read: {rs:.1f} µs with a sleeping server, {rp:.1f} µs with a polling one "
                 f"({compare(rp, rs)} when polling).")
        if rp > rs:
            s.append(f"Polling did not pay off for plain TCP on this {cores}-core machine, likely because "
                     f"the spinning server takes one of only {cores} cores away from everything else.")
    poll = find(res, "ucx-tcp-validated-poll", "read", 4096)
    vs = med(res, "ucx-tcp-validated-sleep", "read", 4096)
    if poll and vs is not None and polling_as_configured(poll):
        vp = poll["median_of_medians_us"]
        s.append(f"comex over UCX/TCP (validated), 4 KiB read: {vp:.1f} µs with a polling memnode, "
                 f"{vs:.1f} µs with a sleeping one ({compare(vp, vs)} when polling).")
    return s


def path_sentences(res):
    s = []
    big = max((r["size"] for r in res), default=4096)
    for size in sorted({4096, big}):
        v, m = med(res, "ucx-tcp-validated-sleep", "read", size), med(res, "ucx-tcp-rma-sleep", "read", size)
        if None not in (v, m):
            s.append(f"{fmt_size(size)} read over UCX/TCP (sleeping memnode): rma {m:.1f} µs vs validated "
                     f"{v:.1f} µs ({compare(m, v)} for rma).")
    if s:
        s.append("Over TCP, UCX emulates one-sided get/put with active messages (the `rma_am` lane), "
                 "so rma saves no network round trip there; it only skips the memnode's checks.")
    v, m = med(res, "ucx-tcp-validated-sleep", "write", 4096), med(res, "ucx-tcp-rma-sleep", "write", 4096)
    if None not in (v, m) and m > v:
        s.append(f"4 KiB write over UCX/TCP (sleeping memnode): rma {m:.1f} µs vs validated {v:.1f} µs; an rma "
                 f"write is a put followed by a flush that proves it landed (client.c), two exchanges where "
                 f"the validated WRITE needs one.")
    return s


def default_tls_sentences(res, lanes):
    default = [v for k, v in lanes.items() if k.startswith("ucx-default") and v]
    t, d = med(res, "ucx-tcp-validated-poll", "read", 4096), med(res, "ucx-default-validated-poll", "read", 4096)
    if not default or None in (t, d):
        return []
    if all(only_tcp(v) for v in default):
        return [f"With UCX_TLS unset, UCX still chose tcp for every lane of comex's client-server "
                f"connection (see the lane list), so the ucx-default-* rows measure the same path as "
                f"ucx-tcp-* (4 KiB validated read {d:.1f} vs {t:.1f} µs): no shared-memory transport "
                f"was used on this host."]
    return [f"With UCX_TLS unset, UCX chose other lanes than tcp (see the lane list); 4 KiB validated "
            f"read {d:.1f} µs vs {t:.1f} µs with UCX_TLS=tcp ({compare(d, t)})."]


def bandwidth_sentences(res):
    big = max((r["size"] for r in res), default=None)
    reads = [r for r in res if r["size"] == big and r["op"] == "read"]
    raw = max((r for r in reads if r["config"].startswith("rawtcp")), key=lambda r: r["mbps"], default=None)
    ucx = max((r for r in reads if r["config"].startswith("ucx-tcp")), key=lambda r: r["mbps"], default=None)
    if not (raw and ucx):
        return []
    return [f"{fmt_size(big)} read bandwidth: best UCX/TCP configuration {ucx['mbps']:.0f} MB/s "
            f"({ucx['config']}) vs best raw TCP {raw['mbps']:.0f} MB/s ({raw['config']}), "
            f"{ucx['mbps'] / raw['mbps']:.2f}x."]


def lanes_lines(doc):
    lanes = doc.get("ucx_client_lanes") or {}
    lanes = {c.name: lanes[c.name] for c in CONFIGS if c.name in lanes}
    return "\n".join(f"- {name}: " + "; ".join(f"`{x}`" for x in v) if v else f"- {name}: (not reported)"
                     for name, v in lanes.items()) or "- not recorded"


def only_tcp(lanes):
    """True when every lane of every endpoint config runs over tcp devices."""
    devices = re.findall(r"\(([^)]*)\)", " ".join(lanes))
    return bool(devices) and all(d.startswith("tcp/") for group in devices for d in group.split())


def private_shm_note(options):
    if not options.get("private_shm"):
        return ""
    return ("\nThis run used `--private-shm`: it ran in a mount namespace with its own\n"
            "`/dev/shm`, so that a memnode left running elsewhere on the host could not\n"
            "hold the lock by which a polling memnode claims its core.\n")


def render_docs(doc, json_path):
    m, o = doc["machine"], doc["options"]
    warnings = "\n".join(f"- {w}" for w in doc["warnings"]) or "- none"
    errors = "\n".join(f"- {e['config']} run {e['run']}: {e['error']}" for e in doc["errors"]) or "- none"
    text = f"""# Transport benchmark

<!-- Generated by bench/transport.py from {json_path.relative_to(ROOT)}; do not edit by hand. -->

How long does it take to move a page (or a run of pages) to and from a
memnode through the client library, and how does that compare with the
simplest thing that could work: a request/response exchange over a plain TCP
socket on the same loopback? This page answers that for 4 KiB, 64 KiB and
256 KiB transfers, one request at a time.

## What is measured

`bench/transport_bench` does, per configuration, run and size: 100 untimed
warm-up writes, N timed writes, 100 warm-up reads, N timed reads of the same
buffer, then checks that the data read back is the pattern written (a broken
path fails instead of producing numbers). Each op is timed on its own with
`CLOCK_MONOTONIC`; bandwidth is bytes moved / wall time of the timed loop
(MB/s = 10^6 bytes/s). The client is pinned to core {o['client_cpu']}.

- **comex** (`transport_bench comex`): one client (`client_connect`), one
  contiguous frame run from `client_alloc`, then `client_write` /
  `client_read` of the whole run — one UCX transfer per op. Client options
  are the defaults (it busy-polls 100 µs, then sleeps on the event fd).
  A fresh `comex memnode --pool {o['pool']}` is started per configuration
  and run. *Polling* uses the default `--idle-spin` (the memnode pins itself
  to the last core and busy-polls between requests); *sleeping* passes
  `--idle-spin 0`. `validated` moves pages in READ/WRITE messages checked
  against the client's frames; `rma` hands the client the pool key for
  one-sided get/put. `ucx-tcp-*` sets `UCX_TLS=tcp`; `ucx-default-*` leaves
  `UCX_TLS` unset so UCX chooses (the lanes it chose are listed below);
  `ucx-shm-*` also passes `--shm true` to memnode and client, which lets UCX
  use shared memory on one host (docs/DECISIONS.md D10; what `comex run`
  does with its embedded memnode).
- **raw TCP baseline** (`transport_bench rawtcp`): a forked server holding
  a buffer; loopback TCP with `TCP_NODELAY`; the client sends an 8-byte
  header (plus the payload for a write), the server answers with the payload
  (read) or the header as ack (write). *Sleep*: the server blocks in
  `recv`. *Poll*: it busy-polls `recv(MSG_DONTWAIT)` pinned to the last core,
  like a polling memnode. The client always runs with `--client-poll`
  (spin 100 µs, then block), mirroring the comex client's default.
{private_shm_note(o)}
Each result is the median over {o['runs']} runs of the per-run median, with
the min–max of those medians; p99 and MB/s are medians across runs.
Iterations per run: {", ".join(f"{fmt_size(int(k))}: {v}" for k, v in o['iters'].items())}.
Runs follow each other; within a run, the polling configurations are
measured together right after raw TCP with a polling server, then the
sleeping ones after raw TCP with a sleeping server, in reverse order on
odd runs. ⚠ marks a
median spread across runs above {SPREAD_LIMIT * 100:.0f} %.

## Machine

{m['cpu_model']}, {m['cores']} cores{' (VM)' if m['hypervisor'] else ''}, kernel {m['kernel']},
THP {m['thp_enabled']}, UCX {m['ucx']['version']}, git {doc['git']['rev']}{' (dirty tree)' if doc['git']['dirty'] else ''},
run {doc['timestamp']}; other load on the CPUs: {m['background_cpu_busy_start'] * 100:.0f} % before,
{m['background_cpu_busy_end'] * 100:.0f} % after; hypervisor steal during the run: {pct(m.get('cpu_steal_during_run'))}.

## 4 KiB read: comex over UCX/TCP vs raw TCP

{ratio_lines(doc)}

## Results

{result_table(doc['results'])}

UCX lanes of the client's endpoints (`ep_cfg` lines at `UCX_LOG_LEVEL=info`,
from one extra short client run per configuration):

{lanes_lines(doc)}

## Interpretation

{interpretation(doc)}

## Warnings

{warnings}

## Errors

{errors}

Reproduce: `make build && python3 bench/transport.py` (about 3–6 minutes;
`--quick` for a smoke run, `--render-only` to regenerate this page).
"""
    DOCS_PATH.write_text(text)


# ------------------------------------------------------------------ main

def parse_iters(text):
    out = {}
    for item in text.split(","):
        size, n = item.split("=")
        if int(size) % 4096 or int(n) <= 0:
            raise argparse.ArgumentTypeError(f"bad size=iters pair '{item}'")
        out[int(size)] = int(n)
    return out


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build", help="build directory holding comex and transport_bench")
    ap.add_argument("--runs", type=int, default=3, help="runs per configuration (>= 3 for real numbers)")
    ap.add_argument("--iters", type=parse_iters, default=None,
                    help="timed ops per run as SIZE=N,... (default "
                         + ",".join(f"{k}={v}" for k, v in DEFAULT_ITERS.items()) + ")")
    ap.add_argument("--quick", action="store_true", help="smoke run: few iterations")
    ap.add_argument("--poll-wait", type=float, default=POLL_WAIT_S, metavar="SECONDS",
                    help="how long a polling memnode may wait for the polling core to be free")
    ap.add_argument("--private-shm", action="store_true",
                    help="run in a mount namespace with a private /dev/shm (root), so a memnode left "
                         "running by someone else cannot hold the polling-core claim")
    ap.add_argument("--render-only", action="store_true", help="only regenerate docs/TRANSPORT.md")
    return ap.parse_args(argv)


def binaries(build):
    build = Path(build) if Path(build).is_absolute() else ROOT / build
    comex, bench = build / "comex", build / "transport_bench"
    for b in (comex, bench):
        if not os.access(b, os.X_OK):
            sys.exit(f"transport.py: {b} not found; build first (make build)")
    return str(comex), str(bench)


def reexec_private_shm(argv, harness=__file__):
    """Re-runs this harness (or the given one) in a new mount namespace with
    a fresh tmpfs on /dev/shm. Memnodes claim their polling core with a lock
    file there; this way only the memnodes of this run (one at a time)
    compete for it. UCX's shared-memory transports keep working: client and
    memnode share the namespace."""
    script = 'mount -t tmpfs -o mode=1777 tmpfs /dev/shm && exec "$@"'
    cmd = ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh",
           sys.executable, str(Path(harness).resolve()), *argv]
    os.execvpe(cmd[0], cmd, dict(os.environ, **{PRIVATE_SHM_MARK: "1"}))


def main(argv):
    args = parse_args(argv)
    if args.private_shm and not os.environ.get(PRIVATE_SHM_MARK):
        reexec_private_shm(argv)
    if args.render_only:
        path = newest_json()
        if not path:
            sys.exit("transport.py: no bench/results/transport-*.json yet")
        render_docs(json.loads(path.read_text()), path)
        print(f"wrote {DOCS_PATH}")
        return 0
    comex, bench = binaries(args.build)
    iters = args.iters or (QUICK_ITERS if args.quick else DEFAULT_ITERS)
    started = time.monotonic()
    machine = machine_info()
    times0 = cpu_times()
    tmp = tempfile.mkdtemp(prefix="comex-bench-")
    ctx = {"comex": comex, "bench": bench, "tmp": tmp, "token": make_token(comex, tmp),
           "iters": iters, "samples": {}, "errors": [], "polling": {}, "lanes": {},
           "poll_wait_s": args.poll_wait}
    try:
        measure_all(ctx, args.runs)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    finish_machine_info(machine, times0)
    results = aggregate(ctx["samples"])
    ratio_values, ratio_detail = ratios(results)
    doc = {
        "schema": SCHEMA,
        "timestamp": benchlib.utc_stamp(),
        "machine": machine,
        "git": git_revision(),
        "options": {"runs": args.runs, "iters": {str(k): v for k, v in iters.items()}, "quick": args.quick,
                    "warmup_ops": 100, "client_cpu": CLIENT_CPU, "pool": f"{POOL_MIB}M", "poll_wait_s": args.poll_wait,
                    "private_shm": bool(os.environ.get(PRIVATE_SHM_MARK)),
                    "environment": "COMEX_* and UCX_* removed; UCX_TLS set per configuration",
                    "build": str(Path(comex).parent), "duration_s": round(time.monotonic() - started, 1)},
        "configs": [c.describe() for c in CONFIGS],
        "memnode_polling_core": ctx["polling"],
        "ucx_client_lanes": ctx["lanes"],
        "results": results,
        "ratios": ratio_values,
        "ratio_detail": ratio_detail,
        "acceptance": acceptance(ratio_values, ratio_detail),
        "errors": ctx["errors"],
    }
    doc["warnings"] = warnings_for(results, ctx["polling"], ctx["errors"], machine, args.quick)
    path = write_json(doc)
    render_docs(json.loads(newest_json().read_text()), newest_json())
    print(f"wrote {path} and {DOCS_PATH} in {doc['options']['duration_s']} s")
    for w in doc["warnings"]:
        print(f"warning: {w}", file=sys.stderr)
    return 1 if ctx["errors"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
