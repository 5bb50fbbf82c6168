# SPDX-License-Identifier: Apache-2.0
"""The workload matrix, in the spirit of the seeds' runs, for a labelled dataset.

Each matrix point (read or write; buffered or O_DIRECT; a transfer size; a
number of files; of threads; an fsync policy) runs for a fixed time in its
own process, forked for it, so its records are its own: the label joins
them by (host, pid) and the run's start and end. The label is the bandwidth
the process measured itself: bytes its calls moved / wall time from the
moment its threads start to the moment the last one is done (its final
fsyncs included), timed with the wall clock the agent's windows use.

The label holds the run's bandwidth and a timeline of the bytes moved so far
(every 5 ms), from which each window's bandwidth is read (dataset.py).

Run it under a running agent: `datacrumbs_consumer generate` does not start one.
"""
import itertools
import json
import mmap
import os
import random
import shutil
import threading
import time

SIZE_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def parse_size(s):
    s = s.strip().upper().rstrip("B").rstrip("I")
    num = s.rstrip("KMG")
    try:
        v = int(num) * SIZE_UNITS[s[len(num):]]
    except (ValueError, KeyError):
        raise ValueError("bad size %r (use 4K, 64K, 1M, 64M...)" % s) from None
    if v <= 0 or v % 4096:
        raise ValueError("transfer size %r is not a positive multiple of 4 KiB "
                         "(O_DIRECT needs block-aligned transfers)" % s)
    return v


