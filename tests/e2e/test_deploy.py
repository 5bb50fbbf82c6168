#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The fleet deployment files, without a fleet: the Ansible playbook passes
ansible-playbook --syntax-check, the role's template renders files the agent
accepts (--check-config) and that say what the inventory said, and the
Kubernetes manifest is YAML with the fields a node agent needs, its
ConfigMap accepted by the agent and its capabilities the systemd unit's.
(tests/e2e/run-e2e.sh runs the role against a booted node.)

usage: test_deploy.py AGENT
"""
import atexit
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

try:
    import yaml
except ImportError:
    # install-deps.sh installs PyYAML for Debian's python3 (python3-yaml);
    # the python3 on PATH may be another one
    if os.path.exists("/usr/bin/python3") and os.path.realpath(sys.executable) != os.path.realpath("/usr/bin/python3"):
        os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)
    raise

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bpf"))
from agentlib import Checks  # noqa: E402

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
ANSIBLE = os.path.join(TOP, "deploy", "ansible")
ROLE = os.path.join(ANSIBLE, "roles", "datacrumbs")
K8S = os.path.join(TOP, "deploy", "kubernetes", "datacrumbs.yaml")
UNIT = os.path.join(TOP, "packaging", "datacrumbs.service")

ENV = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_RETRY_FILES_ENABLED="false",
           ANSIBLE_LOCALHOST_WARNING="false", ANSIBLE_INVENTORY_UNPARSED_WARNING="false")


def check_config(agent, text):
    with tempfile.NamedTemporaryFile("w", suffix=".conf", delete=False) as f:
        f.write(text)
    r = subprocess.run([agent, "--check-config=" + f.name], capture_output=True, text=True)
    os.unlink(f.name)
    return r.returncode, (r.stdout + r.stderr).strip()


def render(tmp, name, extra_vars):
    """The role's template with its defaults under extra_vars, rendered by Ansible itself."""
    out = os.path.join(tmp, name + ".conf")
    play = os.path.join(tmp, name + ".yml")
    varsf = os.path.join(tmp, name + "-vars.yml")
    with open(varsf, "w") as f:
        yaml.safe_dump(extra_vars, f)
    with open(play, "w") as f:
        yaml.safe_dump([{
            "hosts": "localhost", "connection": "local", "gather_facts": False,
            "vars_files": [os.path.join(ROLE, "defaults", "main.yml")],
            "tasks": [{"ansible.builtin.template": {
                "src": os.path.join(ROLE, "templates", "datacrumbs.conf.j2"), "dest": out}}],
        }], f)
    r = subprocess.run(["ansible-playbook", "-i", "localhost,", "-e", "@" + varsf, play],
                       capture_output=True, text=True, env=ENV)
    if r.returncode != 0:
        return None, r.stdout[-2000:] + r.stderr[-2000:]
    with open(out) as f:
        return f.read(), ""


def example_group_vars():
    """The example inventory's vars for the hosts of its login group (the override case)."""
    with open(os.path.join(ANSIBLE, "inventory.example.yml")) as f:
        inv = yaml.safe_load(f)
    grp = inv["all"]["children"]["datacrumbs"]
    v = dict(grp["vars"])
    v.update(grp["children"]["login"]["vars"])
    return v


