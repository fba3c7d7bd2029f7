#!/usr/bin/env python3
"""The whole machine in global reclaim on `comex swap` (docs/DECISIONS.md D56,
issue 22 item 3): does anything wait on the swap daemon for ever?

`comex swap up` (its embedded memnode unless --memnode), the only swap; a
balloon process locks most of what is left of RAM; --programs copies of
bench/pager_bench (random order, 20 % writes, a checksum that depends only
on its arguments) need more than the rest, outside any cgroup, so that
kswapd and direct reclaim page them out to comex swap, again and again, for
--minutes. Every program's checksum is compared with a run made before the
pressure; every second every task of the machine is looked at, and the
longest a task stayed in D state (uninterruptible: waiting for I/O, here
for the swap device) is the result.

Pass: no task in D state for --max-d-s (60) seconds or more, every
program's output correct, none killed.

  python3 bench/swap_reclaim.py [--build build] [--minutes 10] [--programs 3] [--program-mib 1280]
      [--free-mib 2048] [--memnode HOST:PORT --token-file F]
writes bench/results/swap-reclaim-<UTC>.json."""

import glob
import os
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402
from harness import sysenv  # noqa: E402

BALLOON = r"""
import ctypes, mmap, os, sys, time
n = int(sys.argv[1]) << 20
m = mmap.mmap(-1, n, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
libc = ctypes.CDLL(None, use_errno=True)
addr = ctypes.addressof(ctypes.c_char.from_buffer(m))
if libc.mlock(ctypes.c_void_p(addr), ctypes.c_size_t(n)):
    sys.exit("balloon: mlock of %d MiB failed: errno %d" % (n >> 20, ctypes.get_errno()))
print("locked", flush=True)
while True:
    time.sleep(3600)
"""


def pager_bench(build, mib, seed):
    return benchlib.pager_bench_argv(build, "rand", mib, passes=2, write_pct=20, seed=seed)


def checksum(out):
    return (benchlib.json_line(out) or {}).get("checksum")


class DWatch(threading.Thread):
    """Every second: each task in D state and since when it has been."""

    def __init__(self):
        super().__init__(daemon=True)
        self.since = {}   # tid -> (first seen in D, comm)
        self.longest = {"s": 0.0, "tid": None, "comm": None}
        self.samples = 0
        self.stop = threading.Event()

    def run(self):
        while not self.stop.wait(1.0):
            now = time.monotonic()
            seen = set()
            for st in glob.glob("/proc/[0-9]*/task/[0-9]*/stat"):
                try:
                    text = open(st).read()
                except OSError:
                    continue
                comm = text[text.index("(") + 1:text.rindex(")")]
                state = text[text.rindex(")") + 2]
                tid = int(st.rsplit("/", 2)[-2])
                if state == "D":
                    seen.add(tid)
                    t0 = self.since.setdefault(tid, (now, comm))[0]
                    if now - t0 > self.longest["s"]:
                        self.longest = {"s": round(now - t0, 1), "tid": tid, "comm": comm}
            self.since = {t: v for t, v in self.since.items() if t in seen}
            self.samples += 1


