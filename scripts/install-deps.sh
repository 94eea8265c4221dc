#!/usr/bin/env bash
# Installs the Debian packages illan builds and tests with, and only those
# that are missing, so that `make check` works on a fresh machine.
set -euo pipefail

# libclang-rt-14-dev: libFuzzer, for make fuzz.  python3-matplotlib:
# make bench's SVG charts, which make check's bench-charts test draws too
# (so --bench has it as well).
packages=(meson ninja-build pkg-config gcc libglib2.0-dev libfdt-dev
          device-tree-compiler libjson-glib-dev libxdp-dev libbpf-dev xdp-tools bpftool
          clang llvm libclang-rt-14-dev iproute2 ethtool iputils-ping iperf3 python3
          python3-matplotlib)
# --bench (make bench): also DPDK's testpmd and its AF_XDP driver, the
# peer the benchmark runs in the same run (Debian 12 ships dpdk-testpmd in
# dpdk-dev), and valgrind, whose callgrind counts the trace part's
# instructions per frame.  Not for make check, which does not need them.
if [ "${1:-}" = --bench ]; then
    packages+=(dpdk-dev librte-net-af-xdp23 valgrind)
fi

missing=()
for p in "${packages[@]}"; do
    status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>&1 || true)
    [ "$status" = installed ] || missing+=("$p")
done

[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
    echo "install-deps: missing packages; as root run: apt-get install -y ${missing[*]}" >&2
    exit 1
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# An install from a stale or empty package list fails; refresh once and retry.
apt-get install -y --no-install-recommends "${missing[@]}" ||
    { apt-get update && apt-get install -y --no-install-recommends "${missing[@]}"; }
