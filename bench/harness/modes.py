"""The modes a workload runs in. Each mode puts the program in a memory
cgroup with the same limit M (except `local`), and differs only in where the
pages that do not fit go:

  local        no limit (the denominator of every slowdown)
  swap-disk    Linux swap on a swap file on the local disk
  zram         Linux swap on a zram device (compressed RAM)
  comex        comex run, swap off for the group, two memnodes on loopback over
               comex's own TCP (transport tcp, the default without RDMA)
  comex-ucx    the same over UCX's TCP transport (transport ucx, UCX_TLS=tcp):
               what comex used before docs/DECISIONS.md D12
  comex-shm    comex run with its embedded memnode (no --memnode): one memnode
               that comex run starts itself, on shared memory, whose pool
               grows with the program (embedded-pool auto)
  comex-net10  comex run, each memnode in its own network namespace behind a
  comex-net25  veth pair shaped by tbf to 10 / 25 Gbit/s
  comex-swap   Linux swap on `comex swap` (its embedded memnode, same host):
               the kernel pages out to a FUSE file behind a loop device whose
               blocks live on the memnode; the program runs unmodified
  comex-swap+zswap  the same with zswap (lz4) in front: the compressed local
               tier, pages written back to comex swap when its pool fills
               (or the shrinker finds them cold)
  comex-rttN   comex-net25 with a simulated round trip of N microseconds
               added to every reply (option sim-rtt: a simulation; RDMA is
               about 3 us, TCP over 25 GbE 15-30 us); comex-rttN-nK: K
               memnodes instead of 2

No comex mode busy-polls (NO_SPIN): memnodes sleep between requests and the
fault handler and the client sleep while they wait, so no polling thread
competes with the program (or a neighbour) for a core.

A mode's set-up (swap file, zram device, namespaces) happens once per
experiment; each run enables its swap device, starts fresh memnodes and
creates its cgroup(s), and undoes that afterwards."""

import os
import re
import secrets
import shutil
import subprocess

from . import sysenv
from .sysenv import Cgroup, ComexSwap, Memnode, NetNs, Refused, SwapFile, Zram, Zswap, log

ALL_MODES = ["local", "swap-disk", "zram", "comex", "comex-ucx", "comex-shm", "comex-net10", "comex-net25",
             "comex-swap", "comex-swap+zswap"]
# not run unless named (they are simulations): comex-rttN[-nK], any N and K
MIB = 1 << 20
# --spin off: busy-polling off everywhere the harness starts comex: the
# memnodes' idle-spin (separate memnodes and comex run's embedded one get
# the environment variable, which it inherits) and the runtime's
# handler-spin and client-spin (flags of comex run). docs/DECISIONS.md, D71.
# --spin on (the default) keeps comex's own defaults, as a user gets them.
run_spin_flags, memnode_spin_env = sysenv.benchlib.run_spin_flags, sysenv.benchlib.memnode_spin_env


