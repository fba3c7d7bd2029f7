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
  python3 bench/transport.py --quick          # smoke run, seconds: --poll-wait 0, outputs checked, nothing
                                              # written (--out-dir keeps the JSON)
  python3 bench/transport.py --render-only    # just rewrite docs/TRANSPORT.md
"""

import argparse
import dataclasses
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import benchlib
from benchlib import ROOT, SPREAD_LIMIT, clean_env, pct, spread
from harness import sysenv

SCHEMA = "comex-bench-transport/2"
DOCS_PATH = ROOT / "docs" / "TRANSPORT.md"

# The pager's real transfer sizes: a page, prefetch windows of 4-64 pages
# (160 KiB: the mean read of a sample sort at 25 %), a 1 MiB write buffer.
# Timed ops per direction per run, sized so a full run takes ~10 minutes.
DEFAULT_ITERS = {4096: 20000, 16384: 10000, 65536: 5000, 163840: 3000, 262144: 2000, 1048576: 800}
QUICK_ITERS = {4096: 200, 65536: 100, 262144: 50}
UNDER_WRITES = 262144        # read_w: the write beside each read, one flush-run of the write buffer
LIMITS = {"read": 1.3, "write": 1.3, "read_w": 1.5}   # issue 36: comex over TCP / raw kernel TCP
CLIENT_CPU = 0               # the bench client's core; a polling memnode takes the last one
POOL_MIB = 64                # memnode pool; the bench needs at most 512 frames
NET_GBIT = 25                # the veth path's tbf rate, as the evaluation's comex-net25 mode
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
    transport: str = "tcp"    # comex option transport: tcp (comex's own sockets) or ucx
    ucx_tls: str | None = None   # UCX_TLS for memnode and client (transport ucx)
    data_path: str = "validated" # memnode --data-path
    shm: bool = False            # option shm on memnode and client: UCX may use shared memory
    path: str = "lo"             # "lo": loopback; "veth": the memnode in a network namespace behind veth + tbf

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
    Config("tcp-poll", "comex", True),
    Config("tcp-sleep", "comex", False),
    Config("tcp-rma-poll", "comex", True, data_path="rma"),
    Config("ucx-tcp-poll", "comex", True, "ucx", "tcp"),
    Config("ucx-tcp-sleep", "comex", False, "ucx", "tcp"),
    Config("ucx-shm-poll", "comex", True, "ucx", None, shm=True),
    Config("rawtcp-poll-veth", "rawtcp", poll=True, path="veth"),
    Config("tcp-poll-veth", "comex", True, path="veth"),
    Config("ucx-tcp-poll-veth", "comex", True, "ucx", "tcp", path="veth"),
]

# comex / raw TCP on the same path with the same polling: the targets
# (LIMITS), then informational pairs.
TARGET_PAIRS = [("tcp-poll", "rawtcp-poll"), ("tcp-sleep", "rawtcp-sleep"), ("tcp-poll-veth", "rawtcp-poll-veth")]
INFO_PAIRS = [("ucx-tcp-poll", "rawtcp-poll"), ("ucx-tcp-sleep", "rawtcp-sleep"),
              ("ucx-tcp-poll-veth", "rawtcp-poll-veth"), ("tcp-rma-poll", "rawtcp-poll"),
              ("ucx-tcp-poll", "tcp-poll"), ("ucx-shm-poll", "tcp-poll")]


# ------------------------------------------------------------------ processes

def memnode_extra(cfg):
    """The configuration's memnode options beyond listen, pool and token."""
    flags = ["--data-path", cfg.data_path, "--transport", cfg.transport]
    if not cfg.poll:
        flags += ["--idle-spin", "0"]  # polling uses the default idle-spin
    if cfg.shm:
        flags += ["--shm", "true"]
    return flags


def memnode_flags(cfg, token):
    return benchlib.memnode_flags(token, POOL_MIB, extra=memnode_extra(cfg))


