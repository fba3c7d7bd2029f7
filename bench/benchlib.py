"""The one library of the comex benchmarks in bench/ (stdlib only, Python
3.11): machine metadata, git revision, CPU accounting, starting a `comex
memnode`, the pager_bench command line, the CPU-bound neighbours, the
busy-polling flags, medians and spreads, the scripts' common command line
(--build, --runs, --quick, --out-dir, --no-save) and the versioned result
documents (start_doc/finish_doc: bench/results/<name>-<UTC>.json).
The standalone scripts import it as `benchlib` (bench/ is their directory);
the harness (python3 -m bench.harness) as bench.benchlib, through
harness/sysenv.py, which holds the machine set-up the harness and the
scripts share (cgroups, swap devices, network namespaces, the memnode
process, the undo stack)."""

import argparse
import collections
import datetime
import json
import os
import platform
import re
import signal
import socket
import statistics
import subprocess
import sys
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
    """A file's text, or None if it cannot be read."""
    try:
        return Path(path).read_text()
    except OSError:
        return None


def bracketed(text):
    """The selected value of a sysfs choice like 'always [madvise] never'."""
    m = re.search(r"\[(\w+)\]", text or "")
    return m.group(1) if m else None


def cpu_model():
    """The CPU's model name (None where neither /proc/cpuinfo nor platform says)."""
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
    """The repository's HEAD ("unknown" without git or a commit) and whether
    tracked files differ from it; untracked files (results this or another
    run wrote, scratch files) do not make the tree dirty."""
    rev = run_text(["git", "-C", str(ROOT), "rev-parse", "HEAD"])
    status = run_text(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"])
    return {"rev": (rev or "").strip() or "unknown", "dirty": bool(status and status.strip())}


IDLE, IOWAIT, STEAL = 3, 4, 7   # positions in cpu_times()


def cpu_times():
    """Aggregate /proc/stat jiffies: user nice system idle iowait irq softirq
    steal (guest time, already counted in user and nice, is left out)."""
    return [int(x) for x in (read_text("/proc/stat") or "cpu 0").splitlines()[0].split()[1:9]]


def cpu_share(start, end, *fields):
    """Share of all CPU time between two cpu_times() spent in the given
    fields (IDLE, IOWAIT, STEAL); None when no time was counted."""
    d = [b - a for a, b in zip(start, end)]
    total = sum(d)
    return sum(d[f] for f in fields) / total if len(d) == 8 and total else None


def steal_fraction(start, end):
    """Share of CPU time the hypervisor took away between two cpu_times()."""
    share = cpu_share(start, end, STEAL)
    return None if share is None else round(share, 4)


def cpu_busy_fraction(seconds=1.0):
    """Fraction of all cores busy over a short window (other users' load)."""
    t0 = cpu_times()
    time.sleep(seconds)
    idle = cpu_share(t0, cpu_times(), IDLE, IOWAIT)
    return round(1 - (1.0 if idle is None else idle), 3)


def meminfo_kib(key):
    """A /proc/meminfo field in KiB (MemTotal, MemAvailable...), or None."""
    m = re.search(r"^%s:\s+(\d+)" % re.escape(key), read_text("/proc/meminfo") or "", re.M)
    return int(m.group(1)) if m else None


def loadavg():
    """The 1, 5 and 15 minute load averages."""
    return [float(x) for x in (read_text("/proc/loadavg") or "0 0 0").split()[:3]]


def loadavg_text():
    """loadavg() as /proc/loadavg writes it (two decimals), the form the
    benches' machine dicts keep."""
    return ["%.2f" % x for x in loadavg()]


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
        "loadavg_start": loadavg_text(),
        "background_cpu_busy_start": cpu_busy_fraction(),
    }


def finish_machine_info(machine, times0):
    """Adds the end-of-run load figures to machine_info()'s dict."""
    machine["loadavg_end"] = loadavg_text()
    machine["cpu_steal_during_run"] = steal_fraction(times0, cpu_times())
    machine["background_cpu_busy_end"] = cpu_busy_fraction()
    return machine


# ------------------------------------------------------------------ comex processes