class RunCtx:
    """What one run (k programs at once) gets: its cgroups and, for comex
    modes, the `comex run` prefix."""

    def __init__(self, mode, limit, k, workdir, comex_opts):
        self.mode = mode
        self.limit = limit
        self.k = k
        self.workdir = workdir
        self.comex_opts = list(comex_opts or [])
        self.cgroups = []
        self.memnodes = []
        self.info = {}

    def command(self, argv, i=0, stats=None):
        """The whole command line of instance i: it joins its cgroup and runs
        argv, under `comex run` for comex modes. With separate memnodes
        `comex run` itself joins the cgroup (its budget and buffers are
        inside the limit); with the embedded memnode `comex run` stays
        outside, in the harness's cgroup, so the memnode it forks is too
        (D68: remote memory is outside the limit), and only the program joins
        the cgroup: the shell that does so is itself started under the
        runtime (one extra runtime start-up, a few ms, against comex)."""
        enter = self.cgroups[i].wrap([])
        if not self.mode.comex:
            return enter + list(argv)
        pre = [str(self.mode.comex_bin), "run"] + self.mode.run_spin()
        if not self.mode.embedded:
            pre += ["--token-file", self.mode.token]
        for m in self.memnodes:
            pre += ["--memnode", m.addr]
        if self.limit is None:
            pre += ["--local-mem", self.comex_local_mem]
        else:
            # auto: the runtime, inside the cgroup, follows the room the cgroup
            # has left (docs/DECISIONS.md D49), also when comex run is outside it
            pre += ["--local-mem", "auto"]
        if stats:
            pre += ["--stats-json", stats]
        if self.mode.sim_rtt_us:
            pre += ["--sim-rtt", "%dus" % self.mode.sim_rtt_us]
        if self.mode.transport:
            pre += ["--transport", self.mode.transport]
        pre += self.comex_opts + ["--"]
        if self.mode.embedded:
            return pre + enter + list(argv)
        return enter + pre + list(argv)

    def env(self):
        e = dict(os.environ)
        e.pop("LD_PRELOAD", None)
        if self.mode.embedded:
            e.update(self.mode.memnode_spin())
        if self.mode.net_rate:
            e["UCX_TLS"] = "tcp"
            e["UCX_NET_DEVICES"] = self.mode.netns[0].bridge
        if self.mode.transport == "ucx":
            e["UCX_TLS"] = "tcp"
        return e

    def preexec(self, i=0):
        return self.cgroups[i].enter_fn()


class Mode:
    comex = False
    embedded = False
    transport = None  # comex modes: option transport given to memnodes and comex run (None: the default)
    swap_kind = None
    net_rate = None
    sim_rtt_us = 0

    def __init__(self, name, build, spin=False):
        """spin: keep comex's busy-polling defaults (--spin on) instead of
        turning it off (D71)."""
        self.name = name
        self.build = build
        self.spin = spin
        self.comex_bin = os.path.join(build, "comex")
        self.device = None
        self.netns = []

    # -- once per experiment
    def precondition(self, pool_bytes, swap_bytes):
        return sysenv.cgroup_precondition()

    def setup(self, workdir, pool_bytes, swap_bytes):
        self.workdir = workdir
        self.pool = pool_bytes

    def teardown(self):
        pass

    # -- once per run
    def begin(self, limit, k=1, comex_opts=None, comex_local_mem=None):
        ctx = RunCtx(self, limit, k, self.workdir, comex_opts)
        ctx.comex_local_mem = comex_local_mem
        try:
            self._begin(ctx)
            for i in range(k):
                ctx.cgroups.append(Cgroup(limit, swap=self.swap_kind is not None))
        except BaseException:
            self.end(ctx)
            raise
        return ctx

    def _begin(self, ctx):
        pass

    def end(self, ctx):
        for c in ctx.cgroups:
            c.remove()
        for m in ctx.memnodes:
            m.close()
        if self.device:
            self.device.disable()

    def describe(self):
        return {"name": self.name}

    def run_spin(self):
        return run_spin_flags("on" if self.spin else "off")

    def memnode_spin(self):
        return memnode_spin_env("on" if self.spin else "off")


class Local(Mode):
    def begin(self, limit, k=1, comex_opts=None, comex_local_mem=None):
        return super().begin(None, k, comex_opts)

    def describe(self):
        return {"name": self.name, "limit": "none"}


class SwapMode(Mode):
    def precondition(self, pool_bytes, swap_bytes):
        r = super().precondition(pool_bytes, swap_bytes)
        if r:
            return r
        others = sysenv.active_swaps()
        if others:
            return ("another swap device is active (%s): the kernel would spread pages over it and the mode "
                    "would not measure %s alone" % (", ".join(others), self.name))
        self.device = self.make_device(swap_bytes)
        return self.device.precondition()

    def setup(self, workdir, pool_bytes, swap_bytes):
        super().setup(workdir, pool_bytes, swap_bytes)
        self.device.create()

    def teardown(self):
        if self.device:
            self.device.destroy()

    def _begin(self, ctx):
        # our device must be the only swap, enabled only for this run
        others = [s for s in sysenv.active_swaps()]
        if others:
            raise Refused("another swap device became active (%s)" % ", ".join(others))
        self.device.enable()


