"""Packing under a token budget (docs/retrieval.md, stage 6): pinned first, then ~70% nodes, ~30% items.

Every block starts with its id in brackets, so the model can ask for the
whole node. Each kind has forms from full to small and takes the largest
that fits what is left:

* node: full (title, summary, body) → its summary line;
* item: card (title, URL, an excerpt) → title → bare URL;
* turn: the utterance (cut at :data:`EXCERPT` characters) → its first line, shorter.

The total never exceeds the budget: a block's cost is
:func:`estimate_tokens` of its text plus its separating newline, and that sum
bounds the estimate of the joined text. The share one kind leaves unused
goes to the other.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from exo_core.retrieval.docs import Doc

__all__ = ["Block", "Packed", "estimate_tokens", "forms", "pack", "NODE_SHARE"]

NODE_SHARE = 0.7
EXCERPT = 600
_SHORT = 160


def estimate_tokens(text: str) -> int:
    """A conservative token estimate for English-like text: one token per 4 characters, rounded up."""
    return (len(text) + 3) // 4


def _cut(text: str, size: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= size else text[: size - 1].rstrip() + "…"


def forms(doc: Doc) -> list[tuple[str, str]]:
    """``(form, text)`` for ``doc``, largest first."""
    tag = f"[{doc.kind}:{doc.id}]" if doc.kind != "node" else f"[{doc.id}]"
    if doc.kind == "node":
        line = f"{tag} {doc.title}: {doc.summary}"
        full = [("full", f"{line}\n{doc.body.strip()}")] if doc.body.strip() and not doc.private else []
        return full + [("summary", line)]
    if doc.kind == "item":
        url = f" <{doc.url}>" if doc.url else ""
        out = [
            (
                "card",
                f"{tag} {doc.title}{url}\n{_cut(doc.body, EXCERPT)}" if doc.body.strip() else f"{tag} {doc.title}{url}",
            ),
            ("title", f"{tag} {doc.title}"),
        ]
        return out + ([("url", f"{tag} {doc.url}")] if doc.url else [])
    role = f"{doc.tags}: " if doc.tags else ""
    return [("full", f"{tag} {role}{_cut(doc.body, EXCERPT)}"), ("short", f"{tag} {role}{_cut(doc.body, _SHORT)}")]


@dataclass(frozen=True, slots=True)
class Block:
    """One packed block: which document, in which form, its score and its token cost."""

    id: str
    kind: str
    form: str
    score: float
    text: str
    tokens: int
    pinned: bool = False


@dataclass(frozen=True, slots=True)
class Packed:
    """The packed blocks in prompt order and their total token estimate."""

    blocks: tuple[Block, ...]
    tokens: int
    budget: int

    def render(self) -> str:
        """The blocks as prompt text, one after another."""
        return "\n".join(b.text for b in self.blocks)

    def ids(self, kind: str) -> list[str]:
        """The ids of the packed blocks of ``kind``."""
        return [b.id for b in self.blocks if b.kind == kind]


def _fit(doc: Doc, score: float, room: int, pinned: bool = False) -> Block | None:
    for form, text in forms(doc):
        cost = estimate_tokens(text) + 1
        if cost <= room:
            return Block(doc.id, doc.kind, form, score, text, cost, pinned)
    return None


def pack(
    pinned: Sequence[Doc],
    ranked: Sequence[tuple[Doc, float]],
    budget: int,
    *,
    limit: int | None = None,
    node_share: float = NODE_SHARE,
) -> Packed:
    """Pack ``pinned`` (in full where they fit), then ``ranked`` documents, within ``budget`` tokens."""
    blocks: list[Block] = []
    used = 0

    def add(doc: Doc, score: float, cap: int, is_pin: bool = False) -> int:
        nonlocal used
        if any(b.id == doc.id for b in blocks) or (limit is not None and len(blocks) >= limit):
            return 0
        block = _fit(doc, score, min(cap, budget - used), is_pin)
        if block is None:
            return 0
        blocks.append(block)
        used += block.tokens
        return block.tokens

    # Phase 1: the pinned documents, each in the largest form that fits the whole budget.
    for doc in pinned:
        add(doc, 0.0, budget, True)
    rest = budget - used
    nodes = [(d, s) for d, s in ranked if d.kind == "node"]
    others = [(d, s) for d, s in ranked if d.kind != "node"]
    # Phase 2: nodes, within their share of what the pinned left.
    node_room = int(rest * node_share)
    for doc, score in nodes:
        node_room -= add(doc, score, node_room)
    # Phase 3: items and turns, within everything the nodes left unused.
    other_room = budget - used
    for doc, score in others:
        other_room -= add(doc, score, other_room)
    # Phase 4: what items and turns left goes back to the nodes that did not fit.
    for doc, score in nodes:
        add(doc, score, budget - used)
    order = {id(b): i for i, b in enumerate(blocks)}
    blocks.sort(key=lambda b: (not b.pinned, -b.score, order[id(b)]))
    return Packed(tuple(blocks), used, budget)
