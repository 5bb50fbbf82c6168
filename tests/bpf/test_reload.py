#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Supervision: SIGHUP reload (applied where the configuration changed, no
window lost, a bad file refused while the old one keeps running), STATUS=,
and the watchdog pings, through the sd_notify socket as systemd sees them.

usage: test_reload.py AGENT WORKLOAD
"""
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from agentlib import (Agent, Checks, die_with_parent, require_root, run_workload,  # noqa: E402
                      sanitizer_report, workload_pid)

BASE = 'interval = 0.2;\ntraces = { sampling = { one_in_n = 10; }; output = { dir = "%s"; }; };\n'


def prog_ids(pid):
    """The BPF programs the agent holds: prog_id of its program and link fds."""
    ids = set()
    d = "/proc/%d/fdinfo" % pid
    for fd in os.listdir(d):
        try:
            with open(os.path.join(d, fd)) as f:
                for line in f:
                    if line.startswith("prog_id:"):
                        ids.add(int(line.split()[1]))
        except OSError:
            pass
    return ids


def hup(c, a, label):
    """SIGHUP, then RELOADING=1 and READY=1 again, as systemd's reload waits for."""
    n = len(a.notifications)
    a.proc.send_signal(signal.SIGHUP)
    a.wait_for("READY=1", 60)
    msgs = "\n".join(a.notifications[n:])
    c.check("RELOADING=1" in msgs and "MONOTONIC_USEC=" in msgs,
            "%s: RELOADING=1 with MONOTONIC_USEC, then READY=1" % label)
    return msgs


def full_disk(c, agent_bin):
    """Records a full disk kept from the output file (/dev/full: every write
    ENOSPC) move with a reload to the new output.path, in order, none lost."""
    a = Agent(agent_bin, 'interval = 0.2;\noutput = { path = "/dev/full"; };\n',
              cli_output=False)
    time.sleep(1.5)
    moved = os.path.join(a.tmp, "moved.jsonl")
    with open(a.conf, "w") as f:
        f.write('interval = 0.2;\noutput = { path = "%s"; };\n' % moved)
    hup(c, a, "output moved off a full disk")
    time.sleep(0.6)
    # logrotate's way: the file moved away, then a reload with the same file
    os.rename(moved, moved + ".1")
    hup(c, a, "after a rotation")
    time.sleep(0.6)
    c.eq(a.stop(), 0, "agent exits 0")
    old = [r["window"] for r in a.records(moved + ".1") if r["type"] == "agent"]
    new = [r["window"] for r in a.records(moved) if r["type"] == "agent"] \
        if os.path.exists(moved) else []
    c.check(len(old) >= 8 and old == list(range(len(old))),
            "the new file holds every window from 0, in order (%s)" % old)
    c.check(len(new) >= 2 and new == list(range(len(old), len(old) + len(new))),
            "after the rotation the reopened file goes on from the next window (%s)" % new)
    c.check("could not write go to" in a.log(), "the log says where they went")


def stop_status(c, a):
    """The 16 KiB disk may fill again before the stop: exit 74 exactly when
    the log says records were lost there, else 0."""
    rc = a.stop()
    lost = "lost after the last agent record" in a.log()
    c.eq(rc, 74 if lost else 0, "agent exits %s" % ("74: records lost at the stop" if lost
                                                    else "0"))


