#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""BPF tests of the sampled traces: exact sampling arithmetic, the files'
format (decoded by the zstd command line tool, not by the agent), and a
saturated ring.

A last scenario, no-ring: the agent in a memory cgroup too small for its
trace ring. The ring and the maps it shares are made apart from any
family's load (agent/traces.c), so only the traces go: every family loads
without them, the file layer included, which a failed load of the
system-call family with its ring took along before.

usage: test_traces.py SCENARIO AGENT TRACELOAD EXPORT
  SCENARIO: one-in-n | slow | bucket | bucket-weights | full | saturated | no-ring
"""
import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from agentlib import Agent, Checks, cgroup2_root, require_root, run_checked  # noqa: E402

EVENT_FIELDS = {"id", "name", "cat", "pid", "tid", "ts", "dur", "ph", "args"}
ARG_FIELDS = {"hhash", "size", "ret", "weight", "cpu", "cgroup_id"}


def remove_cgroup(cg):
    """A test's cgroup, once its last process has left it (which the kernel
    notes a moment after the process exits)."""
    for _ in range(50):
        try:
            os.rmdir(cg)
            return
        except OSError:
            time.sleep(0.1)


def run_load(load, path, n, slow=0, slow_ms=0, cgroup=None, alternate=False):
    args = [load, path, str(n)] + ([str(slow), str(slow_ms)] if slow else [])
    env = dict(os.environ, TRACELOAD_ALTERNATE="1" if alternate else "0")

    def enter():
        with open(os.path.join(cgroup, "cgroup.procs"), "w") as f:
            f.write("0")
    p = subprocess.run(args, stdout=subprocess.PIPE, check=True, timeout=120, env=env,
                       preexec_fn=enter if cgroup else None)
    return int(p.stdout.decode().split()[-1])


def read_traces(c, tdir):
    """Every line of every trace file, through the zstd CLI."""
    files = sorted(glob.glob(os.path.join(tdir, "*.pfw.zst")))
    c.check(len(files) > 0, "trace files written (%d)" % len(files))
    lines = []
    for f in files:
        out = subprocess.run(["zstd", "-dc", f], capture_output=True, check=False)
        c.eq(out.returncode, 0, "zstd -dc %s decodes (%s)" % (os.path.basename(f),
                                                              out.stderr.decode().strip()))
        lines += out.stdout.decode("utf-8").splitlines()
    recs = []
    bad = 0
    for line in lines:
        try:
            recs.append(json.loads(line))
        except ValueError:
            bad += 1
    c.eq(bad, 0, "every line of %d is JSON" % len(lines))
    return files, recs


def check_format(c, recs):
    ev = [r for r in recs if r.get("ph") == "X"]
    c.check(all(EVENT_FIELDS <= set(r) and ARG_FIELDS <= set(r["args"]) for r in ev),
            "complete events carry the documented fields (%d events)" % len(ev))
    c.check(all(r["ts"] > 1.6e15 for r in ev), "ts is wall-clock microseconds")
    named_files, named_pids, late = set(), set(), []
    for r in recs:
        if r.get("ph") == "M" and r.get("name") == "FH":
            named_files.add(r["args"]["value"])
        elif r.get("ph") == "M" and r.get("name") == "process_name":
            named_pids.add(r["pid"])
        elif r.get("ph") == "X":
            if "fhash" in r["args"] and r["args"]["fhash"] not in named_files:
                late.append(("file", r["args"]["fhash"]))
    c.eq(late[:3], [], "each file hash is named (FH) before its first event")
    c.check(any(r.get("name") == "HH" for r in recs), "the host hash is named (HH)")
    return ev


def agent_counts(c, recs):
    agents = [r for r in recs if r["type"] == "agent"]
    bad = [(r["window"], r["traces"]) for r in agents
           if r["traces"]["seen"] != r["traces"]["kept"] + r["traces"]["sampled_out"]
           + r["traces"]["dropped"]]
    c.eq(bad, [], "every window: seen = kept + sampled_out + dropped")
    tot = {k: sum(r["traces"][k] for r in agents) for k in ("seen", "kept", "sampled_out",
                                                             "dropped", "events")}
    return tot


def scenario(name, agent_bin, load, export):
    c = Checks()
    tmp = tempfile.mkdtemp(prefix="dc-tr-")
    tdir = os.path.join(tmp, "traces")
    data = os.path.join(tmp, "data")
    cg = None
    sampling = {"one-in-n": "one_in_n = 10; slow_ms = 0; rate = 0;",
                "slow": "one_in_n = 1000; slow_ms = 10; rate = 0;",
                "bucket": "one_in_n = 1; slow_ms = 0; rate = 0; cgroup_rate = 1; cgroup_burst = 50;",
                "full": "one_in_n = 1000000000; slow_ms = 0; rate = 0; full_cgroups = [ \"%s\" ];",
                "saturated": "one_in_n = 1; slow_ms = 0; rate = 0;"}[name]
    root = cgroup2_root()
    if name in ("bucket", "full"):
        if not root:
            print("SKIP: no cgroup2 hierarchy", flush=True)
            sys.exit(77)
        cg = os.path.join(root, "dc-test-traces-%d" % os.getpid())
        os.mkdir(cg)
        cg_id = os.stat(cg).st_ino
        sampling = sampling.replace("%s", "/" + os.path.basename(cg))
    extra = "ring_mib = 1; flush_ms = 50;" if name == "saturated" else ""
    out = ""
    if name == "one-in-n":
        # a directory shared with another node, over its bound from the
        # start: this host's old file goes, the other host's stays
        os.makedirs(tdir)
        theirs = os.path.join(tdir, "trace-%016d-dc-other-host-000000.pfw.zst" % 1)
        mine_old = os.path.join(tdir, "trace-%016d-dc-this-host-000000.pfw.zst" % 2)
        for f in (theirs, mine_old):
            with open(f, "wb") as fh:
                fh.write(b"\0" * (2 << 20))
        out = " max_mib = 1;"
    conf = ('interval = 0.25;\n%straces = { %s output = { dir = "%s";%s }; sampling = { %s }; };\n'
            % ('host = "dc-this-host";\n' if name == "one-in-n" else "", extra, tdir, out,
               sampling))
    try:
        a = Agent(agent_bin, conf)
        if name == "saturated":
            # the reader stopped: the ring fills and the kernel must count
            # every event it could not keep, and nothing else may suffer
            os.kill(a.pid, signal.SIGSTOP)
            pid = run_load(load, data, 100000)
            time.sleep(0.3)
            os.kill(a.pid, signal.SIGCONT)
            time.sleep(0.6)
            # a few calls kept on every CPU: the first on each carries the
            # weight its CPU's dropped events left behind
            for cpu in range(os.cpu_count()):
                subprocess.run([load, data + "-after", "20"], stdout=subprocess.DEVNULL,
                               check=True, timeout=60,
                               preexec_fn=lambda cpu=cpu: os.sched_setaffinity(0, {cpu}))
            time.sleep(0.6)
        elif name == "slow":
            pid = run_load(load, data, 10000, slow=5, slow_ms=30)
        else:
            t0 = time.monotonic()
            pid = run_load(load, data, 10000 if name != "full" else 1000, cgroup=cg,
                           alternate=name == "one-in-n")
            elapsed = time.monotonic() - t0
        c.eq(a.stop(), 0, "agent exits 0")
        recs = a.records()
    finally:
        if cg:
            remove_cgroup(cg)
    tot = agent_counts(c, recs)
    if name == "one-in-n":
        c.check(os.path.exists(theirs) and not os.path.exists(mine_old),
                "a shared directory over its bound: this host's oldest file deleted, "
                "another host's kept")
        os.unlink(theirs)
    files, trs = read_traces(c, tdir)
    c.eq(sum(1 for r in trs if r.get("ph") == "X"), tot["events"],
         "the files hold every event the agent records say it wrote")
    ev = check_format(c, trs)
    mine = [r for r in ev if r["pid"] == pid]
    pw = [r for r in mine if r["name"] == "pwrite64"]
    wsum = sum(r["args"]["weight"] for r in pw)
    if name == "one-in-n":
        # each call kept with probability 1/10, independently: of 10,000
        # pwrite64 and 10,000 pread64 alternating, about 1,000 of each (5
        # standard deviations: 150). A rule keeping fixed positions (every
        # 10th call of the thread) kept every pwrite64 or every pread64 and
        # none of the other
        pr = [r for r in mine if r["name"] == "pread64"]
        for what, got in (("pwrite64", pw), ("pread64", pr)):
            c.check(abs(len(got) - 1000) <= 150,
                    "1-in-10 of 10,000 %s calls kept, alternating with the other: %d"
                    % (what, len(got)))
            c.eq({r["args"]["weight"] for r in got}, {10}, "each %s stands for 10 calls" % what)
        c.check(abs(wsum - 10000) <= 1500,
                "the pwrite64 weights estimate the calls: %d for 10,000" % wsum)
        # the workload's own file: the loader's pread64 of a library's
        # headers (784 bytes at 64) is kept one run in ten
        fh = {r["args"]["name"]: r["args"]["value"] for r in trs
              if r.get("ph") == "M" and r.get("name") == "FH"}
        theirs_io = [r for r in pw + pr if r["args"].get("fhash") == fh.get(data)]
        c.check(len(theirs_io) >= len(pw) + len(pr) - 5,
                "the kept calls are the workload file's (%d of %d; its hash %s)"
                % (len(theirs_io), len(pw) + len(pr), fh.get(data)))
        bad = [r for r in theirs_io if not (r["args"]["size"] == 4096 and
                                            r["args"]["ret"] == 4096 and "offset" in r["args"])]
        c.check(not bad, "size, ret and offset of each call (%d without, the first: %s)"
                % (len(bad), bad[:1]))
    elif name == "slow":
        rd = [r for r in mine if r["name"] == "read" and r["args"].get("slow")]
        c.eq(len(rd), 5, "every call slower than 10 ms kept")
        c.check(all(r["dur"] >= 25000 and r["args"]["weight"] == 1 for r in rd),
                "slow calls kept with their duration and weight 1")
        # a pwrite slowed past 10 ms by the machine is kept as slow instead
        # of by the 1-in-N rule: each can take the place of one sampled call
        fast = [r for r in pw if not r["args"].get("slow")]
        # each drawn with probability 1/1000: 10 expected (none kept: a
        # chance of 5e-5; over 26: 5 standard deviations)
        c.check(1 <= len(fast) <= 26 + len(pw) - len(fast),
                "and about 1-in-1000 of the 10,000 fast ones (%d sampled, %d kept as slow)"
                % (len(fast), len(pw) - len(fast)))
    elif name == "bucket":
        # every call of the process draws on its cgroup's bucket, the
        # start-up's (exec, loader) too
        # the calls the child made between fork and joining the cgroup
        # draw on its parent's bucket: count the test cgroup's alone. A
        # token bucket's bound: the burst, plus what the rate refilled
        # while the workload ran (seconds on a slow machine)
        inside = [r for r in mine if r["args"]["cgroup_id"] == cg_id]
        most = 50 + int(elapsed * 1)
        c.check(50 <= len(inside) <= most,
                "a cgroup's bucket of 50 at 1/s lets 50 to %d (workload ran %.1f s) of a "
                "10,000-call burst through: got %d" % (most, elapsed, len(inside)))
    elif name == "full":
        c.eq(len(pw), 1000, "a fully traced workload keeps all 1000 calls")
        c.check(all(r["args"].get("full") and r["args"]["weight"] == 1 for r in pw),
                "marked full, weight 1")
        # traceload's last two opens, after its pwrite64 calls: one failed,
        # one of /dev/null. Neither names a file; the stash still held the
        # pwrite64's, which both carried
        op = sorted((r for r in mine if r["name"] in ("openat", "open")), key=lambda r: r["ts"])
        c.check(len(op) >= 2 and op[-2]["args"]["ret"] < 0 and op[-1]["args"]["ret"] >= 0,
                "the failed open and /dev/null's are the last two (%s)"
                % [(r["name"], r["args"]["ret"]) for r in op[-2:]])
        c.eq([r["args"].get("fhash") for r in op[-2:]], [None, None],
             "an open that names no followed file carries no file hash")
    elif name == "saturated":
        c.check(tot["dropped"] > 0, "the full ring dropped events, counted (%d)" % tot["dropped"])
        # a call is counted in its window, its event read when the ring is:
        # events of calls after the last window's close may still be read
        c.check(tot["events"] >= tot["kept"],
                "every kept event reached a batch (kept %d, read %d)" % (tot["kept"], tot["events"]))
        feats = sum(r["ops"].get("pwrite64", {}).get("count", 0) for r in recs
                    if r["type"] == "features" and r["pid"] == pid)
        c.eq(feats, 100000, "feature vectors unaffected: all 100,000 pwrite64 calls counted")
        # a kept call the ring dropped passes its weight to the next event
        # kept on its CPU: the events written stand for more calls than
        # they are, and for no more than were kept or dropped
        # (events read past the last window's close are counted in no
        # window: they may add their own weight on top)
        allw = sum(r["args"]["weight"] for r in ev)
        late = max(0, len(ev) - tot["kept"])
        c.check(len(ev) + tot["dropped"] * 0.99 <= allw <= tot["kept"] + tot["dropped"] + late,
                "dropped calls' weight carried by later events: %d events weigh %d "
                "(kept %d, dropped %d)" % (len(ev), allw, tot["kept"], tot["dropped"]))
    if name != "saturated":
        c.eq(tot["dropped"], 0, "no event dropped")
    # Perfetto's input: one JSON document
    out = os.path.join(tmp, "trace.json")
    p = run_checked([export, "export", "-o", out] + files, capture_output=True, text=True)
    c.eq(p.returncode, 0, "datacrumbs-trace export succeeds (%s)" % p.stderr.strip())
    with open(out) as f:
        doc = json.load(f)
    c.eq(len(doc["traceEvents"]), len(trs), "the export holds every record of the files")
    shutil.rmtree(tmp, ignore_errors=True)
    c.done()


QUIET = r"""
import os, sys, time
fd = os.open(sys.argv[1], os.O_CREAT | os.O_WRONLY, 0o600)
print(os.getpid(), flush=True)
for i in range(40):
    os.pwrite(fd, b"q" * 512, 0)
    time.sleep(0.025)