def clean_env(ucx_tls=None, **extra):
    """The environment without COMEX_* and UCX_* settings and without a comex
    runtime in LD_PRELOAD (a bench run under `comex run` itself), so that only
    the command line configures a benchmark's comex processes; with UCX_TLS
    set to ucx_tls when given, then the variables EXTRA."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COMEX_", "UCX_"))}
    keep = [x for x in env.pop("LD_PRELOAD", "").replace(":", " ").split() if "libcomex" not in x]
    if keep:
        env["LD_PRELOAD"] = " ".join(keep)
    if ucx_tls:
        env["UCX_TLS"] = ucx_tls
    env.update(extra)
    return env


# Busy-polling. The default everywhere is comex's own (`comex run`'s
# client-spin 100us, handler-spin 50us; `comex memnode`'s idle-spin 200us):
# what a user gets. --spin off (docs/DECISIONS.md D71) turns every one of them
# off: these flags for comex run, this environment for a memnode (a separate
# one, or the one comex run embeds, which inherits it).
SPIN_CHOICES = ("on", "off")
RUN_NO_SPIN = ["--handler-spin", "0", "--client-spin", "0"]
MEMNODE_NO_SPIN = {"COMEX_IDLE_SPIN": "0"}


def run_spin_flags(spin):
    """comex run's flags for --spin SPIN ('on' or 'off')."""
    return [] if spin == "on" else list(RUN_NO_SPIN)


def memnode_spin_env(spin):
    """A memnode's environment additions for --spin SPIN."""
    return {} if spin == "on" else dict(MEMNODE_NO_SPIN)


# ------------------------------------------------------------------ workloads and neighbours

def pager_bench_argv(build, pattern, size_mib, passes=3, write_pct=20, seed=1, time_touches=False, progress=False,
                     extra=(), binary=None):
    """The one bench/pager_bench command line: fill size_mib MiB, then
    PASSES passes in PATTERN's order with WRITE_PCT % writes (seed SEED);
    every touch timed with time_touches, progress lines with progress; then
    the further flags EXTRA. BINARY overrides BUILD/pager_bench."""
    argv = [str(binary or Path(build) / "pager_bench"), "--pattern", pattern, "--size-mib", str(size_mib),
            "--passes", str(passes), "--write-pct", str(write_pct), "--seed", str(seed)]
    return argv + (["--time-touches", "1"] if time_touches else []) + (["--progress", "1"] if progress else []) + \
        [str(x) for x in extra]


def json_line(text):
    """The last line of TEXT starting with '{', parsed, or None."""
    lines = [ln for ln in (text or "").splitlines() if ln.startswith("{")]
    try:
        return json.loads(lines[-1]) if lines else None
    except ValueError:
        return None


# A CPU-bound neighbour of the simplest kind: one busy shell loop per CPU it
# should take (sched, memnode_busy), optionally pinned with taskset.
HOG = ["sh", "-c", "while :; do :; done"]

# The neighbours of the busy experiments (bench.harness busy, bench/sched.py):
# name -> argv prefix of `stress-ng --cpu N` ("none": no neighbour); stress-1
# is one worker at normal priority, stress one per core, stress-nice the same
# under nice 19.
NEIGHBOURS = {"none": None, "stress-1": [], "stress": [], "stress-nice": ["nice", "-n", "19"]}


def neighbour_argv(kind, timeout_s=None, cpus=None):
    """The command of the NEIGHBOURS neighbour KIND (None for none), ended by
    stress-ng after timeout_s when given."""
    pre = NEIGHBOURS[kind]
    if pre is None:
        return None
    n = 1 if kind == "stress-1" else (cpus or os.cpu_count())
    return pre + ["stress-ng", "--cpu", str(n), "--cpu-method", "matrixprod"] + \
        (["--timeout", "%ds" % int(timeout_s)] if timeout_s else []) + ["--quiet"]


def start_hogs(n, cpu=None):
    """N HOG processes, each pinned to CPU when given."""
    pin = ["taskset", "-c", str(cpu)] if cpu is not None else []
    return [subprocess.Popen(pin + HOG) for _ in range(n)]


def stop_hogs(procs):
    for p in procs:
        p.kill()
    for p in procs:
        p.wait()


