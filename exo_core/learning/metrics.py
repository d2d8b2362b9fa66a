"""Longitudinal metrics from the ledger (docs/learning.md §7).

Per window of ``days``: the verdict mix, corrections (edit, reject,
should_have_been) per accepted output, questions asked and answered, and the
held-out score of the climb's kept decisions. When live corrections per
accepted output rise over the last windows while eval scores rise too, the
eval is flagged *stale* (it no longer measures what the person wants, or it
is being gamed): time to refresh it. Cost per accepted lesson divides the
queue's spend by the promotions the evidence or the eval earned.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

from exo_core.learning.signals import category_of
from exo_core.learning.weights import DAY_MS
from exo_core.ledger.ledger import Ledger

__all__ = ["Window", "Metrics", "metrics", "stale"]

_CORRECTIONS = ("edit", "reject", "should_have_been")


@dataclass(slots=True)
class Window:
    """One window of time (``start`` in ms)."""

    start: int
    verdicts: dict[str, int] = field(default_factory=dict)
    questions: int = 0
    answers: int = 0
    eval_scores: list[float] = field(default_factory=list)

    @property
    def corrections_per_accept(self) -> float:
        """Corrections per accepted output (corrections when nothing was accepted)."""
        return sum(self.verdicts.get(v, 0) for v in _CORRECTIONS) / max(1, self.verdicts.get("accept", 0))

    @property
    def eval_score(self) -> float | None:
        """The mean held-out score of the climb's kept decisions in the window."""
        return sum(self.eval_scores) / len(self.eval_scores) if self.eval_scores else None

    def to_json(self) -> dict[str, Any]:
        """A plain row for the CLI."""
        return {
            "start": self.start,
            "verdicts": dict(sorted(self.verdicts.items())),
            "questions": self.questions,
            "answers": self.answers,
            "corrections_per_accept": round(self.corrections_per_accept, 4),
            "eval_score": self.eval_score,
        }


@dataclass(frozen=True, slots=True)
class Metrics:
    """Windows oldest first, the staleness flag, and lesson cost."""

    windows: tuple[Window, ...]
    stale: bool
    promotions: int
    cost_per_lesson: float | None

    def to_json(self) -> dict[str, Any]:
        """A plain dict for the CLI."""
        return {
            "windows": [w.to_json() for w in self.windows],
            "stale_eval": self.stale,
            "promotions": self.promotions,
            "cost_per_accepted_lesson": self.cost_per_lesson,
        }


def stale(windows: Sequence[Window], span: int = 3) -> bool:
    """True when, over the last ``span`` windows with eval scores, corrections and eval scores both rose."""
    scored = [w for w in windows if w.eval_score is not None][-span:]
    if len(scored) < 2:
        return False
    rising = all(b.corrections_per_accept > a.corrections_per_accept for a, b in pairwise(scored))
    scores = [w.eval_score or 0.0 for w in scored]
    return rising and all(b > a for a, b in pairwise(scores))


def metrics(ledger: Ledger, *, days: int = 7, spent: float = 0.0) -> Metrics:
    """Metrics over the whole ledger in windows of ``days``."""
    windows: dict[int, Window] = {}
    first: int | None = None
    promotions = 0
    width = days * DAY_MS
    for entry in ledger.entries():
        first = entry.ts if first is None else first
        w = windows.setdefault((entry.ts - first) // width, Window(first + (entry.ts - first) // width * width))
        category = category_of(entry)
        body = entry.body
        if entry.kind == "verdict" and category is not None:
            w.verdicts[category] = w.verdicts.get(category, 0) + 1
        elif category == "answer":
            w.answers += 1
        elif entry.kind == "proposal" and body.get("home") == "question":
            w.questions += 1
        elif entry.kind == "promotion" and body.get("by") in ("evidence", "eval"):
            promotions += 1
        elif entry.kind == "decision" and body.get("decider") == "climb" and body.get("kept") == "yes":
            w.eval_scores.append(float(body["held_out"]))
    ordered = tuple(windows[k] for k in sorted(windows))
    return Metrics(ordered, stale(ordered), promotions, spent / promotions if promotions else None)