def cut_records(c, agent_bin):
    """A disk that fills mid-record leaves the file ending with a whole line
    (the part written taken back out), and a file found ending mid-record
    (an agent killed meanwhile, a crash) is cut back to its last whole line
    before anything is appended: no record glued onto a fragment."""
    mnt = tempfile.mkdtemp(prefix="dc-full-")
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16k", "tmpfs", mnt], check=True)
    try:
        out = os.path.join(mnt, "records.jsonl")
        a = Agent(agent_bin, "interval = 0.2;\n", args=["--output", out])
        time.sleep(2)
        # the disk still full at the stop: the records the file could not
        # take are lost, which no agent record can say
        c.eq(a.stop(), 74, "agent exits 74 at a full disk: records lost at the stop")
        closing = re.search(r"Closing \S+ with (\d+) records \((\d+) bytes\) it could not "
                            r"write: they are lost", a.log())
        stopped = re.search(r"Stopped with (\d+) records lost after the last agent record "
                            r"\(0 shed by the full spool, (\d+) bytes of the output file's\): "
                            r"exit status 74", a.log())
        c.check(closing and stopped and closing.groups() == stopped.groups()
                and int(closing.group(1)) > 0,
                "... said, with how many (%s, %s)" % (closing and closing.group(0),
                                                      stopped and stopped.group(0)))
        data = open(out, "rb").read()
        c.check("No space left" in a.log() and len(data) > 0 and data.endswith(b"\n"),
                "a disk full mid-record: the file ends with a whole line (%r)" % data[-20:])
        c.check(all(json.loads(line) for line in data.splitlines()),
                "... every line of it a whole record")
        frag = b'{"schema":1,"type":"features","ho'
        with open(out, "wb") as f:
            f.write(b'{"kept":1}\n' + frag)
        a = Agent(agent_bin, "interval = 0.2;\n", args=["--output", out])
        time.sleep(0.5)
        stop_status(c, a)
        lines = open(out, "rb").read().splitlines()
        c.check(lines[0] == b'{"kept":1}' and all(json.loads(x) for x in lines)
                and "cut short (%d bytes" % len(frag) in a.log(),
                "a file found ending with one of the agent's records cut short is cut back to "
                "its last whole line, and said (%r)" % lines[:2])
        # not the agent's: kept, ended with a newline
        with open(out, "wb") as f:
            f.write(b"notes\nno newline")
        a = Agent(agent_bin, "interval = 0.2;\n", args=["--output", out])
        time.sleep(0.5)
        stop_status(c, a)
        lines = open(out, "rb").read().splitlines()
        c.check(lines[:2] == [b"notes", b"no newline"] and all(json.loads(x) for x in lines[2:])
                and len(lines) > 2,
                "a file ending mid-line with something else keeps it, ended with a newline "
                "(%r)" % lines[:3])
    finally:
        subprocess.run(["umount", mnt])


def fifo_reader_gone(c, agent_bin):
    """Records to a FIFO whose reader goes away: write errors the sink keeps
    retrying (bounded), not the agent killed by SIGPIPE, which a shell or
    Python leaves at its default where systemd does not; what it still held
    at the stop is lost, and the exit status says so."""
    d = tempfile.mkdtemp(prefix="dc-fifo-")
    fifo = os.path.join(d, "records")
    os.mkfifo(fifo)
    reader = subprocess.Popen(["head", "-c", "2000", fifo], stdout=subprocess.DEVNULL)
    a = Agent(agent_bin, "interval = 0.2;\n", args=["--output", fifo])
    reader.wait(30)
    time.sleep(1)
    # what the sink held for the reader that never came back is lost at
    # the stop: exit 74 (not killed by SIGPIPE, which would be -13)
    c.eq(a.stop(), 74, "agent exits 74 after its FIFO's reader went away: records lost")
    c.check("Broken pipe" in a.log() and "lost after the last agent record" in a.log(),
            "... the write error and the loss said")


def rotated_without_reload(c, agent_bin):
    """The records file moved away, as logrotate does, with no SIGHUP after
    (logrotate's reload is gone: it failed on a broken configuration, which
    left every later record in the moved file, and applied edits not yet
    meant to): the agent opens the path again by itself, moved with no new
    file (nocreate) and with one made (create); every window in one of the
    files, in order."""
    d = tempfile.mkdtemp(prefix="dc-rotate-")
    path = os.path.join(d, "records.jsonl")
    a = Agent(agent_bin, 'interval = 0.2;\noutput = { path = "%s"; };\n' % path,
              cli_output=False)
    time.sleep(1.0)
    os.rename(path, path + ".1")
    time.sleep(1.0)
    os.rename(path, path + ".2")
    # made aside and moved in (an open(path, "w") would empty a file the
    # agent made there first), ending mid-line: ended with a newline, as
    # at a start, before the next record
    with open(path + ".new", "w") as f:
        f.write("notes")
    os.rename(path + ".new", path)
    time.sleep(1.0)
    c.eq(a.stop(), 0, "rotation: agent exits 0")
    with open(path, "rb") as f:
        moved_in = f.read()
    c.check(moved_in.startswith(b"notes\n{"), "the file moved in ending mid-line is ended "
            "with a newline before the records (%r)" % moved_in[:12])
    with open(path, "wb") as f:
        f.write(moved_in[len(b"notes\n"):])
    wins = [[r["window"] for r in a.records(p) if r["type"] == "agent"]
            for p in (path + ".1", path + ".2", path)]
    flat = [w for ws in wins for w in ws]
    c.check(all(len(ws) >= 2 for ws in wins) and flat == list(range(len(flat))),
            "rotated twice without a reload: each file holds the windows of its time, "
            "together every window from 0 in order (%s)" % wins)
    c.eq(a.log().count("was moved away (rotated)"), 2, "the log says each move once")


