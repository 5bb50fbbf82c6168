#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Build the .rpm with packaging/build-rpm.sh and check what it ships:
rpm -qlp, the configuration as %config(noreplace), the systemd scriptlets,
and rpmlint's verdict.

usage: test_rpm.py SOURCE_ROOT OUTDIR
"""
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bpf"))
from agentlib import SKIP, Checks  # noqa: E402

top, outdir = sys.argv[1:]
for tool in ("rpmbuild", "rpmlint"):
    if not shutil.which(tool):
        print("SKIP: %s not installed (bash packaging/install-deps.sh package)" % tool, flush=True)
        sys.exit(SKIP)
c = Checks()
shutil.rmtree(outdir, ignore_errors=True)
build = subprocess.run(["bash", os.path.join(top, "packaging/build-rpm.sh"), outdir],
                       capture_output=True, text=True)
c.check(build.returncode == 0, "build-rpm.sh succeeds (%s)" % build.stderr[-3000:])
if build.returncode:
    c.done()
rpm = [p for p in build.stdout.split() if "debug" not in p][-1]
print("# " + rpm)


def q(*args):
    return subprocess.run(["rpm", "-qp", *args, rpm], check=True, capture_output=True,
                          text=True).stdout


files = set(q("-l").split())
for path in ["/usr/sbin/datacrumbs", "/usr/bin/datacrumbs-trace", "/usr/bin/datacrumbs-flame",
             "/usr/lib/systemd/system/datacrumbs.service", "/etc/datacrumbs.conf",
             "/usr/lib/systemd/system/datacrumbs-logrotate.timer",
             "/usr/lib/systemd/system/datacrumbs-logrotate.service",
             "/usr/share/man/man8/datacrumbs.8.gz", "/usr/share/man/man5/datacrumbs.conf.5.gz",
             "/usr/share/man/man1/datacrumbs-trace.1.gz", "/usr/share/man/man1/datacrumbs-flame.1.gz", "/var/lib/datacrumbs"]:
    c.check(path in files, "ships %s" % path)
flags = dict(reversed(l.split(" ", 1)) for l in
             q("--qf", "[%{FILEFLAGS:fflags} %{FILENAMES}\n]").splitlines() if " " in l)
c.eq(flags.get("/etc/datacrumbs.conf"), "cn", "/etc/datacrumbs.conf is %config(noreplace)")
c.eq(flags.get("/etc/logrotate.d/datacrumbs"), "cn",
     "/etc/logrotate.d/datacrumbs is %config(noreplace)")
modes = dict(reversed(l.split(" ", 1)) for l in
             q("--qf", "[%{FILEMODES:perms} %{FILENAMES}\n]").splitlines())
c.eq(modes.get("/var/lib/datacrumbs"), "drwx------", "state directory, root's alone")
scripts = q("--scripts")
c.check("preset datacrumbs.service" in scripts or "install-system-units datacrumbs.service" in scripts,
        "%post presets the unit")
c.check("disable --now datacrumbs.service" in scripts or "remove-system-units datacrumbs.service" in scripts,
        "%preun disables and stops the unit")
c.check("try-restart datacrumbs.service" in scripts or "mark-restart-system-units datacrumbs.service" in scripts,
        "%postun restarts the unit on upgrade")
unit = subprocess.run("rpm2cpio '%s' | cpio -i --quiet --to-stdout ./usr/lib/systemd/system/datacrumbs.service"
                      % rpm, shell=True, check=True, capture_output=True, text=True).stdout
c.check(unit == open(os.path.join(top, "packaging/datacrumbs.service")).read(),
        "the shipped unit is packaging/datacrumbs.service")

# rpmlint.toml stands in for a distribution's configuration, and the
# rpmlintrc filters what is settled elsewhere, each with why; warnings
# fail too
lint = subprocess.run(["rpmlint", "-c", os.path.join(top, "packaging/rpm/rpmlint.toml"),
                       "-r", os.path.join(top, "packaging/rpm/datacrumbs.rpmlintrc"), rpm],
                      capture_output=True, text=True)
print("".join("# " + l + "\n" for l in lint.stdout.splitlines()), end="")
c.check(lint.returncode == 0 and " 0 errors, 0 warnings" in lint.stdout,
        "rpmlint reports no error and no warning (exit %d)" % lint.returncode)
c.done()
