#!/usr/bin/env bash
# The reference consumer's accuracy goal (consumer/README.md): run the agent,
# a sample of the workload matrix under it, then flatten + train + plot, and
# print the held-out R^2 of the all-feature model against the goal of 0.9.
#
# usage: bench/consumer_bench.sh [BUILD_DIR] [POINTS] [SECONDS_PER_POINT] [OUT_DIR]
#   (defaults: build 240 2.0 /var/tmp/dc-consumer-bench); as root.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$top/build}" && pwd)
points=${2:-240}
secs=${3:-2.0}
out=${4:-/var/tmp/dc-consumer-bench}
py=/usr/bin/python3

[ "$(id -u)" -eq 0 ] || { echo "consumer_bench: run as root (the agent needs it)" >&2; exit 1; }
rm -rf "$out" && mkdir -p "$out"
cat > "$out/agent.conf" <<CONF
interval = ${DC_BENCH_INTERVAL:-0.25};
traces = { output = { dir = "$out/traces"; }; };
CONF
"$build/agent/datacrumbs" --config "$out/agent.conf" --output "$out/records.jsonl" 2> "$out/agent.log" &
agent=$!
trap 'kill -INT $agent 2>/dev/null || true' EXIT
# the first agent record says the probes are attached and windows are closing
for _ in $(seq 100); do
  grep -q '"type":"agent"' "$out/records.jsonl" 2>/dev/null && break
  sleep 0.2
done
grep -q '"type":"agent"' "$out/records.jsonl" || { cat "$out/agent.log"; exit 1; }

cd "$top/consumer"
$py -m datacrumbs_consumer generate --labels "$out/labels.jsonl" --dir "$out/data" \
    --points "$points" --duration "$secs" --seed 1
kill -INT $agent
wait $agent || true
trap - EXIT
echo "records: $(wc -l < "$out/records.jsonl") lines, $(du -h "$out/records.jsonl" | cut -f1)"
$py -m datacrumbs_consumer pipeline --files "$out/records.jsonl" --labels "$out/labels.jsonl" \
    --out "$out/model" --goal 0.9
