#!/usr/bin/env bash
# Exo update: switch the device to a new release without ever touching the store.
#
#   image/update.sh SRC            SRC: a checkout or unpacked release of this repository
#
# Layout (made by image/build.sh):
#   $EXO_PREFIX/releases/<version>/{src,venv}   each release, complete and side by side
#   $EXO_PREFIX/current -> releases/<version>   the running one (switched atomically)
#   $EXO_PREFIX/venv -> current/venv, $EXO_PREFIX/image -> current/src/image
#   $EXO_STATE/home, $EXO_STATE/store           never written by this script
#
# Steps: 1. build the new release beside the old (nothing running changes);
# 2. export a consistent, verified copy of the store to $EXO_STATE/backups/ (safe
# while exod runs); 3. stop the services; 4. switch `current`; 5. first boot again
# (`exo init` keeps the existing home and store; new model manifests are fetched);
# 6. start the services and wait for exod's /health; 7. on any failure after the
# switch, switch back and start the old release. The store folder itself is only
# ever read (by the export); the last $EXO_KEEP_BACKUPS exports and releases are kept.
#
# Injectable for tests: EXO_PREFIX, EXO_STATE, EXO_SYSTEMCTL (default systemctl),
# EXO_HEALTH_CMD (default: GET /health on the socket), EXO_BUILD_RELEASE (the command
# that builds SRC into a release folder; default image/install-release.sh).
set -euo pipefail

SRC="${1:?usage: update.sh SRC}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
EXO_PREFIX="${EXO_PREFIX:-/opt/exo}"
EXO_STATE="${EXO_STATE:-/var/lib/exo}"
SYSTEMCTL="${EXO_SYSTEMCTL:-systemctl}"
KEEP="${EXO_KEEP_BACKUPS:-3}"
BUILD="${EXO_BUILD_RELEASE:-$HERE/install-release.sh}"
HOME_DIR="$EXO_STATE/home"
STORE_DIR="$EXO_STATE/store"
SERVICES=(exo-device.service exod.service)

log() { printf 'exo-update: %s\n' "$*" >&2; }

switch_to() {  # atomically point current (and the venv/image links) at releases/$1
  ln -sfn "releases/$1" "$EXO_PREFIX/current.new" && mv -Tf "$EXO_PREFIX/current.new" "$EXO_PREFIX/current"
  ln -sfn current/venv "$EXO_PREFIX/venv.new" && mv -Tf "$EXO_PREFIX/venv.new" "$EXO_PREFIX/venv"
  ln -sfn current/src/image "$EXO_PREFIX/image.new" && mv -Tf "$EXO_PREFIX/image.new" "$EXO_PREFIX/image"
}

health() {
  if [ -n "${EXO_HEALTH_CMD:-}" ]; then
    bash -c "$EXO_HEALTH_CMD"
    return
  fi
  "$EXO_PREFIX/venv/bin/python" - "$HOME_DIR/run/exod.sock" <<'PY'
import json, socket, sys, time
deadline = time.monotonic() + 60
while time.monotonic() < deadline:
    try:
        s = socket.socket(socket.AF_UNIX); s.settimeout(2); s.connect(sys.argv[1])
        s.sendall(b"GET /health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        data = b""
        while chunk := s.recv(65536):
            data += chunk
        if json.loads(data.partition(b"\r\n\r\n")[2]).get("ok") is True:
            sys.exit(0)
    except (OSError, ValueError):
        pass
    time.sleep(0.5)
sys.exit(1)
PY
}

old="$(basename "$(readlink "$EXO_PREFIX/current" 2>/dev/null || echo none)")"
version="$(date -u +%Y%m%d%H%M%S)-$(git -C "$SRC" rev-parse --short HEAD 2>/dev/null || echo local)"
new_dir="$EXO_PREFIX/releases/$version"

# 1. Build the new release beside the running one.
log "building release $version from $SRC"
mkdir -p "$EXO_PREFIX/releases"
"$BUILD" "$SRC" "$new_dir"

# 2. A verified copy of the store before anything changes.
EXO_OLD=("$EXO_PREFIX/venv/bin/exo")
backup="$EXO_STATE/backups/store-$version"
mkdir -p "$EXO_STATE/backups"
if [ -d "$STORE_DIR" ]; then
  "${EXO_OLD[@]}" store --home "$HOME_DIR" --store "$STORE_DIR" export "$backup" >&2
  "$new_dir/venv/bin/exo" store --home "$HOME_DIR" verify "$backup" >&2 \
    || { log "the new release cannot verify the store's export; not switching"; exit 1; }
  log "store exported and verified: $backup"
fi

# 3-6. Stop, switch, first boot, start, health.
$SYSTEMCTL stop "${SERVICES[@]}" || true
switch_to "$version"
log "switched $old -> $version"
if EXO_PREFIX="$EXO_PREFIX" EXO_STATE="$EXO_STATE" EXO_BIN="$EXO_PREFIX/venv/bin/exo" \
     "$EXO_PREFIX/image/firstboot.sh" && $SYSTEMCTL start exod.service exo-device.service && health; then
  log "release $version is healthy"
else
  log "release $version failed; rolling back to $old"
  $SYSTEMCTL stop "${SERVICES[@]}" || true
  if [ "$old" != "none" ]; then
    switch_to "$old"
    $SYSTEMCTL start exod.service exo-device.service || true
  fi
  exit 1
fi

# Keep the last $KEEP backups and releases (never the running one).
ls -1d "$EXO_STATE"/backups/store-* 2>/dev/null | sort | head -n "-$KEEP" | xargs -r rm -rf
for r in $(ls -1 "$EXO_PREFIX/releases" | sort | head -n "-$KEEP"); do
  [ "$r" = "$version" ] || rm -rf "${EXO_PREFIX:?}/releases/$r"
done
