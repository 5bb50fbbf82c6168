# SPDX-License-Identifier: Apache-2.0
"""Run the datacrumbs agent under test and read what it wrote.

Readiness comes from the agent itself: the harness plays systemd's part and
listens on a NOTIFY_SOCKET for READY=1, so no test guesses with a sleep.
"""
import atexit
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

SKIP = 77

# What AddressSanitizer, LeakSanitizer and UndefinedBehaviorSanitizer print
# (the agent built with them: the 'san' suite, tests/meson.build), and the
# status they end a program with there (san_env), which also covers their
# failures that print none of these
SANITIZER_MARKS = ("runtime error:", "ERROR: AddressSanitizer", "ERROR: LeakSanitizer",
                   "Sanitizer has encountered a fatal error", "Sanitizer CHECK failed")
SANITIZER_EXIT = 86

# every Agent started here, for the check at exit
_agents = []


def sanitizer_report(text, returncode=None):
    """The first sanitizer report in a program's log, or None."""
    at = [i for i in (text.find(m) for m in SANITIZER_MARKS) if i >= 0]
    if not at:
        if returncode == SANITIZER_EXIT:
            return "(exit status %d, the sanitizers'; the log's end:)\n%s" % (
                returncode, text[-3000:])
        return None
    start = text.rfind("\n", 0, min(at)) + 1
    return text[start:start + 6000]


def run_checked(cmd, **kw):
    """subprocess.run() of the agent or a tool: a sanitizer report in what it
    printed, or the sanitizers' exit status, raises whatever status the
    caller expects (a bad-input case expects a failure)."""
    p = subprocess.run(cmd, **kw)
    err = p.stderr if isinstance(p.stderr, str) else (p.stderr or b"").decode(errors="replace")
    report = sanitizer_report(err, p.returncode)
    if report:
        raise RuntimeError("%s: the sanitizers reported:\n%s" % (os.path.basename(cmd[0]), report))
    return p


@atexit.register
def _sanitizers_at_exit():
    """A test that waited for its agent itself (or killed it) never called
    stop(): its log is read here, and a report fails the test."""
    for a in _agents:
        if a.checked:
            continue
        try:
            report = sanitizer_report(a.log(), a.proc.poll())
        except (OSError, ValueError):
            continue
        if report:
            sys.stdout.flush()
            print("FAIL - the agent's sanitizers reported:\n" + report, flush=True)
            os._exit(1)


@contextlib.contextmanager
def loop_device(tmp, mib=64, ext4_at=None):
    """A loop device over a sparse image in tmp (keep tmp off tmpfs for
    O_DIRECT); with ext4_at, an ext4 file system on it mounted there. Yields
    the device; unmounted and detached on the way out, whatever happened."""
    img = os.path.join(tmp, "disk.img")
    with open(img, "wb") as f:
        f.truncate(mib << 20)
    if ext4_at:
        subprocess.run(["mkfs.ext4", "-q", "-F", img], check=True)
    dev = subprocess.run(["losetup", "-f", "--show", img], capture_output=True, text=True,
                         check=True).stdout.strip()
    mounted = False
    try:
        if ext4_at:
            os.makedirs(ext4_at, exist_ok=True)
            subprocess.run(["mount", "-t", "ext4", dev, ext4_at], check=True)
            mounted = True
        yield dev
    finally:
        if mounted:
            subprocess.run(["umount", ext4_at])
        subprocess.run(["losetup", "-d", dev])
        # the image (tens of MiB, in /var/tmp) outlived every run before;
        # tmp goes too when the image was all it held
        os.unlink(img)
        try:
            os.rmdir(tmp)
        except OSError:
            pass


