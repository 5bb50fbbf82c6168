#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Where the verifier spends its walk of one program, by source line.

Starts the agent (default configuration, one second) with
DATACRUMBS_VERIFIER_LOG naming PROGRAM, so that the verifier's log of it
at level 2 is written (agent/mechanism.h), then counts the instructions
the log shows walked under each source line (the log prints a line's
source before its instructions) and prints the files' and the lines'
shares. The agent's start slows while the log is taken.

usage: verifier_lines.py AGENT PROGRAM [TOP] [EXTRA_CONFIG]
  e.g. verifier_lines.py build/agent/datacrumbs dc_exit_btf_dr 25
"""
import collections
import os
import re
import subprocess
import sys
import tempfile

SRC = re.compile(r" @ (\S+:\d+)$")
INSN = re.compile(r"^\d+: \(")


def count(path):
    """({file:line: instructions}, {file:line: source text}, the stats line)."""
    n, text, cur, stats = collections.Counter(), {}, None, ""
    with open(path, errors="replace") as f:
        for ln in f:
            if ln.startswith("; "):
                m = SRC.search(ln.rstrip())
                if m:
                    cur = m.group(1)
                    text[cur] = ln[2:ln.rfind(" @ ")].strip()
            elif INSN.match(ln):
                n[cur or "?"] += 1
            elif ln.startswith("processed "):
                stats = ln.strip()
    return n, text, stats


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    agent, prog = sys.argv[1], sys.argv[2]
    top = int(sys.argv[3]) if len(sys.argv) > 3 else 25
    with tempfile.TemporaryDirectory(prefix="dc-vlines-") as tmp:
        conf, log = os.path.join(tmp, "c.conf"), os.path.join(tmp, "verifier.log")
        with open(conf, "w") as f:
            f.write('traces = { output = { dir = "%s/traces"; }; };\n' % tmp)
            f.write(sys.argv[4] if len(sys.argv) > 4 else "")
        env = dict(os.environ, DATACRUMBS_VERIFIER_LOG=prog, DATACRUMBS_VERIFIER_LOG_FILE=log)
        r = subprocess.run([agent, "-c", conf, "-d", "1", "-o", os.path.join(tmp, "o.json")],
                           env=env, capture_output=True, text=True, timeout=300)
        if not os.path.exists(log):
            sys.exit("verifier_lines: no log written for %s (agent exit %d): %s"
                     % (prog, r.returncode, r.stderr.strip()[-500:]))
        n, text, stats = count(log)
    total = sum(n.values())
    if not total:
        sys.exit("verifier_lines: the log of %s shows no instruction" % prog)
    print("%s: %s" % (prog, stats))
    files = collections.Counter()
    for k, v in n.items():
        files[k.split(":")[0]] += v
    print("by file: " + ", ".join("%s %.1f%%" % (f, 100 * v / total)
                                  for f, v in files.most_common()))
    for k, v in n.most_common(top):
        print("%7d %5.1f%%  %-24s %s" % (v, 100 * v / total, k, text.get(k, "")[:70]))


if __name__ == "__main__":
    main()
