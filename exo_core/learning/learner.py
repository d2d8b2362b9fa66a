"""The learner: one review pass from new ledger entries to proposals, promotions and the pack.

``Learner(store, ledger).review()`` reads the entries since its last run,
skips when there is nothing to learn, classifies and reflects (rules only,
:mod:`.reviewer`), appends the proposals, applies the promotion rules
(:mod:`.promotion`), writes the promoted lessons' nodes and the pack's
learned section, queues reflection for a larger model when a queue is
given, and returns the protocol events to show (``taste.updated``,
``question.asked``, ``decision.queued``).

A review can be cancelled between entries (a new live turn does that); it
then writes nothing and the next review sees the same entries again. Every
write is an append, so a crash between two writes loses no evidence: the
next review rebuilds its book from the ledger and re-cites nothing twice.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from typing import Any

from exo_core.atomic import atomic_write_text
from exo_core.errors import NotFoundError, StorageError, UsageError
from exo_core.learning.features import features_in
from exo_core.learning.lessons import LessonBook, judged_text
from exo_core.learning.pack import enforced, lesson_node, render_learned, shown, sync_nodes, taste_rows, write_pack
from exo_core.learning.promotion import Existing, decide
from exo_core.learning.reflected import EXPLAIN, choices, unexplained_lines
from exo_core.learning.reviewer import (
    LEARNING_SOURCE,
    Draft,
    argue_against,
    classify,
    needs_review,
    question_for,
    reflect,
)
from exo_core.ledger.entry import NewEntry, StoredEntry
from exo_core.ledger.ledger import Ledger
from exo_core.protocol import events as ev
from exo_core.store.store import Store

__all__ = ["Learner", "ReviewReport"]


@dataclass(frozen=True, slots=True)
class ReviewReport:
    """What one review did; ``reason`` is why it ran ("" when skipped)."""

    reason: str
    proposals: int = 0
    promoted: tuple[str, ...] = ()
    questions: tuple[str, ...] = ()
    queued: int = 0
    cancelled: bool = False
    events: tuple[tuple[str, Any], ...] = field(default=())


class Learner:
    """Runs reviews for one store and its ledger (opened with a signing key)."""

    def __init__(self, store: Store, ledger: Ledger, *, queue: Any = None) -> None:
        self.store = store
        self.ledger = ledger
        self.queue = queue
        self.book = LessonBook()
        self._lock = threading.RLock()  # the reviewer thread and direct calls (reject, rows) share one book
        self._cursor_path = store.root / "indexes" / "learning" / "cursor.json"
        try:
            self.cursor = int(json.loads(self._cursor_path.read_text(encoding="utf-8"))["n"])
        except FileNotFoundError:
            self.cursor = 0
        except (ValueError, KeyError, TypeError) as exc:
            raise StorageError(f"{self._cursor_path}: unreadable review cursor; delete it to review again") from exc

    def refresh(self) -> None:
        """Fold entries appended since the book last looked."""
        for entry in self.ledger.entries(after_n=self.book.last_n):
            self.book.apply(entry)

    def _append(self, drafts: list[NewEntry]) -> list[StoredEntry]:
        if not drafts:
            return []
        stored = self.ledger.append_many(drafts)
        self.refresh()
        return stored

    def review(self, *, asked: bool = False, cancel: threading.Event | None = None) -> ReviewReport:
        """One review pass (see the module docstring)."""
        with self._lock:
            return self._review(asked, cancel)

    def _review(self, asked: bool, cancel: threading.Event | None) -> ReviewReport:
        self.refresh()
        pending = list(self.ledger.entries(after_n=self.cursor))
        since_ts = pending[0].ts if pending else self.book.last_ts
        why = needs_review(pending, asked=asked)
        if not why:
            return ReviewReport("")
        book = self.book
        before = shown(self.store)
        findings = []
        for entry in pending:
            if cancel is not None and cancel.is_set():
                return ReviewReport(why, cancelled=True)
            findings += classify(entry, book)
        nodes = self.store.nodes()
        existing = {
            n.id: Existing("learned" in n.tags, n.domain == "rules" or "guarded" in n.tags)
            for n in nodes
            if n.valid_until is None
        }
        high = {n.id: n.confidence == "high" for n in nodes}
        drafts = [argue_against(d, book, existing, high) for d in reflect(findings, book)]
        for f in findings:
            if f.relation != "question":
                continue
            judged = book.index[book.index[f.entry_id].body["judged"]]
            seen = [
                x
                for x in features_in(judged_text(judged.body))
                if not (x.target in book.lessons and book.lessons[x.target].promoted_by)
            ]
            if not seen:
                continue
            question = question_for(book, refs=(f.entry_id,), candidates=seen)
            if question is not None:
                drafts.append(question)
        new_targets = [d.target for d in drafts if d.target not in book.lessons and d.body["home"] != "question"]
        stored = self._append([d.entry() for d in drafts])
        promoted, asked_now, supersede = self._promote(existing)
        questions = tuple(e.id for e in stored if e.body.get("home") == "question") + asked_now
        for old_id, target in supersede:
            lesson = book.lessons[target]
            self.store.supersede(old_id, lesson_node(lesson, book.last_ts, lesson.promoted_ts))
        # A rule aimed at a promoted lesson (the person reworded it) rewrites its node too, so the node's
        # summary is the learner's "claim. Because ..." and never the bare line the pack shows.
        ruled = {found for found in (self._ruled(e) for e in pending) if found}
        self._publish(
            set(promoted)
            | ruled
            | {lesson.target for lesson in book.lessons.values() if lesson.rejected_at >= since_ts}
        )
        queued = self._enqueue(new_targets) + self._explain(
            [f.entry_id for f in findings if f.relation == "unexplained"]
        )
        self.cursor = book.last_n
        self._cursor_path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(self._cursor_path, json.dumps({"n": self.cursor}) + "\n")
        return ReviewReport(
            why, len(stored), promoted, questions, queued, events=tuple(self._events(before, promoted, questions))
        )

    def _promote(self, existing: dict[str, Existing]) -> tuple[tuple[str, ...], tuple[str, ...], list[tuple[str, str]]]:
        book, now = self.book, self.book.last_ts
        entries: list[NewEntry] = []
        asks: list[Draft] = []
        supersede: list[tuple[str, str]] = []
        for target, lesson in sorted(book.lessons.items()):
            step = decide(lesson, now, existing)
            if step.action == "promote":
                node = f"{target}-learned" if step.supersedes else target
                refs = (lesson.proposals[0],) + ((lesson.person_said,) if step.by == "person" else ())
                entries.append(
                    NewEntry(
                        "promotion",
                        {
                            "target": target,
                            "by": step.by,
                            "rule": step.rule,
                            "node": node,
                            "source": LEARNING_SOURCE,
                            "weight": lesson.weight(now),
                            "supersedes": step.supersedes,
                        },
                        refs,
                    )
                )
                if step.supersedes:
                    supersede.append((step.supersedes, target))
            elif step.action == "ask" and not asks:
                question = question_for(book, target=target)
                if question is not None:
                    asks.append(question)
        stored = self._append(entries + [q.entry() for q in asks])
        return (
            tuple(e.body["target"] for e in stored if e.kind == "promotion"),
            tuple(e.id for e in stored if e.kind == "proposal"),
            supersede,
        )

    def _ruled(self, entry: StoredEntry) -> str:
        """The promoted lesson a ``rule`` entry rewords ("" when none)."""
        target = entry.body.get("target") if entry.kind == "rule" else None
        if not isinstance(target, str):
            return ""
        lesson = self.book.lesson_for(target)
        if lesson is None or not lesson.promoted_by:
            return ""
        return lesson.target

    def _enqueue(self, targets: list[str]) -> int:
        if self.queue is None:
            return 0
        book = self.book
        lessons = [book.lessons[t] for t in targets if t in book.lessons and book.lessons[t].proposals]
        for lesson in lessons:
            samples = []
            for eid in list(lesson.evidence)[:3]:
                e = book.index[eid]
                judged = book.index.get(str(e.body.get("judged", "")))
                samples.append(
                    {
                        "verdict": e.body.get("verdict", e.kind),
                        "text": str(e.body.get("text", ""))[:400],
                        "draft": judged_text(judged.body)[:400] if judged else "",
                    }
                )
            self.queue.put(
                "reflect",
                {"proposal": lesson.proposals[0], "target": lesson.target, "claim": lesson.claim, "evidence": samples},
                key=f"reflect:{lesson.proposals[0]}",
            )
        return len(lessons)

    def _explain(self, verdict_ids: list[str]) -> int:
        """Queue each unexplained edit for the larger model's reflection (:mod:`.reflected`)."""
        if self.queue is None:
            return 0
        book = self.book
        queued = 0
        for vid in dict.fromkeys(verdict_ids):
            verdict = book.index[vid]
            judged = book.index[verdict.body["judged"]]
            draft, after = judged_text(judged.body), str(verdict.body.get("text", ""))
            removed = unexplained_lines(draft, after, [lesson.marker for lesson in book.marked()])
            if not removed:
                continue  # a lesson the larger model named since explains it now
            inputs = {
                EXPLAIN: vid,
                "verdict": str(verdict.body.get("verdict", "")),
                "draft": draft[:1200],
                "after": after[:1200],
                "removed": [line[:300] for line in removed[:6]],
                "reason": str(verdict.body.get("reason", ""))[:300],
            }
            if not choices(inputs):
                continue  # the person's words name no line of the draft: no answer could be kept
            queued += int(self.queue.put("reflect", inputs, key=f"explain:{vid}"))
        return queued

    def _events(self, before: set[str], promoted: tuple[str, ...], questions: tuple[str, ...]) -> list[tuple[str, Any]]:
        book, now = self.book, self.book.last_ts
        moved = [(book.lessons[t].node or t, book.lessons[t], "promoted") for t in promoted]
        for node in sorted(before - {lesson.node or lesson.target for lesson in enforced(book, now)}):
            lesson = book.lesson_for(node)
            if lesson is not None:  # gone from the enforced list: rejected, or faded below high
                moved.append((node, lesson, "deleted" if lesson.rejected_at >= 0 else "demoted"))
        out: list[tuple[str, Any]] = [
            ("taste.updated", ev.TasteUpdated(id=node, text=lesson.claim, weight=lesson.weight(now), change=change))
            for node, lesson, change in moved
        ]
        asked = {qid: book.index[qid].body for qid in questions}
        return out + [
            ("question.asked", ev.QuestionAsked(question_id=qid, text=q["claim"], options=q["labels"]))
            for qid, q in asked.items()
        ]

    def promote_by_eval(self, target: str, decision: str) -> StoredEntry:
        """Promote a lesson the climb kept (rule 5: skills and high-impact rules pass the exam first)."""
        with self._lock:
            lesson = self.book.lessons[target]
            entry = self.ledger.append(
                "promotion",
                {
                    "target": target,
                    "by": "eval",
                    "rule": 5,
                    "node": target,
                    "source": LEARNING_SOURCE,
                    "weight": lesson.weight(self.book.last_ts),
                },
                refs=(lesson.proposals[0], decision),
            )
            self.refresh()
            self._publish({target})
            return entry

    def rows(self, domain: str | None = None) -> list[dict[str, Any]]:
        """``taste.list`` rows of the current book (optionally of one domain)."""
        with self._lock:
            self.refresh()
            rows = taste_rows(self.book)
        return [r for r in rows if domain is None or r["id"].split("/", 1)[0] == domain]

    def find(self, ref: str) -> str | None:
        """The target of the lesson named by ``ref`` (its target, node id or a proposal id)."""
        self.refresh()
        lesson = self.book.lesson_for(ref)
        if lesson is None:
            return None
        return lesson.target

    def reject(self, target: str, reason: str) -> StoredEntry:
        """The person says "that's wrong": a rejection; the lesson leaves the pack on this render.

        ``target`` must name a lesson (its target, node id or a proposal id) or a node of the store;
        anything else is :class:`NotFoundError` and nothing is appended (the ledger is append-only, so
        a typo would stay in it for good). The rejected lesson's node is retired and the belief it
        superseded comes back (:func:`.pack.sync_nodes`).
        """
        with self._lock:
            found = self.find(target)
            if found is None and not self._is_node(target):
                raise NotFoundError(
                    f"nothing to reject: {target!r} is no lesson, proposal or node; "
                    "`exo learn review --json` and taste.list show what there is"
                )
            entry = self.ledger.append("rejection", {"target": target, "reason": reason})
            found = self.find(target)
            self._publish({found} if found else set())
            return entry

    def _is_node(self, node_id: str) -> bool:
        try:
            path = self.store.node_path(node_id)
        except UsageError:  # not shaped like a node id at all
            return False
        return path.is_file()

    def _publish(self, only: set[str]) -> None:
        """Rewrite the nodes of the lessons in ``only`` and the pack's learned section."""
        sync_nodes(self.store, self.book, only=only)
        write_pack(self.store, render_learned(self.book))