def ucx_env(cfg, netns, side):
    """The environment of a memnode (side 'memnode') or bench client: clean,
    with UCX_TLS per configuration and, on the veth path, UCX's device."""
    env = clean_env(cfg.ucx_tls if cfg.transport == "ucx" else None)
    if cfg.path == "veth" and cfg.transport == "ucx":
        env["UCX_NET_DEVICES"] = netns.ns_if if side == "memnode" else netns.bridge
    return env


def start_memnode(ctx, cfg, name):
    """Starts a memnode (on the veth path inside the network namespace). A
    polling one that found the polling core claimed by another memnode on
    this host (it then sleeps instead) is restarted every few seconds for up
    to --poll-wait; after that it is used as it is and the run is flagged."""
    deadline = time.monotonic() + ctx["poll_wait_s"]
    while True:
        mn = sysenv.Memnode(ctx["comex"], ctx["token"], POOL_MIB << 20, ctx["tmp"], name=name,
                            netns=ctx["netns"] if cfg.path == "veth" else None, extra=memnode_extra(cfg),
                            base_env=ucx_env(cfg, ctx["netns"], "memnode"))
        mn.start(MEMNODE_START_TIMEOUT_S)
        if not cfg.poll or mn.polling_core is not None or time.monotonic() >= deadline:
            return mn
        mn.terminate()
        time.sleep(POLL_RETRY_S)


def bench_flags(cfg, mn, token, netns):
    """transport_bench flags beyond --size and --iters."""
    flags = ["--cpu", str(CLIENT_CPU), "--under-writes", str(UNDER_WRITES)]
    if cfg.kind == "rawtcp":
        flags += ["--client-poll"] + (["--server-poll"] if cfg.poll else [])
        return flags + (["--netns", netns.name, "--addr", netns.ns_ip] if cfg.path == "veth" else [])
    return flags + ["--memnode", f"{mn.host}:{mn.port}", "--token-file", token, "--transport", cfg.transport] + \
        (["--shm", "true"] if cfg.shm else [])


def run_bench(ctx, cfg, size, iters, mn):
    """One transport_bench process; its result lines, keyed by op."""
    cmd = [ctx["bench"], cfg.kind, "--size", str(size), "--iters", str(iters)] + \
        bench_flags(cfg, mn, ctx["token"], ctx["netns"])
    p = subprocess.run(cmd, capture_output=True, text=True, env=ucx_env(cfg, ctx["netns"], "client"),
                       timeout=BENCH_TIMEOUT_S)
    if p.returncode:
        raise RuntimeError(f"{' '.join(cmd)} exited {p.returncode}: {p.stderr.strip()[-2000:]}")
    lines = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
    return {r["op"]: r for r in lines}


# ------------------------------------------------------------------ one run

make_token = benchlib.make_token


def measure_config(ctx, cfg, run):
    """All sizes of one configuration against one fresh server. Appends to
    ctx['samples'] and ctx['errors']."""
    mn = None
    try:
        if cfg.kind == "comex":
            mn = start_memnode(ctx, cfg, f"{cfg.name}-{run}")
            ctx["polling"].setdefault(cfg.name, []).append(mn.polling_core)
        for size, iters in ctx["iters"].items():
            res = run_bench(ctx, cfg, size, iters, mn)
            for op, r in res.items():
                if mn:
                    r["memnode_polling_core"] = mn.polling_core
                ctx["samples"].setdefault((cfg.name, op, size), []).append(dict(r, run=run))
            print(f"  run {run} {cfg.name:20s} {size:8d} B  read {res['read']['median_us']:8.1f} us"
                  f"  read_w {res['read_w']['median_us']:8.1f} us  write {res['write']['median_us']:8.1f} us",
                  flush=True)
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
        rc = mn.terminate()
    except RuntimeError as e:
        rc = str(e)
    if rc:
        ctx["errors"].append({"config": cfg.name, "run": run, "error": f"memnode stop: exit {rc}",
                              "memnode_log": mn.log_tail()})


