#!/usr/bin/python3
"""Acceptance corpus: CPython's own regression tests, run natively and under
`comex run`, compared test by test.

For each module (default: DEFAULT_MODULES; `--modules a,b` overrides):

 1. native: `PYTHON -m test -v --junit-xml F MODULE` (stderr merged into
    stdout), inside a fresh measuring child that reports
    getrusage(RUSAGE_CHILDREN).ru_maxrss -- the largest resident set of any
    process in the tree, as /usr/bin/time's %M does; the harness's own RSS is
    not in it. Per process is the right base: every exec'd child under comex
    starts its own runtime with the same --local-mem budget.
 2. comex: `COMEX run --local-mem X -- PYTHON -m test -v --junit-xml F MODULE`
    with X = --fraction (default 0.25) of that native peak, at least
    --min-local-mib (default 24) MiB; `--env-extra KEY=VAL` is added to the
    environment of the comex runs only.

Each run's output is parsed into {test id: outcome}; outcomes are ok, FAIL,
ERROR, skipped, expected failure, unexpected success, and, for a test that
started but never reported, crashed or timeout (the module run hit
--timeout, default 900 s). The parser tolerates output that tests and their
children write in the middle of unittest's own lines (status after foreign
text, docstring descriptions, subtest lines, foreign lines that look like a
status); regrtest's JUnit XML, written by the test process itself at the end,
overrides the text for every test it names, and the error section at the end
of the output settles FAIL/ERROR and gives the failure text. A test whose
outcome differs between the two runs is listed with an excerpt of the comex
run's failure text and of what was printed while it ran. A test skipped in
both runs is the same outcome whatever the reasons. Differing tests are run
again alone (regrtest -m ID), natively and under comex (--retries, default 1):
a difference whose native outcome changes and then agrees with comex is a
native flake ("native-flaky") and does not count; the others are marked
"reproduced" or "unstable" and count.

Output: a table on stdout (progress on stderr), with --json PATH a versioned
JSON document; raw logs stay in --logs DIR. Exit status 0 when no module
differs, 1 otherwise, 2 on a usage error.

    /usr/bin/python3 bench/cpython_corpus.py --comex /tmp/corpus/bin/comex \\
        --modules test_tempfile,test_posix --json /tmp/corpus/out.json
"""
import hashlib
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import benchlib
from benchlib import ROOT, clean_env

# /1 was {"version": 1, "kind": "cpython-corpus", "machine": <the fields now in "corpus">}; /2 has
# benchlib's head (schema, timestamp, git, machine) and the set-up in "corpus"
SCHEMA = "comex-bench-cpython-corpus/2"
QUICK_MODULES = ["test_tempfile"]
DEFAULT_MODULES = ["test_subprocess", "test_posix", "test_os", "test_tempfile", "test_signal",
                   "test_fork1", "test_mmap", "test_resource", "test_threading",
                   "test_faulthandler", "test_select", "test_fcntl"]
MIB = 1 << 20
KILL_GRACE = 10          # seconds between SIGTERM and SIGKILL of a timed-out run
EXCERPT_LINES = 6        # lines of failure text kept per differing test
INLINE_LINES = 4         # lines of output printed while a differing test ran
MAX_RERUN = 20           # differing tests rerun per module at most (more: likely a crash)

# The measuring child: runs argv[2:] with stdout/stderr inherited, writes
# {"rc", "maxrss_kib"} to argv[1]; its own RSS is not part of RUSAGE_CHILDREN.
MEASURE = r"""
import json, resource, signal, subprocess, sys
# a timeout's SIGTERM goes to the whole process group: stay, reap the child, report
signal.signal(signal.SIGTERM, lambda *a: None)
rc = subprocess.call(sys.argv[2:])
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
with open(sys.argv[1], "w") as f:
    json.dump({"rc": rc, "maxrss_kib": ru.ru_maxrss, "utime": ru.ru_utime, "stime": ru.ru_stime}, f)
sys.exit(rc if rc >= 0 else 128 - rc)
"""

# ---------------------------------------------------------------- parsing

# "name (dotted.id)" optionally followed by " (subtest params)". A unittest
# id always ends in ".name"; class and module fixtures report as
# "setUpClass (module.Class)".
FIXTURES = {"setUpClass", "tearDownClass", "setUpModule", "tearDownModule"}
DESC_RE = re.compile(r"(?P<name>[A-Za-z_]\w*) \((?P<id>[A-Za-z_][\w.]*)\)"
                     r"(?P<params> \((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\))?")
