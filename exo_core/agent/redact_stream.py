"""Redaction of a stream that arrives in pieces cut anywhere (tool output as a command writes it).

A secret cut in two by a chunk boundary must not go out as two harmless
halves that join back whole. :class:`StreamRedactor` therefore finds secrets
in everything it has not yet sent (what it held back plus the new chunk) and
sends only text that no secret still arriving can touch:

* it holds back the last ``reach - 1`` characters (``Redactor.reach``: the
  longest stretch one secret needs to be recognised), since a secret whose
  end has not arrived yet starts there;
* a secret found across that cut moves the cut to the secret's start;
* an open private key block is held from its ``BEGIN`` line until it closes,
  up to :data:`HOLD_LIMIT` characters; a block longer than that is replaced by
  one placeholder and everything up to its ``END`` line is dropped.

:meth:`StreamRedactor.release` sends the held whole lines of a stream that has
gone quiet, so a command's last line shows while it runs (a line that ends
where a value would start, ``password:``, and an open key block stay held);
:meth:`StreamRedactor.flush` sends what is still held when the stream ends;
:meth:`StreamRedactor.cut` ends it without sending the held tail (a capped
stream stops showing output there, and the tail may hold half a secret).
"""

from __future__ import annotations

import re

from exo_core.agent.redaction import Redactor, Span, apply_spans
from exo_core.store.leaks import LEAK_TRIGGERS

__all__ = ["StreamRedactor", "HOLD_LIMIT", "redact_tail"]

HOLD_LIMIT = 64 * 1024
_OPEN_BLOCK = re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----(?![\s\S]*-----END [A-Z0-9 ]+-----)")
_BLOCK_END = re.compile(r"-----END [A-Z0-9 ]+-----")
_END_MARK = 64  # longer than any END line: what is kept while dropping a block, in case the line is cut
# A line ending like this may have its value on the next line ("password:", "Authorization: Bearer").
_VALUE_NEXT = (":", "=", *sorted({t for triggers in LEAK_TRIGGERS.values() for t in triggers}))


class StreamRedactor:
    """Redacts one stream cut into arbitrary chunks; nothing it returns joins with later output into a secret."""

    def __init__(self, redactor: Redactor) -> None:
        self._redactor = redactor
        self._held = ""
        self._dropping = False  # inside a private key block too long to hold

    def feed(self, chunk: str) -> str:
        """What of ``chunk`` (and what was held) can be shown now, redacted."""
        text = self._held + chunk
        self._held = ""
        shown = ""
        if self._dropping:
            end = _BLOCK_END.search(text)
            if end is None:
                self._held = text[-_END_MARK:]
                return ""
            self._dropping = False
            text = text[end.end() :]
        block = _OPEN_BLOCK.search(text)
        if block is not None and len(text) - block.start() > HOLD_LIMIT:
            shown = self._redactor.redact(text[: block.start()]) + "[redacted:private-key]"
            self._dropping = True
            self._held = text[block.end() :][-_END_MARK:]
            return shown
        spans = self._redactor.spans(text)
        cut = max(0, len(text) - self._redactor.reach + 1)
        if block is not None:
            cut = min(cut, block.start())
        cut = _before_spans(cut, spans)
        if len(text) - cut > HOLD_LIMIT:
            # A shape that never ends (``sk-`` then megabytes of letters): shown redacted up to the hold.
            cut = max(0, len(text) - self._redactor.reach + 1)
            spans = [(start, min(end, cut), kind) for start, end, kind in spans if start < cut]
        self._held = text[cut:]
        return apply_spans(text[:cut], [s for s in spans if s[1] <= cut])

    def release(self) -> str:
        """The held whole lines, redacted: the stream has gone quiet and the person is waiting to see them.

        A line whose end could lead into a value on the next line stays held with what follows it, and
        so does an open private key block; a secret wrapped over lines can be shown in parts only by
        a command that pauses inside it.
        """
        if self._dropping or _OPEN_BLOCK.search(self._held):
            return ""
        end = self._held.rfind("\n") + 1
        while end and self._held[:end].rstrip().lower().endswith(_VALUE_NEXT):
            end = self._held.rfind("\n", 0, end - 1) + 1
        spans = self._redactor.spans(self._held)
        end = _before_spans(end, spans)
        if not end:
            return ""
        text, self._held = self._held[:end], self._held[end:]
        return apply_spans(text, [s for s in spans if s[1] <= end])

    def flush(self) -> str:
        """Whatever is still held, redacted (the stream ended)."""
        text, self._held = self._held, ""
        if self._dropping:
            self._dropping = False
            return ""
        return self._redactor.redact(text)

    def cut(self) -> str:
        """End the stream here without showing what is held; returns the (unredacted) text dropped."""
        dropped, self._held = self._held, ""
        self._dropping = False
        return dropped


def redact_tail(redactor: Redactor, text: str) -> tuple[str, int]:
    """The end of a stream whose start was dropped: redacted, less the first ``reach`` characters.

    A secret that began before ``text`` may end inside those characters, where no search can know it.
    Returns the redacted text and how many characters of ``text`` were left out.
    """
    spans = redactor.spans(text)
    start = min(len(text), redactor.reach)
    for span_start, span_end, _kind in spans:
        if span_start < start < span_end:
            start = span_end
    kept = [(s - start, e - start, kind) for s, e, kind in spans if s >= start]
    return apply_spans(text[start:], kept), start


def _before_spans(cut: int, spans: list[Span]) -> int:
    """``cut`` moved back to the start of any span it falls inside (spans are sorted and apart)."""
    for start, end, _kind in reversed(spans):
        if start < cut < end:
            return start
        if end <= cut:
            break
    return cut