"""


def scenario_bucket_weights(agent_bin, load):
    """Two cgroups' buckets on one CPU: a busy one refused thousands of calls,
    a quiet one within its burst. Each kept event stands for its own
    cgroup's refused calls: the quiet process's weights add up to no more
    than its calls (they took the busy one's refusals when the count was
    the CPU's)."""
    c = Checks()
    root = cgroup2_root()
    if not root:
        print("SKIP: no cgroup2 hierarchy", flush=True)
        sys.exit(77)
    tmp = tempfile.mkdtemp(prefix="dc-tr-")
    tdir = os.path.join(tmp, "traces")
    busy = os.path.join(root, "dc-test-busy-%d" % os.getpid())
    quiet = os.path.join(root, "dc-test-quiet-%d" % os.getpid())
    conf = ('interval = 0.25;\ntraces = { output = { dir = "%s"; }; sampling = { one_in_n = 1; '
            'slow_ms = 0; rate = 0; cgroup_rate = 1; cgroup_burst = 200; }; };\n' % tdir)

    def into(cg):
        def enter():
            os.sched_setaffinity(0, {1 % os.cpu_count()})
            with open(os.path.join(cg, "cgroup.procs"), "w") as f:
                f.write("0")
        return enter
    os.mkdir(busy)
    os.mkdir(quiet)
    try:
        a = Agent(agent_bin, conf)
        q = subprocess.Popen([sys.executable, "-c", QUIET, os.path.join(tmp, "q")],
                             stdout=subprocess.PIPE, text=True, preexec_fn=into(quiet))
        qpid = int(q.stdout.readline())
        b = subprocess.Popen([load, os.path.join(tmp, "b"), "200000"], stdout=subprocess.PIPE,
                             preexec_fn=into(busy))
        b.communicate(timeout=120)
        q.wait(30)
        c.eq(a.stop(), 0, "agent exits 0")
        recs = a.records()
    finally:
        for cg in (busy, quiet):
            remove_cgroup(cg)
    _, trs = read_traces(c, tdir)
    ev = [r for r in trs if r.get("ph") == "X" and r["pid"] == qpid]
    calls = sum(o["count"] for r in recs if r["type"] == "features" and r["pid"] == qpid
                for o in r["ops"].values())
    wsum = sum(r["args"]["weight"] for r in ev)
    c.check(len(ev) > 0 and calls > 0, "the quiet process's events were kept (%d of %d calls)"
            % (len(ev), calls))
    c.check(wsum <= calls, "its events' weights add up to %d, no more than its %d calls"
            % (wsum, calls))
    shutil.rmtree(tmp, ignore_errors=True)
    c.done()


def own_cgroup(mount, v2):
    """This process's cgroup directory in the hierarchy mounted at mount
    (cgroup2's, else v1's memory one), from /proc/self/cgroup."""
    with open("/proc/self/cgroup") as f:
        for line in f:
            hid, ctrls, path = line.rstrip("\n").split(":", 2)
            if (v2 and hid == "0") or (not v2 and "memory" in ctrls.split(",")):
                return mount + path.rstrip("/")
    return mount


def memory_cgroup(name):
    """A new cgroup with the memory controller (the cgroup2 hierarchy's if
    its root hands it down, else v1's): (directory, limit file, the cgroup
    this process is in there), or None."""
    root = cgroup2_root()
    if root:
        with open(os.path.join(root, "cgroup.subtree_control")) as f:
            if "memory" in f.read().split():
                d = os.path.join(root, name)
                os.mkdir(d)
                return d, "memory.max", own_cgroup(root, True)
    v1 = "/sys/fs/cgroup/memory"
    if os.path.exists(os.path.join(v1, "memory.limit_in_bytes")):
        d = os.path.join(v1, name)
        os.mkdir(d)
        return d, "memory.limit_in_bytes", own_cgroup(v1, False)
    return None


def scenario_no_ring(agent_bin, load):
    c = Checks()
    tmp = tempfile.mkdtemp(prefix="dc-tr-")
    tdir = os.path.join(tmp, "traces")
    mc = memory_cgroup("dc-test-noring-%d" % os.getpid())
    if not mc:
        print("SKIP: no memory cgroup controller (cgroup2's root does not hand it down, no v1 "
              "memory hierarchy)", flush=True)
        sys.exit(77)
    cg, limit, home = mc
    # BPF maps are charged to their creator's memory cgroup (5.11+): a 1 GiB
    # ring does not fit in 512 MiB, the agent's other maps (tens of MiB) do
    with open(os.path.join(cg, limit), "w") as f:
        f.write(str(512 << 20))
    conf = ('interval = 0.25;\ntraces = { ring_mib = 1024; output = { dir = "%s"; };'
            ' sampling = { one_in_n = 1; slow_ms = 0; rate = 0; }; };\n' % tdir)
    back = os.path.join(home, "cgroup.procs")
    a = None
    try:
        # the agent is started from inside: it inherits the cgroup
        with open(os.path.join(cg, "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))
        try:
            a = Agent(agent_bin, conf)
        finally:
            with open(back, "w") as f:
                f.write(str(os.getpid()))
        pid = run_load(load, os.path.join(tmp, "data"), 1000)
        time.sleep(0.6)
        c.eq(a.stop(), 0, "agent exits 0")
        log = a.log()
        recs = a.records()
    finally:
        if a and a.proc.poll() is None:
            a.proc.kill()
            a.proc.wait()
        remove_cgroup(cg)
    print("# log: %s" % " | ".join(log.strip().splitlines()[:4]))
    if "Cannot set up the trace ring" not in log and any(
            r.get("traces") for r in recs if r["type"] == "agent"):
        # kernels before 5.11, or booted with cgroup.memory=nokmem: BPF
        # maps are not charged to the cgroup, and the ring fits
        print("SKIP: the 1 GiB ring was made in a 512 MiB memory cgroup: this kernel does "
              "not charge BPF maps to it", flush=True)
        shutil.rmtree(tmp, ignore_errors=True)
        sys.exit(77)
    c.check("Cannot set up the trace ring (1073741824 bytes) and its maps (Cannot allocate "
            "memory): sampled traces off" in log, "the log says why the traces are off")
    # measured against the cgroup's room first: made and charged up to the
    # limit, the ring's pages pushed the cgroup into the OOM killer, which
    # killed the agent (or this test) in about one run of four
    c.check("bytes are more than half of the" in log and cg.split("/")[-1] in log,
            "the ring refused before it is made, the memory cgroup named")
    agents = [r for r in recs if r["type"] == "agent"]
    probes = {p["name"]: p for r in agents[:1] for p in r["probes"]}
    print("# probes: %s" % {k: (v["mechanism"], v["detail"][:80]) for k, v in probes.items()})
    c.check(probes.get("files", {}).get("mechanism") not in (None, "off"),
            "the file layer is on: the ring's failure took nothing else along")
    c.check(all(k in probes for k in ("syscall", "block", "pagecache")),
            "the other families are on")
    c.check(agents and not any(r.get("traces") for r in agents),
            "the agent records say the traces are off")
    feats = [r for r in recs if r["type"] == "features" and r["pid"] == pid]
    c.eq(sum(r.get("access", {}).get("writes", 0) for r in feats), 1000,
         "the workload's 1000 writes are in its records' file layer")
    c.check(not os.path.isdir(tdir) or not os.listdir(tdir), "no trace files")
    shutil.rmtree(tmp, ignore_errors=True)
    c.done()


def scenario_dir_removed(agent_bin, load):
    """The trace directory removed while the agent runs: made again by the
    next batch, said once, and the later batches are in it; before, every
    later batch was dropped until the agent stopped."""
    c = Checks()
    tmp = tempfile.mkdtemp(prefix="dc-tr-")
    tdir = os.path.join(tmp, "traces")
    a = Agent(agent_bin, 'interval = 0.25;\ntraces = { output = { dir = "%s"; }; sampling = '
              '{ one_in_n = 1; slow_ms = 0; rate = 0; }; };\n' % tdir)
    run_load(load, os.path.join(tmp, "data1"), 200)
    time.sleep(0.6)
    shutil.rmtree(tdir)
    time.sleep(0.3)
    pid = run_load(load, os.path.join(tmp, "data2"), 200)
    time.sleep(0.6)
    c.eq(a.stop(), 0, "agent exits 0")
    c.eq(a.log().count("The trace directory %s (or its current file) was removed while the "
                       "agent ran: made again" % tdir), 1, "the log says it, once")
    recs = read_traces(c, tdir)[1] if os.path.isdir(tdir) else []
    c.check(any(r.get("pid") == pid for r in recs),
            "the workload run after the removal has its events in the directory made again")
    shutil.rmtree(tmp, ignore_errors=True)
    c.done()


def main():
    name, agent_bin, load, export = sys.argv[1:5]
    require_root()
    if not shutil.which("zstd"):
        print("SKIP: the zstd command line tool is missing (packaging/install-deps.sh test)")
        sys.exit(77)
    if name == "bucket-weights":
        return scenario_bucket_weights(agent_bin, load)
    if name == "no-ring":
        return scenario_no_ring(agent_bin, load)
    if name == "dir-removed":
        return scenario_dir_removed(agent_bin, load)
    scenario(name, agent_bin, load, export)


if __name__ == "__main__":
    main()