def measurement_order(run, configs):
    """Per path, polling configurations, then sleeping ones, each group led by
    its raw TCP baseline, so that every comex configuration is measured close
    in time to the baseline it is compared with; odd runs go in reverse, so
    that a slow drift of the machine favours neither side."""
    order = []
    for path in ("lo", "veth"):
        for poll in (True, False):
            group = [c for c in configs if c.path == path and c.poll == poll]
            order += sorted(group, key=lambda c: c.kind != "rawtcp")
    return order[::-1] if run % 2 else order


def measure_all(ctx, runs, configs):
    for run in range(runs):
        for cfg in measurement_order(run, configs):
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


OPS = ("read", "read_w", "write")


def ratios(results):
    """comex / baseline median ratios per pair, op and size, with the
    per-run ratios (runs with the same index were measured close in time)."""
    out = []
    for a, b in TARGET_PAIRS + INFO_PAIRS:
        for size in sorted({r["size"] for r in results}):
            for op in OPS:
                ra, rb = find(results, a, op, size), find(results, b, op, size)
                if not ra or not rb:
                    continue
                by_run = {r["run"]: r["median_us"] for r in rb["runs"]}
                per_run = [round(r["median_us"] / by_run[r["run"]], 3) for r in ra["runs"] if r["run"] in by_run]
                ratio = round(ra["median_of_medians_us"] / rb["median_of_medians_us"], 3)
                target = (a, b) in TARGET_PAIRS
                out.append({"config": a, "baseline": b, "op": op, "size": size, "ratio": ratio,
                            "per_run": per_run, "target": LIMITS[op] if target else None,
                            "pass": ratio <= LIMITS[op] if target else None,
                            "valid": polling_as_configured(ra)})
    return out


def acceptance(rat):
    checks = [r for r in rat if r["target"] is not None]
    valid = [r for r in checks if r["valid"]]
    return {"criterion": "comex over TCP within %.1fx of raw kernel TCP on the same path and polling for reads "
                         "and writes alone, %.1fx for reads beside a write (median latency)"
                         % (LIMITS["read"], LIMITS["read_w"]),
            "checks": len(checks), "valid": len(valid), "passed": sum(r["pass"] for r in valid),
            "failed": [f"{r['config']} {r['op']} {fmt_size(r['size'])}: {r['ratio']:.2f}x" for r in valid
                       if not r["pass"]],
            "all_pass": bool(valid) and all(r["pass"] for r in valid)}


def warnings_for(results, polling, errors, quick):
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
    return w + benchlib.closing_warnings(errors, "measurement(s)",
                                         quick and "too few iterations for meaningful numbers")


# ------------------------------------------------------------------ output

def newest_json():
    return benchlib.newest_json("transport")


def fmt_size(size):
    return f"{size // 1024} KiB" if size < 1 << 20 else f"{size >> 20} MiB"


def latency_table(results, path):
    """Median µs per configuration (rows) and size (columns), for each op."""
    names = [c.name for c in CONFIGS if c.path == path and any(r["config"] == c.name for r in results)]
    sizes = sorted({r["size"] for r in results})
    rows = []
    for op in OPS:
        rows += [f"**{op}** — median µs (p99 µs)", "",
                 "| configuration | " + " | ".join(fmt_size(z) for z in sizes) + " |",
                 "|---|" + "---:|" * len(sizes)]
        for name in names:
            cells = []
            for z in sizes:
                r = find(results, name, op, z)
                flag = " ⚠" if r and r["spread"] > SPREAD_LIMIT else ""
                cells.append(f"{r['median_of_medians_us']:.1f} ({r['p99_us']:.0f}){flag}" if r else "–")
            slept = "" if all(polling_as_configured(r) for r in results if r["config"] == name) else " (slept!)"
            rows.append(f"| {name}{slept} | " + " | ".join(cells) + " |")
        rows.append("")
    return "\n".join(rows)