class Bare:
    """The agent started by hand, for what Agent() cannot do (a config on
    standard input, a signal before READY=1): its notify socket read here.
    conf: the configuration's text, written to a file, or with stdin_conf
    written to the agent's standard input (-c /dev/stdin)."""

    def __init__(self, agent_bin, conf, stdin_conf=False):
        self.tmp = tempfile.mkdtemp(prefix="dc-bare-")
        self.out = os.path.join(self.tmp, "records.jsonl")
        conf = ('interval = 0.2;\nbudget = { cpu = 0.0; };\n'
                'traces = { output = { dir = "%s"; }; };\n' % os.path.join(self.tmp, "tr") + conf)
        path = "/dev/stdin"
        if not stdin_conf:
            path = os.path.join(self.tmp, "datacrumbs.conf")
            with open(path, "w") as f:
                f.write(conf)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(os.path.join(self.tmp, "notify"))
        self.sock.settimeout(60)
        self.err = open(os.path.join(self.tmp, "stderr"), "w+")
        self.proc = subprocess.Popen(
            [agent_bin, "-c", path, "-o", self.out],
            stdin=subprocess.PIPE if stdin_conf else None, stdout=subprocess.DEVNULL,
            stderr=self.err, preexec_fn=die_with_parent,
            env=dict(os.environ, NOTIFY_SOCKET=os.path.join(self.tmp, "notify")))
        if stdin_conf:
            self.proc.stdin.write(conf.encode())
            self.proc.stdin.close()

    def until_ready(self):
        """The notifications up to the next READY=1, joined."""
        msgs = []
        while not any("READY=1" in m.split("\n") for m in msgs):
            msgs.append(self.sock.recv(4096).decode())
        return "\n".join(msgs)

    def stop(self):
        """(exit status, the log); a sanitizer's report raised."""
        self.proc.send_signal(signal.SIGTERM)
        rc = self.proc.wait(30)
        self.sock.close()
        self.err.seek(0)
        log = self.err.read()
        report = sanitizer_report(log, rc)
        if report:
            raise RuntimeError("the agent's sanitizers reported:\n" + report)
        return rc, log

    def windows_us(self):
        with open(self.out) as f:
            return [json.loads(l)["duration_us"] for l in f if '"type":"agent"' in l]


def sig_blocked(pid, sig):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("SigBlk:"):
                return bool(int(line.split()[1], 16) >> (sig - 1) & 1)
    return False


def hup_during_start(c, agent_bin):
    """A SIGHUP while the agent starts (systemctl kill -s HUP, a plain kill;
    the start takes seconds with many library functions or brokers that do
    not answer) waits for the event loop, which reloads, where it killed
    the agent (exit 129) with window 0's counts in its maps. Sent as soon
    as the agent blocks it, before READY=1."""
    b = Bare(agent_bin, "")
    t0 = time.monotonic()
    while not sig_blocked(b.proc.pid, signal.SIGHUP) and time.monotonic() - t0 < 10:
        time.sleep(0.001)
    b.proc.send_signal(signal.SIGHUP)
    b.sock.settimeout(0)
    try:
        early = b.sock.recv(4096).decode()
    except BlockingIOError:
        early = ""
    b.sock.settimeout(60)
    c.check("READY=1" not in early.split("\n"), "the SIGHUP was sent before READY=1 (%r)" % early)
    try:
        b.until_ready()
        after = b.until_ready()
    except (socket.timeout, OSError) as e:
        after = "no second READY=1: %s" % e
    c.check("RELOADING=1" in after, "a SIGHUP during the start: reloaded once the loop runs "
            "(%r)" % after[:200])
    time.sleep(0.6)
    alive = b.proc.poll() is None
    rc, log = b.stop()
    c.check(alive and rc == 0, "... the agent runs on and exits 0 (exit %s: %s)"
            % (rc, log.strip().split("\n")[-1:]))
    c.check(len(b.windows_us()) >= 3, "... its windows written (%s)" % b.windows_us())


def pipe_config_reload(c, agent_bin):
    """A configuration read from a pipe (-c /dev/stdin) cannot be read again:
    a reload is refused and says why, where the empty pipe used to read as a
    file of defaults (traces and the VFS layer back on, written to
    /var/lib/datacrumbs)."""
    b = Bare(agent_bin, "", stdin_conf=True)
    b.until_ready()
    b.proc.send_signal(signal.SIGHUP)
    msgs = b.until_ready()
    time.sleep(1.0)
    rc, log = b.stop()
    c.eq(rc, 0, "pipe reload: agent exits 0")
    c.check("reload refused" in msgs and "/dev/stdin is not a regular file but a pipe" in log,
            "a reload of a configuration read from a pipe refused, and why (%r)" % log[-300:])
    durs = b.windows_us()
    c.check(len(durs) >= 6 and all(abs(x - 200000) < 60000 for x in durs[-3:-1]),
            "the pipe's configuration kept: 0.2 s windows after the refused reload (%s)"
            % durs[-4:])


