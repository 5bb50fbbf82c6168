#!/usr/bin/env bash
# Kafka publishing: throughput per core, delivery latency, zstd on the wire.
# usage (root): bench/run-kafka-bench.sh [--windows N] [--per-window M] [--seconds S]
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
bash "$top/packaging/install-deps.sh" build test
[ -f "$top/build/build.ninja" ] || meson setup "$top/build" >/dev/null
ninja -C "$top/build" >/dev/null
exec python3 "$top/bench/kafka_bench.py" "$top/build" "$@"