def ratio_table(rat, pairs):
    sizes = sorted({r["size"] for r in rat})
    rows = ["| comex / baseline | op | " + " | ".join(fmt_size(z) for z in sizes) + " |",
            "|---|---|" + "---:|" * len(sizes)]
    for a, b in pairs:
        for op in OPS:
            cells = []
            for z in sizes:
                r = next((x for x in rat if (x["config"], x["baseline"], x["op"], x["size"]) == (a, b, op, z)), None)
                if not r:
                    cells.append("–")
                    continue
                mark = "" if r["pass"] is None else (" ✓" if r["pass"] else " ✗")
                cells.append(f"{r['ratio']:.2f}{mark}" + ("" if r["valid"] else " (invalid)"))
            if any(c != "–" for c in cells):
                rows.append(f"| {a} / {b} | {op} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def bandwidth_lines(results):
    big = max((r["size"] for r in results), default=None)
    out = []
    for name in ("rawtcp-poll", "tcp-poll", "ucx-tcp-poll", "ucx-shm-poll", "rawtcp-poll-veth", "tcp-poll-veth",
                 "ucx-tcp-poll-veth"):
        r = find(results, name, "read", big)
        if r:
            out.append(f"{name} {r['mbps']:.0f} MB/s")
    return f"{fmt_size(big)} reads, one at a time: " + ", ".join(out) + "." if out else ""


def interpretation(doc):
    """Sentences derived from the numbers, so they stay true when the page is
    regenerated from a new run."""
    res, acc = doc["results"], doc["acceptance"]
    s = []
    if acc["valid"]:
        s.append(f"Target ({acc['criterion']}): {acc['passed']} of {acc['valid']} valid checks met"
                 + (f"; missed: {'; '.join(acc['failed'])}." if acc["failed"] else "."))
    for size in (65536, 262144):
        u, t, r = (med(res, c, "read", size) for c in ("ucx-tcp-poll", "tcp-poll", "rawtcp-poll"))
        if None not in (u, t, r):
            s.append(f"{fmt_size(size)} read on loopback: UCX over TCP {u:.1f} µs, comex's own TCP {t:.1f} µs, "
                     f"raw kernel TCP {r:.1f} µs.")
    bw = bandwidth_lines(res)
    if bw:
        s.append(bw)
    s += noise_sentences(res)
    return "\n".join(f"- {x}" for x in s)


def med(results, config, op, size):
    r = find(results, config, op, size)
    return r["median_of_medians_us"] if r else None


def noise_sentences(res):
    flagged = [r for r in res if r["spread"] > SPREAD_LIMIT]
    if not flagged:
        return [f"Every median was stable across runs (spread ≤ {SPREAD_LIMIT * 100:.0f} %)."]
    worst = max(flagged, key=lambda r: r["spread"])
    return [f"{len(flagged)} of {len(res)} rows moved by more than {SPREAD_LIMIT * 100:.0f} % between runs "
            f"(⚠; worst: {worst['config']} {worst['op']} {fmt_size(worst['size'])}, "
            f"{worst['min']:.1f}–{worst['max']:.1f} µs); quote the medians over runs."]


def private_shm_note(options):
    if not options.get("private_shm"):
        return ""
    return ("\nThis run used `--private-shm`: it ran in a mount namespace with its own\n"
            "`/dev/shm`, so that a memnode left running elsewhere on the host could not\n"
            "hold the claim by which a polling memnode holds its core.\n")


def render_docs(doc, json_path):
    m, o = doc["machine"], doc["options"]
    warnings = "\n".join(f"- {w}" for w in doc["warnings"]) or "- none"
    errors = "\n".join(f"- {e['config']} run {e['run']}: {e['error']}" for e in doc["errors"]) or "- none"
    veth = any(r["config"].endswith("-veth") for r in doc["results"])
    text = f"""# Transport benchmark

<!-- Generated by bench/transport.py from {json_path.relative_to(ROOT)}; do not edit by hand. -->

How long does it take to move a page, or a prefetch window of pages, to and
from a memnode through the client library, and how does that compare with
what the kernel's own TCP needs for the same bytes on the same path with the
same polling? Sizes are the pager's: a page, windows of 4 to 64 pages, a
1 MiB write buffer. Transports: `tcp`, comex's own sockets
(`src/transport_tcp.c`, the default without RDMA), and `ucx` (UCX over TCP,
and UCX's shared memory for a memnode on the same host); docs/DECISIONS.md
D12 says why.

## What is measured

`bench/transport_bench` does, per configuration, run and size: 100 untimed
warm-up ops, then N timed writes, N timed reads of the same buffer, and N
timed *read_w*: before each read a {fmt_size(o['under_writes'])} write to another buffer is
started and not waited for, as the pager's write-behind does, so the read
shares the connection with a write in flight (the write is waited for after
the read, untimed). The last read is checked against the pattern written (a
broken path fails instead of producing numbers). Each op is timed on its own
with `CLOCK_MONOTONIC`. The client is pinned to core {o['client_cpu']}.

- **comex**: one client (`client_connect`), one contiguous frame run, then
  `client_write` / `client_read` of the whole run — one transfer per op;
  client defaults (it busy-polls 100 µs, then sleeps). A fresh
  `comex memnode --pool {o['pool']}` per configuration and run. *poll*: the
  default `--idle-spin` (the memnode pins itself to the last core and
  busy-polls between requests); *sleep*: `--idle-spin 0`. `validated` (the
  default data path) moves pages in READ/WRITE messages checked against the
  client's frames; `rma` lets the client get/put with the pool's key.
- **raw TCP baseline** (`transport_bench rawtcp`): a forked server holding
  a buffer, `TCP_NODELAY`; an 8-byte request header (plus the payload for a
  write), answered by the payload or an 8-byte ack. *sleep*: the server blocks
  in `recv`; *poll*: it busy-polls `recv(MSG_DONTWAIT)` on the last core. The
  client spins 100 µs, then blocks, like the comex client.
- **Paths**: `lo` is loopback; `-veth` rows put the memnode (or the raw
  server) in a network namespace behind a veth pair with tbf at {o['net_gbit']} Gbit/s
  on both ends, the path of the evaluation's network modes.
{private_shm_note(o)}
Each cell is the median over {o['runs']} runs of the per-run median latency in µs,
with the median p99 in brackets; ⚠ marks a spread of those medians across
runs above {SPREAD_LIMIT * 100:.0f} %. Iterations per run:
{", ".join(f"{fmt_size(int(k))}: {v}" for k, v in o['iters'].items())}. Within a run each comex
configuration is measured right after the raw TCP baseline of its path and
polling; odd runs go in reverse order.

## Machine

{m['cpu_model']}, {m['cores']} cores{' (VM)' if m['hypervisor'] else ''}, kernel {m['kernel']},
UCX {m['ucx']['version']}, git {doc['git']['rev']}{' (dirty tree)' if doc['git']['dirty'] else ''},
run {doc['timestamp']}; other load on the CPUs: {m['background_cpu_busy_start'] * 100:.0f} % before,
{m['background_cpu_busy_end'] * 100:.0f} % after; hypervisor steal during the run: {pct(m.get('cpu_steal_during_run'))}.

## comex against the kernel's TCP (targets: ✓ met, ✗ missed)

{ratio_table(doc['ratios'], TARGET_PAIRS)}

Informational:

{ratio_table(doc['ratios'], INFO_PAIRS)}

## Latency on loopback

{latency_table(doc['results'], 'lo')}
{"## Latency over veth (network namespace, tbf %d Gbit/s)" % o['net_gbit'] if veth else ""}

{latency_table(doc['results'], 'veth') if veth else ""}
## Interpretation

{interpretation(doc)}

## Warnings

{warnings}

## Errors

{errors}

Reproduce: `make build && python3 bench/transport.py` (root for the veth path;
about 10 minutes; `--quick` for a smoke run, `--render-only` to regenerate
this page).
"""
    DOCS_PATH.write_text(re.sub(r"\n{3,}", "\n\n", text))


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
    ap = benchlib.arg_parser(__doc__.split("\n\n")[0])
    ap.add_argument("--iters", type=parse_iters, default=None,
                    help="timed ops per run as SIZE=N,... (default "
                         + ",".join(f"{k}={v}" for k, v in DEFAULT_ITERS.items()) + ")")
    ap.add_argument("--poll-wait", type=float, default=POLL_WAIT_S, metavar="SECONDS",
                    help="how long a polling memnode may wait for the polling core to be free")
    ap.add_argument("--private-shm", action="store_true",
                    help="run in a mount namespace with a private /dev/shm (root), so a memnode left "
                         "running by someone else cannot hold the polling-core claim")
    ap.add_argument("--render-only", action="store_true", help="only regenerate docs/TRANSPORT.md")
    ap.add_argument("--paths", default="lo,veth",
                    help="lo (loopback) and/or veth (the memnode in a network namespace; root, iproute2)")
    # --quick: a polling memnode takes the polling core as it finds it (another
    # engineer's memnode may hold it for as long as it runs)
    return benchlib.quick(ap.parse_args(argv), poll_wait=0)


def binaries(build):
    build = Path(build) if Path(build).is_absolute() else ROOT / build
    comex, bench = build / "comex", build / "transport_bench"
    for b in (comex, bench):
        if not os.access(b, os.X_OK):
            sys.exit(f"transport.py: {b} not found; build first (make build)")
    return str(comex), str(bench)


def reexec_private_shm(argv, harness=__file__):
    """Re-runs this harness (or the given one) in a new mount namespace with
    a fresh tmpfs on /dev/shm. Memnodes claim their polling core with a claim
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
    paths = set(args.paths.split(","))
    netns = None
    if "veth" in paths:
        why = sysenv.NetNs.precondition()
        if why:
            print(f"transport.py: no veth path: {why}", file=sys.stderr)
            paths.discard("veth")
        else:
            netns = sysenv.NetNs(sysenv.NetNs.next_idx(), NET_GBIT)
    configs = [c for c in CONFIGS if c.path in paths]
    started = time.monotonic()
    doc, times0 = benchlib.start_doc(SCHEMA)
    sysenv.install_signal_handlers()
    tmp = tempfile.mkdtemp(prefix="comex-bench-")
    ctx = {"comex": comex, "bench": bench, "tmp": tmp, "token": make_token(comex, tmp),
           "iters": iters, "samples": {}, "errors": [], "polling": {},
           "poll_wait_s": args.poll_wait, "netns": netns}
    try:
        if netns:
            netns.create()
        measure_all(ctx, args.runs, configs)
    finally:
        sysenv.UNDO.run_all()
        shutil.rmtree(tmp, ignore_errors=True)
    results = aggregate(ctx["samples"])
    rat = ratios(results)
    doc.update({
        "options": {"runs": args.runs, "iters": {str(k): v for k, v in iters.items()}, "quick": args.quick,
                    "warmup_ops": 100, "client_cpu": CLIENT_CPU, "pool": f"{POOL_MIB}M", "poll_wait_s": args.poll_wait,
                    "under_writes": UNDER_WRITES, "net_gbit": NET_GBIT, "paths": sorted(paths),
                    "private_shm": bool(os.environ.get(PRIVATE_SHM_MARK)),
                    "environment": "COMEX_* and UCX_* removed; UCX_TLS (and UCX_NET_DEVICES on veth) per configuration",
                    "build": str(Path(comex).parent), "duration_s": round(time.monotonic() - started, 1)},
        "configs": [c.describe() for c in configs],
        "network": netns.describe() if netns else None,
        "memnode_polling_core": ctx["polling"],
        "results": results,
        "ratios": rat,
        "acceptance": acceptance(rat),
        "errors": ctx["errors"],
    })
    path = benchlib.finish_doc(doc, times0, "transport", args,
                               warnings=warnings_for(results, ctx["polling"], ctx["errors"], args.quick))
    if path and not args.out_dir:
        render_docs(json.loads(newest_json().read_text()), newest_json())
        print(f"wrote {DOCS_PATH} in {doc['options']['duration_s']} s")
    for w in doc["warnings"]:
        print(f"warning: {w}", file=sys.stderr)
    return 1 if ctx["errors"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