STATUS_RE = re.compile(r"(?:ok|FAIL|ERROR|expected failure|unexpected success|skipped (?P<q>['\"]).*(?P=q))")
# statuses distinctive enough to accept after foreign text on the same line
# ("fd 24 is open in childFAIL"); a bare "ok" must stand alone or follow " ... "
TAIL_STATUS_RE = re.compile(r"(?:FAIL|ERROR|expected failure|unexpected success|skipped (?P<q>['\"]).*(?P=q))$")
SEP1 = "=" * 70
SEP2 = "-" * 70
ERRHEAD_RE = re.compile(r"^(?P<kind>FAIL|ERROR|UNEXPECTED SUCCESS): (?P<desc>.*)$")
RAN_RE = re.compile(r"^Ran (\d+) tests? in ")
SUMMARY_RE = re.compile(r"^(OK|FAILED)(?: \((.*)\))?\s*$")
RESULT_RE = re.compile(r"^(?:== )?Tests result: (.+?)(?: ==)?$")

OUTCOMES = ["ok", "FAIL", "ERROR", "skipped", "expected failure", "unexpected success",
            "crashed", "timeout", "missing"]


def describe(m):
    """(key, is_subtest) for a DESC_RE match that is a unittest description, else None."""
    name, tid = m.group("name"), m.group("id")
    if tid.endswith("." + name):
        key = tid
    elif name in FIXTURES:
        key = f"{tid}.{name}"
    else:
        return None
    params = m.group("params")
    return (key + params if params else key), bool(params)


def canon(status):
    return "skipped" if status.startswith("skipped") else status


def parse_text(text):
    """Per-test outcomes from `-v` output: returns dict with
    tests {key: {"outcome", "inline": [lines printed while it ran]}},
    subtests {key (params): outcome}, errors {key: traceback text},
    order [keys], summary {ran, result, counts}, regrtest result."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    tests, subtests, order = {}, {}, []
    current = None          # key of the test whose status is awaited
    pending_doc = None      # key whose description spans a docstring line
    err_start = None
    for i, line in enumerate(lines):
        if line == SEP1 and i + 1 < len(lines) and ERRHEAD_RE.match(lines[i + 1]):
            err_start = i
            break
        if RAN_RE.match(line):
            err_start = i
            break

        m = None
        for cand in DESC_RE.finditer(line):
            d = describe(cand)
            if d:
                m, (key, is_sub) = cand, d
                break
        if m is not None:
            rest = line[m.end():]
            if is_sub:
                # "  name (id) (params) ... FAIL": a failed subtest of `current`
                if rest.startswith(" ... "):
                    st = rest[5:].strip()
                    if STATUS_RE.fullmatch(st) or TAIL_STATUS_RE.search(st):
                        st = TAIL_STATUS_RE.search(st).group(0) if not STATUS_RE.fullmatch(st) else st
                        subtests[key] = canon(st)
                        parent = key.split(" (", 1)[0]
                        if parent not in tests:
                            tests[parent] = {"outcome": None, "inline": []}
                            order.append(parent)
                continue
            if key not in tests:
                order.append(key)
            tests[key] = {"outcome": None, "inline": []}
            if rest.startswith(" ... "):
                current, pending_doc = key, None
                st = rest[5:].strip()
                if st:
                    if STATUS_RE.fullmatch(st):
                        tests[key]["outcome"] = canon(st)
                        current = None
                    else:
                        t = TAIL_STATUS_RE.search(st)
                        if t:
                            tests[key]["inline"].append(st[:t.start()])
                            tests[key]["outcome"] = canon(t.group(0))
                            current = None
                        else:
                            tests[key]["inline"].append(st)
            elif rest.strip() == "":
                current, pending_doc = key, key     # docstring line follows
            continue

        if pending_doc is not None and " ... " in line:
            # "First docstring line ... ok"
            st = line.split(" ... ", 1)[1].strip()
            pending_doc = None
            if not st:
                continue
            line = st   # fall through: status (or foreign text) after " ... "
        if current is None:
            continue
        st = line.strip()
        if STATUS_RE.fullmatch(st):
            tests[current]["outcome"] = canon(st)
            current = None
            continue
        t = TAIL_STATUS_RE.search(st)
        if t:
            if st[:t.start()]:
                tests[current]["inline"].append(st[:t.start()])
            tests[current]["outcome"] = canon(t.group(0))
            current = None
            continue
        if st and len(tests[current]["inline"]) < 200:
            tests[current]["inline"].append(st)

    errors, summary = {}, {"ran": None, "result": None, "counts": {}}
    regr = None
    if err_start is not None:
        i = err_start
        while i < len(lines):
            line = lines[i]
            h = ERRHEAD_RE.match(line) if (i > 0 and lines[i - 1] == SEP1) else None
            if h:
                m = DESC_RE.match(h.group("desc"))
                d = describe(m) if m else None
                key = d[0] if d else h.group("desc").strip()
                kind = h.group("kind")
                if kind == "UNEXPECTED SUCCESS":
                    errors.setdefault(key, {"kind": kind, "text": ""})
                    i += 1
                    continue
                j = i + 1
                while j < len(lines) and lines[j] != SEP2:
                    j += 1              # docstring line(s) of the description
                k = j + 1
                while k < len(lines) and lines[k] != SEP1 and not (
                        lines[k] == SEP2 and k + 1 < len(lines) and RAN_RE.match(lines[k + 1])):
                    k += 1
                errors[key] = {"kind": kind, "text": "\n".join(lines[j + 1:k]).strip("\n")}
                i = k
                continue
            r = RAN_RE.match(line)
            if r:
                summary["ran"] = int(r.group(1))
            s = SUMMARY_RE.match(line)
            if s and summary["ran"] is not None and summary["result"] is None:
                summary["result"] = s.group(1)
                for part in (s.group(2) or "").split(","):
                    if "=" in part:
                        k_, v_ = part.split("=", 1)
                        if v_.strip().isdigit():
                            summary["counts"][k_.strip()] = int(v_)
            i += 1
    for line in lines:
        r = RESULT_RE.match(line.strip())
        if r:
            regr = r.group(1).strip()
    return {"tests": tests, "subtests": subtests, "errors": errors, "order": order,
            "summary": summary, "regrtest_result": regr}


def parse_xml(path):
    """{test id: outcome} from regrtest's --junit-xml (None if absent or unreadable)."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return None
    out = {}
    for tc in root.iter("testcase"):
        name = tc.get("name")
        if not name:
            continue        # a test whose subtests failed has an unnamed element
        tags = {c.tag: c for c in tc}
        if "error" in tags:
            outcome = "ERROR"
        elif "failure" in tags:
            outcome = "FAIL"
        elif "skipped" in tags:
            outcome = "skipped"
        elif "output" in tags:
            outcome = "expected failure"
        elif "outcome" in tags and (tags["outcome"].text or "").strip() == "UNEXPECTED_SUCCESS":
            outcome = "unexpected success"
        else:
            outcome = "ok"
        text = ""
        for t in ("error", "failure"):
            if t in tags:
                text = (tags[t].text or tags[t].get("message") or "").strip()
        out[name] = {"outcome": outcome, "text": text}
    return out


