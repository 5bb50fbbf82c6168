#!/usr/bin/env bash
# Build the datacrumbs .deb from this tree: bash packaging/build-deb.sh OUTDIR
#
# dpkg-buildpackage wants debian/ at the top of the source tree, while this
# project keeps it under packaging/ next to the rpm spec; so the tree is
# copied to a scratch directory and packaging/debian copied to its top. The
# copy leaves out .git and every meson build directory (any directory
# holding a build.ninja), so a developer's build never leaks into the
# package. The .deb, .buildinfo and .changes land in OUTDIR.
# Missing Build-Depends are installed from Debian (install-deps.sh build
# package) when run as root; otherwise the build stops naming them.
set -euo pipefail

if [ $# -ne 1 ]; then
  echo "usage: $0 OUTDIR" >&2
  exit 2
fi
top=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$1"
out=$(cd "$1" && pwd)

if ! (cd "$top/packaging" && dpkg-checkbuilddeps debian/control) 2>/dev/null; then
  if [ "$(id -u)" -eq 0 ]; then
    bash "$top/packaging/install-deps.sh" build package
  fi
  (cd "$top/packaging" && dpkg-checkbuilddeps debian/control)
fi

version=$(cd "$top/packaging" && dpkg-parsechangelog -l debian/changelog -S Version)
upstream=${version%-*}
scratch=$(mktemp -d /tmp/datacrumbs-deb.XXXXXX)
trap 'rm -rf "$scratch"' EXIT
src="$scratch/datacrumbs-$upstream"
mkdir "$src"
tar -C "$top" --exclude=.git --exclude-tag-all=build.ninja --exclude=__pycache__ -cf - . |
  tar -C "$src" -xf -
cp -a "$top/packaging/debian" "$src/debian"

# parallel=N: dh passes it to ninja and meson test
DEB_BUILD_OPTIONS="${DEB_BUILD_OPTIONS:+$DEB_BUILD_OPTIONS }parallel=$(nproc)"
export DEB_BUILD_OPTIONS
(cd "$src" && dpkg-buildpackage -us -uc -b) > "$scratch/build.log" 2>&1 || {
  tail -n 60 "$scratch/build.log" >&2
  echo "build-deb: dpkg-buildpackage failed (log above)" >&2
  exit 1
}
for f in "$scratch"/*.deb "$scratch"/*.buildinfo "$scratch"/*.changes; do
  [ -e "$f" ] && cp "$f" "$out/"
done
cp "$scratch/build.log" "$out/datacrumbs_${version}_build.log"
ls "$out"/datacrumbs_"${version}"_*.deb
