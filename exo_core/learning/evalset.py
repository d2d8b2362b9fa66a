"""The personal exam: eval items from the person's own verdicts, split by time (docs/learning.md §5).

Three parts: ``qa`` (questions about the person with known answers: their
answers to Exo's questions), ``pair`` (a rejected reply and the chosen one:
the draft and the person's edit), ``replay`` (a past output cut before the
verdict; the target is what the person did). Each item has a time, a domain
and an id.

:func:`split` orders items by time. Held-out is the newest fifth plus a fixed
20% sample of the rest (by a hash of the id, so it never moves); the rest is
train (oldest half) and dev. :class:`Split` hands out ``train`` and ``dev``;
held-out is reachable only through :meth:`Split.sealed`, which the climb's
final gate calls, so the loop that proposes candidates never reads it.

A *setup* is a set of checkable rules: catalog feature keys, or ``re:PATTERN``
for a rule the person wrote that a pattern checks. The rules-only scorer is
exact: a reply breaks a rule or it does not. A lesson outside the catalog is
learnable too (docs/learning.md, "The exam and the climb"): its rule is its
target (:func:`rule_of`), which no text breaks, so the rules-only scorer grades
it on the person's answers (qa) alone.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from exo_core.learning.features import feature
from exo_core.learning.lessons import Lesson, LessonBook, judged_text

__all__ = ["EvalItem", "Split", "split", "items_from", "breaks", "rules_score", "rule_of", "Scorer", "HELD_OUT_SHARE"]

HELD_OUT_SHARE = 0.2


@dataclass(frozen=True, slots=True)
class EvalItem:
    """One exam item; ``data`` holds ``rejected``/``chosen`` (pair), ``reply``/``target`` (replay),
    or ``rule``/``answer`` (qa)."""

    id: str
    part: str
    ts: int
    domain: str
    data: dict[str, Any] = field(hash=False, compare=False)
    pinned: bool = False


def _sampled(item_id: str) -> bool:
    return int(hashlib.sha256(item_id.encode()).hexdigest()[:8], 16) % 5 == 0


@dataclass(frozen=True, slots=True)
class Split:
    """Train and dev are open; held-out is sealed for the final gate."""

    train: tuple[EvalItem, ...]
    dev: tuple[EvalItem, ...]
    _held_out: tuple[EvalItem, ...]

    def sealed(self) -> tuple[EvalItem, ...]:
        """The held-out items: only the climb's keep-or-drop gate calls this."""
        return self._held_out


def split(items: Iterable[EvalItem], share: float = HELD_OUT_SHARE) -> Split:
    """Split by time: newest ``share`` plus a fixed hash sample of the rest held out; then train, dev."""
    ordered = sorted(items, key=lambda i: (i.ts, i.id))
    cut = len(ordered) - max(1, round(len(ordered) * share)) if ordered else 0
    newest, rest = ordered[cut:], ordered[:cut]
    held = [i for i in rest if _sampled(i.id)] + newest
    rest = [i for i in rest if not _sampled(i.id)]
    half = len(rest) // 2
    return Split(tuple(rest[:half]), tuple(rest[half:]), tuple(held))


def breaks(rule: str, text: str) -> bool:
    """Whether ``text`` breaks the checkable ``rule`` (a feature key, or ``re:PATTERN``)."""
    if rule.startswith("re:"):
        return re.search(rule[3:], text, re.I) is not None
    feat = feature(rule)
    return feat is not None and feat.present(text)


def rule_of(lesson: Lesson) -> str:
    """The rule that stands for ``lesson`` in a setup: its catalog feature key; for a lesson outside the
    catalog that the larger model named, ``re:`` and its marker (:mod:`.reflected`), which the exact
    scorer checks in text like a feature; else its target."""
    if lesson.feature:
        return lesson.feature
    if lesson.marker:  # at a word's start, as features.has_marker matches it
        return "re:(?<![a-z0-9])" + re.escape(lesson.marker)
    return lesson.target


def _qa_domain(lesson: Lesson) -> str:
    # A catalog lesson is in its feature's domain. One outside the catalog (a rule said in words, a
    # larger model's proposal) is in "actions" when it guards something, so the climb lets it drop
    # by nothing (climb.GUARDED_DOMAINS, as the catalog's guarded features), else in "writing".
    feat = feature(lesson.feature)
    if feat is not None:
        return feat.domain
    if lesson.guarded:
        return "actions"
    return "writing"


def items_from(book: LessonBook) -> list[EvalItem]:
    """Pairs and replays from verdicts on drafts, qa from the person's answers, in the book."""
    out: list[EvalItem] = []
    for entry in book.index.values():
        body = entry.body
        if entry.kind == "verdict" and body["judged"] in book.index:
            reply = judged_text(book.index[body["judged"]].body)
            if not reply:
                continue
            out.append(
                EvalItem(
                    f"replay:{entry.id[:16]}",
                    "replay",
                    entry.ts,
                    "writing",
                    {"reply": reply, "target": "accept" if body["verdict"] == "accept" else "correct"},
                )
            )
            if isinstance(body.get("text"), str) and body["verdict"] in ("edit", "should_have_been"):
                out.append(
                    EvalItem(
                        f"pair:{entry.id[:16]}",
                        "pair",
                        entry.ts,
                        "writing",
                        {"rejected": reply, "chosen": body["text"]},
                    )
                )
        elif entry.kind == "utterance":
            picked = book.picked(entry)
            if picked is None:
                continue
            target, answer = picked
            lesson = book.lessons.get(target)
            if lesson is None:
                continue  # "none of these" (an empty target) or a lesson this book does not hold
            out.append(
                EvalItem(
                    f"qa:{entry.id[:16]}",
                    "qa",
                    entry.ts,
                    _qa_domain(lesson),
                    {"rule": rule_of(lesson), "answer": answer},
                )
            )
    return out


Scorer = Callable[[frozenset[str], EvalItem, int], float]


def rules_score(setup: frozenset[str], item: EvalItem, sample: int = 0) -> float:
    """The exact, rules-only scorer: 1 when the setup's rules predict the person, else 0 (0.5 for a tie)."""
    d = item.data
    if item.part == "pair":
        bad_rejected = sum(breaks(r, d["rejected"]) for r in setup)
        bad_chosen = sum(breaks(r, d["chosen"]) for r in setup)
        if bad_chosen < bad_rejected:
            return 1.0
        if bad_chosen == bad_rejected:
            return 0.5
        return 0.0
    if item.part == "replay":
        predicted = "correct" if any(breaks(r, d["reply"]) for r in setup) else "accept"
        return 1.0 if predicted == d["target"] else 0.0
    return 1.0 if (d["rule"] in setup) == (d["answer"] == "yes") else 0.0
