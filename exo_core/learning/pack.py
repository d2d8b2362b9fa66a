"""The learned part of the pack, the taste nodes, and the ledger views that rebuild them.

High-weight promoted lessons are *enforced* in the pack, medium ones (and
unguarded high ones still waiting) are *hints*, low ones are not shown
(docs/learning.md §4). Every pack line names its proposal, and the node it links to lists
its proposals and evidence ids, so a wrong lesson traces back to the entries
that caused it (docs/learning.md §4). The section sits between two markers in ``pack.md``;
the rest of the page is the person's.

Both the weights and the pack section are views (``taste``, ``taste_pack``)
registered in the ledger's view registry, so ``exo ledger rebuild`` recomputes
them from an empty state. "Now" for a view is the time of the ledger's last
entry, so a rebuild gives the same bytes as the live render.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import re
from collections.abc import Collection
from typing import Any

from exo_core.atomic import atomic_write_text
from exo_core.errors import NotFoundError
from exo_core.learning.lessons import Lesson, LessonBook
from exo_core.learning.weights import HIGH, MEDIUM, label
from exo_core.ledger.canonical import canonical_json
from exo_core.ledger.entry import StoredEntry
from exo_core.ledger.views import DEFAULT_VIEWS, ViewRegistry
from exo_core.store.node import Link, Node
from exo_core.store.store import Store

__all__ = [
    "render_learned",
    "write_pack",
    "lesson_node",
    "sync_nodes",
    "restore_superseded",
    "taste_rows",
    "TasteView",
    "TastePackView",
    "register_views",
    "BEGIN",
    "END",
    "day_of",
    "enforced",
    "hints",
    "shown",
]

BEGIN = "<!-- exo:learned:begin -->"
END = "<!-- exo:learned:end -->"
_SECTION = re.compile(re.escape(BEGIN) + ".*?" + re.escape(END), re.S)  # the first BEGIN with the END after it


def day_of(ts_ms: int) -> str:
    """The UTC date of a ledger timestamp."""
    return _dt.datetime.fromtimestamp(ts_ms / 1000, tz=_dt.UTC).date().isoformat()


def enforced(book: LessonBook, now_ms: int) -> list[Lesson]:
    """Promoted, unrejected lessons of high weight, by target."""
    return [
        lesson for _, lesson in sorted(book.lessons.items()) if lesson.promoted_by and lesson.weight(now_ms) >= HIGH
    ]


def hints(book: LessonBook, now_ms: int) -> list[Lesson]:
    """Unguarded pack lessons of medium weight, or high but not (yet) promoted."""
    weights = {t: lesson.weight(now_ms) for t, lesson in book.lessons.items()}
    return [
        lesson
        for t, lesson in sorted(book.lessons.items())
        if lesson.home == "pack"
        and (lesson.promoted_by or not lesson.guarded)
        and MEDIUM <= weights[t]
        and not (lesson.promoted_by and weights[t] >= HIGH)
    ]


def render_learned(book: LessonBook, now_ms: int | None = None) -> str:
    """The learned section of the pack, markers included."""
    now = book.last_ts if now_ms is None else now_ms
    lines = [BEGIN, "## Learned taste", ""]
    strong = enforced(book, now)
    soft = hints(book, now)
    if strong:
        lines += (
            ["Enforced:", ""]
            + [
                f"- {lesson.claim} [[{lesson.node or lesson.target}]] (proposal {lesson.proposals[0][:12]})"
                for lesson in strong
            ]
            + [""]
        )
    if soft:
        lines += ["Hints:", ""] + [f"- {lesson.claim} (proposal {lesson.proposals[0][:12]})" for lesson in soft] + [""]
    if not strong and not soft:
        lines += ["Nothing learned yet.", ""]
    return "\n".join(lines + [END])


def shown(store: Store) -> set[str]:
    """The node ids the pack's learned section links now (what the person was last shown as enforced)."""
    found = _SECTION.search(store.pack_text())
    return set(re.findall(r"\[\[([^\]|#]+)\]\]", found.group())) if found else set()


def write_pack(store: Store, section: str) -> bool:
    """Put ``section`` into ``pack.md`` (replacing the old one); True when the file changed."""
    text = store.pack_text()
    new, found = _SECTION.subn(lambda _: section, text, count=1)  # a function: section is not a template
    if not found:
        new = text.rstrip("\n") + "\n\n" + section + "\n"
    if new == text:
        return False
    atomic_write_text(store.root / "pack.md", new)
    return True


