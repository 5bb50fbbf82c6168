#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The documentation cannot drift from the binary: every setting the agent
knows (--help-config) is in datacrumbs.conf(5) and, at its group path, in
conf/datacrumbs.conf; every long option of --help is in datacrumbs(8); the
unit only uses options the agent has; the packages carry the project's
version.

usage: test_docs.py AGENT CONF MAN5 MAN8 UNIT VERSION DEBIAN_CHANGELOG RPM_SPEC
"""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bpf"))
from agentlib import Checks  # noqa: E402

agent, conf, man5, man8, unit, version, changelog, spec = sys.argv[1:]
c = Checks()


def run(*args):
    return subprocess.run([agent, *args], check=True, capture_output=True, text=True).stdout


def roff_text(path):
    """The page's text with roff's escapes for '-', '\\' and line starts undone."""
    return open(path).read().replace("\\-", "-").replace("\\e", "\\").replace("\\&", "")


def conf_keys(path):
    """Dotted names of the settings a libconfig file sets, groups followed;
    comments and string contents ignored (a list of groups counts as one
    setting, as --help-config lists it)."""
    keys, stack = set(), []
    depth_list = 0
    for line in open(path):
        line = re.sub(r'"(\\.|[^"\\])*"', '""', line)
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        if depth_list:
            depth_list += line.count("(") + line.count("[") - line.count(")") - line.count("]")
            continue
        m = re.match(r"^([A-Za-z_][A-Za-z0-9_]*)\s*[=:]\s*(.*)$", line)
        if m:
            name, rest = m.groups()
            if rest.startswith("{"):
                stack.append(name)
                continue
            keys.add(".".join(stack + [name]))
            depth_list = rest.count("(") + rest.count("[") - rest.count(")") - rest.count("]")
            continue
        if line.startswith("}"):
            stack.pop()
    return keys


help_config = run("--help-config")
known = [m.group(1) for m in re.finditer(r"^(\S+) \(", help_config, re.M)]
c.check(len(known) >= 50, "--help-config lists %d settings" % len(known))

page5 = roff_text(man5)
in_page = set(re.findall(r"^\.B (\S+)$", page5, re.M))
missing = [k for k in known if k not in in_page]
c.check(not missing, "datacrumbs.conf(5) documents every setting (missing: %s)" % missing)

shipped = conf_keys(conf)
missing = [k for k in known if k not in shipped]
c.check(not missing, "%s sets every setting at its group path (missing: %s)" % (conf, missing))
unknown = sorted(shipped - set(known))
c.check(not unknown, "%s sets only settings the agent knows (unknown: %s)" % (conf, unknown))

options = sorted(set(re.findall(r"(--[a-z][a-z-]+)", run("--help"))))
c.check(len(options) >= 8, "--help lists %d long options" % len(options))
page8 = roff_text(man8)
missing = [o for o in options if o not in page8]
c.check(not missing, "datacrumbs(8) documents every option (missing: %s)" % missing)

used = []
for line in open(unit):
    m = re.match(r"^Exec\w+=\S*/datacrumbs(\s.*)?$", line.strip())
    if m:
        used += re.findall(r"(--[a-z][a-z-]+)", m.group(1) or "")
# ExecStart's --config and ExecReload's --check-config (no ExecStartPre: the
# agent's own exit 2 is what RestartPreventExitStatus honours)
c.check({"--config", "--check-config"} <= set(used),
        "the unit runs the agent with --config and checks at reload (%s)" % used)
unknown = sorted(set(used) - set(options))
c.check(not unknown, "the unit uses only options the agent has (unknown: %s)" % unknown)

m = re.match(r"^datacrumbs \(([^)-]+)-[^)]+\)", open(changelog).readline())
c.eq(m and m.group(1), version, "debian/changelog's upstream version is meson's")
m = re.search(r"^Version:\s*(\S+)$", open(spec).read(), re.M)
c.eq(m and m.group(1), version, "the rpm spec's Version is meson's")
c.done()
