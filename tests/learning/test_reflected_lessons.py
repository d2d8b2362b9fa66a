"""Lessons outside the feature catalog (issue 22 item 4): an edit the catalog cannot explain is queued for
the larger model's reflection; the lesson it names is weighed by the person's own corrections, promoted by
the same rules as any other, and a guarded one is never promoted unasked."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from larger_model import StandIn
from learnkit import DAY, Env, make_env

from exo_core.agent.scripted import ScriptedModel
from exo_core.learning.climb import Candidate, Decision, climb
from exo_core.learning.evalset import breaks, items_from, rule_of, rules_score, split
from exo_core.learning.lessons import valid_claim
from exo_core.learning.reflected import MAX_MARKER, grounded_marker, parse_choice, read_reflection, usable
from exo_core.learning.weights import HIGH
from exo_edge.proposal_queue import ProposalQueue, drain

TLDR = "TL;DR: the details follow below."
POST = "I will post this summary to the team channel."


def _draft(env: Env, session: str, extra: str) -> str:
    return env.draft(f"The build failed because the cache key changed.\n\n{extra}", session)


def _drain(env: Env, queue: ProposalQueue, model: object) -> None:
    report = asyncio.run(drain(queue, model, env.ledger, batch=50))  # type: ignore[arg-type]  # a ModelTransport
    assert report.stopped == "empty", report


def _setup(tmp_path: Path) -> tuple[Env, ProposalQueue]:
    queue = ProposalQueue(tmp_path / "queue.sqlite")
    return make_env(tmp_path, queue=queue), queue


def test_an_unexplained_correction_becomes_a_lesson_only_the_persons_evidence_promotes(tmp_path: Path) -> None:
    env, queue = _setup(tmp_path)
    model = StandIn()
    # Session 1: the person rejects a draft in words no catalog feature knows.
    judged = _draft(env, "s1", TLDR)
    said = env.verdict(judged, "reject", "s1", reason="Drop the TL;DR line, please.")
    report = env.learner.review()
    assert report.queued == 1 and [j.key for j in queue.pending()] == [f"explain:{said}"]
    _drain(env, queue, model)
    env.learner.refresh()
    lesson = env.learner.book.lessons["taste/avoid-tl-dr"]
    assert lesson.marker == "TL;DR" and list(lesson.evidence) == [said], "its only evidence is the person's words"
    env.learner.review(asked=True)
    assert not lesson.promoted_by, "one correction in one session: the model's word does not promote it"

    # Sessions 2-3: the same correction (now explained by the lesson, so nothing more is queued) and an edit.
    for session in ("s2", "s3"):
        env.clock.advance(DAY)
        judged = _draft(env, session, TLDR)
        env.verdict(judged, "reject", session, reason="No TL;DR, I said.")
        judged = _draft(env, session, TLDR)
        env.verdict(judged, "edit", session, text="The build failed because the cache key changed.")
        assert env.learner.review().queued == 0
    assert len(model.prompts) == 1, "the larger model was asked once"
    assert lesson.weight(env.learner.book.last_ts) >= HIGH and lesson.promoted_by == "evidence"
    assert "TL;DR" in env.store.pack_text()

    # An accept of a draft that keeps it is evidence against it, recomputed from the texts.
    judged = _draft(env, "s4", TLDR)
    env.verdict(judged, "accept", "s4")
    env.learner.review(asked=True)
    assert any(e.strength < 0 for e in lesson.evidence.values())
    queue.close()
    env.close()


def test_a_guarded_lesson_outside_the_catalog_is_asked_about_never_promoted(tmp_path: Path) -> None:
    env, queue = _setup(tmp_path)
    for n in range(5):
        session = f"s{n}"
        judged = _draft(env, session, POST)
        env.verdict(judged, "reject", session, reason="Do not post my summaries to the team channel.")
        env.learner.review()
        _drain(env, queue, StandIn())
        env.clock.advance(DAY)
    env.learner.review(asked=True)
    book = env.learner.book
    guarded = [lesson for lesson in book.lessons.values() if lesson.marker]
    assert [lesson.target.split("/")[0] for lesson in guarded] == ["rules"] and guarded[0].guarded == "public"
    assert guarded[0].weight(book.last_ts) >= HIGH and not guarded[0].promoted_by
    assert any(lesson.home == "question" and guarded[0].claim in lesson.claim for lesson in book.lessons.values())
    assert not [e for e in env.ledger.entries(kind="promotion")], "nothing promoted unasked"
    queue.close()
    env.close()


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        ('{"want": "remove", "line": 2}', "not_a_line_choice"),  # only the TL;DR line is offered
        ("LESSON: Wants no mention of the weather.\nAVOID: sunny weather", "not_a_line_choice"),
        ('{"want": "keep", "line": 1}', "not_a_line_choice"),
        ('{"want": "add", "line": 1}', "wants_something_added"),
    ],
)
def test_an_answer_the_persons_correction_does_not_support_is_recorded_and_dropped(
    tmp_path: Path, answer: str, why: str
) -> None:
    env, queue = _setup(tmp_path)
    judged = _draft(env, "s1", TLDR)
    env.verdict(judged, "reject", "s1", reason="Drop the TL;DR line, please.")
    env.learner.review()
    _drain(env, queue, ScriptedModel([{"text": answer}]))
    env.learner.refresh()
    assert not env.learner.book.marked()
    dropped = [e.body for e in env.ledger.entries(kind="decision")]
    assert [(d["decider"], d["reason"]) for d in dropped] == [("reflection", why)]
    queue.close()
    env.close()


def test_without_a_larger_model_nothing_is_queued_and_nothing_is_invented(tmp_path: Path) -> None:
    env = make_env(tmp_path)
    judged = _draft(env, "s1", TLDR)
    env.verdict(judged, "reject", "s1", reason="Drop the TL;DR line, please.")
    report = env.learner.review()
    assert report.queued == 0 and not env.learner.book.marked() and report.proposals == 0
    env.close()


def test_a_catalog_correction_is_not_sent_to_the_larger_model(tmp_path: Path) -> None:
    env, queue = _setup(tmp_path)
    judged = env.draft("The build failed. Good luck!", "s1")
    env.verdict(judged, "reject", "s1", reason="No exclamation marks please.")
    env.verdict(judged, "edit", "s1", text="The build failed.")
    assert env.learner.review().queued == 1 and queue.pending()[0].kind == "reflect"
    assert "explain" not in queue.pending()[0].inputs, "only the catalog lesson's wording is queued"
    queue.close()
    env.close()


def test_a_lesson_outside_the_catalog_passes_the_same_held_out_gate(tmp_path: Path) -> None:
    env, queue = _setup(tmp_path)
    # 24 drafts, not 12: the held-out part is the newest fifth plus a hash sample of entry ids, and the ids
    # hash the test's random signing key; with 12 drafts the gate saw too few items and failed ~1 run in 8
    # (0 of 46 with 24).
    for n in range(24):
        judged = _draft(env, "s1", TLDR if n % 2 == 0 else "Run make clean.")
        if n % 2 == 0:
            env.verdict(judged, "reject", "s1", reason="Drop the TL;DR line, please.")
        else:
            env.verdict(judged, "accept", "s1")
        env.clock.advance(600)
        env.learner.review()
        _drain(env, queue, StandIn())
    env.learner.refresh()
    book = env.learner.book
    lesson = book.lessons["taste/avoid-tl-dr"]
    assert not lesson.promoted_by, "one session: rule 4 waits"
    rule = rule_of(lesson)
    assert rule == "re:(?<![a-z0-9])TL;DR" and breaks(rule, TLDR) and not breaks(rule, "Run make clean.")
    final, decisions = climb(
        frozenset(), [Candidate(frozenset({rule}), lesson.target)], split(items_from(book)), rules_score
    )
    assert [(d.change, d.kept) for d in decisions] == [(lesson.target, True)] and d_held(decisions) is not None
    assert final == frozenset({rule})
    queue.close()
    env.close()


def d_held(decisions: list[Decision]) -> float | None:
    """The held-out score of the only decision (None when the gate never opened the held-out set)."""
    return decisions[0].held_out


@given(st.text(max_size=400), st.integers(min_value=0, max_value=6))
def test_parse_choice_gives_a_listed_number_or_nothing(text: str, count: int) -> None:
    chosen = parse_choice(text, count)
    assert chosen is None or chosen in [("add", 0)] + [("remove", n) for n in range(1, count + 1)]


def test_parse_choice_reads_the_tool_arguments_and_plain_numbers() -> None:
    assert parse_choice('{"want": "remove", "line": 2}', 3) == ("remove", 2)
    assert parse_choice('{"line": 2}', 3) == ("remove", 2) and parse_choice("Line 3.", 3) == ("remove", 3)
    assert parse_choice('{"want": "add", "line": 1}', 3) == ("add", 0) and parse_choice("Add it.", 3) == ("add", 0)
    assert parse_choice('{"line": 4}', 3) is None and parse_choice("none", 3) is None
    assert parse_choice('{"line": true}', 3) is None


_WORDS = st.sampled_from(["Fun", "fact:", "the", "summaries", "summary", "AI", "a", "skipped", "day.", "x" * 90, "é"])


@given(
    st.lists(st.tuples(_WORDS, st.sampled_from([" ", "  ", ", ", "\t", " - "])), max_size=30),
    st.lists(_WORDS, max_size=6),
    st.text(max_size=40),
)
def test_a_derived_marker_is_always_words_of_the_chosen_line(
    parts: list[tuple[str, str]], named: list[str], noise: str
) -> None:
    line = "".join(word + sep for word, sep in parts).strip()
    said = " ".join(named) + " " + noise
    marker = grounded_marker(line, {"draft": line, "reason": said})
    assert len(marker) <= MAX_MARKER and (not marker or marker in line)
    if marker:
        assert usable(marker, {"verdict": "reject", "draft": line, "after": "", "reason": said}) in (
            "",
            "a_catalog_feature",
            "not_a_marker",
        ), "a marker from words the person named is supported by their words"


def test_the_marker_is_the_lines_words_the_person_named_compared_by_stem() -> None:
    draft = "Your rent went out on the 1st.\nShall I post this summary to the team channel?"
    inputs = {
        "verdict": "reject",
        "draft": draft,
        "after": "",
        "reason": "do not offer to post summaries to the team channel",
        "removed": draft.splitlines(),
    }
    read = read_reflection('{"want": "remove", "line": 1}', inputs)  # the one line their words name
    assert (read.marker, read.why) == ("post this summary to the team channel", "")
    assert valid_claim(read.claim)
    edit = {"verdict": "edit", "draft": "A.\nThis is an automated update.", "after": "A.", "reason": ""}
    edit["removed"] = ["This is an automated update."]
    assert read_reflection('{"line": 1}', edit).marker == "This is an automated update"