def main():
    agent_bin, wl_bin = sys.argv[1:3]
    require_root()
    c = Checks()
    env = {"WATCHDOG_USEC": "3000000"}
    a = Agent(agent_bin, "", env=env)
    tdir = os.path.join(a.tmp, "traces")
    with open(a.conf, "w") as f:
        f.write(BASE % tdir)
    # the first start read an empty file: load the base one
    hup(c, a, "first reload")
    mine = prog_ids(a.pid)
    c.check(len(mine) > 0, "the agent's programs are listed (%d)" % len(mine))

    # 1. interval and trace sampling: in place, the programs stay
    with open(a.conf, "w") as f:
        f.write((BASE % tdir).replace("0.2", "0.5").replace("one_in_n = 10", "one_in_n = 1000"))
    hup(c, a, "interval")
    time.sleep(1.6)
    after = prog_ids(a.pid)
    c.eq(after, mine, "interval and sampling changed without reloading any program")

    # 2. a probe family switched off and on: a workload across the reload is
    # counted exactly, so no window was lost
    p = dict(iters=3000, threads=2, size=4096, pause_ms=800, dir=a.tmp)
    w = run_workload(wl_bin, **p)
    time.sleep(0.3)
    with open(a.conf, "w") as f:
        f.write((BASE % tdir).replace("0.2", "0.5") + "probes = { block = { enable = false; }; };\n")
    hup(c, a, "block off")
    pid = workload_pid(w)

    # 3. a broken file: refused, the old configuration keeps running
    with open(a.conf, "w") as f:
        f.write("interval = 0.05;\nthis is not libconfig\n")
    msgs = hup(c, a, "broken file")
    c.check("reload refused" in msgs, "STATUS says the reload was refused")
    time.sleep(1.2)
    c.check(a.proc.poll() is None, "the agent runs on after a refused reload")
    c.check("Reload refused" in a.log(), "the log says why")
    # 4. half of a reload cannot apply (a new host name, a trace directory
    # that cannot be made, though nothing in its way shows before: sysfs
    # refuses the mkdir): none of it does, the host included
    off = "probes = { block = { enable = false; }; };\n"
    with open(a.conf, "w") as f:
        f.write((BASE % "/sys/dc-no-traces").replace("0.2", "0.5") + off +
                'host = "dc-reload-mix";\n')
    msgs = hup(c, a, "half-applicable")
    c.check("failed to open the new outputs" in msgs, "STATUS says the outputs could not open")
    # 5. a trace policy this node cannot build (no such cgroup), beside a new
    # interval: refused before anything changes
    with open(a.conf, "w") as f:
        f.write((BASE % tdir).replace("0.2", "0.3").replace(
            "one_in_n = 10;", 'one_in_n = 10; full_cgroups = ["/dc-no-such-cgroup-%d"];'
            % os.getpid()) + off)
    msgs = hup(c, a, "unbuildable trace policy")
    c.check("reload refused" in msgs and "no cgroup" in msgs,
            "STATUS says the reload was refused, and why")
    time.sleep(1.2)
    c.check(any("WATCHDOG=1" in n for n in a.notifications), "watchdog pings while windows close")
    c.check(any(n.startswith("STATUS=") or "\nSTATUS=" in n and "calls/s" in n
                for n in a.notifications), "STATUS= keeps the rate and the probes current")
    c.eq(a.stop(), 0, "agent exits 0")
    recs = a.records()
    agents = [r for r in recs if r["type"] == "agent"]
    durs = [r["duration_us"] for r in agents]
    c.check(any(abs(d - 500000) < 60000 for d in durs[-3:-1]),
            "windows are 0.5 s after the reload, also after the refused one (%s)" % durs[-4:])
    c.eq(sorted({r["host"] for r in recs}), [agents[0]["host"]],
         "no record carries the host of the reload that could not apply")
    blk = [any(p["name"] == "block" for p in r["probes"]) for r in agents]
    full_disk(c, agent_bin)
    cut_records(c, agent_bin)
    fifo_reader_gone(c, agent_bin)
    rotated_without_reload(c, agent_bin)
    pipe_config_reload(c, agent_bin)
    hup_during_start(c, agent_bin)
    c.check(True in blk and blk[-1] is False, "the block layer went off at the reload")
    got = sum(r["ops"].get("pwrite64", {}).get("count", 0) for r in recs
              if r["type"] == "features" and r["pid"] == pid)
    c.eq(got, p["threads"] * p["iters"], "pwrite64 calls across the reload all counted")
    c.done()


if __name__ == "__main__":
    main()
