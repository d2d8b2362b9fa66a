"""Promotion: the paper's rules 1 to 6, in order (docs/learning.md §4).

1. The person said it (a rule, an answer): promote now.
2. Guarded (irreversible, public, financial, third-party): never promote
   automatically. Exo asks (one numbered question) or waits.
3. Conflicts with an existing belief (a node at the lesson's home that the
   loop did not write): the store's conflict rule. The newer wins, as a new
   node that supersedes the old one, unless the old one guards something
   irreversible or public; then Exo asks. Never a silent overwrite.
4. Taste or fact, unguarded, high weight, supporting evidence from at least
   two separate sessions, no objection: promote, and show it as learned.
5. Skill changes: only through the eval gate (:mod:`.climb`).
6. Everything else waits; a medium lesson may enter the pack as a hint.
   A lesson the person rejected comes back only when they say so: strong
   new evidence makes Exo ask, never promote (docs/learning.md §4: a blocker is
   cleared only by a check linked to it).

:func:`decide` is pure: it reads a lesson and what the store holds at its
home, and names the step. The learner carries the step out by appending
entries (``promotion``, a question ``proposal``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from exo_core.learning.lessons import Lesson
from exo_core.learning.weights import HIGH

__all__ = ["Step", "Existing", "decide", "MIN_SESSIONS"]

MIN_SESSIONS = 2


@dataclass(frozen=True, slots=True)
class Existing:
    """What the store holds at a lesson's home: whether the loop wrote it and whether it guards."""

    learned: bool
    guards: bool


@dataclass(frozen=True, slots=True)
class Step:
    """What to do with one lesson: ``promote``, ``ask`` or ``wait``; ``rule`` is 1-6."""

    target: str
    action: str
    rule: int
    by: str = ""
    supersedes: str = ""
    reason: str = ""


def decide(lesson: Lesson, now_ms: int, existing: Mapping[str, Existing]) -> Step:
    """The step for ``lesson`` now, given the store's nodes (``existing``: node id -> what it is)."""
    t = lesson.target
    if lesson.promoted_by:
        return Step(t, "wait", 6, reason="already promoted")
    if lesson.home == "question":
        return Step(t, "wait", 6, reason="a question")
    old = existing.get(t)
    conflict = old is not None and not old.learned
    if lesson.person_said:
        return Step(t, "promote", 1, by="person", supersedes=t if conflict else "")
    if lesson.rejected_at >= 0:
        # Like a misconception: only the person, asked about this very lesson, can bring back what they
        # rejected. New evidence alone never re-promotes it; when it is strong, Exo asks.
        return Step(t, "ask" if lesson.weight(now_ms) >= HIGH else "wait", 6, reason="the person rejected it")
    if lesson.guarded:
        w = lesson.weight(now_ms)
        return Step(t, "ask" if w >= HIGH else "wait", 2, reason=f"guards something {lesson.guarded}")
    if lesson.home == "skill":
        return Step(t, "wait", 5, reason="skill changes pass the eval gate")
    ready = (
        lesson.weight(now_ms) >= HIGH
        and len(lesson.sessions()) >= MIN_SESSIONS
        and not lesson.objection
        and lesson.home in ("pack", "store")
    )
    if conflict and old is not None:
        if old.guards:
            return Step(t, "ask" if ready else "wait", 3, reason="the older belief guards something")
        if not ready:
            return Step(t, "wait", 6)
        return Step(t, "promote", 3, by="evidence", supersedes=t, reason="newer wins")
    if ready:
        return Step(t, "promote", 4, by="evidence")
    return Step(t, "wait", 6, reason=lesson.objection or "not enough evidence yet")
