#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# End to end, as an operator would: build the .deb, install it with apt in a
# Debian 12 root, boot that root with systemd-nspawn, point the agent at a
# Kafka broker, enable it with systemctl, run I/O inside, read the records
# back from Kafka on the host; then reload, reload a broken file, roll the
# Ansible role over the running node, and stop, leaving no BPF behind.
#
# usage: run-e2e.sh MOCK_BROKER    (tests/kafka's mock-broker from a build)
# As root. One line per check, "ok - ..." or "FAIL - ...", exit 1 on any
# failure, 77 (skip) only when not root.
# DC_E2E_DEB=FILE tests that package instead of building one; DC_E2E_KEEP=1
# leaves the work directory (overlay upper, logs) behind.
set -uo pipefail

if [ "$(id -u)" -ne 0 ]; then
  echo "SKIP: the end-to-end test needs root (debootstrap, systemd-nspawn, BPF)"
  exit 77
fi
top=$(cd "$(dirname "$0")/../.." && pwd)
mock_broker=$(realpath "${1:?usage: run-e2e.sh MOCK_BROKER}")
here="$top/tests/e2e"

n=0
failed=0
ok() { n=$((n + 1)); echo "ok - $*"; }
fail() { n=$((n + 1)); failed=$((failed + 1)); echo "FAIL - $*"; }
info() { echo "# $*"; }
finish() {
  echo "$n checks, $failed failed"
  [ "$failed" -eq 0 ]
  exit
}
# a check the rest cannot go on without
must() { fail "$*"; finish; }

work=$(mktemp -d /var/tmp/dc-e2e.XXXXXX)
machine="dc-e2e-$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')"
root="$work/root"
nspawn_pid=
leader=
broker_pid=

