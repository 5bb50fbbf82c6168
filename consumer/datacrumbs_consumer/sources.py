# SPDX-License-Identifier: Apache-2.0
"""Where records come from: local JSON-lines files, or Kafka; in partitions for Dask.

Partitioning rule (files and Kafka alike): a partition owns the windows whose
first record lies in its byte (or offset) range. The agent writes all
records of a window together (docs/records.md), so a reader skips the tail of
a window begun before its range and reads past its end to finish its last
window. Every (host, run, window) is then whole in exactly one partition and
rows are complete without a shuffle: more data is more partitions, and more
partitions need only more workers.
"""
import glob
import gzip
import io
import json
import logging
import os
import zlib

import zstandard

from .records import RecordError, parse_line

DEFAULT_PATH = "/var/lib/datacrumbs/records.jsonl"
BLOCKSIZE = 64 << 20  # bytes of a plain file per partition


def expand_paths(specs):
    """Files, directories (their records*.jsonl*, rotated ones too) and globs -> sorted files."""
    out = []
    for s in specs:
        if os.path.isdir(s):
            found = sorted(glob.glob(os.path.join(s, "*.jsonl")) +
                           glob.glob(os.path.join(s, "*.jsonl.*")))
        elif any(ch in s for ch in "*?["):
            found = sorted(glob.glob(s))
        elif os.path.exists(s):
            found = [s]
        else:
            raise FileNotFoundError("no such file or directory: %s" % s)
        out += [f for f in found if os.path.isfile(f) and f not in out]
    if not out:
        raise FileNotFoundError("no record files in %s" % ", ".join(specs))
    return out


def is_compressed(path):
    return path.endswith((".gz", ".zst"))


def _warn_cut(path, pos, n):
    logging.warning("%s, byte %d: a last line without its newline (%d bytes) left out: a "
                    "record being written, or cut short", path, pos, n)


def _zstd_chunks(f, path, strict):
    """Decompressed chunks of a zstd file, frame by frame, read 1 MiB at a
    time (linear in the file, whatever its frames). A frame cut short at the
    end (a file truncated, or a batch being written) is an error naming the
    file and the frame's byte, or with strict False a warning after the
    frames before it; foreign data is an error either way."""
    pos = start = 0  # input bytes consumed; where the current frame began
    d = None
    while True:
        chunk = f.read(1 << 20)
        if not chunk:
            break
        while chunk:
            if d is None:
                d, start = zstandard.ZstdDecompressor().decompressobj(), pos
            try:
                out = d.decompress(chunk)
            except zstandard.ZstdError as e:
                raise RecordError("%s, byte %d: not zstd data: %s" % (path, start, e)) from None
            if out:
                yield out
            if d.eof:
                rest = d.unused_data
                pos += len(chunk) - len(rest)
                chunk, d = rest, None
            else:
                pos += len(chunk)
                chunk = b""
    if d is not None:
        msg = "%s, byte %d: a zstd frame cut short (the file is truncated)" % (path, start)
        if strict:
            raise RecordError(msg)
        logging.warning("%s: the frames before it are read", msg)


def iter_lines(path, strict=True):
    """The lines of a file, .gz and .zst decompressed; a compressed file
    that is not whole is an error naming it (a stream reader returned what
    it could of a truncated or foreign file and said nothing: 0 rows), a
    last line without its newline is left out and said."""
    if path.endswith(".gz"):
        def chunks(f):
            try:
                with gzip.open(f) as g:
                    while True:
                        b = g.read(1 << 20)
                        if not b:
                            return
                        yield b
            except (EOFError, OSError, zlib.error) as e:
                raise RecordError("%s: not a whole gzip file: %s" % (path, e)) from None
    elif path.endswith(".zst"):
        def chunks(f):
            return _zstd_chunks(f, path, strict)
    else:
        def chunks(f):
            return iter(lambda: f.read(1 << 20), b"")
    partial, pos = b"", 0
    with open(path, "rb") as f:
        for b in chunks(f):
            lines = (partial + b).split(b"\n")
            partial = lines.pop()
            for ln in lines:
                pos += len(ln) + 1
                yield ln + b"\n"
    if partial:
        _warn_cut(path, pos, len(partial))


def file_partitions(paths, blocksize=BLOCKSIZE):
    """[(path, start, end)] byte ranges; a compressed file is one range (end -1)."""
    parts = []
    for p in paths:
        if is_compressed(p):
            parts.append((p, 0, -1))
            continue
        size = os.path.getsize(p)
        start = 0
        while True:
            end = min(size, start + blocksize)
            parts.append((p, start, end))
            if end >= size:
                break
            start = end
    return parts


def window_key(line):
    """(host, run, window) of a record line, cheaply enough for a boundary check."""
    try:
        r = json.loads(line)
        return (r.get("host"), r.get("run"), r.get("window"))
    except (ValueError, AttributeError):
        return None


