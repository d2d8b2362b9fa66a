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
  home (``keys/*.key``, ``token``, ``$EXO_TOKEN``) and looks for every form
  :mod:`exo_core.agent.secret_forms` lists: the text, reversed, hex, base32,
  base64 and URL-encoded, wrapped or spaced by whitespace.

Each becomes ``[redacted:<kind>]``. :meth:`SecretRedactor.spans` says where,
so a stream can be redacted in pieces (:mod:`exo_core.agent.redact_stream`).
What this does not stop: a secret in a shape none of the patterns knows, or a
known one transformed otherwise (split into pieces with other text between
them, compressed, enciphered). The OS sandbox keeping tools away from exod's
files is the first line; this is the second.
"""

from __future__ import annotations

import bisect
import itertools
import os
import re
import string
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Protocol

from exo_core.agent.secret_forms import MIN_SECRET, Form, secret_forms
from exo_core.store.leaks import LEAK_PATTERNS, LEAK_TRIGGERS

__all__ = ["Redactor", "SecretRedactor", "Span", "apply_spans", "merge_spans", "redact_data"]

_KEY_LINE = re.compile(r"exo-ed25519-seed-v\d+\s+([0-9A-Fa-f]{64})")
# Patterns that span lines run over the whole text; the rest only on the lines holding one of their triggers.
_MULTILINE = frozenset(p for _kind, p in LEAK_PATTERNS if p.flags & re.S)
_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)  # triggers are ASCII
_WHITESPACE = re.compile(r"\s+")
_NON_SPACE = re.compile(r"\S")
# A line-bound shape (``password: …``, a bearer token, an API key) is recognised within this many characters
# of its trigger; a private key block is longer and is held by the stream until it closes.
_SHAPE_REACH = 1024


Span = tuple[int, int, str]  # start, end, kind


class Redactor(Protocol):
    """Finds and replaces secrets in text (the agent loop's seam; :class:`SecretRedactor` is the default)."""

    def redact(self, text: str) -> str:
        """``text`` with every secret replaced by a placeholder."""
        ...

    def spans(self, text: str) -> list[Span]:
        """Where the secrets in ``text`` are: sorted, non-overlapping ``(start, end, kind)``."""
        ...

    @property
    def reach(self) -> int:
        """The longest stretch of text one secret can need to be recognised (a stream holds this much back)."""
        ...


class SecretRedactor:
    """The leak shapes plus every form of known values; ``for_home`` keeps the home's values current."""

    def __init__(self, *, known: Iterable[str] = (), home: Path | None = None) -> None:
        self._fixed = tuple(v for v in known if len(v) >= MIN_SECRET)
        self._home = home
        self._stamp: tuple[Any, ...] = ()
        self._forms: tuple[Form, ...] = secret_forms(self._fixed)

    @classmethod
    def for_home(cls, home: Path) -> SecretRedactor:
        """A redactor that knows the secrets in the Exo home ``home`` (re-read when its files change)."""
        return cls(home=Path(home))

    def redact(self, text: str) -> str:
        """``text`` with every recognised secret replaced by ``[redacted:<kind>]``."""
        if not text:
            return text
        return apply_spans(text, self.spans(text))

    def spans(self, text: str) -> list[Span]:
        """Where the secrets in ``text`` are: sorted, non-overlapping ``(start, end, kind)``."""
        if not text:
            return []
        return merge_spans(_shape_spans(text) + _value_spans(text, self._known()))

    @property
    def reach(self) -> int:
        """Twice the longest known form (spaced or wrapped by whitespace), and never under the shapes' reach."""
        forms = self._known()
        longest = len(forms[0].text) + forms[0].before + forms[0].after if forms else 0
        return max(_SHAPE_REACH, 2 * longest + 64)

    def redact_data(self, value: Any) -> Any:
        """``value`` (strings, lists, mappings, as JSON holds them) with every string redacted."""
        return redact_data(self, value)

    def _known(self) -> tuple[Form, ...]:
        if self._home is None:
            return self._forms
        files = [self._home / "token"]
        try:
            files += sorted(p for p in (self._home / "keys").iterdir() if p.is_file())
        except OSError:
            pass  # no keys folder yet: nothing to know there
        stamp = tuple(_stamp(p) for p in files) + (os.environ.get("EXO_TOKEN", ""),)
        if stamp != self._stamp:
            self._stamp = stamp
            self._forms = secret_forms((*self._fixed, *_read_secrets(files), os.environ.get("EXO_TOKEN", "")))
        return self._forms


def apply_spans(text: str, spans: Iterable[Span]) -> str:
    """``text`` with each span replaced by ``[redacted:<kind>]`` (spans sorted and non-overlapping)."""
    parts, at = [], 0
    for start, end, kind in spans:
        parts += [text[at:start], f"[redacted:{kind}]"]
        at = end
    parts.append(text[at:])
    return "".join(parts)


def merge_spans(spans: Iterable[Span]) -> list[Span]:
    """``spans`` sorted, overlapping or touching ones joined (the first one's kind names the join)."""
    merged: list[Span] = []
    for start, end, kind in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end), merged[-1][2])
        else:
            merged.append((start, end, kind))
    return merged


def _value_spans(text: str, forms: tuple[Form, ...]) -> list[Span]:
    """Where the known forms occur, whitespace between their characters allowed (wrapped or spaced encodings)."""
    if not forms:
        return []
    squeezed = _WHITESPACE.sub("", text)
    present = [form for form in forms if form.text in squeezed]
    if not present:
        return []
    # Offsets in the squeezed text map back to the text through the positions of its non-space characters.
    where = [m.start() for m in _NON_SPACE.finditer(text)]
    spans: list[Span] = []
    for form in present:
        at = squeezed.find(form.text)
        while at != -1:
            first = max(0, at - form.before)
            last = min(len(where), at + len(form.text) + form.after) - 1
            spans.append((where[first], where[last] + 1, "exo-secret"))
            at = squeezed.find(form.text, at + 1)
    return spans


def _shape_spans(text: str) -> list[Span]:
    """Where the leak shapes are; each line-bound expression runs only on lines where its trigger occurs."""
    lowered = _lower(text)
    live = [(kind, p) for kind, p in LEAK_PATTERNS if any(t in lowered for t in LEAK_TRIGGERS[p])]
    spans: list[Span] = []
    for kind, pattern in live:
        if pattern in _MULTILINE:
            spans += [(m.start(), m.end(), kind) for m in pattern.finditer(text)]
    per_line = [(kind, p) for kind, p in live if p not in _MULTILINE]
    if not per_line:
        return spans
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
                spans += [(starts[n] + m.start(), starts[n] + m.end(), kind) for m in pattern.finditer(lines[n])]
                continue
            # The line ends where a value would start ("password:", "Bearer"): the value may be on the next one.
            after = n + 1
            while after < len(lines) and owner[after] != after:
                after += 1  # skip lines already joined into this one
            pair = lines[n] + (lines[after] if after < len(lines) else "")
            found = [(m.start(), m.end()) for m in pattern.finditer(pair)]
            for start, end in found:
                # The pair's second line may not follow the first directly (a joined line between): map it back.
                spans.append(
                    (_pair_offset(starts, lines, n, after, start), _pair_offset(starts, lines, n, after, end), kind)
                )
            if found and after < len(lines):
                owner[after] = n
    return spans


def _pair_offset(starts: list[int], lines: list[str], n: int, after: int, offset: int) -> int:
    if offset <= len(lines[n]):
        return starts[n] + offset
    return starts[after] + offset - len(lines[n])


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