def outcomes(text, xml_path, timed_out):
    """Merge the text parse, the error section and the XML into per-test results."""
    p = parse_text(text)
    xml = parse_xml(xml_path) if xml_path else None
    tests = {}
    sub_worst = {}
    for skey, st in p["subtests"].items():
        parent = skey.split(" (", 1)[0]
        if st in ("FAIL", "ERROR"):
            sub_worst[parent] = "ERROR" if st == "ERROR" or sub_worst.get(parent) == "ERROR" else "FAIL"
    completed = p["summary"]["ran"] is not None
    inferred = 0
    for key in p["order"]:
        t = p["tests"][key]
        outcome, source = t["outcome"], "text"
        err = p["errors"].get(key)
        if err and err["kind"] in ("FAIL", "ERROR"):
            outcome, source = err["kind"], "errors"
        elif err and err["kind"] == "UNEXPECTED SUCCESS":
            outcome, source = "unexpected success", "errors"
        if xml and key in xml:
            outcome, source = xml[key]["outcome"], "xml"
        if outcome is None and key in sub_worst:
            outcome, source = sub_worst[key], "subtests"
        if outcome is None:
            # tests run one after another: one that another test followed has finished,
            # and of the statuses only a bare "ok" is not accepted after foreign text
            if completed or key != p["order"][-1]:
                outcome, source = "ok", "inferred"
                inferred += 1
            else:
                outcome, source = ("timeout" if timed_out else "crashed"), "unfinished"
        tests[key] = {"outcome": outcome, "source": source, "inline": t["inline"]}
    # in the XML or the error section but not seen in the text (garbled line)
    for key, x in (xml or {}).items():
        if key not in tests:
            tests[key] = {"outcome": x["outcome"], "source": "xml", "inline": []}
    for key, e in p["errors"].items():
        if key not in tests and " (" not in key and e["kind"] in ("FAIL", "ERROR"):
            tests[key] = {"outcome": e["kind"], "source": "errors", "inline": []}
    for key, t in tests.items():
        e = p["errors"].get(key)
        text_ = e["text"] if e else ""
        if not text_ and xml and key in xml:
            text_ = xml[key]["text"]
        subs = {k: v for k, v in p["subtests"].items() if k.split(" (", 1)[0] == key}
        if subs:
            t["subtests"] = subs
            parts = [f"[{k[len(key):].strip()}] {p['errors'][k]['text']}" for k in subs if k in p["errors"]]
            text_ = "\n".join(parts) or text_
        t["text"] = text_
    counts = {o: 0 for o in OUTCOMES}
    for t in tests.values():
        counts[t["outcome"]] = counts.get(t["outcome"], 0) + 1
    # cross-check against unittest's own summary line
    warnings = []
    s = p["summary"]
    if completed:
        n = sum(1 for t in tests.values() if t["source"] != "unfinished")
        fixture = sum(1 for k in tests if k.rsplit(".", 1)[-1] in FIXTURES)
        if s["ran"] != n - fixture:
            warnings.append(f"unittest ran {s['ran']} tests, parsed {n - fixture}")
        for word, out in (("skipped", "skipped"), ("expected failures", "expected failure"),
                          ("unexpected successes", "unexpected success")):
            if s["counts"].get(word, 0) != counts.get(out, 0):
                warnings.append(f"summary {word}={s['counts'].get(word, 0)}, parsed {counts.get(out, 0)}")
    if inferred:
        warnings.append(f"{inferred} status(es) not seen in the output, taken as ok (the test finished, "
                        "no failure reported)")
    if not completed:
        warnings.append("no unittest summary: the run " + ("timed out" if timed_out else "crashed or was killed"))
    return {"tests": tests, "counts": {k: v for k, v in counts.items() if v},
            "unittest_summary": s, "regrtest_result": p["regrtest_result"],
            "xml": xml is not None, "parse_warnings": warnings}


