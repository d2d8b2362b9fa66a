"""Worked examples chosen for the message: the labelled messages nearest to it (docs/decisions.md §3).

A model decides better next to examples that look like the message it reads than next to a fixed
handful. :class:`ExamplePool` is a file of labelled messages (one JSON object a line: ``text``,
``label``, optionally ``id``, ``draft`` and ``source``, who wrote it, so a writer's messages can be left
out) that ships with the package or that the person keeps in their home; :class:`NeighbourExamples`
embeds it once, on first use, and picks for each message the
``per_option`` nearest examples *of every option* (so the prompt always shows each answer: a
prompt whose examples all say "rule" pulls a small model towards "rule"); :class:`NeighbourProvider`
wraps a model provider so each call is made with the question's examples replaced by those.

The embedder is optional: without one (no ONNX runtime, no model file) the question keeps its fixed
examples and the wrapper changes nothing. Nothing heavy is imported here; the pool is read and
embedded on the first call (or :meth:`NeighbourProvider.warm`).

:class:`NeighbourVote` is the same neighbours as a provider of its own: a similarity-weighted vote of
their labels, measured as a feature in docs/studies/signal-decisions.md.
"""

from __future__ import annotations

import asyncio
import json
import math
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from exo_core.errors import ConfigError
from exo_core.seams.decision import (
    ClosingProvider,
    DecisionProvider,
    DraftReadingProvider,
    Question,
    WarmingProvider,
)
from exo_core.seams.embedding import TextEmbedder

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "DEFAULT_SIGNAL_POOL",
    "BadExamplePool",
    "PooledExample",
    "ExamplePool",
    "NeighbourExamples",
    "NeighbourProvider",
    "NeighbourVote",
    "with_examples",
]

# The signal decision's pool that ships with the package: the benchmarks' fit data, every entry naming its source
# ("labelled", "fit172", "more"; docs/studies/signal-decisions.md).
DEFAULT_SIGNAL_POOL = Path(__file__).resolve().parent / "data" / "signal_examples.jsonl"
PER_OPTION = 2  # nearest examples of each option shown (measured on the fit pool: docs/studies/signal-decisions.md)


class BadExamplePool(ConfigError):
    """The example pool file is missing or not what it should be (the file's fault, named in the message)."""

    code = "bad_example_pool"


@dataclass(frozen=True, slots=True)
class PooledExample:
    """One labelled message of a pool; ``draft`` is the assistant's text it answered ("" when unknown);
    ``source`` names who wrote it when the file says ("" otherwise), so a part can be left out."""

    id: str
    text: str
    label: str
    draft: str = ""
    source: str = ""


class ExamplePool:
    """The labelled messages in ``path`` for ``question``, read on first use; with ``leave_out``, those whose
    ``source`` is named there are skipped (the benchmark compares the pool with and without a part)."""

    def __init__(self, path: Path, question: Question, *, leave_out: frozenset[str] = frozenset()) -> None:
        self.path = Path(path)
        self.question = question
        self.leave_out = leave_out
        self._examples: tuple[PooledExample, ...] | None = None

    def examples(self) -> tuple[PooledExample, ...]:
        """Every example, in file order; :class:`BadExamplePool` naming the file and line when one is bad."""
        if self._examples is None:
            self._examples = self._read()
        return self._examples

    def _read(self) -> tuple[PooledExample, ...]:
        try:
            lines = self.path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise BadExamplePool(
                f"cannot read the example pool {self.path}: {exc}; point [decisions] signal_examples at a "
                "JSON-lines file, or leave it unset for the one that ships with Exo"
            ) from exc
        found: list[PooledExample] = []
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            example = self._example(line, number)
            if example.source not in self.leave_out:
                found.append(example)
        labels = {example.label for example in found}
        missing = [option for option in self.question.options if option not in labels]
        if missing:
            raise BadExamplePool(
                f"the example pool {self.path} has no example labelled {', '.join(missing)}; "
                "add at least one message of every option"
            )
        return tuple(found)

    def _example(self, line: str, number: int) -> PooledExample:
        where = f"the example pool {self.path}, line {number}"
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise BadExamplePool(f"{where} is not JSON ({exc.msg}); write one JSON object a line") from exc
        if not isinstance(record, dict):
            raise BadExamplePool(f'{where} is not a JSON object; write {{"text": ..., "label": ...}}')
        text = record.get("text")
        label = record.get("label")
        draft = record.get("draft", "")
        source = record.get("source", "")
        if not isinstance(text, str) or not text.strip():
            raise BadExamplePool(f'{where} has no "text"; give the message as a non-empty string')
        if label not in self.question.options:
            raise BadExamplePool(f'{where}: "label" must be one of {", ".join(self.question.options)}, not {label!r}')
        if not isinstance(draft, str):
            raise BadExamplePool(f'{where}: "draft" must be a string when given')
        if not isinstance(source, str):
            raise BadExamplePool(f'{where}: "source" must be a string when given')
        return PooledExample(str(record.get("id", f"line{number}")), text, label, draft, source)


