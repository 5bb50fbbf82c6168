#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The command line and the config file: clear errors, documented exit codes.
No BPF needed: every case here fails or finishes before probes load."""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "bpf"))
from agentlib import Checks, run_checked  # noqa: E402

agent, shipped_conf = sys.argv[1], sys.argv[2]
c = Checks()
tmp = tempfile.mkdtemp(prefix="dc-cli-")


def run(*args):
    p = run_checked([agent, *args], capture_output=True, text=True, timeout=30)
    return p.returncode, p.stdout, p.stderr


def conf(text):
    path = os.path.join(tmp, "c%d.conf" % len(os.listdir(tmp)))
    with open(path, "w") as f:
        f.write(text)
    return path


def check_conf(text, want_rc, words, what):
    """--check-config on text: its exit code, and every word in its message."""
    path = conf(text)
    rc, out, err = run("--check-config=" + path)
    c.check(rc == want_rc and all(w.replace("{path}", path) in err for w in words),
            "%s (%r)" % (what, err))


rc, out, err = run("--version")
c.check(rc == 0 and out.startswith("datacrumbs "), "--version prints the version (%r)" % out)
rc, out, err = run("--help")
c.check(rc == 0 and "--interval" in out and "--duration" in out and "--output" in out, "--help lists the options")
rc, out, err = run("--bogus")
c.check(rc == 2 and "unknown option '--bogus'" in err, "unknown option: exit 2, named (%r)" % err)
rc, out, err = run("--interval")
c.check(rc == 2 and "needs a value" in err, "missing value: exit 2 (%r)" % err)
# a bad-input audit: an option taken for a file name, hex read as a number
rc, out, err = run("-c", "--check-config")
c.check(rc == 2 and "--config: '--check-config' is an option, not a file name" in err,
        "-c followed by an option: refused, not opened (%r)" % err)
for opt in ("-i", "-d"):
    rc, out, err = run(opt, "0x10", "--check-config")
    c.check(rc == 2 and "0x10" in err, "%s 0x10: refused, not read as 16 (%r)" % (opt, err))
rc, out, err = run("--duration", "soon")
c.check(rc == 2 and "soon" in err, "bad duration: exit 2 (%r)" % err)
rc, out, err = run("--check-config=" + shipped_conf, "-c", "/nonexistent.conf")
c.check(rc == 2 and "two configuration files" in err, "-c and --check-config=FILE disagreeing: "
        "exit 2, both named (%r)" % err)
rc, out, err = run("--interval", "0", "--check-config")
c.check(rc == 2 and "interval" in err and "out of range" in err, "interval 0 refused (%r)" % err)
rc, out, err = run("--interval", "500", "--check-config")
c.check(rc == 2 and "out of range" in err, "interval above 300 s refused (%r)" % err)
rc, out, err = run("--check-config=" + shipped_conf)
c.check(rc == 0, "the shipped conf/datacrumbs.conf is valid (%r)" % err)
p = conf("interval = 0.5;\nmaps = {\n  max_keys = 10;\n};\n")
rc, out, err = run("--check-config=" + p)
c.check(rc == 2 and p + ":3:" in err and "maps.max_keys" in err and "out of range" in err,
        "out-of-range value names file, line and key (%r)" % err)
inc = conf("\n\nbogus_key = 3;\n")
p = conf('interval = 0.5;\n@include "%s"\n' % inc)
rc, out, err = run("--check-config=" + p)
c.check(rc == 2 and inc + ":3:" in err and "bogus_key" in err,
        "an error in an @include'd file names that file and its line (%r)" % err)
p = conf('traces = { sampling = { full_cgroups = [""]; }; };\n')
rc, out, err = run("--check-config=" + p)
c.check(rc == 2 and "traces.sampling.full_cgroups" in err and "empty" in err,
        "an empty cgroup path refused (%r)" % err)
inc = conf("# 99999999999 in a comment\nfilter = { include_uids = [1000, 4294968296]; };\n")
p = conf('interval = 1e0;\n@include "%s"\n' % inc)
rc, out, err = run("--check-config=" + p)
c.check(rc == 2 and inc + ":2:" in err and "4294968296" in err and "L suffix" in err,
        "an integer libconfig would wrap (to uid 1000) refused, in an @include'd file too (%r)"
        % err)
p = conf("maps = { max_keys = 4294975488L; };\n")
rc, out, err = run("--check-config=" + p)
c.check(rc == 2 and "out of range" in err, "with the L suffix, it is range-checked (%r)" % err)
p = conf("maps = { max_keys = 1048577; };\n")
rc, out, err = run("--check-config=" + p)
c.check(rc == 2 and "[16, 1048576]" in err, "a range printed to the unit (%r)" % err)
p = conf("interval = 0.5;\nsinks = { kafka = 1; };\n")
rc, out, err = run("--config", p, "--check-config")
c.check(rc == 2 and ":2:" in err and "sinks" in err, "unknown group named with its line (%r)" % err)
p = conf("interval = 0.5\nhost = ;\n")
rc, out, err = run("--check-config=" + p)
c.check(rc == 2 and ":2:" in err and "syntax error" in err, "syntax error carries libconfig's line and text (%r)" % err)
p = conf('probes = { libraries = ( { path = "/lib/libc.so.6"; functions = ["read"]; } ); };\n')
rc, out, err = run("--check-config=" + p)
c.check(rc == 2 and ":1:" in err and "category" in err, "library without a category refused (%r)" % err)
p = conf('probes = { libraries = ( { path = "/lib/libc.so.6"; category = "libc"; functions = ["read"]; colour = "x"; } ); };\n')
rc, out, err = run("--check-config=" + p)
c.check(rc == 2 and "colour" in err, "unknown key in a library refused (%r)" % err)
p = conf('filter = { exclude_comms = ["kworker", "a-name-of-16-byt"]; };\n')
rc, out, err = run("--check-config=" + p)
c.check(rc == 2 and ":1:" in err and "filter.exclude_comms" in err and "longer than 15" in err,
        "a comm longer than the kernel keeps refused (%r)" % err)
p = conf('filter = { include_uids = [1000, -5]; };\n')
rc, out, err = run("--check-config=" + p)
c.check(rc == 2 and "filter.include_uids" in err and "out of range" in err,
        "a negative uid refused (%r)" % err)
p = conf('filter = { exclude_uids = ["root"]; };\n')
rc, out, err = run("--check-config=" + p)
c.check(rc == 2 and "filter.exclude_uids" in err and "not an integer" in err,
        "a uid by name refused (%r)" % err)
# cgroup paths resolve when the agent starts, before any probe loads; one
# not made yet is the host's state (slurmd's scope after a boot): exit 1,
# which systemd starts again, where exit 2 (RestartPreventExitStatus) left
# the node unwatched for good
missing_cg = "/dc-cli-no-such-cgroup-%d/job" % os.getpid()
p = conf('filter = { include_cgroups = ["%s"]; };\n' % missing_cg)
rc, out, err = run("--config", p, "--output", os.path.join(tmp, "out.jsonl"), "--duration", "1")
c.check(rc == 1 and "filter.include_cgroups" in err and missing_cg in err,
        "a cgroup that does not exist at start: exit 1, key and path named (%r)" % err)
# what the start resolves on the host, --check-config resolves too (a
# bad-input audit: each passed the check, then the start refused it, and
# "systemctl reload", which runs the check, said nothing)
# a cgroup not made yet: warned of, valid (exit 0: Ansible's validate runs
# on nodes that may not have slurmd's scope yet; the start exits 1)
check_conf('filter = { include_cgroups = ["%s"]; };\n' % missing_cg, 0,
           ["Not on this node yet: filter.include_cgroups", missing_cg, "No such file",
            "the start would exit 1"],
           "a cgroup that does not exist warned of at check, exit 0")
check_conf('traces = { sampling = { full_cgroups = ["%s"]; }; };\n' % missing_cg, 0,
           ["Not on this node yet: traces.sampling.full_cgroups: no cgroup " + missing_cg],
           "a full-trace cgroup that does not exist warned of at check, exit 0")
check_conf("filter = { exclude_comms = [%s]; };\n" % ", ".join('"c%d"' % i for i in range(65)), 2,
           ["filter.exclude_comms: more than 64 elements"], "65 comms refused at check")
check_conf('filter = { include_cgroups = ["%s"]; exclude_comms = [%s]; };\n'
           % (missing_cg, ", ".join('"c%d"' % i for i in range(65))), 2,
           ["filter.exclude_comms: more than 64 elements"],
           "a cgroup not made yet does not hide a bad list after it (exit 2)")
check_conf('filter = { include_cgroups = ["%s", "relative"]; };\n' % missing_cg, 2,
           ['filter.include_cgroups: "relative" is not an absolute cgroup path'],
           "... nor a bad line after it in its own list (exit 2)")
check_conf('probes = { libraries = ( { path = "/dc-cli-no-such.so"; category = "x"; '
           'functions = ["read"]; } ); };\n', 2, ["/dc-cli-no-such.so: No such file"],
           "a library that does not exist refused at check")
check_conf('output = { path = "/proc/version/records.jsonl"; };\n', 2,
           ["output.path /proc/version/records.jsonl cannot be made: /proc/version is not a "
            "directory"], "an output.path below a file refused at check")
check_conf('traces = { output = { dir = "/proc/version"; }; };\n', 2,
           ["traces.output.dir /proc/version is not a directory"],
           "a traces.output.dir that is a file refused at check")
check_conf('kafka = { brokers = "127.0.0.1:9"; };\nspool = { dir = "/proc/version/spool"; };\n',
           2, ["spool.dir /proc/version/spool cannot be made"],
           "a spool.dir below a file refused at check")
check_conf('output = { path = "%s"; };\n' % os.path.join(tmp, "new", "dir", "r.jsonl"), 0, [],
           "an output.path whose directories are yet to be made: valid")
p = conf('filter = { exclude_cgroups = ["system.slice"]; };\n')
rc, out, err = run("--config", p, "--output", os.path.join(tmp, "out.jsonl"), "--duration", "1")
c.check(rc == 2 and "filter.exclude_cgroups" in err and "absolute" in err,
        "a relative cgroup path: exit 2 (%r)" % err)
# libconfig's scanner exit()s on a directory, and ends the file at an
# unterminated comment or string or a NUL byte, ignoring the rest
d = os.path.join(tmp, "dir.conf")
os.mkdir(d)
rc, out, err = run("--check-config=" + d)
c.check(rc == 2 and d + ": is a directory" in err, "a directory for the file: exit 2, named (%r)" % err)
p = conf('interval = 0.5;\n@include "%s"\n' % d)
rc, out, err = run("--check-config=" + p)
c.check(rc == 2 and p + ":2:" in err and "is a directory" in err,
        "an @include of a directory: exit 2, the including line named (%r)" % err)
p = conf('interval = 0.5;\n@include "%s"\n' % os.path.join(tmp, "gone.conf"))
rc, out, err = run("--check-config=" + p)
c.check(rc == 2 and p + ":2:" in err and "gone.conf" in err and "No such file" in err,
        "an @include of a missing file names it and the including line (%r)" % err)
check_conf("interval = 0.5;\n/* note\nmaps = { max_keys = 1; };\n", 2,
           ["{path}:2:", "comment left open"], "an unterminated comment hides no settings")
check_conf('interval = 0.5;\nhost = "node\nmaps = { max_keys = 1; };\n', 2,
           ["{path}:2:", "string left open"], "an unterminated string hides no settings")
check_conf("interval = 0.5;\n\0maps = { max_keys = 1; };\n", 2, ["{path}:2:", "NUL"],
           "a NUL byte refused, not the end")
pr = run_checked([agent, "--check-config=/dev/stdin"], input="maps = { max_keys = 4294975488; };\n",
                    capture_output=True, text=True, timeout=30)
c.check(pr.returncode == 2 and "L suffix" in pr.stderr,
        "a configuration from a pipe has its integers checked too (%r)" % pr.stderr)
pr = run_checked([agent, "--check-config=/dev/stdin"], input="interval = 0.5;\n",
                    capture_output=True, text=True, timeout=30)
c.check(pr.returncode == 0, "a good configuration from a pipe is read (%r)" % pr.stderr)
# settings valid alone that do not go together: --check-config says what
# the start would, exit 2 (a bad-input audit: checked valid, then refused
# at start, some with exit 1)
check_conf("traces = { sampling = { slice_ms = 5000.0; period_s = 1.0; }; };\n", 2,
           ["traces.sampling.slice_ms (5000)", "period_s (1)", "go together"],
           "a trace slice longer than its period refused at check")
check_conf('kafka = { brokers = "127.0.0.1:9"; };\nspool = { dir = ""; };\n', 2,
           ["spool.dir is empty while kafka.brokers is set"], "an empty spool.dir with brokers refused")
check_conf('probes = { vfs = { categories = ",,"; }; };\n', 2,
           ['probes.vfs.categories (",,") names no category'], "a VFS layer with no category refused")
# a slice as long as its period, written so that its ns truncated once
# differed (1025000000 against 1024999999); traces off: not checked
check_conf("traces = { sampling = { slice_ms = 1025.0; period_s = 1.025; }; };\n", 0, [],
           "a trace slice equal to its period, in decimals that do not round-trip, valid")
check_conf("traces = { enable = false; sampling = { slice_ms = 5.0; }; };\n", 0, [],
           "a lone trace slice with traces off: valid, as before")
check_conf('output = { path = "%s"; };\n' % tmp, 2, ["output.path %s is a directory" % tmp],
           "output.path naming a directory refused at check")
check_conf('kafka = { brokers = "127.0.0.1:9"; };\nspool = { dir = "/etc/passwd"; };\n', 2,
           ["spool.dir /etc/passwd is not a directory"], "a spool.dir that is a file refused at check")
# a bound printed as the shortest decimal that reads back, not 0.050000000000000003
check_conf("budget = { recover_below = 0.01; };\n", 2, ["budget.recover_below: 0.01 is out of range [0.05, 0.95]"],
           "a range error's bounds as written")
# a name written as --help-config lists it: libconfig's bare "syntax error",
# with the hint that dots are groups
check_conf("maps.max_keys = 100;\n", 2, ["{path}:1: syntax error", "a dotted name is a path of groups"],
           "a dotted setting name: the hint")
# @include "x.conf" is the file beside the including one, wherever the agent
# starts (systemd starts it in /)
incdir = os.path.join(tmp, "incdir")
os.makedirs(os.path.join(incdir, "sub"))
with open(os.path.join(incdir, "sub", "part.conf"), "w") as f:
    f.write("maps = { max_keys = 4096; };\n")
with open(os.path.join(incdir, "main.conf"), "w") as f:
    f.write('interval = 0.5;\n@include "sub/part.conf"\n')
p = run_checked([os.path.abspath(agent), "--check-config=" + os.path.join(incdir, "main.conf")],
                   cwd="/",
                   capture_output=True, text=True, timeout=30)
c.check(p.returncode == 0, "a relative @include is read beside its file, from / too (%r)" % p.stderr)
check_conf("maps = 5;\n", 2, ["'maps' is a group of settings"],
           "a group given a value: said so, not called unknown")
p = conf("interval = 3.0;\n")
rc, out, err = run("--check-config=" + p, "--interval", "0.5")
c.check(rc == 0 and "interval = 3 in %s is overridden by --interval 0.5" % p in err,
        "a file's interval that --interval overrides is said (a reload said 'unchanged') (%r)"
        % err)
check_conf("interval = { };\n", 2, ["{path}:1: interval: expected a number, not a group"],
           "a number given a group: said so, not called an unknown group")
check_conf("output = { path = { }; };\n", 2,
           ["{path}:1: output.path: expected a string, not a group"],
           "a string given a group: said so")
check_conf("maps = { max_keys = 99999999999999999999999L; };\n", 2,
           ["99999999999999999999999 does not fit 64 bits"],
           "an L integer past 64 bits refused as written")
check_conf("maps = { max_keys = -9223372036854775808L; };\n", 2,
           ["-9223372036854775808 is out of range"],
           "an integer out of range printed as written, not rounded")
# what the sinks would refuse at start, --check-config refuses
check_conf('kafka = { brokers = "127.0.0.1:1"; topics = { features = ""; }; };\n', 2,
           ["kafka.topics.features is empty"],
           "an empty features topic with brokers set refused, not its records dropped")
check_conf('kafka = { brokers = "127.0.0.1:1"; topics = { traces = ""; }; };\n', 0, [],
           "an empty traces topic keeps traces on the node: valid")
check_conf('kafka = { brokers = "127.0.0.1:1"; properties = ["no.such.property=1"]; };\n', 2,
           ["no.such.property", "No such configuration property"],
           "a Kafka property librdkafka rejects, refused by --check-config")
check_conf('output = { path = ""; };\n', 2, ["output.path is empty"],
           "no output and no brokers refused by --check-config")
p = conf('output = { path = ""; };\n')
rc, out, err = run("--check-config=" + p, "--output", os.path.join(tmp, "o.jsonl"))
c.check(rc == 0, "... valid with --output (%r)" % err)
# a FIFO with no reader: said, not an agent stuck in open() before any probe loads
fifo = os.path.join(tmp, "fifo")
os.mkfifo(fifo)
rc, out, err = run("--output", fifo, "--duration", "1")
c.check(rc == 1 and "a FIFO with no reader" in err,
        "an output FIFO with no reader: exit 1, said, no hang (%r)" % err)
rc, out, err = run("--check-config=" + os.path.join(tmp, "missing.conf"))
c.check(rc == 2 and "missing.conf" in err and "No such file" in err, "missing file named (%r)" % err)
rc, out, err = run("--help-config")
c.check(rc == 0 and "maps.max_keys" in out and "probes.syscall.mechanism" in out, "--help-config lists the keys")
# every key --help-config lists appears in the shipped file, and vice versa
keys = {line.split(" ")[0] for line in out.splitlines()[1:] if line and not line.startswith(" ") and " (" in line}
shipped = open(shipped_conf).read()
missing = [k for k in keys if k.split(".")[-1] + " = " not in shipped]
c.check(len(keys) >= 10, "--help-config listed %d keys" % len(keys))
c.check(not missing, "conf/datacrumbs.conf documents every key (%s)" % missing)

# kafka.secrets_file: root's alone or the agent does not start; a value is never shown
SECRET = "s3cr3t-%d" % os.getpid()
sec = os.path.join(tmp, "kafka.secrets")
with open(sec, "w") as f:
    f.write("# credentials\nsasl.username=agent\nsasl.password=%s\n" % SECRET)
os.chmod(sec, 0o644)
p = conf('kafka = { secrets_file = "%s"; };\n' % sec)
rc, out, err = run("--check-config=" + p)
c.check(rc == 2 and sec in err and "mode 0644" in err and SECRET not in out + err,
        "a 0644 secrets file refused: exit 2, file and mode named (%r)" % err)
os.chmod(sec, 0o600)
is_root = os.geteuid() == 0
if is_root:
    rc, out, err = run("--check-config=" + p)
    c.check(rc == 0 and SECRET not in out + err, "a root-owned 0600 secrets file accepted (%r)" % err)
    os.chown(sec, 65534, -1)
    rc, out, err = run("--check-config=" + p)
    c.check(rc == 2 and sec in err and "not root" in err, "a secrets file not root's refused (%r)" % err)
    os.chown(sec, 0, -1)
    with open(sec, "a") as f:
        f.write("sasl.password %s\n" % SECRET)
    rc, out, err = run("--check-config=" + p)
    c.check(rc == 2 and sec + ":4:" in err and SECRET not in out + err,
            "a bad secrets line named by number, its text not shown (%r)" % err)
    # a misspelt name is no known secret's: librdkafka refuses it, and the
    # message named name=value with the password in it
    with open(sec, "w") as f:
        f.write("sasl.pasword=%s\n" % SECRET)
    p2 = conf('kafka = { brokers = "127.0.0.1:9"; secrets_file = "%s"; };\n' % sec)
    rc, out, err = run("--check-config=" + p2)
    c.check(rc == 2 and "kafka.secrets_file %s: property sasl.pasword (value not shown)" % sec
            in err and SECRET not in out + err,
            "a property of the secrets file librdkafka refuses: the file named, its value "
            "not shown (%r)" % err)
    # librdkafka's reason quotes a value it refuses, trimmed: hidden too
    with open(sec, "w") as f:
        f.write("compression.codec=  %s\n" % SECRET)
    rc, out, err = run("--check-config=" + p2)
    c.check(rc == 2 and "compression.codec (value not shown)" in err and SECRET not in out + err,
            "a refused value librdkafka's reason quotes trimmed: not shown (%r)" % err)
else:
    print("SKIP - secrets file ownership checks need root (the agent wants root's file)")
# a credential in the (world-readable) main file is warned about, without its value
p = conf('kafka = { properties = ["sasl.password=%s"]; };\n' % SECRET)
os.chmod(p, 0o644)
rc, out, err = run("--check-config=" + p)
c.check(rc == 0 and "sasl.password" in err and "0644" in err and "kafka.secrets_file" in err
        and SECRET not in out + err, "a secret in a 0644 config: warned, value not shown (%r)" % err)
if is_root:
    os.chmod(p, 0o600)
    rc, out, err = run("--check-config=" + p)
    c.check(rc == 0 and "sasl.password" not in err, "a root-only config: no warning (%r)" % err)
p = conf('log_level = "err";\nkafka = { properties = ["sasl.password=%s"]; };\n' % SECRET)
os.chmod(p, 0o644)
rc, out, err = run("--check-config=" + p)
c.check(rc == 0 and err == "", "log_level = \"err\" leaves the warning out (%r)" % err)

p = conf('probes = { syscall = { entry_stash = "percpu"; }; };\n')
rc, out, err = run("--check-config=" + p)
c.check(rc == 2 and "entry_stash" in err and "auto|cpu|task_storage|hash" in err,
        "an unknown entry stash is refused with the choices (%r)" % err)
if is_root:
    # the per-CPU stash asked for where the agent must assume preemption: a
    # clear refusal at start-up, not a silent fallback
    p = conf('probes = { syscall = { entry_stash = "cpu"; }; };\nmaps = { updates = "atomic"; };\n')
    rc, out, err = run("-c", p, "-d", "1", "-o", os.path.join(tmp, "never.jsonl"))
    c.check(rc != 0 and 'entry_stash is "cpu"' in err and 'maps.updates is "atomic"' in err,
            "entry_stash \"cpu\" with atomic updates refused, both named (%r)" % err[-300:])


# under systemd, stderr is the journal and JOURNAL_STREAM names it: "<N>" priorities
def run_journal(stream, *args, conf_path):
    with tempfile.TemporaryFile(mode="w+") as f:
        st = os.fstat(f.fileno())
        env = dict(os.environ, JOURNAL_STREAM=stream or "%d:%d" % (st.st_dev, st.st_ino))
        p = run_checked([agent, "--check-config=" + conf_path, *args], stdout=subprocess.PIPE,
                           stderr=f, text=True, env=env, timeout=30)
        f.seek(0)
        return p.returncode, f.read()


rc, err = run_journal(None, conf_path=conf("interval = 0.5;\nmaps = { max_keys = 10; };\n"))
c.check(rc == 2 and err.startswith("<3>Invalid configuration") and "datacrumbs:" not in err,
        "stderr is the journal: an error carries <3> (%r)" % err)
p = conf('kafka = { properties = ["sasl.password=%s"]; };\n' % SECRET)
os.chmod(p, 0o644)
rc, err = run_journal(None, conf_path=p)
c.check(rc == 0 and err.startswith("<4>") and "sasl.password" in err,
        "stderr is the journal: a warning carries <4> (%r)" % err)
rc, err = run_journal("1:1", conf_path=conf("maps = { max_keys = 10; };\n"))
c.check(rc == 2 and err.startswith("datacrumbs: Invalid configuration") and "<3>" not in err,
        "JOURNAL_STREAM inherited but stderr elsewhere: plain lines (%r)" % err)
c.done()
