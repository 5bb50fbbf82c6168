# Sourced by bench/run-*.sh: packages, build directory (--build DIR as the
# first argument, else build/), an up-to-date build. Sets $top, $build and
# leaves the remaining arguments in $@.
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build="$top/build"
if [ "${1:-}" = "--build" ]; then
  build=$2
  shift 2
fi
bash "$top/packaging/install-deps.sh" build test bench
[ -f "$build/build.ninja" ] || meson setup "$build" "$top" >/dev/null
ninja -C "$build" >/dev/null
