"""Parsing untrusted JSON text into one object, with every limit checked cheaply and first.

Everything that reaches exod from a client passes through :func:`parse_json_object`
(``POST /command``, stdio lines, ``POST /pair``). Attacking exod on purpose
found inputs that escaped ``json.loads`` as untyped
exceptions or stalled the event loop; each is refused here with a typed
:class:`~exo_core.errors.ProtocolError` that says what was wrong:

* **Size**: more than ``limit`` bytes (``too_large``).
* **Nesting**: deeper than :data:`MAX_DEPTH` arrays/objects, and **breadth**: more
  than :data:`MAX_VALUES` values. Both are measured on the text *before* parsing,
  in C loops (strings blanked by one regex, brackets and commas counted), so a deep
  or huge body never builds or walks a Python tree that would hold the event loop
  for seconds (a 7.8 MB array once stalled every client for 10-19 s). Long text in
  a string is fine: it parses in one C loop.
* **Integers** beyond ±2^53 (I-JSON, RFC 7493: what every JSON peer can represent
  exactly; also what SQLite and the 4,300-digit guard of ``int()`` would refuse later).
* **NaN, Infinity and numbers that overflow to infinity** (``1e999``): canonical
  JSON cannot write them back.
* **Lone UTF-16 surrogates** (``"\\ud800"``): valid JSON text, but not Unicode; the
  reply that echoes them cannot be encoded as UTF-8 and SQLite stores them mangled.

The number and surrogate checks use ``json.loads`` hooks (or an encode) only when a
cheap scan of the text finds a candidate, so ordinary bodies parse at full speed.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from exo_core.errors import MalformedMessageError, PayloadTooLargeError

__all__ = [
    "MAX_BODY_BYTES",
    "MAX_DEPTH",
    "MAX_SAFE_INTEGER",
    "MAX_VALUES",
    "json_kind",
    "parse_json_object",
    "too_deep",
    "value_too_deep",
    "without_strings",
    "MAX_VALUE_DEPTH",
]

MAX_BODY_BYTES = 8 * 1024 * 1024
MAX_DEPTH = 64
# A value exod puts inside an event (tool call arguments, a panel's data) sits under up to six levels of
# envelope (event, body, tool_calls, one call, ...): it may nest this deep, so the event still decodes.
MAX_VALUE_DEPTH = MAX_DEPTH - 8
MAX_SAFE_INTEGER = 2**53
MAX_VALUES = 100_000
# A JSON string literal (escapes included), unrolled so an 8 MB string is one C loop.
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]]+")
_CURLY_AS_SQUARE = str.maketrans("{}", "[]")
_DIGITS_AS_ZERO = str.maketrans("123456789", "000000000")
# After digits become "0": a run of 17 (beyond ±2^53) or a three-digit exponent (beyond a double's range).
_NUMBER_SUSPECTS = ("0" * 17, "e000", "e+000", "e-000", "E000", "E+000", "E-000", "NaN", "Infinity")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def without_strings(text: str) -> str:
    """JSON ``text`` with every string literal blanked to ``""`` (what is left is structure and numbers)."""
    return _STRING.sub('""', text)


def too_deep(structure: str, limit: int = MAX_DEPTH) -> bool:
    """Whether arrays and objects nest more than ``limit`` deep in ``structure`` (JSON with strings blanked).

    Every pass of ``replace("[]", "")`` removes exactly the innermost level, so a
    balanced text is at most ``limit`` deep iff ``limit`` passes empty it; each pass
    is one C loop over what is left. Brackets that never balance count as too deep
    (the text is not JSON either way).
    """
    brackets = _NOT_BRACKET.sub("", structure.translate(_CURLY_AS_SQUARE))
    for _ in range(limit):
        if not brackets:
            return False
        brackets = brackets.replace("[]", "")
    return bool(brackets)


def value_too_deep(value: Any, limit: int = MAX_VALUE_DEPTH) -> bool:
    """Whether lists and mappings nest more than ``limit`` deep in the decoded ``value``.

    Level by level, without recursion: a value nested thousands deep (a model's tool call
    arguments) is measured before anything recursive (copying, encoding, redacting) meets it.
    """
    level = [value]
    for _depth in range(limit + 1):
        containers = [v for v in level if isinstance(v, (dict, list, tuple))]
        if not containers:
            return False
        level = [child for c in containers for child in (c.values() if isinstance(c, dict) else c)]
    return True  # containers on limit + 1 levels


def _check_shape(text: str, what: str) -> None:
    """Refuse too many values or too deep nesting, from counts over the text (C loops, no tree)."""
    openers = text.count("[") + text.count("{")
    if openers + text.count(",") <= MAX_DEPTH:
        return  # so few values cannot nest deeper, whatever their order
    if openers + text.count(",") > MAX_VALUES:
        # Each string is a key or a value: too many of them settles it without blanking a million strings.
        strings = (text.count('"') - text.count('\\"')) // 2
        if strings > MAX_VALUES:
            raise PayloadTooLargeError(f"{what} holds more than {MAX_VALUES} values; send fewer (long text is fine)")
    structure = without_strings(text)
    if structure.count("[") + structure.count("{") + structure.count(",") > MAX_VALUES:
        raise PayloadTooLargeError(f"{what} holds more than {MAX_VALUES} values; send fewer (long text is fine)")
    if too_deep(structure):
        raise MalformedMessageError(f"{what} is nested deeper than {MAX_DEPTH} levels of arrays and objects")


def parse_json_object(data: bytes | str, *, what: str = "message", limit: int = MAX_BODY_BYTES) -> dict[str, Any]:
    """Parse ``data`` as one JSON object, refusing what :mod:`this module <exo_core.protocol.safejson>` lists."""
    if len(data) > limit:
        raise PayloadTooLargeError(f"{what} is {len(data)} bytes; the limit is {limit}")
    try:
        text = data.decode("utf-8") if isinstance(data, bytes) else data
    except UnicodeDecodeError as exc:
        raise MalformedMessageError(f"{what} is not valid UTF-8 (byte {exc.start})") from exc
    _check_shape(text, what)
    hooks: dict[str, Any] = {}
    digits = text.translate(_DIGITS_AS_ZERO)
    if any(suspect in digits for suspect in _NUMBER_SUSPECTS):
        hooks = {"parse_int": _bounded_int, "parse_float": _finite_float, "parse_constant": _no_constant}
    try:
        value = json.loads(text, **hooks)
    except json.JSONDecodeError as exc:
        raise MalformedMessageError(
            f"{what} is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from exc
    except RecursionError as exc:  # not reached after the depth scan; kept as a floor
        raise MalformedMessageError(f"{what} is nested too deeply") from exc
    except ValueError as exc:  # int() digit limits and the like: never an untyped failure
        raise MalformedMessageError(f"{what} holds a number JSON peers cannot represent: {exc}") from exc
    if not isinstance(value, dict):
        raise MalformedMessageError(f"{what} must be a JSON object, not {json_kind(value)}")
    if _SURROGATE_ESCAPE.search(text):
        _refuse_lone_surrogates(value, what)
    return value


def json_kind(value: Any) -> str:
    """How an error message names the JSON type of ``value``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def _bounded_int(literal: str) -> int:
    digits = len(literal) - 1 if literal.startswith("-") else len(literal)
    if digits > 16:
        raise MalformedMessageError(
            f"integer {literal[:24]}{'...' if len(literal) > 24 else ''} is outside ±2^53, "
            "the range every JSON peer represents exactly; send it as a string"
        )
    value = int(literal)
    if abs(value) > MAX_SAFE_INTEGER:
        raise MalformedMessageError(f"integer {literal} is outside ±2^53; send it as a string")
    return value


def _finite_float(literal: str) -> float:
    value = float(literal)
    if not math.isfinite(value):
        raise MalformedMessageError(f"number {literal[:24]} is not finite as a double; send a smaller one")
    return value


def _no_constant(name: str) -> float:
    raise MalformedMessageError(f"{name} is not a JSON number; numbers must be finite")


def _refuse_lone_surrogates(value: dict[str, Any], what: str) -> None:
    """A ``\\ud800``-style escape without its pair decodes to text no UTF-8 encoder accepts."""
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as exc:
        raise MalformedMessageError(
            f"{what} holds a lone UTF-16 surrogate (a \\ud800-\\udfff escape without its pair); "
            "strings must be valid Unicode"
        ) from exc