def ansible_checks(c, agent):
    r = subprocess.run(["ansible-playbook", "--syntax-check", "-i",
                        os.path.join(ANSIBLE, "inventory.example.yml"),
                        os.path.join(ANSIBLE, "site.yml")], capture_output=True, text=True, env=ENV)
    c.eq(r.returncode, 0, "ansible-playbook --syntax-check deploy/ansible/site.yml" +
         ("" if r.returncode == 0 else ": " + (r.stdout + r.stderr)[-500:]))

    tmp = tempfile.mkdtemp(prefix="dc-deploy-")
    atexit.register(shutil.rmtree, tmp, True)
    text, err = render(tmp, "defaults", {})
    c.check(text is not None, "the role's template renders with the role's defaults" + (": " + err if err else ""))
    if text is not None:
        rc, msg = check_config(agent, text)
        c.eq(rc, 0, "datacrumbs --check-config accepts it (%s)" % msg)

    v = example_group_vars()
    # a host name needing escapes: libconfig's string syntax, not the shell's
    v.update({"vault_datacrumbs_kafka_password": 's3cr"t\\', "datacrumbs_host": 'node "7"'})
    # --check-config wants the secrets file the configuration names: root's, 0600
    secrets = os.path.join(tmp, "kafka.secrets")
    with open(secrets, "w") as f:
        f.write("sasl.password=unused\n")
    os.chmod(secrets, 0o600)
    if os.geteuid() == 0:
        v["datacrumbs_kafka_secrets_file"] = secrets
    else:
        print("# not root: the secrets file cannot be root's; rendering without it")
        v["datacrumbs_kafka_secrets"] = {}
    text, err = render(tmp, "example", v)
    c.check(text is not None, "the template renders with inventory.example.yml's login hosts" + (": " + err if err else ""))
    if text is None:
        return
    rc, msg = check_config(agent, text)
    c.eq(rc, 0, "datacrumbs --check-config accepts it (%s)" % msg)
    want = {
        "interval": r"^interval = 5\.0;$",
        "host": r'^host = "node \\"7\\"";$',
        "brokers": r'^  brokers = "kafka-1\.example\.org:9093,kafka-2\.example\.org:9093,kafka-3\.example\.org:9093";$',
        "properties": r'^  properties = \["security\.protocol=SASL_SSL", "sasl\.mechanism=SCRAM-SHA-512", "sasl\.username=datacrumbs"\];$',
        "output": r'^  path = "";$',
        "sampling": r"^    one_in_n = 1000;$",
    }
    if v["datacrumbs_kafka_secrets"]:
        want["secrets_file"] = r'^  secrets_file = "%s";$' % re.escape(secrets)
    missing = [k for k, rx in want.items() if not re.search(rx, text, re.M)]
    c.eq(missing, [], "the rendered file carries the inventory's values (group override, escapes)")
    c.check("s3cr" not in text, "the Kafka password is not in the world-readable file")

    # a value the agent refuses never reaches a node: the template task validates
    text, err = render(tmp, "bad", {"datacrumbs_sampling": {"one_in_n": 0}})
    rc, msg = check_config(agent, text or "")
    c.check(text is not None and rc == 2, "an out-of-range inventory value is refused by the "
            "template's validate step (%s)" % msg)


def unit_caps():
    with open(UNIT) as f:
        for line in f:
            if line.startswith("CapabilityBoundingSet="):
                return sorted(c.replace("CAP_", "") for c in line.split("=", 1)[1].split())
    return None


def caps_run(c, agent, caps):
    """The agent does its work with the manifest's capabilities and no others."""
    if os.geteuid() != 0:
        print("# not root: the run with the DaemonSet's capabilities alone is not tried")
        return
    tmp = tempfile.mkdtemp(prefix="dc-caps-")
    atexit.register(shutil.rmtree, tmp, True)
    conf = os.path.join(tmp, "datacrumbs.conf")
    with open(conf, "w") as f:
        f.write('interval = 0.5;\nspool = { dir = "%s/spool"; };\ntraces = { output = { dir = "%s/traces"; }; };\n'
                % (tmp, tmp))
    out = os.path.join(tmp, "records.jsonl")
    bound = "-all," + ",".join("+" + x.lower() for x in caps)
    # root whose bounding set is the pod's: what a container runtime leaves it
    r = subprocess.run(["setpriv", "--bounding-set=" + bound, "--inh-caps=-all", "--",
                        agent, "--config", conf, "--duration", "2", "--output", out],
                       capture_output=True, text=True, timeout=120)
    recs = []
    if os.path.exists(out):
        with open(out) as f:
            recs = [json.loads(line) for line in f]
    agents = [x for x in recs if x["type"] == "agent"]
    probes = {p["name"]: p["mechanism"] for p in agents[-1]["probes"]} if agents else {}
    cgroups = [x for x in recs if x["type"] == "features" and x.get("cgroup")]
    c.check(r.returncode == 0 and probes.get("syscall") not in (None, "off") and cgroups,
            "the agent runs with %s alone (setpriv): exit %d, probes %s, %d records with a cgroup path%s"
            % ("+".join(caps), r.returncode, probes, len(cgroups),
               "" if r.returncode == 0 else ": " + r.stderr[-300:]))


