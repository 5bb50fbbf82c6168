#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""BPF test of the file layer: exact per-file counters against tests/bpf/fileload.c.

usage: test_files.py SCENARIO AGENT FILELOAD
  SCENARIO: files (auto: direct reads where the kernel has bpf_rdonly_cast),
            files-probe (tp_btf, probe reads), files-tracepoint,
            files-pid-reuse (a parked position is not a later process's),
            files-append-blockdev, files-inode-reuse (ext4's reused inode
            numbers are other files), files-rwf-append (pwritev2's flags),
            files-copy (copy_file_range, sendfile, splice charge both files)
"""
import fcntl
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from agentlib import Agent, Checks, loop_device, require_root  # noqa: E402

BUCKETS = ["0_100", "100_1K", "1K_10K", "10K_100K", "100K_1M", "1M_4M", "4M_10M",
           "10M_100M", "100M_1G", "1G_PLUS"]


def fnv1a(b):
    h = 0xcbf29ce484222325
    for x in b:
        h = ((h ^ x) * 0x100000001b3) & 0xffffffffffffffff
    return "%016x" % h


def sizes(**kw):
    return {k: kw.get(k, 0) for k in BUCKETS}


def expectations(tmp):
    """fileload.c's contract, per path."""
    t = tmp.encode()
    hostile = t + b"/h\"q\nnl\xffx.dat"
    deep = t + b"".join(b"/" + bytes([ord("a") + i]) * 200 for i in range(19)) + b"/deep.dat"
    return {
        hostile: dict(opens=1, writes=17, reads=4, bytes_written=15 * 4096 + 100 + 4096,
                      bytes_read=4 * 4096, consec_writes=16, seq_writes=16, consec_reads=1,
                      seq_reads=2, rw_switches=2, file_not_aligned=1, mem_not_aligned=1,
                      max_byte_written=15 * 4096 + 100 + 4096 - 1, max_byte_read=12287,
                      meta_ops=5, size_write=sizes(**{"0_100": 1, "1K_10K": 16}),
                      size_read=sizes(**{"1K_10K": 4})),
        # meta: fstat, newfstatat(AT_EMPTY_PATH) and close
        t + b"/b.dat": dict(opens=1, writes=1, reads=0, bytes_written=4096, meta_ops=4,
                             seq_writes=0, consec_writes=0, max_byte_read=-1,
                             max_byte_written=4095),
        deep: dict(opens=1, writes=1, bytes_written=1000, meta_ops=2,
                   size_write=sizes(**{"100_1K": 1})),
        # the second write after a pause of five windows: the key's slot is
        # taken back meanwhile, its position parked and found again
        t + b"/p.dat": dict(opens=1, writes=2, reads=0, bytes_written=8192, meta_ops=2,
                             seq_writes=1, consec_writes=1, max_byte_written=8191,
                             size_write=sizes(**{"1K_10K": 2})),
        # O_APPEND: appended at 0, 1000 bytes at 100 through another
        # descriptor, appended at 1100, pwrite(offset 0) appended at 1200:
        # three of four consecutive. Recorded at the descriptor's position
        # or the offset argument, it read 1 consecutive and 1099 as the end
        t + b"/a.dat": dict(opens=2, writes=4, bytes_written=1250, meta_ops=4,
                             consec_writes=3, seq_writes=3, max_byte_written=1249,
                             file_not_aligned=3,
                             size_write=sizes(**{"0_100": 3, "100_1K": 1})),
        t + b"/c.dat": dict(opens=1, writes=1, bytes_written=4096, meta_ops=2),
    }


def kernel_has_kfunc(name):
    """Whether the running kernel's BTF has the function (a kfunc)."""
    p = subprocess.run(["bpftool", "btf", "dump", "file", "/sys/kernel/btf/vmlinux"],
                       stdout=subprocess.PIPE, text=True, check=True)
    return ("FUNC '%s'" % name) in p.stdout


def scenario(agent_bin, fl_bin, mechanism, reads):
    c = Checks()
    tmp = tempfile.mkdtemp(prefix="dc-files-")
    # the file layer runs in the syscall programs: it has their mechanism
    a = Agent(agent_bin, 'interval = 0.2;\nprobes = { files = { granularity = "file"; '
              'reads = "%s"; }; syscall = { mechanism = "%s"; }; };\n' % (reads, mechanism))
    p = subprocess.run([fl_bin, "--dir", tmp], stdout=subprocess.PIPE, check=True, timeout=60)
    pid = int(p.stdout.decode().strip())
    rc = a.stop()
    c.eq(rc, 0, "agent exits 0")
    recs = a.records()

    layer = {(p["mechanism"], p["detail"]) for r in recs if r["type"] == "agent"
             for p in r["probes"] if p["name"] == "files"}
    c.check(layer and all(m != "off" for m, _ in layer), "the file layer attached: %s" % layer)
    # the reads the kernel should give: direct where tp_btf runs and the
    # kernel has the cast (6.2+), else copies; a refused direct load that
    # fell back would pass every count below, so it is checked here
    direct = reads != "probe" and mechanism in ("auto", "tp_btf") and \
        kernel_has_kfunc("bpf_rdonly_cast")
    want = "files read by direct loads" if direct else "files read by bpf_probe_read_kernel"
    c.check(layer and all(want in d and "refused" not in d for _, d in layer),
            "the file layer says how it reads files: %r in %s" % (want, [d for _, d in layer]))
    names = {}
    for r in recs:
        if r["type"] == "filename":
            c.check(r["fhash"] not in names or names[r["fhash"]] == r["path"],
                    "one name per hash (%s)" % r["fhash"])
            names[r["fhash"]] = r["path"]
    files = {}
    seen_hash = set()
    order_ok = True
    for r in recs:
        if r["type"] == "filename":
            seen_hash.add(r["fhash"])
        if r["type"] != "file" or r["pid"] != pid:
            continue
        if r["fhash"] is not None and r["fhash"] not in seen_hash:
            order_ok = False
        f = files.setdefault(r["fhash"], {})
        for k, v in r.items():
            if k in ("max_byte_read", "max_byte_written"):
                f[k] = max(f.get(k, -1), v)
            elif k in ("size_read", "size_write"):
                b = f.setdefault(k, sizes())
                for kk, vv in v.items():
                    b[kk] += vv
            elif isinstance(v, int) and k not in ("pid", "cgroup_id", "ino", "igen", "window",
                                                    "schema",
                                                    "ts_start", "ts_end", "duration_us"):
                f[k] = f.get(k, 0) + v
    c.check(order_ok, "every file record's name was published before it")
    c.check(None not in files, "every file of the workload is named")

    for path, want in expectations(tmp).items():
        # the hash is of the path's bytes; the published name is that path as
        # JSON carries it (invalid UTF-8 replaced by U+FFFD)
        h = fnv1a(path)
        shown = repr(path if len(path) < 80 else path[:40] + b"..." + path[-30:])
        c.eq(names.get(h), path.decode("utf-8", "replace"), "name of %s (fhash %s)" % (shown, h))
        got = files.get(h)
        c.check(got is not None, "%s has file records" % shown)
        if got is None:
            continue
        for k, v in want.items():
            c.eq(got.get(k, 0), v, "%s: %s" % (shown, k))
    deep = [n for n in names.values() if n.endswith("/deep.dat")]
    c.check(deep and len(deep[0]) > 3800, "a %d-byte path is named whole"
            % (len(deep[0]) if deep else 0))

    # the process record's access object sums its files
    acc = {}
    for r in recs:
        if r["type"] == "features" and r["pid"] == pid:
            for k in ("writes", "reads", "bytes_written", "opens", "consec_writes"):
                acc[k] = acc.get(k, 0) + r["access"][k]
    for k in acc:
        c.eq(acc[k], sum(f.get(k, 0) for path, f in files.items()),
             "features.access.%s sums the process's files" % k)
    mine = [h for h in files if names.get(h, "").startswith(tmp + "/")]
    c.eq(len(mine), 6, "files of the workload's directory with records")
    agents = [r for r in recs if r["type"] == "agent"]
    probe = {p["mechanism"] for r in agents for p in r["probes"] if p["name"] == "files"}
    if mechanism != "auto":
        c.eq(probe, {mechanism}, "agent reports the file layer's mechanism")
    lost = sum(r["files"]["drops"][k] for r in agents for k in
               ("agg_map_full", "names_lost", "names_not_kept"))
    c.eq(lost, 0, "nothing lost")
    return c.done()


def reuse_pid(path, idle):
    """The pid the first process had and the second was given, or None.
    Both on one CPU: that CPU's cached slot hints are the first one's when
    the second comes, unless another process's call came in between."""
    cpu = min(os.sched_getaffinity(0))

    def child(body):
        code = 1
        try:
            code = body()
        finally:
            os._exit(code)

    def first():
        os.sched_setaffinity(0, {cpu})
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.write(fd, b"a" * 4096)
        time.sleep(idle)
        return 0

    def second():
        os.sched_setaffinity(0, {cpu})
        fd = os.open(path, os.O_WRONLY)
        os.pwrite(fd, b"b" * 4096, 4096)
        return 0

    for _ in range(10):
        pid = os.fork()
        if pid == 0:
            child(first)
        _, st = os.waitpid(pid, 0)
        if st:
            return None
        with open("/proc/sys/kernel/ns_last_pid", "w") as f:
            f.write(str(pid - 1))
        other = os.fork()
        if other == 0:
            # another process took the pid first: try again
            child(second if os.getpid() == pid else (lambda: 3))
        _, st = os.waitpid(other, 0)
        if other == pid:
            return pid if st == 0 else None
    return None


def pid_reuse(agent_bin):
    """A process writes 4 KiB at offset 0 of a file and exits; the next
    process given the same pid (ns_last_pid) writes at 4096, where the
    first one ended. That is its first access, neither consecutive nor
    sequential. Three cases:
      parked: the first one idles until its key's slot is taken back (its
        position parked), then exits; before parked positions carried the
        process's start time, the second found the first's and counted both;
      live: the first exits at once, its key still holding its slot when
        the second finds it (and the CPU's slot hints still the first
        one's), with the per-CPU stash and with task storage."""
    if not os.path.exists("/proc/sys/kernel/ns_last_pid"):
        print("SKIP: no /proc/sys/kernel/ns_last_pid (CONFIG_CHECKPOINT_RESTORE): a pid "
              "cannot be chosen", flush=True)
        sys.exit(77)
    c = Checks()
    for case, idle, stash in (("parked", 1.4, "auto"), ("live", 0, "auto"),
                              ("live", 0, "task_storage")):
        what = "%s, stash %s" % (case, stash)
        tmp = tempfile.mkdtemp(prefix="dc-files-")
        path = os.path.join(tmp, "r.dat")
        a = Agent(agent_bin, 'interval = 0.2;\nprobes = { files = { granularity = "file"; }; '
                  'syscall = { entry_stash = "%s"; }; };\n' % stash)
        try:
            reused = reuse_pid(path, idle)
        finally:
            rc = a.stop()
            shutil.rmtree(tmp, ignore_errors=True)
        c.eq(rc, 0, "%s: agent exits 0" % what)
        det = {p["detail"].split(";")[0] for r in a.records() if r["type"] == "agent"
               for p in r["probes"] if p["name"] == "syscall"}
        print("%s: %s" % (what, det), flush=True)
        c.check(reused is not None, "%s: a second process was given the first one's pid" % what)
        h = fnv1a(path.encode())
        got = {}
        for r in a.records():
            if r["type"] == "file" and r["pid"] == reused and r["fhash"] == h:
                for k in ("writes", "consec_writes", "seq_writes", "opens"):
                    got[k] = got.get(k, 0) + r[k]
        c.eq(got.get("opens"), 2, "%s: both processes' opens are under the pid" % what)
        c.eq(got.get("writes"), 2, "%s: both processes' writes are under the pid" % what)
        c.eq(got.get("consec_writes"), 0,
             "%s: the second process's first write is not consecutive to the first's last"
             % what)
        c.eq(got.get("seq_writes"), 0, "%s: nor sequential" % what)
    return c.done()


def in_child(body):
    """body() in a forked child: (its pid, its wait status, the str body
    returned, "" if it raised). The child exits 0 when body returns, 1
    when it raises."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.close(r)
            os.write(w, (body() or "").encode())
            code = 0
        finally:
            os._exit(code)
    os.close(w)
    _, st = os.waitpid(pid, 0)  # what it said fits in the pipe: read after
    with os.fdopen(r, "rb") as f:
        return pid, st, f.read().decode()


def watched(c, agent_bin, conf, body, tmp, what):
    """body() in a child while an agent with conf runs; tmp removed after.
    Checks that both exit 0; (the agent, the child's pid, what it said)."""
    a = Agent(agent_bin, conf)
    try:
        pid, st, said = in_child(body)
    finally:
        rc = a.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    c.eq(st, 0, "%s exits 0" % what)
    c.eq(rc, 0, "agent exits 0")
    return a, pid, said


def append_blockdev(agent_bin):
    """Writes through an O_APPEND descriptor of a block device land at the
    position or offset given: the kernel ignores O_APPEND there (and the
    /dev node's size is 0). Taken for a regular file's append, both read
    as written at 0."""
    c = Checks()
    tmp = tempfile.mkdtemp(prefix="dc-files-", dir="/var/tmp")
    try:
        with loop_device(tmp) as dev:
            a = Agent(agent_bin, 'interval = 0.2;\nprobes = { files = { granularity = "file"; '
                      '}; };\n')
            def writer():
                fd = os.open(dev, os.O_WRONLY | os.O_APPEND)
                os.pwrite(fd, b"d" * 4096, 8192)
                os.pwrite(fd, b"d" * 4096, 12288)
            try:
                pid, st, _ = in_child(writer)
            finally:
                rc = a.stop()
            c.eq(st, 0, "the writer exits 0")
            c.eq(rc, 0, "agent exits 0")
            h = fnv1a(dev.encode())
            got = {}
            for r in a.records():
                if r["type"] == "file" and r["pid"] == pid and r["fhash"] == h:
                    for k in ("writes", "consec_writes"):
                        got[k] = got.get(k, 0) + r[k]
                    got["max_byte_written"] = max(got.get("max_byte_written", -1),
                                                  r["max_byte_written"])
            c.eq(got, {"writes": 2, "consec_writes": 1, "max_byte_written": 16383},
                 "%s opened O_APPEND: written where pwrite said" % dev)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return c.done()


RWF_APPEND, RWF_NOAPPEND = 0x10, 0x20  # linux/fs.h; Python 3.11 names only the first


def rwf_append(agent_bin):
    """pwritev2's flags override the descriptor: RWF_APPEND appends through
    a descriptor opened without O_APPEND, RWF_NOAPPEND (6.9) writes at the
    offset through one opened with it. 100 bytes at 0; 100 more with
    RWF_APPEND and offset 0 (at 100: consecutive); 100 through an O_APPEND
    descriptor with RWF_NOAPPEND at 1000 (sequential, not consecutive).
    Taken by the offset and the descriptor's flag alone, the second read as
    written at 0 and the third at 200: 0 consecutive, 1099 not reached."""
    c = Checks()
    tmp = tempfile.mkdtemp(prefix="dc-files-")
    path = os.path.join(tmp, "v.dat")

    def writer():
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.pwrite(fd, b"v" * 100, 0)
        os.pwritev(fd, [b"v" * 100], 0, RWF_APPEND)
        fd2 = os.open(path, os.O_WRONLY | os.O_APPEND)
        try:
            os.pwritev(fd2, [b"v" * 100], 1000, RWF_NOAPPEND)
            return "noappend"
        except OSError:
            return "no RWF_NOAPPEND"  # before 6.9: EOPNOTSUPP, nothing written
    a, pid, said = watched(c, agent_bin, 'interval = 0.2;\nprobes = { files = { granularity = '
                           '"file"; }; };\n', writer, tmp, "the writer")
    got = {}
    for x in a.records():
        if x["type"] == "file" and x["pid"] == pid and x["fhash"] == fnv1a(path.encode()):
            for k in ("writes", "bytes_written", "consec_writes", "seq_writes"):
                got[k] = got.get(k, 0) + x[k]
            got["max_byte_written"] = max(got.get("max_byte_written", -1), x["max_byte_written"])
    if said == "noappend":
        want = {"writes": 3, "bytes_written": 300, "consec_writes": 1, "seq_writes": 2,
                "max_byte_written": 1099}
    else:
        print("this kernel refuses RWF_NOAPPEND (before 6.9): RWF_APPEND alone checked")
        want = {"writes": 3, "bytes_written": 200, "consec_writes": 1, "seq_writes": 1,
                "max_byte_written": 199}
    c.eq(got, want, "pwritev2 with RWF_APPEND at the end, with RWF_NOAPPEND at its offset")
    return c.done()


def copies(agent_bin, mechanism):
    """Data moved between two descriptors in the kernel charges both files:
    the source a read, the destination a write, at their offsets:
      copy_file_range at the positions: in 0..16383, out 0..16383;
      copy_file_range at offsets 16384 (in, consecutive) and 20000 (out,
        sequential, not consecutive), which moves no position;
      splice from in's position, 16384, into a pipe (no file on that side);
      sendfile from offset 20480 of in (consecutive to the splice) to sf.dat.
    Offsets taken one for the other, or not read, change the consecutive
    counts and the highest bytes. Before, neither file was charged."""
    c = Checks()
    tmp = tempfile.mkdtemp(prefix="dc-files-")
    names = {n: os.path.join(tmp, n) for n in ("in.dat", "out.dat", "sf.dat")}
    with open(names["in.dat"], "wb") as f:
        f.write(b"i" * 65536)

    def copier():
        fi = os.open(names["in.dat"], os.O_RDONLY)
        fo = os.open(names["out.dat"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        n = os.copy_file_range(fi, fo, 16384)
        n += os.copy_file_range(fi, fo, 16384, 16384, 20000)
        r, w = os.pipe()
        n += os.splice(fi, w, 4096)
        fs = os.open(names["sf.dat"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        n += os.sendfile(fs, fi, 20480, 4096)
        if n != 16384 * 2 + 4096 * 2:
            raise RuntimeError("a copy was short: %d bytes" % n)
    a, pid, _ = watched(c, agent_bin, 'interval = 0.2;\nprobes = { files = { granularity = '
                        '"file"; }; syscall = { mechanism = "%s"; }; };\n' % mechanism, copier,
                        tmp, "the copier, every copy whole,")
    keys = ("reads", "bytes_read", "consec_reads", "max_byte_read", "writes", "bytes_written",
            "consec_writes", "seq_writes", "max_byte_written")
    got = {}
    for x in a.records():
        if x["type"] == "file" and x["pid"] == pid:
            g = got.setdefault(x["fhash"], {k: -1 if k.startswith("max_") else 0 for k in keys})
            for k in keys:
                g[k] = max(g[k], x[k]) if k.startswith("max_") else g[k] + x[k]
    want = {
        "in.dat": {"reads": 4, "bytes_read": 40960, "consec_reads": 2, "max_byte_read": 32767,
                   "writes": 0, "bytes_written": 0, "consec_writes": 0, "seq_writes": 0,
                   "max_byte_written": -1},
        "out.dat": {"reads": 0, "bytes_read": 0, "consec_reads": 0, "max_byte_read": -1,
                    "writes": 2, "bytes_written": 32768, "consec_writes": 0, "seq_writes": 1,
                    "max_byte_written": 36383},
        "sf.dat": {"reads": 0, "bytes_read": 0, "consec_reads": 0, "max_byte_read": -1,
                   "writes": 1, "bytes_written": 4096, "consec_writes": 0, "seq_writes": 0,
                   "max_byte_written": 4095},
    }
    for n, w in want.items():
        c.eq(got.get(fnv1a(names[n].encode())), w, "%s: %s charged with the copies"
             % (mechanism, n))
    # the process's totals: the four copies in their own class, not in
    # write_bytes (the child's one write is its empty report to the parent)
    tot = {"copy_ops": 0, "copy_bytes": 0, "write_bytes": 0}
    for x in a.records():
        if x["type"] == "features" and x["pid"] == pid:
            for k in tot:
                tot[k] += x["totals"][k]
    c.eq(tot, {"copy_ops": 4, "copy_bytes": 40960, "write_bytes": 0},
         "%s: the copies in totals' copy class, none in write_bytes" % mechanism)
    return c.done()


FS_IOC_GETVERSION = 0x80087601  # _IOR('v', 1, long): the inode's i_generation


def inode_reuse(agent_bin):
    """On ext4 a deleted file's inode number goes to the next file created.
    A process writes one 4 KiB block to x.dat and deletes it, then writes
    two to y.dat, which gets the same inode number, all in one window. Each
    file must come back as itself: its own record, name and generation
    (the one FS_IOC_GETVERSION reports). Keyed by (device, inode) alone,
    both were one file of three writes, named x.dat."""
    c = Checks()
    tmp = tempfile.mkdtemp(prefix="dc-files-", dir="/var/tmp")
    mnt = os.path.join(tmp, "mnt")
    try:
        with loop_device(tmp, ext4_at=mnt):
            # one window for the whole workload: the agent drains the last
            # at its stop
            a = Agent(agent_bin, 'interval = 300;\nprobes = { files = { granularity = "file"; '
                      '}; };\n')
            def writer():
                out = []
                for name, blocks in (("x.dat", 1), ("y.dat", 2)):
                    path = os.path.join(mnt, name)
                    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
                    for i in range(blocks):
                        os.write(fd, b"w" * 4096)
                    gen = struct.unpack("l", fcntl.ioctl(fd, FS_IOC_GETVERSION, b"\0" * 8))[0]
                    out.append("%d %d" % (os.fstat(fd).st_ino, gen & 0xffffffff))
                    os.close(fd)
                    os.unlink(path)
                return " ".join(out)
            try:
                pid, st, said = in_child(writer)
                said = said.split()
                if len(said) != 4:  # the writer said nothing: its status tells why
                    said = ["0", "0", "-1", "0"]
            finally:
                rc = a.stop()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    c.eq(st, 0, "the writer exits 0")
    c.eq(rc, 0, "agent exits 0")
    ino_x, gen_x, ino_y, gen_y = (int(x) for x in said)
    print("x.dat: inode %d generation %d; y.dat: inode %d generation %d"
          % (ino_x, gen_x, ino_y, gen_y), flush=True)
    c.eq(ino_y, ino_x, "ext4 gave y.dat the inode number x.dat had")
    c.check(gen_y != gen_x, "under another generation")
    files = [x for x in a.records() if x["type"] == "file" and x["pid"] == pid]
    windows = {x["window"] for x in files}
    c.eq(len(windows), 1, "both files in one window")
    got = {}
    for x in files:
        got[x["fhash"]] = (x["ino"], x.get("igen"), x["writes"], x["bytes_written"], x["opens"])
    c.eq(got, {fnv1a(os.path.join(mnt, "x.dat").encode()): (ino_x, gen_x, 1, 4096, 1),
               fnv1a(os.path.join(mnt, "y.dat").encode()): (ino_y, gen_y, 2, 8192, 1)},
         "each file its own record: (ino, igen, writes, bytes, opens) by name")
    acc = [x["access"] for x in a.records() if x["type"] == "features" and x["pid"] == pid
           and "access" in x]
    c.eq(sum(x.get("files", 0) for x in acc), 2, "the process used two files")
    return c.done()


def main():
    name, agent_bin, fl_bin = sys.argv[1:4]
    require_root()
    if name == "files-pid-reuse":
        sys.exit(pid_reuse(agent_bin))
    if name == "files-append-blockdev":
        sys.exit(append_blockdev(agent_bin))
    if name == "files-inode-reuse":
        sys.exit(inode_reuse(agent_bin))
    if name == "files-rwf-append":
        sys.exit(rwf_append(agent_bin))
    if name.startswith("files-copy"):
        # the probe-read paths too: raw_tp's CO-RE argument reads, the
        # tracepoint's args[]
        sys.exit(copies(agent_bin, name.split("-", 2)[2] if name.count("-") == 2 else "auto"))
    variant = name.split("-", 1)[1] if "-" in name else "auto"
    if variant == "probe":
        sys.exit(scenario(agent_bin, fl_bin, "tp_btf", "probe"))
    sys.exit(scenario(agent_bin, fl_bin, variant, "auto"))


if __name__ == "__main__":
    main()
