#!/usr/bin/env bash
# Build the datacrumbs binary RPM from this tree: bash packaging/build-rpm.sh OUTDIR
#
# The tree is packed as the spec's Source0 (without .git and without any
# meson build directory) and built with rpmbuild -bb in a scratch _topdir;
# the .rpm lands in OUTDIR.
#
# On Debian, rpmbuild runs with --nodeps: Debian's rpm database is empty, so
# no BuildRequires can be satisfied from it, although the Debian packages
# that provide them (packaging/install-deps.sh build) are installed. On an
# RPM distribution, set DC_RPMBUILD_NODEPS=0 to have them checked.
set -euo pipefail

if [ $# -ne 1 ]; then
  echo "usage: $0 OUTDIR" >&2
  exit 2
fi
top=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$1"
out=$(cd "$1" && pwd)
spec="$top/packaging/rpm/datacrumbs.spec"

command -v rpmbuild >/dev/null || { echo "build-rpm: rpmbuild not found (Debian: apt-get install rpm)" >&2; exit 1; }
version=$(sed -n 's/^Version:[[:space:]]*//p' "$spec")
nodeps=()
if [ "${DC_RPMBUILD_NODEPS:-}" != 0 ] && { [ -f /etc/debian_version ] || [ "${DC_RPMBUILD_NODEPS:-}" = 1 ]; }; then
  nodeps=(--nodeps)
fi
defs=()
if [ -f /etc/debian_version ]; then
  # What Debian's rpm lacks of a distribution's rpm configuration:
  # - its brp-compress uses bash's "read -d" under #!/bin/sh (dash) and
  #   would leave the manual pages uncompressed: run it with bash;
  # - no -debuginfo package, so binaries keep their symbol tables: turn the
  #   debuginfo split on the way Fedora's redhat-rpm-config does.
  defs=(--define "__brp_compress bash %{_rpmconfigdir}/brp-compress %{?_prefix}"
        --define "_enable_debug_packages 1"
        --define $'install %{?_enable_debug_packages:%{?buildsubdir:%{debug_package}}}\\\n%%install')
fi

scratch=$(mktemp -d /tmp/datacrumbs-rpm.XXXXXX)
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch/SOURCES" "$scratch/src/datacrumbs-$version"
tar -C "$top" --exclude=.git --exclude-tag-all=build.ninja --exclude=__pycache__ -cf - . |
  tar -C "$scratch/src/datacrumbs-$version" -xf -
tar -C "$scratch/src" -czf "$scratch/SOURCES/datacrumbs-$version.tar.gz" "datacrumbs-$version"

rpmbuild -bb "${nodeps[@]}" "${defs[@]}" --define "_topdir $scratch" "$spec" > "$scratch/build.log" 2>&1 || {
  tail -n 60 "$scratch/build.log" >&2
  echo "build-rpm: rpmbuild failed (log above)" >&2
  exit 1
}
find "$scratch/RPMS" -name '*.rpm' -exec cp {} "$out/" \;
cp "$scratch/build.log" "$out/datacrumbs-$version-rpmbuild.log"
ls "$out"/datacrumbs-"$version"-*.rpm
