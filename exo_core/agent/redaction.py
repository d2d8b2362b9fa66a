"""Secrets out of tool results before the model, an event or the ledger sees them (docs/security.md).

Two kinds of secret are recognised:

* by shape: the store's leak patterns (:data:`exo_core.store.leaks.LEAK_PATTERNS`,
  one list for the whole core: private keys in PEM and OpenSSH form, the
  ledger key file's line, provider API keys, bearer tokens, JWTs,
  ``password = …``, crypt hashes). Phone numbers are left alone here: tool
  output is full of digit groups (addresses, sizes) that are not;
* by value: this machine's own secrets, which have no telling shape (the
  ledger key's seed is 64 hex digits like any sha256; the TCP token is
  url-safe base64): :meth:`SecretRedactor.for_home` reads them from the Exo
  home (``keys/*.key``, ``token``, ``$EXO_TOKEN``) and looks for their exact
  text, hex in either case and base64.

Each becomes ``[redacted:<kind>]``. What this does not stop: a secret in a
shape none of the patterns knows, or one the agent transforms first
(reversed, split across lines, encoded otherwise). The gate denying reads of
exod's own files is the first line; this is the second.
"""

from __future__ import annotations

import base64
import bisect
import itertools
import os
import re
import string
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Protocol

from exo_core.store.leaks import LEAK_PATTERNS, LEAK_TRIGGERS

__all__ = ["Redactor", "SecretRedactor", "StreamRedactor", "redact_data"]

_MIN_KNOWN = 16  # shorter values would redact ordinary words
_KEY_LINE = re.compile(r"exo-ed25519-seed-v\d+\s+([0-9A-Fa-f]{64})")
# A block that may still be open at the end of a chunk: held back until it closes.
_OPEN_BLOCK = re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----(?![\s\S]*-----END [A-Z0-9 ]+-----)")
# Patterns that span lines run over the whole text; the rest only on the lines holding one of their triggers.
_MULTILINE = frozenset(p for _kind, p in LEAK_PATTERNS if p.flags & re.S)
_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)  # triggers are ASCII
_HOLD_LIMIT = 64 * 1024
_TAIL = 256  # longest secret a cut in the middle of a line can split


class Redactor(Protocol):
    """Replaces secrets in text (the agent loop's seam; :class:`SecretRedactor` is the default)."""

    def redact(self, text: str) -> str:
        """``text`` with every secret replaced by a placeholder."""
        ...


class SecretRedactor:
    """The leak shapes plus exact known values; ``for_home`` keeps the home's values current."""

    def __init__(self, *, known: Iterable[str] = (), home: Path | None = None) -> None:
        self._fixed = tuple(v for v in known if len(v) >= _MIN_KNOWN)
        self._home = home
        self._stamp: tuple[Any, ...] = ()
        self._values: tuple[str, ...] = _forms(self._fixed)

    @classmethod
    def for_home(cls, home: Path) -> SecretRedactor:
        """A redactor that knows the secrets in the Exo home ``home`` (re-read when its files change)."""
        return cls(home=Path(home))

    def redact(self, text: str) -> str:
        """``text`` with every recognised secret replaced by ``[redacted:<kind>]``."""
        if not text:
            return text
        text = _redact_shapes(text)
        for value in self._known():
            if value in text:
                text = text.replace(value, "[redacted:exo-secret]")
        return text

    def redact_data(self, value: Any) -> Any:
        """``value`` (strings, lists, mappings, as JSON holds them) with every string redacted."""
        return redact_data(self, value)

    def stream(self) -> StreamRedactor:
        """A redactor for one stream of output chunks."""
        return StreamRedactor(self)

    def _known(self) -> tuple[str, ...]:
        if self._home is None:
            return self._values
        files = [self._home / "token"]
        try:
            files += sorted(p for p in (self._home / "keys").iterdir() if p.is_file())
        except OSError:
            pass  # no keys folder yet: nothing to know there
        stamp = tuple(_stamp(p) for p in files) + (os.environ.get("EXO_TOKEN", ""),)
        if stamp != self._stamp:
            self._stamp = stamp
            self._values = _forms((*self._fixed, *_read_secrets(files), os.environ.get("EXO_TOKEN", "")))
        return self._values


