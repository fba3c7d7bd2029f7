#!/usr/bin/env python3
"""Swap-in latency of comex swap against zram and swap on disk, and where
a comex swap-in spends its time (docs/SWAP.md, issue 22).

Per device, in one run, interleaved: bench/pager_bench --pattern rand over
--size-mib MiB in a memory cgroup at --fraction % of it whose only swap is
that device, every touch of the access passes timed inside the program
(touches slower than 2 us are faults: here, swap-ins); median and p99 of
those, the access time, and the checksum (must equal the run without a
limit). Devices: swap-disk (a swap file on the local disk), zram (lz4),
comex-swap (comex swap up, its embedded memnode, default swap-spin),
comex-swap-nospin (swap-spin 0) and comex-swap+zswap; by name only,
comex-swap-uring and comex-swap-read (swap-uring on and off: FUSE over
io_uring or /dev/fuse reads; the kernel's fuse enable_uring is put back).

For comex swap, the layers of one 4 KiB read, measured after each of its
runs with the device still attached (reads only): O_DIRECT reads of the
loop device (block layer + loop + FUSE + daemon), of the FUSE file itself
(FUSE + daemon), and the daemon's own time per read request (its
histogram, comex swap status). Python times those reads: about 1-2 us of
each is the interpreter's.

  python3 bench/swap_latency.py [--build build] [--runs 3] [--size-mib 512] [--fraction 25]
writes bench/results/swap-latency-<UTC>.json."""

import mmap
import os
import random
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402
from harness import sysenv  # noqa: E402

URING_PARAM = "/sys/module/fuse/parameters/enable_uring"
DEVICES = ["swap-disk", "zram", "comex-swap", "comex-swap-nospin", "comex-swap+zswap"]


def device_for(name, build, size, workdir):
    if name == "swap-disk":
        return sysenv.SwapFile(size)
    if name == "zram":
        return sysenv.Zram(size)
    d = sysenv.ComexSwap(os.path.join(build, "comex"), size, os.path.join(workdir, "comex-swap"))
    if name == "comex-swap-nospin":
        d.extra = ["--swap-spin", "0"]
    elif name in ("comex-swap-uring", "comex-swap-read"):   # FUSE over io_uring, or /dev/fuse reads (D60)
        d.extra = ["--swap-uring", "on" if name.endswith("uring") else "off"]
    elif name.startswith("comex-swap-spin"):   # comex-swap-spinT: swap-spin T (e.g. 500us), for an A/B
        d.extra = ["--swap-spin", name[len("comex-swap-spin"):]]
    return d


def pager_bench(build, size_mib, cg):
    argv = benchlib.pager_bench_argv(build, "rand", size_mib, passes=2, write_pct=20, time_touches=True)
    if cg:
        argv = cg.wrap(argv)
    t0 = time.monotonic()
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=1800,
                       env=benchlib.clean_env())
    j = benchlib.json_line(p.stdout)
    benchlib.check(p.returncode == 0 and j, "pager_bench failed (%d): %s" % (p.returncode, p.stderr[-300:]))
    j["wall_s"] = time.monotonic() - t0
    return j


