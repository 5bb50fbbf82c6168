#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The agent's account of itself and its CPU budget.

  selfcost: every window's agent record carries each BPF program's run time
            and count, per layer, the fill of maps and rings, and one
            summary of every loss, consistent with the per-layer counters.
  selfcost-bursts: a layer whose programs ran only outside a window's
            sample of the statistics is given the time per run of its
            earlier samples (said in the record), not none.
  budget:   a small budget and a heavy workload: detail is given up in the
            documented order, one step per decision, logged, in STATUS= and
            in the agent records; idle, it comes back in reverse order.
  budget-reload: a reload of the budget alone, at a reduced level: the
            window in progress goes out at that level.
  budget-reload-close: the replaced budget takes no step at the close
            of the window a reload publishes.
  budget-trial: a step back under the budget but not under recover_below
            is a trial, and the windows it covers say so.
  budget-retry: a family that cannot come back when detail is restored is
            said to be missing and tried again until it does.
  libs-gone: a reload that cannot attach the libraries, neither the new
            configuration's nor the running one's: the agent runs on
            without them and tries them again.

usage: test_budget.py SCENARIO AGENT TRACELOAD (selfcost-bursts: WORKLOAD)
"""
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from agentlib import Agent, Checks, bpf_fds, require_root, run_workload, workload_pid  # noqa: E402

ORDER = ["full", "traces_reduced", "traces_off", "stacks_off", "libraries_off", "vfs_off"]
LV = {name: i for i, name in enumerate(ORDER)}


def libc_path(binary):
    out = subprocess.run(["ldd", binary], capture_output=True, text=True, check=True).stdout
    return next(line.split()[2] for line in out.splitlines() if "libc.so" in line)


def load(binary, path, n):
    p = subprocess.run([binary, path, str(n)], stdout=subprocess.PIPE, check=True, timeout=120)
    return int(p.stdout.decode().split()[-1])


def load_two(binary, data):
    """Two writers at once, 100,000 writes each: over any small budget."""
    two = [subprocess.Popen([binary, data + str(i), "100000"], stdout=subprocess.DEVNULL)
           for i in range(2)]
    for p in two:
        p.wait(120)


def levels_by_win(ag):
    return {r["window"]: r["budget"]["level"] for r in ag}


def agent_records(path):
    """Complete lines so far (the agent may be writing the next one)."""
    out = []
    with open(path, "rb") as f:
        for line in f:
            if line.endswith(b"\n"):
                r = json.loads(line)
                if r["type"] == "agent":
                    out.append(r)
    return out


def binary_rss_kib(pid, path):
    """Resident KiB of the process's mappings of the file path, or None."""
    rss, mine = None, False
    with open("/proc/%d/smaps" % pid) as f:
        for line in f:
            parts = line.split()
            if "-" in parts[0] and len(parts) >= 5 and ":" not in parts[0]:
                mine = len(parts) >= 6 and parts[5] == path
            elif mine and parts[0] == "Rss:":
                rss = (rss or 0) + int(parts[1])
    return rss


def agent_bpf(pid):
    """The agent's programs ({id: kernel run count}) and its dc_runs maps,
    from its descriptors' fdinfo."""
    named = {m["id"] for m in json.loads(subprocess.check_output(["bpftool", "-j", "map", "show"]))
             if m.get("name") == "dc_runs"}
    progs, maps = {}, set()
    for kind, info in bpf_fds(pid):
        if kind == "map" and int(info.get("map_id", -1)) in named:
            maps.add(int(info["map_id"]))
        elif kind == "prog":
            progs[int(info["prog_id"])] = int(info.get("run_cnt", 0))
    return progs, maps


def percpu_sum(entry):
    """The sum over CPUs of a bpftool per-CPU array entry, with BTF or without
    (a value is then its bytes in hex, little-endian)."""
    e = entry.get("formatted", entry)
    total = 0
    for v in e["values"]:
        x = v["value"]
        total += int.from_bytes(bytes(int(b, 16) for b in x), "little") if isinstance(x, list) \
            else int(x)
    return total


def agent_runs(pid):
    """(kernel runs before, the programs' own count, kernel runs after):
    every process on the node runs the programs while bpftool reads the
    counters, so the own count lies between the kernel's two readings."""
    progs, maps = agent_bpf(pid)
    k1 = sum(progs.values())
    counted = 0
    for m in sorted(maps):
        for e in json.loads(subprocess.check_output(["bpftool", "-j", "map", "dump", "id", str(m)])):
            counted += percpu_sum(e)
    k2 = sum(agent_bpf(pid)[0].values())
    return k1, counted, k2


def stats_fd_open(pid):
    """Whether pid holds a BPF statistics fd (BPF_ENABLE_STATS)."""
    d = "/proc/%d/fd" % pid
    for fd in os.listdir(d):
        try:
            if os.readlink(os.path.join(d, fd)) == "anon_inode:bpf-stats":
                return True
        except OSError:
            pass
    return False


def stats_fd_holder():
    """A process holding the kernel's BPF statistics on (BPF_ENABLE_STATS),
    as bpftop does, until killed; None where the bpf system call's number
    is not known here."""
    nr = {"x86_64": 321, "aarch64": 280}.get(platform.machine())
    if nr is None:
        return None
    code = ("import ctypes, os, sys, time\n"
            "libc = ctypes.CDLL(None, use_errno=True)\n"
            "attr = (ctypes.c_ubyte * 128)()  # enable_stats.type = BPF_STATS_RUN_TIME (0)\n"
            "fd = libc.syscall(%d, 32, attr, 128)  # bpf(BPF_ENABLE_STATS)\n"
            "if fd < 0:\n"
            "    sys.exit(os.strerror(ctypes.get_errno()))\n"
            "print('on', flush=True)\n"
            "time.sleep(600)\n" % nr)
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    if p.stdout.readline().strip() != "on":
        p.wait()
        raise RuntimeError("could not hold the BPF statistics on (exit %s)" % p.returncode)
    return p