def memnode_flags(token, pool_mib, host="127.0.0.1", port=0, extra=()):
    """`comex memnode`'s flags: listen on host:port (0: a free port), a pool
    of pool_mib MiB, the token file, then the further options EXTRA."""
    return ["--listen", f"{host}:{port}", "--pool", f"{pool_mib}M", "--token-file", str(token), *extra]


# what start_memnode() learnt from a memnode's start-up log: polling_core, the
# core it busy-polls on alone (None when it sleeps between requests or shares
# a core: then polling_shared is that core), metrics_port (None without
# --metrics-listen)
MemnodeStart = collections.namedtuple("MemnodeStart", "proc port polling_core metrics_port polling_shared")


def _logged_int(pattern, text):
    m = re.search(pattern, text)
    return int(m.group(1)) if m else None


def _kill_now(p, session):
    """SIGKILLs p (its whole process group when it leads a session) and reaps it."""
    try:
        if session:
            os.killpg(p.pid, signal.SIGKILL)
        else:
            p.kill()
    except OSError:
        pass
    p.wait()


def start_memnode(comex, tmp, name, token, pool_mib, port=0, extra=(), wrap=None, host="127.0.0.1", env=None,
                  new_session=False, timeout=30):
    """The one way the benchmarks start a `comex memnode`: on host:port (0: a
    free port) with a pool of pool_mib MiB and the further options EXTRA,
    its output in tmp/NAME.log (appended to, so a restarted memnode keeps its
    history), its command passed through WRAP when given (e.g. into a cgroup
    or a network namespace), with the environment ENV (default clean_env()),
    in a session of its own when new_session. Returns a MemnodeStart once
    the memnode reports its port; one that exits or stays silent for
    timeout seconds is killed and raises RuntimeError."""
    log_path = Path(tmp) / f"{name}.log"
    start = len(read_text(log_path) or "")
    cmd = [str(comex), "memnode", *memnode_flags(token, pool_mib, host, port, extra)]
    with open(log_path, "a") as log:
        p = subprocess.Popen(wrap(cmd) if wrap else cmd, stdout=log, stderr=log,
                             env=clean_env() if env is None else env, start_new_session=new_session)
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and p.poll() is None:
            text = (read_text(log_path) or "")[start:]
            found = _logged_int(r"serving \d+ MiB on port (\d+)", text)
            if found is not None:
                return MemnodeStart(p, found, _logged_int(r"busy-polling on core (\d+)\b(?!, shared)", text),
                                    _logged_int(r"metrics on http://\S+ \(port (\d+)\)", text),
                                    _logged_int(r"busy-polling on core (\d+), shared", text))
            time.sleep(0.02)
    except BaseException:   # Ctrl-C while waiting: leave no memnode behind
        _kill_now(p, new_session)
        raise
    why = f"exited at start-up ({p.returncode})" if p.poll() is not None else f"reported no port within {timeout} s"
    _kill_now(p, new_session)
    raise RuntimeError(f"memnode {name} {why}: {(read_text(log_path) or '')[start:].strip()[-1500:]}")


def run_logged(cmd, tmp, tag):
    """Runs cmd with stdout/stderr in tmp/TAG.out and tmp/TAG.err; returns
    (exit code, wall seconds, peak RSS in KiB, its last stdout line starting
    with '{' parsed as JSON or None)."""
    t0 = time.monotonic()
    with open(Path(tmp) / f"{tag}.out", "w") as out, open(Path(tmp) / f"{tag}.err", "w") as err:
        p = subprocess.Popen(cmd, stdout=out, stderr=err, env=clean_env())
        _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - t0
    return os.waitstatus_to_exitcode(status), wall, ru.ru_maxrss, json_line(read_text(Path(tmp) / f"{tag}.out"))


def make_token(comex, tmp):
    """A fresh token file tmp/token (mode 0600) made by `comex token`; its path."""
    path = Path(tmp) / "token"
    subprocess.run([str(comex), "token", str(path)], check=True, capture_output=True, env=clean_env())
    os.chmod(path, 0o600)
    return str(path)


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


def closing_warnings(errors, failed, quick_note=None):
    """The warnings a bench's list ends with: how many FAILED things (e.g.
    "run(s)") failed, see its 'errors'; and QUICK_NOTE for a --quick run."""
    w = [f"{len(errors)} {failed} failed; see 'errors'"] if errors else []
    return w + ([f"--quick smoke run: {quick_note}"] if quick_note else [])