# ---------------------------------------------------------------- running

def kill_group(pgid, sig):
    try:
        os.killpg(pgid, sig)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def end_group(pgid, grace):
    """SIGTERM what is left in the process group (comex run stops its embedded
    memnode on SIGTERM), SIGKILL whatever is still there after grace seconds."""
    if not kill_group(pgid, 0):
        return
    kill_group(pgid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if not kill_group(pgid, 0):
            return
        time.sleep(0.1)
    kill_group(pgid, signal.SIGKILL)


def run_measured(cmd, log_path, measure_path, env, cwd, timeout):
    """Run cmd under the measuring child in its own session, output to log_path.
    Returns {rc, maxrss_kib, wall_s, timed_out}."""
    for p in (measure_path,):
        try:
            os.unlink(p)
        except FileNotFoundError:
            pass
    argv = [sys.executable, "-c", MEASURE, str(measure_path)] + cmd
    t0 = time.monotonic()
    timed_out = False
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                env=env, cwd=cwd, start_new_session=True)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            kill_group(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=KILL_GRACE)
            except subprocess.TimeoutExpired:
                kill_group(proc.pid, signal.SIGKILL)
                proc.wait()
    wall = time.monotonic() - t0
    # whatever the run left behind in its process group (daemonised test children)
    end_group(proc.pid, 3)
    res = {"rc": proc.returncode, "maxrss_kib": None, "wall_s": round(wall, 2), "timed_out": timed_out}
    try:
        m = json.loads(Path(measure_path).read_text())
        res["rc"] = m["rc"]
        res["maxrss_kib"] = m["maxrss_kib"]
        res["cpu_s"] = round(m["utime"] + m["stime"], 2)
    except (OSError, ValueError, KeyError):
        pass
    return res