def evict(path):
    """Drop path's pages from the page cache, this file's only (a global
    drop_caches would also evict a workload's own interpreter pages, whose
    faults would then count as its misses), until none is resident
    (fincore, util-linux): a page the kernel still held (a CPU's batch not
    yet on the LRU, say) would not be read from the device, and a CI run
    once found 512 of 2048 still cached. Returns the bytes left resident."""
    resident = None
    for _ in range(20):
        fd = os.open(path, os.O_RDONLY)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)
        resident = int(subprocess.run(["fincore", "--bytes", "--noheadings", "--output", "RES",
                                       path], capture_output=True, text=True,
                                      check=True).stdout.split()[0])
        if not resident:
            break
        time.sleep(0.1)
    return resident


def require_root():
    if os.geteuid() != 0:
        print("SKIP: BPF tests need root (CAP_BPF, CAP_PERFMON)", flush=True)
        sys.exit(SKIP)


def cgroup2_root():
    """The cgroup2 mount point (a space in it as /proc/self/mounts escapes
    it), or None."""
    with open("/proc/self/mounts") as f:
        for line in f:
            dev, mnt, fstype = line.split()[:3]
            if fstype == "cgroup2":
                return mnt.replace("\\040", " ")
    return None


def die_with_parent():
    """In the agent's child before exec: SIGKILL when the test exits. A test
    that died on an exception left its agent running, attached for good:
    one holding the BPF statistics on (47 minutes, until found) failed a
    later run's bpf-selfcost."""
    import ctypes
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


class Agent:
    def __init__(self, binary, config_text="", args=(), stdout_file=None, env=None,
                 cli_output=True):
        self.tmp = tempfile.mkdtemp(prefix="dc-test-")
        self.out = os.path.join(self.tmp, "records.jsonl")
        self.conf = os.path.join(self.tmp, "datacrumbs.conf")
        if "traces" not in config_text:
            # sampled traces are on by default: keep their files in the test's directory
            config_text += '\ntraces = { output = { dir = "%s"; }; };\n' % os.path.join(
                self.tmp, "traces")
        if "budget" not in config_text:
            # the CPU budget would thin the traces of a test's heavy burst
            # on a slow machine; tests/bpf/test_budget.py tests it
            config_text += '\nbudget = { cpu = 0.0; };\n'
        with open(self.conf, "w") as f:
            f.write(config_text)
        sock_path = os.path.join(self.tmp, "notify")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(sock_path)
        e = dict(os.environ)
        e["NOTIFY_SOCKET"] = sock_path
        if env:
            e.update(env)
        cmd = [binary, "--config", self.conf]
        # cli_output=False: the configuration's output.path rules (reloadable)
        if cli_output and "-o" not in args and "--output" not in args:
            cmd += ["--output", self.out]
        cmd += list(args)
        self.stderr_path = os.path.join(self.tmp, "stderr")
        self.stderr = open(self.stderr_path, "w")
        self.proc = subprocess.Popen(cmd, env=e, stdout=stdout_file or subprocess.DEVNULL,
                                     stderr=self.stderr, preexec_fn=die_with_parent)
        self.notifications = []
        self._thread = None
        self.checked = False
        _agents.append(self)
        self.wait_for("READY=1", 60)

    def _reader(self):
        # systemd reads every notification; so must we, or the agent's
        # sendmsg() blocks once the socket's queue is full
        while True:
            try:
                msg = self.sock.recv(4096).decode()
            except OSError:
                return
            with self._lock:
                self.notifications.append(msg)

    def wait_for(self, what, timeout):
        """Wait for a notification carrying `what` after the one the last call found."""
        if not self._thread:
            self._lock = threading.Lock()
            self._cursor = 0
            self._thread = threading.Thread(target=self._reader, daemon=True)
            self._thread.start()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                msgs = self.notifications[self._cursor:]
            for i, msg in enumerate(msgs):
                if what in msg.split("\n"):
                    self._cursor += i + 1
                    return
            if self.proc.poll() is not None:
                raise RuntimeError("agent exited with %d before %s:\n%s"
                                   % (self.proc.returncode, what, self.log()))
            time.sleep(0.05)
        raise RuntimeError("agent did not send %s within %ds:\n%s" % (what, timeout, self.log()))

    def log(self):
        self.stderr.flush()
        with open(self.stderr_path, errors="replace") as f:
            return f.read()

    @property
    def pid(self):
        return self.proc.pid

    def stop(self, sig=signal.SIGTERM, timeout=30):
        self.proc.send_signal(sig)
        rc = self.proc.wait(timeout)
        self.sock.close()
        self.checked = True
        report = sanitizer_report(self.log(), rc)
        if report:
            raise RuntimeError("the agent's sanitizers reported:\n" + report)
        return rc

    def records(self, path=None):
        """Every line must be one JSON object (parsed by Python's json, not ours)."""
        recs = []
        with open(path or self.out, "rb") as f:
            for n, line in enumerate(f, 1):
                assert line.endswith(b"\n"), "line %d is not newline-terminated" % n
                recs.append(json.loads(line.decode("utf-8"), object_pairs_hook=unique_members))
        return recs