def k8s_checks(c, agent):
    with open(K8S) as f:
        docs = [d for d in yaml.safe_load_all(f) if d]
    c.check(len(docs) > 0, "%s is YAML (%d documents)" % (os.path.relpath(K8S, TOP), len(docs)))
    by_kind = {d["kind"]: d for d in docs}
    ds, cm = by_kind.get("DaemonSet"), by_kind.get("ConfigMap")
    c.check(ds is not None and cm is not None, "a DaemonSet and a ConfigMap")
    if ds is None or cm is None:
        return
    c.eq(ds.get("apiVersion"), "apps/v1", "DaemonSet apiVersion")
    spec = ds["spec"]["template"]["spec"]
    c.eq(ds["spec"]["selector"]["matchLabels"],
         {k: v for k, v in ds["spec"]["template"]["metadata"]["labels"].items()
          if k in ds["spec"]["selector"]["matchLabels"]},
         "the selector matches the pod template's labels")
    c.eq(spec.get("hostPID"), True, "hostPID (the node's processes)")
    ctr = spec["containers"][0]
    sc = ctr.get("securityContext", {})
    caps = sorted(sc.get("capabilities", {}).get("add", []))
    c.check(sc.get("privileged") is True or caps == unit_caps(),
            "privileged, or exactly the systemd unit's capabilities (%s; unit: %s)" % (caps, unit_caps()))
    if not sc.get("privileged"):
        c.eq(sc.get("capabilities", {}).get("drop"), ["ALL"], "every other capability dropped")
    vols = {v["name"]: v for v in spec.get("volumes", [])}
    mounts = {m["mountPath"]: m for m in ctr.get("volumeMounts", [])}
    for path in ["/sys/kernel/btf", "/sys/kernel/tracing", "/sys/fs/cgroup", "/var/lib/datacrumbs"]:
        m = mounts.get(path)
        hp = vols.get(m["name"], {}).get("hostPath", {}).get("path") if m else None
        c.eq(hp, path, "host %s mounted at the same path" % path)
    c.check(mounts.get("/var/lib/datacrumbs", {}).get("readOnly") is not True,
            "/var/lib/datacrumbs writable (spool)")

    cfg_mount = [m for m in ctr.get("volumeMounts", [])
                 if vols.get(m["name"], {}).get("configMap", {}).get("name") == cm["metadata"]["name"]]
    c.check(len(cfg_mount) == 1, "the ConfigMap %s is mounted" % cm["metadata"]["name"])
    if cfg_mount:
        path = os.path.join(cfg_mount[0]["mountPath"], "datacrumbs.conf")
        cmd = ctr.get("command", []) + ctr.get("args", [])
        c.check(path in cmd and "datacrumbs.conf" in cm["data"],
                "the agent reads the ConfigMap's datacrumbs.conf (%s)" % path)
    rc, msg = check_config(agent, cm["data"].get("datacrumbs.conf", ""))
    c.eq(rc, 0, "datacrumbs --check-config accepts the ConfigMap's file (%s)" % msg)

    if not sc.get("privileged"):
        caps_run(c, agent, caps)

    res = ctr.get("resources", {})
    c.check(all(k in res.get(x, {}) for x in ("requests", "limits") for k in ("cpu", "memory")),
            "cpu and memory requests and limits: %s" % res)
    c.check(cm["metadata"].get("namespace") == ds["metadata"].get("namespace"),
            "ConfigMap and DaemonSet in one namespace")


def main():
    agent = sys.argv[1]
    c = Checks()
    ansible_checks(c, agent)
    k8s_checks(c, agent)
    c.done()


if __name__ == "__main__":
    main()
