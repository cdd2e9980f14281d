#!/usr/bin/env bash
# What kernel configs need (docs/kernels.md), on Debian 12: QEMU with its
# virtiofsd, a static busybox for the guest's initramfs, and two ready
# kernels to compare (the cloud and PREEMPT_RT flavours of today's 6.1 ABI,
# picked through the metapackage so the version follows the archive), and
# what building a kernel from a tree needs (docs/kernels.md, "Building from
# a tree"): the compilers and tools, ccache, and the linux-source-6.1 tree
# tests/long/kbuild.rs builds.
# Idempotent: installs only what is missing. Run as root.
set -euo pipefail
[ "$(id -u)" = 0 ] || { echo "install-vm-tools: run as root" >&2; exit 1; }
need=()
command -v qemu-system-x86_64 >/dev/null 2>&1 && [ -x /usr/lib/qemu/virtiofsd ] || need+=(qemu-system-x86)
# Debian's plain busybox is dynamically linked: the initramfs needs the static one.
dpkg -s busybox-static >/dev/null 2>&1 || need+=(busybox-static)
ls /boot/vmlinuz-*-cloud-amd64 >/dev/null 2>&1 && ls /boot/vmlinuz-*-rt-amd64 >/dev/null 2>&1 || need+=(kernels)
for p in linux-source-6.1 build-essential flex bison bc libelf-dev libssl-dev cpio ccache; do
    dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
[ ${#need[@]} = 0 ] && exit 0
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
pkgs=()
for n in "${need[@]}"; do
    if [ "$n" = kernels ]; then
        V=$(apt-cache depends linux-image-cloud-amd64 | sed -n 's/.*Depends: linux-image-\(.*\)-cloud-amd64$/\1/p' | head -1)
        [ -n "$V" ] || { echo "install-vm-tools: no linux-image-cloud-amd64 in the package lists" >&2; exit 1; }
        pkgs+=("linux-image-$V-cloud-amd64-unsigned" "linux-image-$V-rt-amd64-unsigned")
    else
        pkgs+=("$n")
    fi
done
apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null
