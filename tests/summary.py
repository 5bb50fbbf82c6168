#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Summarise meson's testlog.json: one line per skipped test, then
'N passed, N failed[, N skipped]'. With --no-skip, a skipped test counts as a
failure (CI: the BPF tests must run, not skip)."""
import json
import sys

path = sys.argv[1]
no_skip = "--no-skip" in sys.argv
passed = failed = skipped = 0
with open(path) as f:
    for line in f:
        t = json.loads(line)
        r = t["result"]
        if r in ("OK", "EXPECTEDFAIL"):
            passed += 1
        elif r == "SKIP":
            skipped += 1
            print("skipped: %s" % t["name"])
        else:
            failed += 1
            print("failed: %s (%s)" % (t["name"], r))
if no_skip and skipped:
    print("%d test(s) skipped: CI runs every test, as root" % skipped)
    failed += skipped
    skipped = 0
print("%d passed, %d failed" % (passed, failed) + (", %d skipped" % skipped if skipped else ""))
sys.exit(1 if failed else 0)
