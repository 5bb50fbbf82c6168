#!/usr/bin/env bash
# Per-call cost of every probe layer and mechanism against the floor, and the
# throughput an ext4 streaming workload loses to the default agent, in one run.
# usage (root): bench/run-layers-bench.sh [--build DIR] [layers_bench.py options]
#   (--rounds R, --ops N, --parts layers,ext4, --ext4-rounds R, --ext4-mib M,
#    --ext4-dirs /var/tmp,/dev/shm, --only c1,c2; default build dir: build/)
set -euo pipefail
source "$(dirname "$0")/prepare.sh"
exec python3 "$top/bench/layers_bench.py" "$build" "$@"