def run_module(module, args, logs, env_native, env_comex):
    mdir = logs / module
    mdir.mkdir(parents=True, exist_ok=True)
    work = mdir / "cwd"
    work.mkdir(exist_ok=True)
    result = {"module": module}

    def regrtest(xml, only=()):
        match = [a for k in only for a in ("-m", k)]
        return [args.python, "-m", "test", "-v", "--junit-xml", str(xml)] + match + [module]

    for f in mdir.glob("*.xml"):
        f.unlink()
    progress(f"{module}: native ...")
    nat_xml = mdir / "native.xml"
    nat = run_measured(regrtest(nat_xml), mdir / "native.log", mdir / "native.rss.json",
                       env_native, work, args.timeout)
    nat["cmd"] = shlex.join(regrtest(nat_xml))
    peak = nat["maxrss_kib"]
    local = max(args.min_local_mib * MIB, int(args.fraction * peak * 1024)) if peak else args.min_local_mib * MIB
    local = (local + 4095) // 4096 * 4096
    progress(f"{module}: native rc={nat['rc']} {nat['wall_s']} s peak {fmt_kib(peak)}"
             f"{' TIMEOUT' if nat['timed_out'] else ''}; comex --local-mem {local // 1024} KiB ...")
    com_xml = mdir / "comex.xml"
    ccmd = [args.comex, "run", "--local-mem", str(local)]
    if args.stats:
        ccmd += ["--stats-json", str(mdir / "comex.stats.json")]
        (mdir / "comex.stats.json").unlink(missing_ok=True)
    comex_prefix = list(ccmd)
    ccmd += ["--"] + regrtest(com_xml)
    if nat["timed_out"]:
        # nothing to compare with: do not spend another --timeout on it
        progress(f"{module}: native run timed out, comex run skipped")
        com = {"rc": None, "maxrss_kib": None, "wall_s": 0, "timed_out": False, "not_run": True,
               "tests": {}, "counts": {}, "unittest_summary": None, "regrtest_result": None, "xml": False,
               "parse_warnings": ["not run: the native run timed out"], "log": None}
    else:
        com = run_measured(ccmd, mdir / "comex.log", mdir / "comex.rss.json", env_comex, work, args.timeout)
        progress(f"{module}: comex rc={com['rc']} {com['wall_s']} s{' TIMEOUT' if com['timed_out'] else ''}")
    com["cmd"] = shlex.join(ccmd)
    com["local_mem_bytes"] = local

    for name, run, xml in (("native", nat, nat_xml), ("comex", com, com_xml)):
        result[name] = run
        if run.get("not_run"):
            continue
        text = (mdir / f"{name}.log").read_bytes().decode("utf-8", "replace")
        run.update(outcomes(text, xml, run["timed_out"]))
        run["log"] = str(mdir / f"{name}.log")
        if not run["tests"]:
            run["tail"] = text.strip().splitlines()[-15:]
    if args.stats and not com.get("not_run"):
        try:
            com["stats"] = json.loads((mdir / "comex.stats.json").read_text())
        except (OSError, ValueError):
            pass

    diffs = []
    ntests, ctests = nat["tests"], com["tests"]
    keys = [] if com.get("not_run") else sorted(set(ntests) | set(ctests), key=lambda k: (k not in ntests, k))
    for key in keys:
        a = ntests.get(key, {"outcome": "missing"})["outcome"]
        b = ctests.get(key, {"outcome": "missing"})
        if a == b["outcome"]:
            if a in ("FAIL", "ERROR") and b.get("subtests") != ntests[key].get("subtests"):
                pass        # same verdict, different failing subtests: reported below
            else:
                continue
        d = {"test": key, "native": a, "comex": b["outcome"]}
        if b.get("subtests") or ntests.get(key, {}).get("subtests"):
            d["subtests_native"] = ntests.get(key, {}).get("subtests", {})
            d["subtests_comex"] = b.get("subtests", {})
        d["excerpt"] = excerpt(b.get("text", ""))
        inline = []
        for l in b.get("inline", []):
            l = l.strip()[:300]
            if l and l not in inline:
                inline.append(l)       # the same message from each of several children once
        if inline:
            d["printed"] = inline[:INLINE_LINES]
        diffs.append(d)
    rerun_differing(module, args, mdir, diffs, regrtest, comex_prefix, env_native, env_comex, work)
    # "same": every test has the same outcome; "flaky": the only differences are
    # native outcomes that changed when the test ran again; "differs": some test
    # differs otherwise, or the comex run timed out, or only one run reported no
    # test at all; "not-compared": the native run itself timed out.
    counted = [d for d in diffs if d.get("verdict") != "native-flaky"]
    if nat["timed_out"]:
        status = "not-compared"
    elif counted or com["timed_out"]:
        status = "differs"
    elif diffs:
        status = "flaky"
    elif not ntests and not ctests:
        status = "same" if nat["regrtest_result"] == com["regrtest_result"] else "differs"
    else:
        status = "same"
    result["status"] = status
    result["diffs"] = diffs
    for run in (nat, com):
        for t in run["tests"].values():
            t.pop("inline", None)
            if run is nat or t["outcome"] in ("ok", "skipped"):
                t.pop("text", None)
    return result


