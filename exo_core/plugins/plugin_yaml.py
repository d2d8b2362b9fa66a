"""``plugin.yaml``: the plugin manifest, read with a strict YAML subset parser of our own.

The core depends only on the standard library, aiohttp, pynacl and numpy, so
it cannot use PyYAML at run time. Manifests are small and flat, so this module
reads exactly this subset and refuses everything else with the line number:

* ``# comments`` and blank lines;
* top-level ``key: value`` pairs, where a value is a plain scalar, a ``'single'``
  or ``"double"`` quoted string, ``true``/``false``, an integer, or a flow list
  ``[a, "b c"]``;
* a key with no value followed by an indented block list (``  - item``).

Nested mappings, anchors, tags, multi-document streams and block scalars
(``|``, ``>``) are refused: a manifest that needs them is not a manifest
this core can trust to mean what its author thought. A folder may carry
``plugin.json`` (the same fields as JSON) instead.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any

from exo_core.errors import ConfigError

__all__ = ["PluginManifest", "parse_manifest_text", "read_manifest"]

_KEY = re.compile(r"^([A-Za-z_][A-Za-z0-9_-]*):(?:\s+(.*))?$")
_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
_LISTS = ("provides", "requires_env", "pip_dependencies", "hooks", "tools")


@dataclass(frozen=True, slots=True)
class PluginManifest:
    """What a plugin says about itself. ``entry`` is the Python file (in the folder) holding ``register``."""

    name: str
    version: str = "0"
    description: str = ""
    entry: str = "__init__.py"
    provides: tuple[str, ...] = ()
    requires_env: tuple[str, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_mapping(cls, data: dict[str, Any], where: str) -> PluginManifest:
        """Validate a parsed manifest; :class:`ConfigError` names the file and field."""
        name = data.get("name")
        if not isinstance(name, str) or not _NAME.match(name):
            raise ConfigError(f"{where}: 'name' must be lower-case letters, digits, '-' or '_' (at most 64)")
        for key in _LISTS:
            value = data.get(key, [])
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise ConfigError(f"{where}: '{key}' must be a list of strings")
        entry = str(data.get("entry", "__init__.py"))
        if "/" in entry or "\\" in entry or not entry.endswith(".py"):
            raise ConfigError(f"{where}: 'entry' must be a .py file name inside the plugin folder")
        known = {"name", "version", "description", "entry", "provides", "requires_env"}
        return cls(
            name=name,
            version=str(data.get("version", "0")),
            description=str(data.get("description", "")),
            entry=entry,
            provides=tuple(data.get("provides", [])),
            requires_env=tuple(data.get("requires_env", [])),
            extra={k: v for k, v in data.items() if k not in known},
        )


def read_manifest(folder: Path) -> PluginManifest:
    """The manifest of a plugin folder (``plugin.yaml``, else ``plugin.json``)."""
    yaml_path, json_path = folder / "plugin.yaml", folder / "plugin.json"
    try:
        if yaml_path.is_file():
            return PluginManifest.from_mapping(
                parse_manifest_text(yaml_path.read_text(encoding="utf-8"), str(yaml_path)), str(yaml_path)
            )
        if json_path.is_file():
            data = json.loads(json_path.read_text(encoding="utf-8"))
            if not isinstance(data, dict):
                raise ConfigError(f"{json_path}: the manifest must be a JSON object")
            return PluginManifest.from_mapping(data, str(json_path))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"cannot read the manifest in {folder}: {exc}") from exc
    raise ConfigError(f"{folder} has no plugin.yaml or plugin.json; add one with at least 'name: <plugin name>'")


def parse_manifest_text(text: str, where: str = "plugin.yaml") -> dict[str, Any]:
    """Parse the YAML subset described above into a dict."""
    out: dict[str, Any] = {}
    open_list: str | None = None
    for number, raw in enumerate(text.splitlines(), start=1):
        line = _strip_comment(raw).rstrip()
        if not line.strip():
            continue
        if line.strip() in ("---", "..."):
            if out:
                raise ConfigError(f"{where}:{number}: only one YAML document is allowed")
            continue
        if line[0] in " \t":
            item = line.strip()
            if open_list is None or not item.startswith("- "):
                raise ConfigError(f"{where}:{number}: only '  - item' lines may be indented (no nested mappings)")
            out[open_list].append(_scalar(item[2:].strip(), where, number))
            continue
        match = _KEY.match(line)
        if match is None:
            raise ConfigError(f"{where}:{number}: expected 'key: value', got {line.strip()!r}")
        key, value = match.group(1), (match.group(2) or "").strip()
        if key in out:
            raise ConfigError(f"{where}:{number}: '{key}' appears twice")
        open_list = None if value else key  # a key with no value opens a block list
        if not value:
            out[key] = []
        else:
            out[key] = _flow_list(value, where, number) if value.startswith("[") else _scalar(value, where, number)
    return out


def _outside_quotes(text: str) -> Iterator[tuple[int, str]]:
    """``(index, character)`` for each character of ``text`` not inside a quoted string."""
    quote = ""
    for i, ch in enumerate(text):
        if quote:
            quote = "" if ch == quote else quote
            continue
        if ch in "'\"":
            quote = ch
        yield i, ch


def _strip_comment(line: str) -> str:
    return line[
        : next((i for i, ch in _outside_quotes(line) if ch == "#" and (i == 0 or line[i - 1] in " \t")), len(line))
    ]


def _scalar(value: str, where: str, number: int) -> Any:
    if value[:1] in ("|", ">", "&", "*", "!", "{"):
        raise ConfigError(f"{where}:{number}: {value[:1]!r} (block scalars, anchors, tags, mappings) is not supported")
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        inner = value[1:-1]
        return inner.replace("''", "'") if value[0] == "'" else inner.replace('\\"', '"').replace("\\\\", "\\")
    if value[:1] in "'\"":
        raise ConfigError(f"{where}:{number}: unclosed quote in {value!r}")
    if value in ("true", "false"):
        return value == "true"
    return int(value) if re.fullmatch(r"-?\d+", value) else value


def _flow_list(value: str, where: str, number: int) -> list[Any]:
    if not value.endswith("]"):
        raise ConfigError(f"{where}:{number}: a flow list must close with ']' on the same line")
    body = value[1:-1].strip()
    if not body:
        return []
    outside = list(_outside_quotes(body))
    if any(ch in "[]{}" for _, ch in outside):
        raise ConfigError(f"{where}:{number}: nested lists or mappings are not supported")
    cuts = [-1, *(i for i, ch in outside if ch == ","), len(body)]
    return [_scalar(body[a + 1 : b].strip(), where, number) for a, b in pairwise(cuts)]