def read_latency(path, n=2000, span=256 << 20, seed=3):
    """p50 and p99 (us) of n O_DIRECT 4 KiB reads at random offsets below span."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    try:
        size = min(os.lseek(fd, 0, os.SEEK_END), span)
        buf = mmap.mmap(-1, 4096)
        r = random.Random(seed)
        lat = []
        for _ in range(n):
            off = r.randrange(1, size // 4096) * 4096
            t = time.perf_counter_ns()
            os.preadv(fd, [buf], off)
            lat.append((time.perf_counter_ns() - t) / 1000)
    finally:
        os.close(fd)
    lat.sort()
    return {"p50_us": lat[len(lat) // 2], "p99_us": lat[int(len(lat) * 0.99)]}


def layers(dev):
    st = dev.status()
    fuse_file = os.path.join(dev.swapdir, "%s.dev" % st.get("name", "0"))
    return {"loop_read": read_latency(dev.dev), "fuse_file_read": read_latency(fuse_file),
            "daemon_read_p50_us": st.get("read_p50_us"), "daemon_read_p99_us": st.get("read_p99_us"),
            "status": st}


def one(name, dev, build, size_mib, limit):
    zs = sysenv.Zswap() if name.endswith("+zswap") else None
    if zs:
        zs.enable()
    vm0 = sysenv.vmstat()
    cg = sysenv.Cgroup(limit, swap=True)
    try:
        dev.enable()
        r = pager_bench(build, size_mib, cg)
        if isinstance(dev, sysenv.ComexSwap):
            r["layers"] = layers(dev)
    finally:
        cg.remove()
        dev.disable()
        if zs:
            zs.restore()
    vm1 = sysenv.vmstat()
    r["vmstat"] = {k: vm1.get(k, 0) - vm0.get(k, 0) for k in ("pswpin", "pswpout", "zswpin", "zswpout", "zswpwb")}
    return r


def main(argv):
    ap = benchlib.arg_parser(__doc__.splitlines()[0])
    ap.add_argument("--size-mib", type=int, default=512)
    ap.add_argument("--fraction", type=int, default=25)
    ap.add_argument("--devices", default=",".join(DEVICES))
    a = benchlib.quick(ap.parse_args(argv), size_mib=32, fraction=50, devices="swap-disk,comex-swap")
    build = os.path.abspath(a.build)
    names = a.devices.split(",")
    others = sysenv.active_swaps()
    why = sysenv.cgroup_precondition() or (
        "another swap device is active (%s): each device must be the only swap" % ", ".join(others) if others else None)
    if why:
        print("swap_latency: %s" % why, file=sys.stderr)
        return 77
    sysenv.install_signal_handlers()
    workdir = "/var/tmp/comex-swap-latency"
    os.makedirs(workdir, exist_ok=True)
    limit = a.size_mib * a.fraction // 100 << 20
    swap_bytes = 2 * a.size_mib << 20
    doc, times0 = benchlib.start_doc("comex-bench-swap-latency/1", size_mib=a.size_mib, fraction=a.fraction,
                                     runs=a.runs, limit_bytes=limit, devices=names, results={})
    devs = {}
    uring_param = sysenv.read(URING_PARAM)
    try:
        native = pager_bench(build, a.size_mib, None)
        doc["native"] = native
        for n in names:
            devs[n] = device_for(n, build, swap_bytes, workdir)
            why = devs[n].precondition()
            if why:
                print("swap_latency: %s: %s" % (n, why), file=sys.stderr)
                return 77
            devs[n].create()
        for rep in range(a.runs):
            order = names if rep % 2 == 0 else list(reversed(names))
            for n in order:
                r = one(n, devs[n], build, a.size_mib, limit)
                r["verified"] = r["checksum"] == native["checksum"]
                doc["results"].setdefault(n, []).append(r)
                print("[%s] %s run %d: access %.2f s, swap-in p50 %s us p99 %s us%s" % (
                    time.strftime("%H:%M:%S"), n, rep + 1, r["access_s"], r.get("fault_median_us"),
                    r.get("fault_p99_us"), "" if r["verified"] else "  CHECKSUM DIFFERS"), flush=True)
    finally:
        for d in devs.values():
            d.destroy()
        sysenv.UNDO.run_all()
        if uring_param and sysenv.read(URING_PARAM) != uring_param:
            sysenv.write(URING_PARAM, uring_param)
    doc["summary"] = summarize(doc)
    benchlib.finish_doc(doc, times0, "swap-latency", a)
    print_table(doc)
    bad = [n for n, v in doc["summary"].items() if not v["verified"]]
    benchlib.check(not bad, "checksums differ from the run without a limit: %s" % ", ".join(bad))
    return 0


def med(vals):
    vals = [v for v in vals if v is not None]
    return statistics.median(vals) if vals else None


def summarize(doc):
    out = {}
    for n, rs in doc["results"].items():
        s = {"access_s": med([r["access_s"] for r in rs]), "swapin_p50_us": med([r.get("fault_median_us") for r in rs]),
             "swapin_p99_us": med([r.get("fault_p99_us") for r in rs]), "verified": all(r["verified"] for r in rs),
             "runs": len(rs)}
        if rs and "layers" in rs[0]:
            s["loop_read_p50_us"] = med([r["layers"]["loop_read"]["p50_us"] for r in rs])
            s["fuse_file_read_p50_us"] = med([r["layers"]["fuse_file_read"]["p50_us"] for r in rs])
            s["daemon_read_p50_us"] = med([r["layers"]["daemon_read_p50_us"] for r in rs])
        out[n] = s
    return out


def print_table(doc):
    s = doc["summary"]
    disk = (s.get("swap-disk") or {}).get("access_s")
    print("%-20s %9s %10s %10s %9s %s" % ("device", "access_s", "p50_us", "p99_us", "disk/it", "layers p50 (loop, fuse file, daemon)"))
    for n, v in s.items():
        ratio = disk / v["access_s"] if disk and v["access_s"] else None
        lay = ""
        if "loop_read_p50_us" in v:
            lay = "%.1f, %.1f, %.1f us" % (v["loop_read_p50_us"], v["fuse_file_read_p50_us"], v["daemon_read_p50_us"] or -1)
        print("%-20s %9.2f %10s %10s %9s %s" % (n, v["access_s"], v["swapin_p50_us"], v["swapin_p99_us"],
                                              "%.2fx" % ratio if ratio else "-", lay))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