def rerun_differing(module, args, mdir, diffs, regrtest, comex_prefix, env_native, env_comex, work):
    """Run the differing tests again, alone (`-m ID`), natively and under comex,
    --retries times. Verdict per test: "reproduced" (both sides as before every
    time), "native-flaky" (a native outcome changed and then matched the comex
    one: not counted as a difference), "unstable" (otherwise), "not-rerun"."""
    ids = [d["test"] for d in diffs if d["test"].rsplit(".", 1)[-1] not in FIXTURES]
    for d in diffs:
        d["verdict"] = "not-rerun"
        d["reruns"] = []
    if not ids or args.retries <= 0:
        return
    if len(ids) > MAX_RERUN:
        progress(f"{module}: {len(ids)} tests differ, more than {MAX_RERUN}: not rerun")
        return
    for n in range(1, args.retries + 1):
        progress(f"{module}: rerun {n}/{args.retries} of the {len(ids)} differing test(s) ...")
        out = {}
        for name, prefix, env in (("native", [], env_native), ("comex", comex_prefix + ["--"], env_comex)):
            xml = mdir / f"{name}.rerun{n}.xml"
            xml.unlink(missing_ok=True)
            cmd = prefix + regrtest(xml, ids)
            if name == "comex" and args.stats:
                cmd[cmd.index("--stats-json") + 1] = str(mdir / f"comex.rerun{n}.stats.json")
            r = run_measured(cmd, mdir / f"{name}.rerun{n}.log", mdir / f"{name}.rerun{n}.rss.json",
                             env, work, args.timeout)
            text = (mdir / f"{name}.rerun{n}.log").read_bytes().decode("utf-8", "replace")
            out[name] = outcomes(text, xml, r["timed_out"])["tests"]
        for d in diffs:
            if d["test"] in ids:
                d["reruns"].append({k: out[k].get(d["test"], {"outcome": "missing"})["outcome"] for k in out})
    for d in diffs:
        rr = d["reruns"]
        if not rr:
            continue
        if all(r["native"] == d["native"] and r["comex"] == d["comex"] for r in rr):
            d["verdict"] = "reproduced"
        elif any(r["native"] != d["native"] for r in rr) and all(r["native"] == r["comex"] for r in rr):
            d["verdict"] = "native-flaky"
        else:
            d["verdict"] = "unstable"


def excerpt(text):
    """A few lines of a traceback: the innermost frame in a test file (or the
    innermost frame) and the exception; long messages keep their last line."""
    lines = [l.rstrip() for l in text.splitlines() if l.strip() and not set(l.strip()) <= set("^~ ")]
    if not lines:
        return []
    frames = [i for i, l in enumerate(lines) if l.lstrip().startswith('File "')]
    if not frames:
        head, exc = [], lines
    else:
        last = frames[-1]
        end = last + 2 if last + 1 < len(lines) and lines[last + 1].startswith("    ") else last + 1
        in_test = [i for i in frames if re.search(r'/test_\w+\.py"', lines[i])]
        f = in_test[-1] if in_test else last
        head = lines[f:f + 2] if f + 1 < len(lines) and lines[f + 1].startswith("    ") else lines[f:f + 1]
        exc = lines[end:]
    room = max(EXCERPT_LINES - len(head), 2)
    if len(exc) > room:
        exc = exc[:room - 2] + [f"... ({len(exc) - room + 1} more lines)", exc[-1]]
    return [l[:300] for l in head + exc]


# ---------------------------------------------------------------- metadata

def text_of(cmd):
    return (benchlib.run_text(cmd) or "").strip() or None


def sha256(path):
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return None


def corpus_setup(args):
    """What the corpus run used beside benchlib's machine and git fields."""
    comex_dir = Path(args.comex).resolve().parent
    return {
        "mem_total_bytes": (benchlib.meminfo_kib("MemTotal") or 0) * 1024 or None,
        "python": args.python,
        "python_version": text_of([args.python, "-c", "import sys; print(sys.version)"]),
        "harness_python": sys.version,
        "comex": str(args.comex),
        "comex_version": text_of([args.comex, "version"]),
        "comex_sha256": sha256(args.comex),
        "libcomex_rt_sha256": sha256(comex_dir / "libcomex-rt.so"),
        # a binary copied out of the tree may be older than the git revision of the document
        "comex_in_repo": Path(args.comex).resolve().is_relative_to(ROOT),
        "vm.unprivileged_userfaultfd": (benchlib.read_text("/proc/sys/vm/unprivileged_userfaultfd") or "").strip(),
        "uid": os.getuid(),
    }


