"""The taste weight: a pure function of resolved evidence (docs/learning.md §2).

Each piece of evidence has a signed strength ``s`` and an age. Preferences
fade with a half-life (30 days); rules and the person's answers never fade.
Faded supporting strengths combine by noisy-or into *support* (the chance
that at least one piece is real). Opposing evidence (the person let the
thing stand, or accepted it) scales that by the supporting share of all the
faded strength::

    weight = noisy_or(support) * sum(support) / (sum(support) + sum(opposition))

With no opposition this is the paper's plain noisy-or. Repeated evidence
pushes the weight toward 1, silence lets it fall, a later correction lowers
it, and a person who misses a violation now and then does not undo a rule
they enforce every other time (a second noisy-or over opposition would).

Weight of 0.75 or more is *high* (enforced in the pack), 0.45 or more
*medium* (a hint), below that *low* (not shown).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["Evidence", "HALF_LIFE_DAYS", "HIGH", "MEDIUM", "faded", "weight", "label", "DAY_MS"]

HALF_LIFE_DAYS = 30.0
HIGH = 0.75
MEDIUM = 0.45
DAY_MS = 86_400_000


@dataclass(frozen=True, slots=True)
class Evidence:
    """One resolved piece of evidence for a lesson.

    ``entry_id`` is a ledger entry that exists (resolved, never free text);
    ``strength`` is signed relative to the lesson (+ supports, - opposes).
    """

    entry_id: str
    ts: int
    strength: float
    fades: bool
    session: str
    category: str


def faded(ev: Evidence, now_ms: int, half_life_days: float = HALF_LIFE_DAYS) -> float:
    """``|strength|`` after fading to ``now_ms`` (no fading for rules, none before ``ts``)."""
    if not ev.fades:
        return abs(ev.strength)
    return abs(ev.strength) * 0.5 ** (max(0, now_ms - ev.ts) / DAY_MS / half_life_days)


def weight(evidence: Iterable[Evidence], now_ms: int, half_life_days: float = HALF_LIFE_DAYS) -> float:
    """Noisy-or of the faded support, times the support's share of all faded strength; in [0, 1]."""
    keep = 1.0
    pro = con = 0.0
    seen: set[str] = set()
    for ev in evidence:
        if ev.entry_id in seen:  # one entry is one piece of evidence, however often it is cited
            continue
        seen.add(ev.entry_id)
        s = min(1.0, faded(ev, now_ms, half_life_days))
        if ev.strength > 0:
            keep *= 1.0 - s
            pro += s
        elif ev.strength < 0:
            con += s
    return round((1.0 - keep) * pro / (pro + con), 6) if pro else 0.0


def label(w: float) -> str:
    """``high`` (>= 0.75), ``medium`` (>= 0.45) or ``low``."""
    if w >= HIGH:
        return "high"
    if w >= MEDIUM:
        return "medium"
    return "low"
