"""Bounded tool output: what one call and one turn may show and store (docs/security.md, "Bounded output").

One allowed command (``yes``, ``cat /dev/zero``) must not fill the disk, the
screens or the model's window. Three limits, from ``config.toml``::

    [output]
    call_bytes = 524288        # what one tool call's output adds to sessions.sqlite, at most
    turn_bytes = 2097152       # the same for all the calls of one turn
    timeout_seconds = 600      # the longest a tool call runs, whatever timeout the model asks for

A call's budget (``call_bytes``, or what is left of the turn's if less) is
split: half for the streamed ``tool.output`` events, a sixteenth for the
result the model reads, which is kept four times (the tool message, its
search index, ``tool.completed`` and ``message.completed``). Sizes are
counted as stored, JSON-escaped (a NUL byte costs six). Of a stream over its
share, the head is shown as it arrives and the tail when the call ends; the
middle is dropped and one line says how many bytes and lines (the person
sees it in the stream, the model in its result, ``tool.completed`` is marked
``truncated``). Text is redacted before it is shown or kept
(:mod:`exo_core.agent.redact_stream`); what is dropped is never redacted,
only counted.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from exo_core.agent.redact_stream import StreamRedactor, redact_tail
from exo_core.agent.redaction import Redactor
from exo_core.errors import ConfigError

__all__ = ["OutputLimits", "TurnOutput", "CallOutput", "bound_text", "stored_size"]

_MIN_BYTES = 16 * 1024
_MIN_CALL = 16 * 1024


@dataclass(frozen=True, slots=True)
class OutputLimits:
    """The caps on tool output and run time (``[output]`` in config.toml)."""

    call_bytes: int = 512 * 1024
    turn_bytes: int = 2 * 1024 * 1024
    timeout_seconds: float = 600.0

    def __post_init__(self) -> None:
        for name in ("call_bytes", "turn_bytes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < _MIN_BYTES:
                raise ConfigError(f"output.{name} must be a whole number of bytes >= {_MIN_BYTES}, not {value!r}")
        seconds = self.timeout_seconds
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not 0 < seconds <= 24 * 3600:
            raise ConfigError(f"output.timeout_seconds must be a number of seconds in (0, 86400], not {seconds!r}")

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> OutputLimits:
        """The ``[output]`` table of a parsed config.toml (defaults for what it leaves out)."""
        table = config.get("output", {})
        if not isinstance(table, Mapping):
            raise ConfigError("config.toml: [output] must be a table")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(table) - known)
        if unknown:
            raise ConfigError(f"config.toml: unknown key output.{unknown[0]} (known: {', '.join(sorted(known))})")
        return cls(**table)


class TurnOutput:
    """The output budget of one turn, shared by its calls in order."""

    def __init__(self, limits: OutputLimits) -> None:
        self.limits = limits
        self.left = limits.turn_bytes

    def call(self, redactor: Redactor) -> CallOutput:
        """The bounded output of the turn's next call."""
        budget = max(0, min(self.limits.call_bytes, self.left))
        if budget < _MIN_CALL:
            budget = 0  # too little to show a head and a tail: the call shows only the note of what it dropped
        return CallOutput(redactor, budget, turn=self, turn_limited=budget < self.limits.call_bytes)

    def spend(self, size: int) -> None:
        self.left = max(0, self.left - size)