# ---------------------------------------------------------------- output

def fmt_kib(k):
    return f"{k / 1024:.1f} MiB" if k else "?"


def fmt_counts(run):
    if run.get("not_run"):
        return "not run"
    if run.get("timed_out") and not run["tests"]:
        return "TIMEOUT"
    c = run["counts"]
    short = [("ok", "ok"), ("FAIL", "FAIL"), ("ERROR", "ERROR"), ("skipped", "skip"), ("expected failure", "xfail"),
             ("unexpected success", "xpass"), ("crashed", "crashed"), ("timeout", "timeout")]
    s = ", ".join(f"{c[k]} {lab}" for k, lab in short if c.get(k))
    if run.get("timed_out"):
        s += " TIMEOUT"
    elif run["rc"] is not None and (run["rc"] < 0 or run["rc"] > 128):
        s += f" rc={run['rc']}"
    return s or "no tests"


def print_table(results, doc, args):
    meta, m, git = doc["corpus"], doc["machine"], doc["git"]
    print(f"CPython regression tests, native vs comex run (--local-mem = {args.fraction:g} x native peak,"
          f" >= {args.min_local_mib} MiB)")
    print(f"python {meta['python_version'].split()[0] if meta['python_version'] else '?'}, kernel {m['kernel']}, "
          f"{m['cores']} CPUs, {(meta['mem_total_bytes'] or 0) / 2**30:.1f} GiB, comex {git['rev']}"
          f"{' (dirty tree)' if git['dirty'] else ''}")
    if not meta["comex_in_repo"]:
        print(f"binary {meta['comex']} (outside the repository: the commit above may not be what it was built from;"
              f" sha256 {(meta['comex_sha256'] or '?')[:12]})")
    print("evicted: pages the top python process paged out (comex --stats-json); its children are not counted")
    print()
    hdr = ("module", "native peak", "local-mem", "evicted", "native", "comex", "time n/c s", "result")
    rows = []
    for r in results:
        n, c = r["native"], r["comex"]
        st = c.get("stats") or {}
        rows.append((r["module"], fmt_kib(n["maxrss_kib"]), f"{c['local_mem_bytes'] / MIB:.1f} MiB",
                     st.get("pages_evicted", "-"),
                     fmt_counts(n), fmt_counts(c), f"{n['wall_s']:.0f}/{c['wall_s']:.0f}",
                     r["status"] + (f" ({len(r['diffs'])})" if r["diffs"] else "")))
    w = [max(len(str(x[i])) for x in rows + [hdr]) for i in range(len(hdr))]
    for row in [hdr] + rows:
        print("  ".join(str(v).ljust(w[i]) for i, v in enumerate(row)).rstrip())
    for r in results:
        notes = []
        for name in ("native", "comex"):
            if r[name].get("timed_out"):
                notes.append(f"  note ({name}): the run timed out after {r[name]['wall_s']:.0f} s and was killed")
            for wmsg in r[name]["parse_warnings"]:
                notes.append(f"  note ({name}): {wmsg}")
            if r[name].get("tail"):
                notes.append(f"  {name} output ended with:")
                notes += ["    | " + l[:200] for l in r[name]["tail"]]
        if not r["diffs"] and not notes:
            continue
        print()
        print(f"{r['module']}: {len(r['diffs'])} test(s) differ   (logs: {Path(r['native']['log']).parent})")
        missing = [d for d in r["diffs"] if d["comex"] == "missing"]
        for d in r["diffs"]:
            if d["comex"] == "missing" and len(missing) > 5:
                continue
            rr = "; ".join(f"{r['native']}/{r['comex']}" for r in d.get("reruns", []))
            print(f"  {d['test']}: native {d['native']}, comex {d['comex']}"
                  f"   [{d.get('verdict', 'not-rerun')}{': rerun native/comex ' + rr if rr else ''}]")
            for k in sorted(d.get("subtests_comex", {})):
                if d["subtests_comex"][k] != d.get("subtests_native", {}).get(k):
                    print(f"      subtest {k[len(d['test']):].strip()}: {d['subtests_comex'][k]}")
            for l in d.get("printed", []):
                print(f"      printed: {l[:200]}")
            for l in d["excerpt"]:
                print(f"      | {l}")
        if len(missing) > 5:
            print(f"  {len(missing)} tests of the native run not run under comex, e.g. "
                  + ", ".join(d["test"].rsplit(".", 2)[-2] + "." + d["test"].rsplit(".", 1)[-1] for d in missing[:3]))
        for n_ in notes:
            print(n_)


