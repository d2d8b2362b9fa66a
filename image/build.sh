#!/usr/bin/env bash
# Build the device's root filesystem: Debian bookworm arm64 (the base of Raspberry
# Pi OS Lite) + the packages in image/packages.txt + this release of Exo, with the
# service user, units, journald limits and first boot installed and enabled.
#
#   sudo image/build.sh [OUT_DIR]        (default: build/image)
#
# Output: OUT_DIR/rootfs/ and OUT_DIR/exo-rootfs-arm64.tar.gz (unpack it onto the
# root partition of a Raspberry Pi OS Lite SD card, or use it as a pi-gen stage's
# rootfs), and OUT_DIR/build.json (time, size, versions).
#
# Needs root, debootstrap and qemu-user-static with binfmt_misc (foreign arch).
# Environment: EXO_ARCH (arm64; amd64 builds natively, no qemu), EXO_SUITE
# (bookworm), EXO_MIRROR (http://deb.debian.org/debian), EXO_EDGE=1 (also compile
# llama-cpp-python in the image: hours under qemu; by default first boot on the
# device runs scripts/install_edge.sh instead).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="$(mkdir -p "${1:-$ROOT/build/image}" && cd "${1:-$ROOT/build/image}" && pwd)"
ARCH="${EXO_ARCH:-arm64}"
SUITE="${EXO_SUITE:-bookworm}"
MIRROR="${EXO_MIRROR:-http://deb.debian.org/debian}"
RFS="$OUT/rootfs"
start=$(date +%s)

log() { printf 'exo-image: %s\n' "$*" >&2; }
[ "$(id -u)" = 0 ] || { log "run as root (debootstrap and chroot need it)"; exit 1; }
command -v debootstrap >/dev/null || { log "debootstrap is missing (scripts/install_system.sh)"; exit 1; }
if [ "$ARCH" != "$(dpkg --print-architecture)" ]; then
  [ -x /usr/bin/qemu-aarch64-static ] || { log "qemu-user-static is missing"; exit 1; }
  if [ ! -e /proc/sys/fs/binfmt_misc/register ]; then
    mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
  fi
  if [ ! -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ]; then
    update-binfmts --enable qemu-aarch64 2>/dev/null || \
      update-binfmts --import qemu-aarch64 2>/dev/null || { log "cannot register qemu-aarch64 with binfmt_misc"; exit 1; }
  fi
fi

# Reuse a finished debootstrap (rm -rf OUT_DIR/rootfs for a clean build); drop an older release copy.
rm -rf "$RFS/opt/exo"
packages="$(grep -v '^\s*#' "$ROOT/image/packages.txt" | awk 'NF{print $1}' | paste -sd, -)"
mounted=()
cleanup() { for m in "${mounted[@]}"; do umount -l "$m" 2>/dev/null || true; done; }
trap cleanup EXIT

if [ ! -e "$RFS/etc/debian_version" ]; then
  log "debootstrap $SUITE $ARCH into $RFS"
  rm -rf "$RFS"
  debootstrap --arch="$ARCH" --variant=minbase --include="systemd,systemd-sysv,dbus,$packages" \
    "$SUITE" "$RFS" "$MIRROR"
fi

for fs in proc sys dev; do mount --bind "/$fs" "$RFS/$fs"; mounted=("$RFS/$fs" "${mounted[@]}"); done
in_root() { chroot "$RFS" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 "$@"; }

# The service user and its hardware groups.
install -D -m 0644 "$ROOT/image/rootfs/exo.sysusers.conf" "$RFS/usr/lib/sysusers.d/exo.conf"
in_root systemd-sysusers /usr/lib/sysusers.d/exo.conf

# This release of Exo in /opt/exo/releases/<version>, linked as current.
version="$(date -u +%Y%m%d%H%M%S)-$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo local)"
mkdir -p "$RFS/opt/exo/releases/$version/src"
tar -C "$ROOT" --exclude=.git --exclude=.venv --exclude=__pycache__ --exclude='*.egg-info' --exclude=build \
    --exclude=.pytest_cache --exclude=.hypothesis --exclude=.exo-run -cf - . | tar -C "$RFS/opt/exo/releases/$version/src" -xf -
# A build machine behind a TLS-inspecting proxy: trust its CAs (EXO_BUILD_CA, default the host's
# /usr/local/share/ca-certificates/*.crt) during the build only; they are removed from the image below.
build_cas=()
for ca in ${EXO_BUILD_CA:-/usr/local/share/ca-certificates/*.crt}; do
  [ -f "$ca" ] || continue
  install -D -m 0644 "$ca" "$RFS/usr/local/share/ca-certificates/exo-build-$(basename "$ca")"
  build_cas+=("$RFS/usr/local/share/ca-certificates/exo-build-$(basename "$ca")")
done
[ ${#build_cas[@]} -eq 0 ] || in_root update-ca-certificates >/dev/null
in_root python3 -m venv "/opt/exo/releases/$version/venv"
# Editable: the release keeps its sources, and exo_core finds store_template/ beside its package
# (a plain install would leave store_template/ behind and `exo init` could not make a store).
in_root "/opt/exo/releases/$version/venv/bin/python" -m pip install --quiet --no-cache-dir \
  -e "/opt/exo/releases/$version/src[device]"
if [ "${EXO_EDGE:-0}" = "1" ]; then
  in_root "/opt/exo/releases/$version/src/scripts/install_edge.sh" "/opt/exo/releases/$version/venv/bin/python"
fi
if [ ${#build_cas[@]} -gt 0 ]; then rm -f "${build_cas[@]}"; in_root update-ca-certificates --fresh >/dev/null; fi
ln -sfn "releases/$version" "$RFS/opt/exo/current"
ln -sfn current/venv "$RFS/opt/exo/venv"
ln -sfn current/src/image "$RFS/opt/exo/image"

# Units, journald limits, enabled.
install -m 0644 "$ROOT"/image/systemd/*.service "$RFS/etc/systemd/system/"
install -D -m 0644 "$ROOT/image/rootfs/journald-exo.conf" "$RFS/etc/systemd/journald.conf.d/exo.conf"
in_root systemctl enable exo-firstboot.service exod.service exo-device.service
echo exo-device > "$RFS/etc/hostname"
in_root apt-get clean
rm -rf "$RFS"/var/lib/apt/lists/* "$RFS"/tmp/*

cleanup; mounted=()
log "packing $OUT/exo-rootfs-$ARCH.tar.gz"
tar -C "$RFS" --numeric-owner -czf "$OUT/exo-rootfs-$ARCH.tar.gz" .
end=$(date +%s)
cat > "$OUT/build.json" <<JSON
{"arch": "$ARCH", "suite": "$SUITE", "release": "$version", "seconds": $((end - start)),
 "rootfs_mb": $(du -sm "$RFS" | cut -f1), "tarball_mb": $(du -sm "$OUT/exo-rootfs-$ARCH.tar.gz" | cut -f1),
 "exo_install_mb": $(du -sm "$RFS/opt/exo" | cut -f1)}
JSON
cat "$OUT/build.json"