class NeighbourExamples:
    """For a message, the ``per_option`` pool examples of each option nearest to it by ``embedder``.

    The pool's vectors are computed once, on first use, under a lock (a decision and a warm-up may
    race for them). ``embedder=None`` means no neighbours: :meth:`choose` returns nothing and callers
    keep their fixed examples.
    """

    def __init__(self, pool: ExamplePool, *, embedder: TextEmbedder | None, per_option: int = PER_OPTION) -> None:
        if per_option < 1:
            raise ConfigError("per_option must be at least 1")
        self.pool = pool
        self.embedder = embedder
        self.per_option = per_option
        self._vectors: np.ndarray | None = None
        self._lock = threading.Lock()

    @property
    def question(self) -> Question:
        """The question the pool's labels answer."""
        return self.pool.question

    def load(self) -> None:
        """Read and embed the pool now (what the first :meth:`choose` would otherwise do)."""
        if self.embedder is None:
            return
        with self._lock:
            if self._vectors is None:
                texts = [example.text for example in self.pool.examples()]
                self._vectors = self.embedder.embed(texts)

    def similarities(self, state: str, *, exclude: str | None = None) -> list[tuple[float, PooledExample]]:
        """Every pool example with its cosine to ``state``, nearest first; ``exclude`` drops one id (a case's
        own entry when the pool is measured on itself, leave-one-out)."""
        if self.embedder is None:
            return []
        self.load()
        vectors = self._vectors
        if vectors is None:  # load() sets it; kept for the type checker's sake
            return []
        query = self.embedder.embed([state])[0]
        scores = vectors @ query
        pairs = [
            (float(score), example)
            for score, example in zip(scores.tolist(), self.pool.examples(), strict=True)
            if example.id != exclude
        ]
        pairs.sort(key=lambda pair: -pair[0])
        return pairs

    def choose(self, state: str, *, exclude: str | None = None) -> tuple[PooledExample, ...]:
        """The nearest ``per_option`` examples of each option, farthest first (the nearest is shown last,
        next to the message); empty without an embedder."""
        ranked = self.similarities(state, exclude=exclude)
        taken: dict[str, int] = {}
        chosen: list[tuple[float, PooledExample]] = []
        for score, example in ranked:
            if taken.get(example.label, 0) >= self.per_option:
                continue
            taken[example.label] = taken.get(example.label, 0) + 1
            chosen.append((score, example))
        chosen.reverse()
        return tuple(example for _score, example in chosen)


def with_examples(question: Question, examples: Sequence[PooledExample]) -> Question:
    """``question`` with ``examples`` as its worked examples (their drafts too when every one has a draft);
    ``question`` itself when there are none."""
    if not examples:
        return question
    pairs = tuple((example.text, example.label) for example in examples)
    drafts: tuple[str, ...] = ()
    if all(example.draft for example in examples):
        drafts = tuple(example.draft for example in examples)
    return replace(question, examples=pairs, example_drafts=drafts)


