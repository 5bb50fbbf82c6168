#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""datacrumbs-trace and datacrumbs-flame on damaged input: a frame whose
checksum fails puts nothing in the output and is named; a line that is not
a JSON object is named; a directory is an error, not an empty result; a last
frame cut short is left out with a warning, the frames before it kept.
No BPF: the files are made here, with the zstd tool."""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "bpf"))
from agentlib import Checks, run_checked  # noqa: E402

trace_bin, flame_bin = sys.argv[1], sys.argv[2]
c = Checks()
tmp = tempfile.mkdtemp(prefix="dc-tools-")


def run_tool(cmd, **kw):
    """A tool's run; under the sanitizers (suite san) a report fails the test
    whatever the exit status the case expects."""
    return run_checked(cmd, capture_output=True, text=True, timeout=60, **kw)


def frames(path, *texts):
    """A file of zstd frames, one per text, with content checksums (-C),
    as the agent writes them; returns each frame's byte offset."""
    offs = []
    with open(path, "wb") as f:
        for t in texts:
            offs.append(f.tell())
            f.write(subprocess.run(["zstd", "-q", "-C", "-c"], input=t.encode(),
                                   capture_output=True, check=True).stdout)
    return offs


def event(i):
    return json.dumps({"name": "pwrite64", "cat": "syscall", "ph": "X", "pid": 7, "tid": 7,
                       "ts": 1000 + i, "dur": 5, "args": {"size": 4096, "n": "x" * 50}}) + "\n"


def export(*files):
    out = os.path.join(tmp, "out.json")
    p = run_tool([trace_bin, "export", "-o", out, *files])
    try:
        doc = json.load(open(out))
    except ValueError as e:
        doc = e
    return p, doc


good = os.path.join(tmp, "good.pfw.zst")
frames(good, "".join(event(i) for i in range(10)), "".join(event(i) for i in range(10, 20)))
p, doc = export(good)
c.check(p.returncode == 0 and isinstance(doc, dict) and len(doc["traceEvents"]) == 20,
        "two whole frames: 20 events, exit 0 (%s)" % p.stderr.strip())

# the second frame's compressed bytes damaged, at nine places in turn: a
# frame of several blocks (zstd's are up to 128 KiB) decodes its first
# blocks before a damaged one, and a damaged literal decodes to wrong
# text that only the frame's checksum catches; neither reaches the output
bad = os.path.join(tmp, "bad.pfw.zst")
offs = frames(bad, "".join(event(i) for i in range(10)),
              "".join(event(i) for i in range(10, 3000)))
clean = open(bad, "rb").read()
leaks, named = [], 0
for k in range(1, 10):
    data = bytearray(clean)
    at = offs[1] + (len(data) - offs[1]) * k // 10
    data[at] ^= 0x5A
    open(bad, "wb").write(bytes(data))
    p, doc = export(bad, good)
    named += p.returncode == 1 and "frame 2, from byte %d, is damaged" % offs[1] in p.stderr
    if not (isinstance(doc, dict) and len(doc["traceEvents"]) == 30):
        leaks.append((at, len(doc["traceEvents"]) if isinstance(doc, dict) else str(doc)[:60]))
c.eq(named, 9, "a damaged frame: exit 1, named with its place, at each of nine places")
c.check(not leaks, "... the output one JSON document with the whole frames' events only (%s)"
        % leaks)

# a line that is braced but no JSON object
notjson = os.path.join(tmp, "notjson.pfw.zst")
frames(notjson, event(0) + '{"name": broken garbage}\n' + event(1))
p, doc = export(notjson)
c.check(p.returncode == 1 and "line 2 is not a JSON object" in p.stderr,
        "a braced line that is not JSON: named by its line (%s)" % p.stderr.strip())
c.check(isinstance(doc, dict) and len(doc["traceEvents"]) == 1,
        "... the output stays one JSON document, the events before it kept")

# a raw control byte (a NUL) in a line: no JSON, whatever a lenient reader says
ctl = os.path.join(tmp, "ctl.pfw.zst")
frames(ctl, event(0) + '{"name": "a\x00b", "ph": "X"}\n')
p, doc = export(ctl)
c.check(p.returncode == 1 and "line 2 is not a JSON object (control byte 0x00" in p.stderr
        and isinstance(doc, dict) and len(doc["traceEvents"]) == 1,
        "a line with a NUL byte refused, the output one valid document (%s)" % p.stderr.strip())

# a directory
d = os.path.join(tmp, "dir")
os.mkdir(d)
p, doc = export(d)
c.check(p.returncode == 1 and "Is a directory" in p.stderr,
        "datacrumbs-trace on a directory: exit 1, said (%s)" % p.stderr.strip())

# datacrumbs-flame: the same damage
# collapsed stacks, one of the inputs merge takes
stacks = "".join("main;write_ckpt;f%d %d\n" % (i, 10 + i) for i in range(50))
full = os.path.join(tmp, "stacks.jsonl.zst")
frames(full, stacks, stacks)
p = run_tool([flame_bin, "merge", full])
whole = p.stdout
c.check(p.returncode == 0 and whole.strip(), "datacrumbs-flame merges two whole frames (%s)"
        % p.stderr.strip())
cut = os.path.join(tmp, "cut.jsonl.zst")
data = open(full, "rb").read()
open(cut, "wb").write(data[:len(data) - 10])
p = run_tool([flame_bin, "merge", cut])
c.check(p.returncode == 0 and "ends inside a zstd frame" in p.stderr and p.stdout.strip(),
        "a last frame cut short: left out with a warning, the first frame's stacks kept (%s)"
        % p.stderr.strip())
