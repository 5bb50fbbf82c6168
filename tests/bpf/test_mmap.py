#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""BPF test: I/O through a file mapping is seen, though it makes no call.

tests/bpf/mmapload.c reads a file through a mapping (cached, then
evicted) and writes a new one through a shared mapping. Each run's
page_cache must show its faults beyond those of the same binary doing
nothing (`mmapload none`): fault-arounds for the cached read (its file
cached a page a folio: one per window of 16 pages, the kernel's default,
at most one per page), a fault that reached the file system for the evicted
one with its pages added, and write faults (no fault-around serves a
write) with the pages dirtied. It makes no read or write call beyond
the baseline's. Where the kernel has no mm_filemap_fault tracepoints (6.1),
the agent must say so and count none, as with probes.pagecache.faults
off (MECHANISM "off").

usage: test_mmap.py MECHANISM AGENT MMAPLOAD
"""
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from agentlib import Agent, Checks, check_schema, evict, require_root  # noqa: E402

SIZE, WSIZE = 8 << 20, 4 << 20


def run(load, *args):
    p = subprocess.run([load] + list(args), stdout=subprocess.PIPE, timeout=60, check=True)
    return int(p.stdout.decode().split()[-1])


def main():
    mech, agent_bin, load = sys.argv[1:4]
    require_root()
    c = Checks()
    page = os.sysconf("SC_PAGE_SIZE")
    tmp = tempfile.mkdtemp(prefix="dc-mmap-", dir="/var/tmp")  # a disk file system
    fstype = subprocess.run(["stat", "-f", "-c", "%T", tmp], capture_output=True,
                            text=True).stdout.strip()
    if fstype in ("tmpfs", "ramfs"):
        # shared memory has its own fault handler: no file faults to count
        shutil.rmtree(tmp, ignore_errors=True)
        print("SKIP: /var/tmp is %s, not a disk file system" % fstype, flush=True)
        return 77
    # the kernel's fault-around window (debugfs; 64 KiB unless changed)
    try:
        with open("/sys/kernel/debug/fault_around_bytes") as f:
            window = max(1, int(f.read()) // page)
    except (OSError, ValueError):
        window = 65536 // page
    # whether the kernel has the tracepoints, as its BTF names them (tracefs
    # may not be mounted before the agent mounts it)
    try:
        with open("/sys/kernel/btf/vmlinux", "rb") as f:
            btf = f.read()
    except OSError:
        btf = b""
    events = all(b"\0btf_trace_%s\0" % e in btf for e in (b"mm_filemap_fault",
                                                          b"mm_filemap_map_pages"))
    src, dst = os.path.join(tmp, "src.bin"), os.path.join(tmp, "dst.bin")
    # written a page a call, so that its cached folios are single pages
    # (kernels with large folios size a write's folio by the write): each
    # fault-around then maps one window, not a whole large folio
    data = os.urandom(SIZE)
    with open(src, "wb", buffering=0) as f:
        for off in range(0, SIZE, 4096):
            f.write(data[off:off + 4096])
        os.fsync(f.fileno())
    # "off": the default mechanism with probes.pagecache.faults = false
    a = Agent(agent_bin, 'interval = 0.2;\nprobes = { pagecache = { mechanism = "%s"; %s}; };\n'
              % ("auto" if mech == "off" else mech, "faults = false; " if mech == "off" else ""))
    try:
        pids = {"none": run(load, "none"), "cached": run(load, "read", src)}
        c.eq(evict(src), 0, "the file is evicted before the evicted read (bytes resident)")
        # without readahead (MADV_RANDOM): each page is a fault of its own,
        # hundreds of times the baseline's own faults, which vary by a few
        # (a first touch alone, with readahead, was lost in them)
        pids["evicted"] = run(load, "random", src)
        pids["write"] = run(load, "write", dst, str(WSIZE))
    finally:
        rc = a.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    c.eq(rc, 0, "agent exits 0")
    recs = a.records()
    check_schema(c, recs)
    pc, calls = {}, {}
    for name, pid in pids.items():
        t, b = {}, {"read_ops": 0, "write_ops": 0}
        for r in recs:
            if r["type"] == "features" and r["pid"] == pid:
                for k, v in r.get("page_cache", {}).items():
                    if k != "page_size" and isinstance(v, int):
                        t[k] = t.get(k, 0) + v
                for k in b:
                    b[k] += r["totals"][k]
        pc[name], calls[name] = t, b
    print("page_cache per run: %s" % pc, flush=True)
    detail = {p["detail"] for r in recs if r["type"] == "agent" for p in r["probes"]
              if p["name"] == "pagecache"}
    if mech == "off":
        c.check(detail and all("file-mapping faults off" in d for d in detail),
                "the agent record says faults are off (%s)" % detail)
    elif not events:
        c.check(detail and all("file-mapping faults not seen" in d for d in detail),
                "no mm_filemap_fault tracepoint here: the agent record says so (%s)" % detail)
    if mech == "off" or not events:
        c.eq(sum(t.get("file_faults", 0) + t.get("fault_arounds", 0) for t in pc.values()), 0,
             "no fault counted where they are off or the kernel lacks their tracepoints (%s)" % detail)
        return c.done()
    c.check(all("file-mapping faults counted" in d for d in detail) and detail,
            "the agent record says faults are counted (%s)" % detail)
    base = pc["none"]

    def more(name, field):
        return pc[name].get(field, 0) - base.get(field, 0)

    pages, wpages = SIZE // page, WSIZE // page
    # a fault-around maps a window of cached pages (fault_around_bytes):
    # a window at most per event, at least one per two windows (the
    # process's own vary by a few from run to run); none where the window
    # is a page (fault-around off), where every fault reaches the handler
    around = more("cached", "fault_arounds")
    if window > 1:
        c.check(pages // (2 * window) <= around <= pages,
                "cached read through the mapping: %d fault-arounds beyond the process's own, "
                "for %d pages in windows of %d" % (around, pages, window))
    else:
        c.check(more("cached", "file_faults") >= pages // 2,
                "cached read, fault-around off: %d faults reach the file system for %d pages"
                % (more("cached", "file_faults"), pages))
    if window > 1:
        c.check(more("cached", "file_faults") <= pages // 64,
                "cached read: few faults reach the file system (%d)"
                % more("cached", "file_faults"))
    c.check(more("evicted", "file_faults") >= pages - 16,
            "evicted read without readahead: each page's touch reaches the file system "
            "(%d faults for %d pages)" % (more("evicted", "file_faults"), pages))
    # pages are lower bounds, not compared with the baseline: its own run
    # may add or dirty a page or two (a library page, metadata), or none
    c.check(pc["evicted"].get("added_pages", 0) >= pages,
            "evicted read: its faults bring the file in (%d pages added for %d)"
            % (pc["evicted"].get("added_pages", 0), pages))
    # the first write to a page of a shared mapping goes to the handler (no
    # fault-around for writes); a kernel may map a whole large folio there
    # (6.18 can), so one fault at least, not one a page
    c.check(1 <= more("write", "file_faults") <= wpages + 64,
            "write through a shared mapping: %d faults reach the file system for %d pages"
            % (more("write", "file_faults"), wpages))
    # the classic tracepoint counts a dirtied folio as one page (docs/records.md)
    c.check(pc["write"].get("dirtied_pages", 0) >= (1 if mech == "tracepoint" else wpages),
            "and its pages are dirtied (%d for %d)" % (pc["write"].get("dirtied_pages", 0),
                                                       wpages))
    # the loader's reads of the libraries and the pid printed (whose bytes
    # vary with its digits) are the baseline's calls too
    c.eq({k: {f: calls[k][f] - calls["none"][f] for f in calls[k]}
          for k in ("cached", "evicted", "write")},
         {k: {"read_ops": 0, "write_ops": 0} for k in ("cached", "evicted", "write")},
         "no read or write call beyond the process's own")
    return c.done()


if __name__ == "__main__":
    sys.exit(main())
