#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Write datacrumbs.conf(5) from its template and the agent's own list of
settings (datacrumbs --help-config), so the page cannot drift from the
binary.

usage: gen-conf-man.py TEMPLATE AGENT VERSION OUTPUT
"""
import re
import subprocess
import sys


def roff(text):
    """Plain text to roff: escapes, and no line may start with a control character."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return "\n".join("\\&" + l if l[:1] in (".", "'") else l for l in text.split("\n"))


def parse(help_text):
    """[(key, attributes, description)] in the order the agent lists them."""
    entries = []
    for line in help_text.splitlines()[1:]:
        if not line.strip():
            continue
        m = re.match(r"^(\S+) \((.*)\)$", line)
        if m:
            entries.append([m.group(1), m.group(2), []])
        elif line.startswith(" ") and entries:
            entries[-1][2].append(line.strip())
        else:
            sys.exit("gen-conf-man: unexpected line in --help-config: %r" % line)
    return entries


def settings(entries):
    """One subsection per group (the key's first component), groups in the
    order of their first appearance, keys in the agent's order within them."""
    groups = {}
    for key, attrs, desc in entries:
        group = key.split(".")[0] if "." in key else ""
        groups.setdefault(group, []).append((key, attrs, desc))
    out = []
    for group, items in groups.items():
        out.append(".SS " + (roff(group) if group else "Top level"))
        for key, attrs, desc in items:
            out += [".TP", ".B " + roff(key), roff("(" + attrs + ")"), ".br", roff(" ".join(desc))]
    return "\n".join(out)


def main():
    template, agent, version, output = sys.argv[1:]
    help_text = subprocess.run([agent, "--help-config"], check=True, capture_output=True,
                               text=True).stdout
    entries = parse(help_text)
    if not entries:
        sys.exit("gen-conf-man: %s --help-config listed no settings" % agent)
    page = open(template).read()
    page = page.replace("@SETTINGS@", settings(entries))
    page = page.replace("@VERSION@", version)
    with open(output, "w") as f:
        f.write(page)


main()
