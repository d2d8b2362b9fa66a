"""Worked examples chosen for the message (exo_core/decisions/neighbours.py): the pool file, the nearest
examples of every option, leave-one-out, the provider wrapper, and exod's set-up without an embedder."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

import pytest

from exo_core.decisions import SIGNAL, Question
from exo_core.decisions.neighbours import (
    DEFAULT_SIGNAL_POOL,
    BadExamplePool,
    ExamplePool,
    NeighbourExamples,
    NeighbourProvider,
    NeighbourVote,
    with_examples,
)
from exo_core.decisions.setup import DecisionSettings, with_neighbours
from exo_core.errors import ConfigError
from exo_core.seams.edge import EdgeKit
from exo_core.seams.home import ExoHome

from .conftest import WordEmbedder

POOL = [
    {"id": "a", "text": "the meeting is on tuesday", "label": "correction", "draft": "Thursday it is."},
    {"id": "b", "text": "the meeting was tuesday not monday", "label": "correction", "draft": "Monday then."},
    {"id": "c", "text": "tuesday meeting please", "label": "neither", "draft": "What next?"},
    {"id": "d", "text": "meeting on tuesday again", "label": "neither", "draft": "Done."},
    {"id": "e", "text": "always write dates in full", "label": "rule", "draft": "Due 3/4."},
    {"id": "f", "text": "never book early flights", "label": "rule", "draft": "A 6:00 flight."},
    {"id": "g", "text": "the meeting tuesday tuesday", "label": "correction", "draft": "Booked."},
]


def write_pool(tmp_path: Path, rows: Sequence[object], name: str = "pool.jsonl") -> Path:
    path = tmp_path / name
    lines = [row if isinstance(row, str) else json.dumps(row) for row in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def neighbours(tmp_path: Path, per_option: int = 1) -> NeighbourExamples:
    return NeighbourExamples(
        ExamplePool(write_pool(tmp_path, POOL), SIGNAL), embedder=WordEmbedder(), per_option=per_option
    )


def test_every_option_is_shown_even_when_the_nearest_all_share_one_label(tmp_path: Path) -> None:
    chosen = neighbours(tmp_path, per_option=2).choose("the meeting is on tuesday")
    labels = [example.label for example in chosen]
    assert sorted(labels) == ["correction", "correction", "neither", "neither", "rule", "rule"]
    assert chosen[-1].id == "a"  # the nearest is shown last, next to the message


def test_a_case_is_never_its_own_neighbour_leave_one_out(tmp_path: Path) -> None:
    near = neighbours(tmp_path, per_option=3)
    assert "a" in {example.id for example in near.choose("the meeting is on tuesday")}
    left_out = near.choose("the meeting is on tuesday", exclude="a")
    assert "a" not in {example.id for example in left_out}
    assert all(example.id != "a" for _score, example in near.similarities("x", exclude="a"))


def test_the_pool_is_embedded_once_and_lazily(tmp_path: Path) -> None:
    embedder = WordEmbedder()
    near = NeighbourExamples(ExamplePool(tmp_path / "not-read-yet.jsonl", SIGNAL), embedder=embedder)
    assert embedder.calls == 0  # nothing is read or embedded until a decision needs it
    near.pool.path = write_pool(tmp_path, POOL)
    near.choose("one")
    near.choose("two")
    assert embedder.calls == 3  # the pool once, then each message


def test_without_an_embedder_the_fixed_examples_stay(tmp_path: Path) -> None:
    near = NeighbourExamples(ExamplePool(write_pool(tmp_path, POOL), SIGNAL), embedder=None)
    assert near.choose("the meeting is on tuesday") == ()
    assert with_examples(SIGNAL, ()) is SIGNAL
    inner = Recording()
    asyncio.run(NeighbourProvider(inner, near).probabilities(SIGNAL, "hello"))
    assert inner.asked[0].examples == SIGNAL.examples


def test_with_examples_keeps_drafts_only_when_every_example_has_one(tmp_path: Path) -> None:
    near = neighbours(tmp_path)
    chosen = near.choose("the meeting is on tuesday")
    question = with_examples(SIGNAL, chosen)
    assert question.examples == tuple((e.text, e.label) for e in chosen)
    assert question.example_drafts == tuple(e.draft for e in chosen)
    undrafted = write_pool(tmp_path, [{k: v for k, v in row.items() if k != "draft"} for row in POOL], "bare.jsonl")
    bare = NeighbourExamples(ExamplePool(undrafted, SIGNAL), embedder=WordEmbedder()).choose("tuesday")
    assert with_examples(SIGNAL, bare).example_drafts == ()


@pytest.mark.parametrize(
    ("rows", "match"),
    [
        (['{"text": "x", "label": "rule"', *POOL], "line 1 is not JSON"),
        ([["a list"], *POOL], "line 1 is not a JSON object"),
        ([{"label": "rule"}, *POOL], 'line 1 has no "text"'),
        ([{"text": "x", "label": "maybe"}, *POOL], '"label" must be one of'),
        ([{"text": "x", "label": "rule", "draft": 3}, *POOL], '"draft" must be a string'),
        ([{"text": "x", "label": "rule", "source": 3}, *POOL], '"source" must be a string'),
        ([row for row in POOL if row["label"] != "rule"], "no example labelled rule"),
    ],
)
def test_a_bad_pool_file_is_a_typed_error_naming_the_file(tmp_path: Path, rows: list[object], match: str) -> None:
    path = write_pool(tmp_path, rows)
    with pytest.raises(BadExamplePool, match=match) as caught:
        NeighbourExamples(ExamplePool(path, SIGNAL), embedder=WordEmbedder()).choose("hello")
    assert str(path) in caught.value.message and isinstance(caught.value, ConfigError)


def test_a_missing_pool_file_is_a_typed_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(BadExamplePool, match="signal_examples") as caught:
        ExamplePool(tmp_path / "gone.jsonl", SIGNAL).examples()
    assert "gone.jsonl" in caught.value.message


def test_the_shipped_pool_is_valid_and_balanced() -> None:
    examples = ExamplePool(DEFAULT_SIGNAL_POOL, SIGNAL).examples()
    assert len(examples) >= 400 and len({e.id for e in examples}) == len(examples)
    assert len({e.text for e in examples}) == len(examples)
    assert {e.label for e in examples} == set(SIGNAL.options)
    more = [e for e in examples if e.source == "more"]  # session 9's messages, a part of their own
    assert len(more) >= 150 and all(e.draft for e in more)
    assert min(sum(e.label == option for e in more) for option in SIGNAL.options) >= 50
    older = ExamplePool(DEFAULT_SIGNAL_POOL, SIGNAL, leave_out=frozenset({"more"})).examples()
    assert len(older) == len(examples) - len(more) and not any(e.source == "more" for e in older)


def test_a_source_can_be_left_out_of_the_pool(tmp_path: Path) -> None:
    rows = [*POOL, {"id": "z", "text": "never book early flights again", "label": "rule", "source": "new"}]
    path = write_pool(tmp_path, rows)
    assert [e.id for e in ExamplePool(path, SIGNAL).examples()][-1] == "z"
    assert ExamplePool(path, SIGNAL).examples()[-1].source == "new"
    kept = ExamplePool(path, SIGNAL, leave_out=frozenset({"new"})).examples()
    assert [e.id for e in kept] == [row["id"] for row in POOL]


class Recording:
    """A provider that records the question it was asked and answers "rule"."""

    name = "fake"
    timeout = 1.0

    def __init__(self) -> None:
        self.asked: list[Question] = []
        self.warmed: list[Question] = []

    async def probabilities(self, question: Question, state: str) -> Mapping[str, float]:
        self.asked.append(question)
        return {"rule": 1.0}

    async def warm(self, question: Question) -> None:
        self.warmed.append(question)


def test_the_wrapper_shows_the_messages_neighbours_and_is_calibrated_apart(tmp_path: Path) -> None:
    inner = Recording()
    provider = NeighbourProvider(inner, neighbours(tmp_path))
    assert provider.name == "fake:nn" and provider.timeout == 1.0
    asyncio.run(provider.probabilities(SIGNAL, "never book early flights"))
    asyncio.run(provider.probabilities_after(SIGNAL, "never book early flights", "A 7:00 flight."))
    for asked in inner.asked:
        assert asked.examples[-1] == ("never book early flights", "rule")
        assert len(asked.examples) == 3
    other = Question("other", "predicate", "?", ("yes", "no"))
    asyncio.run(provider.probabilities(other, "never"))
    assert inner.asked[-1] is other  # another mechanism's question is passed through unchanged
    asyncio.run(provider.warm(SIGNAL))
    assert inner.warmed[0].examples == ()  # the head before the examples is what can be kept


def test_the_vote_leans_to_the_nearest_labels(tmp_path: Path) -> None:
    vote = NeighbourVote(neighbours(tmp_path), k=3)
    found = asyncio.run(vote.probabilities(SIGNAL, "never book early flights ever"))
    assert max(found, key=lambda o: found[o]) == "rule" and abs(sum(found.values()) - 1) < 1e-9
    assert min(found.values()) > 0


def test_exods_set_up_wraps_the_named_models_only_with_an_embedder(tmp_path: Path) -> None:
    home = ExoHome(tmp_path)
    inner = Recording()
    kit = EdgeKit(embedder=lambda _home: WordEmbedder())
    assert with_neighbours(inner, home, DecisionSettings(), model="local", edge=kit) is inner  # off by default
    both = DecisionSettings.from_config({"decisions": {"neighbours": ["local", "larger"]}})
    assert with_neighbours(inner, home, both, model="local", edge=EdgeKit()) is inner  # no embedder: fixed examples
    wrapped = with_neighbours(inner, home, both, model="larger", edge=kit)
    assert isinstance(wrapped, NeighbourProvider) and wrapped.neighbours.pool.path == DEFAULT_SIGNAL_POOL
    mine = DecisionSettings.from_config({"decisions": {"neighbours": ["local"], "signal_examples": "mine.jsonl"}})
    assert with_neighbours(inner, home, mine, model="larger", edge=kit) is inner
    assert mine.signal_pool(home) == tmp_path / "mine.jsonl"
    for bad in ({"signal_examples": 3}, {"neighbours": ["gemma"]}, {"neighbours": "local"}):
        with pytest.raises(ConfigError, match="signal_examples|neighbours"):
            DecisionSettings.from_config({"decisions": bad})


@pytest.mark.model
def test_the_local_chat_model_reads_each_messages_examples_from_the_saved_base_head(qwen: object) -> None:
    from exo_edge.decide_local import ForwardPass, LocalDecisionProvider

    assert isinstance(qwen, LocalDecisionProvider)
    pool = ExamplePool(DEFAULT_SIGNAL_POOL, SIGNAL).examples()
    first = with_examples(SIGNAL, pool[:3])
    second = with_examples(SIGNAL, pool[3:6])
    message = "No, I said Tuesday, not Thursday."

    async def run() -> tuple[list[dict[str, float]], list[ForwardPass | None]]:
        await qwen.warm(replace(SIGNAL, examples=(), example_drafts=()))
        found: list[dict[str, float]] = []
        passes: list[ForwardPass | None] = []
        for question in (first, second, first):
            found.append(dict(await qwen.probabilities(question, message)))
            passes.append(qwen.last)
        return found, passes

    found, passes = asyncio.run(run())
    assert found[0] != found[1]  # other examples, another prompt
    assert found[2] == found[0]  # the same examples again: the same numbers, whatever the cache held
    assert all(p is not None and p.mass > 0.5 for p in passes)  # the option words carry the next token