class NeighbourProvider:
    """A model provider whose prompt carries the message's nearest pool examples instead of fixed ones.

    Only questions of the pool's mechanism are changed. The name gains ``:nn``: its raw numbers differ
    from the fixed prompt's, so it is calibrated on its own (calibration is per provider name).
    """

    def __init__(self, inner: DecisionProvider, neighbours: NeighbourExamples) -> None:
        self.inner = inner
        self.neighbours = neighbours
        self.name = inner.name + ":nn"
        self.timeout = inner.timeout

    async def _question(self, question: Question, state: str) -> Question:
        if question.mechanism != self.neighbours.question.mechanism or self.neighbours.embedder is None:
            return question
        # The embedder runs a forward pass of its own (milliseconds): off the event loop.
        chosen = await asyncio.to_thread(self.neighbours.choose, state)
        return with_examples(question, chosen)

    async def probabilities(self, question: Question, state: str) -> Mapping[str, float]:
        """The inner provider's answer, shown the message's neighbours."""
        return await self.inner.probabilities(await self._question(question, state), state)

    async def probabilities_after(self, question: Question, state: str, draft: str) -> Mapping[str, float]:
        """As :meth:`probabilities`, with the draft, when the inner provider reads drafts."""
        asked = await self._question(question, state)
        if isinstance(self.inner, DraftReadingProvider):
            return await self.inner.probabilities_after(asked, state, draft)
        return await self.inner.probabilities(asked, state)

    async def warm(self, question: Question) -> None:
        """Embed the pool, then warm the inner provider on the prompt's part before the examples."""
        await asyncio.to_thread(self.neighbours.load)
        if isinstance(self.inner, WarmingProvider):
            bare = question
            if question.mechanism == self.neighbours.question.mechanism and self.neighbours.embedder is not None:
                bare = replace(question, examples=(), example_drafts=())
            await self.inner.warm(bare)

    async def aclose(self) -> None:
        """Close the inner provider when it holds something."""
        if isinstance(self.inner, ClosingProvider):
            await self.inner.aclose()


class NeighbourVote:
    """A provider of its own: the labels of the message's ``k`` nearest pool examples, the nearest
    weighing 1 and each other ``exp((similarity - nearest's) / temperature)``, plus ``smoothing`` per
    option so no option is ever 0. (Its settings were chosen on the fit pool, leave-one-out.)"""

    def __init__(
        self,
        neighbours: NeighbourExamples,
        *,
        k: int = 16,
        temperature: float = 0.2,
        smoothing: float = 0.2,
        timeout: float = 0.5,
    ) -> None:
        self.neighbours = neighbours
        self.k = k
        self.temperature = temperature
        self.smoothing = smoothing
        self.timeout = timeout
        self.name = "neighbours"

    def vote(self, state: str, *, exclude: str | None = None) -> dict[str, float]:
        """The weighted vote (synchronous; ``exclude`` as in :meth:`NeighbourExamples.similarities`)."""
        options = self.neighbours.question.options
        weights = dict.fromkeys(options, self.smoothing)
        nearest = self.neighbours.similarities(state, exclude=exclude)[: self.k]
        for score, example in nearest:
            weights[example.label] += math.exp((score - nearest[0][0]) / self.temperature)
        total = sum(weights.values())
        return {option: weight / total for option, weight in weights.items()}

    async def probabilities(self, question: Question, state: str) -> Mapping[str, float]:
        """The vote, for the pool's question only (an embedder is needed: without one it has no answer)."""
        if question.mechanism != self.neighbours.question.mechanism or self.neighbours.embedder is None:
            raise ConfigError(f"the neighbour vote answers {self.neighbours.question.mechanism} with an embedder only")
        return await asyncio.to_thread(self.vote, state)