# probes[] names -> a features record's `lacks` names
LACKS_NAME = {"files": "files", "block": "block", "pagecache": "page_cache",
              "io_uring": "io_uring", "libraries": "libraries", "vfs": "vfs"}
# what the default configuration runs, but for the libraries (configured here)
DEFAULT_LAYERS = {"files", "block", "page_cache", "io_uring", "vfs"}


def check_lacks(c, recs, configured):
    """Every features record lacks exactly the configured layers its window's
    agent record does not list as running (switched off by the budget, a
    family that did not start again: mechanism `off`; one the kernel
    refused: not listed): a consumer tells a layer's silence from its
    absence. Returns the windows whose records lacked each layer, and the
    windows that had features records."""
    want = {}
    for r in recs:
        if r["type"] == "agent":
            running = {LACKS_NAME[p["name"]] for p in r["probes"]
                       if p["mechanism"] != "off" and p["name"] in LACKS_NAME}
            want[r["window"]] = sorted(configured - running)
    bad, lacking, wins = [], {}, set()
    for r in recs:
        if r["type"] != "features" or r["window"] not in want:
            continue
        wins.add(r["window"])
        got = r.get("lacks", [])
        if sorted(got) != want[r["window"]]:
            bad.append((r["window"], r["pid"], got, want[r["window"]]))
        for layer in got:
            lacking.setdefault(layer, set()).add(r["window"])
    c.check(wins and not bad, "each features record lacks the configured layers not running in "
            "its window (%d windows; window, pid, lacks, want): %s" % (len(wins), bad[:5]))
    return lacking, wins


