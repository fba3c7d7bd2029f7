"""Machine set-up of the harness and the bench/*.py scripts: cgroups, swap
files, zram devices, comex swap, network namespaces, memnode processes,
CPU-bound neighbours, and the undo stack that restores the machine on exit,
on failure and on Ctrl-C (and SIGTERM, after install_signal_handlers()).

Every resource is named with the prefix `comex-bench-<pid>` / `cxb<pid>` so
that `python3 -m bench.harness cleanup` can find what a killed harness left
behind (it only touches resources whose owner pid is no longer alive).

Machine metadata and starting a memnode come from bench/benchlib.py, the
benchmarks' one library."""

import datetime
import glob
import json
import os
import platform
import re
import shutil
import signal
import socket
import subprocess
import sys
import time

try:
    from .. import benchlib          # python3 -m bench.harness, from the repository root
except ImportError:
    import benchlib                  # bench/X.py scripts: bench/ is on sys.path

ROOT = benchlib.ROOT
PID = os.getpid()
TAG = "comex-bench-%d" % PID
NS_TAG = "cxb%d" % PID


class Refused(Exception):
    """A mode's precondition does not hold; the message says which."""


def log(msg):
    print("[%s] %s" % (time.strftime("%H:%M:%S"), msg), file=sys.stderr, flush=True)


def sh(*argv, check=True, quiet=True, **kw):
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)
    if check and p.returncode != 0:
        raise RuntimeError("%s failed (%d): %s" % (" ".join(map(str, argv)), p.returncode, p.stderr.strip()))
    return p


def write(path, value):
    with open(path, "w") as f:
        f.write(str(value))


def read(path, default=None):
    """A file's text without surrounding white space, or default if it cannot be read."""
    text = benchlib.read_text(path)
    return default if text is None else text.strip()


# ---------------------------------------------------------------- undo stack

class Undo:
    """LIFO stack of restore actions. run_all() is idempotent and is called
    from finally blocks, atexit and the SIGTERM/SIGHUP handlers."""

    def __init__(self):
        self.stack = []

    def push(self, what, fn):
        self.stack.append((what, fn))
        return len(self.stack) - 1

    def pop_run(self, token):
        """Runs (and removes) the action pushed with this token now."""
        if token is None or token >= len(self.stack):
            return
        what, fn = self.stack[token]
        self.stack[token] = (what, None)
        if fn:
            try:
                fn()
            except Exception as e:  # keep restoring the rest
                log("cleanup: %s: %s" % (what, e))

    def run_all(self):
        while self.stack:
            what, fn = self.stack.pop()
            if fn is None:
                continue
            try:
                fn()
            except Exception as e:
                log("cleanup: %s: %s" % (what, e))


UNDO = Undo()


def install_signal_handlers():
    def on_signal(signum, frame):
        raise KeyboardInterrupt("signal %d" % signum)
    for s in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, on_signal)


# ---------------------------------------------------------------- processes

def kill_tree(p, grace=3.0):
    """Stops a Popen we started (its own session) and everything in it."""
    if p is None:
        return
    if p.poll() is None:
        try:
            os.killpg(p.pid, signal.SIGTERM)
        except OSError:
            p.terminate()
        try:
            p.wait(grace)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except OSError:
                p.kill()
            p.wait()
    kill_session(p.pid)


def kill_session(sid):
    """SIGKILLs what is left of session sid (a Popen's with
    start_new_session): process groups other than the leader's, e.g. the
    memnode `comex run` embeds (it has a group of its own, and would outlive
    a `comex run` killed outright)."""
    for d in glob.glob("/proc/[0-9]*/stat"):
        st = read(d, "") or ""
        f = st[st.rfind(")") + 2:].split()
        if len(f) > 3 and f[3] == str(sid):
            try:
                os.kill(int(d.split("/")[2]), signal.SIGKILL)
            except OSError:
                pass


# ---------------------------------------------------------------- metadata

loadavg = benchlib.loadavg


def meminfo_kib(key):
    return benchlib.meminfo_kib(key) or 0


def vmstat():
    out = {}
    for line in (read("/proc/vmstat", "") or "").splitlines():
        k, v = line.split()
        if k in ("pswpin", "pswpout", "pgmajfault", "pgfault", "zswpin", "zswpout", "zswpwb"):
            out[k] = int(v)
    return out


