"""Scoring retrieval on LoCoMo and LongMemEval files (``exo bench retrieval``).

The three systems share the pipeline's own parts: ``bm25`` is
:class:`exo_core.retrieval.DocIndex` (FTS5, the docs/retrieval.md column weights, an index
per conversation or per question), ``embed`` the int8 embedder and the flat
int8 scan of :mod:`exo_edge.vectors`, and ``fused`` their fusion
(:func:`exo_core.retrieval.rank.fuse`) with the settings of
:class:`exo_core.retrieval.RetrievalSettings`, over the same list depth as the
pipeline (``depth * OVERFETCH`` read, the top ``depth`` of each fused), then
the pipeline's neighbouring-turn stage (:func:`exo_core.retrieval.rank.context`,
turns in their order in the file) where turns are ranked (LoCoMo; LongMemEval
ranks sessions, so the stage has nothing to move there). ``bm25`` and ``embed``
are the plain lists, without the stage.

* **LoCoMo**: each conversation is one person's past; every turn a document
  (``"<speaker>: <text>"``, plus ``[image: <caption>]`` when the turn shared
  a photo), its ``dia_id`` the document id. For each question the turns are
  ranked; hit@k (an evidence turn in the top k) and recall@k (the share of
  evidence turns in the top k) are averaged, categories 1–4 and 5 apart.
* **LongMemEval**: each question is its own haystack. The *user* turns of
  its sessions are the documents (the role whose words the person said; see
  docs/retrieval.md); each system ranks sessions by their best turn (a
  session's score is its best turn's), and the fusion fuses those session
  lists. any@k and all@k
  over the non-abstention questions.

Splits: :func:`split` sorts ids (LoCoMo ``sample_id``, LongMemEval
``question_id``) and gives even positions to ``tune`` and odd ones to
``holdout``. Vectors are cached by text hash under the shared cache
(``~/.cache/exo/embeddings``), so a text is embedded once per model.
"""

from __future__ import annotations

import hashlib
import json
import lzma
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from exo_core.errors import UsageError
from exo_core.retrieval import Doc, DocIndex, RetrievalSettings
from exo_core.retrieval.pipeline import OVERFETCH
from exo_core.retrieval.rank import context, fuse, ranked

__all__ = [
    "Turn",
    "Case",
    "bench_ranker",
    "run_benchmarks",
    "embedding_cache",
    "load_locomo",
    "load_longmemeval",
    "split",
    "Ranker",
    "score_locomo",
    "score_longmemeval",
    "SYSTEMS",
    "SPLITS",
]

SYSTEMS = ("bm25", "embed", "fused")
SPLITS = ("all", "tune", "holdout")


@dataclass(frozen=True, slots=True)
class Turn:
    """One document of a haystack: its id, the session it belongs to and its text."""

    id: str
    session: str
    text: str


@dataclass(frozen=True, slots=True)
class Case:
    """One question over one haystack with its gold ids (turn ids for LoCoMo, session ids for LongMemEval)."""

    group: str
    question: str
    gold: frozenset[str]
    label: str


def _read_json(path: Path) -> Any:
    try:
        raw = lzma.open(path).read() if path.suffix == ".xz" else path.read_bytes()
        return json.loads(raw)
    except (OSError, lzma.LZMAError, ValueError) as exc:
        raise UsageError(f"{path}: cannot read a JSON benchmark file ({exc})") from exc


def split(ids: Sequence[str], which: str) -> set[str]:
    """The ids of one half: sorted, even positions ``tune``, odd ``holdout``; ``all`` keeps every id."""
    if which not in SPLITS:
        raise UsageError(f"split must be one of {', '.join(SPLITS)}")
    ordered = sorted(set(ids))
    return {i for n, i in enumerate(ordered) if which == "all" or (n % 2 == 0) == (which == "tune")}


def load_locomo(path: Path, which: str = "all") -> tuple[dict[str, list[Turn]], list[Case]]:
    """Haystacks (one per conversation) and cases from a LoCoMo-format file."""
    data = _read_json(path)
    if not isinstance(data, list):
        raise UsageError(f"{path}: a LoCoMo file is a list of samples")
    keep = split([str(s.get("sample_id", n)) for n, s in enumerate(data)], which)
    stacks: dict[str, list[Turn]] = {}
    cases: list[Case] = []
    for n, sample in enumerate(data):
        group = str(sample.get("sample_id", n))
        if group not in keep:
            continue
        turns = []
        for key, value in sample["conversation"].items():
            if key.startswith("session_") and isinstance(value, list):
                for t in value:
                    text = f"{t['speaker']}: {t['text']}"
                    if t.get("blip_caption"):
                        text += f" [image: {t['blip_caption']}]"
                    turns.append(Turn(t["dia_id"], key, text))
        stacks[group] = turns
        for qa in sample["qa"]:
            gold = frozenset(e.strip() for ev in qa.get("evidence", []) for e in ev.split(";") if e.strip())
            if gold:
                cases.append(Case(group, qa["question"], gold, "cat5" if qa["category"] == 5 else "cat1-4"))
    return stacks, cases


