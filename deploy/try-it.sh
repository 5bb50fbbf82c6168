#!/usr/bin/env bash
# Try datacrumbs on one node: install what it needs, build it, run the agent
# on its embedded default (records to /var/lib/datacrumbs/records.jsonl)
# for a few seconds while a short I/O workload runs, then show what it saw.
# As root on Debian 12.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

bash packaging/install-deps.sh build test
[ -f build/build.ninja ] || meson setup build >/dev/null
ninja -C build >/dev/null

out=/var/lib/datacrumbs/records.jsonl
if [ -e /etc/datacrumbs.conf ]; then
  echo "note: /etc/datacrumbs.conf exists and is used instead of the embedded default"
fi
# records of earlier runs stay in the file: only what follows them counts
start=$(stat -c %s "$out" 2>/dev/null || echo 0)
./build/agent/datacrumbs --duration 6 &
agent=$!

# start the workload once the agent has closed its first window
for _ in $(seq 100); do
  [ -s "$out" ] && grep -q '"type":"agent"' <(tail -c +$((start + 1)) "$out") && break
  kill -0 "$agent" 2>/dev/null || { wait "$agent"; exit 1; }
  sleep 0.1
done
work=$(mktemp -d /var/tmp/datacrumbs-demo.XXXXXX)
dd if=/dev/zero of="$work/data" bs=1M count=128 conv=fsync status=none
dd if="$work/data" of=/dev/null bs=64k status=none
for i in $(seq 200); do echo "$i" > "$work/small.$i"; done
rm -rf "$work"
wait "$agent"

run=$(tail -n 1 "$out" | jq -r .run)
echo
echo "Records of this run ($run) in $out:"
jq -r --arg run "$run" 'select(.run == $run) | .type' "$out" | sort | uniq -c
echo
echo "Top processes by bytes moved (summed over the run's windows):"
jq -s -r --arg run "$run" '
  map(select(.run == $run and .type == "features"))
  | group_by(.pid)
  | map({pid: .[0].pid, comm: .[0].comm, cgroup: .[0].cgroup,
         ops: (map(.totals.ops) | add),
         read_mib: ((map(.totals.read_bytes) | add) / 1048576),
         write_mib: ((map(.totals.write_bytes) | add) / 1048576)})
  | sort_by(-(.read_mib + .write_mib)) | .[:8][]
  | "\(.pid)\t\(.comm)\tops=\(.ops)\tread=\(.read_mib*10|floor/10) MiB\twrite=\(.write_mib*10|floor/10) MiB\t\(.cgroup)"' "$out"
echo
echo "One feature vector, in full:"
# first(), not head: under pipefail a jq cut off by head fails the script (141)
jq -n --arg run "$run" 'first(inputs | select(.run == $run and .type == "features" and .comm == "dd"))' "$out"