def lesson_node(lesson: Lesson, now_ms: int, promoted_ts: int) -> Node:
    """The plain file that holds a promoted lesson."""
    node_id = lesson.node or lesson.target
    because = f" Because {lesson.because.rstrip('.')}." if lesson.because else " Learned from corrections."
    body = (
        f"Learned by Exo (proposal {lesson.proposals[0]}, promoted by {lesson.promoted_by}).\n\n"
        "Evidence (ledger entries):\n\n" + "".join(f"- {e}\n" for e in sorted(lesson.evidence))
    )
    links = (Link("supersedes", lesson.target),) if node_id != lesson.target else ()
    return Node(
        id=node_id,
        title=lesson.claim.rstrip(".")[:80],
        type="rule" if lesson.person_said else "preference",
        domain=node_id.split("/", 1)[0],
        summary=lesson.claim + because,
        load_when="",
        confidence=label(lesson.weight(now_ms)),
        stability="durable",
        valid_from=day_of(promoted_ts),
        sources=tuple(f"ledger:{p}" for p in lesson.proposals[:8]),
        links=links,
        tags=("learned",),
        body=body,
    )


def sync_nodes(store: Store, book: LessonBook, only: Collection[str] | None = None) -> list[str]:
    """Write the node of each promoted lesson; retire the node of a rejected one. Returns changed ids.

    The learner passes ``only`` the lessons an event just moved (promoted, rejected), so a node the
    person edited by hand stays as they left it until the next event about it; ``exo learn rebuild``
    passes None and rewrites every one from the ledger.
    """
    changed = []
    for lesson in book.lessons.values():
        if only is not None and lesson.target not in only:
            continue
        node_id = lesson.node or lesson.target
        try:
            old: Node | None = store.read_node(node_id)
        except NotFoundError:
            old = None
        if lesson.promoted_by:
            new = lesson_node(lesson, book.last_ts, lesson.promoted_ts)
            if old is None or dataclasses.replace(old, path=None, key_lines=()) != new:
                store.write_node(new)
                changed.append(node_id)
        elif lesson.rejected_at >= 0 and old is not None and "learned" in old.tags and old.valid_until is None:
            store.write_node(dataclasses.replace(old, valid_until=max(old.valid_from, day_of(lesson.rejected_at))))
            changed.append(node_id)
            changed += restore_superseded(store, old)
    return changed


def restore_superseded(store: Store, retired: Node) -> list[str]:
    """Bring back the beliefs a rejected learned node had superseded (the person's tone
    row stays). A belief another current node still supersedes stays retired. Returns restored ids."""
    current = [n for n in store.nodes() if n.valid_until is None and n.id != retired.id]
    still = {ln.target for n in current for ln in n.links if ln.type == "supersedes"}
    restored = []
    for link in retired.links:
        if link.type != "supersedes" or link.target in still:
            continue
        try:
            old = store.read_node(link.target)
        except NotFoundError:
            continue  # removed by hand: nothing to bring back
        if old.valid_until is not None:
            store.write_node(dataclasses.replace(old, valid_until=None))
            restored.append(old.id)
    return restored


def taste_rows(book: LessonBook, now_ms: int | None = None) -> list[dict[str, Any]]:
    """Learned taste as ``taste.list`` rows: shown lessons (enforced, then hints) with real weights."""
    now = book.last_ts if now_ms is None else now_ms
    return [
        {
            "id": lesson.node or lesson.target,
            "text": lesson.claim,
            "weight": lesson.weight(now),
            "confidence": label(lesson.weight(now)),
            "status": status,
            "evidence": sorted(lesson.evidence),
            "proposal": lesson.proposals[0],
            "path": f"{lesson.node or lesson.target}.md" if lesson.promoted_by else None,
        }
        for status, lessons in (("enforced", enforced(book, now)), ("hint", hints(book, now)))
        for lesson in lessons
    ]


class TasteView:
    """Every lesson with its weight, evidence and state, as of the ledger's last entry."""

    name = "taste"

    def fresh(self) -> LessonBook:
        """An empty book."""
        return LessonBook()

    def apply(self, state: LessonBook, entry: StoredEntry) -> None:
        """Fold ``entry``."""
        state.apply(entry)

    def render(self, state: LessonBook) -> bytes:
        """Canonical JSON of every lesson plus a newline."""
        lessons = {t: lesson.to_json(state.last_ts) for t, lesson in sorted(state.lessons.items())}
        return canonical_json({"view": self.name, "now": state.last_ts, "lessons": lessons}, field=self.name) + b"\n"


class TastePackView(TasteView):
    """The learned section of the pack."""

    name = "taste_pack"

    def render(self, state: LessonBook) -> bytes:
        """Canonical JSON holding the section's Markdown."""
        return canonical_json({"view": self.name, "markdown": render_learned(state)}, field=self.name) + b"\n"


def register_views(registry: ViewRegistry = DEFAULT_VIEWS) -> None:
    """Add the taste views to ``registry`` (idempotent)."""
    for view in (TasteView(), TastePackView()):
        if view.name not in registry.names():
            registry.register(view)