def main(argv):
    ap = benchlib.arg_parser(__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=10)
    ap.add_argument("--programs", type=int, default=3)
    ap.add_argument("--program-mib", type=int, default=1280)
    ap.add_argument("--free-mib", type=int, default=2048, help="RAM the balloon leaves for the programs and the rest")
    ap.add_argument("--size", default="6G", help="the comex swap device")
    ap.add_argument("--max-d-s", type=float, default=60)
    ap.add_argument("--memnode", default=None)
    ap.add_argument("--token-file", default=None)
    ap.add_argument("--cgroup-mib", type=int, default=0,
                    help="instead of the balloon (global reclaim): the programs in one memory cgroup of this "
                         "limit (--quick: 32)")
    a = benchlib.quick(ap.parse_args(argv), minutes=0.15, programs=2, program_mib=32, size="256M", cgroup_mib=32)
    build = os.path.abspath(a.build)
    comex = os.path.join(build, "comex")
    why = sysenv.ComexSwap(comex, 0).precondition() or (
        "another swap device is active (%s)" % ", ".join(sysenv.active_swaps()) if sysenv.active_swaps() else None)
    if why:
        print("swap_reclaim: %s" % why, file=sys.stderr)
        return 77
    sysenv.install_signal_handlers()
    doc, times0 = benchlib.start_doc("comex-bench-swap-reclaim/1", minutes=a.minutes, programs=a.programs,
                                     program_mib=a.program_mib, free_mib=a.free_mib, size=a.size,
                                     memnode=a.memnode or "embedded", cgroup_mib=a.cgroup_mib, runs=[])
    refs = {}
    for i in range(a.programs):
        refs[i] = checksum(subprocess.run(pager_bench(build, a.program_mib, i + 1), capture_output=True, text=True,
                                          check=True).stdout)
        benchlib.check(refs[i] is not None, "pager_bench printed no checksum before the pressure")
    swapdir = "/var/tmp/comex-swap-reclaim"
    dev = sysenv.ComexSwap(comex, a.size, swapdir)
    if a.memnode:
        dev.extra = ["--memnode", a.memnode, "--token-file", a.token_file, "--single-copy"]
    dev.create()
    balloon = cg = None
    wrap = lambda argv: argv  # noqa: E731
    watch = DWatch()
    try:
        dev.enable()
        doc["device"] = dev.dev
        if a.cgroup_mib:
            cg = sysenv.Cgroup(a.cgroup_mib << 20, swap=True, name="reclaim")
            wrap = cg.wrap
            print("[%s] %s up; %d x %d MiB programs in a %d MiB cgroup for %.1f min" % (
                time.strftime("%H:%M:%S"), dev.dev, a.programs, a.program_mib, a.cgroup_mib, a.minutes), flush=True)
        else:
            avail = sysenv.meminfo_kib("MemAvailable") >> 10
            bmib = avail - a.free_mib
            doc["balloon_mib"] = bmib
            doc["mem_available_mib_before_balloon"] = avail
            balloon = subprocess.Popen([sys.executable, "-c", BALLOON, str(bmib)], stdout=subprocess.PIPE, text=True)
            if balloon.stdout.readline().strip() != "locked":
                raise RuntimeError("the balloon did not lock %d MiB" % bmib)
            print("[%s] %s up, balloon of %d MiB locked, %d MiB left; %d x %d MiB programs for %.0f min" % (
                time.strftime("%H:%M:%S"), dev.dev, bmib, a.free_mib, a.programs, a.program_mib, a.minutes),
                flush=True)
        watch.start()
        vm0 = sysenv.vmstat()
        end = time.monotonic() + a.minutes * 60
        procs = {}
        while True:
            now = time.monotonic()
            for i in range(a.programs):
                if i not in procs and now < end:
                    procs[i] = (subprocess.Popen(wrap(pager_bench(build, a.program_mib, i + 1)), stdout=subprocess.PIPE,
                                                 stderr=subprocess.PIPE, text=True), now)
            if not procs:
                break
            for i, (p, t0) in list(procs.items()):
                if p.poll() is None:
                    continue
                out, err = p.communicate()
                ok = p.returncode == 0 and checksum(out) == refs[i]
                doc["runs"].append({"program": i, "rc": p.returncode, "ok": ok, "s": round(time.monotonic() - t0, 1),
                                    "err": err[-300:] if not ok else ""})
                print("[%s] program %d: %s in %.0f s; longest D so far %.1f s (%s)" % (
                    time.strftime("%H:%M:%S"), i, "ok" if ok else "FAILED rc %d" % p.returncode,
                    time.monotonic() - t0, watch.longest["s"], watch.longest["comm"]), flush=True)
                del procs[i]
            time.sleep(0.5)
        vm1 = sysenv.vmstat()
        doc["vmstat"] = {k: vm1.get(k, 0) - vm0.get(k, 0) for k in ("pswpin", "pswpout", "pgscan_kswapd",
                                                                       "pgscan_direct", "allocstall_normal",
                                                                       "oom_kill")}
        doc["device_status"] = dev.status()
    finally:
        watch.stop.set()
        if balloon:
            balloon.kill()
            balloon.wait()
        if cg:
            cg.remove()
        dev.destroy()
        sysenv.UNDO.run_all()
    doc["longest_d"] = watch.longest
    doc["d_samples"] = watch.samples
    bad = [r for r in doc["runs"] if not r["ok"]]
    doc["pass"] = not bad and watch.longest["s"] < a.max_d_s and bool(doc["runs"]) and doc["vmstat"]["pswpout"] > 0
    benchlib.finish_doc(doc, times0, "swap-reclaim", a)
    print("%s: %d program runs (%d failed), longest D state %.1f s (%s), %d pages swapped out, %d in" % (
        "PASS" if doc["pass"] else "FAIL", len(doc["runs"]), len(bad), watch.longest["s"], watch.longest["comm"],
        doc["vmstat"]["pswpout"], doc["vmstat"]["pswpin"]))
    return 0 if doc["pass"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
