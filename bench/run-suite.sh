#!/usr/bin/env bash
# The benchmark suite (issue 7): workloads x tracers in one run, the agent's
# own figures, and the goals against baselines measured in the same run.
# usage (root): bench/run-suite.sh [--build DIR] [suite.py options: --quick, --rounds R, --only c1,c2]
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build="$top/build"
if [ "${1:-}" = "--build" ]; then
  build=$2
  shift 2
fi
bash "$top/packaging/install-deps.sh" build test bench
[ -f "$build/build.ninja" ] || meson setup "$build" "$top" >/dev/null
ninja -C "$build" >/dev/null
exec python3 "$top/bench/suite.py" "$build" "$@"
