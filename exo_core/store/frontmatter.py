"""A strict YAML subset for Markdown frontmatter, read and written by hand.

Why a subset and not YAML: the core may not depend on PyYAML, and full YAML
has surprises that do not belong in a person's notes (``no`` read as false,
anchors, tags, multi-document streams, silent duplicate keys). The subset is
exactly what Obsidian's property editor reads and writes, so a store opens as
a vault; every document we write is also valid YAML 1.2 meaning the same
thing. See docs/store.md for the grammar.

Grammar (one construct per line, UTF-8, LF or CRLF)::

    ---                       first line of the file
    key: scalar               key = [a-z][a-z0-9_]*, each key once
    key: [scalar, scalar]     flow list on one line (may be empty: [])
    key:                      followed by block items, or nothing (= null)
      - scalar                block list item, indented 0 or 2 spaces
    # comment                 whole-line comments only
    ---                       end of frontmatter; the Markdown body follows

Scalars are plain (``high``, ``2025-01-31``, ``see-also [[a/b]]``), double
quoted with JSON escapes, or single quoted (``''`` is a quote). Values are
returned as text; typing (dates, booleans, enums) belongs to the schema.
Anything else is an error naming the file and line and saying how to fix it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from exo_core.store.errors import StoreFormatError

__all__ = ["Frontmatter", "FrontValue", "parse_document", "dump_frontmatter", "format_scalar"]

FrontValue = str | list[str] | None

MAX_FRONTMATTER_LINES = 400
_KEY = re.compile(r"[a-z][a-z0-9_]{0,63}")
_INDICATORS = set("-?:,[]{}#&*!|>'\"%@`")
_FLOW_FORBIDDEN = set(",[]{}")
# Words YAML 1.1 readers (and Obsidian) take as booleans or null; written quoted.
_SPECIAL_WORDS = {"true", "false", "yes", "no", "on", "off", "y", "n", "null", "~"}
_NUMBERISH = re.compile(r"[-+]?(\.?[0-9]|\.(inf|nan)|0[xob])", re.IGNORECASE)
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
# Possessive, so a doubled quote or an escaped one never ends the value early.
_SINGLE_QUOTED = re.compile(r"'((?:[^']|'')*+)'")
_DOUBLE_QUOTED = re.compile(r'"(?:[^"\\]|\\.)*+"')


@dataclass(frozen=True, slots=True)
class Frontmatter:
    """Parsed frontmatter: ``values`` in file order, ``lines`` maps key to its 1-based line."""

    values: dict[str, FrontValue]
    lines: dict[str, int]
    body: str


# Characters YAML does not allow raw in a document (a tab is allowed).
_UNPRINTABLE = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")
# Written escaped in a double-quoted value: the unprintable ones and line or byte-order marks.
_ESCAPED = re.compile("[\x7f-\x9f\ud800-\udfff\ufffe\uffff\u2028\u2029\ufeff]")


def _plain_ok(text: str, *, flow: bool) -> str | None:
    """None when ``text`` may stand as a plain scalar, else the reason why not."""
    if not text:
        return "empty value"
    if text != text.strip(" "):
        return "leading or trailing spaces"
    if text[0] in _INDICATORS:
        return f"a plain value may not start with {text[0]!r}"
    if ": " in text or text.endswith(":"):
        return "a plain value may not contain ': '"
    if " #" in text or "\t" in text:
        return "a plain value may not contain ' #' or a tab"
    if flow and any(ch in _FLOW_FORBIDDEN for ch in text):
        return "an item of a [flow, list] may not contain , [ ] { }"
    bad = _UNPRINTABLE.search(text)
    return f"control character U+{ord(bad.group()):04X}" if bad else None


def format_scalar(text: str) -> str:
    """``text`` as a scalar our parser and any YAML reader read back unchanged as text.

    A ``YYYY-MM-DD`` date stays plain so Obsidian shows a date property.
    """
    if _DATE.fullmatch(text) or (
        _plain_ok(text, flow=False) is None and text.lower() not in _SPECIAL_WORDS and not _NUMBERISH.match(text)
    ):
        return text
    # JSON escapes are YAML escapes: json.dumps escapes quotes, backslashes and C0 controls.
    return _ESCAPED.sub(lambda m: f"\\u{ord(m.group()):04x}", json.dumps(text, ensure_ascii=False))


def dump_frontmatter(values: Mapping[str, FrontValue | bool]) -> str:
    """Render ``values`` (in their order) as a ``---`` block, lists in block style.

    A ``bool`` is written as plain ``true``/``false`` (a YAML boolean, an
    Obsidian checkbox); it reads back as the text ``"true"``/``"false"``.
    """
    lines = ["---"]
    for key, value in values.items():
        if not _KEY.fullmatch(key):
            raise ValueError(f"frontmatter key {key!r} must match [a-z][a-z0-9_]*")
        if isinstance(value, list) and value:
            lines.append(f"{key}:")
            lines.extend(f"  - {format_scalar(item)}" for item in value)
        elif isinstance(value, bool):
            lines.append(f"{key}: {str(value).lower()}")
        elif value is None:
            lines.append(f"{key}:")
        else:
            lines.append(f"{key}: {'[]' if isinstance(value, list) else format_scalar(value)}")
    lines.append("---")
    return "\n".join(lines) + "\n"


class _Reader:
    """Scalar and list parsing with the file and line kept for errors."""

    def __init__(self, path: Path | str | None) -> None:
        self.path = path

    def fail(self, line: int, message: str) -> StoreFormatError:
        return StoreFormatError(message, path=self.path, line=line, rule="frontmatter")

    def quoted(self, text: str, line: int) -> tuple[str, str]:
        """Read one quoted scalar at the start of ``text``; return (value, rest)."""
        if bad := _UNPRINTABLE.search(text):
            raise self.fail(line, f"raw control character U+{ord(bad.group()):04X}; write it as an escape or remove it")
        if text[0] == "'":
            match = _SINGLE_QUOTED.match(text)
            if match is None:
                raise self.fail(line, "unterminated 'single-quoted' value; close the quote on the same line")
            return match[1].replace("''", "'"), text[match.end() :]
        match = _DOUBLE_QUOTED.match(text)
        if match is None:
            raise self.fail(line, 'unterminated "double-quoted" value; close the quote on the same line')
        try:
            value: str = json.loads(match[0])  # a JSON string literal: always text
        except json.JSONDecodeError as exc:
            raise self.fail(
                line, f'bad escape in double-quoted value ({exc.msg}); use \\\\, \\", \\n, \\t or \\uXXXX'
            ) from exc
        # Escaped control characters are fine (YAML allows any escape); a lone
        # surrogate is not text and could never be written back as UTF-8.
        if lone := re.search("[\ud800-\udfff]", value):
            raise self.fail(line, f"lone surrogate \\u{ord(lone.group()):04x} in a value; remove it")
        return value, text[match.end() :]

    def scalar(self, text: str, line: int, *, flow: bool) -> str:
        text = text.strip(" ")
        if text[:1] in ("'", '"'):
            value, rest = self.quoted(text, line)
            if rest.strip(" "):
                raise self.fail(line, f"unexpected text after the closing quote: {rest.strip()!r}")
            return value
        reason = _plain_ok(text, flow=flow)
        if reason is not None:
            raise self.fail(line, f"{reason}; put the value in double quotes")
        return text

    def flow_list(self, text: str, line: int) -> list[str]:
        if not text.endswith("]"):
            raise self.fail(line, "a [flow, list] must end with ']' on the same line")
        inner = text[1:-1].strip(" ")
        items: list[str] = []
        while inner:
            if inner[0] in ("'", '"'):
                value, rest = self.quoted(inner, line)
            else:
                chunk = inner.split(",", 1)[0]
                value, rest = self.scalar(chunk, line, flow=True), inner[len(chunk) :]
            items.append(value)
            rest = rest.lstrip(" ")
            if rest.startswith(","):
                rest = rest[1:].lstrip(" ")
                if not rest:
                    raise self.fail(line, "trailing ',' in a [flow, list]; remove it")
            elif rest:
                raise self.fail(line, f"expected ',' or ']' in a [flow, list], found {rest[:10]!r}")
            inner = rest
        return items


def parse_document(text: str, *, path: Path | str | None = None) -> Frontmatter:
    """Split a Markdown document into its frontmatter and body.

    Raises :class:`StoreFormatError` naming ``path`` and the line for any
    construct outside the subset, a missing opening or closing ``---``, or a
    duplicate key.
    """
    reader = _Reader(path)
    lines = text.removeprefix("\ufeff").split("\n")
    if lines[0].rstrip("\r") != "---":
        raise reader.fail(1, "the file must start with a '---' line opening the frontmatter")
    values: dict[str, FrontValue] = {}
    where_key: dict[str, int] = {}
    open_list: str | None = None
    for lineno, raw in enumerate(lines[1:], start=2):
        if lineno > MAX_FRONTMATTER_LINES + 1:
            raise reader.fail(
                lineno, f"frontmatter longer than {MAX_FRONTMATTER_LINES} lines; is the closing '---' missing?"
            )
        raw = raw.rstrip("\r")
        if raw == "---":
            return Frontmatter(values, where_key, "\n".join(lines[lineno:]))
        stripped = raw.strip(" ")
        if not stripped or stripped.startswith("#"):
            continue
        if "\t" in raw[: len(raw) - len(raw.lstrip(" \t"))]:
            raise reader.fail(lineno, "tab in indentation; indent with spaces")
        if stripped.startswith("- ") or stripped == "-":
            if open_list is None or len(raw) - len(raw.lstrip(" ")) not in (0, 2):  # the item's indent
                raise reader.fail(lineno, "a '- item' line must follow 'key:' (indented 0 or 2 spaces)")
            current = values[open_list] = values[open_list] or []
            assert isinstance(current, list)  # 'key:' opened it as None; a list only ever follows
            item = stripped[1:].strip(" ")
            if not item:
                raise reader.fail(lineno, "empty list item; remove the line or give it a value")
            current.append(reader.scalar(item, lineno, flow=False))
            continue
        if raw[0] == " ":
            raise reader.fail(lineno, "unexpected indentation; nested maps and multi-line values are not supported")
        key, sep, rest = raw.partition(":")
        if not sep or not _KEY.fullmatch(key):
            raise reader.fail(lineno, "expected 'key: value' with a lower-case key like 'valid_from'")
        if key in values:
            raise reader.fail(lineno, f"duplicate key {key!r} (first on line {where_key[key]}); keep one")
        if rest and not rest.startswith(" "):
            raise reader.fail(lineno, f"put a space after '{key}:'")
        rest = rest.strip(" ")
        where_key[key] = lineno
        open_list = None
        if not rest:
            values[key] = None
            open_list = key
        elif rest.startswith("["):
            values[key] = reader.flow_list(rest, lineno)
        elif rest[0] in "{|>&*!":
            raise reader.fail(
                lineno, f"{rest[0]!r} (maps, block text, anchors, tags) is not supported; use a quoted value"
            )
        else:
            values[key] = reader.scalar(rest, lineno, flow=False)
    raise reader.fail(len(lines), "no closing '---' line after the frontmatter; add one")