def scenario_selfcost(agent_bin, load_bin):
    c = Checks()
    tmp = tempfile.mkdtemp(prefix="dc-self-")
    data = os.path.join(tmp, "data")
    a = Agent(agent_bin, 'interval = 0.25;\nself = { map_scan_sec = 0.5; };\n'
              'traces = { output = { dir = "%s"; }; sampling = { one_in_n = 10; rate = 0; }; };\n'
              % os.path.join(tmp, "traces"))
    time.sleep(0.3)
    before = agent_runs(a.proc.pid)
    pid = load(load_bin, data, 20000)
    time.sleep(0.6)
    after = agent_runs(a.proc.pid)
    # every program counts its own runs first thing, once (a program left
    # out, or counting twice, is off by its share of the runs: a half for
    # the system call exit); the 1% slack is for runs a plain add lost
    lo, hi = after[0] - before[2], after[2] - before[0]
    counted = after[1] - before[1]
    c.check(lo >= 40000 and 0.99 * lo <= counted <= hi,
            "the programs' own run count agrees with the kernel's (%d, the kernel's %d to %d)"
            % (counted, lo, hi))
    progs, maps = agent_bpf(a.proc.pid)
    shown = {p["id"]: p for p in json.loads(subprocess.check_output(["bpftool", "-j", "prog",
                                                                      "show"]))}
    blind = [shown.get(i, {}).get("name", i) for i in progs
             if not maps & set(shown.get(i, {}).get("map_ids", []))]
    c.check(len(maps) >= 3 and progs and not blind,
            "every program of the agent's %d uses its object's run counter (%d objects; "
            "without: %s)" % (len(progs), len(maps), blind))
    # the embedded BPF objects (3.7 MB, the VFS one 2.9 MB) are released
    # once libbpf opened them: what stays resident of the agent's own file
    # is its code and data (mech_release_image, agent/mechanism.h)
    own = binary_rss_kib(a.proc.pid, os.path.realpath(agent_bin))
    c.check(own is not None and own < 2048,
            "the agent's binary keeps under 2 MiB resident, its BPF objects released (%s KiB)"
            % own)
    c.eq(a.stop(), 0, "agent exits 0")
    recs = a.records()
    ag = [r for r in recs if r["type"] == "agent"]
    # 0.25 s windows: a tenth of one is too short to sample, so always on
    c.check(all(r["cost"]["bpf_stats"].startswith("fd (always on") or
                r["cost"]["bpf_stats"] == "sysctl" for r in ag),
            "BPF run-time statistics on, exact (%s)" % ag[0]["cost"]["bpf_stats"])
    enter = sum(p["runs"] for r in ag for p in r["programs"]
                if p["layer"] == "syscall" and "enter" in p["name"])
    calls = sum(r["ops"].get("pwrite64", {}).get("count", 0) for r in recs
                if r["type"] == "features" and r["pid"] == pid)
    c.eq(calls, 20000, "the workload's 20,000 pwrite64 calls counted")
    c.check(enter >= calls, "the syscall entry program ran at least once per call (%d runs)"
            % enter)
    # a program's runs are its share, rounded: half a run each at most
    c.check(all(abs(r["layers"]["syscall"]["runs"] -
                    sum(p["runs"] for p in r["programs"] if p["layer"] == "syscall"))
                <= r["layers"]["syscall"]["programs"] / 2 for r in ag),
            "a layer's runs are the sum of its programs', to their rounding")
    c.check(all(r["layers"]["syscall"]["run_ns"] > 0 for r in ag if r["layers"]["syscall"]["runs"]),
            "run time measured wherever programs ran")
    c.check(all(abs(r["cost"]["total_share"] - r["cost"]["bpf_share"] - r["cost"]["cpu_share"])
                < 1e-6 for r in ag), "total share = kernel programs + user space")
    c.check(all(abs(r["cost"]["bpf_run_ns"] - sum(l["run_ns"] for l in r["layers"].values())) <= 0
                for r in ag), "bpf_run_ns = the layers' run time")
    scans = [r for r in ag if "map_fill" in r]
    c.check(len(scans) >= 2, "maps walked every 0.5 s (%d of %d windows)" % (len(scans), len(ag)))
    c.check(all(0 <= m["entries"] <= m["max_entries"] for r in scans for m in r["map_fill"]),
            "map entries within their bounds")
    c.check(any(m["layer"] == "syscall" and m["entries"] > 0 for r in scans for m in r["map_fill"]),
            "a syscall map holds entries (the process table)")
    rings = {m["name"]: m for r in ag for m in r["rings"]}
    c.eq(rings.get("traces", {}).get("size"), 2 << 20, "the trace ring reported at its (default) size")
    c.check(all(0 <= m["used"] <= m["size"] for r in ag for m in r["rings"]), "ring use within size")
    for r in ag:
        lo = r["losses"]
        if lo["sampled_out"] != r["traces"]["sampled_out"] or \
           lo["ring_full"] != r["traces"]["dropped"] + r["files"]["drops"]["names_lost"]:
            c.check(False, "losses summary agrees with the layers in window %d" % r["window"])
            break
    else:
        c.check(True, "losses summary agrees with the layers' counters in every window")
    # each call kept with probability 1/10: 18,000 expected, 7 standard
    # deviations 300 (the node's other calls only add to it)
    c.check(sum(r["losses"]["sampled_out"] for r in ag) >= 20000 * 9 // 10 - 300,
            "1 in 10 kept: the other 9 counted as sampled out")
    c.check(all(r["budget"] is None for r in ag), "budget.cpu = 0: no budget object")

    # sampled: on for a tenth of each 1 s window, in its middle; the runs
    # are the programs' own count, the sample gives the time per run. Then
    # the same while another tool holds its own statistics fd (bpftop), so
    # that the programs are timed all window unknown to the agent: scaled
    # up by time, the sample then read high by up to 1/duty (10x)
    for other in (False, True):
        what = "sampled, another tool's statistics on" if other else "sampled"
        tool = stats_fd_holder() if other else None
        if other and not tool:
            print("# skipped: %s (the bpf system call's number on %s)"
                  % (what, platform.machine()))
            continue
        try:
            a = Agent(agent_bin, 'interval = 1.0;\nself = { bpf_stats_duty = 0.1; };\n')
            t_end = time.monotonic() + 4.5
            while time.monotonic() < t_end:
                load(load_bin, data + "s", 20000)
            c.eq(a.stop(), 0, "agent exits 0 (%s)" % what)
        finally:
            if tool:
                tool.kill()
                tool.wait()
        ag = [r for r in a.records() if r["type"] == "agent"][1:-1]  # wholly inside the load
        c.check(ag and all("on 10% of each window" in r["cost"]["bpf_stats"] for r in ag),
                "%s: statistics sampled (%s)" % (what, ag[0]["cost"]["bpf_stats"] if ag else None))
        # every system call counted ran the entry and the exit program; the
        # node's other calls only add runs (1.007 to 1.008 a window here;
        # 1.5 fails a count taken twice).
        # Read after the drain instead of at the flip, a window's runs
        # varied by 4% (0.964 to 1.028); scaled up by time, the sample read
        # 0.50 to 0.93 of this (bench/stats_duty_bench.py).
        feats = [r for r in a.records() if r["type"] == "features"]
        ratios = []
        for r in ag:
            n = sum(o["count"] for f in feats if f["window"] == r["window"]
                    for o in f["ops"].values())
            if n:
                ratios.append(r["layers"]["syscall"]["runs"] / (2.0 * n))
        c.check(len(ratios) >= 2 and all(0.99 <= x <= 1.5 for x in ratios),
                "%s: at least two runs per system call in every window (%s)"
                % (what, ["%.3f" % x for x in ratios]))
        c.check(all(r["layers"]["syscall"]["run_ns"] > 0 for r in ag),
                "%s: the system-call programs' run time measured in every window" % what)

    # windows too short to sample keep the statistics on, until a reload
    # makes them long enough: sampled again (before, on for good)
    a = Agent(agent_bin, 'interval = 0.25;\n')
    time.sleep(0.6)
    with open(a.conf, "w") as f:
        f.write('interval = 1.0;\n')
    a.proc.send_signal(signal.SIGHUP)
    a.wait_for("READY=1", 60)
    time.sleep(1.5)
    # the agent's statistics fd, open only during the sample: a tenth of
    # the time (kept on, it would be open at every look)
    looks, end = [], time.monotonic() + 2.0  # two windows, two 0.1 s samples
    while time.monotonic() < end:
        looks.append(stats_fd_open(a.proc.pid))
        time.sleep(0.02)
    time.sleep(0.5)
    c.eq(a.stop(), 0, "agent exits 0 (interval reloaded)")
    c.check(1 <= looks.count(True) <= len(looks) // 2,
            "after the reload the statistics fd is open part of the time only (%d of %d looks)"
            % (looks.count(True), len(looks)))
    states = [r["cost"]["bpf_stats"] for r in a.records() if r["type"] == "agent"]
    c.check(states and states[0].startswith("fd (always on") and
            all("on 10% of each window" in x for x in states[-2:]),
            "0.25 s windows: statistics always on; 1 s windows after a reload: sampled again "
            "(%s, then %s)" % (states[:1], states[-2:]))
    c.done()