cleanup() {
  if [ -n "$nspawn_pid" ] && kill -0 "$nspawn_pid" 2>/dev/null; then
    # SIGTERM asks nspawn for a clean shutdown of the container's systemd
    kill -TERM "$nspawn_pid" 2>/dev/null
    for _ in $(seq 150); do kill -0 "$nspawn_pid" 2>/dev/null || break; sleep 0.2; done
    kill -KILL "$nspawn_pid" 2>/dev/null
    wait "$nspawn_pid" 2>/dev/null
  fi
  if [ -n "$broker_pid" ]; then
    exec 8>&- 2>/dev/null   # end of input: the broker exits
    for _ in $(seq 50); do kill -0 "$broker_pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$broker_pid" 2>/dev/null
  fi
  mountpoint -q "$root" && { umount "$root" 2>/dev/null || umount -l "$root"; }
  if [ "${DC_E2E_KEEP:-0}" = 1 ]; then
    echo "# work directory kept: $work" >&2
  else
    rm -rf "$work"
  fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Commands inside the booted container. This host's PID 1 is not systemd, so
# there is no machined for "systemctl -M" or "systemd-run -M": enter the
# container's namespaces instead, where systemctl finds the container's
# systemd on its private socket.
inside() { nsenter --target "$leader" --mount --uts --ipc --net --pid -- "$@"; }
# a command as a transient unit of the container's systemd: its own cgroup,
# like any service of the node
inside_run() { inside systemd-run --quiet --wait --pipe --collect "$@"; }
prop() { inside systemctl show -p "$1" --value datacrumbs.service; }

# --- the package and the root ---------------------------------------------
bash "$top/packaging/install-deps.sh" build test >"$work/deps.log" 2>&1 ||
  { cat "$work/deps.log"; must "install-deps.sh build test"; }

if [ -n "${DC_E2E_DEB:-}" ]; then
  # a package built elsewhere (a release candidate, a CI artifact)
  deb=$(realpath "$DC_E2E_DEB")
  [ -f "$deb" ] || must "DC_E2E_DEB=$DC_E2E_DEB exists"
  ok "testing the given package $(basename "$deb")"
else
  # nocheck: the suite running this test runs the others; and a package build
  # whose meson test ran this suite would build the package again, forever
  if ! DEB_BUILD_OPTIONS=nocheck bash "$top/packaging/build-deb.sh" "$work/deb" >"$work/build-deb.log" 2>&1; then
    tail -n 30 "$work/build-deb.log"
    must "packaging/build-deb.sh builds the .deb"
  fi
  deb=
  for f in "$work"/deb/datacrumbs_*.deb; do [ -f "$f" ] && deb=$f; done
  [ -n "$deb" ] || must "packaging/build-deb.sh left a datacrumbs_*.deb"
  ok "packaging/build-deb.sh built $(basename "$deb")"
fi

# exclusive while the cache is checked or rebuilt, then shared until exit:
# no other run rebuilds it under this run's overlay
mkdir -p "${DC_E2E_CACHE:-/var/tmp/datacrumbs-e2e}"
exec 9>"${DC_E2E_CACHE:-/var/tmp/datacrumbs-e2e}/lock"
flock 9
cache_root=$(DC_E2E_LOCKED=1 bash "$here/rootfs.sh" 2>"$work/rootfs.log") ||
  { cat "$work/rootfs.log"; must "Debian 12 root bootstrapped (tests/e2e/rootfs.sh)"; }
flock -s 9
ok "Debian 12 root ready: $(tail -n 1 "$work/rootfs.log" | sed 's/^rootfs: //')"

# the cache stays pristine for every later run: this run writes to an overlay
mkdir -p "$work/upper" "$work/ovl" "$root"
mount -t overlay overlay -o "lowerdir=$cache_root,upperdir=$work/upper,workdir=$work/ovl" "$root" ||
  must "overlay on the cached root"
# the records' host is the container's: the host name tells them from any
# other agent's
echo "$machine" >"$root/etc/hostname"
cp "$deb" "$root/root/"
# --register=no --keep-unit: no machined and no scope of the host's systemd,
# which a host whose PID 1 is not systemd lacks (and one that has it does not need)
nspawn=(systemd-nspawn --quiet --directory="$root" --machine="$machine" --register=no --keep-unit)
if "${nspawn[@]}" --pipe --setenv=DEBIAN_FRONTEND=noninteractive sh -c \
    "apt-get update -qq && apt-get install -y -qq /root/$(basename "$deb")" >"$work/apt.log" 2>&1 &&
   grep -q 'install ok installed' <<<"$("${nspawn[@]}" --pipe dpkg-query -W -f='${Status}\n' datacrumbs 2>/dev/null)"; then
  ok "apt-get install ./$(basename "$deb") in the root, dependencies from the Debian mirror"
else
  tail -n 20 "$work/apt.log"
  must "apt-get install of the .deb in the root"
fi
# the workload gets a name of its own, so its records cannot be anyone else's
cp "$root/usr/bin/dd" "$root/usr/local/bin/dc-e2e-dd"

# --- boot -----------------------------------------------------------------
# without --private-network the container shares the host's network
# namespace: the broker on the host's loopback is the container's too
"${nspawn[@]}" --boot --console=passive --capability=all \
  --system-call-filter='bpf perf_event_open' --bind=/sys/kernel/tracing \
  >"$work/console.log" 2>&1 &
nspawn_pid=$!
for _ in $(seq 100); do
  leader=$(pgrep -P "$nspawn_pid" -x systemd | head -n 1)
  [ -n "$leader" ] && break
  sleep 0.1
done
[ -n "$leader" ] || { cat "$work/console.log"; must "systemd-nspawn -b started the container's systemd"; }
# systemctl answers once the container's systemd has its private socket;
# before it made /run/systemd/system, it says "offline" at once (seen in a
# CI run: the boot went on, the check had stopped asking)
state=
for _ in $(seq 120); do
  state=$(timeout 120 nsenter --target "$leader" --mount --pid -- systemctl is-system-running --wait 2>/dev/null)
  [ -n "$state" ] && [ "$state" != offline ] && break
  sleep 1
done
if [ "$state" = running ] || [ "$state" = degraded ]; then
  ok "container $machine booted (systemd: $state)"
  [ "$state" = degraded ] && info "failed units: $(inside systemctl --failed --plain --no-legend | tr '\n' ' ')"
else
  cat "$work/console.log"
  must "container $machine booted (systemd: ${state:-no answer})"
fi

# --- the broker -------------------------------------------------------------
mkfifo "$work/broker.in"
"$mock_broker" datacrumbs.features datacrumbs.agent datacrumbs.traces datacrumbs.meta \
  <"$work/broker.in" >"$work/broker.out" 2>"$work/broker.err" &
broker_pid=$!
exec 8>"$work/broker.in"
for _ in $(seq 100); do [ -s "$work/broker.out" ] && break; sleep 0.1; done
bootstrap=$(awk '$1 == "bootstrap" { print $2; exit }' "$work/broker.out")
[ -n "$bootstrap" ] || { cat "$work/broker.err"; must "mock broker started"; }
ok "mock broker on the host's loopback at $bootstrap, datacrumbs topics created"

# every record of a topic from the beginning, one JSON object a line
consume() {
  kcat -b "$bootstrap" -C -t "$1" -o beginning -e -J -q 2>/dev/null | jq -c '.payload | fromjson'
}
# the agent records of one host and run: "window duration_us" lines
agent_windows() {
  consume datacrumbs.agent |
    jq -r --arg h "$1" --arg r "$2" 'select(.host == $h and .run == $r) | "\(.window) \(.duration_us)"'
}
latest_run() {
  consume datacrumbs.agent | jq -r --arg h "$1" 'select(.host == $h) | .run' | tail -n 1
}
# Windows of (host, run) after window AFTER, as published, against WANT_US
# (within 5 %). "settle": a change was asked for; wait up to TIMEOUT s for the
# last COUNT windows to have the new length (records reach Kafka a window or
# so late, so which window the change lands in is not known here). "all":
# nothing may change; once COUNT windows are there, every one must match.
windows_check() {
  local mode=$1 host=$2 run=$3 after=$4 count=$5 want=$6 deadline=$((SECONDS + $7)) got all
  while [ $SECONDS -lt $deadline ]; do
    all=$(agent_windows "$host" "$run" | awk -v a="$after" '$1 > a' | sort -n)
    if [ "$(printf '%s' "$all" | grep -c .)" -ge "$count" ]; then
      got=$all
      [ "$mode" = settle ] && got=$(echo "$all" | tail -n "$count")
      windows_seen=$(echo "$all" | tail -n 6 | awk '{ printf "%s%d:%d", (NR > 1 ? " " : ""), $1, $2 }')
      if echo "$got" | awk -v w="$want" '{ d = $2 - w; if (d < 0) d = -d; if (d > w * 0.05) bad = 1 } END { exit bad }'; then
        return 0
      fi
      [ "$mode" = all ] && return 1
    fi
    sleep 1
  done
  [ -n "${all:-}" ] || windows_seen="(fewer than $count windows after $after)"
  return 1
}
last_window() { agent_windows "$1" "$2" | sort -n | tail -n 1 | cut -d' ' -f1; }

# --- the operator: configure, enable, check -----------------------------------
conf=/etc/datacrumbs.conf
[ -f "$root$conf" ] || must "the package installed $conf"
inside sed -i \
  -e 's|^interval = .*|interval = 0.5;|' \
  -e 's|^\(  brokers = \).*|\1"'"$bootstrap"'";|' \
  "$conf"
if inside grep -qx 'interval = 0.5;' "$conf" && inside grep -qx "  brokers = \"$bootstrap\";" "$conf" &&
   inside datacrumbs --check-config="$conf" >"$work/check.log" 2>&1; then
  ok "operator's edit of $conf (kafka.brokers, 0.5 s windows) passes datacrumbs --check-config"
else
  cat "$work/check.log"
  must "operator's edit of $conf (kafka.brokers, 0.5 s windows)"
fi

was=$(inside systemctl is-active datacrumbs.service)
info "after install and boot the service is $was, $(inside systemctl is-enabled datacrumbs.service 2>&1)"
inside systemctl enable --now datacrumbs.service >"$work/enable.log" 2>&1 ||
  { cat "$work/enable.log"; inside journalctl -u datacrumbs --no-pager | tail -n 30; }
# a package that starts its service at install already runs on the old file
[ "$was" = active ] && inside systemctl restart datacrumbs.service
show=$(inside systemctl show -p Type,ActiveState,SubState,StatusText,MainPID datacrumbs.service)
info "$(echo "$show" | tr '\n' ' ')"
if grep -qx 'Type=notify' <<<"$show" && grep -qx 'ActiveState=active' <<<"$show" &&
   grep -qx 'SubState=running' <<<"$show" && grep -q '^StatusText=.' <<<"$show"; then
  ok "systemctl enable --now: active (running), readiness and status from the agent's sd_notify"
else
  inside journalctl -u datacrumbs --no-pager | tail -n 30
  must "systemctl enable --now: active (running) with the agent's status"
fi
mainpid=$(prop MainPID)

# the records file's size bound checked every 10 minutes (logrotate.timer
# runs once a day), and the check itself runs clean
if [ "$(inside systemctl is-active datacrumbs-logrotate.timer)" = active ] &&
   inside systemctl start datacrumbs-logrotate.service &&
   [ "$(inside systemctl show -p Result --value datacrumbs-logrotate.service)" = success ]; then
  ok "datacrumbs-logrotate.timer active; its logrotate run succeeds"
else
  inside systemctl status datacrumbs-logrotate.timer datacrumbs-logrotate.service --no-pager | tail -n 20
  fail "datacrumbs-logrotate.timer active and its run succeeding"
fi

# the agent's programs and links, by their ids, from its descriptors on the
# host: other agents on this host (other tests) load dc_* programs too
agent_hostpid=
for p in $(pgrep -x datacrumbs); do
  if [ "$(readlink "/proc/$p/ns/pid")" = "$(readlink "/proc/$leader/ns/pid")" ]; then agent_hostpid=$p; fi
done
prog_ids=$(cat /proc/"$agent_hostpid"/fdinfo/* 2>/dev/null | awk '$1 == "prog_id:" { print $2 }' | sort -un)
link_ids=$(cat /proc/"$agent_hostpid"/fdinfo/* 2>/dev/null | awk '$1 == "link_id:" { print $2 }' | sort -un)
names=$(for id in $prog_ids; do bpftool -j prog show id "$id" 2>/dev/null | jq -r .name; done | sort -u)
if [ -n "$agent_hostpid" ] && [ -n "$prog_ids" ] && [ -n "$link_ids" ] && ! grep -qv '^dc_' <<<"$names"; then
  ok "the container's agent (host pid $agent_hostpid) holds $(echo "$prog_ids" | wc -l) BPF programs, all dc_*, and $(echo "$link_ids" | wc -l) links"
else
  fail "the container's agent holds dc_* BPF programs and links (pid '${agent_hostpid}', programs: $(echo $names))"
fi

# --- a workload inside, its bytes out of Kafka --------------------------------
run=
for _ in $(seq 30); do run=$(latest_run "$machine"); [ -n "$run" ] && break; sleep 1; done
[ -n "$run" ] || must "agent records of $machine on datacrumbs.agent"
mib=24
want=$((mib * 1048576))
# dd as a child of the unit's shell: the unit's main process also carries
# systemd's own writes between fork and exec, which the agent rightly counts
inside_run --unit=dc-e2e-workload sh -c "/usr/local/bin/dc-e2e-dd if=/dev/zero of=/var/tmp/dc-e2e.dat \
  bs=1M count=$mib conv=fsync status=none; exit \$?" || fail "workload dc-e2e-dd ran in the container"
sum_writes() {
  consume datacrumbs.features | jq -s --arg h "$machine" '
    [.[] | select(.type == "features" and .host == $h and .comm == "dc-e2e-dd")]
    | {bytes: (map(.ops.write.bytes // 0) | add // 0), fsync: (map(.ops.fsync.count // 0) | add // 0),
       pids: (map(.pid) | unique), cgroup: (map(.cgroup) | unique)}'
}
got=
for _ in $(seq 30); do
  got=$(sum_writes)
  # the fsync's exit can close a window after the last write's: both
  [ "$(echo "$got" | jq .bytes)" -ge "$want" ] && [ "$(echo "$got" | jq .fsync)" -ge 1 ] && break
  sleep 1
done
info "workload's features records: $(echo "$got" | jq -c .)"
if [ "$(echo "$got" | jq .bytes)" -eq "$want" ] && [ "$(echo "$got" | jq .fsync)" -eq 1 ] &&
   [ "$(echo "$got" | jq '.pids | length')" -eq 1 ]; then
  ok "datacrumbs.features (consumed with kcat on the host) has the workload's $want written bytes and its fsync"
else
  fail "datacrumbs.features has the workload's $want written bytes and one fsync: $(echo "$got" | jq -c '{bytes, fsync}')"
fi
if windows_check settle "$machine" "$run" 0 3 500000 20; then
  ok "agent records: 0.5 s windows ($windows_seen)"
else
  fail "agent records: 0.5 s windows ($windows_seen)"
fi

# --- reload: a new interval takes effect in the same process ------------------
inside sed -i 's|^interval = .*|interval = 1.5;|' "$conf"
before=$(last_window "$machine" "$run")
if inside systemctl reload datacrumbs.service >"$work/reload.log" 2>&1; then
  ok "systemctl reload with interval = 1.5 returns 0"
else
  fail "systemctl reload with interval = 1.5 returns 0: $(tr '\n' ' ' <"$work/reload.log")"
fi
if windows_check settle "$machine" "$run" "$before" 2 1500000 30; then
  ok "after reload: 1.5 s windows, same run ($windows_seen)"
else
  fail "after reload: 1.5 s windows, same run ($windows_seen)"
fi
[ "$(prop MainPID)" = "$mainpid" ] && [ "$(prop ActiveState)" = active ] &&
  ok "after reload: active, same main pid $mainpid" ||
  fail "after reload: active, same main pid (was $mainpid, now $(prop MainPID), $(prop ActiveState))"

# --- a broken file: refused, the old configuration keeps running --------------
inside cp "$conf" /root/datacrumbs.conf.good
inside sed -i -e 's|^interval = .*|interval = 0.3;|' -e '$a no_such_setting = 1;' "$conf"
since=$(inside date '+%Y-%m-%d %H:%M:%S')
sleep 1
before=$(last_window "$machine" "$run")
if inside systemctl reload datacrumbs.service >"$work/reload-bad.log" 2>&1; then
  fail "systemctl reload of a broken file fails"
else
  ok "systemctl reload of a broken file fails"
fi
journal=$(inside journalctl -u datacrumbs.service --since "$since" --no-pager -o cat)
if [[ $journal == *no_such_setting* ]]; then
  ok "the journal names the bad setting"
else
  fail "the journal names the bad setting: $(echo "$journal" | tail -n 5 | tr '\n' ' ')"
fi
# the agent's own guard: SIGHUP straight to it, past ExecReload's check
status_before=$(prop StatusText)
inside systemctl kill --kill-who=main --signal=SIGHUP datacrumbs.service
sleep 2
status_after=$(prop StatusText)
info "StatusText before: $status_before"
info "StatusText after a SIGHUP with the broken file: $status_after"
if [ "$status_after" != "$status_before" ] &&
   grep -Eqi 'reload|config' <<<"$status_after" && grep -Eqi 'fail|refus|reject|invalid|error|kept|keep' <<<"$status_after"; then
  ok "after a SIGHUP with the broken file the agent's status says it kept the old configuration"
else
  fail "after a SIGHUP with the broken file the agent's status says it kept the old configuration (status: '$status_after')"
fi
journal=$(inside journalctl _PID="$mainpid" --since "$since" --no-pager -o cat)
if [[ $journal == *no_such_setting* ]]; then
  ok "the agent itself logs the refused file (setting named)"
else
  fail "the agent logs the refused file, naming the setting: $(echo "$journal" | tail -n 3 | tr '\n' ' ')"
fi
if windows_check all "$machine" "$run" "$before" 3 1500000 30; then
  ok "after the broken reloads: still 1.5 s windows, same run ($windows_seen)"
else
  fail "after the broken reloads: still 1.5 s windows, same run ($windows_seen)"
fi
[ "$(prop MainPID)" = "$mainpid" ] && [ "$(prop ActiveState)" = active ] &&
  ok "after the broken reloads: active, same main pid $mainpid" ||
  fail "after the broken reloads: active, same main pid (was $mainpid, now $(prop MainPID), $(prop ActiveState))"
inside cp /root/datacrumbs.conf.good "$conf"

# --- the Ansible role over the running node -----------------------------------
# community.docker.nsenter runs each task inside the container's namespaces,
# the same way as above; the playbook itself is the fleet's, unchanged
cat >"$work/inventory.ini" <<EOF
[datacrumbs]
$machine ansible_connection=community.docker.nsenter ansible_nsenter_pid=$leader ansible_become=false ansible_python_interpreter=/usr/bin/python3
EOF
cat >"$work/vars.yml" <<EOF
datacrumbs_package_file: "$deb"
datacrumbs_kafka_brokers: "$bootstrap"
datacrumbs_interval: 1.0
datacrumbs_host: "$machine-fleet"
datacrumbs_sampling: { one_in_n: 10, slow_ms: 5.0, rate: 2000.0, burst: 2000 }
datacrumbs_kafka_secrets: { sasl.password: "dc-e2e-secret-$machine" }
EOF
playbook() {
  ANSIBLE_HOST_KEY_CHECKING=false ANSIBLE_NOCOLOR=1 ANSIBLE_RETRY_FILES_ENABLED=false \
    ansible-playbook -i "$work/inventory.ini" -e "@$work/vars.yml" "$top/deploy/ansible/site.yml"
}
if playbook >"$work/ansible-1.log" 2>&1; then
  ok "ansible-playbook deploy/ansible/site.yml converges on the running container ($(grep -o 'changed=[0-9]*' "$work/ansible-1.log" | tail -n 1))"
else
  tail -n 30 "$work/ansible-1.log"
  fail "ansible-playbook deploy/ansible/site.yml converges on the running container"
fi
if inside grep -qx "  brokers = \"$bootstrap\";" "$conf" && inside grep -qx "host = \"$machine-fleet\";" "$conf" &&
   inside grep -qx 'interval = 1.0;' "$conf" && inside grep -q 'one_in_n = 10;' "$conf"; then
  ok "the role templated $conf from the inventory (host, interval, brokers, sampling)"
else
  fail "the role templated $conf from the inventory: $(inside cat "$conf" | head -n 30 | tr '\n' ' ')"
fi
secrets=$(inside stat -c '%U %a' /etc/datacrumbs/kafka.secrets 2>&1)
if [ "$secrets" = "root 600" ] && inside grep -qx '  secrets_file = "/etc/datacrumbs/kafka.secrets";' "$conf" &&
   ! inside grep -q "dc-e2e-secret" "$conf" && ! grep -q "dc-e2e-secret" <<<"$(inside journalctl --no-pager -o cat)"; then
  ok "the Kafka password went to a root-only secrets file, not to $conf nor the journal"
else
  fail "the Kafka password in a root-only secrets file only ($secrets)"
fi
frun=
for _ in $(seq 30); do frun=$(latest_run "$machine-fleet"); [ -n "$frun" ] && break; sleep 1; done
if [ -n "$frun" ] && windows_check settle "$machine-fleet" "$frun" 0 2 1000000 30; then
  ok "records now say host $machine-fleet with 1 s windows ($windows_seen)"
else
  fail "records say host $machine-fleet with 1 s windows (${frun:+run $frun: $windows_seen}${frun:-no record names that host})"
fi
[ "$(prop MainPID)" = "$mainpid" ] && [ "$frun" = "$run" ] &&
  ok "the role applied the change by reload: same main pid and run, windows numbered on" ||
  fail "the role applied the change by reload (main pid $mainpid -> $(prop MainPID), run $run -> ${frun:-none})"
[ "$(inside systemctl is-enabled datacrumbs.service)" = enabled ] && [ "$(prop ActiveState)" = active ] &&
  ok "the role left the service enabled and active" ||
  fail "the role left the service enabled and active ($(inside systemctl is-enabled datacrumbs.service), $(prop ActiveState))"
if playbook >"$work/ansible-2.log" 2>&1 && grep -q "^$machine .*changed=0 .*failed=0" "$work/ansible-2.log"; then
  ok "a second run changes nothing"
else
  fail "a second run changes nothing: $(grep "^$machine " "$work/ansible-2.log")"
fi
mainpid=$(prop MainPID)
for p in $(pgrep -x datacrumbs); do
  if [ "$(readlink "/proc/$p/ns/pid")" = "$(readlink "/proc/$leader/ns/pid")" ]; then agent_hostpid=$p; fi
done
prog_ids=$(printf '%s\n%s\n' "$prog_ids" "$(cat /proc/"$agent_hostpid"/fdinfo/* 2>/dev/null | awk '$1 == "prog_id:" { print $2 }')" | sort -un)
link_ids=$(printf '%s\n%s\n' "$link_ids" "$(cat /proc/"$agent_hostpid"/fdinfo/* 2>/dev/null | awk '$1 == "link_id:" { print $2 }')" | sort -un)

# --- stop: nothing of ours stays in the kernel --------------------------------
if inside systemctl stop datacrumbs.service && [ "$(prop ActiveState)" = inactive ] &&
   [ "$(prop Result)" = success ]; then
  ok "systemctl stop: inactive, result success"
else
  fail "systemctl stop: inactive, result success ($(prop ActiveState), $(prop Result))"
fi
# the kernel frees a program after a grace period once its last link is
# gone; on the system-call tracepoints (faultable since 6.10) that is an RCU
# tasks-trace period, which can outlast the process by a second or more
for _ in $(seq 60); do
  left_progs=$(for id in $prog_ids; do bpftool prog show id "$id" >/dev/null 2>&1 && echo "$id"; done)
  left_links=$(for id in $link_ids; do bpftool link show id "$id" >/dev/null 2>&1 && echo "$id"; done)
  [ -z "$left_progs" ] && [ -z "$left_links" ] && break
  sleep 0.5
done
if [ -z "$left_progs" ] && [ -z "$left_links" ]; then
  ok "after stop none of the agent's $(echo "$prog_ids" | grep -c .) programs and $(echo "$link_ids" | grep -c .) links is left (bpftool prog/link show on the host)"
else
  fail "30 s after stop programs $(echo $left_progs) and links $(echo $left_links) are left"
fi

finish