class SwapDisk(SwapMode):
    swap_kind = "disk"

    def make_device(self, size):
        return SwapFile(size)

    def describe(self):
        d = {"name": self.name, "swap": "file on local disk"}
        if self.device:
            d["path"] = self.device.path
            d["size_mib"] = self.device.size >> 20
            d["fs"] = sysenv.sh("findmnt", "-no", "FSTYPE,SOURCE", "-T", os.path.dirname(self.device.path),
                                check=False).stdout.strip()
        return d


class ZramMode(SwapMode):
    swap_kind = "zram"

    def make_device(self, size):
        return Zram(size)

    def describe(self):
        d = {"name": self.name, "swap": "zram"}
        if self.device and self.device.dev:
            d.update(dev=self.device.dev, size_mib=self.device.size >> 20, comp_algorithm=self.device.alg)
        return d


class ComexSwapMode(SwapMode):
    swap_kind = "comex-swap"

    def __init__(self, name, build, zswap=False):
        super().__init__(name, build)
        self.zswap = Zswap() if zswap else None

    def make_device(self, size):
        return ComexSwap(self.comex_bin, size)

    def precondition(self, pool_bytes, swap_bytes):
        r = super().precondition(pool_bytes, swap_bytes)
        if r or not self.zswap:
            return r
        return self.zswap.precondition()

    def setup(self, workdir, pool_bytes, swap_bytes):
        self.device.swapdir = os.path.join(workdir, "comex-swap")
        super().setup(workdir, pool_bytes, swap_bytes)
        if self.zswap:
            self.zswap.enable()

    def teardown(self):
        super().teardown()
        if self.zswap:
            self.zswap.restore()

    def end(self, ctx):
        # the device's own counters (requests, latency p50/p99) before it goes
        if self.device and self.device.on:
            ctx.info["swap_device"] = self.device.status()
        super().end(ctx)

    def describe(self):
        d = {"name": self.name, "swap": "comex swap (FUSE file, loop device with direct I/O, embedded memnode)",
             "size_mib": self.device.size >> 20 if self.device else None}
        if self.zswap:
            d["zswap"] = self.zswap.describe()
        return d


