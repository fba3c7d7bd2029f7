#!/usr/bin/env python3
"""Transport benchmark harness for comex (stdlib only, Python 3.11).

Runs bench/transport_bench (built beforehand, e.g. `make build`) against
fresh `comex memnode` processes and against a plain loopback TCP
request/response baseline, all in one run, and writes

  bench/results/transport-<UTC timestamp>.json   (schema comex-bench-transport/1)
  docs/TRANSPORT.md                              (regenerated from the newest JSON)

Every configuration is measured --runs times (runs interleaved, configuration
order rotated each run); each result is the median of the per-run medians
with min/max across runs, and a warning when that spread exceeds 10 %.

  python3 bench/transport.py [--build DIR] [--runs 3] [--iters 4096=N,...]
  python3 bench/transport.py --quick          # smoke run, seconds
  python3 bench/transport.py --render-only    # just rewrite docs/TRANSPORT.md
"""

import argparse
import dataclasses
import datetime
import json
import os
import platform
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SCHEMA = "comex-bench-transport/1"
ROOT = Path(__file__).resolve().parent.parent
RESULTS_DIR = ROOT / "bench" / "results"
DOCS_PATH = ROOT / "docs" / "TRANSPORT.md"

# Timed ops per direction per run; sized so the full run takes ~3-6 minutes.
DEFAULT_ITERS = {4096: 20000, 65536: 8000, 262144: 3000}
QUICK_ITERS = {4096: 500, 65536: 200, 262144: 100}
SPREAD_LIMIT = 0.10          # warn when (max - min) / median exceeds this
ACCEPT_LIMIT = 1.5           # issue: UCX within 1.5x of raw TCP for 4 KiB reads
CLIENT_CPU = 0               # the bench client's core; a polling memnode takes the last one
POOL = "64M"                 # memnode pool; the bench needs at most 64 frames
BENCH_TIMEOUT_S = 900
MEMNODE_START_TIMEOUT_S = 30
POLL_CLAIM_RETRIES = 20      # another memnode on the host may hold the polling core (3 s apart)


@dataclasses.dataclass(frozen=True)
class Config:
    """One side-by-side configuration."""
    name: str
    kind: str                 # "rawtcp" or "comex"
    poll: bool                # server (memnode / raw server) busy-polls
    ucx_tls: str | None = None   # UCX_TLS for memnode and client; None = UCX's default
    data_path: str | None = None # memnode --data-path

    def describe(self):
        d = dataclasses.asdict(self)
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
]


# ------------------------------------------------------------------ machine

def run_text(cmd):
    """stdout of cmd, or None if it cannot be run or fails."""
    try:
        return subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None


def read_text(path):
    try:
        return Path(path).read_text()
    except OSError:
        return None


def bracketed(text):
    """The selected value of a sysfs choice like 'always [madvise] never'."""
    m = re.search(r"\[(\w+)\]", text or "")
    return m.group(1) if m else None


def cpu_model():
    for line in (read_text("/proc/cpuinfo") or "").splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or None


def ucx_version():
    out = run_text(["ucx_info", "-v"]) or ""
    m = re.search(r"Version\s+(\S+)", out)
    return {"version": m.group(1) if m else None, "ucx_info_v": out.strip().splitlines()[:2]}


def git_revision():
    rev = run_text(["git", "-C", str(ROOT), "rev-parse", "HEAD"])
    status = run_text(["git", "-C", str(ROOT), "status", "--porcelain"])
    return {"rev": rev.strip() if rev else "none (no commit yet)",
            "dirty": bool(status and status.strip())}


def cpu_busy_fraction(seconds=1.0):
    """Fraction of all cores busy over a short window (other users' load)."""
    def sample():
        fields = [int(x) for x in read_text("/proc/stat").splitlines()[0].split()[1:]]
        return sum(fields), fields[3] + fields[4]  # total, idle + iowait
    t0, i0 = sample()
    time.sleep(seconds)
    t1, i1 = sample()
    return round(1 - (i1 - i0) / max(t1 - t0, 1), 3)