def scenario_bursts(agent_bin, wl_bin):
    """io_uring (quiet on a node but for this test) in bursts: across two
    windows' samples, each followed by a window whose burst ends well before
    its sample. The windows end on the wall clock's multiples of 2 s; a
    0.2 s sample sits in the middle of each (0.9 to 1.1 s in, a few ms later
    by the close)."""
    c = Checks()
    tmp = tempfile.mkdtemp(prefix="dc-bursts-", dir="/dev/shm")  # no disk's fsync stalls
    interval = 2.0
    a = Agent(agent_bin, 'interval = %g;\nself = { bpf_stats_duty = 0.1; };\n' % interval)

    def burst(lo, hi, window_start):
        """io_uring rings from lo to hi seconds into the window (wall clock):
        how many ran, and when the last one ended (s into the window)."""
        while time.time() < window_start + lo:
            time.sleep(0.01)
        n = 0
        while time.time() < window_start + hi - 0.05:
            workload_pid(run_workload(wl_bin, uring=1, iters=100, size=4096, bad_reads=0,
                                      dir=tmp))
            n += 1
        return n, time.time() - window_start

    # the first whole window after the start's, plus one for slack
    w0 = (int(time.time() / interval) + 2) * interval
    timed, before = (0.5, 1.5), (0.1, 0.45)
    spans = [(w0 + k * interval,) + (timed if k % 2 == 0 else before) for k in range(4)]
    done = [burst(lo, hi, ws) for ws, lo, hi in spans]
    # the last window closes on its own, not as the stop's partial one
    time.sleep(max(0, w0 + 4 * interval + 0.3 - time.time()))
    c.eq(a.stop(), 0, "agent exits 0")
    shutil.rmtree(tmp, ignore_errors=True)
    c.check(all(n for n, _ in done) and all(end < 0.8 for n, end in done[1::2]),
            "io_uring bursts ran in every span, those before the sample ended by 0.8 s (%s)"
            % ["%d runs to %.2f s" % d for d in done])
    ag = [r for r in a.records() if r["type"] == "agent"]
    # a window starts when the last one closed: on the boundary, a little late
    got = [next((r for r in ag if 0 <= r["ts_start"] - ws * 1e6 <= 300000), None)
           for ws, _, _ in spans]
    c.check(all(got), "an agent record for each window of a burst (%s)"
            % [bool(r) for r in got])
    if not all(got):
        c.done()
        return
    c.check(all("on 10% of each window" in r["cost"]["bpf_stats"] for r in got),
            "statistics sampled (%s)" % got[0]["cost"]["bpf_stats"])
    ur = [r["layers"]["io_uring"] for r in got]
    c.check(all(u["runs"] > 0 for u in ur), "io_uring's programs ran in every burst's window (%s)"
            % [u["runs"] for u in ur])
    c.check(all(not u.get("run_ns_estimated") and u["run_ns"] > 0 for u in ur[0::2]),
            "the bursts across the sample: run time measured (%s ns a run)"
            % [u["ns_per_run"] for u in ur[0::2]])
    # before, these windows read no run time (ns_per_run null): the layer
    # cost nothing whenever its work missed the tenth of the window sampled
    c.check(all(u.get("run_ns_estimated") and u["run_ns"] > 0 for u in ur[1::2]),
            "bursts before the sample: run time from the earlier samples (%s)"
            % [(u["run_ns"], u.get("run_ns_estimated")) for u in ur[1::2]])
    first, second = ur[0]["ns_per_run"] or 0, ur[2]["ns_per_run"] or 0
    est = [u["ns_per_run"] or 0 for u in ur[1::2]]
    c.check(abs(est[0] - first) <= 0.01 * first,
            "after one sample: its time per run (%s against %s)" % (est[0], first))
    # a mean of the two, weighted by their runs in the samples
    c.check(0.99 * min(first, second) <= est[1] <= 1.01 * max(first, second),
            "after two: between theirs (%s, from %s and %s)" % (est[1], first, second))
    c.check(all(r["cost"]["bpf_run_ns"] == sum(v["run_ns"] for v in r["layers"].values())
                for r in got), "the estimate counts in the agent's cost (bpf_run_ns)")
    c.done()


def budget_conf(tmp, load_bin, probes=""):
    """A budget of 10% of a core judged over 1 s, traces at 1 in 2 and
    uprobes on libc's pwrite*: two writers cost well over it."""
    return ('interval = 0.25;\nbudget = { cpu = 0.1; period = 1.0; recover_below = 0.6; };\n'
            'traces = { output = { dir = "%s"; }; sampling = { one_in_n = 2; rate = 0; }; };\n'
            'probes = { libraries = ( { path = "%s"; category = "libc"; '
            'functions = ["pwrite*"]; bytes = ["pwrite"]; } );\n%s};\n'
            % (os.path.join(tmp, "traces"), libc_path(load_bin), probes))