class StreamRedactor:
    """Redacts a stream cut into arbitrary chunks: whole lines go out; an open key block is held until it closes."""

    def __init__(self, redactor: Redactor) -> None:
        self._redactor = redactor
        self._held = ""

    def feed(self, chunk: str) -> str:
        """What of ``chunk`` (and what was held) can be shown now, redacted."""
        text = self._held + chunk
        if len(text) > _HOLD_LIMIT:
            # A block that never closes (or one very long line): show it redacted, keep a tail that a cut may split.
            self._held = "" if _OPEN_BLOCK.search(text) else text[-_TAIL:]
            return self._redactor.redact(text if not self._held else text[:-_TAIL])
        block = _OPEN_BLOCK.search(text)
        cut = block.start() if block else text.rfind("\n") + 1
        self._held = text[cut:]
        return self._redactor.redact(text[:cut])

    def flush(self) -> str:
        """Whatever is still held, redacted (the stream ended)."""
        text, self._held = self._held, ""
        return self._redactor.redact(text)


def _redact_shapes(text: str) -> str:
    """``text`` with the leak shapes replaced; each expression runs only on lines where its trigger occurs."""
    lowered = _lower(text)
    live = [(kind, p) for kind, p in LEAK_PATTERNS if any(t in lowered for t in LEAK_TRIGGERS[p])]
    multi = [(kind, p) for kind, p in live if p in _MULTILINE]
    for kind, pattern in multi:
        text = pattern.sub(f"[redacted:{kind}]", text)
    per_line = [(kind, p) for kind, p in live if p not in _MULTILINE]
    if not per_line:
        return text
    if multi:
        lowered = _lower(text)
    lines = text.splitlines(keepends=True)
    starts = list(itertools.accumulate((len(line) for line in lines[:-1]), initial=0))
    # A line whose text was joined into the line before it (a value that wrapped) points there.
    owner = list(range(len(lines)))
    for kind, pattern in per_line:
        hit: set[int] = set()
        for trigger in LEAK_TRIGGERS[pattern]:
            at = lowered.find(trigger)
            while at != -1:
                hit.add(_owner(owner, bisect.bisect_right(starts, at) - 1))
                at = lowered.find(trigger, at + 1)
        for n in sorted(hit, reverse=True):  # from the end, so a joined pair never hides a later hit
            tail = lines[n].rstrip()
            if not (tail.endswith((":", "=")) or _lower(tail).endswith(LEAK_TRIGGERS[pattern])):
                lines[n] = pattern.sub(f"[redacted:{kind}]", lines[n])
                continue
            # The line ends where a value would start ("password:", "Bearer"): the value may be on the next one.
            after = n + 1
            while after < len(lines) and owner[after] != after:
                after += 1  # skip lines already joined into this one
            pair = lines[n] + (lines[after] if after < len(lines) else "")
            replaced = pattern.sub(f"[redacted:{kind}]", pair)
            if replaced != pair:
                lines[n] = replaced
                if after < len(lines):
                    lines[after], owner[after] = "", n
    return "".join(lines)


def _owner(owner: list[int], n: int) -> int:
    while owner[n] != n:
        n = owner[n]
    return n


def _lower(text: str) -> str:
    # Triggers are ASCII; the lowered text keeps the length of the text, so offsets map to lines.
    lowered = text.lower()
    # A few letters change length when lowered (İ): then the slower ASCII-only mapping keeps offsets aligned.
    return lowered if len(lowered) == len(text) else text.translate(_ASCII_LOWER)


def redact_data(redactor: Redactor, value: Any) -> Any:
    """``value`` (strings, lists, mappings, as JSON holds them) with every string redacted by ``redactor``."""
    if isinstance(value, str):
        return redactor.redact(value)
    if isinstance(value, Mapping):
        return {k: redact_data(redactor, v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_data(redactor, v) for v in value]
    return value


def _stamp(path: Path) -> tuple[int, int, int]:
    try:
        info = path.stat()
    except OSError:
        return (0, 0, 0)
    return (info.st_ino, info.st_size, info.st_mtime_ns)


def _read_secrets(files: Iterable[Path]) -> list[str]:
    out = []
    for path in files:
        try:
            text = path.read_text(encoding="ascii", errors="replace").strip()
        except OSError:
            continue
        found = _KEY_LINE.search(text)
        out.append(found.group(1) if found else text)
    return out


def _forms(values: Iterable[str]) -> tuple[str, ...]:
    """Each value, and for hex values also their other case and their bytes in base64; longest first."""
    forms: set[str] = set()
    for value in values:
        if len(value) < _MIN_KNOWN:
            continue
        forms.add(value)
        if re.fullmatch(r"(?:[0-9A-Fa-f]{2})+", value):
            raw = bytes.fromhex(value)
            forms.update(
                {value.lower(), value.upper(), base64.b64encode(raw).decode(), base64.urlsafe_b64encode(raw).decode()}
            )
            forms.update(f.rstrip("=") for f in list(forms) if f.endswith("="))
    return tuple(sorted(forms, key=len, reverse=True))
