#!/usr/bin/env python3
"""Start-up under comex run: a shell loop of --execs exec'd /bin/true, natively
and under `comex run` (issue 36 item 6; docs/DECISIONS.md D13, D80).

Configurations, interleaved within each run (odd runs in reverse order):
  native          sh -c 'for ...; do /bin/true; done'
  comex-tcp       comex run --memnode A --token-file T (one memnode over TCP,
                  a separate process; connect-on-demand, as comex run sets it)
  comex-embedded  comex run with its embedded memnode (its pool mapped, control
                  messages over loopback TCP: D80)
  preload-only    the same loop with libcomex-rt.so preloaded and no COMEX_*
                  settings: the runtime stays inert, so this is the cost of
                  loading it and what it links
and, with --compare-build DIR (an older build tree), comex-tcp-compare and
comex-embedded-compare: those two with that build's comex, to show a change
in one run.

Per configuration: the loop's wall time (median of --runs) and its ratio to
native, the milliseconds each process adds, the connections the memnode
logged during the loop, and the shared objects a process of the loop loads
(the maps of a `cat /proc/self/maps` that a shell run the same way execs).
The loop's output is checked.
Writes bench/results/startup-<UTC>.json (schema comex-bench-startup/1).

  python3 bench/startup.py [--build DIR] [--runs 5] [--execs 200] [--compare-build DIR] [--quick]
"""
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402
from benchlib import summary  # noqa: E402

SCHEMA = "comex-bench-startup/1"
TARGET = 1.5   # issue 36: 200 exec'd /bin/true under comex run --memnode within 1.5x native


def loop_cmd(execs):
    return ["sh", "-c", f"i=0; while [ $i -lt {execs} ]; do /bin/true; i=$((i+1)); done; echo done"]


def prefixes(build, compare, mn_port, token):
    """configuration -> (argv prefix, extra environment)"""
    def tcp(b):
        return [str(Path(b) / "comex"), "run", "--memnode", f"127.0.0.1:{mn_port}", "--token-file", token, "--"]
    out = {
        "native": ([], {}),
        "comex-tcp": (tcp(build), {}),
        "comex-embedded": ([str(Path(build) / "comex"), "run", "--"], {}),
        "preload-only": ([], {"LD_PRELOAD": str(Path(build) / "libcomex-rt.so")}),
    }
    if compare:
        out["comex-tcp-compare"] = (tcp(compare), {})
        out["comex-embedded-compare"] = ([str(Path(compare) / "comex"), "run", "--"], {})
    return out


def timed(argv, env, tmp, tag):
    t0 = time.monotonic()
    with open(Path(tmp) / f"{tag}.err", "w") as err:
        r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=err, text=True, env=env, timeout=600)
    wall = time.monotonic() - t0
    benchlib.check(r.returncode == 0 and r.stdout.strip() == "done",
                   f"{tag}: exit {r.returncode}, output {r.stdout.strip()[-200:]!r}: "
                   f"{(benchlib.read_text(Path(tmp) / f'{tag}.err') or '')[-500:]}")
    return wall


def libraries(argv, env):
    """The shared objects of a process exec'd in the loop (a child of the
    shell that comex run started, as /bin/true is): its own maps."""
    r = subprocess.run(argv + ["sh", "-c", "cat /proc/self/maps"], capture_output=True, text=True, env=env,
                       timeout=120)
    benchlib.check(r.returncode == 0, f"maps: exit {r.returncode}: {r.stderr[-300:]}")
    return sorted({Path(m).name for m in re.findall(r"(/\S+\.so[\d.]*)$", r.stdout, re.M)})


def connections(log_path):
    return len(re.findall(r": connected$", benchlib.read_text(log_path) or "", re.M))


def main():
    ap = benchlib.arg_parser(__doc__.splitlines()[0], runs=5)
    ap.add_argument("--execs", type=int, default=200)
    ap.add_argument("--compare-build", help="an older build tree whose comex run is measured beside (the *-compare lines)")
    a = benchlib.quick(ap.parse_args(), execs=20)
    comex = Path(a.build) / "comex"
    doc, times0 = benchlib.start_doc(SCHEMA, execs=a.execs, runs=a.runs, compare_build=a.compare_build,
                                     configs={}, samples={})
    with tempfile.TemporaryDirectory(prefix="comex-startup.") as tmp:
        token = benchlib.make_token(comex, tmp)
        mn = benchlib.start_memnode(comex, tmp, "memnode", token, 256)
        mn_log = Path(tmp) / "memnode.log"
        try:
            confs = prefixes(a.build, a.compare_build, mn.port, token)
            base_env = benchlib.clean_env()
            order = list(confs)
            for name, (pre, extra) in confs.items():
                doc["configs"][name] = {"argv": pre + loop_cmd(a.execs), "env": extra,
                                        "libraries": libraries(pre, {**base_env, **extra}), "connections": []}
            for run in range(a.runs):
                for name in (order if run % 2 == 0 else order[::-1]):
                    pre, extra = confs[name]
                    before = connections(mn_log)
                    wall = timed(pre + loop_cmd(a.execs), {**base_env, **extra}, tmp, f"{name}-{run}")
                    doc["samples"].setdefault(name, []).append(wall)
                    doc["configs"][name]["connections"].append(connections(mn_log) - before)
        finally:
            mn.proc.kill()
            mn.proc.wait()
    native = summary(doc["samples"]["native"])["median"]
    print(f"{a.execs} exec'd /bin/true in a shell loop, median of {a.runs} runs")
    print(benchlib.md_row("configuration", "s", "x native", "ms a process", "connections", "shared objects"))
    print(benchlib.md_row("---", "---:", "---:", "---:", "---:", "---"))
    for name, c in doc["configs"].items():
        c["summary"] = summary(doc["samples"][name])
        med = c["summary"]["median"]
        c["ratio"] = med / native
        c["ms_per_exec"] = (med - native) / a.execs * 1000
        libs = [x for x in c["libraries"] if re.match(r"lib(comex|ucp|ucs|uct|ucm|crypto|stdc\+\+|mimalloc)", x)]
        print(benchlib.md_row(name, f"{med:.3f}", f"{c['ratio']:.2f}", f"{c['ms_per_exec']:.2f}",
                              max(c["connections"]), " ".join(libs)))
    tcp = doc["configs"]["comex-tcp"]
    doc["target"] = {"what": f"comex-tcp within {TARGET}x native", "ratio": tcp["ratio"], "met": tcp["ratio"] <= TARGET}
    print(f"target: comex-tcp {tcp['ratio']:.2f}x native (<= {TARGET}x: {'met' if doc['target']['met'] else 'missed'})")
    benchlib.finish_doc(doc, times0, "startup", a)


if __name__ == "__main__":
    main()
