#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Prepare, or reuse, the cached Debian 12 root that the end-to-end test boots
# with systemd-nspawn: /var/tmp/datacrumbs-e2e/rootfs (override with
# DC_E2E_CACHE). Prints the root's path on standard output.
#
# The cache is shared by every user of it (this test, the packaging checks),
# so it is only ever read after it is made: a test mounts an overlay on it and
# writes there. rootfs.stamp records how and when it was bootstrapped; a
# different recipe, or one older than DC_E2E_MAX_AGE_DAYS (7: security
# updates), rebuilds it. $cache/lock serialises builders; a user of the root
# keeps a shared lock on it for as long as its overlay stands, and runs this
# script with DC_E2E_LOCKED=1 while it holds the lock exclusively.
set -euo pipefail

cache=${DC_E2E_CACHE:-/var/tmp/datacrumbs-e2e}
suite=bookworm
mirror=${DC_E2E_MIRROR:-http://deb.debian.org/debian}
# systemd and dbus: the container boots (-b) and is driven with systemctl;
# python3: Ansible's modules run on the managed node
include=systemd,systemd-sysv,dbus,python3
max_age_days=${DC_E2E_MAX_AGE_DAYS:-7}
recipe="suite=$suite variant=minbase mirror=$mirror include=$include"

mkdir -p "$cache"
if [ -z "${DC_E2E_LOCKED:-}" ]; then
  exec 9>"$cache/lock"
  flock 9
fi

stamp="$cache/rootfs.stamp"
if [ -d "$cache/rootfs" ] && [ -f "$stamp" ]; then
  built=$(sed -n 's/^built=//p' "$stamp")
  age=$(( ($(date +%s) - $(date -d "$built" +%s 2>/dev/null || echo 0)) / 86400 ))
  if [ "$(sed -n 's/^recipe=//p' "$stamp")" = "$recipe" ] && [ "$age" -lt "$max_age_days" ]; then
    echo "rootfs: reusing $cache/rootfs (bootstrapped $built)" >&2
    echo "$cache/rootfs"
    exit 0
  fi
  echo "rootfs: cache is stale (bootstrapped $built, recipe $(sed -n 's/^recipe=//p' "$stamp")), rebuilding" >&2
fi

# bootstrap beside the cache and swap it in whole, so an interrupted run
# never leaves a half-made root that looks usable
rm -rf "$cache/rootfs.new" "$stamp"
echo "rootfs: debootstrap $suite from $mirror (a few minutes)" >&2
if ! debootstrap --variant=minbase --include="$include" "$suite" "$cache/rootfs.new" "$mirror" \
    >"$cache/debootstrap.log" 2>&1; then
  tail -n 20 "$cache/debootstrap.log" >&2
  exit 1
fi
# what a Debian 12 node has: point releases and security updates, so a
# package built against an updated library finds it
cat >"$cache/rootfs.new/etc/apt/sources.list" <<EOF
deb $mirror $suite main
deb $mirror $suite-updates main
deb ${DC_E2E_SECURITY_MIRROR:-http://deb.debian.org/debian-security} $suite-security main
EOF
# a fresh machine-id per boot; an empty one tells systemd so
: >"$cache/rootfs.new/etc/machine-id"
rm -rf "$cache/rootfs"
mv "$cache/rootfs.new" "$cache/rootfs"
printf 'recipe=%s\nbuilt=%s\n' "$recipe" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" >"$stamp"
echo "$cache/rootfs"
