#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""BPF test of the multi-level trace view (docs/stacks.md, docs/traces.md).

A workload in a cgroup traced in full writes through libc's pwrite (uprobed)
to a file on an ext4 image on a loop device, then fsyncs it through libc's
fsync, which makes the kernel write the data to the block device. Its
trace events must come from every layer, and `datacrumbs-flame layers`
must nest them: the library call above the system call above the VFS
function above the block requests, with each frame's time within its
parent's. Everything is attributed by the workload's pid and cgroup.

A second scenario, reload: a reload that restarts the system-call family
(a new trace ring) must restart the families that write into it, or their
events would go to the old ring, which nobody reads any more.

usage: test_layers.py nesting|reload AGENT STACKLOAD FLAME
"""
import decimal
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from agentlib import Agent, Checks, loop_device, require_root, run_checked  # noqa: E402
from test_stacks import Cgroup, parse_collapsed  # noqa: E402

ITERS = 50
BYTES_A = 16384
BYTES_B = 4096


def libc_path(binary):
    out = subprocess.run(["ldd", binary], capture_output=True, text=True, check=True).stdout
    return next(ln.split()[2] for ln in out.splitlines() if "libc.so" in ln)


def trace_events(d):
    """Every complete event of the trace files, decoded by the zstd tool."""
    out = []
    for f in sorted(os.listdir(d)):
        p = subprocess.run(["zstd", "-dc", os.path.join(d, f)], capture_output=True, check=True)
        for line in p.stdout.decode().splitlines():
            # exact decimals: a double holds a µs wall clock to 0.25 µs only
            ev = json.loads(line, parse_float=decimal.Decimal)
            if ev.get("ph") == "X":
                out.append(ev)
    return out


def span(ev):
    """[start, end) in integer nanoseconds."""
    start = int(ev["ts"] * 1000)
    return start, start + int(ev["dur"] * 1000)


def inside(inner, outer):
    return outer[0] <= inner[0] and inner[1] <= outer[1]


def reload(agent_bin, load):
    """Library events before and after a reload that makes a new trace ring."""
    c = Checks()
    cg = Cgroup()
    tmp = tempfile.mkdtemp(prefix="dc-layers-")
    tdir = os.path.join(tmp, "traces")

    def conf(ring_mib):
        return ('interval = 0.5;\n'
                'probes = { libraries = ( { path = "%s"; category = "libc"; functions = ["pwrite*"];'
                ' bytes = ["pwrite"]; } ); };\n'
                'traces = { ring_mib = %d; sampling = { one_in_n = 1000000000; slow_ms = 0;'
                ' full_cgroups = ["%s"]; }; output = { dir = "%s"; }; };\n'
                # as agentlib sets it: the reload's own attach cost must not make
                # the CPU budget clear the full-trace set
                'budget = { cpu = 0.0; };\n'
                % (libc_path(load), ring_mib, cg.rel, tdir))

    def run():
        p = subprocess.run([load, os.path.join(tmp, "data"), str(ITERS), str(BYTES_A), str(BYTES_B),
                            "0", "ab"], stdout=subprocess.PIPE, check=True, timeout=120,
                           preexec_fn=cg.enter)
        return int(p.stdout.decode().split()[-1])
    a = Agent(agent_bin, conf(2))
    try:
        try:
            before = run()
            with open(a.conf, "w") as f:
                f.write(conf(4))  # traces.ring_mib: the system-call family restarts
            a.proc.send_signal(signal.SIGHUP)
            a.wait_for("READY=1", 60)
            after = run()
        finally:
            c.eq(a.stop(), 0, "agent exits 0")
        evs = trace_events(tdir)
    finally:
        cg.remove()
        shutil.rmtree(tmp, ignore_errors=True)
    for label, pid in (("before", before), ("after", after)):
        lib = [e for e in evs if e["pid"] == pid and e["cat"] == "lib" and e["name"] == "pwrite"]
        sysc = [e for e in evs if e["pid"] == pid and e["cat"] == "syscall" and e["name"] == "pwrite64"]
        c.eq((len(lib), len(sysc)), (2 * ITERS, 2 * ITERS),
             "%s the reload: every library pwrite and its system call have their events" % label)
    # an id is the event's index in the agent's run (docs/traces.md): the
    # restarted family goes on numbering where the one before stopped
    ids = [e["id"] for e in evs]
    dup = len(ids) - len(set(ids))
    c.eq(dup, 0, "no event id repeats across the reload (%d events)" % len(ids))
    c.done()


def main():
    scenario, agent_bin, load, tool = sys.argv[1:5]
    require_root()
    if scenario == "reload":
        return reload(agent_bin, load)
    if scenario != "nesting":
        sys.exit("unknown scenario %s" % scenario)
    if not shutil.which("mkfs.ext4"):
        print("SKIP: mkfs.ext4 not installed (e2fsprogs)", flush=True)
        sys.exit(77)
    c = Checks()
    cg = Cgroup()
    # a cgroup2 cgroup's id is its directory's inode number
    cg_id = os.stat(cg.path).st_ino
    tmp = tempfile.mkdtemp(prefix="dc-layers-", dir="/var/tmp")
    mnt, tdir = os.path.join(tmp, "mnt"), os.path.join(tmp, "traces")
    a = None
    conf = ('interval = 0.5;\n'
            'probes = { libraries = ( { path = "%s"; category = "libc"; functions = ["pwrite*", "fsync"];'
            ' bytes = ["pwrite"]; } );\n'
            '  vfs = { categories = "vfs,ext4"; };\n  block = { enable = true; }; };\n'
            # the test's cgroup in full, nothing else sampled: one_in_n so high it never fires
            'traces = { sampling = { one_in_n = 1000000000; slow_ms = 0; full_cgroups = ["%s"]; };'
            ' output = { dir = "%s"; }; };\n' % (libc_path(load), cg.rel, tdir))
    try:
        with loop_device(tmp, ext4_at=mnt):
            a = Agent(agent_bin, conf)
            try:
                p = subprocess.run([load, os.path.join(mnt, "data"), str(ITERS), str(BYTES_A),
                                    str(BYTES_B), "0", "ab"], stdout=subprocess.PIPE, check=True,
                                   timeout=120, preexec_fn=cg.enter)
                pid = int(p.stdout.decode().split()[-1])
            finally:
                c.eq(a.stop(), 0, "agent exits 0")
        recs = a.records()
        log = a.log()
        evs = [e for e in trace_events(tdir) if e["pid"] == pid]
        for cat in ("lib", "syscall", "fs", "block"):
            ex = [e for e in evs if e["cat"] == cat and e["name"] in ("fsync", "ext4_sync_file", "write")]
            if ex:
                print("# example: %s" % json.dumps(ex[0], separators=(",", ":"), default=str))
        col = parse_collapsed(run_checked(
            [tool, "layers", "--pid", str(pid)] + [os.path.join(tdir, f) for f in os.listdir(tdir)],
            capture_output=True, check=True, timeout=120).stdout.decode())
    finally:
        if a and a.proc.poll() is None:
            a.proc.kill()
        cg.remove()
        shutil.rmtree(tmp, ignore_errors=True)

    agents = [r for r in recs if r["type"] == "agent"]
    probes = {pr["name"]: pr for r in agents for pr in r["probes"]}
    vfs = probes.get("vfs", {})
    print("# vfs probe: %s: %s" % (vfs.get("mechanism"), vfs.get("detail")))
    c.check("libraries" in probes and "block" in probes, "library and block probes attached")
    # every family's choice in the log, the VFS layer's too (it chooses
    # itself, and was the one family the log left out)
    want = "VFS probes attached with %s" % vfs.get("mechanism") \
        if vfs.get("mechanism") not in (None, "off") else "VFS probes off"
    c.check(want in log, "the log says how the VFS layer runs: %r" % want)

    def of(cat, name=None):
        return [e for e in evs if e["cat"] == cat and (name is None or e["name"] == name)]
    lib_pw, lib_fs = of("lib", "pwrite"), of("lib", "fsync")
    sys_pw, sys_fs = of("syscall", "pwrite64"), of("syscall", "fsync")
    vfs_fs = of("fs", "ext4_sync_file")
    blk = [e for e in of("block") if e["name"] == "write"]
    print("# events of pid %d: %s" % (pid, {k: len([e for e in evs if e["cat"] == k])
                                            for k in ("lib", "syscall", "vfs", "fs", "block")}))
    c.eq(len(lib_pw), 2 * ITERS, "every library pwrite has its event (full workload)")
    c.eq(sum(e["args"]["size"] for e in lib_pw), ITERS * (BYTES_A + BYTES_B),
         "the library events carry pwrite's bytes")
    c.eq((len(lib_fs), len(sys_fs)), (1, 1), "the fsync: one library event, one syscall event")
    c.check(all(e["args"].get("full") for e in lib_pw + lib_fs + blk + vfs_fs),
            "the other layers' events are kept as a fully traced workload")
    vfs_covered = vfs.get("mechanism") not in (None, "off") and \
        "ext4_sync_file" not in vfs.get("detail", "").split("not in this kernel")[-1]
    if vfs_covered:
        c.eq(len(vfs_fs), 1, "the fsync's ext4_sync_file has its event (VFS layer)")
    else:
        print("# note: ext4_sync_file is not covered by the VFS mechanism here: not checked")
    c.check(len(blk) >= 1, "block write requests carry the workload's pid (%d)" % len(blk))
    c.check(all(e["tid"] == pid for e in blk), "and its thread (the submitter)")
    c.check(all("dev" in e["args"] and "offset" in e["args"] for e in blk),
            "block events name their device and offset")

    # containment, from the events themselves
    if lib_fs and sys_fs:
        L, S = span(lib_fs[0]), span(sys_fs[0])
        c.check(inside(S, L), "syscall fsync %s inside library fsync %s" % (S, L))
        inner = span(vfs_fs[0]) if vfs_fs else S
        if vfs_fs:
            c.check(inside(inner, S), "ext4_sync_file %s inside syscall fsync" % (inner,))
        nb = sum(1 for e in blk if inside(span(e), inner))
        c.check(nb >= 1, "block requests inside the fsync's innermost span (%d of %d)" % (nb, len(blk)))
    c.check(all(inside(span(s), span(lib)) for s, lib in zip(sorted(sys_pw, key=span),
                                                             sorted(lib_pw, key=span))),
            "each syscall pwrite64 inside its library pwrite")

    # the flame tool's multi-level view of the same traces
    want = ["lib:fsync", "syscall:fsync"] + (["fs:ext4_sync_file"] if vfs_covered else []) + \
        ["block:write"]
    for k, v in sorted(col.items()):
        print("# layers: %s %s" % (k, v))

    def follows(frames):
        # the wanted frames in order, the library call at the root; where
        # fentry or kprobes time more of the catalogue, other VFS frames
        # (vfs_fsync_range) may come between them
        it = iter(frames)
        return frames[0] == want[0] and frames[-1] == want[-1] and all(w in it for w in want)
    paths = [k.split(";") for k in col if follows(k.split(";"))]
    c.check(len(paths) > 0, "layers: a path %s" % " > ... > ".join(want))
    c.eq(col.get("lib:pwrite;syscall:pwrite64", (0, 0, 0))[1:], (2 * ITERS, ITERS * (BYTES_A + BYTES_B)),
         "layers: every pwrite64 under its library pwrite, with its bytes")
    c.check(not any(k.startswith(("syscall:pwrite64", "syscall:fsync", "vfs:", "fs:", "block:"))
                    for k in col if "pwrite" in k or "fsync" in k or "block:write" in k),
            "layers: no pwrite64, fsync, VFS call under them or write request of the workload "
            "outside a library call")

    def incl(prefix):
        return sum(v[0] for k, v in col.items() if k == prefix or k.startswith(prefix + ";"))
    if lib_fs:
        L = span(lib_fs[0])
        c.eq(incl("lib:fsync"), L[1] - L[0], "layers: lib:fsync's frame is the call's duration")
    chain = paths[0] if paths else want
    for i in range(1, len(chain)):
        parent, child = ";".join(chain[:i]), ";".join(chain[:i + 1])
        c.check(0 < incl(child) <= incl(parent), "layers: %s %d ns within %s %d ns"
                % (chain[i], incl(child), chain[i - 1], incl(parent)))
    # the feature records: each layer's keys carry the workload's cgroup
    # (a layer that read it wrong would make records of its own, under
    # another cgroup, for the same pid). The trace checks above cannot
    # tell: the full-trace policy also matches the task's own ancestors.
    # The child's calls before it entered the cgroup (its write to
    # cgroup.procs, which a VFS mechanism timing vfs_open sees) are the
    # parent's cgroup's: the workload's own functions are checked, by name.
    feats = [r for r in recs if r["type"] == "features" and r["pid"] == pid]
    mine = [r for r in feats if r["cgroup_id"] == cg_id]
    other = [r for r in feats if r["cgroup_id"] != cg_id]
    own = ("pwrite-libc", "fsync-libc", "ext4_sync_file-ext4", "ext4_da_write_begin-ext4",
           "ext4_da_write_end-ext4")
    # a bio is charged to its io cgroup: the test's only where the io
    # controller is enabled for it, else the nearest ancestor's; where the
    # controller is not on the cgroup2 hierarchy (v1's blkio, or none) the
    # agent takes the submitting task's cgroup
    with open(os.path.join(os.path.dirname(cg.path), "cgroup.controllers")) as f:
        io_v2 = "io" in f.read().split()
    # (a fsync's writeback is charged to the writer's cgroup only where the
    # memory controller is enabled there too: cgroup writeback)
    with open(os.path.join(os.path.dirname(cg.path), "cgroup.subtree_control")) as f:
        sub = f.read().split()
    io_here = not io_v2 or ("io" in sub and "memory" in sub)

    def layers(rs):
        return {"functions": {k for r in rs for k in r.get("functions", {}) if k in own},
                "block": sum(1 for r in rs if r.get("block")) if io_here else None,
                "dirtied": sum(r.get("page_cache", {}).get("dirtied_pages", 0) for r in rs)}
    got, elsewhere = layers(mine), layers(other)
    print("# the workload's layers under its cgroup %d: %s; under others %s: %s%s"
          % (cg_id, got, sorted({r["cgroup_id"] for r in other}), elsewhere,
             "" if io_here else " (block not checked: the io controller is not enabled for the test's cgroup)"))
    c.check(any(r.get("ops", {}).get("pwrite64") for r in mine),
            "its system calls are under its cgroup's id")
    c.check("pwrite-libc" in got["functions"], "its library calls (uprobes) too")
    if vfs_covered:
        c.check("ext4_sync_file-ext4" in got["functions"], "its VFS calls too")
    c.check(got["dirtied"] > 0, "its page-cache activity too")
    if io_here:
        c.check(got["block"] > 0, "its block requests too")
    c.eq(elsewhere, {"functions": set(), "block": 0 if io_here else None, "dirtied": 0},
         "none of its library, VFS, block or page-cache activity under another cgroup")
    kept = {k: sum(r["traces"]["layers"][k]["kept"] for r in agents) for k in ("lib", "vfs", "block")}
    c.check(all(r["traces"]["layers"][k]["seen"] == sum(r["traces"]["layers"][k][o] for o in
                                                        ("kept", "sampled_out", "dropped"))
                for r in agents for k in ("lib", "vfs", "block")),
            "agent records: seen = kept + sampled_out + dropped in every layer")
    c.check(kept["lib"] >= len(lib_pw) + len(lib_fs) and kept["block"] >= len(blk),
            "agent records count the kept events (%s)" % kept)
    c.done()


if __name__ == "__main__":
    main()