for sub in ("merge", "layers"):
    p = run_tool([flame_bin, sub, d])
    c.check(p.returncode != 0 and "Is a directory" in p.stderr,
            "datacrumbs-flame %s on a directory: an error, said (%d, %s)"
            % (sub, p.returncode, p.stderr.strip()))
# empty input: an empty file, an empty frame; and a trace whose process has
# an empty name, grouped by it (each once handed memcpy or fwrite a NULL
# buffer of 0 bytes: undefined, reported in suite san)
empty = os.path.join(tmp, "empty.jsonl")
open(empty, "w").close()
empty_frame = os.path.join(tmp, "empty.jsonl.zst")
frames(empty_frame, "")
for f in (empty, empty_frame):
    p = run_tool([flame_bin, "merge", f])
    c.check(p.returncode == 0 and not p.stdout.strip(),
            "datacrumbs-flame merge of %s: nothing, exit 0 (%d, %s)"
            % (os.path.basename(f), p.returncode, p.stderr.strip()))
nameless = os.path.join(tmp, "nameless.pfw.zst")
frames(nameless, json.dumps({"name": "process_name", "ph": "M", "pid": 7,
                             "args": {"name": ""}}) + "\n" + event(0))
p = run_tool([flame_bin, "layers", "--group", "comm", nameless])
c.check(p.returncode == 0 and "pwrite64" in p.stdout,
        "datacrumbs-flame layers --group comm of a process without a name (%d, %s)"
        % (p.returncode, p.stderr.strip()))
# a stack deeper than the tree's bound: refused by name (one of 200,000
# frames overflowed the tool's stack); one at the bound is drawn
for frames_n, ok in ((4096, True), (200000, False)):
    deep = os.path.join(tmp, "deep-%d.folded" % frames_n)
    with open(deep, "w") as f:
        f.write(";".join("f%d" % i for i in range(frames_n)) + " 10\n")
    svg = os.path.join(tmp, "deep-%d.svg" % frames_n)
    p = run_tool([flame_bin, "merge", "--svg", svg, deep])
    if ok:
        c.check(p.returncode == 0 and "f4095" in open(svg).read(),
                "a stack of 4096 frames merged and drawn (%d, %s)"
                % (p.returncode, p.stderr.strip()))
    else:
        c.check(p.returncode == 1 and "a stack of more than 4096 frames" in p.stderr,
                "a stack of 200,000 frames refused, said (%d, %s)"
                % (p.returncode, p.stderr.strip()[:200]))
# a NUL byte in a line: refused by name (the JSON reader read past the
# line's copy, ASan's heap-buffer-overflow)
nul = os.path.join(tmp, "nul.jsonl")
with open(nul, "wb") as f:
    f.write(b'{"type":"stacks","x":"\0' + b"A" * 64 + b'"}\n')
p = run_tool([flame_bin, "merge", nul])
c.check(p.returncode == 1 and "a NUL byte at column 23" in p.stderr,
        "a NUL byte in a line: refused, said (%d, %s)" % (p.returncode, p.stderr.strip()))
# sums past 2^64 are held there: drawn (a wrapped root made one frame 1e22
# pixels wide), and what merge writes reads back
for name, lines in (("wrap", "a 10000000000000000000\nb 8446744073709551617\n"),
                    ("max", "a 18446744073709551609\na 18446744073709551609\na 13\n")):
    big = os.path.join(tmp, name + ".folded")
    open(big, "w").write(lines)
    p = run_tool([flame_bin, "merge", "--svg", os.path.join(tmp, name + ".svg"), "-o",
                  os.path.join(tmp, name + ".out"), big])
    p2 = run_tool([flame_bin, "merge", os.path.join(tmp, name + ".out")])
    c.check(p.returncode == 0 and p2.returncode == 0 and
            p2.stdout == open(os.path.join(tmp, name + ".out")).read(),
            "sums past 2^64 (%s): drawn, written, read back the same (%d %d, %s)"
            % (name, p.returncode, p2.returncode, (p.stderr + p2.stderr).strip()))
# a span whose name holds ';' is one frame, not thousands; a broken
# surrogate pair reads as U+FFFD and the character after it
semi = os.path.join(tmp, "semi.pfw.zst")
frames(semi, json.dumps({"name": "w;" * 5000 + "x", "cat": "syscall", "ph": "X", "pid": 7,
                         "tid": 7, "ts": 1000, "dur": 5, "args": {"size": 4096}}) + "\n" +
       '{"name":"y\\ud800\\u0041","cat":"syscall","ph":"X","pid":7,"tid":7,"ts":2000,'
       '"dur":5,"args":{"size":1}}\n')
p = run_tool([flame_bin, "layers", semi])
rows = p.stdout.splitlines()
c.check(p.returncode == 0 and len(rows) == 2 and rows[0].count(";") == 0 and
        "syscall:y\ufffdA 5000 1 1" in rows,
        "a span name with ';' one frame, a broken surrogate pair U+FFFD then its next (%d, %s, %s)"
        % (p.returncode, [r[:40] for r in rows], p.stderr.strip()))
for opt, val in (("--pid", ""), ("--from", "nan"), ("--to", "inf")):
    p = run_tool([flame_bin, "merge", opt, val, full])
    c.check(p.returncode == 2 and opt in p.stderr,
            "datacrumbs-flame %s '%s' refused (%d, %s)" % (opt, val, p.returncode,
                                                          p.stderr.strip()))
c.done()
