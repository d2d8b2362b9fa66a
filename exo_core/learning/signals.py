"""Signals: which ledger entries teach, and how strongly (docs/learning.md §1).

Only the person's own channel teaches. A signal is a ledger entry of the
person's scope whose category is in :data:`STRENGTHS`; text from tools, web
pages, files or imported history never is (an ``action`` carries tool output
as data, and an entry whose body names any other ``source`` — an importer's
``chat-import``, say — is history, not the person speaking now).

Every category has a *direction* (an accept confirms what was done; an edit,
rejection or denial disconfirms it; a rule asserts) and a *band* of strengths.
A model may suggest a score, but the category constrains it: the score is
clamped into the category's band with the category's sign, so a malformed
classification ("reject" with score +1) can never invert the learning signal
(the guard docs/learning.md §1 describes, kept with its reason).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from exo_core.ledger.entry import StoredEntry

__all__ = ["Band", "STRENGTHS", "signed_strength", "category_of", "is_person_channel", "PERSON_SOURCES"]


@dataclass(frozen=True, slots=True)
class Band:
    """A category's sign, strength band and default, and whether it fades."""

    sign: int
    low: float
    high: float
    default: float
    fades: bool = True


# The table docs/learning.md prints. Exposure (a plain utterance) is worth zero.
STRENGTHS: dict[str, Band] = {
    "rule": Band(+1, 0.80, 0.95, 0.90, fades=False),
    "answer": Band(+1, 0.70, 0.90, 0.85, fades=False),
    "should_have_been": Band(-1, 0.50, 0.80, 0.70),
    "edit": Band(-1, 0.30, 0.70, 0.55),
    "reject": Band(-1, 0.20, 0.60, 0.40),
    "deny": Band(-1, 0.30, 0.60, 0.50),
    "accept": Band(+1, 0.05, 0.30, 0.20),
    "allow": Band(+1, 0.05, 0.20, 0.10),
    "outcome_ok": Band(+1, 0.10, 0.30, 0.20),
    "outcome_failed": Band(-1, 0.10, 0.30, 0.20),
    "rejection": Band(-1, 0.90, 0.95, 0.95, fades=False),
    "utterance": Band(+1, 0.0, 0.0, 0.0),
}

# Body ``source`` values that still mean "the person, live". Any other source
# (an importer, a tool, a web page) is data.
PERSON_SOURCES = frozenset({"person", "live", "voice", "button", "web", "terminal"})
_OK_STATUS = frozenset({"ok", "passed", "sent", "done", "success", "merged"})


def signed_strength(category: str, score: float | None = None) -> float:
    """The signed strength of one signal of ``category``.

    ``score`` (e.g. from a model) is clamped into the category's band and
    given the category's sign; ``None`` takes the default.
    """
    band = STRENGTHS[category]
    return band.sign * (band.default if score is None else min(band.high, max(band.low, abs(float(score)))))


def is_person_channel(entry: StoredEntry) -> bool:
    """True when ``entry`` is the person speaking or judging, in the person's scope."""
    if entry.scope != "person":
        return False
    body: Any = entry.body
    source = body.get("source") if isinstance(body, dict) else None
    return source is None or source in PERSON_SOURCES


def category_of(entry: StoredEntry) -> str | None:
    """The signal category of ``entry``, or ``None`` when it does not teach."""
    if not is_person_channel(entry):
        return None
    body = entry.body
    if entry.kind == "verdict":
        return str(body["verdict"])
    if entry.kind in ("rule", "rejection"):
        return entry.kind
    if entry.kind == "approval":
        return "deny" if body["decision"] == "deny" else "allow"
    if entry.kind == "outcome":
        return "outcome_ok" if str(body["status"]).lower() in _OK_STATUS else "outcome_failed"
    if entry.kind == "utterance":
        return "answer" if isinstance(body.get("answer_to"), str) else "utterance"
    return None
