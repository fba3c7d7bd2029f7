"""Helpers shared by the comex benchmark harnesses in bench/ (stdlib only,
Python 3.11): machine metadata, git revision, CPU accounting, medians and
spreads, and the bench/results/<name>-<UTC>.json files."""

import datetime
import json
import os
import platform
import re
import socket
import statistics
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS_DIR = ROOT / "bench" / "results"
SPREAD_LIMIT = 0.10          # warn when (max - min) / median exceeds this


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
    """UCX's version from ucx_info, or from pkg-config where ucx_info is not installed."""
    out = run_text(["ucx_info", "-v"]) or ""
    m = re.search(r"Version\s+(\S+)", out)
    version = m.group(1) if m else (run_text(["pkg-config", "--modversion", "ucx"]) or "").strip() or None
    return {"version": version, "ucx_info_v": out.strip().splitlines()[:2]}


def git_revision():
    rev = run_text(["git", "-C", str(ROOT), "rev-parse", "HEAD"])
    status = run_text(["git", "-C", str(ROOT), "status", "--porcelain"])
    return {"rev": rev.strip() if rev else "none (no commit yet)",
            "dirty": bool(status and status.strip())}


def cpu_times():
    """Aggregate /proc/stat jiffies: user nice system idle iowait irq softirq steal."""
    return [int(x) for x in (read_text("/proc/stat") or "cpu 0").splitlines()[0].split()[1:9]]


def steal_fraction(start, end):
    """Share of CPU time the hypervisor took away between two cpu_times()."""
    d = [b - a for a, b in zip(start, end)]
    return round(d[7] / sum(d), 4) if len(d) == 8 and sum(d) else None


def cpu_busy_fraction(seconds=1.0):
    """Fraction of all cores busy over a short window (other users' load)."""
    def sample():
        fields = [int(x) for x in read_text("/proc/stat").splitlines()[0].split()[1:]]
        return sum(fields), fields[3] + fields[4]  # total, idle + iowait
    t0, i0 = sample()
    time.sleep(seconds)
    t1, i1 = sample()
    return round(1 - (i1 - i0) / max(t1 - t0, 1), 3)


def loadavg():
    return (read_text("/proc/loadavg") or "").split()[:3]


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
        "loadavg_start": loadavg(),
        "background_cpu_busy_start": cpu_busy_fraction(),
    }


def finish_machine_info(machine, times0):
    """Adds the end-of-run load figures to machine_info()'s dict."""
    machine["loadavg_end"] = loadavg()
    machine["cpu_steal_during_run"] = steal_fraction(times0, cpu_times())
    machine["background_cpu_busy_end"] = cpu_busy_fraction()
    return machine


# ------------------------------------------------------------------ comex processes

def clean_env():
    """The environment without COMEX_* and UCX_* settings, so that only the
    command line configures a benchmark's comex processes."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("COMEX_", "UCX_"))}


def start_memnode(comex, tmp, name, token, pool_mib, port=0, extra=(), wrap=None):
    """A `comex memnode` on 127.0.0.1:port (0: a free port) logging to
    tmp/NAME.log (appended to, so a restarted memnode keeps its history),
    with the further memnode options EXTRA, its command passed through WRAP
    when given (e.g. to start it in a cgroup); returns (Popen, port) once it
    listens."""
    log_path = Path(tmp) / f"{name}.log"
    start = len(read_text(log_path) or "")
    cmd = [comex, "memnode", "--listen", f"127.0.0.1:{port}", f"--pool={pool_mib}M", f"--token-file={token}", *extra]
    with open(log_path, "a") as log:
        p = subprocess.Popen(wrap(cmd) if wrap else cmd, stderr=log, env=clean_env())
    for _ in range(300):
        m = re.search(r" on port (\d+)", (read_text(log_path) or "")[start:])
        if m:
            return p, int(m.group(1))
        if p.poll() is not None:
            break
        time.sleep(0.1)
    p.kill()
    p.wait()
    raise RuntimeError(f"memnode {name} did not start: {(read_text(log_path) or '')[start:][-1500:]}")


def run_logged(cmd, tmp, tag):
    """Runs cmd with stdout/stderr in tmp/TAG.out and tmp/TAG.err; returns
    (exit code, wall seconds, peak RSS in KiB, its last stdout line starting
    with '{' parsed as JSON or None)."""
    t0 = time.monotonic()
    with open(Path(tmp) / f"{tag}.out", "w") as out, open(Path(tmp) / f"{tag}.err", "w") as err:
        p = subprocess.Popen(cmd, stdout=out, stderr=err, env=clean_env())
        _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - t0
    lines = [ln for ln in (read_text(Path(tmp) / f"{tag}.out") or "").splitlines() if ln.startswith("{")]
    try:
        res = json.loads(lines[-1]) if lines else None
    except ValueError:
        res = None
    return os.waitstatus_to_exitcode(status), wall, ru.ru_maxrss, res


# ------------------------------------------------------------------ statistics

def busy_warnings(machine):
    """Warnings for a run during which other work kept the CPUs busy."""
    return [f"{key}: {machine[key] * 100:.0f} % of the CPUs were busy with other work"
            for key in ("background_cpu_busy_start", "background_cpu_busy_end")
            if (machine.get(key) or 0) > 0.2]


def spread(values):
    """(max - min) / median; 0 for an empty or zero-median list."""
    if not values:
        return 0.0
    mid = statistics.median(values)
    return (max(values) - min(values)) / mid if mid else 0.0


def summary(values, digits=6):
    """Median, min, max and spread of a list of per-run numbers."""
    return {"median": round(statistics.median(values), digits), "min": round(min(values), digits),
            "max": round(max(values), digits), "spread": round(spread(values), 4), "n": len(values)}


def pct(x):
    return "n/a" if x is None else f"{x * 100:.1f} %"


# ------------------------------------------------------------------ output

def utc_stamp():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")


def write_json(doc, name):
    """bench/results/<name>-<doc['timestamp']>.json"""
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    path = RESULTS_DIR / f"{name}-{doc['timestamp']}.json"
    path.write_text(json.dumps(doc, indent=1) + "\n")
    return path


def newest_json(name):
    """The newest NAME-<UTC stamp>.json; a side run saved as NAME-<what>-<stamp>.json
    (e.g. pager-reclaimer-...) is not the page's source."""
    files = sorted(RESULTS_DIR.glob(f"{name}-[0-9]*.json"))
    return files[-1] if files else None


def native_peak(argv, warm):
    """Runs argv (a workload that prints a JSON line with "checksum") plainly,
    after warm(); returns (checksum, peak RSS KiB, wall s)."""
    warm()
    t = time.monotonic()
    p = subprocess.run(["/usr/bin/time", "-f", "%M", *argv], capture_output=True, text=True, check=True,
                       env=clean_env())
    return json.loads(p.stdout)["checksum"], int(p.stderr.strip().splitlines()[-1]), time.monotonic() - t