def fmt_size(v):
    for u in ("G", "M", "K"):
        if v % SIZE_UNITS[u] == 0:
            return "%d%s" % (v // SIZE_UNITS[u], u)
    return str(v)


FSYNC = ("none", "end", "each")
SAMPLE_S = 0.005


def matrix(ops, modes, sizes, files, threads, fsyncs):
    """Every valid point; reads take no fsync policy but `none`."""
    pts = []
    for op, mode, size, nf, nt, fs in itertools.product(ops, modes, sizes, files, threads, fsyncs):
        if op not in ("read", "write"):
            raise ValueError("op %r: read or write" % op)
        if mode not in ("buffered", "direct"):
            raise ValueError("mode %r: buffered or direct" % mode)
        if fs not in FSYNC:
            raise ValueError("fsync policy %r: one of %s" % (fs, ", ".join(FSYNC)))
        if op == "read" and fs != "none":
            continue
        pts.append({"op": op, "mode": mode, "size": size, "files": nf, "threads": nt,
                    "fsync": fs})
    return pts


def point_name(p):
    return "%s-%s-%s-f%d-t%d-%s" % (p["op"], p["mode"], fmt_size(p["size"]), p["files"],
                                    p["threads"], p["fsync"])


def _aligned(n):
    m = mmap.mmap(-1, n)  # page-aligned, as O_DIRECT wants
    m.write(os.urandom(min(n, 1 << 16)) * (n // min(n, 1 << 16)))
    return m


def run_point(p, paths, file_size, duration):
    """In the forked child: do the I/O for `duration` s; returns the measurement."""
    flags = os.O_RDONLY if p["op"] == "read" else os.O_WRONLY | os.O_CREAT
    if p["mode"] == "direct":
        flags |= os.O_DIRECT
    fds = [os.open(f, flags, 0o644) for f in paths]
    size, nt, nf = p["size"], p["threads"], len(paths)
    slots = max(1, file_size // size)
    moved = [0] * nt
    calls = [0] * nt
    bar = threading.Barrier(nt + 1)
    stop = [0.0]

    def worker(t):
        buf = _aligned(size)
        j = 0
        bar.wait()
        while time.monotonic() < stop[0]:
            f = (t + j) % nf
            off = (((j // nf) * nt + t) % slots) * size
            if p["op"] == "read":
                n = os.preadv(fds[f], [buf], off)
            else:
                n = os.pwrite(fds[f], buf, off)
                if p["fsync"] == "each":
                    os.fsync(fds[f])
            moved[t] += n
            calls[t] += 1
            j += 1
        buf.close()

    # the bytes moved so far, every SAMPLE_S, on the wall clock the agent's
    # windows use: the label of each window (a call counts when it returns,
    # as in the agent's records)
    timeline = []
    done = threading.Event()

    def sampler():
        while not done.wait(SAMPLE_S):
            timeline.append((int(time.time() * 1e6), sum(moved)))

    ths = [threading.Thread(target=worker, args=(t,)) for t in range(nt)]
    for th in ths:
        th.start()
    t0 = time.time()
    m0 = time.monotonic()
    stop[0] = m0 + duration
    timeline.append((int(t0 * 1e6), 0))
    smp = threading.Thread(target=sampler)
    smp.start()
    bar.wait()
    for th in ths:
        th.join()
    if p["op"] == "write" and p["fsync"] == "end":
        for fd in fds:
            os.fsync(fd)
    m1 = time.monotonic()
    t1 = time.time()
    done.set()
    smp.join()
    timeline.append((int(t1 * 1e6), sum(moved)))
    for fd in fds:
        os.close(fd)
    wall = m1 - m0
    return {"t_start_us": int(t0 * 1e6), "t_end_us": int(t1 * 1e6), "wall_s": wall,
            "bytes": sum(moved), "calls": sum(calls), "bandwidth": sum(moved) / wall,
            "timeline": timeline}


def _fill(path, size):
    chunk = os.urandom(1 << 20)
    with open(path, "wb") as f:
        for _ in range(size // len(chunk)):
            f.write(chunk)
        f.write(chunk[:size % len(chunk)])
        f.flush()
        os.fsync(f.fileno())


def _drop_cache(paths):
    for pth in paths:
        fd = os.open(pth, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def run_forked(p, paths, file_size, duration):
    """Fork, measure in the child, return (pid, result)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        code = 0
        try:
            res = run_point(p, paths, file_size, duration)
            os.write(w, json.dumps(res).encode())
        except BaseException as e:  # the parent reports it
            os.write(w, json.dumps({"error": "%s: %s" % (type(e).__name__, e)}).encode())
            code = 1
        finally:
            os._exit(code)
    os.close(w)
    data = b""
    while True:
        b = os.read(r, 65536)
        if not b:
            break
        data += b
    os.close(r)
    _, status = os.waitpid(pid, 0)
    res = json.loads(data.decode() or "{}")
    if "error" in res or os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError("workload %s (pid %d) failed: %s"
                           % (point_name(p), pid, res.get("error", "exit status %d" % status)))
    return pid, res


def generate(points, workdir, labels_path, duration=2.0, file_mib=64, pause=0.0, host=None,
             log=print):
    """Run the points one after another; append one label line per point."""
    host = host or os.uname().nodename
    maxsize = max(p["size"] for p in points)
    file_size = max(file_mib << 20, maxsize)
    os.makedirs(workdir, exist_ok=True)
    maxfiles = max(p["files"] for p in points)
    readset = [os.path.join(workdir, "read-%d.dat" % i) for i in range(maxfiles)]
    if any(p["op"] == "read" for p in points):
        for f in readset:
            if not os.path.exists(f) or os.path.getsize(f) != file_size:
                _fill(f, file_size)
    stamp = "%x" % int(time.time())
    n = 0
    with open(labels_path, "a") as out:
        for i, p in enumerate(points):
            wid = "%s-%03d-%s" % (stamp, i, point_name(p))
            if p["op"] == "read":
                paths = readset[:p["files"]]
                _drop_cache(paths)  # every read point starts from the disk
            else:
                paths = [os.path.join(workdir, "w%03d-%d.dat" % (i, k)) for k in range(p["files"])]
            pid, res = run_forked(p, paths, file_size, duration)
            if p["op"] == "write":
                for f in paths:
                    os.unlink(f)
            lab = dict(p, workload=wid, host=host, pid=pid, **res)
            out.write(json.dumps(lab) + "\n")
            out.flush()
            n += 1
            log("%-48s pid %-7d %10.1f MB/s" % (wid, pid, res["bandwidth"] / 1e6))
            if pause:
                time.sleep(pause)
    return n


def cleanup(workdir):
    shutil.rmtree(workdir, ignore_errors=True)


def sample(points, n, seed):
    if n <= 0 or n >= len(points):
        return list(points)
    rnd = random.Random(seed)
    return rnd.sample(points, n)