def load_longmemeval(path: Path, which: str = "all") -> tuple[dict[str, list[Turn]], list[Case]]:
    """One haystack per non-abstention question (its sessions' user turns) from a LongMemEval-format file."""
    data = _read_json(path)
    if isinstance(data, list):  # the original per-question layout: sessions inline
        sessions: dict[str, Any] = {}
        for q in data:
            sessions.update(zip(q["haystack_session_ids"], q["haystack_sessions"], strict=True))
        data = {"sessions": sessions, "questions": data}
    questions = [q for q in data["questions"] if not q["question_id"].endswith("_abs")]
    keep = split([q["question_id"] for q in questions], which)
    stacks: dict[str, list[Turn]] = {}
    cases = []
    for q in questions:
        if q["question_id"] not in keep:
            continue
        stacks[q["question_id"]] = [
            Turn(f"{sid}#{n}", sid, t["content"])
            for sid in q["haystack_session_ids"]
            for n, t in enumerate(data["sessions"][sid])
            if t["role"] == "user" and t["content"].strip()
        ]
        cases.append(Case(q["question_id"], q["question"], frozenset(q["answer_session_ids"]), q["question_type"]))
    return stacks, cases


class Ranker:
    """The three systems over one haystack at a time; vectors come from a text-hash cache."""

    def __init__(self, vectors: Any | None, settings: RetrievalSettings = RetrievalSettings()) -> None:
        self.vectors = vectors  # exo_edge.vectors.VectorIndex keyed by text hash, or None (BM25 only)
        self.settings = settings
        self._stack: list[Turn] = []
        self._index: DocIndex | None = None
        self._matrix: Any = None
        self._sessions: dict[str, list[str]] = {}  # session → its turn ids in order, for the context stage

    def load(self, turns: list[Turn]) -> None:
        """Index one haystack (a fresh in-memory FTS5 index, and its int8 rows)."""
        import numpy as np

        if self._index is not None:
            self._index.close()
        self._stack = turns
        self._sessions = {}
        for t in turns:
            self._sessions.setdefault(t.session, []).append(t.id)
        self._index = DocIndex(":memory:")
        self._index.sync(Doc(id=t.id, kind="turn", body=t.text, session=t.session) for t in turns)
        if self.vectors is not None:
            hashes = [_hash(t.text) for t in turns]
            self.vectors.sync([(h, h, t.text) for h, t in zip(hashes, turns, strict=True)], prune=False)
            mat = self.vectors.vectors(hashes)
            norms = np.linalg.norm(mat.astype(np.float32), axis=1)
            norms[norms == 0] = 1.0
            self._matrix = (mat, norms)

    def rank(self, question: str, depth: int, unit: Callable[[str], str] | None = None) -> dict[str, list[str]]:
        """Ids, best first, for each system available; with ``unit``, each list is first mapped to
        units (LongMemEval: turn → session, a session ranked and scored at its best turn) and fused as units."""
        from exo_edge.vectors import top_k

        assert self._index is not None

        def units(scored: list[tuple[str, float]]) -> list[tuple[str, float]]:
            best: dict[str, float] = {}
            for doc_id, score in scored:  # best first, so a unit's first turn is its best
                best.setdefault(unit(doc_id) if unit else doc_id, score)
            return list(best.items())

        lists = {"bm25": units(self._index.search(question, depth))}
        if self.vectors is not None:
            q = self.vectors.embedder.embed([question])[0]
            lists["embed"] = units(top_k([t.id for t in self._stack], self._matrix[0], self._matrix[1], q, depth))
            pool = self.settings.depth * OVERFETCH  # what the pipeline reads; a list no longer than that ended
            heads = [
                lists[n][:pool] if w else [] for n, w in zip(("bm25", "embed"), self.settings.weights, strict=True)
            ]
            fused = fuse(
                heads,
                weights=self.settings.weights,
                depth=self.settings.depth,
                k=self.settings.rrf_k,
                ended=[len(lists["bm25"]) <= pool, len(lists["embed"]) <= pool],
            )
            if unit is None:
                fused = context(fused, self._sessions, self.settings.context)
            return {name: [i for i, _ in scored] for name, scored in lists.items()} | {
                "fused": [i for i, _ in ranked(fused)]
            }
        return {"bm25": [i for i, _ in lists["bm25"]]}


