"""``STORE.toml``: what kind of store a folder is, its format and its owners.

Read with the standard library's ``tomllib``; written by :meth:`StoreConfig.to_toml`
(``tomllib`` cannot write and the core takes no TOML dependency): one integer,
text, and a list of text are all STORE.toml holds.

Example::

    format = 2
    kind = "person"
    store_id = "st_3f9c0a1e5b7d2c44"
    owner_keys = ["ed25519:9a1b..."]
    created = "2025-01-31"
"""

from __future__ import annotations

import json
import re
import secrets
import tomllib
from dataclasses import dataclass
from pathlib import Path

from exo_core.atomic import atomic_write_text
from exo_core.store.errors import StoreFormatError

__all__ = ["StoreConfig", "read_config", "write_config", "STORE_KINDS", "CURRENT_FORMAT", "CONFIG_NAME", "new_store_id"]

CONFIG_NAME = "STORE.toml"
STORE_KINDS = ("person", "agent", "group")
# The store format this code writes. Older formats are migrated on open
# (exo_core.store.migrate); newer ones are refused.
CURRENT_FORMAT = 2
_KNOWN_KEYS = {"format", "kind", "store_id", "owner_keys", "created", "name"}
_STORE_ID = re.compile(r"st_[0-9a-f]{16,64}")
_LINE = re.compile(r"at line (\d+)")


@dataclass(frozen=True, slots=True)
class StoreConfig:
    """The parsed ``STORE.toml``. ``store_id`` is empty only in the blank template."""

    format: int
    kind: str
    store_id: str = ""
    owner_keys: tuple[str, ...] = ()
    created: str = ""
    name: str = ""

    def to_toml(self) -> str:
        """The file text, keys in a fixed order; an empty ``created`` or ``name`` is left out."""
        keys = ", ".join(_toml_string(key) for key in self.owner_keys)
        lines = [
            f"format = {self.format}",
            f"kind = {_toml_string(self.kind)}",
            f"store_id = {_toml_string(self.store_id)}",
            f"owner_keys = [{keys}]",
        ]
        lines += [
            f"{key} = {_toml_string(text)}" for key, text in (("created", self.created), ("name", self.name)) if text
        ]
        return "\n".join(lines) + "\n"


def new_store_id() -> str:
    """A fresh random store id: ``st_`` and 32 hex digits."""
    return "st_" + secrets.token_hex(16)


def _toml_string(text: str) -> str:
    # JSON's escapes are TOML's; json.dumps escapes C0 controls, and DEL must not stand raw either.
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007F")


def _line_of(raw: str, key: str) -> int | None:
    assignment = re.compile(rf"\s*{re.escape(key)}\s*=")
    return next((number for number, line in enumerate(raw.splitlines(), start=1) if assignment.match(line)), None)


def parse_config(raw: str, *, path: Path | str | None = None) -> StoreConfig:
    """Validate STORE.toml text; errors name the file, line and the fix."""
    try:
        data = tomllib.loads(raw)
    except tomllib.TOMLDecodeError as exc:
        match = _LINE.search(str(exc))
        raise StoreFormatError(
            f"not valid TOML ({exc}); compare with store_template/STORE.toml",
            path=path,
            line=int(match.group(1)) if match else None,
            rule="store-toml",
        ) from exc

    def fail(key: str, message: str, rule: str = "store-toml") -> StoreFormatError:
        return StoreFormatError(message, path=path, line=_line_of(raw, key) or 1, rule=rule)

    for key in data:
        if key not in _KNOWN_KEYS:
            raise fail(key, f"unknown key {key!r}; allowed: {', '.join(sorted(_KNOWN_KEYS))}")
    fmt = data.get("format")
    if isinstance(fmt, bool) or not isinstance(fmt, int) or fmt < 1:
        raise fail("format", "'format' must be a positive integer (the store format version)")
    kind = data.get("kind", "person" if fmt == 1 else None)
    if kind not in STORE_KINDS:
        raise fail("kind", f"'kind' must be one of {', '.join(STORE_KINDS)}")
    store_id = data.get("store_id", "")
    if not isinstance(store_id, str) or (store_id and not _STORE_ID.fullmatch(store_id)):
        raise fail("store_id", "'store_id' must look like 'st_' followed by 16-64 lower-case hex digits")
    owners = data.get("owner_keys", [])
    if not isinstance(owners, list) or not all(isinstance(k, str) and k for k in owners):
        raise fail("owner_keys", "'owner_keys' must be a list of key id strings")
    for key in ("created", "name"):
        if not isinstance(data.get(key, ""), str):
            raise fail(key, "'created' and 'name' must be strings")
    return StoreConfig(fmt, kind, store_id, tuple(owners), data.get("created", ""), data.get("name", ""))


def read_config(store_root: Path) -> StoreConfig:
    """Read ``<store_root>/STORE.toml``; a missing or bad file raises :class:`StoreFormatError`."""
    path = store_root / CONFIG_NAME
    try:
        raw = path.read_bytes()
    except FileNotFoundError as exc:
        raise StoreFormatError(
            "missing; this folder is not a store (run 'exo init' or copy store_template/)",
            path=path,
            rule="missing-store-toml",
        ) from exc
    except OSError as exc:
        raise StoreFormatError(f"cannot read ({exc})", path=path, rule="store-toml") from exc
    try:
        return parse_config(raw.decode("utf-8"), path=path)
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise StoreFormatError("not UTF-8 text; re-save it as UTF-8", path=path, line=line, rule="store-toml") from exc


def write_config(store_root: Path, config: StoreConfig) -> None:
    """Atomically replace ``<store_root>/STORE.toml``."""
    atomic_write_text(store_root / CONFIG_NAME, config.to_toml())
