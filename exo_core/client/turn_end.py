"""What a client shows when a turn ends: the stop reason once, and the core's hint once.

``turn.completed`` carries the stop reason, the error (``code: message``) and the core's ``hint``
(:func:`exo_core.agent.outcome.explain_turn_end`), which often repeats the error's message in words
for the person. Every client shows the reason, the error's message only when the hint does not
already say it, then the hint, so one failure is never printed twice in two formats.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["turn_end_lines"]


def turn_end_lines(body: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """``(stop, hint)`` for a ``turn.completed`` body: the bracketed stop line (``None`` for a plain end)
    and the hint (``None`` when there is none)."""
    reason = str(body.get("stop_reason") or "")
    error = str(body.get("error") or "")
    hint = str(body.get("hint") or "") or None
    stop = None
    if reason and reason != "end":
        _code, _, message = error.partition(": ")
        said = hint is not None and bool(message) and message in hint
        stop = f"[turn {reason}: {error}]" if error and not said else f"[turn {reason}]"
    return stop, hint