def scenario_budget(agent_bin, load_bin):
    c = Checks()
    tmp = tempfile.mkdtemp(prefix="dc-budget-")
    data = os.path.join(tmp, "data")
    # the programs run for every process on the node: the budget sits well
    # above what the rest of a test machine's I/O costs them, and the load
    # (two writers, uprobes, traces at 1 in 2) well above the budget
    conf = budget_conf(tmp, load_bin,
                       '  stacks = { enable = true; one_in_n = 4; slow_ms = 0.0; };\n')
    a = Agent(agent_bin, conf)
    vfs_on = any(p["name"] == "vfs" and p["mechanism"] != "off"
                 for r in [None] for p in [])  # filled from the first record below
    # load until the agent has given up everything it may
    deadline = time.monotonic() + 40
    peak = 0
    while time.monotonic() < deadline:
        load_two(load_bin, data)
        ag = agent_records(a.out)
        if ag:
            vfs_on = any(p["name"] == "vfs" and p["mechanism"] != "off" for p in ag[0]["probes"])
            top = ORDER.index("vfs_off" if vfs_on else "libraries_off")
            peak = max(r["budget"]["level"] for r in ag)
            if peak >= top:
                break
    # then idle until it has restored everything
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        time.sleep(0.5)
        ag = agent_records(a.out)
        if ag and ag[-1]["budget"]["level"] == 0 and peak and \
                any(r["budget"]["level"] for r in ag):
            break
    time.sleep(0.3)
    pid = load(load_bin, data, 2000)  # at full detail again: libc functions counted
    time.sleep(0.6)
    # a reload that changes the budget: applied in place, no probe reattached
    with open(a.conf, "w") as f:
        f.write(conf.replace("cpu = 0.1;", "cpu = 0.0;"))
    n_before_reload = len(a.notifications)
    a.proc.send_signal(signal.SIGHUP)
    a.wait_for("READY=1", 60)
    time.sleep(0.6)
    c.eq(a.stop(), 0, "agent exits 0")
    log = a.log()
    recs = a.records()
    ag = [r for r in recs if r["type"] == "agent"]
    before = [r for r in ag if r["budget"] is not None]
    ag_all, ag = ag, before
    levels = [r["budget"]["level"] for r in ag]
    top = ORDER.index("vfs_off" if vfs_on else "libraries_off")
    c.eq(max(levels), top, "over budget: every step taken (VFS layer %s here)"
         % ("on" if vfs_on else "off"))
    changes = [(a_, b_) for a_, b_ in zip(levels, levels[1:]) if a_ != b_]
    c.check(all(abs(a_ - b_) == 1 for a_, b_ in changes), "one step per decision: %s" % changes)
    first = [levels.index(lv) for lv in range(top + 1)]
    c.check(first == sorted(first), "detail given up in order: %s (first windows %s)"
            % (", ".join(ORDER[1:top + 1]), first))
    peak = levels.index(top)
    after = levels[peak:]
    c.check(0 in after, "full detail again after the peak")
    if 0 in after:
        firsts = [after.index(lv) for lv in range(top - 1, -1, -1)]
        c.check(firsts == sorted(firsts),
                "restored in reverse order (first windows after the peak %s)" % firsts)
    for name in ORDER[1:top + 1]:
        c.check("giving up detail, %s" % name in log, "logged: giving up %s" % name)
    c.check("restoring detail, full" in log, "logged: restoring full detail")
    status = [n for n in a.notifications[:n_before_reload] if "STATUS=" in n]
    c.check(any("budget traces_off since window" in n for n in status),
            "STATUS= says which step is in force")
    c.check(all("cost " in n and "% of a core (budget 10.00%" in n for n in status
                if "calls/s" in n), "STATUS= carries the cost against the budget")
    # each window ran at one level throughout: its record says which
    print("levels:", levels)
    print("averages:", [round(r["budget"]["average"], 4) for r in ag])
    stacks_wins = {r["window"] for r in recs if r["type"] == "stacks"}
    c.check(any(by_lv == 0 for w in stacks_wins for by_lv in [levels_by_win(ag).get(w, -1)]),
            "stacks records in windows at full detail")
    prev = 0
    for r in ag:
        lv = r["budget"]["level"]
        probes = {p["name"]: p for p in r["probes"]}
        # a change applies after the previous window is published: calls
        # in the first milliseconds of the window still ran at the old one
        settled, prev = lv == prev, lv
        if lv >= LV["traces_off"] and settled and r["traces"]["kept"]:
            c.check(False, "window %d at traces_off kept %d trace events"
                    % (r["window"], r["traces"]["kept"]))
            break
        if lv >= LV["stacks_off"] and settled and r["window"] in stacks_wins:
            c.check(False, "window %d at stacks_off has stacks records" % r["window"])
            break
        if lv >= LV["libraries_off"] and (probes.get("libraries", {}).get("mechanism") != "off" or
                        "CPU budget" not in probes["libraries"]["detail"]):
            c.check(False, "window %d at libraries_off: probes say %s"
                    % (r["window"], probes.get("libraries")))
            break
        if lv >= LV["vfs_off"] and "CPU budget" not in probes.get("vfs", {}).get("detail", ""):
            c.check(False, "window %d at vfs_off: probes say %s" % (r["window"], probes.get("vfs")))
            break
        if r["budget"]["reduced"] != [n for n in ORDER[1:lv + 1] if n != "vfs_off" or vfs_on]:
            c.check(False, "window %d: reduced %s at level %d" % (r["window"], r["budget"]["reduced"], lv))
            break
    else:
        c.check(True, "every window's record matches its level (traces kept, probes, reduced)")
    by_win = {r["window"]: r["budget"]["level"] for r in ag}
    feats = [r for r in recs if r["type"] == "features"]
    c.check(not any(k.endswith("-libc") for r in feats
                    if by_win.get(r["window"], 0) >= LV["libraries_off"]
                    for k in r.get("functions", {})),
            "no library functions in windows at libraries_off")
    c.check(any(by_win.get(r["window"]) >= LV["libraries_off"] and
                r["ops"].get("pwrite64", {}).get("count") for r in feats),
            "the syscall layer keeps counting at the floor")
    c.check(any(r["pid"] == pid and r.get("functions", {}).get("pwrite-libc", {}).get("count")
                for r in feats),
            "library functions counted again once restored")
    lacking, wins = check_lacks(c, recs, DEFAULT_LAYERS | {"libraries"})
    want = {w for w, lv in by_win.items() if lv >= LV["libraries_off"]} & wins
    got = lacking.get("libraries", set())
    c.check(want and got == want, "records lack the libraries in the windows at libraries_off "
            "and beyond (of those with features records), and no others: %s, want %s"
            % (sorted(got), sorted(want)))
    c.check("Reloaded the configuration: budget" in log, "reload: the budget changed in place")
    c.check(ag_all[-1]["budget"] is None and len(ag_all) > len(ag),
            "budget.cpu = 0 after the reload: no budget in the last records")
    c.done()


