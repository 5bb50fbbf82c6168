#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Where the agent's programs spend their time, by source line.

Starts the agent, samples the whole machine with perf while the 4 KiB tmpfs
pwrite/pread loop (bench/iobench) runs, and reads each sample that fell in
one of the agent's programs as a line of its BPF source, through the
kernel's line info for the JIT image (bench/proglines). Prints, per
program, its share of the loop's samples and its hottest lines.

A profile, not a speed figure: sampling skid moves a stall onto the next
instructions, so a line's share says where to look, not what removing it
would save (a cgroup-id cache chosen from such a profile measured no
faster, docs/benchmarks.md). Compare builds with bench/prog_bench.py.

With WORKLOAD=direct-write (or buffered-write, direct-read,
buffered-read) the workload is instead bench/ext4bench's 1 MiB calls on an
ext4 file system over a loop device in /var/tmp, MIB of them (with
WORKLOAD=metadata, bench/workloads' storm over MIB files), and the
samples in the programs count whichever of the workload's tasks they
interrupted: ext4bench, the loop device's and the kernel's workers, the
idle task (completion interrupts). Other tasks' samples (perf's own, the
harness's) are left out, and perf writes to /dev/shm so that its writes
run no block program. Shares are then of those samples.

usage: prog_profile.py BUILD_DIR [EXTRA_CONFIG]
env: OPS (calls of the loop, default 3000000), TOP (lines per program, default 15),
     AGENT (the agent binary, default BUILD_DIR/agent/datacrumbs),
     WORKLOAD (iobench, default; or an ext4bench phase as above), MIB (default 2048),
     FREQ (perf's samples a second per CPU, default 4000: the 1 MiB phases need more)
"""
import bisect
import collections
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import syscall_bench as sb  # noqa: E402  (the agent started as syscall_bench does)
import layers_bench as lb  # noqa: E402  (the ext4 image on a loop device)

EXT4 = {"buffered-write": ("write", False), "direct-write": ("write", True),
        "buffered-read": ("read", False), "direct-read": ("read", True),
        "metadata": ("meta", False)}
# the tasks an ext4bench phase's I/O runs in (comm prefixes)
WORKLOAD_TASKS = ("ext4bench", "workloads", "kworker", "loop", "swapper", "ksoftirqd", "jbd2")


def loaded():
    """{id: name} of the programs loaded now."""
    out = subprocess.run(["bpftool", "prog", "show", "-j"], capture_output=True, text=True,
                         check=True).stdout
    return {p["id"]: p.get("name", "") for p in json.loads(out)}


def line_table(build, prog_id):
    """[(offset, line, source)] in JIT order."""
    out = subprocess.run([os.path.join(build, "bench/proglines"), str(prog_id)],
                         capture_output=True, text=True, check=True).stdout
    rows = []
    for ln in out.splitlines():
        off, line, src = (ln.split(" ", 2) + [""])[:3]
        rows.append((int(off, 16), int(line), src.strip()))
    return rows


def main():
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        sys.exit(__doc__)
    if os.geteuid() != 0:
        sys.exit("prog_profile: run as root")
    for tool in ("perf", "bpftool"):
        if not shutil.which(tool):
            sys.exit("prog_profile: %s is not installed (packaging/install-deps.sh bench)" % tool)
    build, extra = sys.argv[1], (sys.argv[2] if len(sys.argv) > 2 else "")
    ops, top = int(os.environ.get("OPS", "3000000")), int(os.environ.get("TOP", "15"))
    workload = os.environ.get("WORKLOAD", "iobench")
    mib = int(os.environ.get("MIB", "2048"))
    if workload != "iobench" and workload not in EXT4:
        sys.exit("prog_profile: WORKLOAD is iobench or one of %s" % ", ".join(EXT4))
    tmp = tempfile.mkdtemp(prefix="dc-profile-", dir="/dev/shm")
    agent = fs = None
    try:
        if workload in EXT4:
            op, direct = EXT4[workload]
            # the storm's files are small: an image of 256 MiB, MIB files
            fs = lb.Ext4(256 if op == "meta" else mib, "/var/tmp",
                         inodes=2 * mib + 1000 if op == "meta" else None)
            print("loop device %s, direct I/O to its image %s" % (fs.loop, "on" if fs.dio else "off"))
            exe = os.path.join(build, "bench/ext4bench")
            target = os.path.join(fs.mnt, "f")
            if op == "meta":  # bench/workloads' storm: create, stat, unlink of MIB files
                os.mkdir(target)
                exe = os.path.join(build, "bench/workloads")
            elif op == "read":  # the file to read, written before the agent starts
                subprocess.run([exe, "write", target, str(mib)], check=True,
                               stdout=subprocess.DEVNULL)
                lb.drop_caches()
            cmd = [exe, op, target, str(mib)] + (["direct"] if direct else [])
        else:
            cmd = [os.path.join(build, "bench/iobench"), "/dev/shm/dc-profile-io", str(ops)]
        # Debian 12's bpftool names no program's process: the agent's are
        # the ones its start loaded, and another agent's would share names
        # (an agent that just exited: its programs go after an RCU grace period)
        for _ in range(30):
            before = loaded()
            if not any(n.startswith("dc_") for n in before.values()):
                break
            time.sleep(0.1)
        else:
            sys.exit("prog_profile: another agent's programs are loaded (dc_*): stop it first")
        agent, _ = sb.start_agent(build, tmp, "self = { bpf_stats = false; };\n" + extra,
                                  os.environ.get("AGENT"))
        progs = {n: i for i, n in loaded().items() if i not in before and n.startswith("dc_")}
        if not progs:
            sys.exit("prog_profile: the agent loaded no dc_* program")
        tables = {name: line_table(build, i) for name, i in progs.items()}
        data = os.path.join(tmp, "perf.data")
        subprocess.run(["perf", "record", "-q", "-a", "-F", os.environ.get("FREQ", "4000"),
                        "-o", data, "--"] + cmd, check=True,
                       stdout=subprocess.DEVNULL)
        # while the programs are loaded: perf names them from kallsyms
        script = subprocess.run(["perf", "script", "-i", data, "-F", "comm,ip,sym,symoff"],
                                capture_output=True, text=True, check=True).stdout
    finally:
        sb.stop(agent)
        if fs:
            fs.close()
        shutil.rmtree(tmp, ignore_errors=True)
    total = 0
    whole = "programs' samples" if workload in EXT4 else "loop's"
    hits = collections.defaultdict(collections.Counter)
    # a program's global functions (dc_send_path) are images of their own,
    # named apart: counted by name, without lines
    others = collections.Counter()
    sym = re.compile(r"bpf_prog_[0-9a-f]+_(\w+)\+0x([0-9a-f]+)")
    for ln in script.splitlines():
        m = sym.search(ln)
        if workload in EXT4:
            if not (m and m.group(1).startswith("dc_")) or \
                    not ln.strip().startswith(WORKLOAD_TASKS):
                continue
        elif not ln.strip().startswith("iobench"):
            continue
        total += 1
        if m and m.group(1) in tables:
            hits[m.group(1)][int(m.group(2), 16)] += 1
        elif m and m.group(1).startswith("dc_"):
            others[m.group(1)] += 1
    if not total:
        sys.exit("prog_profile: perf recorded no sample of the %s"
                 % ("programs" if workload in EXT4 else "loop"))
    if workload in EXT4:
        print("samples in the agent's programs during %s (%s): %d"
              % (workload, "bench/workloads, %d files" % mib if workload == "metadata"
                 else "bench/ext4bench, %d MiB" % mib, total))
    else:
        print("samples of the loop (bench/iobench, %d calls): %d" % (ops, total))
    for name, offs in sorted(hits.items(), key=lambda x: -sum(x[1].values())):
        rows = tables[name]
        starts = [r[0] for r in rows]
        n = sum(offs.values())
        by_line = collections.Counter()
        for off, c in offs.items():
            i = bisect.bisect_right(starts, off) - 1
            _, line, src = rows[i] if i >= 0 else (0, 0, "(prologue)")
            by_line[(line, src[:90])] += c
        print("\n%s: %d samples, %.1f%% of the %s" % (name, n, 100.0 * n / total, whole))
        for (line, src), c in by_line.most_common(top):
            print("  %5.1f%%  %5d  %s" % (100.0 * c / n, line, src))
    for name, n in others.most_common():
        print("\n%s (a global function of the programs): %d samples, %.1f%% of the %s"
              % (name, n, 100.0 * n / total, whole))


if __name__ == "__main__":
    main()