def unique_members(pairs):
    """A JSON object whose member names repeat reads as its last one in most
    parsers, losing the others: a record must never have one."""
    names = [k for k, _ in pairs]
    dup = sorted({k for k in names if names.count(k) > 1})
    assert not dup, "members named twice in one object: %s" % dup
    return dict(pairs)


def bpf_fds(pid):
    """The BPF maps and programs process pid holds: ("map", fdinfo) and
    ("prog", fdinfo) pairs, fdinfo a dict of its lines (map_id, prog_id,
    run_cnt: strings); a descriptor closed meanwhile is left out."""
    out = []
    fds = "/proc/%d/fd" % pid
    for fd in os.listdir(fds):
        try:
            kind = os.readlink(os.path.join(fds, fd))
            with open("/proc/%d/fdinfo/%s" % (pid, fd)) as f:
                info = dict(line.split(":", 1) for line in f if ":" in line)
        except OSError:
            continue
        if kind in ("anon_inode:bpf-map", "anon_inode:bpf-prog"):
            out.append((kind[len("anon_inode:bpf-"):], info))
    return out


def run_workload(binary, **kw):
    """Start the workload; returns the Popen. Its stdout is the measured child's pid."""
    cmd = [binary]
    for k, v in kw.items():
        cmd += ["--" + k.replace("_", "-"), v if isinstance(v, bytes) else str(v)]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE)


def workload_pid(p):
    out, _ = p.communicate(timeout=120)
    assert p.returncode == 0, "workload failed with %d" % p.returncode
    return int(out.decode().strip())