def scenario_budget_reload(agent_bin, load_bin):
    """Reloads while detail is given up. One that changes the libraries' probes
    at libraries_off checks them and leaves them off (attached, they would be
    detached at once), then one that changes only the budget: the window in
    progress goes out at the level it ran at, then the new budget starts
    from full detail, the libraries with it."""
    c = Checks()
    tmp = tempfile.mkdtemp(prefix="dc-budget-rl-")
    data = os.path.join(tmp, "data")
    conf = 'log_level = "debug";\n' + budget_conf(tmp, load_bin)
    a = Agent(agent_bin, conf)
    writers = [subprocess.Popen([load_bin, data + str(i), "100000000"], stdout=subprocess.DEVNULL)
               for i in range(2)]

    def reload(text):
        with open(a.conf, "w") as f:
            f.write(text)
        t = time.time()
        a.proc.send_signal(signal.SIGHUP)
        a.wait_for("READY=1", 60)
        return t, a.log()

    try:
        level = poll(lambda: max([r["budget"]["level"] for r in agent_records(a.out)[-2:]
                                  if r["budget"]] or [0]) >= LV["libraries_off"], 40)
        log0 = a.log()
        _, log1 = reload(conf.replace('"pwrite*"', '"pwrite64*"'))
        level1 = agent_records(a.out)[-1]["budget"]["level"]
        # checked though not attached: a library that is not there is refused
        _, log_bad = reload(conf.replace(libc_path(load_bin), "/nonexistent/libc.so.6"))
        # mid-window, so that most of the window in progress ran degraded
        time.sleep(0.125 - time.time() % 0.25 + 0.25)
        t_hup, _ = reload(conf.replace('"pwrite*"', '"pwrite64*"').replace("cpu = 0.1;",
                                                                            "cpu = 0.0;"))
        time.sleep(0.6)
    finally:
        for w in writers:
            w.kill()
            w.wait()
    c.eq(a.stop(), 0, "agent exits 0")
    log2 = a.log()
    shutil.rmtree(tmp, ignore_errors=True)
    c.check(level, "libraries_off reached under load before the reloads")
    during = log1[len(log0):]
    c.check("Reloaded the configuration: probes reattached" in during and
            "Starting the library probes" not in during and level1 >= LV["libraries_off"],
            "a reload of the libraries at libraries_off (level %d after it) leaves them off, "
            "unattached" % level1)
    bad = log_bad[len(log1):]
    c.check("Reload refused: /nonexistent/libc.so.6" in bad and
            "still running on the previous one" in bad,
            "a missing library at libraries_off: the reload is refused all the same")
    c.check("Starting the library probes" in log2[len(log_bad):],
            "the budget's reset to full detail attaches them")
    ag = [r for r in a.records() if r["type"] == "agent"]
    was = [r for r in ag if r["ts_start"] < (t_hup - 0.05) * 1e6]
    cur = was[-1] if was else None
    c.check(cur and cur["budget"] and cur["budget"]["level"] >= 1,
            "the window in progress at the budget's reload says the level it ran at (%s)"
            % (cur and cur["budget"]))
    c.check(cur and cur["ts_end"] <= (t_hup + 0.2) * 1e6,
            "and ends at the reload (%.3f s after the signal)"
            % ((cur["ts_end"] / 1e6 - t_hup) if cur else -1))
    c.check(ag[-1]["budget"] is None, "budget.cpu = 0 after the reload: no budget")
    c.check(any(k == "pwrite64-libc" for r in a.records() if r["type"] == "features"
                and r["ts_start"] >= t_hup * 1e6 for k in r.get("functions", {})),
            "the new patterns' functions counted once the libraries are back")
    c.done()


def scenario_reload_close(agent_bin, load_bin):
    """A budget so small that every window spends its allowance: each close
    gives up one more step. A reload that replaces it, caught with steps
    left, publishes the window so far; the old budget must not judge that
    close, or its step was logged and applied (probes detached), then undone
    at once by the new budget's full detail."""
    c = Checks()
    tmp = tempfile.mkdtemp(prefix="dc-budget-rc-")
    data = os.path.join(tmp, "data")
    conf = 'log_level = "debug";\n' + budget_conf(
        tmp, load_bin, '  stacks = { enable = true; one_in_n = 4; slow_ms = 0.0; };\n')
    a = Agent(agent_bin, conf.replace("cpu = 0.1;", "cpu = 0.00001;"))
    writers = [subprocess.Popen([load_bin, data + str(i), "100000000"], stdout=subprocess.DEVNULL)
               for i in range(2)]
    try:
        # the first record at a reduced level: the next step is in force
        # and the one after it due at the next close
        seen = poll(lambda: max([r["budget"]["level"] for r in agent_records(a.out)
                                 if r["budget"]] or [0]), 30, 0.02)
        with open(a.conf, "w") as f:
            f.write(conf.replace("cpu = 0.1;", "cpu = 0.05;"))
        a.proc.send_signal(signal.SIGHUP)
        a.wait_for("READY=1", 60)
        time.sleep(0.3)
    finally:
        for w in writers:
            w.kill()
            w.wait()
    c.eq(a.stop(), 0, "agent exits 0")
    log = a.log()
    shutil.rmtree(tmp, ignore_errors=True)
    c.check(1 <= seen < LV["stacks_off"],
            "the reload came with steps left (the last record's level %d)" % seen)
    start = log.find("Reload: publishing the window so far")
    closing = log[start:log.find("Reloaded the configuration", max(start, 0))]
    c.check(start >= 0 and "giving up detail" not in closing,
            "the replaced budget takes no step at the reload's close")
    c.done()