def machine_info():
    return {
        "hostname": socket.gethostname(),
        "kernel": platform.release(),
        "kernel_version": platform.version(),
        "cpu_model": cpu_model(),
        "cores": os.cpu_count(),
        "cores_usable": len(os.sched_getaffinity(0)),
        "hypervisor": " hypervisor " in f" {read_text('/proc/cpuinfo') or ''} ",
        "thp_enabled": bracketed(read_text("/sys/kernel/mm/transparent_hugepage/enabled")),
        "thp_defrag": bracketed(read_text("/sys/kernel/mm/transparent_hugepage/defrag")),
        "ucx": ucx_version(),
        "python": platform.python_version(),
        "loadavg_start": (read_text("/proc/loadavg") or "").split()[:3],
        "background_cpu_busy_start": cpu_busy_fraction(),
    }


# ------------------------------------------------------------------ processes

def clean_env(ucx_tls):
    """Our environment minus anything that would reconfigure comex or UCX
    behind our back, plus the configuration's UCX_TLS."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("COMEX_") and not k.startswith("UCX_")}
    if ucx_tls:
        env["UCX_TLS"] = ucx_tls
    return env


def memnode_flags(cfg, token):
    flags = ["--listen", "127.0.0.1:0", "--pool", POOL, "--token-file", token,
             "--data-path", cfg.data_path]
    if not cfg.poll:
        flags += ["--idle-spin", "0"]  # polling uses the default idle-spin
    return flags


class Memnode:
    """A `comex memnode` process for one configuration and run."""

    def __init__(self, comex, cfg, token, log_path):
        self.comex, self.cfg, self.token, self.log_path = comex, cfg, token, log_path
        self.proc, self.port, self.polling_core = None, None, None

    def start(self):
        with open(self.log_path, "w") as log:
            self.proc = subprocess.Popen([self.comex, "memnode"] + memnode_flags(self.cfg, self.token),
                                         stdout=log, stderr=log, env=clean_env(self.cfg.ucx_tls))
        deadline = time.monotonic() + MEMNODE_START_TIMEOUT_S
        while time.monotonic() < deadline:
            text = read_text(self.log_path) or ""
            m = re.search(r" on port (\d+)", text)
            if m:
                self.port = int(m.group(1))
                core = re.search(r"busy-polling on core (\d+)", text)
                self.polling_core = int(core.group(1)) if core else None
                return
            if self.proc.poll() is not None:
                raise RuntimeError(f"memnode exited at start-up ({self.proc.returncode}): {text.strip()}")
            time.sleep(0.01)
        self.stop()
        raise RuntimeError(f"memnode did not report its port within {MEMNODE_START_TIMEOUT_S} s")

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


def start_memnode(comex, cfg, token, log_path):
    """Starts a memnode; a polling one is restarted (a few times, with a pause)
    when another memnode on this host holds the polling core."""
    for attempt in range(POLL_CLAIM_RETRIES):
        mn = Memnode(comex, cfg, token, log_path)
        mn.start()
        if not cfg.poll or mn.polling_core is not None or attempt == POLL_CLAIM_RETRIES - 1:
            return mn
        mn.stop()
        time.sleep(3)
    return mn


def run_bench(bench, cfg, size, iters, port, token):
    """One transport_bench process; its two result lines, keyed by op."""
    cmd = [bench, cfg.kind, "--size", str(size), "--iters", str(iters), "--cpu", str(CLIENT_CPU)]
    if cfg.kind == "rawtcp":
        cmd += ["--client-poll"] + (["--server-poll"] if cfg.poll else [])
    else:
        cmd += ["--memnode", f"127.0.0.1:{port}", "--token-file", token]
    p = subprocess.run(cmd, capture_output=True, text=True, env=clean_env(cfg.ucx_tls),
                       timeout=BENCH_TIMEOUT_S)
    if p.returncode:
        raise RuntimeError(f"{' '.join(cmd)} exited {p.returncode}: {p.stderr.strip()[-2000:]}")
    lines = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
    return {r["op"]: r for r in lines}


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
            mn = start_memnode(ctx["comex"], cfg, ctx["token"], Path(ctx["tmp"]) / f"{cfg.name}-{run}.log")
            ctx["polling"].setdefault(cfg.name, []).append(mn.polling_core)
        for size, iters in ctx["iters"].items():
            res = run_bench(ctx["bench"], cfg, size, iters, mn.port if mn else None, ctx["token"])
            for op, r in res.items():
                ctx["samples"].setdefault((cfg.name, op, size), []).append(dict(r, run=run))
            print(f"  run {run} {cfg.name:28s} {size:7d} B  read {res['read']['median_us']:8.1f} us"
                  f"  write {res['write']['median_us']:8.1f} us", flush=True)
    except (RuntimeError, subprocess.SubprocessError, OSError) as e:
        ctx["errors"].append({"config": cfg.name, "run": run, "error": str(e),
                              "memnode_log": mn.log_tail() if mn else None})
        print(f"  run {run} {cfg.name}: FAILED: {e}", file=sys.stderr, flush=True)
    finally:
        if mn:
            rc = mn.stop()
            if rc:
                ctx["errors"].append({"config": cfg.name, "run": run, "error": f"memnode exited {rc}",
                                      "memnode_log": mn.log_tail()})


def measure_all(ctx, runs):
    for run in range(runs):
        order = CONFIGS[run % len(CONFIGS):] + CONFIGS[:run % len(CONFIGS)]
        for cfg in order:
            measure_config(ctx, cfg, run)


# ------------------------------------------------------------------ analysis

def spread(values):
    mid = statistics.median(values)
    return (max(values) - min(values)) / mid if mid else 0.0


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
        })
    return out


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
        detail[key] = {"per_run": [round(r["median_us"] / by_run[r["run"]], 3)
                                   for r in ra["runs"] if r["run"] in by_run],
                       "acceptance": (a, b) in ACCEPT_PAIRS}
    return out, detail


def acceptance(ratio_values, detail):
    checks = {k: {"ratio": v, "pass": v <= ACCEPT_LIMIT, "per_run": detail[k]["per_run"]}
              for k, v in ratio_values.items() if detail[k]["acceptance"]}
    return {"criterion": f"UCX within {ACCEPT_LIMIT}x of raw TCP for 4 KiB reads (median latency)",
            "limit": ACCEPT_LIMIT, "checks": checks,
            "all_pass": bool(checks) and all(c["pass"] for c in checks.values())}


def warnings_for(results, polling, errors, machine, quick):
    w = []
    for r in results:
        for field, label in (("spread", "median latency"), ("mbps_spread", "bandwidth")):
            if r[field] > SPREAD_LIMIT:
                w.append(f"{r['config']} {r['op']} {r['size']} B: {label} spread across runs "
                         f"{r[field] * 100:.0f} % > {SPREAD_LIMIT * 100:.0f} %")
    for cfg in CONFIGS:
        if cfg.poll and cfg.kind == "comex" and None in polling.get(cfg.name, []):
            w.append(f"{cfg.name}: in some runs the memnode found no free polling core and slept instead")
    for key in ("background_cpu_busy_start", "background_cpu_busy_end"):
        if (machine.get(key) or 0) > 0.2:
            w.append(f"{key}: {machine[key] * 100:.0f} % of the CPUs were busy with other work")
    if errors:
        w.append(f"{len(errors)} measurement(s) failed; see 'errors'")
    if quick:
        w.append("--quick smoke run: too few iterations for meaningful numbers")
    return w


# ------------------------------------------------------------------ output

def write_json(doc):
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    path = RESULTS_DIR / f"transport-{doc['timestamp']}.json"
    path.write_text(json.dumps(doc, indent=1) + "\n")
    return path


def newest_json():
    files = sorted(RESULTS_DIR.glob("transport-*.json"))
    return files[-1] if files else None


def fmt_size(size):
    return f"{size // 1024} KiB"


def result_table(results):
    rows = ["| size | op | configuration | median µs (min–max of runs) | p99 µs | MB/s |",
            "|---:|---|---|---:|---:|---:|"]
    for size in sorted({r["size"] for r in results}):
        for op in ("read", "write"):
            for r in (x for x in results if x["size"] == size and x["op"] == op):
                flag = " ⚠" if r["spread"] > SPREAD_LIMIT else ""
                rows.append(f"| {fmt_size(size)} | {op} | {r['config']} | {r['median_of_medians_us']:.1f} "
                            f"({r['min']:.1f}–{r['max']:.1f}){flag} | {r['p99_us']:.1f} | {r['mbps']:.0f} |")
    return "\n".join(rows)


def ratio_lines(doc):
    if not doc["ratios"]:
        return "- not measured (a configuration failed; see Errors)"
    lines = []
    for key, c in doc["acceptance"]["checks"].items():
        verdict = "within" if c["pass"] else "NOT within"
        per_run = ", ".join(f"{x:.2f}" for x in c["per_run"])
        lines.append(f"- `{key}` = **{c['ratio']:.2f}** — {verdict} {ACCEPT_LIMIT}x (per run: {per_run})")
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
    """Sentences derived from the numbers in doc, so they stay true when the
    page is regenerated from a new run."""
    res, acc, s = doc["results"], doc["acceptance"], []
    rs, rp = med(res, "rawtcp-sleep", "read", 4096), med(res, "rawtcp-poll", "read", 4096)
    vp, vs = med(res, "ucx-tcp-validated-poll", "read", 4096), med(res, "ucx-tcp-validated-sleep", "read", 4096)
    mp = med(res, "ucx-tcp-rma-poll", "read", 4096)
    if acc["checks"]:
        worst = max(acc["checks"].items(), key=lambda kv: kv[1]["ratio"])
        s.append(f"The acceptance criterion ({acc['criterion']}) "
                 f"{'holds for every pairing' if acc['all_pass'] else 'is not met'}: the worst pairing is "
                 f"`{worst[0]}` at {worst[1]['ratio']:.2f}x.")
    if None not in (rs, rp):
        s.append(f"Raw TCP 4 KiB reads take {rs:.1f} µs with a sleeping server and {rp:.1f} µs with a "
                 f"busy-polling one ({compare(rp, rs)} when polling).")
        if rp > rs:
            s.append(f"Polling did not pay off for plain TCP on this {doc['machine']['cores']}-core machine: "
                     f"the spinning server is pinned to a core it must share with everything else there.")
    if None not in (vp, vs):
        s.append(f"Through the client library over UCX/TCP (validated path), a polling memnode serves a "
                 f"4 KiB read in {vp:.1f} µs and a sleeping one in {vs:.1f} µs ({compare(vp, vs)} when polling).")
    if None not in (vp, mp):
        s.append(f"The one-sided rma path reads 4 KiB in {mp:.1f} µs, {compare(mp, vp)} than the validated "
                 f"path; over TCP, UCX emulates get/put in software, so both are message exchanges.")
    s += bandwidth_sentences(res)
    if doc["warnings"]:
        s.append(f"{len(doc['warnings'])} warning(s) were raised (listed below); treat flagged rows (⚠) "
                 f"as indicative only.")
    return " ".join(s)


def bandwidth_sentences(res):
    big = max((r["size"] for r in res), default=None)
    reads = [r for r in res if r["size"] == big and r["op"] == "read"]
    if not reads:
        return []
    best = max(reads, key=lambda r: r["mbps"])
    raw = max((r for r in reads if r["config"].startswith("rawtcp")), key=lambda r: r["mbps"], default=None)
    ucx = max((r for r in reads if r["config"].startswith("ucx-tcp")), key=lambda r: r["mbps"], default=None)
    s = [f"At {fmt_size(big)}, the highest read bandwidth is {best['mbps']:.0f} MB/s ({best['config']})"]
    if raw and ucx:
        s[0] += (f"; the best UCX/TCP configuration ({ucx['config']}) reaches {ucx['mbps']:.0f} MB/s against "
                 f"{raw['mbps']:.0f} MB/s for the best raw TCP one ({raw['config']})")
    s[0] += "."
    return s


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
  UCX to choose (on one host: shared memory / CMA).
- **raw TCP baseline** (`transport_bench rawtcp`): a forked server holding
  a buffer; loopback TCP with `TCP_NODELAY`; the client sends an 8-byte
  header (plus the payload for a write), the server answers with the payload
  (read) or the header as ack (write). *Sleep*: the server blocks in
  `recv`. *Poll*: it busy-polls `recv(MSG_DONTWAIT)` pinned to the last core,
  like a polling memnode. The client always runs with `--client-poll`
  (spin 100 µs, then block), mirroring the comex client's default.

Each result is the median over {o['runs']} runs of the per-run median, with
the min–max of those medians; p99 and MB/s are medians across runs.
Iterations per run: {", ".join(f"{fmt_size(int(k))}: {v}" for k, v in o['iters'].items())}.
Runs are interleaved and the configuration order rotates each run. ⚠ marks a
median spread across runs above {SPREAD_LIMIT * 100:.0f} %.

## Machine

{m['cpu_model']}, {m['cores']} cores{' (VM)' if m['hypervisor'] else ''}, kernel {m['kernel']},
THP {m['thp_enabled']}, UCX {m['ucx']['version']}, git {doc['git']['rev']}{' (dirty tree)' if doc['git']['dirty'] else ''},
run {doc['timestamp']}; other load on the CPUs: {m['background_cpu_busy_start'] * 100:.0f} % before,
{m['background_cpu_busy_end'] * 100:.0f} % after.

## 4 KiB read: comex over UCX/TCP vs raw TCP

{ratio_lines(doc)}

## Results

{result_table(doc['results'])}

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
    ap.add_argument("--render-only", action="store_true", help="only regenerate docs/TRANSPORT.md")
    return ap.parse_args(argv)


def binaries(build):
    build = Path(build) if Path(build).is_absolute() else ROOT / build
    comex, bench = build / "comex", build / "transport_bench"
    for b in (comex, bench):
        if not os.access(b, os.X_OK):
            sys.exit(f"transport.py: {b} not found; build first (make build)")
    return str(comex), str(bench)


def main(argv):
    args = parse_args(argv)
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
    tmp = tempfile.mkdtemp(prefix="comex-bench-")
    ctx = {"comex": comex, "bench": bench, "tmp": tmp, "token": make_token(comex, tmp),
           "iters": iters, "samples": {}, "errors": [], "polling": {}}
    try:
        measure_all(ctx, args.runs)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    machine["loadavg_end"] = (read_text("/proc/loadavg") or "").split()[:3]
    machine["background_cpu_busy_end"] = cpu_busy_fraction()
    results = aggregate(ctx["samples"])
    ratio_values, ratio_detail = ratios(results)
    doc = {
        "schema": SCHEMA,
        "timestamp": datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ"),
        "machine": machine,
        "git": git_revision(),
        "options": {"runs": args.runs, "iters": {str(k): v for k, v in iters.items()}, "quick": args.quick,
                    "warmup_ops": 100, "client_cpu": CLIENT_CPU, "pool": POOL,
                    "environment": "COMEX_* and UCX_* removed; UCX_TLS set per configuration",
                    "build": str(Path(comex).parent), "duration_s": round(time.monotonic() - started, 1)},
        "configs": [c.describe() for c in CONFIGS],
        "memnode_polling_core": ctx["polling"],
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
