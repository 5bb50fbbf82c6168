#!/usr/bin/env bash
# Install what datacrumbs needs from Debian 12 packages, and nothing from
# anywhere else. Groups: build (compile the agent and its BPF programs),
# test (run the test suite), bench (the benchmarks' comparison tracers),
# package (build and check the .deb and .rpm, boot the unit in a container).
# consumer (the reference consumer in consumer/: Python with Debian's own packages only).
# Usage: packaging/install-deps.sh [build] [test] [bench] [package] [consumer]   (default: build test)
set -euo pipefail

groups=("$@")
[ ${#groups[@]} -gt 0 ] || groups=(build test)

build_pkgs=(gcc libc6-dev linux-libc-dev pkg-config meson ninja-build clang bpftool
            libbpf-dev libelf-dev zlib1g-dev libsystemd-dev libconfig-dev librdkafka-dev libzstd-dev)
test_pkgs=(python3 jq clang-format kcat qemu-system-x86 cpio zstd e2fsprogs libclang-rt-14-dev)  # libclang-rt-14-dev: libFuzzer (tests/fuzz); zstd: decode trace files independently; e2fsprogs: the ext4 test
# the end-to-end test (tests/e2e): a debootstrapped Debian root booted by systemd-nspawn,
# configured by the Ansible role in deploy/; python3-yaml: the DaemonSet manifest test;
# procps: pgrep finds the container's init and agent
test_pkgs+=(debootstrap systemd-container ansible python3-yaml procps)
# chromium: the flame-graph SVG is rendered headless and screenshotted (tests/bpf/test_stacks.py)
test_pkgs+=(chromium)
# util-linux-extra: fincore, which checks a file is out of the page cache before a cold read
test_pkgs+=(util-linux-extra)
bench_pkgs=(bpftrace e2fsprogs mount)  # mount: losetup; e2fsprogs: mkfs.ext4 (layers_bench.py)
# BCC, the original DataCrumbs' technology, compared in bench/suite.py; it compiles at run
# time against kernel headers: Debian's stock ones when the running kernel has none
bench_pkgs+=(python3-bpfcc "linux-headers-$(dpkg --print-architecture)")
# rpm: rpmbuild and rpm -qlp; elfutils: eu-strip for rpm's debuginfo split; debootstrap and
# systemd-container: a Debian root booted by systemd-nspawn runs the unit under a real systemd
package_pkgs=(debhelper dpkg-dev fakeroot lintian rpm rpmlint elfutils debootstrap systemd-container)
test_pkgs+=("${package_pkgs[@]}")  # the packaging suite builds and lints the .deb and the .rpm
# consumer/ runs on /usr/bin/python3: Kafka, Dask (+ distributed), scikit-learn, plots, zstd frames
consumer_pkgs=(python3 python3-confluent-kafka python3-pandas python3-dask python3-distributed
               python3-sklearn python3-matplotlib python3-zstandard python3-pyflakes)
test_pkgs+=("${consumer_pkgs[@]}")  # the consumer suite runs the pipeline end to end

pkgs=()
for g in "${groups[@]}"; do
  case "$g" in
    build) pkgs+=("${build_pkgs[@]}") ;;
    test) pkgs+=("${test_pkgs[@]}") ;;
    bench) pkgs+=("${bench_pkgs[@]}") ;;
    package) pkgs+=("${package_pkgs[@]}") ;;
    consumer) pkgs+=("${consumer_pkgs[@]}") ;;
    *) echo "install-deps: unknown group '$g' (build, test, bench, package, consumer)" >&2; exit 2 ;;
  esac
done

if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: run as root (apt-get install)" >&2
  exit 1
fi

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