def build_sha(build):
    """Hash of the binaries under test (comex, libcomex-rt.so): the code that
    ran, whatever the repository's HEAD was (others commit while we run)."""
    import hashlib
    h = hashlib.sha256()
    for f in ("comex", "libcomex-rt.so"):
        try:
            with open(os.path.join(build, f), "rb") as fh:
                h.update(fh.read())
        except OSError:
            h.update(b"missing " + f.encode())
    return h.hexdigest()[:16]


def metadata(build, options):
    git = benchlib.git_revision()
    return {
        # checked: results whose checked metadata differ are never merged
        "checked": {
            "kernel": platform.release(),
            "cpu": benchlib.cpu_model(),
            "cores": os.cpu_count(),
            "mem_total_mib": meminfo_kib("MemTotal") // 1024,
            "thp": benchlib.bracketed(read("/sys/kernel/mm/transparent_hugepage/enabled")) or "unknown",
            "build_sha256": build_sha(build),
            "cgroup": cgroup_version(),
        },
        "git_rev": git["rev"],
        "git_dirty": git["dirty"],
        "hostname": socket.gethostname(),
        "python": platform.python_version(),
        "ucx": benchlib.ucx_version()["version"] or "unknown",
        "build": str(build),
        "options": options,
        "load_before": loadavg(),
        "started": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }


# ---------------------------------------------------------------- cgroups

def free_page_reporting():
    """True when a virtio-balloon device reports free guest pages to the
    hypervisor (feature bit 5, VIRTIO_BALLOON_F_REPORTING)."""
    for f in glob.glob("/sys/bus/virtio/drivers/virtio_balloon/virtio*/features"):
        bits = read(f, "") or ""
        if len(bits) > 5 and bits[5] == "1":
            return True
    return False


WARM_CODE = """
import mmap, sys
mib = int(sys.argv[1])
m = mmap.mmap(-1, mib << 20)
zero = bytes(1 << 20)
for _ in range(mib):
    m.write(zero)
"""