class ComexMode(Mode):
    comex = True

    def __init__(self, name, build, rate=None, nodes=2, embedded=False, spin=False, sim_rtt_us=0, transport=None):
        """embedded: no memnodes of ours; `comex run` starts its own (nodes
        is then 1, for the memory check). sim_rtt_us: the simulated round
        trip (option sim-rtt) every run adds. transport: option transport
        of memnodes and comex run (None: their default)."""
        super().__init__(name, build, spin)
        self.transport = transport
        self.net_rate = rate
        self.sim_rtt_us = sim_rtt_us
        self.embedded = embedded
        self.nodes = 1 if embedded else nodes

    def precondition(self, pool_bytes, swap_bytes):
        r = super().precondition(pool_bytes, swap_bytes)
        if r:
            return r
        if not os.access(self.comex_bin, os.X_OK):
            return "%s is not built" % self.comex_bin
        if not os.path.exists(os.path.join(self.build, "libcomex-rt.so")):
            return "%s/libcomex-rt.so is not built" % self.build
        if sysenv.read(os.path.join(self.build, "CMakeCache.txt"), "").find("COMEX_SANITIZE:BOOL=ON") >= 0:
            return "comex run is not supported in the sanitizer build (LD_PRELOAD of a sanitized runtime)"
        if os.geteuid() != 0 and sysenv.read("/proc/sys/vm/unprivileged_userfaultfd") != "1" \
                and not os.access("/dev/userfaultfd", os.R_OK | os.W_OK):
            return "no userfaultfd permission"
        if self.net_rate:
            r = NetNs.precondition()
            if r:
                return r
        free = sysenv.meminfo_kib("MemAvailable") << 10
        if free < self.nodes * pool_bytes + (1 << 30):
            return "not enough free memory for %d memnode pools of %d MiB" % (self.nodes, pool_bytes >> 20)
        return None

    def setup(self, workdir, pool_bytes, swap_bytes):
        super().setup(workdir, pool_bytes, swap_bytes)
        self.token = os.path.join(workdir, "token")
        if not self.embedded and not os.path.exists(self.token):
            subprocess.run([self.comex_bin, "token", self.token], check=True, stdout=subprocess.DEVNULL)
        if self.net_rate:
            for i in range(self.nodes):
                ns = NetNs(NetNs.next_idx(), self.net_rate)
                ns.create()
                self.netns.append(ns)

    def teardown(self):
        for ns in self.netns:
            ns.destroy()
        self.netns = []

    def _begin(self, ctx):
        # memnodes are separate processes outside the benchmark cgroup (the
        # harness's own), fresh for every run so no run inherits another's pool
        # state; the embedded one is comex run's, started and stopped by it
        if self.embedded:
            ctx.info["memnodes"] = "embedded"
            return
        for i in range(self.nodes):
            ns = self.netns[i] if self.net_rate else None
            env = dict(self.memnode_spin(), **({"UCX_TLS": "tcp"} if self.transport == "ucx" else {}))
            m = Memnode(self.comex_bin, self.token, self.pool, self.workdir, netns=ns,
                        name="%s-mn%d" % (self.name, i), env=env,
                        extra=["--transport", self.transport] if self.transport else [])
            ctx.memnodes.append(m)
            m.start()
        ctx.info["memnodes"] = [m.addr for m in ctx.memnodes]
        ctx.info["memnodes_polling"] = [m.polling for m in ctx.memnodes]

    def describe(self):
        d = {"name": self.name, "memnodes": self.nodes, "pool_mib": getattr(self, "pool", 0) >> 20,
             "transport": "UCX over TCP" if self.transport == "ucx" else "comex's own TCP (transport tcp)",
             "local_mem": "auto: the budget follows the room left in the cgroup (cgroup-follow, default slack)",
             "spin": {"memnode": self.memnode_spin(), "run": self.run_spin()}}
        if self.embedded:
            d.update(memnodes="embedded", pool_mib=None, pool="embedded-pool auto (64 MiB, grows with the program)",
                     transport="its pool mapped into the program (D38), control messages over comex's own TCP "
                               "on loopback (D80; UCX shared memory before 2026-12-06)",
                     local_mem="auto: the runtime, inside the cgroup, follows the room left in it "
                               "(cgroup-follow, default slack); comex run is outside the cgroup",
                     network="none (same host: the pool is shared memory)")
            return d
        if self.sim_rtt_us:
            d["sim_rtt_us"] = self.sim_rtt_us
            d["simulation"] = "option sim-rtt: every reply taken in %d us later than it came" % self.sim_rtt_us
        if self.net_rate:
            d["network"] = [n.describe() for n in self.netns] or "netns + veth + tbf %d Gbit/s" % self.net_rate
            d["ucx_env"] = {"UCX_TLS": "tcp", "UCX_NET_DEVICES": "the bridge (client), the veth (memnode)"}
        else:
            d["network"] = "loopback"
        return d


def is_mode(name):
    """Whether make_mode knows name: one of ALL_MODES, or comex-rttN[-nK]."""
    return name in ALL_MODES or re.fullmatch(r"comex-rtt\d+(-n\d)?", name) is not None


def make_mode(name, build, spin=False):
    if name == "local":
        return Local(name, build)
    if name == "swap-disk":
        return SwapDisk(name, build)
    if name == "zram":
        return ZramMode(name, build)
    if name == "comex":
        return ComexMode(name, build, spin=spin)
    if name == "comex-ucx":
        return ComexMode(name, build, spin=spin, transport="ucx")
    if name in ("comex-swap", "comex-swap+zswap"):
        return ComexSwapMode(name, build, zswap=name.endswith("+zswap"))
    if name == "comex-shm":
        return ComexMode(name, build, embedded=True, spin=spin)
    if name.startswith("comex-net"):
        return ComexMode(name, build, rate=int(name[len("comex-net"):]), spin=spin)
    m = re.fullmatch(r"comex-rtt(\d+)(?:-n(\d))?", name)
    if m:
        return ComexMode(name, build, rate=25, nodes=int(m.group(2) or 2), spin=spin, sim_rtt_us=int(m.group(1)))
    raise ValueError("unknown mode %r (modes: %s)" % (name, ", ".join(ALL_MODES)))
