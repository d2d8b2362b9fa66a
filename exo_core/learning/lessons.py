"""The lesson book: every lesson, its evidence and its state, folded from the ledger.

A lesson is a view, never a stored truth. :class:`LessonBook` replays ledger
entries in arrival order: ``proposal`` entries open or reinforce a lesson and
cite evidence in their ``refs``; ``promotion`` and ``rejection`` entries move
it; ``rule`` entries aimed at a lesson (``target``) are the person saying it.

Evidence is *resolved*, never trusted: each cited id must name an entry the
book has seen, of the person's own channel, and its stance toward the lesson
is recomputed from that entry (the judged draft, the person's edit, the
reason). A proposal cannot raise a weight by citing an unrelated entry, and
a number written in a proposal body is never read as a strength. Evidence
older than the lesson's last rejection does not count: the person ruled on it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from exo_core.learning.features import Feature, action_text, feature, marker_stance, match_words, stance
from exo_core.learning.signals import STRENGTHS, category_of, signed_strength
from exo_core.learning.weights import Evidence, weight
from exo_core.ledger.entry import StoredEntry

__all__ = ["Lesson", "LessonBook", "judged_text", "slug", "valid_claim"]

_INDEXED = frozenset({"action", "verdict", "rule", "approval", "utterance", "outcome", "proposal"})


def judged_text(body: Any) -> str:
    """The text of a judged output (a draft recorded as an action)."""
    texts = [body[key] for key in ("text", "result") if isinstance(body, dict) and isinstance(body.get(key), str)]
    return texts[0] if texts else ""


def slug(text: str, limit: int = 60) -> str:
    """A node-name slug of ``text``."""
    out = ""
    for word in re.findall(r"[a-z0-9]+", text.lower()):
        if len(out) + len(word) + 1 > limit:
            break
        out = f"{out}-{word}" if out else word
    return out[:limit] or "lesson"


def valid_claim(text: object) -> bool:
    """A lesson claim is one short line of text (the reflection's output is checked by this)."""
    return isinstance(text, str) and 8 <= len(text) <= 240 and "\n" not in text.strip()


@dataclass(slots=True)
class Lesson:
    """One lesson's folded state: mutable while the book folds entries; readers treat it as read-only."""

    target: str
    home: str
    claim: str
    domain: str
    feature: str = ""
    guarded: str = ""
    because: str = ""
    marker: str = ""  # the words a lesson outside the catalog avoids (exo_core.learning.reflected)
    proposals: list[str] = field(default_factory=list)
    evidence: dict[str, Evidence] = field(default_factory=dict)
    ignored: list[str] = field(default_factory=list)
    objection: str = ""
    promoted_by: str = ""
    promotion: str = ""
    node: str = ""
    promoted_ts: int = 0
    person_said: str = ""
    rejected_at: int = -1
    answered: bool = False
    first_ts: int = 0

    def sessions(self) -> set[str]:
        """Sessions whose supporting evidence this lesson has."""
        return {e.session for e in self.evidence.values() if e.strength > 0 and e.session}

    def weight(self, now_ms: int) -> float:
        """The lesson's weight at ``now_ms`` (see :mod:`.weights`)."""
        return weight(self.evidence.values(), now_ms)

    def to_json(self, now_ms: int) -> dict[str, Any]:
        """A plain summary for views and the CLI."""
        return {
            "target": self.target,
            "home": self.home,
            "claim": self.claim,
            "because": self.because,
            "domain": self.domain,
            "feature": self.feature,
            "guarded": self.guarded,
            "marker": self.marker,
            "weight": self.weight(now_ms),
            "promoted_by": self.promoted_by,
            "node": self.node,
            "rejected": self.rejected_at >= 0,
            "person_said": bool(self.person_said),
            "objection": self.objection,
            "proposals": list(self.proposals),
            "evidence": sorted(self.evidence),
            "sessions": sorted(self.sessions()),
            "ignored": len(self.ignored),
        }


class LessonBook:
    """Folds ledger entries into lessons. Build with :meth:`apply` over entries in arrival order."""

    def __init__(self) -> None:
        self.lessons: dict[str, Lesson] = {}
        self.index: dict[str, StoredEntry] = {}
        self.denied_actions: dict[str, str] = {}
        self.last_ts = 0
        self.last_n = 0

    def apply(self, entry: StoredEntry) -> None:
        """Fold one entry."""
        self.last_ts = max(self.last_ts, entry.ts)
        self.last_n = max(self.last_n, entry.n)
        if entry.kind in _INDEXED:
            self.index[entry.id] = entry
        lesson: Lesson | None  # the branches below find the entry's lesson by target, node or proposal
        if entry.kind == "utterance" and isinstance(entry.body.get("answer_to"), str):
            for lesson in self.lessons.values():
                if entry.body["answer_to"] in lesson.proposals:
                    lesson.answered = True
        if entry.kind == "action":
            for ref in entry.refs:  # an approval answered for this action: check features on the call
                self.denied_actions[ref] = action_text(entry.body)
        elif entry.kind == "proposal":
            self._proposal(entry)
        elif entry.kind == "promotion" and entry.body["target"] in self.lessons:
            lesson = self.lessons[entry.body["target"]]
            lesson.promoted_by, lesson.promotion = str(entry.body.get("by", "evidence")), entry.id
            lesson.node, lesson.promoted_ts = str(entry.body.get("node", lesson.target)), entry.ts
        elif entry.kind == "rejection":
            self._rejection(entry)
        elif entry.kind == "rule" and isinstance(entry.body.get("target"), str):
            lesson = self.lesson_for(entry.body["target"])
            if lesson is not None and category_of(entry) == "rule":
                lesson.claim = " ".join(str(entry.body["text"]).split())
                lesson.because = "the person said so"
                self._cite(lesson, entry)

    def _proposal(self, entry: StoredEntry) -> None:
        body = entry.body
        target = body["target"]
        lesson = self.lessons.get(target)
        if lesson is None:
            feat = feature(str(body.get("feature", "")))
            lesson = Lesson(
                target=target,
                home=str(body.get("home", "pack")),
                claim=str(body.get("claim", target)),
                domain=str(body.get("domain", "taste")),
                feature=feat.key if feat else "",
                guarded=feat.guarded if feat else str(body.get("guarded", "")),
                marker=str(body.get("marker", "")) if body.get("by") == "reflection" else "",
                first_ts=entry.ts,
            )
            self.lessons[target] = lesson
        if isinstance(body.get("revises"), str):
            # A reflection rewrites the wording only; it adds no evidence.
            if valid_claim(body.get("claim")) and not lesson.person_said:
                lesson.claim = " ".join(str(body["claim"]).split())
            return
        lesson.proposals.append(entry.id)
        if isinstance(body.get("because"), str):
            lesson.because = body["because"]
        if isinstance(body.get("objection"), str):  # each second pass replaces the last one's objection
            lesson.objection = body["objection"]
        for ref in entry.refs:
            cited = self.index.get(ref)
            if cited is None:
                lesson.ignored.append(ref)
            else:
                self._cite(lesson, cited)

    def marked(self) -> list[Lesson]:
        """The lessons outside the catalog, each with the marker the larger model named."""
        return [lesson for lesson in self.lessons.values() if lesson.marker]

    def lesson_for(self, ref: str) -> Lesson | None:
        """The lesson named by ``ref``: its target, its node id, or one of its proposal ids."""
        return self.lessons.get(ref) or next(
            (lesson for lesson in self.lessons.values() if ref == lesson.node or ref in lesson.proposals), None
        )

    def picked(self, answer: StoredEntry) -> tuple[str, str] | None:
        """The option ``(target, "yes"/"no")`` an answer picked from the question it answers; None if none."""
        asked = self.index.get(str(answer.body.get("answer_to")))
        options = asked.body.get("options") if asked is not None and asked.kind == "proposal" else None
        pick = answer.body.get("option")
        if not isinstance(options, list) or not isinstance(pick, int) or not 1 <= pick <= len(options):
            return None
        return options[pick - 1][0], options[pick - 1][1]

    def _rejection(self, entry: StoredEntry) -> None:
        # The person said the lesson is wrong: its evidence and promotion are dropped, and only
        # evidence newer than the rejection counts again (``_cite``).
        lesson = self.lesson_for(entry.body["target"])
        if lesson is None:
            return
        lesson.rejected_at = entry.ts
        lesson.evidence.clear()
        lesson.promoted_by = lesson.promotion = lesson.person_said = ""

    def _cite(self, lesson: Lesson, cited: StoredEntry) -> None:
        ev = self.resolve(lesson, cited)
        if ev is None or cited.ts <= lesson.rejected_at:
            lesson.ignored.append(cited.id)
            return
        lesson.evidence[cited.id] = ev
        if ev.category in ("rule", "answer") and ev.strength > 0:
            lesson.person_said = cited.id

    def resolve(self, lesson: Lesson, cited: StoredEntry) -> Evidence | None:
        """The evidence ``cited`` gives ``lesson``, recomputed from the entry; None when it bears on nothing."""
        category = category_of(cited)
        if category is None or STRENGTHS[category].default == 0.0:
            return None
        body = cited.body
        session = str(body.get("session", ""))
        sign = self._stance(lesson, feature(lesson.feature), category, cited)
        if sign is None:
            return None
        magnitude = abs(signed_strength(category))
        if category in ("edit", "should_have_been") and sign < 0:
            magnitude = STRENGTHS["accept"].default  # the person let that part stand: a part-level accept
        if not session and cited.kind == "verdict":
            session = str(self.index[body["judged"]].body.get("session", "")) if body["judged"] in self.index else ""
        return Evidence(cited.id, cited.ts, sign * magnitude, STRENGTHS[category].fades, session, category)

    def _stance(self, lesson: Lesson, feat: Feature | None, category: str, cited: StoredEntry) -> int | None:
        body = cited.body
        if category == "rule":
            if isinstance(body.get("target"), str) and self.lesson_for(body["target"]) is lesson:
                return +1
            if feat is not None:
                names_it = feat in match_words(str(body["text"]))
            else:
                names_it = slug(str(body["text"])) == lesson.target.split("/")[-1]
            return +1 if names_it else None
        if category == "answer":
            picked = self.picked(cited)
            if picked is None or picked[0] != lesson.target:
                return None
            return +1 if picked[1] == "yes" else -1
        if category in ("deny", "allow"):
            if feat is None:
                return None
            text = self.denied_actions.get(cited.id, "") + " " + action_text(body)
            return stance(feat, category, text, None)
        if cited.kind == "verdict":
            judged = self.index.get(body["judged"])
            if judged is None:
                return None
            before = judged_text(judged.body) if not (feat and feat.action) else action_text(judged.body)
            after = body.get("text") if isinstance(body.get("text"), str) else None
            if lesson.marker:  # a lesson outside the catalog: its marker is checked like a feature
                return marker_stance(lesson.marker, category, before, after, str(body.get("reason", "")))
            if feat is None:
                return +1 if category in ("edit", "should_have_been", "reject") else None
            return stance(feat, category, before, after, str(body.get("reason", "")))
        return None