def pct(x):
    return "n/a" if x is None else f"{x * 100:.1f} %"


def pyplot(who):
    """matplotlib.pyplot (the Agg backend), or None, saying so on stderr, for
    an interpreter without it (Debian's /usr/bin/python3 has it:
    python3-matplotlib; scripts/deps.sh installs it). WHO names the caller."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"{who}: no plot: {sys.executable} has no matplotlib (python3-matplotlib; /usr/bin/python3 "
              "has it)", file=sys.stderr)
        return None
    return plt


def md_row(*cells):
    """A Markdown table row of cells."""
    return "| " + " | ".join(str(c) for c in cells) + " |"


# ------------------------------------------------------------------ output

def arg_parser(description, runs=3, spin=False):
    """The command line every bench/X.py script starts with: --build (the
    build directory, default build), --runs, --quick (tiny sizes, one run,
    outputs checked, nothing written to bench/results: `make test` runs every
    script so), --out-dir and --no-save; --spin (comex's busy-polling, on by
    default as in `comex run`) when SPIN."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--build", default="build")
    ap.add_argument("--runs", type=int, default=runs)
    ap.add_argument("--quick", action="store_true",
                    help="smoke run: tiny sizes, 1 run, outputs checked, no result file unless --out-dir")
    ap.add_argument("--out-dir", help="write the result JSON there instead of bench/results")
    ap.add_argument("--no-save", action="store_true", help="write no result file")
    if spin:
        ap.add_argument("--spin", choices=SPIN_CHOICES, default="on",
                        help="comex's busy-polling: on (default: comex's own defaults, as `comex run`) or off "
                             "(none: docs/DECISIONS.md D71)")
    return ap


def quick(a, **small):
    """For --quick: one run and the small values SMALL (attribute -> value)
    put into the parsed arguments A; returns A."""
    if getattr(a, "quick", False):
        a.runs = 1
        for k, v in small.items():
            setattr(a, k, v)
    return a


class CheckFailed(RuntimeError):
    """A benchmark's output is wrong (a checksum, a missing result)."""


def check(cond, what):
    """Raises CheckFailed(what) unless cond: a wrong output fails the run."""
    if not cond:
        raise CheckFailed(what)


def start_doc(schema, **fields):
    """A result document's head, taken as the benchmark starts: schema, UTC
    timestamp, git revision and machine_info(), then FIELDS; returned with
    the cpu_times() of the start, which finish_doc() needs."""
    times0, machine = cpu_times(), machine_info()
    return {"schema": schema, "timestamp": utc_stamp(), "git": git_revision(), "machine": machine, **fields}, times0


def finish_doc(doc, times0, name, args=None, path=None, warnings=()):
    """Completes a start_doc() document (end-of-run machine figures, the
    busy-CPU warnings, then WARNINGS) and writes it: to PATH when given,
    else as NAME-<stamp>.json in args.out_dir or bench/results; not at all
    with args.no_save, or args.quick without args.out_dir (a smoke run
    leaves bench/results alone; the document is still checked to be JSON).
    Says where; returns the path or None."""
    finish_machine_info(doc["machine"], times0)
    doc["warnings"] = busy_warnings(doc["machine"]) + list(warnings) + list(doc.get("warnings") or [])
    out_dir = getattr(args, "out_dir", None)
    if path is not None:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(doc, indent=1, default=str) + "\n")
    elif getattr(args, "no_save", False) or (getattr(args, "quick", False) and not out_dir):
        json.dumps(doc, default=str)
        return None
    else:
        path = write_json(doc, name, out_dir)
    print(f"wrote {path}")
    return path


def utc_stamp():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")


def write_json(doc, name, out_dir=None):
    """OUT_DIR (default bench/results)/<name>-<doc['timestamp']>.json"""
    d = Path(out_dir) if out_dir else RESULTS_DIR
    d.mkdir(parents=True, exist_ok=True)
    path = d / f"{name}-{doc['timestamp']}.json"
    path.write_text(json.dumps(doc, indent=1, default=str) + "\n")
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
    return json_line(p.stdout)["checksum"], int(p.stderr.strip().splitlines()[-1]), time.monotonic() - t
