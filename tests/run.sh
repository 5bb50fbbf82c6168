#!/usr/bin/env bash
# Set everything up and run the whole test suite (unit, command line, BPF).
# As root on Debian 12: installs the packages it needs, builds in ./build,
# runs meson test, and ends with "N passed, N failed".
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

bash packaging/install-deps.sh build test || exit 1
if [ ! -f build/build.ninja ]; then
  meson setup build -Dsanitizers=enabled >/dev/null || { meson setup build -Dsanitizers=enabled; exit 1; }
fi
ninja -C build >/dev/null || { ninja -C build; exit 1; }

meson test -C build --print-errorlogs "$@"
status=$?
python3 tests/summary.py build/meson-logs/testlog.json
exit $status