def _line_before(f, pos):
    """The complete line that ends just before byte `pos` (pos is a line start)."""
    back = 4096
    while True:
        lo = max(0, pos - back)
        f.seek(lo)
        chunk = f.read(pos - lo)
        body = chunk[:-1] if chunk.endswith(b"\n") else chunk
        i = body.rfind(b"\n")
        if i >= 0 or lo == 0:
            return body[i + 1:]
        back *= 4


def read_file_partition(part):
    """The record lines of the windows a byte range owns (see the module's rule)."""
    path, start, end = part
    lines = []
    if end < 0:
        return [(line, "%s:%d" % (path, n)) for n, line in enumerate(iter_lines(path), 1)]
    with open(path, "rb") as f:
        if start > 0:
            f.seek(start - 1)
            if f.read(1) != b"\n":
                f.readline()  # the rest of a line that began before the range
            pos = f.tell()
            prev = window_key(_line_before(f, pos)) if pos > 0 else None
            f.seek(pos)
        else:
            prev = None
        pos = f.tell()
        skipping = prev is not None
        last = None
        while True:
            line = f.readline()
            if not line:
                break
            if not line.endswith(b"\n"):
                # a line being written right now (the next reading gets it
                # whole), or one cut short: said, not taken silently
                _warn_cut(path, pos, len(line))
                break
            k = window_key(line)
            if skipping and k == prev:
                pos += len(line)
                continue
            skipping = False
            if pos >= end and k != last:
                break  # past the range, and the owned windows are complete
            lines.append((line, "%s, byte %d" % (path, pos)))
            last = k
            pos += len(line)
    return lines


def parse_lines(lines, types=("features",)):
    """Lines -> records of the wanted types; a bad line is an error naming its place."""
    out = []
    for line, where in lines:
        rec = parse_line(line, where)
        if rec is not None and rec["type"] in types:
            out.append(rec)
    return out


# ---- Kafka ---------------------------------------------------------------

def kafka_config(brokers, group=None, extra=()):
    conf = {"bootstrap.servers": brokers, "enable.auto.commit": False,
            "group.id": group or "datacrumbs-consumer", "auto.offset.reset": "earliest",
            "enable.partition.eof": True}
    for kv in extra:
        k, sep, v = kv.partition("=")
        if not sep:
            raise ValueError("Kafka property %r is not name=value" % kv)
        conf[k] = v
    return conf


def kafka_partitions(conf, topic, per_task=200000, timeout=30):
    """[(topic, partition, lo, hi)] offset ranges of what the topic holds now."""
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer(conf)
    try:
        md = c.list_topics(topic, timeout=timeout)
        t = md.topics.get(topic)
        if t is None or t.error is not None:
            raise RuntimeError("Kafka topic %s: %s" % (topic, t.error if t else "not found"))
        parts = []
        for p in sorted(t.partitions):
            lo, hi = c.get_watermark_offsets(TopicPartition(topic, p), timeout=timeout)
            for s in range(lo, hi, per_task):
                parts.append((topic, p, s, min(hi, s + per_task), hi))
        return parts
    finally:
        c.close()


def message_lines(msg):
    """A message value -> its record lines (JSON, or zstd frames of NDJSON for traces)."""
    v = msg.value()
    if v is None:
        return []
    enc = dict(msg.headers() or []).get("content-encoding")
    if enc == b"zstd" or v[:4] == b"\x28\xb5\x2f\xfd":
        v = zstandard.ZstdDecompressor().stream_reader(
            io.BytesIO(v), read_across_frames=True).read()
    return [ln for ln in v.split(b"\n") if ln.strip()]


def read_kafka_partition(conf, part, timeout=30, by_window=True):
    """Lines of the windows an offset range owns (same rule as for files).

    by_window=False: exactly the messages of the range (trace batches, which
    stand alone).
    """
    from confluent_kafka import Consumer, TopicPartition, KafkaError
    topic, p, lo, hi, top = part
    c = Consumer(conf)
    out, prev, last, skipping = [], None, None, False
    try:
        start = lo - 1 if lo > 0 else lo
        c.assign([TopicPartition(topic, p, start)])
        while True:
            m = c.poll(timeout)
            if m is None:
                raise RuntimeError("Kafka %s[%d]: no message within %ds at offset >= %d"
                                   % (topic, p, timeout, start))
            if m.error():
                if m.error().code() == KafkaError._PARTITION_EOF:
                    break
                raise RuntimeError("Kafka %s[%d]: %s" % (topic, p, m.error()))
            off = m.offset()
            if not by_window:
                if off >= hi:
                    break
                out += [(ln, "kafka:%s[%d]@%d" % (topic, p, off)) for ln in message_lines(m)]
                if off + 1 >= hi:
                    break
                continue
            for line in message_lines(m):
                k = window_key(line)
                if off < lo:
                    prev, skipping = k, True
                    continue
                if skipping and k == prev:
                    continue
                skipping = False
                if off >= hi and k != last:
                    return out
                out.append((line, "kafka:%s[%d]@%d" % (topic, p, off)))
                last = k
            if off + 1 >= top:
                break
    finally:
        c.close()
    return out
