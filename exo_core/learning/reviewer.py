"""The reviewer's two stages and its second pass, rules only (docs/learning.md §3).

Stage 1 (:func:`classify`) looks at each new ledger entry and says what it
touches: a lesson (new, agreeing or conflicting), a question, or nothing.
Stage 2 (:func:`reflect`) runs only on survivors, grouped by lesson, and
drafts one ``proposal`` per lesson: a positive claim ("wants Y, not X"),
the reason, and the evidence ids in ``refs``. The second pass
(:func:`argue_against`) attaches an objection when a proposal would change a
belief the person holds with high confidence on thin evidence.

Its only write is a proposal: the learner appends what these functions
draft. Each lesson has one home: taste to the pack (a ``taste/`` node),
guarded conduct to a ``rules/`` node, ambiguity to a question.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from exo_core.learning.features import (
    CATALOG,
    Feature,
    action_text,
    feature,
    features_in,
    marker_stance,
    match_words,
    stance,
)
from exo_core.learning.lessons import LessonBook, judged_text, slug
from exo_core.learning.promotion import Existing
from exo_core.learning.reflected import unexplained_lines
from exo_core.learning.signals import category_of
from exo_core.ledger.entry import NewEntry, StoredEntry

__all__ = [
    "Finding",
    "Draft",
    "needs_review",
    "classify",
    "reflect",
    "argue_against",
    "question_for",
    "TURNS_BEFORE_REVIEW",
    "LEARNING_SOURCE",
]

TURNS_BEFORE_REVIEW = 10
QUESTION_STALE_MS = 3 * 86_400_000
LEARNING_SOURCE = "learning"
_TEACHING = frozenset({"edit", "should_have_been", "reject", "rule", "answer", "deny", "rejection"})
_GUARD_WORDS = ("push", "post", "publish", "pay", "send", "delete", "transfer")


@dataclass(frozen=True, slots=True)
class Finding:
    """Stage 1's verdict on one entry for one lesson: ``relation`` is new, agrees or conflicts.

    ``unexplained`` (no target): an edit no catalog feature or known lesson accounts for, which the
    learner queues for the larger model's reflection (:mod:`.reflected`).
    """

    entry_id: str
    target: str
    relation: str
    feature: str = ""
    claim: str = ""


@dataclass(frozen=True, slots=True)
class Draft:
    """A proposal before it is appended."""

    target: str
    body: dict[str, Any]
    refs: tuple[str, ...] = field(default=())

    def entry(self) -> NewEntry:
        """The ledger entry to append."""
        return NewEntry("proposal", self.body, self.refs)


def needs_review(entries: Sequence[StoredEntry], *, asked: bool = False) -> str:
    """Why a review should run now ("" when there is nothing to learn)."""
    if asked:
        return "asked"
    categories = [category_of(e) for e in entries]
    if any(c in _TEACHING for c in categories):
        return "signal"
    if sum(1 for c in categories if c == "utterance") >= TURNS_BEFORE_REVIEW:
        return "turns"
    if sum(1 for e in entries if e.kind == "action") >= TURNS_BEFORE_REVIEW:
        return "tool rounds"
    return ""


def _finding(book: LessonBook, entry_id: str, feat: Feature, sign: int, category: str) -> Finding | None:
    lesson = book.lessons.get(feat.target)
    if lesson is None:
        # Only a correction, a rule or a denial opens a lesson; an accept only bears on existing ones.
        opens = sign > 0 and category != "accept"
        return Finding(entry_id, feat.target, "new", feat.key, feat.claim) if opens else None
    if entry_id in lesson.evidence or entry_id in lesson.ignored:
        return None
    return Finding(entry_id, feat.target, "agrees" if sign > 0 else "conflicts", feat.key)


def classify(entry: StoredEntry, book: LessonBook) -> list[Finding]:
    """Stage 1 on rules: which lessons ``entry`` bears on (empty for noise)."""
    category = category_of(entry)
    if category is None:
        return []
    body = entry.body
    found: list[Finding | None] = []
    if entry.kind == "verdict" and body["judged"] in book.index:
        judged = book.index[body["judged"]]
        before, after = judged_text(judged.body), body.get("text") if isinstance(body.get("text"), str) else None
        reason = str(body.get("reason", ""))
        for feat in CATALOG:
            sign = stance(feat, category, action_text(judged.body) if feat.action else before, after, reason)
            if sign is not None:
                found.append(_finding(book, entry.id, feat, sign, category))
        found += _marked(book, entry.id, category, before, after, reason)
        if _unexplained(book, category, before, after, reason, found):
            # Nothing the catalog or a known lesson accounts for: the larger model is asked (.reflected).
            found.append(Finding(entry.id, "", "unexplained"))
        if category == "reject" and not reason and after is None and not any(found):
            return [Finding(entry.id, "", "question")]
    elif category == "rule" and not isinstance(body.get("target"), str):
        named = match_words(str(body["text"]))
        found += [_finding(book, entry.id, f, +1, category) for f in named]
        if not named:
            text = " ".join(str(body["text"]).split())
            domain = "rules" if any(w in text.lower() for w in _GUARD_WORDS) else "taste"
            found.append(Finding(entry.id, f"{domain}/{slug(text)}", "new", "", text))
    elif category == "rule" and book.lesson_for(str(body["target"])) is None:
        found.append(Finding(entry.id, str(body["target"]), "new", "", " ".join(str(body["text"]).split())))
    elif category == "answer" and (picked := book.picked(entry)) is not None:
        chosen = picked[0]
        chosen_feature = next((f for f in CATALOG if f.target == chosen), None)
        if chosen in book.lessons:
            found.append(Finding(entry.id, chosen, "agrees"))
        elif chosen_feature is not None:
            found.append(Finding(entry.id, chosen, "new", chosen_feature.key, chosen_feature.claim))
    elif category in ("deny", "allow"):
        text = book.denied_actions.get(entry.id, "") + " " + action_text(body)
        found += [
            _finding(book, entry.id, f, +1, category) for f in features_in(text, action=True) if category == "deny"
        ]
    return [f for f in found if f is not None]


def _unexplained(
    book: LessonBook, category: str, before: str, after: str | None, reason: str, found: list[Finding | None]
) -> bool:
    """An edit that removed lines nothing accounts for, or a rejection with a reason nothing explains."""
    markers = [lesson.marker for lesson in book.marked()]
    if category in ("edit", "should_have_been") and after is not None:
        return bool(unexplained_lines(before, after, markers))
    if category == "reject" and reason:
        explained = any(f is not None and f.relation in ("new", "agrees") for f in found)
        return not explained and bool(unexplained_lines(before, "", markers))
    return False


def _marked(
    book: LessonBook, entry_id: str, category: str, before: str, after: str | None, reason: str
) -> list[Finding]:
    """Findings on the lessons outside the catalog: their markers are checked like catalog features."""
    out = []
    for lesson in book.marked():
        if entry_id in lesson.evidence or entry_id in lesson.ignored:
            continue
        sign = marker_stance(lesson.marker, category, before, after, reason)
        if sign is not None:
            out.append(Finding(entry_id, lesson.target, "agrees" if sign > 0 else "conflicts"))
    return out


def _because(book: LessonBook, target: str, cites: Iterable[str]) -> str:
    lesson = book.lessons.get(target)
    ids = sorted(set(lesson.evidence if lesson else ()) | set(cites))
    kinds = [book.index[i].kind if i in book.index else "" for i in ids]
    verdicts = [
        str(book.index[i].body.get("verdict", book.index[i].body.get("decision", ""))) for i in ids if i in book.index
    ]
    why = (
        "they said so"
        if "rule" in kinds
        else "they denied it when asked"
        if "deny" in verdicts
        else "they corrected it in their drafts"
    )
    return f"{why} (entries {', '.join(i[:8] for i in ids[-4:])})"


def reflect(findings: Sequence[Finding], book: LessonBook) -> list[Draft]:
    """Stage 2 on rules: one proposal per touched lesson, claim and evidence ids."""
    groups: dict[str, list[Finding]] = defaultdict(list)
    for f in findings:
        if f.target:
            groups[f.target].append(f)
    drafts = []
    for target, group in sorted(groups.items()):
        cites = tuple(dict.fromkeys(f.entry_id for f in group))
        lesson = book.lessons.get(target)
        first = group[0]
        feat = feature(first.feature) if lesson is None else feature(lesson.feature)
        if lesson is None and not any(f.relation == "new" for f in group):
            continue
        body: dict[str, Any] = {
            "target": target,
            "source": LEARNING_SOURCE,
            "home": lesson.home if lesson else "pack",
            "claim": lesson.claim if lesson else (feat.claim if feat else first.claim),
            "domain": target.split("/", 1)[0],
            "because": _because(book, target, cites),
        }
        if feat is not None:
            body["feature"] = feat.key
        elif lesson is None and target.startswith("rules/"):
            body["guarded"] = "public"
        drafts.append(Draft(target, body, cites))
    return drafts


def argue_against(
    draft: Draft, book: LessonBook, existing: Mapping[str, Existing], high_confidence: Mapping[str, bool]
) -> Draft:
    """The second pass: object when the lesson would change a high-confidence belief on one session's evidence."""
    if not high_confidence.get(draft.target) or (draft.target in existing and existing[draft.target].learned):
        return draft
    sessions = {str(book.index[ref].body.get("session", "")) for ref in draft.refs if ref in book.index}
    if (lesson := book.lessons.get(draft.target)) is not None:
        sessions |= lesson.sessions()
    objection = (
        ""
        if len(sessions - {""}) >= 2
        else (f"would change the high-confidence belief {draft.target} on evidence from one session: a one-off?")
    )
    return Draft(draft.target, {**draft.body, "objection": objection}, draft.refs)