def progress(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def main():
    ap = benchlib.arg_parser(__doc__.split("\n\n")[0])
    ap.add_argument("--modules", help="comma-separated test modules (default: %s)" % ",".join(DEFAULT_MODULES))
    ap.add_argument("--comex", help="comex binary (default: BUILD/comex)")
    ap.add_argument("--python", default="/usr/bin/python3", help="interpreter under test (default %(default)s)")
    ap.add_argument("--fraction", type=float, default=0.25,
                    help="--local-mem as a fraction of the native peak RSS (default %(default)s)")
    ap.add_argument("--min-local-mib", type=int, default=24, help="floor of --local-mem in MiB (default %(default)s)")
    ap.add_argument("--timeout", type=float, default=900, help="seconds per module run (default %(default)s)")
    ap.add_argument("--env-extra", action="append", default=[], metavar="KEY=VAL",
                    help="environment variable for the comex runs only (repeatable)")
    ap.add_argument("--retries", type=int, default=1,
                    help="run differing tests again alone, native and comex, this many times; a difference whose "
                         "native outcome changes and then matches comex is reported as native-flaky and not "
                         "counted (default %(default)s; 0: no reruns)")
    ap.add_argument("--json", metavar="PATH", help="write the versioned JSON results here (default: none)")
    ap.add_argument("--logs", metavar="DIR", help="keep raw outputs here (default: a new /tmp/cpython-corpus-* dir)")
    ap.add_argument("--no-stats", dest="stats", action="store_false",
                    help="do not pass --stats-json to comex run (default: keep the top process's pager counters)")
    args = benchlib.quick(ap.parse_args(), modules=",".join(QUICK_MODULES), retries=0, timeout=120)

    mods = DEFAULT_MODULES if not args.modules else [m.strip() for m in args.modules.split(",") if m.strip()]
    mods = [m[len("test."):] if m.startswith("test.") else m for m in mods]
    if not mods:
        ap.error("no modules")
    if not (0 < args.fraction <= 1):
        ap.error("--fraction must be in (0, 1]")
    args.comex = args.comex or str(Path(args.build).resolve() / "comex")
    if not os.access(args.comex, os.X_OK):
        ap.error(f"comex binary not found or not executable: {args.comex}")
    if not os.access(args.python, os.X_OK):
        ap.error(f"python not found: {args.python}")
    extra = {}
    for kv in args.env_extra:
        if "=" not in kv or kv.startswith("="):
            ap.error(f"--env-extra wants KEY=VAL, got {kv!r}")
        k, v = kv.split("=", 1)
        extra[k] = v
    args.comex = str(Path(args.comex).resolve())

    logs = Path(args.logs) if args.logs else Path(tempfile.mkdtemp(prefix="cpython-corpus-"))
    logs.mkdir(parents=True, exist_ok=True)
    env_native = clean_env()
    env_comex = dict(env_native, **extra)
    doc, times0 = benchlib.start_doc(SCHEMA, corpus=corpus_setup(args))
    progress(f"logs in {logs}")

    results = []
    for m in mods:
        results.append(run_module(m, args, logs, env_native, env_comex))
    print_table(results, doc, args)
    differ = [r["module"] for r in results if r["status"] not in ("same", "flaky")]
    print()
    flaky = [r["module"] for r in results if r["status"] == "flaky"]
    print((f"no module differs" + (f" (native-flaky tests only: {', '.join(flaky)})" if flaky else ""))
          if not differ else f"{len(differ)} module(s) differ or could not be compared: " + ", ".join(differ))

    doc.update({"finished": benchlib.utc_stamp(),
                "config": {"modules": mods, "fraction": args.fraction, "min_local_mib": args.min_local_mib,
                           "timeout_s": args.timeout, "env_extra": extra, "logs": str(logs),
                           "command": shlex.join([sys.executable] + sys.argv)},
                "modules": results,
                "differing_modules": differ})
    # --json PATH, or (--out-dir) cpython-corpus-<stamp>.json there; none by default, as before
    if args.json or args.out_dir:
        benchlib.finish_doc(doc, times0, "cpython-corpus", args, path=args.json)
    if args.quick and not args.logs and not differ:   # a smoke run that passed keeps no logs
        subprocess.run(["rm", "-rf", str(logs)])
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