def scenario_trial(agent_bin, load_bin):
    """A burst over the budget, then an idle agent that costs more than
    recover_below of it: each step back is a trial, and the records of the
    windows it covers say so (before, only the log did), until the next
    change of level; a step down is no trial."""
    c = Checks()
    tmp = tempfile.mkdtemp(prefix="dc-budget-trial-")
    data = os.path.join(tmp, "data")
    # quiet would be under 0.25% of a core: an idle agent draining every
    # 250 ms costs more than that here (0.7 to 1%), the writers ten times
    # the budget
    conf = ('interval = 0.25;\nbudget = { cpu = 0.05; period = 1.0; recover_below = 0.05; };\n'
            'traces = { output = { dir = "%s"; }; sampling = { one_in_n = 2; rate = 0; }; };\n'
            % os.path.join(tmp, "traces"))
    a = Agent(agent_bin, conf)
    time.sleep(1.5)
    poll(lambda: load_two(load_bin, data) or
         any(r["budget"]["level"] for r in agent_records(a.out)), 40, 0)
    # a trial waits ten holds of a period under the budget
    poll(lambda: any(r["budget"]["trial"] for r in agent_records(a.out)), 40)
    time.sleep(0.6)
    c.eq(a.stop(), 0, "agent exits 0")
    log = a.log()
    status = [n for n in a.notifications if "STATUS=" in n]
    ag = [r for r in a.records() if r["type"] == "agent"]
    shutil.rmtree(tmp, ignore_errors=True)
    steps = [(p["budget"]["level"], r["budget"]["level"], r["budget"]["trial"])
             for p, r in zip(ag, ag[1:]) if p["budget"]["level"] != r["budget"]["level"]]
    backs = [t for f, to, t in steps if to < f]
    c.check(steps and all(not t for f, to, t in steps if to > f),
            "no step down is a trial: %s" % steps)
    said = log.count(", a trial: under the budget, not under recover_below")
    c.check(said >= 1, "the log says a step back was a trial (%d)" % said)
    c.eq(sum(backs), said, "the records' trial steps back, of %d steps back" % len(backs))
    c.check(all(p["budget"]["trial"] == r["budget"]["trial"]
                for p, r in zip(ag, ag[1:]) if p["budget"]["level"] == r["budget"]["level"]),
            "a trial stands until the next change of level")
    c.check(not ag[0]["budget"]["trial"], "the first window is no trial")
    c.check(any("(a trial)" in n for n in status), "STATUS= says the level is a trial")
    c.done()


def poll(what, timeout, step=0.25):
    """what() until it is true, or the deadline: its last value."""
    deadline = time.monotonic() + timeout
    v = what()
    while not v and time.monotonic() < deadline:
        time.sleep(step)
        v = what()
    return v


def libs_probe(r):
    return next((p for p in r["probes"] if p["name"] == "libraries"), None)


def libs_on(recs):
    return [r["window"] for r in recs if (libs_probe(r) or {}).get("mechanism", "off") != "off"]


def libs_owed(recs):
    return [r["window"] for r in recs if libs_probe(r) and libs_probe(r)["mechanism"] == "off"
            and "did not start again" in libs_probe(r)["detail"]]


# tries come 1, 2, 4 ... windows apart (up to a minute at 0.25 s windows);
# the file is back within a few windows of the first failure, while they
# are 8 windows apart at most: the next comes within 16 windows (4 s)
RETRY_WAIT = 30


def agents_now(a):
    """The agent records written so far, read once."""
    return agent_records(a.out)


def owed_libs_agent(agent_bin, load_bin, name):
    """An agent with uprobes on a private copy of libc (which a test can
    take away) and no VFS layer, loaded until the budget reached
    libraries_off: (agent, its configuration, the copy, the load's dir)."""
    tmp = tempfile.mkdtemp(prefix="dc-budget-%s-" % name)
    data = os.path.join(tmp, "data")
    lib = os.path.join(tmp, "libdc-%s.so.6" % name)
    shutil.copy(libc_path(load_bin), lib)
    conf = ('interval = 0.25;\nbudget = { cpu = 0.1; period = 1.0; recover_below = 0.6; };\n'
            'traces = { output = { dir = "%s"; }; sampling = { one_in_n = 2; rate = 0; }; };\n'
            'probes = { vfs = { enable = false; };\n'
            '  libraries = ( { path = "%s"; category = "libc"; functions = ["pwrite*"]; } ); };\n'
            % (os.path.join(tmp, "traces"), lib))
    a = Agent(agent_bin, conf)
    deadline = time.monotonic() + 40
    while time.monotonic() < deadline:
        load_two(load_bin, data)
        ag = agent_records(a.out)
        if ag and max(r["budget"]["level"] for r in ag) >= LV["libraries_off"]:
            break
    return a, conf, lib, data


def scenario_retry(agent_bin, load_bin):
    """A family the budget gave back that fails to start when detail is
    restored (its library gone meanwhile) is tried again at later closes,
    and comes back once it can, without another change of level."""
    c = Checks()
    a, _, lib, _ = owed_libs_agent(agent_bin, load_bin, "retry")
    top = LV["libraries_off"]
    # the library goes away while its probes are off: they cannot come back
    os.rename(lib, lib + ".away")
    # idle: full detail again, the libraries owed
    def owed_at_full():
        recs = agents_now(a)
        owed = libs_owed(recs)
        return [r for r in recs if r["budget"]["level"] == 0 and r["window"] in owed]

    def on_after_owed():
        recs = agents_now(a)
        owed = libs_owed(recs)
        return [w for w in libs_on(recs) if owed and w > owed[0]]

    poll(owed_at_full, 60)
    os.rename(lib + ".away", lib)
    poll(on_after_owed, RETRY_WAIT)
    c.eq(a.stop(), 0, "agent exits 0")
    log = a.log()
    ag = [r for r in a.records() if r["type"] == "agent"]
    levels = [r["budget"]["level"] for r in ag]
    c.eq(max(levels), top, "over budget: libraries_off reached")
    back = [i for i in range(1, len(levels)) if levels[i] == 0 and levels[i - 1] > 0]
    c.check(back, "full detail restored: %s" % levels)
    owed = [w for w in libs_owed(ag) if levels[w] == 0]
    c.check(owed, "at full detail, the agent record says the libraries did not start again")
    c.check("The library probes did not start again" in log,
            "logged: the libraries did not start again")
    c.check("The library probes came back" in log,
            "logged: the libraries came back, tried again without a change of level")
    lacking, wins = check_lacks(c, a.records(), (DEFAULT_LAYERS - {"vfs"}) | {"libraries"})
    seen = set(owed) & wins
    c.check(seen and seen <= lacking.get("libraries", set()),
            "records of the windows the libraries were owed lack them (%d windows)" % len(seen))
    again = [w for w in libs_on(ag) if owed and w > owed[-1]]
    c.check(again and all(levels[i] == 0 for i in range(owed[0], again[0] + 1)),
            "the libraries attached again at the same level (windows %s to %s): %s"
            % (owed[:1], again[:1], levels[owed[0]:] if owed else levels))
    c.done()


