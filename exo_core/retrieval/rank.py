"""Fusion, filters and graph expansion (docs/retrieval.md, stages 3 to 5), as pure functions.

* :func:`fuse` — the two candidate lists made one. By default score-aware:
  each list's scores divided by its own top score, so no BM25 value is ever
  compared with a cosine, and a weighted sum (BM25 0.225, embeddings 0.775,
  chosen on the development halves; docs/benchmarks.md §5) in which each
  list's weight is scaled by its confidence: how far its top stands above
  what a document it does not hold can score. With ``k`` it is the plain
  reciprocal rank fusion, ``weight / (k + rank)`` with k = :data:`RRF_K`.
  :data:`KIND_PRIOR` then gives nodes 1.5 times the weight of items and turns.
* :func:`context` — each fused turn lends a share of its score to the turns
  next to it in its session (:data:`CONTEXT`): what a question needs often
  sits beside the turn that matched its words (an answer follows its question).
* :func:`keep` — drop beliefs past ``valid_until`` unless the query is about
  the past, private nodes for agent scopes, and turns of the current session.
* :func:`pin_only` — a node tagged :data:`PIN_ONLY` comes only when a load
  rule pins it, never by similarity (the generated ``exo/abilities`` note).
* :func:`expand` — one hop from the top 8 nodes: a superseded node is swapped
  for its successor, a ``contradicts`` link pulls in the other side, other
  links add their target at the parent's score times :data:`LINK_WEIGHTS`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence

from exo_core.retrieval.docs import Doc
from exo_core.store.node import PIN_ONLY

__all__ = [
    "fuse",
    "context",
    "CONTEXT",
    "KIND_PRIOR",
    "LINK_WEIGHTS",
    "RRF_K",
    "about_past",
    "keep",
    "pin_only",
    "PIN_ONLY",
    "expand",
    "ranked",
]

RRF_K = 60
CONTEXT = (0.5, 0.25)  # share of a turn's score lent to the turns 1 and 2 places away (tune halves)
KIND_PRIOR: Mapping[str, float] = {"node": 1.5, "item": 1.0, "turn": 1.0}
LINK_WEIGHTS: Mapping[str, float] = {
    "explains": 0.5,
    "evidence-for": 0.5,
    "applies-to": 0.5,
    "part-of": 0.4,
    "instance-of": 0.4,
    "see-also": 0.3,
    "derived-from": 0.3,
}
EXPAND_FROM = 8
_PAST = re.compile(
    r"\b(used to|previous(ly)?|before|formerly|former|in the past|earlier|originally|ago|"
    r"back then|no longer|anymore|any more|history|old|last (year|month|week|time))\b",
    re.IGNORECASE,
)


def fuse(
    lists: Sequence[Sequence[tuple[str, float]]],
    *,
    weights: Sequence[float],
    depth: int,
    k: int | None = None,
    ended: Sequence[bool] | None = None,
) -> dict[str, float]:
    """Fused scores of the top ``depth`` of each ranked ``(id, score)`` list (best first).

    Without ``k``: ``sum weight * (1 - floor) * score / top`` over the lists.
    A candidate missing from a list counts the list's floor: its last score
    read (over its top), or 0 when the list was read to its end (``ended``:
    its search returned fewer than asked). ``1 - floor`` is the list's
    confidence: a flat list, whose last score is nearly its first, cannot
    tell its candidates apart and counts less; the lists are read deeper than
    ``depth`` so the floor means something and most candidates have both.
    With ``k``: reciprocal rank fusion over the top ``depth`` of each list.
    """
    scores = dict.fromkeys((i for ranked_list in lists for i, _ in ranked_list[:depth]), 0.0)
    for ranked_list, weight, end in zip(lists, weights, ended or [False] * len(lists), strict=True):
        head = ranked_list[:depth] if k is not None else ranked_list
        if not head or (k is None and head[0][1] <= 0):
            continue  # an empty list, or one with no positive score, has no evidence to add
        top = head[0][1]
        value = {i: 1 / (k + r) if k is not None else max(s, 0.0) / top for r, (i, s) in enumerate(head, 1)}
        floor = 0.0 if k is not None or end else max(head[-1][1], 0.0) / top
        for doc_id in scores:
            scores[doc_id] += weight * (1 - floor) * value.get(doc_id, floor)
    return scores


def context(
    scores: Mapping[str, float], sessions: Mapping[str, Sequence[str]], shares: Sequence[float] = CONTEXT
) -> dict[str, float]:
    """``scores`` with each scored turn's neighbours raised by ``shares[d - 1]`` times its score.

    ``sessions`` holds the turn ids of each session, in order; a turn ``d``
    places away in the same session borrows (so a turn between two matching
    turns borrows from both, and a neighbour with no score of its own joins
    the candidates). Turns of other sessions, nodes and items borrow nothing.
    """
    out = dict(scores)
    for turns in sessions.values():
        for n, turn in enumerate(turns):
            if turn not in scores:
                continue
            for m in range(max(n - len(shares), 0), min(n + len(shares) + 1, len(turns))):
                if m != n:
                    out[turns[m]] = out.get(turns[m], 0.0) + shares[abs(m - n) - 1] * scores[turn]
    return out


def ranked(scores: Mapping[str, float]) -> list[tuple[str, float]]:
    """Scores as a list, best first, ties broken by id (so rankings are reproducible)."""
    return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))


def about_past(query: str) -> bool:
    """True when the query asks about the past ("used to", "previously", "last year", …)."""
    return _PAST.search(query) is not None


def keep(doc: Doc, *, today: str, past: bool, scope: str, session: str | None) -> bool:
    """Whether ``doc`` may be shown for this query, scope and session."""
    if doc.kind != "node":
        return doc.kind != "turn" or session is None or doc.session != session
    return not (doc.private and scope != "person") and (past or doc.valid_until is None or today < doc.valid_until)


def pin_only(doc: Doc) -> bool:
    """True for a node that only a load rule brings into a prompt (tagged :data:`PIN_ONLY`).

    The note of what Exo can do is one (exo_core/store/abilities.py): in a small store every node
    is among the nearest to any question, and read for "Read the file notes.txt." it would change
    a file request it has nothing to do with (docs/models.md, "The base prompt").
    """
    return doc.kind == "node" and PIN_ONLY in doc.tags.split()


def expand(
    scores: dict[str, float],
    docs: Mapping[str, Doc],
    links: Mapping[str, Sequence[tuple[str, str]]],
    ok: Callable[[str], bool] = lambda _id: True,
    *,
    past: bool = False,
) -> dict[str, float]:
    """One-hop graph expansion from the top :data:`EXPAND_FROM` nodes; returns new scores.

    ``links`` holds every node's outgoing links (the reverse directions of
    ``supersedes`` and ``contradicts`` are derived from it); ``ok`` says whether
    a target passes the filters (one that does not is not added). A query
    about the ``past`` keeps a superseded node beside its successor.
    """
    successor: dict[str, str] = {}
    contra: dict[str, set[str]] = {}
    for source, out in links.items():
        for kind, target in out:
            if kind == "supersedes":
                successor.setdefault(target, source)
            elif kind == "contradicts":
                contra.setdefault(source, set()).add(target)
                contra.setdefault(target, set()).add(source)
    out_scores = dict(scores)
    top = [i for i, _ in ranked(scores) if docs.get(i) is not None and docs[i].kind == "node"][:EXPAND_FROM]

    def lift(target: str, score: float) -> None:
        if ok(target) and score > out_scores.get(target, 0.0):
            out_scores[target] = score

    for node_id in top:
        score = scores[node_id]
        newer, hops = successor.get(node_id), 0
        while newer in successor and hops < EXPAND_FROM:  # a chain of replacements: go to the newest
            newer, hops = successor[newer], hops + 1
        if newer is not None and ok(newer):
            if not past:
                out_scores.pop(node_id, None)
            lift(newer, score)
        for other in sorted(contra.get(node_id, ())):
            lift(other, score * 0.99)
        for kind, target in links.get(node_id, ()):
            if kind in LINK_WEIGHTS:
                lift(target, score * LINK_WEIGHTS[kind])
    return out_scores
