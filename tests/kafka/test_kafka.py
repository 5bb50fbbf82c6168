#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Kafka publishing against a Kafka-protocol broker (librdkafka's mock
cluster, tests/kafka/mock-broker.c), consumed with kcat, an independent client.

usage: test_kafka.py SCENARIO AGENT WORKLOAD MOCK_BROKER
"""
import contextlib
import io
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bpf"))
from agentlib import (Agent, Checks, require_root, run_checked, run_workload,  # noqa: E402
                      workload_pid)

TOPICS = ["datacrumbs.features", "datacrumbs.agent", "datacrumbs.traces"]


class Broker:
    def __init__(self, binary, topics=TOPICS, partitions=1):
        self.p = subprocess.Popen([binary, "--partitions", str(partitions)] + topics,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = self.p.stdout.readline().split()
        assert line and line[0] == "bootstrap", "mock broker did not start"
        self.bootstrap = line[1]

    def cmd(self, c):
        self.p.stdin.write(c + "\n")
        self.p.stdin.flush()
        assert self.p.stdout.readline().strip() == "ok " + c

    def close(self):
        self.p.stdin.close()
        self.p.wait(10)


def consume(bootstrap, topic):
    """Every message of a topic, from the beginning, as kcat decodes it."""
    out = subprocess.run(["kcat", "-b", bootstrap, "-C", "-t", topic, "-o", "beginning", "-e",
                          "-J", "-q"], capture_output=True, text=True, timeout=60)
    msgs = []
    for line in out.stdout.splitlines():
        m = json.loads(line)
        h = m.get("headers") or []
        m["hdr"] = dict(zip(h[0::2], h[1::2]))
        m["rec"] = json.loads(m["payload"])
        msgs.append(m)
    return msgs


def conf(bootstrap, spool, interval=0.2, extra="", out='output = { path = ""; };', spool_extra="",
         traces=False):
    # the feature-path scenarios count windows and segments: trace batches
    # (their own segments) are tested in scenario_traces
    return ('interval = %s;\n%s\nkafka = { brokers = "%s"; %s };\nspool = { dir = "%s"; %s };\n%s'
            % (interval, out, bootstrap, extra, spool, spool_extra,
               "" if traces else "traces = { enable = false; };\n"))


def windows_by_run(msgs):
    runs = {}
    for m in msgs:
        runs.setdefault(m["hdr"]["run"], []).append(int(m["hdr"]["window"]))
    return runs


def wait_spool_empty(spool, timeout, ignore=()):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if not [f for f in os.listdir(spool) if f.endswith(".seg") and f not in ignore]:
                return True
        except FileNotFoundError:
            pass  # removed (scenario_spool_removed): not delivered, gone
        time.sleep(0.2)
    return False


def spool_bytes(spool):
    """Bytes of the segments now in the spool (one may vanish while we look)."""
    total = 0
    for f in os.listdir(spool):
        if f.endswith(".seg"):
            try:
                total += os.path.getsize(os.path.join(spool, f))
            except FileNotFoundError:
                pass
    return total


def check_dups(c, msgs, label):
    """A duplicate is the same (host, run, window, type, pid, cgroup, device, file) with the
    same payload."""
    seen, bad, dups = {}, 0, 0
    for m in msgs:
        # a window has one record per process, per device, per (process, file)
        k = rec_key(m["rec"])
        if k in seen:
            dups += 1
            bad += seen[k] != m["payload"]
        seen[k] = m["payload"]
    c.eq(bad, 0, "%s: %d duplicates, each identical to its first copy" % (label, dups))


def check_run(c, runs, run, label, allow_missing=()):
    w = runs.get(run, [])
    c.check(len(w) > 0, "%s: windows arrived (%d messages)" % (label, len(w)))
    if not w:
        return
    uniq = sorted(set(w))
    missing = sorted(set(range(0, max(w) + 1)) - set(w) - set(allow_missing))
    c.eq(missing, [], "%s: no window missing in 0..%d" % (label, max(w)))
    first_seen = []
    for x in w:
        if x not in first_seen:
            first_seen.append(x)
    c.check(first_seen == uniq, "%s: windows in order within the partition" % label)


def scenario_deliver(agent_bin, wl_bin, mock_bin):
    """Every record the agent wrote locally also arrives through Kafka, keyed and headed."""
    c = Checks()
    tmp = tempfile.mkdtemp(prefix="dc-kafka-")
    b = Broker(mock_bin)
    spool = os.path.join(tmp, "spool")
    a = Agent(agent_bin, conf(b.bootstrap, spool, out=""))  # file sink on too: the reference
    pid = workload_pid(run_workload(wl_bin, iters=300, threads=2, dir=tmp))
    time.sleep(0.5)
    c.eq(a.stop(), 0, "agent exits 0")
    # systemd's stop timeout (90 s by default) extended by the flush's own
    # (kafka.flush_timeout, 5 s by default, up to 300) plus the last window's
    with a._lock:
        stopping = [n for n in a.notifications if "STOPPING=1" in n.split("\n")]
    c.check(stopping and "EXTEND_TIMEOUT_USEC=35000000" in stopping[0].split("\n"),
            "STOPPING=1 extends systemd's stop timeout by the flush's: %r" % stopping)
    # and again once the probes are off, just before the flush: a long
    # detach (perf-event uprobes) leaves the flush all of its time
    with a._lock:
        after = a.notifications[a.notifications.index(stopping[0]) + 1:] if stopping else []
    c.check(any(n.split("\n") == ["EXTEND_TIMEOUT_USEC=35000000"] for n in after),
            "... and again before the flush, once the probes are off: %r" % after)
    local = a.records()
    feats = consume(b.bootstrap, "datacrumbs.features")
    agents = consume(b.bootstrap, "datacrumbs.agent")
    sig = lambda r: (r["type"], r["run"], r["window"], r.get("pid"), r.get("cgroup_id"))  # noqa: E731
    c.eq(sorted(sig(m["rec"]) for m in feats + agents), sorted(sig(r) for r in local),
         "Kafka carries exactly the records written locally (%d)" % len(local))
    c.check(all(m["rec"] == r for m, r in zip(
        sorted(feats + agents, key=lambda m: sig(m["rec"])), sorted(local, key=sig))),
        "payloads are identical to the local records")
    host = local[0]["host"]
    ok_hdr = all(m["key"] == host and m["hdr"]["host"] == m["rec"]["host"] and
                 m["hdr"]["run"] == m["rec"]["run"] and int(m["hdr"]["window"]) == m["rec"]["window"]
                 and m["hdr"]["type"] == m["rec"]["type"] and m["hdr"]["schema"] == "1" and
                 m["hdr"]["content-encoding"] == "json" for m in feats + agents)
    c.check(ok_hdr, "key = host; headers host, run, window, schema, type, content-encoding match")
    c.check(all(m["topic"] == "datacrumbs.features" and m["rec"]["type"] in ("features", "device")
                for m in feats), "feature vectors (process and device) on datacrumbs.features")
    c.check(any(m["rec"].get("pid") == pid for m in feats), "the workload's records are there")
    last = agents[-1]["rec"]["sinks"]["kafka"]
    c.check(last["delivered"] > 0 and last["delivery_errors"] == 0,
            "agent record reports deliveries (%d) and no errors" % last["delivered"])
    c.check(wait_spool_empty(spool, 5), "spool empty once everything is delivered")
    b.close()
    c.done()


def outage_start(agent_bin, mock_bin, interval):
    """A broker, an agent spooling to a new directory, 1 s of windows
    delivered, then the broker down: (broker, spool, agent)."""
    b = Broker(mock_bin)
    spool = os.path.join(tempfile.mkdtemp(prefix="dc-kafka-"), "spool")
    a = Agent(agent_bin, conf(b.bootstrap, spool, interval=interval))
    time.sleep(1)
    b.cmd("down")
    return b, spool, a


def scenario_outage(agent_bin, wl_bin, mock_bin, seconds=30):
    """Broker down 30 s under 100 ms windows: afterwards every window is there, in order."""
    c = Checks()
    b, spool, a = outage_start(agent_bin, mock_bin, 0.1)
    time.sleep(seconds)
    spooled = len([f for f in os.listdir(spool) if f.endswith(".seg")])
    c.check(spooled >= seconds * 10 * 0.8, "windows spooled during the outage (%d segments)" % spooled)
    # what systemctl status shows (it said "kafka up, spool 0 KiB" throughout)
    with a._lock:
        status = [n for n in a.notifications if "STATUS=" in n][-1]
    m = re.search(r"kafka brokers down, (\d+) segments undelivered, (\d+) KiB in the spool", status)
    c.check(m is not None and int(m.group(1)) > 10 and int(m.group(2)) > 0,
            "STATUS= says the brokers are down and how much waits: %s"
            % (m.group(0) if m else status))
    b.cmd("up")
    c.check(wait_spool_empty(spool, 60), "spool drained after the broker returned")
    c.eq(a.stop(), 0, "agent exits 0")
    agents = consume(b.bootstrap, "datacrumbs.agent")
    runs = windows_by_run(agents)
    c.eq(len(runs), 1, "one run")
    run = list(runs)[0]
    check_run(c, runs, run, "agent records")
    check_dups(c, agents + consume(b.bootstrap, "datacrumbs.features"), "outage")
    n = max(runs[run]) + 1
    c.check(n >= (seconds + 1) * 10 * 0.9, "%d windows for a %d s run" % (n, seconds + 1))
    down = [m["rec"] for m in agents if not m["rec"]["sinks"]["kafka"]["brokers_up"]]
    c.check(len(down) > 0 and max(r["sinks"]["kafka"]["spool_segments"] for r in down) > 10,
            "agent records made during the outage say so and show the spool growing")
    b.close()
    c.done()


def vmrss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        return int(next(line for line in f if line.startswith("VmRSS")).split()[1])


def scenario_outage_memory(agent_bin, wl_bin, mock_bin, seconds=15):
    """An outage under a busy node: the spooled windows wait on disk, not in
    the agent's memory. Sealed windows used to stay loaded until delivered:
    an 8 MiB spool held 190 MB more RSS after 40 s (an audit); the records
    are now read back from the spool when their turn comes. Everything still
    arrives once the broker is back."""
    c = Checks()
    tmp = tempfile.mkdtemp(prefix="dc-kafka-")
    b = Broker(mock_bin)
    spool = os.path.join(tmp, "spool")
    a = Agent(agent_bin, conf(b.bootstrap, spool, interval=0.2, spool_extra="max_mib = 64;"))
    # short processes, each its own features record every window
    load = [subprocess.Popen(["sh", "-c", "while :; do cat /etc/hostname >/dev/null; "
                              "head -c 4096 /etc/services >/dev/null; done"]) for _ in range(3)]
    try:
        time.sleep(3)
        b.cmd("down")
        rss0 = vmrss_kib(a.pid)
        # the shells' records a second follow the host's speed (1.1 to
        # 1.3 MB in 15 s on a slow day, 2 MiB and more on others): the
        # outage lasts until the spool holds enough to tell, 60 s at most
        start = time.monotonic()
        time.sleep(seconds)
        while spool_bytes(spool) <= 2 << 20 and time.monotonic() - start < 60:
            time.sleep(0.5)
        seconds = round(time.monotonic() - start)
        grown = vmrss_kib(a.pid) - rss0
        spooled = spool_bytes(spool)
    finally:
        for p in load:
            p.kill()
            p.wait()
    c.check(spooled > 2 << 20, "the outage spooled %d bytes" % spooled)
    c.check(grown < 40 << 10, "the agent's RSS grew %d KiB over the %d s outage (under 40 MiB: "
            "librdkafka's queue and the next windows to produce, not the spool)" % (grown, seconds))
    b.cmd("up")
    c.check(wait_spool_empty(spool, 90), "spool drained after the broker returned")
    c.eq(a.stop(), 0, "agent exits 0")
    runs = windows_by_run(consume(b.bootstrap, "datacrumbs.agent"))
    check_run(c, runs, list(runs)[0], "agent records")
    b.close()
    c.done()


def scenario_reload_outage(agent_bin, wl_bin, mock_bin):
    """A reload that restarts the Kafka sink while the brokers are down holds
    neither the event loop nor the window: no final flush against brokers
    that are down (the spool holds everything), no wait for the new sink's
    topic check. It waited kafka.flush_timeout plus kafka.start_timeout, 8 s
    (an audit), the BPF maps filling meanwhile. Every window arrives after."""
    c = Checks()
    b, spool, a = outage_start(agent_bin, mock_bin, 0.2)
    time.sleep(3)
    with open(a.conf, "w") as f:
        f.write(conf(b.bootstrap, spool, interval=0.2, extra="flush_timeout = 4.0;"))
    a.proc.send_signal(signal.SIGHUP)
    # a second reload moments later, of a sink that may not yet have heard
    # from librdkafka that the brokers are down: it is believed down from
    # its start (not reproduced here: librdkafka said so within 50 ms)
    time.sleep(0.05)
    with open(a.conf, "w") as f:
        f.write(conf(b.bootstrap, spool, interval=0.2, extra="flush_timeout = 5.0;"))
    a.proc.send_signal(signal.SIGHUP)
    time.sleep(3)
    c.eq(a.log().count("Reloaded the configuration"), 2, "both reloads taken")
    b.cmd("up")
    c.check(wait_spool_empty(spool, 60), "spool drained after the broker returned")
    c.eq(a.stop(), 0, "agent exits 0")
    agents = consume(b.bootstrap, "datacrumbs.agent")
    longest = max(m["rec"]["duration_us"] for m in agents if m["rec"]["window"] > 0)
    c.check(longest < 1500000, "no window held by the reload: the longest after window 0 "
            "lasted %d us (windows of 0.2 s)" % longest)
    runs = windows_by_run(agents)
    check_run(c, runs, list(runs)[0], "agent records")
    b.close()
    c.done()


def scenario_reload_spool_moved(agent_bin, wl_bin, mock_bin):
    """A reload during an outage that moves spool.dir: the old directory's
    undelivered segments stay where they are (no later sink reads them) and
    the log says so, where it said they "are sent at the next start" (a
    bad-input audit); a reload back to it delivers them."""
    c = Checks()
    b, spool, a = outage_start(agent_bin, mock_bin, 0.2)
    spool2 = os.path.join(os.path.dirname(spool), "spool2")
    time.sleep(1)
    with open(a.conf, "w") as f:
        f.write(conf(b.bootstrap, spool2, interval=0.2))
    a.proc.send_signal(signal.SIGHUP)
    time.sleep(1)
    left = len(segs(spool))
    c.check(left > 0, "the old spool keeps its undelivered segments (%d)" % left)
    c.check(re.search(r"Stopping with %d spool segments \(\d+ bytes\) not yet delivered in %s: "
                      r"spool\.dir is now %s, so they wait there" % (left, re.escape(spool),
                                                                     re.escape(spool2)),
                      a.log()) is not None,
            "the log says they wait in the old directory, naming both")
    c.check("they are sent at the next start" not in a.log(), "... not that the next start sends them")
    with open(a.conf, "w") as f:
        f.write(conf(b.bootstrap, spool, interval=0.2))
    a.proc.send_signal(signal.SIGHUP)
    time.sleep(0.5)
    b.cmd("up")
    c.check(wait_spool_empty(spool, 60), "back on the old directory, its segments are delivered")
    c.eq(a.stop(), 0, "agent exits 0")
    b.close()
    shutil.rmtree(os.path.dirname(spool), ignore_errors=True)
    c.done()


def tmpfs_spool(size):
    """(a new directory, a spool in it on a tmpfs of SIZE): the caller unmounts."""
    tmp = tempfile.mkdtemp(prefix="dc-kafka-")
    spool = os.path.join(tmp, "spool")
    os.mkdir(spool)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=" + size, "tmpfs", spool], check=True)
    return tmp, spool


def scenario_reload_full(agent_bin, wl_bin, mock_bin):
    """A reload during an outage with the spool's disk full: the records only
    memory held, that the disk still cannot take, are lost with the old
    sink, said, and counted in the next agent record's
    losses.sink_dropped_records (they were in none)."""
    c = Checks()
    b = Broker(mock_bin)
    tmp, spool = tmpfs_spool("300k")
    load = subprocess.Popen(["sh", "-c", "while :; do cat /etc/hostname >/dev/null; done"])
    try:
        # records to a file too (the harness's --output): the agent records
        a = Agent(agent_bin, conf(b.bootstrap, spool, interval=0.2))
        b.cmd("down")
        # the disk full, and a few windows in memory since (4 s filled it
        # on most days; on a slow one the reload came before and lost none)
        c.check(poll_log(a, "Cannot write to the spool", 30), "the spool's disk filled")
        time.sleep(1)
        with open(a.conf, "w") as f:
            f.write(conf(b.bootstrap, spool, interval=0.2, extra="flush_timeout = 4.0;"))
        a.proc.send_signal(signal.SIGHUP)
        time.sleep(1.5)
        # the disk still full and the broker still down at the stop: what
        # memory held since the reload is lost there too, which no agent
        # record can count: exit 74, said
        c.eq(a.stop(), 74, "agent exits 74: records lost at the stop too")
    finally:
        load.kill()
        load.wait()
        subprocess.run(["umount", spool])
    said = [int(x) for x in re.findall(r"Stopping with (\d+) records that neither Kafka nor "
                                       r"the spool", a.log())]
    m = re.search(r"Stopped with (\d+) records lost after the last agent record \(0 shed by "
                  r"the full spool, 0 bytes of the output file's\)", a.log())
    c.check(len(said) == 2 and m and int(m.group(1)) == said[1],
            "... the stop's loss said with the reload's, and summed up (%s, %s)"
            % (said, m and m.group(0)))
    lost = said[0] if said else 0
    counted = [r["losses"]["sink_dropped_records"] for r in a.records() if r["type"] == "agent"]
    c.check(lost > 0, "the disk filled and the reload lost records, said (%d)" % lost)
    c.check(lost in counted, "... and counted in an agent record's losses.sink_dropped_records "
            "(%s)" % [x for x in counted if x])
    b.close()
    c.done()


def rec_key(r):
    """What tells a record from every other of its run (check_dups' key)."""
    return (r["host"], r["run"], r["window"], r["type"], r.get("pid"), r.get("cgroup_id"),
            r.get("dev"), r.get("ino"), r.get("igen"), r.get("fhash"))


# the record types the agent publishes on its features and agent topics
# (sink-kafka.c's topic_name table)
ON_FEATURES_OR_AGENT = ("features", "device", "file", "filename", "agent")


def twice(msgs):
    """How many of the consumed messages repeat an earlier one's record."""
    seen, dups = set(), 0
    for m in msgs:
        key = rec_key(m["rec"])
        dups += key in seen
        seen.add(key)
    return dups


# librdkafka's reconnect backoff grows to 10 s: a broker back is seen in
# half a second with this bound
QUICK_RECONNECT = 'properties = ["reconnect.backoff.max.ms=500"];'


def segs(spool):
    return sorted(f for f in os.listdir(spool) if f.endswith(".seg"))


def scenario_spool_removed(agent_bin, wl_bin, mock_bin):
    """Spool files removed during an outage, by hand or by a cleanup job:
    (a) one segment file beyond those the pump keeps loaded: its records are
    said lost and counted when its turn comes, and delivery goes on (the
    pump used to wait for it for good); (b) the whole directory: the next
    window makes it again and goes on spooling, the windows only its files
    held are said lost in one line and counted, the rest is delivered."""
    c = Checks()
    tmp = tempfile.mkdtemp(prefix="dc-kafka-")
    b = Broker(mock_bin)
    spool = os.path.join(tmp, "spool")
    a = Agent(agent_bin, conf(b.bootstrap, spool, interval=0.2, extra=QUICK_RECONNECT))
    # (a) more windows than the pump keeps loaded (8): the rest are files only
    b.cmd("down")
    time.sleep(3)
    on_disk = segs(spool)
    c.check(len(on_disk) > 9, "segments spooled during the outage (%d)" % len(on_disk))
    os.unlink(os.path.join(spool, on_disk[-1]))
    b.cmd("up")
    c.check(wait_spool_empty(spool, 60), "(a) the rest is delivered when the broker returns")
    m = re.search(r"Spool segment \S+ was deleted while the agent ran: its (\d+) records are "
                  r"lost; delivering the rest", a.log())
    c.check(m is not None, "(a) the log names the deleted segment and its records")
    lost_a = int(m.group(1)) if m else -1
    # (b)
    b.cmd("down")
    time.sleep(4)
    before = len(segs(spool))
    # stopped meanwhile: rmtree races the agent's renames otherwise
    a.proc.send_signal(signal.SIGSTOP)
    shutil.rmtree(spool)
    a.proc.send_signal(signal.SIGCONT)
    time.sleep(1.5)
    c.check(os.path.isdir(spool) and segs(spool),
            "(b) the spool directory is made again and takes the next windows")
    log = a.log()
    m = re.findall(r"The spool directory \S+ was removed while the agent ran(: made again|, "
                   r"not made again yet); (\d+) segments \((\d+) records\) that "
                   r"only its files held are lost", log)
    c.eq(len(m), 1, "(b) the log says once that the directory was removed and what was lost")
    lost_b = int(m[0][2]) if m else -1
    c.check(before > 8 and m and int(m[0][1]) > 0,
            "(b) segments beyond the loaded ones were lost with it (%d on disk, %s lost)"
            % (before, m[0][1] if m else "none"))
    c.check(not re.search(r"Spool segment \S+ was deleted", log[log.find("was removed"):]),
            "(b) not one line per lost segment")
    b.cmd("up")
    c.check(wait_spool_empty(spool, 60), "(b) the rest is delivered when the broker returns")
    c.eq(a.stop(), 0, "agent exits 0")
    local = a.records()
    kafka = consume(b.bootstrap, "datacrumbs.agent") + consume(b.bootstrap, "datacrumbs.features")
    got = {rec_key(m["rec"]) for m in kafka}
    missing = [r for r in local if r["type"] != "stacks" and rec_key(r) not in got]
    c.eq(len(missing), lost_a + lost_b, "the records missing from Kafka are the ones said lost")
    counted = sum(m["rec"]["losses"]["sink_dropped_records"]
                  for m in kafka if m["rec"]["type"] == "agent")
    c.eq(counted, lost_a + lost_b,
         "... and counted in the agent records' losses.sink_dropped_records")
    last_local = max(r["window"] for r in local if r["type"] == "agent")
    last_kafka = max(m["rec"]["window"] for m in kafka if m["rec"]["type"] == "agent")
    c.eq(last_kafka, last_local, "every window after the removals delivered, the last too")
    b.close()
    shutil.rmtree(tmp, ignore_errors=True)
    c.done()


def remount(spool, how):
    """mount -o remount,HOW; a file being written at that instant makes a
    read-only remount EBUSY: try again."""
    for _ in range(20):
        if subprocess.run(["mount", "-o", "remount," + how, spool]).returncode == 0:
            return
        time.sleep(0.05)
    raise RuntimeError("cannot remount %s %s" % (spool, how))


def scenario_spool_readonly(agent_bin, wl_bin, mock_bin):
    """The spool read-only for a while (a remount) during an outage: the
    windows held in memory meanwhile go to disk once it takes writes again,
    so a crash after that loses none; delivered segments it would not delete
    are deleted then, so the next start does not send them again."""
    c = Checks()
    b = Broker(mock_bin)
    # a file system of its own, remounted read-only under the agent's open
    # directory (a read-only bind mount on top would not reach it)
    tmp, spool = tmpfs_spool("64m")
    a = None
    try:
        # read-only at start: said, naming it and what a stop in an outage
        # would lose (before, nothing was said until the stop lost them);
        # not refused, as a refusal would stop the records file and the
        # traces too, and end the agent at a reload
        # and a damaged segment in it, which cannot be set aside then
        damaged = os.path.join(spool, "%020d.seg" % 1)
        with open(damaged, "wb") as f:
            f.write(b"DCSPOOL1" + b"\0" * 100)
        remount(spool, "ro")
        ro = Agent(agent_bin, conf(b.bootstrap, spool, interval=0.2))
        time.sleep(0.5)
        c.eq(ro.stop(), 0, "a spool read-only at start: the agent runs, and exits 0")
        c.check("Spool %s (spool.dir) cannot be written: Read-only file system; windows wait in "
                "memory" % spool in ro.log(), "... and says so at start, naming it")
        c.check("Spool segment %s is unreadable (segment version 0, this agent reads 1), and "
                "cannot be set aside as %s.bad: Read-only file system; left where it is"
                % (damaged, damaged) in ro.log(),
                "a damaged segment it cannot set aside: said so, not that it was (%s)"
                % [x for x in ro.log().splitlines() if "unreadable" in x])
        c.check(os.path.exists(damaged), "... and left where it is")
        ro_runs = {r["run"] for r in ro.records()}
        remount(spool, "rw")
        a = Agent(agent_bin, conf(b.bootstrap, spool, interval=0.2, extra=QUICK_RECONNECT))
        c.check(os.path.exists(damaged + ".bad") and not os.path.exists(damaged),
                "the next start, on a spool taking writes, sets it aside")
        b.cmd("down")
        time.sleep(1)  # windows on disk
        remount(spool, "ro")
        # the windows the spool holds from before: delivered while it is
        # read-only, their files kept; a copy of them later is a replay
        on_disk_last = max(r["window"] for r in a.records() if r["type"] == "agent")
        time.sleep(1)  # windows in memory only
        b.cmd("up")
        time.sleep(3)  # all delivered; the ones on disk cannot be deleted
        b.cmd("down")
        time.sleep(1)  # windows in memory only, not delivered
        held = len(segs(spool))
        remount(spool, "rw")
        time.sleep(1)  # the spool takes writes again
        log = a.log()
        c.check("Cannot write to the spool" in log and "Read-only file system" in log,
                "the log says the spool refused writes")
        c.check("The spool %s takes segments again" % spool in log,
                "the log says the held windows went to disk when it took writes again")
        c.check(re.search(r"Deleted the [1-9]\d* delivered or shed spool segments", log) is not None,
                "... and that the delivered segments it had refused to delete are deleted")
        a.proc.send_signal(signal.SIGKILL)
        a.proc.wait(10)
        left = len(segs(spool))
        print("# %d segments in the spool before the remount read-write, %d at the kill"
              % (held, left))
        b.cmd("up")
        a = Agent(agent_bin, conf(b.bootstrap, spool, interval=0.2, extra=QUICK_RECONNECT))
        c.check(wait_spool_empty(spool, 60), "the restarted agent delivered the spool")
        c.eq(a.stop(), 0, "restarted agent exits 0")
        a = None
    finally:
        if a is not None and a.proc.poll() is None:
            a.proc.kill()
            a.proc.wait(10)
        subprocess.run(["umount", spool])
    agents = consume(b.bootstrap, "datacrumbs.agent")
    runs = windows_by_run(agents)
    run1 = [r for r in runs if r != a2_run(agents, runs) and r not in ro_runs]
    c.eq(len(run1), 1, "the first run's windows arrived")
    if run1:
        check_run(c, runs, run1[0], "first run (killed)")
        # a window produced as the broker went down the second time may
        # arrive twice (at least once); those on disk before were delivered
        # long before, and their files deleted once the spool took writes
        early = [w for w in runs[run1[0]] if w <= on_disk_last]
        c.eq(len(early), len(set(early)),
             "no window spooled before the remount (0..%d) sent twice" % on_disk_last)
    b.close()
    shutil.rmtree(tmp, ignore_errors=True)
    c.done()


def a2_run(agents, runs):
    """The run whose first window arrived last: the restarted agent's."""
    order = [m["hdr"]["run"] for m in agents]
    return max(runs, key=lambda r: order.index(r))


def scenario_kill9(agent_bin, wl_bin, mock_bin):
    """kill -9 during an outage, restart: the spooled windows arrive, in order, first."""
    c = Checks()
    tmp = tempfile.mkdtemp(prefix="dc-kafka-")
    b = Broker(mock_bin)
    spool = os.path.join(tmp, "spool")
    a = Agent(agent_bin, conf(b.bootstrap, spool, interval=0.1))
    b.cmd("down")
    time.sleep(3)
    a.proc.send_signal(signal.SIGKILL)
    a.proc.wait(10)
    left = sorted(f for f in os.listdir(spool) if f.endswith(".seg"))
    c.check(len(left) >= 20, "segments left in the spool by the killed agent (%d)" % len(left))
    # a write the kill interrupted looks like this; the next start must remove it
    with open(os.path.join(spool, "99999999999999999999.seg.tmp"), "w") as f:
        f.write("torn")
    b.cmd("up")
    a2 = Agent(agent_bin, conf(b.bootstrap, spool, interval=0.1))
    c.check(wait_spool_empty(spool, 60), "the restarted agent delivered the old spool")
    c.eq(a2.stop(), 0, "restarted agent exits 0")
    c.check("earlier runs" in a2.log(), "start-up log mentions the spool from earlier runs")
    c.eq([f for f in os.listdir(spool) if f.endswith(".tmp")], [], "no temporary files left")
    agents = consume(b.bootstrap, "datacrumbs.agent")
    runs = windows_by_run(agents)
    c.eq(len(runs), 2, "two runs")
    order = []
    for m in agents:
        if m["hdr"]["run"] not in order:
            order.append(m["hdr"]["run"])
    first, second = order[0], order[1]
    check_run(c, runs, first, "killed run")
    c.check(max(runs[first]) + 1 >= len(left), "every spooled window of the killed run arrived")
    check_run(c, runs, second, "restarted run")
    check_dups(c, agents, "kill -9")
    pos_last_first = max(i for i, m in enumerate(agents) if m["hdr"]["run"] == first)
    pos_first_second = min(i for i, m in enumerate(agents) if m["hdr"]["run"] == second)
    c.check(pos_last_first < pos_first_second, "the old run's windows come before the new run's")
    b.close()
    c.done()


def scenario_corrupt(agent_bin, wl_bin, mock_bin):
    """A truncated and a corrupted segment, and one whose header names another
    segment (a spool renamed by hand): named, set aside by their own names;
    entries named like segments that are none left alone; the rest delivered."""
    c = Checks()
    tmp = tempfile.mkdtemp(prefix="dc-kafka-")
    b = Broker(mock_bin)
    spool = os.path.join(tmp, "spool")
    a = Agent(agent_bin, conf(b.bootstrap, spool, interval=0.1))
    b.cmd("down")
    time.sleep(2)
    a.proc.send_signal(signal.SIGKILL)
    a.proc.wait(10)
    segs = sorted(f for f in os.listdir(spool) if f.endswith(".seg"))
    c.check(len(segs) >= 10, "segments to work with (%d)" % len(segs))
    trunc, corrupt, moved, other = segs[3], segs[6], segs[5], segs[8]

    def kind(name):
        with open(os.path.join(spool, name), "rb") as f:
            return struct.unpack_from("<I", f.read(16), 12)[0]
    # the windows lost are those of the feature segments (kind 0) set aside
    lost = sum(kind(x) == 0 for x in (trunc, corrupt, moved))
    with open(os.path.join(spool, other), "rb") as f, open(os.path.join(spool, moved), "wb") as g:
        g.write(f.read())
    # a sign strtoull would take for 2^64 - 1, and a directory
    odd = ["-0000000000000000001.seg", "00000000000000099999.seg"]
    open(os.path.join(spool, odd[0]), "w").close()
    os.mkdir(os.path.join(spool, odd[1]))
    with open(os.path.join(spool, trunc), "r+b") as f:
        size = f.seek(0, 2)
        f.truncate(size // 2)
    with open(os.path.join(spool, corrupt), "r+b") as f:
        size = f.seek(0, 2)
        f.seek(size - 20)
        byte = f.read(1)
        f.seek(size - 20)
        f.write(bytes([byte[0] ^ 0xFF]))
    b.cmd("up")
    a2 = Agent(agent_bin, conf(b.bootstrap, spool, interval=0.1))
    c.check(wait_spool_empty(spool, 60, odd), "the rest of the spool is delivered")
    c.eq(a2.stop(), 0, "agent exits 0")
    log = a2.log()
    c.check(trunc in log and "truncated" in log, "the truncated segment is named: %s" % trunc)
    c.check(corrupt in log and "checksum" in log, "the corrupted segment is named: %s" % corrupt)
    c.check(os.path.exists(os.path.join(spool, trunc + ".bad")) and
            os.path.exists(os.path.join(spool, corrupt + ".bad")), "both set aside as .bad")
    c.check(moved in log and "header says segment %d" % int(other[:20]) in log
            and os.path.exists(os.path.join(spool, moved + ".bad")),
            "the segment whose header names another is named and set aside: %s" % moved)
    c.check(not os.path.exists(os.path.join(spool, other + ".bad"))
            and not os.path.exists(os.path.join(spool, other)),
            "the segment it named is delivered, not set aside: %s" % other)
    c.check(all(os.path.exists(os.path.join(spool, x)) for x in odd)
            and "2 entries named like segments are none" in log,
            "entries named like segments that are none: left alone, counted in the log")
    agents = consume(b.bootstrap, "datacrumbs.agent")
    runs = windows_by_run(agents)
    first = agents[0]["hdr"]["run"]
    w = sorted(set(runs[first]))
    missing = sorted(set(range(max(w) + 1)) - set(w))
    c.eq(len(missing), lost, "exactly the damaged segments' windows are missing (%s)" % missing)
    b.close()
    c.done()


def scenario_corrupt_live(agent_bin, wl_bin, mock_bin):
    """A segment of this run damaged on disk during an outage, after the agent
    wrote it and let its memory go: set aside when its turn comes, its window
    missing, and its records counted as lost in an agent record
    (losses.sink_dropped_records), where they were counted nowhere but as a
    corrupt segment. Another replaced by a directory: every window after it
    waited for good (a read error retried each second); now it is given up
    at once, counted, and the rest delivered."""
    c = Checks()
    b, spool, a = outage_start(agent_bin, mock_bin, 0.1)
    time.sleep(3)
    segs = sorted(f for f in os.listdir(spool) if f.endswith(".seg"))
    c.check(len(segs) >= 20, "segments to work with (%d)" % len(segs))
    # past the 8 the agent keeps loaded: read from disk when its turn comes
    victim = segs[len(segs) // 2]
    with open(os.path.join(spool, victim), "r+b") as f:
        n_records = struct.unpack_from("<Q", f.read(32), 24)[0]
        size = f.seek(0, 2)
        f.seek(size - 20)
        byte = f.read(1)
        f.seek(size - 20)
        f.write(bytes([byte[0] ^ 0xFF]))
    gone = segs[len(segs) // 2 + 3]
    with open(os.path.join(spool, gone), "rb") as f:
        n_records += struct.unpack_from("<Q", f.read(32), 24)[0]
    os.unlink(os.path.join(spool, gone))
    os.mkdir(os.path.join(spool, gone))
    b.cmd("up")
    c.check(wait_spool_empty(spool, 60, ignore=(gone,)), "the rest of the spool is delivered")
    c.eq(a.stop(), 0, "agent exits 0")
    log = a.log()
    c.check(victim in log and os.path.exists(os.path.join(spool, victim + ".bad")),
            "the damaged segment is named and set aside: %s" % victim)
    c.check("Cannot read spool segment %d: not a regular file" % int(gone[:20]) in log,
            "the directory in a segment's place is named")
    agents = consume(b.bootstrap, "datacrumbs.agent")
    runs = windows_by_run(agents)
    w = sorted(set(runs[list(runs)[0]]))
    missing = sorted(set(range(max(w) + 1)) - set(w))
    c.eq(len(missing), 2, "their two windows alone are missing (%s)" % missing)
    dropped = sum(m["rec"]["losses"]["sink_dropped_records"] for m in agents)
    c.eq(dropped, n_records, "their %d records counted in losses.sink_dropped_records"
         % n_records)
    b.close()
    c.done()


def scenario_spool_full(agent_bin, wl_bin, mock_bin):
    """A spool bound reached during an outage: the oldest windows are shed,
    the spool stays bounded, and every shed record is counted."""
    c = Checks()
    tmp = tempfile.mkdtemp(prefix="dc-kafka-")
    b = Broker(mock_bin)
    spool = os.path.join(tmp, "spool")
    # short windows fill the spool fast; each window close waits an RCU grace
    # period per probe family (about 10 ms here), so not shorter than this
    a = Agent(agent_bin, conf(b.bootstrap, spool, interval=0.1, spool_extra="max_mib = 1;"))
    b.cmd("down")
    # many short processes: many feature records per window. Go on until the
    # spool has come near its bound, then 3 s more, so shedding must happen.
    deadline, near = time.monotonic() + 90, None
    biggest = 0
    while time.monotonic() < deadline and (near is None or time.monotonic() < near + 3):
        subprocess.run(["sh", "-c", "for i in 1 2 3 4 5 6 7 8 9 10 11 12; do cat /etc/hostname >/dev/null; done"])
        size = spool_bytes(spool)
        biggest = max(biggest, size)
        if near is None and size > (900 << 10):
            near = time.monotonic()
    c.check(near is not None, "the spool reached its bound (peak %d)" % biggest)
    c.check(biggest <= (1 << 20) + (256 << 10), "spool stays within 1 MiB plus a segment (peak %d)" % biggest)
    b.cmd("up")
    c.check(wait_spool_empty(spool, 60), "the rest is delivered when the broker returns")
    c.eq(a.stop(), 0, "agent exits 0")
    agents = consume(b.bootstrap, "datacrumbs.agent")
    feats = consume(b.bootstrap, "datacrumbs.features")
    shed = max(m["rec"]["sinks"]["kafka"]["shed_records"]["features"] for m in agents)
    c.check(shed > 0, "records were shed and counted (%d)" % shed)
    # each window produced (its features and device records + 1 agent record); the
    # windows missing from Kafka must hold exactly the shed records
    last = max(m["rec"]["window"] for m in agents)
    have = {m["rec"]["window"] for m in agents}
    missing = sorted(set(range(last + 1)) - have)
    c.check(len(missing) > 0 and missing == list(range(missing[0], missing[0] + len(missing))),
            "the shed windows are one run of the oldest spooled ones (%d windows)" % len(missing))
    c.check(not {m["rec"]["window"] for m in feats} & set(missing),
            "a shed window is shed whole: none of its feature records arrived")
    c.check(shed >= len(missing), "at least one record counted per missing window (%d >= %d)"
            % (shed, len(missing)))
    b.close()
    c.done()


def scenario_config(agent_bin, wl_bin, mock_bin):
    """A rejected property and an unknown topic stop the agent at start, clearly."""
    c = Checks()
    tmp = tempfile.mkdtemp(prefix="dc-kafka-")
    b = Broker(mock_bin)
    spool = os.path.join(tmp, "spool")
    cases = [
        ('properties = ["linger.ms=soon"];', ["linger.ms=soon", "Invalid value"]),
        ('properties = ["no.such.property=1"];', ["no.such.property", "No such configuration property"]),
        ('properties = ["lingerms"];', ["lingerms", "not name=value"]),
        ('topics = { features = "no.such.topic"; };', ["no.such.topic", "Unknown topic"]),
    ]
    for extra, words in cases:
        path = os.path.join(tmp, "c.conf")
        with open(path, "w") as f:
            f.write(conf(b.bootstrap, spool, extra=extra))
        p = run_checked([agent_bin, "--config", path, "--duration", "5"], capture_output=True,
                           text=True, timeout=60)
        c.check(p.returncode == 2 and all(x in p.stderr for x in words),
                "%s: exit %d, %r" % (extra, p.returncode, p.stderr.strip()[-200:]))
    b.close()
    c.done()


def scenario_secrets(agent_bin, wl_bin, mock_bin):
    """Credentials from kafka.secrets_file reach librdkafka and never the output, not even
    at debug level with librdkafka's configuration dump on; a refused one stays hidden."""
    c = Checks()
    tmp = tempfile.mkdtemp(prefix="dc-kafka-")
    b = Broker(mock_bin)
    spool = os.path.join(tmp, "spool")
    v1, v2, v3 = ("%s-%d-value" % (w, os.getpid()) for w in ("pw", "keypw", "oidc"))
    sec = os.path.join(tmp, "kafka.secrets")
    path = os.path.join(tmp, "c.conf")

    def start(secrets, props):
        with open(sec, "w") as f:
            f.write(secrets)
        os.chmod(sec, 0o600)
        with open(path, "w") as f:
            f.write(conf(b.bootstrap, spool, extra='properties = [%s]; secrets_file = "%s";'
                         % (props, sec)) + 'log_level = "debug";\n')
        p = run_checked([agent_bin, "--config", path, "--duration", "2"], capture_output=True,
                           text=True, timeout=60)
        return p.returncode, p.stdout + p.stderr

    rc, logged = start("sasl.username=agent\nsasl.password=%s\nssl.key.password=%s\n" % (v1, v2),
                       '"debug=conf"')
    c.eq(rc, 0, "agent with a 0600 secrets file exits 0")
    c.check("sasl.password = " in logged and "ssl.key.password = " in logged,
            "the secrets were applied (librdkafka's configuration dump lists them)")
    c.check(v1 not in logged and v2 not in logged, "no secret value in %d bytes of debug output"
            % len(logged))
    msgs = consume(b.bootstrap, "datacrumbs.agent")
    c.check(msgs and not any(v1 in m["payload"] or v2 in m["payload"] for m in msgs),
            "records delivered (%d), none carries a secret value" % len(msgs))
    # a secret line written with the wrong separator in kafka.properties
    rc, logged = start("", '"sasl.password: %s"' % v1)
    c.check(rc == 2 and "sasl.password..." in logged and "not name=value" in logged
            and v1 not in logged, "a malformed secret property: exit 2, name only (%r)"
            % logged.strip()[-200:])
    # Debian's librdkafka refuses this one (no OIDC); either way its value stays hidden
    rc, logged = start("sasl.oauthbearer.client.secret=%s\n" % v3, "")
    c.check(rc in (0, 2) and v3 not in logged and (rc == 0 or "value not shown" in logged),
            "a property librdkafka may refuse: value hidden (exit %d, %r)"
            % (rc, logged.strip()[-200:]))
    b.close()
    c.done()


def consume_binary(bootstrap, topic):
    """Raw payloads of a topic (zstd frames), length-prefixed by kcat's %R."""
    out = subprocess.run(["kcat", "-b", bootstrap, "-C", "-t", topic, "-o", "beginning", "-e",
                          "-q", "-f", "%R%s"], capture_output=True, timeout=60)
    data, msgs, i = out.stdout, [], 0
    while i + 4 <= len(data):
        n = int.from_bytes(data[i:i + 4], "big")
        msgs.append(data[i + 4:i + 4 + n])
        i += 4 + n
    return msgs


def scenario_traces(agent_bin, wl_bin, mock_bin):
    """Trace batches: one message per window on the traces topic, each a zstd
    frame that decodes alone (zstd CLI) to self-describing NDJSON, the same
    bytes as the local trace files."""
    c = Checks()
    tmp = tempfile.mkdtemp(prefix="dc-kafka-")
    b = Broker(mock_bin)
    spool = os.path.join(tmp, "spool")
    tdir = os.path.join(tmp, "traces")
    a = Agent(agent_bin, conf(b.bootstrap, spool, out="", traces=True) +
              'traces = { output = { dir = "%s"; }; sampling = { one_in_n = 10; rate = 0; }; };\n'
              % tdir)
    workload_pid(run_workload(wl_bin, iters=2000, threads=1, dir=tmp))
    time.sleep(0.5)
    c.eq(a.stop(), 0, "agent exits 0")
    frames = consume_binary(b.bootstrap, "datacrumbs.traces")
    meta = subprocess.run(["kcat", "-b", b.bootstrap, "-C", "-t", "datacrumbs.traces", "-o",
                           "beginning", "-e", "-q", "-f", "%h\n"], capture_output=True, text=True,
                          timeout=60).stdout.splitlines()
    c.check(len(frames) > 0, "trace batches arrived (%d)" % len(frames))
    c.check(all("content-encoding=zstd" in h and "type=trace" in h for h in meta),
            "headed type=trace, content-encoding=zstd")
    events = 0
    self_describing = True
    for fr in frames:
        out = subprocess.run(["zstd", "-dc"], input=fr, capture_output=True)
        if out.returncode:
            c.check(False, "a message decodes alone: %s" % out.stderr.decode())
            break
        named = set()
        for line in out.stdout.decode().splitlines():
            r = json.loads(line)
            if r.get("name") == "FH":
                named.add(r["args"]["value"])
            elif r.get("ph") == "X":
                events += 1
                if "fhash" in r["args"] and r["args"]["fhash"] not in named:
                    self_describing = False
    c.check(events > 0, "every message decodes alone with the zstd tool (%d events)" % events)
    c.check(self_describing, "each message names its files before using them")
    local = b"".join(open(f, "rb").read() for f in sorted(
        os.path.join(tdir, x) for x in os.listdir(tdir)))
    c.eq(b"".join(frames), local, "the messages are the local trace files' frames, in order")
    b.close()
    c.done()


def scenario_traces_settings(agent_bin, wl_bin, mock_bin):
    """The traces topic has a codec of its own (its batches are zstd frames)
    and every other producer setting the records have: with the operator's
    message.timeout.ms, a broker outage times out trace batches as it does
    records (librdkafka's own topic defaults would hold them five minutes).
    (Delivery after outages: scenario_outage.)"""
    c = Checks()
    tmp = tempfile.mkdtemp(prefix="dc-kafka-")
    b = Broker(mock_bin)
    spool = os.path.join(tmp, "spool")
    # librdkafka 2.0.2 looks for timed-out messages only between reconnect
    # attempts while the broker is away: its backoff (to 10 s by default)
    # made the 1.5 s timeout land after the agent stopped (1 run in 12 with
    # the CPUs busy). The operator's bound on that backoff bounds the delay
    a = Agent(agent_bin, conf(b.bootstrap, spool, interval=0.5, traces=True,
                              extra='properties = ["message.timeout.ms=1500", '
                                    '"reconnect.backoff.max.ms=500"];') +
              'traces = { sampling = { one_in_n = 10; rate = 0; }; };\n')
    time.sleep(1)
    b.cmd("down")
    workload_pid(run_workload(wl_bin, iters=2000, threads=1, dir=tmp))
    time.sleep(6)
    c.eq(a.stop(), 0, "agent exits 0")
    with open(a.stderr_path) as f:
        log = f.read()
    for kind in ("records", "traces"):
        c.check(re.search(r"did not accept \d+ records of spool segment \d+ \(%s\): "
                          r"Local: Message timed out" % kind, log),
                "%s timed out after the operator's 1.5 s while the broker was down" % kind)
    if c.failed:
        print("# the agent's log:\n" + "".join("#   " + x + "\n" for x in log.splitlines()[-60:]))
    b.close()
    c.done()


def scenario_stacks(agent_bin, wl_bin, mock_bin):
    """stacks records go to their own topic, the same bytes as the local file's
    stacks lines, and not to the features topic."""
    c = Checks()
    tmp = tempfile.mkdtemp(prefix="dc-kafka-")
    b = Broker(mock_bin, topics=TOPICS + ["datacrumbs.stacks"])
    spool = os.path.join(tmp, "spool")
    a = Agent(agent_bin, conf(b.bootstrap, spool, out="") +
              "probes = { stacks = { enable = true; one_in_n = 1; slow_ms = 0; }; };\n")
    pid = workload_pid(run_workload(wl_bin, iters=200, threads=1, dir=tmp))
    time.sleep(0.5)
    c.eq(a.stop(), 0, "agent exits 0")
    c.check(wait_spool_empty(spool, 30), "spool drained")
    msgs = consume(b.bootstrap, "datacrumbs.stacks")
    c.check(len(msgs) > 0, "stacks records arrived on datacrumbs.stacks (%d)" % len(msgs))
    c.check(all(m["hdr"].get("type") == "stacks" and m["rec"]["type"] == "stacks" for m in msgs),
            "headed and typed stacks")
    c.check(any(m["rec"]["pid"] == pid for m in msgs), "the workload's profile is among them")
    with open(a.out) as f:  # the harness's --output: the local file sink
        lines = [x.rstrip("\n") for x in f if '"type":"stacks"' in x]
    c.eq(sorted(m["payload"].rstrip("\n") for m in msgs), sorted(lines),
         "the same records as the local file's stacks lines")
    feats = consume(b.bootstrap, "datacrumbs.features")
    c.check(not [m for m in feats if m["rec"]["type"] == "stacks"], "none on the features topic")
    b.close()
    c.done()


# librdkafka learns of a topic created later at its next metadata refresh
# (5 minutes by default) and calls one it cannot find missing after 30 s:
# both shortened, so that the scenario below takes seconds
FAST_METADATA = ('properties = [ "topic.metadata.refresh.interval.ms=1000",'
                 ' "topic.metadata.propagation.max.ms=500" ]; start_timeout = 1.0;')


def one_run_delivered(c, bootstrap, min_windows, label):
    """The agent topic's records: one run, every window from 0 in order, at
    least min_windows of them; (the records, the last window's or None)."""
    agents = consume(bootstrap, "datacrumbs.agent")
    runs = windows_by_run(agents)
    c.eq(len(runs), 1, "%s: one run" % label)
    if not runs:
        return agents, None
    run = list(runs)[0]
    check_run(c, runs, run, "%s: agent records" % label)
    n = max(runs[run]) + 1
    c.check(n >= min_windows, "%s: %d windows arrived, the first ones too" % (label, n))
    return agents, max((m["rec"] for m in agents), key=lambda r: r["window"])


def scenario_late_topic(agent_bin, wl_bin, mock_bin):
    """A topic created after the agent started (the brokers silent at its start,
    so it could not refuse to run): the records for it wait in the spool, and
    what follows them, in order; once it exists every window arrives."""
    c = Checks()
    tmp = tempfile.mkdtemp(prefix="dc-kafka-")
    b = Broker(mock_bin, topics=["datacrumbs.features"])
    spool = os.path.join(tmp, "spool")
    b.cmd("down")
    a = Agent(agent_bin, conf(b.bootstrap, spool, interval=0.2, extra=FAST_METADATA))
    b.cmd("up")
    time.sleep(5)
    held = len([f for f in os.listdir(spool) if f.endswith(".seg")])
    c.check(held >= 15, "without the agent topic the windows stay in the spool (%d segments "
            "after 5 s of 0.2 s windows)" % held)
    b.cmd("create datacrumbs.agent")
    c.check(wait_spool_empty(spool, 90), "spool drained once the topic exists")
    c.eq(a.stop(), 0, "agent exits 0")
    agents, last = one_run_delivered(c, b.bootstrap, 25, "late topic")
    if last:
        k = last["sinks"]["kafka"]
        c.check(k["produce_errors"] + k["delivery_errors"] > 0 and k["refused_records"] == 0
                and k["unrouted_records"] == 0,
                "refusals counted as produce or delivery errors, none dropped (%d, %d, %d, %d)"
                % (k["produce_errors"], k["delivery_errors"], k["refused_records"],
                   k["unrouted_records"]))
        c.eq(last["losses"]["sink_dropped_records"], 0, "no record given up on")
    features = consume(b.bootstrap, "datacrumbs.features")
    check_dups(c, agents + features, "late topic")
    with open(a.stderr_path) as f:
        log = f.read()
    c.check("keeping it and what follows in the spool" in log or "producing it again" in log,
            "the log says the records are kept")
    # the probes attach before the wait for silent brokers (kafka.start_timeout),
    # not after it: the node's I/O meanwhile is window 0's, not unobserved
    attached, wait = log.find("syscall probes attached with"), log.find("no answer from the brokers")
    c.check(0 <= attached < wait, "probes attached before the wait for the brokers (log at %d, %d)"
            % (attached, wait))
    b.close()
    c.done()


def scenario_reload_topic_gone(agent_bin, wl_bin, mock_bin):
    """A reload of the Kafka settings while a topic is gone (deleted, its
    authorization revoked): the new sink is refused for it, and the running
    configuration comes back without that check again, spooling as a running
    agent does. The rollback checked the topics again and stopped the agent
    (exit 1; the restart's check then exits 2, and the node stays
    unmonitored). Once the topic answers again every window arrives."""
    c = Checks()
    tmp = tempfile.mkdtemp(prefix="dc-kafka-")
    b = Broker(mock_bin)
    spool = os.path.join(tmp, "spool")
    a = Agent(agent_bin, conf(b.bootstrap, spool, interval=0.2))
    time.sleep(2)
    b.cmd("topic-error datacrumbs.agent 3")
    with open(a.conf, "w") as f:
        f.write(conf(b.bootstrap, spool, interval=0.2, extra="flush_timeout = 4.0;"))
    a.proc.send_signal(signal.SIGHUP)
    time.sleep(4)
    c.check(a.proc.poll() is None, "the agent runs on after the reload (exit %s)" % a.proc.poll())
    log = a.log()
    c.check("datacrumbs.agent" in log and "reload failed to open the new outputs" in log,
            "the log says the new sink was refused for the topic")
    b.cmd("topic-error datacrumbs.agent 0")
    c.check(wait_spool_empty(spool, 90), "spool drained once the topic answers")
    c.eq(a.stop(), 0, "agent exits 0")
    agents, last = one_run_delivered(c, b.bootstrap, 25, "topic gone")
    if last:
        c.eq(last["losses"]["sink_dropped_records"], 0, "no record given up on")
    b.close()
    c.done()


def scenario_refused_once(agent_bin, wl_bin, mock_bin):
    """Produce requests refused by the broker with a permanent error (one
    record a request): the segments they belong to are produced again, but
    only the records the broker did not take. Every retry sent the whole
    segment again, so each record delivered before the error arrived twice,
    for as long as the error lasted."""
    c = Checks()
    tmp = tempfile.mkdtemp(prefix="dc-kafka-")
    b = Broker(mock_bin)
    spool = os.path.join(tmp, "spool")
    a = Agent(agent_bin, conf(b.bootstrap, spool, interval=0.2, extra=(
        'properties = ["batch.num.messages=1", "linger.ms=0", "max.in.flight=1"];')))
    # four writers: every window has more records than the three refused
    # (a window of three or fewer would have nothing to send twice)
    writers = [subprocess.Popen([sys.executable, "-c", (
        "import os, time\n"
        "fd = os.open(%r, os.O_WRONLY | os.O_CREAT, 0o600)\n"
        "end = time.monotonic() + 6\n"
        "while time.monotonic() < end:\n"
        "    os.pwrite(fd, b'x', 0)\n"
        "    time.sleep(0.005)\n") % os.path.join(tmp, "w%d" % i)]) for i in range(4)]
    time.sleep(1.5)
    # 29: TOPIC_AUTHORIZATION_FAILED, not retried by librdkafka
    b.cmd("fail-produce 3 29")
    time.sleep(3)
    for w in writers:
        w.wait(30)
    c.check(wait_spool_empty(spool, 60), "spool drained")
    c.eq(a.stop(), 0, "agent exits 0")
    # not one_run_delivered: a window produced again may arrive after the
    # next ones (docs/kafka.md), so order is not checked here
    agents = consume(b.bootstrap, "datacrumbs.agent")
    runs = windows_by_run(agents)
    c.eq(len(runs), 1, "one run")
    w = sorted(set(runs[list(runs)[0]])) if runs else [0]
    c.eq(sorted(set(range(max(w) + 1)) - set(w)), [], "no window missing in 0..%d" % max(w))
    c.check(len(w) >= 10, "%d windows arrived" % len(w))
    features = consume(b.bootstrap, "datacrumbs.features")
    errors = sum(m["rec"]["sinks"]["kafka"]["delivery_errors"] for m in agents)
    c.check(errors > 0, "the refusals came back as delivery errors (%d)" % errors)
    c.eq(twice(agents + features), 0, "no record delivered twice")
    b.close()
    c.done()


def scenario_refused_record(agent_bin, wl_bin, mock_bin):
    """Produce requests refused as too large (MESSAGE_TOO_LARGE, a verdict on
    the records, not for now): the error fails the whole batch, so its
    records are produced again one at a time, alone on the wire, and only a
    record refused alone is dropped, counted and logged. Held, a record the
    broker refuses for good came back every backoff, forever (its
    batch-mates too, while they shared its batch)."""
    c = Checks()
    tmp = tempfile.mkdtemp(prefix="dc-kafka-")
    b = Broker(mock_bin)
    spool = os.path.join(tmp, "spool")
    # one request at a time: the refusals land on the requests in order
    a = Agent(agent_bin, conf(b.bootstrap, spool, interval=0.2, extra=(
        'properties = ["max.in.flight=1"];')))
    time.sleep(1.5)
    # 10: MESSAGE_TOO_LARGE; the first lands on a request of several
    # records (a window's), the later ones on records produced alone
    refusals = 4
    b.cmd("fail-produce %d 10" % refusals)
    time.sleep(3)
    c.check(wait_spool_empty(spool, 60), "spool drained")
    c.eq(a.stop(), 0, "agent exits 0")
    agents = consume(b.bootstrap, "datacrumbs.agent")
    features = consume(b.bootstrap, "datacrumbs.features")
    with open(a.stderr_path) as f:
        log = f.read()
    last = max((m["rec"] for m in agents), key=lambda r: r["window"]) if agents else None
    dropped = last["sinks"]["kafka"]["refused_records"] if last else -1
    c.check(1 <= dropped < refusals,
            "records refused alone dropped: %d, of %d refusals" % (dropped, refusals))
    # (a window whose agent record was the one dropped cannot say so)
    losses = sum(m["rec"]["losses"]["sink_dropped_records"] for m in agents)
    gaps = len(set(range(last["window"] + 1)) - {m["rec"]["window"] for m in agents}) if last else 0
    c.check(losses == dropped or (gaps and losses < dropped),
            "the windows' losses count them: %d (%d agent records dropped)" % (losses, gaps))
    # said once a minute at most: a topic refusing every window's record
    # would say so every window
    c.eq(log.count("; dropping it"), 1 if dropped > 0 else 0, "the log says so once")
    if dropped > 1:
        c.check("refused %d more records alone since last said" % (dropped - 1) in log,
                "and the stop says how many more")
    errors = max(m["rec"]["sinks"]["kafka"]["delivery_errors"] for m in agents) if agents else 0
    c.check(errors > dropped, "records refused in company: %d of %d delivery errors"
            % (errors - dropped, errors))
    # the local file has every record: up to the last window Kafka has, it
    # lacks only those dropped (the records refused in company arrived)
    # the features topic carries device, file and filename records too: a
    # window with few processes has one of those among the records alone
    got = {rec_key(m["rec"]) for m in agents + features}
    lacking = [r for r in a.records() if r["type"] in ON_FEATURES_OR_AGENT and last
               and r["window"] <= last["window"] and rec_key(r) not in got]
    c.eq(len(lacking), dropped, "Kafka lacks only the records dropped (%s)"
         % ["%s/%s" % (r["window"], r["type"]) for r in lacking])
    runs = windows_by_run(agents)
    c.eq(len(runs), 1, "one run")
    w = sorted(set(runs[list(runs)[0]])) if runs else [0]
    missing = sorted(set(range(max(w) + 1)) - set(w))
    c.check(len(missing) <= dropped and len(w) >= 10,
            "%d windows arrived, missing only what was dropped: %s" % (len(w), missing))
    c.eq(twice(agents + features), 0, "no record delivered twice")
    b.close()
    c.done()


def scenario_stop_partial(agent_bin, wl_bin, mock_bin):
    """The stop must come with records of the refused window left to go
    out: where the record refused alone was its window's last (its agent
    record, CI at 28c7088), nothing was left to keep; tried again, 3 times
    at most."""
    for attempt in range(3):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            try:
                stop_partial_once(agent_bin, wl_bin, mock_bin)
                code = 0
            except SystemExit as e:
                code = e.code
        text = out.getvalue()
        if "FAIL - the stop kept a segment" not in text or attempt == 2:
            sys.stdout.write(text)
            sys.exit(code)
        print("attempt %d: the stop came after the refused window was out; again" % attempt)


def stop_partial_once(agent_bin, wl_bin, mock_bin):
    """A stop while a segment's records go out one at a time (a batch
    refused as too large): the spool keeps only the records Kafka did not
    take, so the restart sends none twice, and the record refused alone,
    dropped and counted, is not sent again. Before, the stop left the
    segment whole: its records taken alone arrived twice, and the one
    counted as dropped arrived after all."""
    c = Checks()
    tmp = tempfile.mkdtemp(prefix="dc-kafka-")
    b = Broker(mock_bin)
    spool = os.path.join(tmp, "spool")
    props = 'properties = ["max.in.flight=1", "reconnect.backoff.max.ms=500"];'
    a = Agent(agent_bin, conf(b.bootstrap, spool, interval=0.2, extra=props))
    # four writers: the window refused has records left to take alone
    writers = [subprocess.Popen([sys.executable, "-c", (
        "import os, time\n"
        "fd = os.open(%r, os.O_WRONLY | os.O_CREAT, 0o600)\n"
        "end = time.monotonic() + 4\n"
        "while time.monotonic() < end:\n"
        "    os.pwrite(fd, b'x', 0)\n"
        "    time.sleep(0.005)\n") % os.path.join(tmp, "w%d" % i)]) for i in range(4)]
    time.sleep(1.5)
    # as in refused-record: the first lands on a window's batch, the later
    # ones on records produced alone
    b.cmd("fail-produce 4 10")
    dropped = poll_log(a, "; dropping it", 20)
    # then a record alone takes a round trip of 300 ms: the stop comes with
    # the refused window's records still going out
    b.cmd("rtt 300")
    time.sleep(0.3)
    c.check(dropped, "a record refused alone was dropped before the stop")
    # 74: a record dropped after the last window's agent record, which
    # only the stop's log can say
    c.check(a.stop() in (0, 74), "agent exits 0 or 74")
    for w in writers:
        w.wait(30)
    log1 = a.log()
    more = re.search(r"refused (\d+) more records alone since last said", log1)
    refused = log1.count("; dropping it") + (int(more.group(1)) if more else 0)
    c.check("taken in part by Kafka without the records it took" in log1,
            "the stop kept a segment without the records Kafka took")
    b.cmd("rtt 0")
    a2 = Agent(agent_bin, conf(b.bootstrap, spool, interval=0.2, extra=props))
    c.check(wait_spool_empty(spool, 60), "the restart delivered the spool")
    c.eq(a2.stop(), 0, "restarted agent exits 0")
    agents = consume(b.bootstrap, "datacrumbs.agent")
    features = consume(b.bootstrap, "datacrumbs.features")
    c.eq(twice(agents + features), 0, "no record delivered twice")
    runs = windows_by_run(agents)
    first = a.records()[0]["run"] if a.records() else None
    got = {rec_key(m["rec"]) for m in agents + features}
    lacking = [r for r in a.records() if r["type"] in ON_FEATURES_OR_AGENT
               and rec_key(r) not in got]
    c.eq(len(lacking), refused, "the first run's records in Kafka but those dropped (%s)"
         % ["%s/%s" % (r["window"], r["type"]) for r in lacking])
    c.check(refused >= 1 and "; dropping it" not in a2.log(),
            "the dropped record is not sent again (%d dropped)" % refused)
    missing = sorted(set(range(max(runs.get(first, [0])) + 1)) - set(runs.get(first, [])))
    c.check(len(missing) <= refused, "the first run's windows all arrived but the dropped: %s"
            % missing)
    b.close()
    c.done()


def poll_log(a, text, timeout):
    """Whether the agent's log says text within timeout seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if text in a.log():
            return True
        time.sleep(0.05)
    return False


def scenario_fatal(agent_bin, wl_bin, mock_bin):
    """A fatal error of the idempotent producer (the broker refuses it a producer
    id: CLUSTER_AUTHORIZATION_FAILED): the producer is recreated and every window
    arrives, in order; none is dropped."""
    c = Checks()
    tmp = tempfile.mkdtemp(prefix="dc-kafka-")
    b = Broker(mock_bin)
    spool = os.path.join(tmp, "spool")
    b.cmd("fail-pid 31")
    a = Agent(agent_bin, conf(b.bootstrap, spool, interval=0.2))
    time.sleep(4)
    c.check(wait_spool_empty(spool, 60), "spool drained after the producer was recreated")
    c.eq(a.stop(), 0, "agent exits 0")
    agents, last = one_run_delivered(c, b.bootstrap, 15, "fatal error")
    if last:
        c.check(last["sinks"]["kafka"]["producer_restarts"] >= 1,
                "the agent record counts the restart (%d)"
                % last["sinks"]["kafka"]["producer_restarts"])
    with open(a.stderr_path) as f:
        log = f.read()
    c.check("recreating the producer" in log, "the log says the producer was recreated")
    b.close()
    c.done()


def main():
    scenario, agent_bin, wl_bin, mock_bin = sys.argv[1:5]
    require_root()
    {"deliver": scenario_deliver, "outage": scenario_outage, "kill9": scenario_kill9,
     "outage-memory": scenario_outage_memory, "reload-outage": scenario_reload_outage,
     "reload-full": scenario_reload_full, "reload-spool-moved": scenario_reload_spool_moved,
     "corrupt": scenario_corrupt, "config": scenario_config, "spool-full": scenario_spool_full,
     "traces": scenario_traces, "traces-settings": scenario_traces_settings,
     "spool-removed": scenario_spool_removed, "spool-readonly": scenario_spool_readonly,
     "secrets": scenario_secrets, "stacks": scenario_stacks, "late-topic": scenario_late_topic,
     "fatal": scenario_fatal, "reload-topic-gone": scenario_reload_topic_gone,
     "corrupt-live": scenario_corrupt_live, "refused-once": scenario_refused_once,
     "refused-record": scenario_refused_record, "stop-partial": scenario_stop_partial}[scenario](agent_bin, wl_bin, mock_bin)


if __name__ == "__main__":
    main()
