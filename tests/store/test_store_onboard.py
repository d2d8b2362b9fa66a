"""Onboarding: a pure state machine from an empty store to a pack and first nodes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from exo_core.errors import BadBodyError, ConflictError
from exo_core.ledger import Ledger
from exo_core.store import Store, lint_store, verify_store
from exo_core.store.onboard import QUESTIONS, Answer, answer, apply_plan, next_question, plan, start
from store_fixtures import ledger, signer, store  # noqa: F401  (pytest fixtures)

REPO = Path(__file__).resolve().parents[2]


def _run(replies: list[Answer]):  # type: ignore[no-untyped-def]
    state = start()
    for reply in replies:
        state = answer(state, reply)
    return state


FULL = [
    Answer("onboard.name", text="Sam"),
    Answer("onboard.focus", option=2),
    Answer("onboard.length", option=1),
    Answer("onboard.tone", option=1),
    Answer("onboard.approval", option=2),
    Answer("onboard.rule", text="Never book travel without showing me the price. password: hunter2abc"),
    Answer("onboard.languages", text="English, Dutch"),
    Answer("onboard.confirm", option=1),
]


def test_questions_are_protocol_questions() -> None:
    q = next_question(start())
    assert q is not None and set(q.to_event_body()) == {"question_id", "text", "options", "allow_text"}
    assert len({q.question_id for q in QUESTIONS}) == len(QUESTIONS)


def test_interview_builds_a_store_that_lints_and_verifies(store: Store, ledger: Ledger) -> None:
    state = _run(FULL)
    assert next_question(state) is None
    written = apply_plan(store, plan(state, today="2025-03-01"), ledger=ledger)
    assert len(written) == 7
    report = lint_store(store.root)
    assert report.clean, [str(f) for f in report.findings]
    pack = (store.root / "pack.md").read_text()
    assert "Name: Sam" in pack and "[[taste/tone]]" in pack
    rule = store.read_node("rules/standing-rule")
    assert "hunter2abc" not in rule.summary and "[redacted:password]" in rule.summary
    assert store.router("taste").pins("please draft a reply") == ("taste/answer-length", "taste/tone")
    assert [e.kind for e in ledger.entries()] == ["utterance", "rule"]
    assert verify_store(store.root).ok
    with pytest.raises(ConflictError):
        apply_plan(store, plan(state))  # never over what the person already has


def test_skips_start_over_and_bad_answers() -> None:
    state = _run(FULL[:5])
    with pytest.raises(BadBodyError) as info:
        answer(state, Answer("onboard.rule", option=2))
    assert info.value.field == "option"
    with pytest.raises(BadBodyError):
        answer(state, Answer("onboard.tone", option=1))  # not the open question
    with pytest.raises(BadBodyError):
        answer(state, Answer("onboard.rule", text="   "))
    with pytest.raises(BadBodyError):
        answer(_run(FULL[:2]), Answer("onboard.length", text="free text not allowed"))
    state = answer(state, Answer("onboard.rule", option=1))
    state = answer(state, Answer("onboard.languages", option=1))
    assert answer(state, Answer("onboard.confirm", option=2)) == start()
    done = answer(state, Answer("onboard.confirm", option=1))
    ids = {n.id for n in plan(done).nodes}
    assert "rules/standing-rule" not in ids and "self/languages" not in ids


@given(st.lists(st.tuples(st.integers(-2, 7), st.one_of(st.none(), st.text(max_size=30))), max_size=30))
@settings(max_examples=200)
def test_any_reply_sequence_is_answered_or_refused(replies: list[tuple[int, str | None]]) -> None:
    state = start()
    for option, text in replies:
        q = next_question(state)
        if q is None:
            break
        try:
            state = answer(state, Answer(q.question_id, option=option if text is None else None, text=text))
        except BadBodyError as exc:
            assert exc.field in ("option", "text")
    if next_question(state) is None:
        plan(state)


def test_exo_onboard_terminal(store: Store, tmp_path: Path) -> None:
    """The terminal driver asks in order and re-asks after a bad reply."""
    replies = "Sam\n9\n2\n1\n1\n1\n1\n1\n1\n"
    env = {**os.environ, "PYTHONPATH": str(REPO), "EXO_HOME": str(tmp_path / "home")}
    cli = str(Path(__file__).with_name("exo_cli.py"))
    proc = subprocess.run([sys.executable, cli, "onboard", "--store", str(store.root)],
                          input=replies, capture_output=True, text=True, env=env, cwd=REPO, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "What should Exo call you?" in proc.stdout and "1 to 5" in proc.stdout
    assert lint_store(store.root).clean