class CallOutput:
    """One call's streamed output: the head shown as it comes, the middle counted, the tail shown at the end."""

    def __init__(
        self, redactor: Redactor, budget: int, *, turn: TurnOutput | None = None, turn_limited: bool = False
    ) -> None:
        self.budget = budget
        self.turn_limited = turn_limited
        self.result_bytes = budget // 16
        self._redactor = redactor
        self._turn = turn
        self._head_left = budget // 4
        self._tail_bytes = budget // 8  # per stream (stdout, stderr)
        self._streams: dict[str, StreamRedactor] = {}
        self._tails: dict[str, deque[str]] = {}
        self._tail_size: dict[str, int] = {}
        self._head_open = True
        self._raw_bytes = 0
        self._raw_lines = 0
        self._shown_raw_bytes = 0
        self._shown_raw_lines = 0
        self.stored = 0  # bytes of shown text so far, as stored

    @property
    def capped(self) -> bool:
        """Whether some of the output was dropped."""
        return not self._head_open

    def feed(self, text: str, stream: str) -> list[tuple[str, str]]:
        """The ``(stream, text)`` pieces to show now for this chunk of output (maybe none)."""
        self._raw_bytes += _utf8(text)
        self._raw_lines += text.count("\n")
        if not self._head_open:
            self._keep_tail(text, stream)
            return []
        cost = stored_size(text)
        if cost <= self._head_left:
            self._head_left -= cost
            self._count_shown(text)
            return self._show(stream, self._redactor_for(stream).feed(text))
        part = _prefix_within(text, self._head_left)
        self._count_shown(part)
        pieces = self._show(stream, self._redactor_for(stream).feed(part))
        self._close_head()
        self._keep_tail(text[len(part) :], stream)
        return pieces

    def release(self, stream: str) -> list[tuple[str, str]]:
        """The held whole lines of ``stream`` to show now that it has gone quiet (maybe none)."""
        redactor = self._streams.get(stream)
        if not self._head_open or redactor is None:
            return []
        return self._show(stream, redactor.release())

    def finish(self) -> list[tuple[str, str]]:
        """What is left to show when the call ends: the held text, or the note of what was dropped and the tails."""
        if self._head_open:
            pieces: list[tuple[str, str]] = []
            for stream, redactor in self._streams.items():
                pieces += self._show(stream, redactor.flush())
            self._settle()
            return pieces
        tails = []
        for stream, kept in self._tails.items():
            raw = _suffix_within("".join(kept), self._tail_bytes + self._redactor.reach)
            shown, skipped = redact_tail(self._redactor, raw)
            self._count_shown(raw[skipped:])
            tails.append((stream, shown))
        pieces = [("stdout", "\n" + self.note() + "\n")]
        for stream, shown in tails:
            pieces += self._show(stream, shown)
        self._settle()
        return pieces

    def note(self) -> str:
        """The line that says what was dropped (empty when nothing was)."""
        if self._head_open:
            return ""
        dropped = self._raw_bytes - self._shown_raw_bytes
        lines = self._raw_lines - self._shown_raw_lines
        if self.turn_limited:
            cap = f"this turn's output cap ({self._turn.limits.turn_bytes:,} bytes)" if self._turn else "the turn's cap"
        else:
            cap = f"the {self.budget:,}-byte cap on one call's output"
        return (
            f"[... {dropped:,} bytes ({lines:,} lines) of output not shown: over {cap}; the head and the tail are kept]"
        )

    def _show(self, stream: str, text: str) -> list[tuple[str, str]]:
        if not text:
            return []
        self.stored += stored_size(text)
        return [(stream, text)]

    def _redactor_for(self, stream: str) -> StreamRedactor:
        redactor = self._streams.get(stream)
        if redactor is None:
            redactor = self._streams[stream] = StreamRedactor(self._redactor)
        return redactor

    def _close_head(self) -> None:
        self._head_open = False
        for redactor in self._streams.values():
            held = redactor.cut()  # counted as shown when it came; it is dropped instead
            self._shown_raw_bytes -= _utf8(held)
            self._shown_raw_lines -= held.count("\n")

    def _keep_tail(self, text: str, stream: str) -> None:
        if not text or self._tail_bytes == 0:
            return  # with the turn's budget spent only the note is shown
        kept = self._tails.setdefault(stream, deque())
        kept.append(text)
        # Counted in characters (each stores as one byte or more), cut to stored size once, at the end; the tail
        # keeps ``reach`` more than it shows, as redact_tail leaves out its start.
        limit = self._tail_bytes + 2 * self._redactor.reach
        size = self._tail_size.get(stream, 0) + len(text)
        while size - len(kept[0]) >= limit:
            size -= len(kept.popleft())
        self._tail_size[stream] = size

    def _count_shown(self, raw: str) -> None:
        self._shown_raw_bytes += _utf8(raw)
        self._shown_raw_lines += raw.count("\n")

    def _settle(self) -> None:
        if self._turn is not None:
            self._turn.spend(self.stored)


def bound_text(text: str, limit: int, *, what: str = "characters") -> tuple[str, bool]:
    """``text`` within ``limit`` stored bytes: its head and tail with a note of what was left out between."""
    if stored_size(text) <= limit:
        return text, False
    half = max(0, (limit - 200) // 2)
    head = _prefix_within(text, half)
    tail = _suffix_within(text[len(head) :], half)
    middle = text[len(head) : len(text) - len(tail)]
    note = (
        f"\n[... {_utf8(middle):,} bytes ({middle.count(chr(10)):,} lines) not shown: over the {limit:,}-byte "
        f"cap on one result (the head and the tail are kept)]\n"
    )
    return head + note + tail, True


def stored_size(text: str) -> int:
    """Bytes ``text`` takes in a JSON document as exod stores it (control characters escaped)."""
    return len(json.dumps(text, ensure_ascii=False).encode("utf-8", "surrogatepass")) - 2


def _prefix_within(text: str, limit: int) -> str:
    """The longest prefix of ``text`` (found by halving) whose stored size is at most ``limit``."""
    if limit <= 0:
        return ""
    low, high = 0, min(len(text), limit)
    while low < high:
        mid = (low + high + 1) // 2
        if stored_size(text[:mid]) <= limit:
            low = mid
        else:
            high = mid - 1
    return text[:low]


def _suffix_within(text: str, limit: int) -> str:
    return _prefix_within(text[::-1], limit)[::-1]


def _utf8(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))
