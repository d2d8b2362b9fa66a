"""The summary tree as pure functions: addresses, the tail, the view plan, merges (docs/context.md).

Positions are 0-based indexes into a session's current (non-undone) message
list. Messages before the *tail* (the last ``tail`` messages) are cut into
leaves of ``leaf_size``; leaf ``i`` covers positions ``[i*leaf, (i+1)*leaf)``.
A node at level ``L`` with index ``i`` covers leaves ``[i*2^L, (i+1)*2^L)``; its
children are ``(L-1, 2i)`` and ``(L-1, 2i+1)``.

The *view* tiles every message exactly once: the coarsest finished nodes over
the full leaves (a leaf whose summary is not ready appears verbatim), then the
messages between the last full leaf and the tail verbatim, then the tail.

Nothing here touches the database or the clock, so the rules are tested on
their own and the engine only feeds rows in.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Literal

from exo_core.context.config import ContextConfig, estimate_tokens
from exo_core.sessions.session_store import MessageRecord

__all__ = [
    "NodeKey",
    "SummaryNode",
    "Element",
    "Plan",
    "tail_start",
    "leaf_span",
    "node_positions",
    "plan_view",
    "choose_merge",
]

NodeKey = tuple[int, int]
"""A node's address: ``(level, index)``."""


@dataclass(frozen=True, slots=True)
class SummaryNode:
    """One stored node of the tree (a row of ``summary_nodes``)."""

    session_id: str
    level: int
    idx: int
    first_message: int
    last_message: int
    text: str | None
    status: str
    lane: str
    attempts: int

    @property
    def key(self) -> NodeKey:
        """The node's address ``(level, idx)``."""
        return (self.level, self.idx)

    @property
    def done(self) -> bool:
        """Whether its summary is written and usable."""
        return self.status == "done" and self.text is not None


@dataclass(frozen=True, slots=True)
class Element:
    """One part of a view, covering positions ``first..last`` (inclusive).

    ``summary`` carries its node; ``verbatim`` is older history shown word for
    word because its summary is not ready (or its leaf is not full yet);
    ``tail`` is the recent messages sent as real chat messages.
    """

    kind: Literal["summary", "verbatim", "tail"]
    first: int
    last: int
    node: SummaryNode | None = None


@dataclass(frozen=True, slots=True)
class Plan:
    """The planned view: its elements, oldest first, and the summaries' token estimate."""

    elements: tuple[Element, ...]
    summary_tokens: int
    tail_start: int
    full_leaves: int


def tail_start(messages: Sequence[MessageRecord], tail: int) -> int:
    """Position where the verbatim tail begins.

    Normally ``len - tail``, moved back to the person's message that opened
    that exchange (some providers require the first message to be the
    person's), but at most ``tail`` further; failing that, moved back only
    past tool results, so the tail never starts with a result whose call was
    summarized away (every provider rejects that). As messages are added the
    start never moves back, so a leaf once cut stays before the tail.
    """
    if not messages:
        return 0
    start = max(0, len(messages) - tail)
    for position in range(start, max(-1, start - tail - 1), -1):
        if messages[position].role == "user":
            return position
    while start > 0 and messages[start].role == "tool":
        start -= 1
    return start


def leaf_span(level: int, idx: int) -> tuple[int, int]:
    """Leaves ``[first, end)`` covered by node ``(level, idx)``."""
    return idx << level, (idx + 1) << level


def node_positions(level: int, idx: int, leaf_size: int) -> tuple[int, int]:
    """Message positions ``(first, last)`` (inclusive) covered by node ``(level, idx)``."""
    first_leaf, end_leaf = leaf_span(level, idx)
    return first_leaf * leaf_size, end_leaf * leaf_size - 1


def plan_view(nodes: Mapping[NodeKey, SummaryNode], messages: Sequence[MessageRecord], config: ContextConfig) -> Plan:
    """The view for ``messages`` given the stored ``nodes`` (which must be valid for them)."""
    start = tail_start(messages, config.tail)
    leaves = start // config.leaf_size
    elements: list[Element] = []
    tokens = 0
    p = 0
    while p < leaves:
        chosen: SummaryNode | None = None
        for level in range(leaves.bit_length(), -1, -1):
            if p % (1 << level) or p + (1 << level) > leaves:  # no node of this level starts at p
                continue
            node = nodes.get((level, p >> level))
            if node is not None and node.done:
                chosen = node
                break
        if chosen is None:
            first, last = node_positions(0, p, config.leaf_size)
            elements.append(Element("verbatim", first, last))
            p += 1
            continue
        first, last = node_positions(chosen.level, chosen.idx, config.leaf_size)
        elements.append(Element("summary", first, last, chosen))
        tokens += estimate_tokens(chosen.text or "")
        p += 1 << chosen.level
    partial = leaves * config.leaf_size
    if partial < start:
        elements.append(Element("verbatim", partial, start - 1))
    if start < len(messages):
        elements.append(Element("tail", start, len(messages) - 1))
    return Plan(tuple(elements), tokens, start, leaves)


def choose_merge(plan: Plan, nodes: Mapping[NodeKey, SummaryNode], config: ContextConfig) -> NodeKey | None:
    """The parent to create when the view is over budget, or ``None``.

    Rule (docs/context.md): when the summaries in the view exceed the budget, the oldest
    adjacent pair of finished nodes at the same level merges into its parent.
    Only siblings ``(L, 2i)``, ``(L, 2i+1)`` can merge (the address scheme);
    one merge runs per session at a time, so each merge sees the view the
    previous one left and the tree is never compressed more than needed; and
    pairs after a leaf still being summarized wait for it (a leaf that has
    failed for good is skipped, so it cannot block merging forever).
    """
    if plan.summary_tokens <= config.view_budget:
        return None
    if any(n.level > 0 and n.status == "pending" for n in nodes.values()):
        return None
    summaries: list[SummaryNode] = []
    for element in plan.elements:
        if element.kind == "summary" and element.node is not None:
            summaries.append(element.node)
        elif element.kind == "verbatim":
            leaf = nodes.get((0, element.first // config.leaf_size))
            if leaf is None or leaf.status == "pending" or leaf.attempts < config.max_attempts:
                # An older leaf is still coming: merge nothing newer yet, so the
                # oldest material is always the most compressed.
                break
    for left, right in pairwise(summaries):
        if left.level != right.level or left.idx % 2 or right.idx != left.idx + 1:
            continue
        parent = (left.level + 1, left.idx // 2)
        existing = nodes.get(parent)
        if existing is not None and existing.status == "failed" and existing.attempts >= config.max_attempts:
            continue  # this pair's merge keeps failing; try the next pair
        return parent
    return None
