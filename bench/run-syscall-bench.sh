#!/usr/bin/env bash
# Per-call cost of the syscall layer against its baselines, in one run.
# usage (root): bench/run-syscall-bench.sh [--ops N] [--rounds R]
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
bash "$top/packaging/install-deps.sh" build test bench
[ -f "$top/build/build.ninja" ] || meson setup "$top/build" >/dev/null
ninja -C "$top/build" >/dev/null
exec python3 "$top/bench/syscall_bench.py" "$top/build" "$@"
