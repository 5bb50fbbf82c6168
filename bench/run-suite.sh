#!/usr/bin/env bash
# The benchmark suite (issue 7): workloads x tracers in one run, the agent's
# own figures, and the goals against baselines measured in the same run.
# usage (root): bench/run-suite.sh [--build DIR] [suite.py options: --quick, --rounds R, --only c1,c2]
set -euo pipefail
source "$(dirname "$0")/prepare.sh"
exec python3 "$top/bench/suite.py" "$build" "$@"
