#!/usr/bin/env bash
# Install the Debian packages listed in scripts/system-packages.txt that are missing.
# Idempotent: does nothing when all are present. Needs root (or sudo) for apt-get;
# without it, it names what is missing and the tests that need those programs skip.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
LIST="$ROOT/scripts/system-packages.txt"
[ -f "$LIST" ] || exit 0
command -v dpkg-query >/dev/null 2>&1 || { echo "install_system: not a Debian system; skipping"; exit 0; }
missing=()
while read -r pkg _; do
  case "$pkg" in ''|'#'*) continue ;; esac
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done < "$LIST"
[ ${#missing[@]} -eq 0 ] && exit 0
SUDO=""
if [ "$(id -u)" != "0" ]; then
  if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then SUDO="sudo -n"; else
    echo "install_system: missing ${missing[*]} and no root; tests needing them will skip" >&2; exit 0; fi
fi
echo "install_system: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq >/dev/null
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
