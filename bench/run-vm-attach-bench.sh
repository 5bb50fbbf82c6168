#!/usr/bin/env bash
# Attach and detach times of fentry, kprobes and tracepoints (the VFS layer)
# and of tp_btf, raw_tp and tracepoints (the system-call layer), in one boot
# of Debian's stock kernel under qemu: the mechanisms this project's
# development kernel refuses. Root; builds first. The VM test's harness
# boots it (tests/vm/run-vm-test.sh: qemu, the kernel cached from Debian's
# archive) and prints the bench's lines.
# usage: bench/run-vm-attach-bench.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
ninja -C "$build" bench/vm-attach-bench >/dev/null
exec bash tests/vm/run-vm-test.sh "$build/bench/vm-attach-bench"
