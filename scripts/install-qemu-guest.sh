#!/usr/bin/env bash
# Installs QEMU's pseries emulator and makes the ppc64el Linux guest that
# `make check-qemu` (tests/qemu/takeover.py) boots in it: DIR/vmlinux and
# DIR/initrd.img (busybox, ibmveth.ko, an /init that brings eth0 up).
# The kernel and busybox come from Debian's ppc64el packages, fetched with
# ppc64el added as a foreign architecture only for the time of the
# download.  Whatever is already there is kept: a second run with
# everything present changes nothing and runs no apt.
set -euo pipefail
cd "$(dirname "$0")/.."

dir=${1:-build/qemu-guest}
top=$PWD
die() { echo "install-qemu-guest: $*" >&2; exit 1; }

installed() {
    [ "$(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null)" = installed ]
}

need_root() {
    [ "$(id -u)" -eq 0 ] || die "$1; run it as root"
}

install_qemu() {
    local missing=()
    for p in qemu-system-ppc qemu-system-data; do
        installed "$p" || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return
    need_root "missing ${missing[*]}"
    echo "install-qemu-guest: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y --no-install-recommends "${missing[@]}" ||
        { apt-get update && apt-get install -y --no-install-recommends "${missing[@]}"; } ||
        die "apt-get could not install ${missing[*]}"
}

# Put back the architectures dpkg had, and apt's lists with them, however
# the download ended.
drop_ppc64el() {
    dpkg --remove-architecture ppc64el ||
        echo "install-qemu-guest: dpkg --remove-architecture ppc64el failed; remove it by hand" >&2
    apt-get update >/dev/null 2>&1 ||
        echo "install-qemu-guest: apt-get update after removing ppc64el failed" >&2
}

newest_kernel() {
    apt-cache pkgnames linux-image-6.1. |
        grep -E '^linux-image-6\.1\.[0-9]+-[0-9]+-powerpc64le$' | sort -V | tail -1
}

download_debs() {
    local debs=$1 kernel
    need_root "no guest kernel or busybox in $dir"
    if ! dpkg --print-foreign-architectures | grep -qx ppc64el; then
        trap drop_ppc64el EXIT
        trap 'exit 1' INT TERM HUP
        dpkg --add-architecture ppc64el
    fi
    # The security suite may have no ppc64el index; main's is enough.
    apt-get update >/dev/null 2>&1 ||
        echo "install-qemu-guest: apt-get update reported errors; trying with the lists it got" >&2
    kernel=$(newest_kernel)
    [ -n "$kernel" ] || die "no linux-image-6.1.*-powerpc64le package in apt's ppc64el lists"
    echo "install-qemu-guest: downloading $kernel and busybox-static for ppc64el"
    (cd "$debs" && apt-get download "$kernel:ppc64el" busybox-static:ppc64el) ||
        die "apt-get download of $kernel:ppc64el busybox-static:ppc64el failed"
}

extract_guest() {
    local work
    work=$(mktemp -d)
    mkdir "$work/debs" "$work/root"
    # apt-get download writes as the _apt user where that user can.
    chmod 755 "$work"
    chown _apt "$work/debs" 2>/dev/null || true
    download_debs "$work/debs"
    for deb in "$work"/debs/*.deb; do
        dpkg-deb -x "$deb" "$work/root"
    done
    local vmlinux ibmveth
    vmlinux=$(find "$work/root/boot" -name 'vmlinux-*' | head -1)
    ibmveth=$(find "$work/root/lib/modules" -name ibmveth.ko | head -1)
    [ -n "$vmlinux" ] || die "the kernel package holds no boot/vmlinux-*"
    [ -n "$ibmveth" ] || die "the kernel package holds no ibmveth.ko"
    [ -x "$work/root/bin/busybox" ] || die "busybox-static holds no bin/busybox"
    cp "$vmlinux" "$dir/vmlinux.tmp" && mv "$dir/vmlinux.tmp" "$dir/vmlinux"
    cp "$ibmveth" "$dir/ibmveth.ko"
    cp "$work/root/bin/busybox" "$dir/busybox"
    rm -rf "$work"
}

install_qemu
command -v qemu-system-ppc64 >/dev/null || die "qemu-system-ppc64 not found after installing qemu-system-ppc"
mkdir -p "$dir" || die "cannot create $dir"
if [ ! -f "$dir/vmlinux" ] || [ ! -f "$dir/ibmveth.ko" ] || [ ! -f "$dir/busybox" ]; then
    extract_guest
fi
if [ ! -f "$dir/initrd.img" ] || [ "$dir/initrd.img" -ot tests/qemu/make-initramfs.py ]; then
    python3 "$top/tests/qemu/make-initramfs.py" --busybox "$dir/busybox" \
        --ibmveth "$dir/ibmveth.ko" -o "$dir/initrd.img"
    echo "install-qemu-guest: wrote $dir/initrd.img"
fi