def scenario_libs_gone(agent_bin, load_bin):
    """A reload whose new libraries cannot be probed goes back to the running
    configuration; when that one's library is gone too (deleted since it was
    attached), the agent runs on without it and tries it again, where it
    used to stop."""
    c = Checks()
    tmp = tempfile.mkdtemp(prefix="dc-libs-gone-")
    lib = os.path.join(tmp, "libdc-gone.so.6")
    shutil.copy(libc_path(load_bin), lib)
    # written whole here: the reload must change the libraries and nothing
    # else (the harness adds its trace directory and budget only to a text
    # without them)
    conf = ('interval = 0.25;\nbudget = { cpu = 0.0; };\n'
            'traces = { output = { dir = "%s"; }; };\nprobes = { vfs = { enable = false; };\n'
            '  libraries = ( { path = "%s"; category = "libc"; functions = ["%s"]; } ); };\n')
    traces = os.path.join(tmp, "traces")
    a = Agent(agent_bin, conf % (traces, lib, "pwrite*"))
    c.check(poll(lambda: libs_on(agents_now(a)), 10), "the libraries attached")
    os.rename(lib, lib + ".away")
    with open(a.conf, "w") as f:
        f.write(conf % (traces, lib, "pread*"))
    a.proc.send_signal(signal.SIGHUP)
    try:
        a.wait_for("READY=1", 30)
    except RuntimeError as e:
        print(e)
    running = a.proc.poll() is None
    c.check(running, "the agent runs on after the reload (exit status %s)" % a.proc.returncode)
    if running:
        owed = poll(lambda: libs_owed(agents_now(a)), 5)
        c.check(owed, "its agent records say the libraries did not start again")
        os.rename(lib + ".away", lib)
        back = poll(lambda: [w for w in libs_on(agents_now(a)) if owed and w > owed[0]],
                    RETRY_WAIT)
        c.check(back, "the libraries attached again once the file was back")
        c.eq(a.stop(), 0, "agent exits 0")
        log = a.log()
        c.check("Configuration reload failed to attach the new probes" in log,
                "logged: the reload failed and went back")
        c.check("The library probes came back" in log, "logged: the libraries came back")
        c.eq(log.count("The library probes did not start again"), 1,
             "said once that they did not start again, not at every try")
    c.done()


def scenario_reload_owed(agent_bin, load_bin):
    """A reload of the budget alone, at full detail, starts an owed family
    at once, in the middle of a window: that window's records lack it
    (they hold only part of its calls) though its agent record, written at
    the close, lists it running; the next window's do not."""
    c = Checks()
    a, conf, lib, _ = owed_libs_agent(agent_bin, load_bin, "owed")
    os.rename(lib, lib + ".away")
    # owed at full detail for 17 windows: tries came 1, 2, 4 and 8 windows
    # apart (at 1, 3, 7 and 15), the next is 16 after the last (window 31),
    # 3.5 s for the reload to come first
    def owed_at_full():
        recs = agents_now(a)  # once a step: the file grows with every window
        owed = set(libs_owed(recs))
        return [r for r in recs if r["budget"]["level"] == 0 and r["window"] in owed][16:]

    poll(owed_at_full, 60)
    os.rename(lib + ".away", lib)
    with open(a.conf, "w") as f:
        f.write(conf.replace("cpu = 0.1;", "cpu = 0.12;"))
    # the window in progress: the one after the last published
    w_hup = max(r["window"] for r in agents_now(a)) + 1
    a.proc.send_signal(signal.SIGHUP)
    a.wait_for("READY=1", 30)
    def on_after_owed():
        recs = agents_now(a)
        owed = libs_owed(recs)
        return [w for w in libs_on(recs) if owed and w > owed[-1]][1:]

    poll(on_after_owed, 10)
    c.eq(a.stop(), 0, "agent exits 0")
    log = a.log()
    recs = a.records()
    ag = [r for r in recs if r["type"] == "agent"]
    owed = libs_owed(ag)
    back = [w for w in libs_on(ag) if owed and w > owed[-1]]
    c.check(owed and back, "the libraries owed, then running again (owed %s, on %s)"
            % (owed[-3:], back[:3]))
    # the next try was 14 windows away or more: the reload started them,
    # in the window it came in (or the next, had a close come between)
    by_reload = back and back[0] in (w_hup, w_hup + 1) and "Reloaded the configuration" in log
    c.check(by_reload, "the reload started them, in its window (%d; running from %s)"
            % (w_hup, back[:1]))
    if by_reload:
        w0 = back[0]

        def feats(w):
            return [r for r in recs if r["type"] == "features" and r["window"] == w]
        c.check(feats(w0) and all("libraries" in r.get("lacks", []) for r in feats(w0)),
                "the window the reload started them in lacks them (window %d: %s)"
                % (w0, [r.get("lacks") for r in feats(w0)]))
        # (a layer the kernel refused stays lacking: check_lacks)
        c.check(feats(w0 + 1) and not any("libraries" in r.get("lacks", [])
                                          for r in feats(w0 + 1)),
                "the next window does not lack them (window %d: %s)"
                % (w0 + 1, [r.get("lacks") for r in feats(w0 + 1)]))
    c.done()


def main():
    name, agent_bin, load_bin = sys.argv[1:4]
    require_root()
    {"selfcost": scenario_selfcost, "selfcost-bursts": scenario_bursts,
     "budget": scenario_budget, "budget-reload": scenario_budget_reload,
     "budget-reload-close": scenario_reload_close, "budget-trial": scenario_trial,
     "budget-retry": scenario_retry, "libs-gone": scenario_libs_gone,
     "budget-reload-owed": scenario_reload_owed}[name](agent_bin, load_bin)


if __name__ == "__main__":
    main()