def embedding_cache(embedder: Any) -> Any:
    """The shared text-hash vector cache for ``embedder`` (``<cache>/embeddings/<model id>.sqlite``)."""
    from exo_edge.fetch import cache_root
    from exo_edge.vectors import VectorIndex

    return VectorIndex(cache_root() / "embeddings" / (embedder.model_id.replace(":", "_") + ".sqlite"), embedder)


def bench_ranker(home: Any = None, settings: RetrievalSettings = RetrievalSettings()) -> Ranker:
    """A ranker with the home's int8 embedder and the shared cache; BM25 only when the embedder is absent."""
    from exo_edge.embedder import OnnxEmbedder

    embedder = OnnxEmbedder.from_home(home)
    return Ranker(embedding_cache(embedder) if embedder is not None else None, settings)


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()[:32]


def _mean(values: list[float]) -> float:
    return round(sum(values) / len(values), 4) if values else 0.0


def _run(
    stacks: dict[str, list[Turn]],
    cases: list[Case],
    ranker: Ranker,
    depth: int,
    score: Callable[[Case, list[str]], dict[str, float]],
    unit: Callable[[str], str] | None = None,
) -> dict[str, dict[str, list[dict[str, float]]]]:
    rows: dict[str, dict[str, list[dict[str, float]]]] = {}
    for group in stacks:
        ranker.load(stacks[group])
        for case in cases:
            if case.group != group:
                continue
            for system, ids in ranker.rank(case.question, depth, unit).items():
                rows.setdefault(system, {}).setdefault(case.label, []).append(score(case, ids))
    return rows


def score_locomo(stacks: dict[str, list[Turn]], cases: list[Case], ranker: Ranker) -> dict[str, Any]:
    """``{system: {"cat1-4": {hit@5, hit@10, recall@5, recall@10}, "cat5": {...}}}``."""

    def one(case: Case, ids: list[str]) -> dict[str, float]:
        out = {}
        for k in (5, 10):
            found = len(case.gold & set(ids[:k]))
            out[f"hit@{k}"] = float(found > 0)
            out[f"recall@{k}"] = found / len(case.gold)
        return out

    rows = _run(stacks, cases, ranker, 50, one)
    return {
        s: {
            label: {m: _mean([r[m] for r in rs]) for m in ("hit@5", "hit@10", "recall@5", "recall@10")}
            for label, rs in sorted(by.items())
        }
        for s, by in rows.items()
    }


def score_longmemeval(stacks: dict[str, list[Turn]], cases: list[Case], ranker: Ranker) -> dict[str, Any]:
    """``{system: {any@1, any@5, any@10, all@5, all@10}}`` at session level (sessions ranked by best turn)."""

    def one(case: Case, sessions: list[str]) -> dict[str, float]:
        out = {f"any@{k}": float(bool(case.gold & set(sessions[:k]))) for k in (1, 5, 10)}
        out |= {f"all@{k}": float(case.gold <= set(sessions[:k])) for k in (5, 10)}
        return out

    rows = _run(stacks, cases, ranker, 1000, one, lambda turn: turn.split("#", 1)[0])
    metrics = ("any@1", "any@5", "any@10", "all@5", "all@10")
    out: dict[str, Any] = {}
    for system, by in rows.items():
        every = [r for rs in by.values() for r in rs]
        out[system] = {m: _mean([r[m] for r in every]) for m in metrics}
    return out


def run_benchmarks(home: Any, *, locomo: Path | None, longmemeval: Path | None, which: str) -> dict[str, Any]:
    """``exo bench retrieval``: each given data set's ``which`` half, scored with the home's ranker.

    The halves and the metrics are docs/retrieval.md's.
    """
    ranker = bench_ranker(home)
    out: dict[str, Any] = {}
    if locomo is not None:
        out["locomo"] = score_locomo(*load_locomo(locomo, which), ranker)
    if longmemeval is not None:
        out["longmemeval"] = score_longmemeval(*load_longmemeval(longmemeval, which), ranker)
    return out
