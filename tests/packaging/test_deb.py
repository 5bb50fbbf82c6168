#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Build the .deb with packaging/build-deb.sh and check what it ships: the
binaries, the unit (identical to packaging/datacrumbs.service), the
configuration as a conffile, the manual pages, the state directory, the
maintainer scripts dh_installsystemd writes, and lintian's verdict.

usage: test_deb.py SOURCE_ROOT OUTDIR
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bpf"))
from agentlib import SKIP, Checks  # noqa: E402

top, outdir = sys.argv[1:]
for tool in ("dpkg-buildpackage", "dh", "lintian"):
    if not shutil.which(tool):
        print("SKIP: %s not installed (bash packaging/install-deps.sh package)" % tool, flush=True)
        sys.exit(SKIP)
c = Checks()
shutil.rmtree(outdir, ignore_errors=True)
build = subprocess.run(["bash", os.path.join(top, "packaging/build-deb.sh"), outdir],
                       capture_output=True, text=True)
c.check(build.returncode == 0, "build-deb.sh succeeds (%s)" % build.stderr[-3000:])
if build.returncode:
    c.done()
deb = build.stdout.split()[-1]
print("# " + deb)


def out(*cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


listing = {}
for line in out("dpkg-deb", "-c", deb).splitlines():
    f = line.split()
    listing[f[5].rstrip("/")] = f[0]
for path in ["./usr/sbin/datacrumbs", "./usr/bin/datacrumbs-trace", "./usr/bin/datacrumbs-flame",
             "./lib/systemd/system/datacrumbs.service", "./etc/datacrumbs.conf",
             "./etc/logrotate.d/datacrumbs", "./lib/systemd/system/datacrumbs-logrotate.timer",
             "./lib/systemd/system/datacrumbs-logrotate.service",
             "./usr/share/man/man8/datacrumbs.8.gz", "./usr/share/man/man5/datacrumbs.conf.5.gz",
             "./usr/share/man/man1/datacrumbs-trace.1.gz", "./usr/share/man/man1/datacrumbs-flame.1.gz", "./usr/share/doc/datacrumbs/copyright"]:
    c.check(path in listing, "ships %s" % path)
c.eq(listing.get("./var/lib/datacrumbs"), "drwx------", "state directory, root's alone")
c.eq(listing.get("./usr/sbin/datacrumbs"), "-rwxr-xr-x", "agent mode")
stray = [p for p in listing if re.search(r"/(tests?|bench|fuzz)/|\.a$|\.h$", p)]
c.check(not stray, "no test, bench or development files (%s)" % stray)

c.eq(sorted(out("dpkg-deb", "-I", deb, "conffiles").split()),
     ["/etc/datacrumbs.conf", "/etc/logrotate.d/datacrumbs"], "conffiles")
depends = out("dpkg-deb", "-f", deb, "Depends")
for lib in ("libbpf1", "librdkafka1", "libconfig9", "libsystemd0", "libzstd1", "libelf1"):
    c.check(lib in depends, "depends on %s (%s)" % (lib, depends.strip()))

unit = subprocess.run("dpkg-deb --fsys-tarfile '%s' | tar -xOf - ./lib/systemd/system/datacrumbs.service"
                      % deb, shell=True, check=True, capture_output=True, text=True).stdout
c.check(unit == open(os.path.join(top, "packaging/datacrumbs.service")).read(),
        "the shipped unit is packaging/datacrumbs.service")
conf = subprocess.run("dpkg-deb --fsys-tarfile '%s' | tar -xOf - ./etc/datacrumbs.conf" % deb,
                      shell=True, check=True, capture_output=True, text=True).stdout
c.check(conf == open(os.path.join(top, "conf/datacrumbs.conf")).read(),
        "the shipped configuration is conf/datacrumbs.conf")

postinst = out("dpkg-deb", "-I", deb, "postinst")
c.check("deb-systemd-helper" in postinst and "datacrumbs.service" in postinst,
        "postinst enables the unit (dh_installsystemd)")
c.check("deb-systemd-invoke" in postinst, "postinst starts or restarts the unit")
c.check(re.search(r"deb-systemd-helper .*enable.*datacrumbs-logrotate\.timer", postinst) is not None
        or "datacrumbs-logrotate.timer" in postinst,
        "postinst enables the records file's size check (datacrumbs-logrotate.timer)")
postrm = out("dpkg-deb", "-I", deb, "postrm")
purge = re.search(r'if \[ "\$1" = "purge" \]; then\n(.*?)\nfi\n', postrm, re.S)
c.check(purge is not None and "rm -rf /var/lib/datacrumbs\n" in purge.group(1) + "\n",
        "postrm purge removes /var/lib/datacrumbs")
if purge:
    # the purge branch alone, run on a copy of the state directory: the
    # stop before it said undelivered segments "are sent at the next start",
    # so the purge must say it deletes them
    with tempfile.TemporaryDirectory() as tmp:
        state = os.path.join(tmp, "var-lib-datacrumbs")
        os.makedirs(os.path.join(state, "spool"))
        for i in range(3):
            open(os.path.join(state, "spool", "%020d.seg" % i), "w").close()
        open(os.path.join(state, "spool", "00000000000000000003.seg.tmp"), "w").close()
        script = purge.group(1).replace("/var/lib/datacrumbs", state)
        run = subprocess.run(["sh", "-ec", script], capture_output=True, text=True)
        c.eq(run.returncode, 0, "postrm's purge branch runs (%s)" % run.stderr)
        c.check("purge deletes 3 spool segments never delivered" in run.stderr,
                "purge names the undelivered segments it deletes (%r)" % run.stderr)
        c.check(not os.path.exists(state), "purge removed the state directory")
        os.makedirs(state)
        run = subprocess.run(["sh", "-ec", script], capture_output=True, text=True)
        c.check(run.returncode == 0 and run.stderr == "",
                "no message without segments (%r)" % run.stderr)

# warnings fail too: every tag left is fixed or overridden with a reason
# (packaging/debian/datacrumbs.lintian-overrides)
lint = subprocess.run(["lintian", "--fail-on", "error,warning", "--display-info", deb],
                      capture_output=True, text=True)
print("".join("# " + l + "\n" for l in lint.stdout.splitlines()), end="")
c.check(lint.returncode == 0, "lintian --fail-on error,warning passes (exit %d)" % lint.returncode)
c.done()
