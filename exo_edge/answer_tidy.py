"""Clean-up of a completion model's answer as it streams, set by the manifest's ``[prompt]``.

A small base model continues a document; it does not know where an answer
ends. Asked "What is the capital of France?" the 270M Gemma writes
``"The capital of France is Paris. I want to ask you about this:`` -- a quote
it never closes and a second sentence that starts a new document. Two rules,
both off unless the model's manifest turns them on:

* ``strip_open_quote``: an answer that opens with ``"`` (or ``“``) loses that
  quote, and ends where the quote closes (the quoted answer is complete).
* ``sentence_min_words``: the answer ends at the first sentence end (``.``,
  ``!`` or ``?``, then white space) once it holds at least that many words, so
  "Hello! I can help with your notes." stays whole at 3 but "Paris. I want to"
  stops after "Paris.". A period after a title (``Dr.``) or a single letter
  (``M.``, ``a.m.``) is not a sentence end.

:class:`AnswerTidy` works piece by piece (what it returns may be shown at
once) and says when the answer is complete, so the transport stops decoding.
:func:`tidy_answer` applies it to a whole text.
"""

from __future__ import annotations

import re

from exo_edge.manifest import PromptFormat

__all__ = ["AnswerTidy", "tidy_answer"]

_OPEN_QUOTES = {'"': '"', "“": "”"}
# the end of a sentence: its mark, any closing quotes or brackets, then white space
_SENTENCE_END = re.compile(r"[.!?][\"”')\]]*(?=\s)")
_TITLES = frozenset({"dr", "mr", "mrs", "ms", "st", "prof", "jr", "sr", "vs", "etc", "no"})
_LAST_WORD = re.compile(r"([A-Za-z]+)$")


def _is_abbreviation(before: str) -> bool:
    """Whether the period that follows ``before`` closes an abbreviation, not a sentence."""
    match = _LAST_WORD.search(before)
    if match is None:
        return False
    word = match.group(1)
    return len(word) == 1 or word.lower() in _TITLES


class AnswerTidy:
    """Streaming clean-up of one answer; ``done`` turns true when the answer is complete."""

    __slots__ = ("_fmt", "_lead", "_close", "_text", "_scanned", "done")

    def __init__(self, fmt: PromptFormat) -> None:
        self._fmt = fmt
        self._lead = fmt.strip_open_quote  # still before the first visible character
        self._close: str | None = None  # the quote that ends the answer, once one was dropped
        self._text = ""  # what was let through so far
        self._scanned = 0  # where the next sentence-end search starts in _text
        self.done = False

    def feed(self, piece: str) -> str:
        """The part of ``piece`` to show now ("" once ``done``)."""
        if self.done or not piece:
            return ""
        if self._lead:
            stripped = piece.lstrip()
            if not stripped:
                self._text += piece
                return piece
            self._lead = False
            if stripped[0] in _OPEN_QUOTES:
                self._close = _OPEN_QUOTES[stripped[0]]
                piece = piece[: len(piece) - len(stripped)] + stripped[1:]
        if self._close is not None:
            at = min((i for i in (piece.find(self._close), piece.find('"')) if i >= 0), default=-1)
            if at >= 0:
                piece, self.done = piece[:at], True
        start = len(self._text)
        self._text += piece
        if self._fmt.sentence_min_words and not self.done:
            cut = self._sentence_cut()
            if cut is not None:
                self.done = True
                self._text = self._text[:cut]
                return self._text[start:]
        return piece

    def _sentence_cut(self) -> int | None:
        """The index just past the first sentence end that finishes the answer, if any."""
        for match in _SENTENCE_END.finditer(self._text, max(0, self._scanned - 1)):
            before = self._text[: match.start()]
            if match.group(0)[0] == "." and _is_abbreviation(before):
                continue
            if len(self._text[: match.end()].split()) >= self._fmt.sentence_min_words:
                return match.end()
        # a sentence end needs the white space after it: rescan the last characters next time
        self._scanned = max(0, len(self._text) - 3)
        return None

    def text(self) -> str:
        """Everything let through so far."""
        return self._text


def tidy_answer(text: str, fmt: PromptFormat) -> str:
    """``text`` as :class:`AnswerTidy` would have shown it, streamed whole."""
    tidy = AnswerTidy(fmt)
    tidy.feed(text)
    return tidy.text()