def warm_guest_memory(mib):
    """Touches and frees `mib` MiB just before a timed run. Where the guest
    reports free pages to the hypervisor (free_page_reporting; this VM does,
    about 2 s after they are freed), a run's first touch of such pages costs
    a hypervisor fault each: a native 1 GiB fill took 0.6-1.9 s from run to
    run, against 0.59-0.65 s after this. Every mode and configuration gets
    the same warm-up, so it makes runs comparable, not comex faster. In a
    process of its own: the caller's peak RSS, which fork hands down to
    every later child's ru_maxrss, must not grow. Returns the MiB warmed
    (0 where nothing reports free pages)."""
    if not free_page_reporting() or mib <= 0:
        return 0
    mib = min(mib, (meminfo_kib("MemAvailable") or 0) // 1024 // 2)
    subprocess.run([sys.executable, "-c", WARM_CODE, str(mib)], check=True)
    return mib


def cgroup_version():
    mounts = read("/proc/mounts", "") or ""
    for line in mounts.splitlines():
        f = line.split()
        if f[2] == "cgroup" and "memory" in f[3].split(","):
            return "v1"
    for line in mounts.splitlines():
        f = line.split()
        if f[2] == "cgroup2" and "memory" in (read(os.path.join(f[1], "cgroup.controllers"), "") or "").split():
            return "v2"
    return None


def _v1_root():
    for line in (read("/proc/mounts", "") or "").splitlines():
        f = line.split()
        if f[2] == "cgroup" and "memory" in f[3].split(","):
            return f[1]
    return None


def _v2_root():
    for line in (read("/proc/mounts", "") or "").splitlines():
        f = line.split()
        if f[2] == "cgroup2":
            return f[1]
    return None


def _own_cgroup(v):
    for line in (read("/proc/self/cgroup", "") or "").splitlines():
        hid, ctrls, path = line.split(":", 2)
        if v == "v1" and "memory" in ctrls.split(","):
            return path
        if v == "v2" and hid == "0":
            return path
    return "/"


UNLIMITED = None


# the shell that joins a cgroup, then execs the program: argv = ENTER_CGROUP + [procs file] + program
ENTER_CGROUP = ["/bin/sh", "-c", 'echo $$ > "$0" && exec "$@"']


class Cgroup:
    """A memory cgroup for one run. limit None = no limit. swap False keeps
    the kernel from swapping the group's memory (v1: swappiness 0 and the
    memory+swap limit equal to the limit; v2: memory.swap.max 0)."""
    seq = 0

    def __init__(self, limit, swap, name=None):
        self.v = cgroup_version()
        if not self.v:
            raise Refused("no cgroup memory controller is mounted (v1 memory or v2 with the memory controller)")
        if os.geteuid() != 0:
            raise Refused("creating cgroups needs root")
        Cgroup.seq += 1
        leaf = "%s-%s" % (TAG, name or Cgroup.seq)
        if self.v == "v1":
            base = _v1_root() + _own_cgroup("v1")
            self.path = os.path.join(base, leaf)
        else:
            root = _v2_root()
            own = root + _own_cgroup("v2")
            # v2: a group with processes cannot enable controllers for its children
            # ("no internal processes"); use our group when it delegates memory, else the root
            if "memory" in (read(os.path.join(own, "cgroup.subtree_control"), "") or "").split():
                base = own
            else:
                base = root
                if "memory" not in (read(os.path.join(root, "cgroup.subtree_control"), "") or "").split():
                    write(os.path.join(root, "cgroup.subtree_control"), "+memory")
            self.path = os.path.join(base, leaf)
        os.mkdir(self.path)
        self.undo = UNDO.push("cgroup %s" % self.path, self._remove)
        self.limit = limit
        self.swap = swap
        if self.v == "v1":
            if limit is not None:
                write(self.f("memory.limit_in_bytes"), limit)
                if not swap:
                    write(self.f("memory.swappiness"), 0)
                    if os.path.exists(self.f("memory.memsw.limit_in_bytes")):
                        write(self.f("memory.memsw.limit_in_bytes"), limit)
                else:
                    write(self.f("memory.swappiness"), 60)
        else:
            if limit is not None:
                write(self.f("memory.max"), limit)
                if os.path.exists(self.f("memory.swap.max")):
                    write(self.f("memory.swap.max"), "max" if swap else 0)

    def f(self, name):
        return os.path.join(self.path, name)

    def wrap(self, argv):
        """argv run inside this cgroup: a shell joins it, then execs argv."""
        return ENTER_CGROUP + [self.f("cgroup.procs")] + list(argv)

    def usage(self):
        """The bytes charged to the group now."""
        return int(read(self.f("memory.usage_in_bytes" if self.v == "v1" else "memory.current"), "0") or 0)

    def procs(self):
        txt = read(self.f("cgroup.procs"), "") or ""
        return [int(x) for x in txt.split()]

    def enter_fn(self):
        """preexec_fn moving the child into this cgroup before it execs."""
        path = self.f("cgroup.procs")

        def enter():
            with open(path, "w") as fh:
                fh.write(str(os.getpid()))
        return enter

    def peak(self):
        if self.v == "v1":
            v = read(self.f("memory.max_usage_in_bytes"))
        else:
            v = read(self.f("memory.peak"))
        return int(v) if v and v.isdigit() else None

    def stats(self):
        out = {"peak_bytes": self.peak()}
        if self.v == "v1":
            out["failcnt"] = int(read(self.f("memory.failcnt"), "0"))
            oc = read(self.f("memory.oom_control"), "") or ""
            m = re.search(r"oom_kill (\d+)", oc)
            out["oom_kills"] = int(m.group(1)) if m else 0
            st = read(self.f("memory.stat"), "") or ""
            for line in st.splitlines():
                k, v = line.split()
                if k in ("total_pgmajfault", "total_swap", "total_rss", "total_cache"):
                    out[k] = int(v)
        else:
            ev = read(self.f("memory.events"), "") or ""
            for line in ev.splitlines():
                k, v = line.split()
                if k in ("oom_kill", "max"):
                    out["oom_kills" if k == "oom_kill" else "limit_hits"] = int(v)
            st = read(self.f("memory.stat"), "") or ""
            for line in st.splitlines():
                k, v = line.split()
                if k in ("pgmajfault", "anon", "file"):
                    out[k] = int(v)
        return out

    def _remove(self):
        if not os.path.isdir(self.path):
            return
        # only our children can be in it; they should be gone, but make sure
        for _ in range(50):
            pids = self.procs()
            if not pids:
                break
            for p in pids:
                try:
                    os.kill(p, signal.SIGKILL)
                except OSError:
                    pass
            time.sleep(0.1)
        for _ in range(50):
            try:
                os.rmdir(self.path)
                return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError("could not remove %s" % self.path)

    def remove(self):
        UNDO.pop_run(self.undo)


def cgroup_precondition():
    if os.geteuid() != 0:
        return "not root: cgroups, swap and network namespaces need root"
    v = cgroup_version()
    if not v:
        return "no cgroup memory controller is mounted (needs v1 'memory' or v2 with 'memory' in cgroup.controllers)"
    try:
        c = Cgroup(64 << 20, swap=False, name="probe")
        c.remove()
    except (OSError, RuntimeError) as e:
        return "cannot create a memory cgroup: %s" % e
    return None


def active_swaps():
    lines = (read("/proc/swaps", "") or "").splitlines()[1:]
    return [l.split()[0] for l in lines if l.strip()]


# ---------------------------------------------------------------- swap devices

def _swapon(dev, prio=10):
    sh("swapon", "-p", str(prio), dev)


def _swapoff(dev):
    if dev in active_swaps() or os.path.realpath(dev) in active_swaps():
        sh("swapoff", dev)


def _swap_tools_missing(needs_root):
    """Why swap devices cannot be set up here (NEEDS_ROOT says what wants
    root), or None."""
    if os.geteuid() != 0:
        return needs_root
    for tool in ("mkswap", "swapon", "swapoff"):
        if not shutil.which(tool):
            return "%s is not installed" % tool
    return None


class SwapDevice:
    """What a swap file and a zram device share: swapon at PRIO for a run,
    swapoff after it; swap_path() names the device."""
    PRIO = 10

    def swap_path(self):
        raise NotImplementedError

    def enable(self):
        _swapon(self.swap_path(), prio=self.PRIO)
        self.on = True

    def disable(self):
        if self.on:
            _swapoff(self.swap_path())
            self.on = False


class SwapFile(SwapDevice):
    """A swap file on the local disk (created once, enabled per run)."""

    def __init__(self, size, directory="/var/tmp"):
        self.path = os.path.join(directory, "%s.swap" % TAG)
        self.size = size
        self.on = False

    def swap_path(self):
        return self.path

    def precondition(self):
        why = _swap_tools_missing("swapon needs root")
        if why:
            return why
        st = os.statvfs(os.path.dirname(self.path))
        if st.f_bavail * st.f_frsize < self.size + (1 << 30):
            return "not enough free disk in %s for a %d MiB swap file" % (os.path.dirname(self.path), self.size >> 20)
        return None

    def create(self):
        log("swap-disk: creating a %d MiB swap file %s" % (self.size >> 20, self.path))
        UNDO.push("swap file %s" % self.path, self.destroy)
        # written, not fallocated: swapon rejects files with holes or unwritten extents on some filesystems
        with open(self.path, "wb") as f:
            os.chmod(self.path, 0o600)
            chunk = b"\0" * (8 << 20)
            left = self.size
            while left > 0:
                n = min(left, len(chunk))
                f.write(chunk[:n])
                left -= n
            f.flush()
            os.fsync(f.fileno())
        sh("mkswap", self.path)

    def destroy(self):
        self.disable()
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass


class Zram(SwapDevice):
    """A zram swap device: a fresh one from /sys/class/zram-control/hot_add
    when possible, else an unused existing /dev/zramN (disksize 0)."""
    PRIO = 100

    def __init__(self, size):
        self.size = size
        self.dev = None
        self.hot = False
        self.on = False

    def swap_path(self):
        return self.dev

    def precondition(self):
        why = _swap_tools_missing("zram set-up needs root")
        if why:
            return why
        if os.path.exists("/sys/class/zram-control/hot_add"):
            return None
        free = [d for d in glob.glob("/sys/block/zram*") if read(d + "/disksize") == "0"]
        if free:
            return None
        if not glob.glob("/sys/block/zram*"):
            return ("no zram device: the zram module is not loaded (/sys/class/zram-control and /sys/block/zram* "
                    "are missing) and modprobe is not available to load it")
        return "every zram device is in use (disksize set) and /sys/class/zram-control/hot_add is missing"

    def create(self):
        if os.path.exists("/sys/class/zram-control/hot_add"):
            n = int(read("/sys/class/zram-control/hot_add"))
            self.hot = True
        else:
            free = sorted(d for d in glob.glob("/sys/block/zram*") if read(d + "/disksize") == "0")
            n = int(free[0].rsplit("zram", 1)[1])
        self.dev = "/dev/zram%d" % n
        self.sys = "/sys/block/zram%d" % n
        self.mark = "/var/tmp/%s.zram" % TAG   # lets `cleanup` reset it after a SIGKILL
        write(self.mark, "%d %d" % (n, int(self.hot)))
        UNDO.push("zram %s" % self.dev, self.destroy)
        for _ in range(50):
            if os.path.exists(self.dev):
                break
            time.sleep(0.1)
        algs = read(self.sys + "/comp_algorithm", "") or ""
        self.alg = "lz4" if re.search(r"\blz4\b", algs) else re.search(r"\[(\S+)\]", algs).group(1)
        write(self.sys + "/comp_algorithm", self.alg)
        write(self.sys + "/disksize", self.size)
        sh("mkswap", self.dev)
        log("zram: %s, %d MiB, %s" % (self.dev, self.size >> 20, self.alg))

    def mm_stat(self):
        f = (read(self.sys + "/mm_stat", "") or "").split()
        if len(f) >= 3:
            return {"orig_data_bytes": int(f[0]), "compr_data_bytes": int(f[1]), "mem_used_bytes": int(f[2])}
        return {}

    def destroy(self):
        if not self.dev:
            return
        self.disable()
        write(self.sys + "/reset", 1)
        if self.hot:
            n = self.dev.rsplit("zram", 1)[1]
            write("/sys/class/zram-control/hot_remove", n)
        self.dev = None
        try:
            os.unlink(self.mark)
        except FileNotFoundError:
            pass


class ComexSwap(SwapDevice):
    """`comex swap up` with its embedded memnode (the same host, as
    comex-shm) for each run, `comex swap down` after it: a fresh daemon and
    memnode per run, as the comex modes get fresh memnodes. up itself runs
    mkswap and swapon (at PRIO)."""

    def __init__(self, comex_bin, size, swapdir=None):
        self.bin = comex_bin
        self.size = size
        self.swapdir = swapdir  # set before create()
        self.dev = None
        self.on = False
        self.undo = None
        self.stopping = False
        self.extra = []  # further options of comex swap up

    def swap_path(self):
        return self.dev

    def precondition(self):
        why = _swap_tools_missing("comex swap needs root")
        if why:
            return why
        if not os.access("/dev/fuse", os.W_OK):
            return "no /dev/fuse"
        if not shutil.which("losetup"):
            return "losetup is not installed"
        if not os.access(self.bin, os.X_OK):
            return "%s is not built" % self.bin
        return None

    def create(self):
        os.makedirs(self.swapdir, exist_ok=True)

    def enable(self):
        p = sh(self.bin, "swap", "up", "--size", str(self.size), "--priority", str(self.PRIO),
               "--swap-dir", self.swapdir, *self.extra)
        self.dev = p.stdout.strip().splitlines()[-1]
        self.on = True
        self.undo = UNDO.push("comex swap %s" % self.dev, self.disable)

    def status(self):
        """comex swap status --json of this device, or {}."""
        p = sh(self.bin, "swap", "status", "--swap-dir", self.swapdir, "--json", check=False)
        try:
            return next((d for d in json.loads(p.stdout) if d.get("device") == self.dev), {})
        except ValueError:
            return {}

    def disable(self):
        # stopping: a signal handler's undo run that interrupts this one
        # must not start a second down of the same device (whose swapoff
        # then fails); a down that failed is tried again by the next call
        if self.on and not self.stopping:
            self.stopping = True
            try:
                sh(self.bin, "swap", "down", "--swap-dir", self.swapdir, self.dev)
                self.on = False
            finally:
                self.stopping = False
            if self.undo is not None:
                UNDO.pop_run(self.undo)
                self.undo = None

    def destroy(self):
        self.disable()


class Zswap:
    """zswap (built into the kernel) in front of every swap device, lz4, for
    one experiment (lz4 where the crypto API has it); the parameters it
    found are put back after. Its counters
    are /proc/vmstat's zswpout, zswpin and zswpwb (written back to the
    device), which every record's vmstat_delta holds."""
    PARAMS = "/sys/module/zswap/parameters"
    WANT = {"compressor": "lz4", "max_pool_percent": "20", "shrinker_enabled": "Y", "enabled": "Y"}

    def __init__(self):
        self.saved = {}

    def precondition(self):
        if not os.path.isdir(self.PARAMS):
            return "the kernel has no zswap (CONFIG_ZSWAP)"
        if not os.access(os.path.join(self.PARAMS, "enabled"), os.W_OK):
            return "zswap's parameters need root"
        return None

    @staticmethod
    def compressor():
        """lz4 where the kernel's crypto API has it, else lzo-rle (zram
        has its own lz4; this kernel's crypto API does not)."""
        names = re.findall(r"^name\s*:\s*(\S+)", read("/proc/crypto", "") or "", re.M)
        return "lz4" if "lz4" in names else "lzo-rle"

    def enable(self):
        UNDO.push("zswap parameters", self.restore)
        want = dict(self.WANT, compressor=self.compressor())
        for k, v in want.items():
            path = os.path.join(self.PARAMS, k)
            if os.path.exists(path):
                self.saved[k] = read(path)
                write(path, v)
        log("zswap: %s" % ", ".join("%s=%s" % (k, read(os.path.join(self.PARAMS, k))) for k in self.saved))

    def describe(self):
        return {k: read(os.path.join(self.PARAMS, k)) for k in self.WANT if os.path.exists(os.path.join(self.PARAMS, k))}

    def restore(self):
        # enabled last off, first on: the order WANT lists them, reversed
        for k in reversed(list(self.saved)):
            write(os.path.join(self.PARAMS, k), self.saved[k])
        self.saved = {}


# ---------------------------------------------------------------- network namespaces

class NetNs:
    """One memnode host: a network namespace whose veth pair joins a bridge
    on the compute side (one bridge per rate, like a switch port per host);
    both ends of every veth are shaped with tbf to rate_gbit, so writes
    (host -> memnode) and reads (memnode -> host) each cross a shaped link.
    All hosts of a bridge share one subnet, so UCX's TCP transport sees one
    device on each side (the bridge, the namespace's veth)."""

    def __init__(self, idx, rate_gbit):
        self.idx = idx
        self.rate = rate_gbit
        self.name = "%s-%d" % (NS_TAG, idx)
        self.bridge = "%sb%d" % (NS_TAG, rate_gbit)   # <= 15 chars
        self.host_if = "%sh%d" % (NS_TAG, idx)
        self.ns_if = "%sn%d" % (NS_TAG, idx)
        sub = (PID % 200) + 20
        self.host_ip = "10.%d.%d.1" % (sub, rate_gbit)
        self.ns_ip = "10.%d.%d.%d" % (sub, rate_gbit, 10 + idx % 240)  # unique per idx below 240

    _next = 0

    @classmethod
    def next_idx(cls):
        """A number no other NetNs of this harness has: modes at the same
        rate share a bridge and its subnet, so each host needs its own."""
        cls._next += 1
        return cls._next - 1

    @staticmethod
    def precondition():
        if os.geteuid() != 0:
            return "network namespaces need root"
        for tool in ("ip", "tc"):
            if not shutil.which(tool):
                return "%s (iproute2) is not installed" % tool
        return None

    def create(self):
        UNDO.push("netns %s" % self.name, self.destroy)
        if not os.path.exists("/sys/class/net/%s" % self.bridge):
            UNDO.push("bridge %s" % self.bridge, lambda: sh("ip", "link", "del", self.bridge, check=False))
            sh("ip", "link", "add", self.bridge, "type", "bridge")
            sh("ip", "addr", "add", self.host_ip + "/24", "dev", self.bridge)
            sh("ip", "link", "set", self.bridge, "up")
        sh("ip", "netns", "add", self.name)
        sh("ip", "link", "add", self.host_if, "type", "veth", "peer", "name", self.ns_if)
        sh("ip", "link", "set", self.ns_if, "netns", self.name)
        sh("ip", "link", "set", self.host_if, "master", self.bridge)
        sh("ip", "link", "set", self.host_if, "up")
        sh("ip", "-n", self.name, "addr", "add", self.ns_ip + "/24", "dev", self.ns_if)
        sh("ip", "-n", self.name, "link", "set", self.ns_if, "up")
        sh("ip", "-n", self.name, "link", "set", "lo", "up")
        self.shape(self.rate * 1e9, "add")

    def shape(self, bits_per_s, how="change"):
        """tbf on both ends at bits_per_s: a burst of ~2 ms at that rate (>= one
        64 KiB GSO packet), 10 ms of queue. how: add (at create) or change (a
        link that slows down and recovers, as the soak's slow events do)."""
        burst = max(256 * 1024, int(bits_per_s / 8 * 0.002))
        for ns in (None, self.name):
            dev = self.host_if if ns is None else self.ns_if
            pre = ["ip", "netns", "exec", ns] if ns else []
            sh(*pre, "tc", "qdisc", how, "dev", dev, "root", "tbf", "rate", "%dkbit" % (bits_per_s // 1000),
               "burst", str(burst), "latency", "10ms")

    def destroy(self):
        sh("ip", "link", "del", self.host_if, check=False)
        sh("ip", "netns", "del", self.name, check=False)

    def describe(self):
        q = sh("tc", "qdisc", "show", "dev", self.host_if, check=False).stdout.strip()
        return {"netns": self.name, "bridge": self.bridge, "host_if": self.host_if, "ns_if": self.ns_if,
                "host_ip": self.host_ip, "ns_ip": self.ns_ip, "rate_gbit": self.rate, "qdisc": q}


# ---------------------------------------------------------------- memnodes

class Memnode:
    """The benchmarks' one `comex memnode` process (harness modes and the
    bench/*.py scripts): started by benchlib.start_memnode in a session of its
    own, on PORT (0: a free one; a restarted memnode keeps its port),
    optionally in a network namespace (UCX then restricted to TCP on its
    device) and its command passed through WRAP (a cgroup, taskset), with
    BASE_ENV (default: this process's environment) plus ENV and the further
    memnode options EXTRA; stopped by stop() or close(), and by the undo
    stack at the latest."""

    def __init__(self, comex, token, pool, logdir, netns=None, name="mn", env=None, extra=(), port=0, wrap=None,
                 base_env=None):
        self.comex = comex
        self.extra_env = dict(env or {})
        self.base_env = base_env
        self.extra = list(extra)
        self.token = token
        self.pool = pool
        self.netns = netns
        self.port = port
        self.wrap = wrap
        self.logdir, self.name = logdir, name
        self.log = os.path.join(logdir, "%s.log" % name)
        self.p = None
        self.addr = None
        self.host = "127.0.0.1"
        self.polling = None
        self.polling_core = None
        self.metrics = None
        self.undo = None

    def start(self, timeout=30):
        env = dict(os.environ if self.base_env is None else self.base_env, **self.extra_env)
        host, wrap = "127.0.0.1", self.wrap
        if self.netns:
            ns = self.netns
            host = ns.ns_ip
            env.update(UCX_TLS="tcp", UCX_NET_DEVICES=ns.ns_if)
            inner = wrap or (lambda cmd: cmd)
            wrap = lambda cmd: ["ip", "netns", "exec", ns.name] + inner(cmd)  # noqa: E731
        s = benchlib.start_memnode(self.comex, self.logdir, self.name, self.token, self.pool >> 20, port=self.port,
                                   host=host, extra=self.extra, wrap=wrap, env=env, new_session=True, timeout=timeout)
        self.p = s.proc
        self.undo = UNDO.push("memnode %d" % self.p.pid, self.stop)
        self.host, self.port = host, s.port
        self.addr = "%s:%d" % (host, s.port)
        self.polling_core = s.polling_core
        self.polling = s.polling_core is not None or s.polling_shared is not None
        if s.metrics_port is not None:
            self.metrics = "http://%s:%d/metrics" % (host, s.metrics_port)
        return self.addr

    def alive(self):
        return self.p is not None and self.p.poll() is None

    def signal(self, sig):
        self.p.send_signal(sig)

    def stop(self):
        kill_tree(self.p)

    def close(self):
        """Stops it (if still running) and forgets its undo entry."""
        if self.undo is not None:
            UNDO.pop_run(self.undo)
            self.undo = None

    def terminate(self, timeout=30):
        """SIGTERM and wait: its exit status (0: a clean exit); one that
        ignores SIGTERM for TIMEOUT s is killed and raises RuntimeError."""
        if self.p is None or self.p.poll() is not None:
            rc = self.p.returncode if self.p else 0
        else:
            self.p.send_signal(signal.SIGTERM)
            try:
                rc = self.p.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.close()
                raise RuntimeError("memnode ignored SIGTERM for %d s; killed" % timeout)
        self.close()
        return rc

    def log_tail(self, lines=20):
        return (benchlib.read_text(self.log) or "").splitlines()[-lines:]


# ---------------------------------------------------------------- CPU-bound neighbour

NEIGHBOURS = benchlib.NEIGHBOURS   # name -> the neighbour of the busy experiment ("none": none)


def neighbour_precondition(kind):
    if NEIGHBOURS.get(kind) is None:
        return None
    return None if shutil.which("stress-ng") else "stress-ng is not installed (scripts/deps.sh installs it)"


class Neighbour:
    """A CPU-bound neighbour on every core for the length of one run:
    `stress-ng --cpu N` (N = cores), niced to 19 for stress-nice; stress-1
    is one such worker at normal priority (issue 21: one busy neighbour). It runs in
    the harness's cgroup (not the benchmark's), in its own session, with a
    --timeout a little past the run's, and is killed (with its workers) when
    the run ends, on failure, on Ctrl-C and on SIGTERM (the undo stack)."""

    def __init__(self, kind, timeout, cpus=None):
        self.kind = kind
        self.cpus = cpus or os.cpu_count()
        self.timeout = int(timeout) + 30
        self.p = None
        self.undo = None

    def argv(self):
        return benchlib.neighbour_argv(self.kind, self.timeout, self.cpus)

    def describe(self):
        a = self.argv()
        if not a:
            return "none"
        txt = " ".join(a[:a.index("--timeout")])
        if self.kind == "stress-nice" and read("/proc/sys/kernel/sched_autogroup_enabled") == "1":
            txt += " (its own session, autogroup nice 19)"
        return txt

    def start(self):
        a = self.argv()
        if a is None:
            return self
        self.p = subprocess.Popen(a, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL, start_new_session=True)
        self.undo = UNDO.push("neighbour %d" % self.p.pid, self.stop)
        if self.kind == "stress-nice" and os.path.exists("/proc/%d/autogroup" % self.p.pid):
            # with sched_autogroup the nice of a task counts only inside its session's
            # autogroup: the autogroup itself (its own session) gets nice 19 too
            try:
                write("/proc/%d/autogroup" % self.p.pid, 19)
            except OSError as e:
                log("neighbour: cannot renice its autogroup: %s" % e)
        time.sleep(0.5)   # its workers are up and spinning before the program starts
        if self.p.poll() is not None:
            rc = self.p.returncode
            self.close()
            raise RuntimeError("the neighbour (%s) exited at start with %s" % (" ".join(a), rc))
        return self

    def stop(self):
        kill_tree(self.p)   # and its workers, should they outlive it

    def close(self):
        UNDO.pop_run(self.undo)
        self.undo = None


# ---------------------------------------------------------------- leftovers

def cleanup_leftovers():
    """Removes what a harness killed with SIGKILL left behind: resources named
    after a pid that is no longer alive."""
    def dead(pid):
        try:
            os.kill(pid, 0)
            return False
        except ProcessLookupError:
            return True
        except PermissionError:
            return False
    n = 0
    for dev in active_swaps():
        m = re.search(r"comex-bench-(\d+)\.swap$", dev)
        if m and dead(int(m.group(1))):
            sh("swapoff", dev, check=False)
    for f in glob.glob("/var/tmp/comex-bench-*.swap"):
        m = re.search(r"comex-bench-(\d+)\.swap$", f)
        if m and dead(int(m.group(1))):
            os.unlink(f)
            n += 1
            log("removed %s" % f)
    for ns in sh("ip", "netns", "list", check=False).stdout.split("\n"):
        m = re.match(r"(cxb(\d+)-\d+)", ns.strip())
        if m and dead(int(m.group(2))):
            idx = m.group(1).rsplit("-", 1)[1]
            sh("ip", "link", "del", "cxb%sh%s" % (m.group(2), idx), check=False)
            sh("ip", "netns", "del", m.group(1), check=False)
            for rate in (10, 25):
                sh("ip", "link", "del", "cxb%sb%d" % (m.group(2), rate), check=False)
            n += 1
            log("removed netns %s" % m.group(1))
    for f in glob.glob("/var/tmp/comex-bench-*.zram"):
        m = re.search(r"comex-bench-(\d+)\.zram$", f)
        if m and dead(int(m.group(1))):
            n_dev, hot = (read(f) or "0 0").split()
            sh("swapoff", "/dev/zram" + n_dev, check=False)
            write("/sys/block/zram%s/reset" % n_dev, 1)
            if hot == "1":
                write("/sys/class/zram-control/hot_remove", n_dev)
            os.unlink(f)
            n += 1
            log("reset /dev/zram%s" % n_dev)
    roots = []
    if _v1_root():
        roots.append(_v1_root())
    if _v2_root():
        roots.append(_v2_root())
    for r in roots:
        for d in glob.glob(os.path.join(r, "**", "comex-bench-*"), recursive=True):
            m = re.search(r"comex-bench-(\d+)-", os.path.basename(d))
            if m and dead(int(m.group(1))) and os.path.isdir(d):
                try:
                    os.rmdir(d)
                    n += 1
                    log("removed cgroup %s" % d)
                except OSError as e:
                    log("cannot remove %s: %s" % (d, e))
    log("cleanup: %d leftovers removed" % n)