def question_for(
    book: LessonBook, *, target: str = "", refs: tuple[str, ...] = (), candidates: Sequence[Feature] = ()
) -> Draft | None:
    """One numbered question: yes/no on a guarded lesson, or which feature an unexplained rejection meant.

    At most one question is open at a time (an unanswered one goes stale after
    :data:`QUESTION_STALE_MS`), and a lesson is asked about once.
    """
    if any(
        lesson.home == "question" and not lesson.answered and book.last_ts - lesson.first_ts < QUESTION_STALE_MS
        for lesson in book.lessons.values()
    ):
        return None
    if candidates:
        opts = [[f.target, "yes"] for f in candidates[:3]] + [["", "none"]]
        labels = [f.claim for f in candidates[:3]] + ["Something else"]
        text, qid = "What was wrong with that draft?", f"question/reject-{refs[0][:12]}"
    else:
        lesson = book.lessons[target]
        opts, labels = [[target, "yes"], [target, "no"]], ["Yes", "No"]
        again = " You said it was wrong before, but you have corrected it since." if lesson.rejected_at >= 0 else ""
        text = f"Should I keep to this from now on? {lesson.claim}{again}"
        qid = f"question/{slug(target)}" + (f"-{len(lesson.proposals)}" if again else "")
        refs = tuple(lesson.proposals[:1]) + refs
    if qid in book.lessons:
        return None
    body = {
        "target": qid,
        "source": LEARNING_SOURCE,
        "home": "question",
        "claim": text,
        "options": opts,
        "labels": labels,
        "domain": "question",
    }
    return Draft(qid, body, refs)