def workload_pid_start(p):
    """A workload run with --print-start 1: its child's pid, and the child's
    start as the agent reports it (proc_start_ns: /proc's ticks in ns)."""
    out, _ = p.communicate(timeout=120)
    assert p.returncode == 0, "workload failed with %d" % p.returncode
    pid, ticks = (int(x) for x in out.decode().split())
    return pid, ticks * (10 ** 9 // os.sysconf("SC_CLK_TCK"))


def expected_ops(iters=100, threads=1, size=4096, bad_opens=3, bad_reads=2, fsyncs=1, hops=0,
                 **_):
    """The workload's contract (tests/bpf/workload.c), per op: count, errors, bytes."""
    t = threads
    ops = {
        "openat": (t * (1 + bad_opens), t * bad_opens, 0),
        "pwrite64": (t * iters, 0, t * iters * size),
        "pread64": (t * (iters + bad_reads), t * bad_reads, t * iters * size),
        "lseek": (t, 0, 0),
        "writev": (t * iters, 0, t * iters * 1024),
        "fsync": (t * fsyncs, 0, 0),
        "close": (t, 0, 0),
    }
    if hops:
        ops["read"] = ops["write"] = (t * hops, 0, t * hops)
    return ops


def sum_ops(records, pid):
    """Sum a process's ops over every window."""
    tot = {}
    windows = set()
    for r in records:
        if r["type"] != "features" or r["pid"] != pid:
            continue
        windows.add(r["window"])
        for name, o in r["ops"].items():
            c = tot.setdefault(name, [0, 0, 0])
            c[0] += o["count"]
            c[1] += o["errors"]
            c[2] += o["bytes"]
    return {k: tuple(v) for k, v in tot.items()}, windows


class Checks:
    def __init__(self):
        self.failed = 0
        self.n = 0

    def check(self, cond, what):
        self.n += 1
        print(("ok" if cond else "FAIL") + " - " + what, flush=True)
        if not cond:
            self.failed += 1

    def eq(self, got, want, what):
        self.check(got == want, "%s: got %r, want %r" % (what, got, want))

    def done(self):
        print("%d checks, %d failed" % (self.n, self.failed))
        sys.exit(1 if self.failed else 0)


FEATURE_FIELDS = ["schema", "type", "host", "run", "boot", "window", "ts_start", "ts_end",
                  "duration_us", "pid", "comm", "exe", "cgroup_id", "cgroup", "job", "ops", "totals",
                  "derived"]
OP_FIELDS = ["class", "count", "errors", "bytes", "time_ns", "lat_p50_ns", "lat_p90_ns",
             "lat_p99_ns", "lat_hist"]


def check_schema(c, records):
    """Every record has the documented fields; histograms add up; windows tile."""
    bad = []
    for r in records:
        if r.get("schema") != 1:
            bad.append("schema %r" % r.get("schema"))
        if r["type"] == "features":
            for f in FEATURE_FIELDS:
                if f not in r:
                    bad.append("features record lacks %s" % f)
            for name, o in r["ops"].items():
                for f in OP_FIELDS:
                    if f not in o:
                        bad.append("op %s lacks %s" % (name, f))
                if sum(o["lat_hist"]) != o["count"]:
                    bad.append("%s: lat_hist sums to %d, count %d" % (name, sum(o["lat_hist"]), o["count"]))
                if "size_hist" in o and sum(o["size_hist"]) != o["count"] - o["errors"]:
                    bad.append("%s: size_hist sums to %d, successful calls %d"
                               % (name, sum(o["size_hist"]), o["count"] - o["errors"]))
                if not (o["lat_p50_ns"] <= o["lat_p90_ns"] <= o["lat_p99_ns"]):
                    bad.append("%s: quantiles not ordered" % name)
    c.check(not bad, "records match the documented schema" + ("" if not bad else ": " + "; ".join(bad[:5])))
    agents = [r for r in records if r["type"] == "agent"]
    # a time the agent took is under a minute: a difference taken the
    # wrong way round wraps to about 2^64
    odd = [(r["window"], k, v) for r in agents for k, v in r["cost"].items()
           if k.endswith("_us") and isinstance(v, int) and not 0 <= v < 60 * 10**6]
    c.check(not odd, "the agent's own times (cost.*_us) are each under a minute (%s)" % odd[:3])
    seqs = [r["window"] for r in agents]
    c.eq(seqs, list(range(len(seqs))), "one agent record per window, sequence without gaps")
    tiles = all(agents[i]["ts_start"] == agents[i - 1]["ts_end"] for i in range(1, len(agents)))
    c.check(tiles, "each window starts where the previous ended")
    feats_after = [r for r in records if r["type"] == "features" and r["window"] not in seqs]
    c.check(not feats_after, "every features record belongs to a published window")
    # the window's losses that may be any process's, in each of its records
    # (docs/records.md window_losses): there exactly when the agent record has them
    lost = {r["window"]: {"map_full": r["losses"]["map_full"],
                          "recursion_misses": r["losses"]["recursion_misses"]}
            for r in agents}
    wrong = [(r["window"], r["pid"], r.get("window_losses"), lost[r["window"]])
             for r in records if r["type"] == "features" and r["window"] in lost and
             r.get("window_losses", {"map_full": 0, "recursion_misses": 0}) != lost[r["window"]]]
    c.check(not wrong, "each features record carries its window's map-full and recursion "
            "losses, where there were any (window, pid, record's, agent's): %s" % wrong[:3])
