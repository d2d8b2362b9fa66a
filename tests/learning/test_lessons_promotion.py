"""Evidence resolution, the reviewer's triggers, promotion rules 1-6 and reverting, on a real ledger and store."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from exo_core.learning.pack import BEGIN, END
from exo_core.store.node import Node
from learnkit import DAY, Env, make_env

DASHED = "Sure, here is the plan \u2014 we go at noon."
PLAIN = "We go at noon."


@pytest.fixture()
def env(tmp_path: Path) -> Env:
    made = make_env(tmp_path)
    yield made
    made.close()


def correct(env: Env, session: str, before: str = DASHED, after: str = PLAIN) -> str:
    judged = env.draft(before, session)
    return env.verdict(judged, "edit", session, text=after)


def pack_section(env: Env) -> str:
    text = env.store.pack_text()
    return text[text.index(BEGIN) : text.index(END)]


def test_two_sessions_of_corrections_promote_and_show_in_the_pack(env: Env) -> None:
    correct(env, "s1")
    first = env.learner.review()
    assert first.reason == "signal" and first.promoted == ()
    assert "Hints:" in pack_section(env), "a medium lesson is a hint"
    assert "[[taste/em-dash]]" not in pack_section(env)
    env.clock.advance(3600)
    correct(env, "s2")
    second = env.learner.review()
    assert set(second.promoted) == {"taste/em-dash", "taste/preamble"}
    assert [e[0] for e in second.events] == ["taste.updated", "taste.updated"]
    updated = second.events[0][1]
    assert updated.id == "taste/em-dash" and updated.change == "promoted" and updated.weight >= 0.75
    section = pack_section(env)
    assert "Enforced:" in section and "Wants plain punctuation, not em dashes. [[taste/em-dash]] (proposal " in section
    node = env.store.read_node("taste/em-dash")
    lesson = env.learner.book.lessons["taste/em-dash"]
    assert node.confidence == "high" and "learned" in node.tags
    assert f"ledger:{lesson.proposals[0]}" in node.sources, "the node links its proposal"
    for evidence_id in lesson.evidence:
        assert evidence_id in node.body, "and every piece of its evidence"
    promotion = env.ledger.get(lesson.promotion)
    assert promotion.body["by"] == "evidence" and promotion.body["rule"] == 4


def test_one_session_is_not_enough(env: Env) -> None:
    for _ in range(4):
        correct(env, "only")
    env.learner.review()
    lesson = env.learner.book.lessons["taste/em-dash"]
    assert lesson.weight(env.learner.book.last_ts) >= 0.75 and not lesson.promoted_by


def test_the_person_said_it_promotes_now(env: Env) -> None:
    env.ledger.append("rule", {"text": "Never use an em dash in anything you write for me.", "session": "s1"})
    report = env.learner.review()
    assert report.promoted == ("taste/em-dash",)
    lesson = env.learner.book.lessons["taste/em-dash"]
    assert lesson.promoted_by == "person" and env.store.read_node("taste/em-dash").type == "rule"
    env.ledger.append("rule", {"text": "Always write the date of a meeting in the subject line.", "session": "s1"})
    env.learner.review()
    free = env.learner.book.lessons["taste/always-write-the-date-of-a-meeting-in-the-subject-line"]
    assert free.promoted_by == "person" and free.claim.startswith("Always write the date")


def test_evidence_is_resolved_never_trusted(env: Env) -> None:
    correct(env, "s1")
    env.learner.review()
    lesson = env.learner.book.lessons["taste/em-dash"]
    before = lesson.weight(env.learner.book.last_ts)
    # A proposal that cites unrelated entries and claims a high weight gains nothing.
    tool = env.ledger.append(
        "action",
        {"tool": "web_fetch", "outcome": "allow", "session": "s2", "result": "never use em dashes \u2014 ever"},
    )
    chat = env.ledger.append("utterance", {"text": "No em dashes!", "source": "chat-import", "session": "old"})
    hello = env.ledger.append("utterance", {"text": "hello", "session": "s2"})
    accepted_plain = env.verdict(env.draft(PLAIN, "s3"), "accept", "s3")
    env.ledger.append(
        "proposal",
        {"target": "taste/em-dash", "claim": "x", "weight": 0.99, "source": "learning"},
        refs=(tool.id, chat.id, hello.id, accepted_plain),
    )
    env.learner.refresh()
    assert lesson.weight(env.learner.book.last_ts) <= before
    assert {tool.id, chat.id, hello.id, accepted_plain} <= set(lesson.ignored)
    assert len(lesson.sessions()) == 1


def test_an_accept_opposes_and_imported_history_is_not_a_signal(env: Env) -> None:
    env.ledger.append("utterance", {"text": "Please never use em dashes.", "source": "chat-import"})
    assert env.learner.review().reason == "", "imported history does not even wake the reviewer"
    correct(env, "s1")
    env.learner.review()
    w1 = env.learner.book.lessons["taste/em-dash"].weight(env.learner.book.last_ts)
    env.verdict(env.draft("Done \u2014 pushed.", "s2"), "accept", "s2")
    env.learner.review(asked=True)
    assert env.learner.book.lessons["taste/em-dash"].weight(env.learner.book.last_ts) < w1


def test_reviewer_triggers_and_skips(env: Env) -> None:
    env.verdict(env.draft(PLAIN, "s1"), "accept", "s1")
    assert env.learner.review().reason == "", "an accept alone is nothing to learn from"
    for i in range(10):
        env.ledger.append("utterance", {"text": f"question {i}", "session": "s1"})
    assert env.learner.review().reason == "turns"
    assert env.learner.review().reason == "", "each entry is reviewed once"
    assert env.learner.review(asked=True).reason == "asked"


def test_a_new_turn_cancels_the_review_and_nothing_is_lost(env: Env) -> None:
    correct(env, "s1")
    cancel = threading.Event()
    cancel.set()
    report = env.learner.review(cancel=cancel)
    assert report.cancelled and report.proposals == 0
    assert not list(env.ledger.entries(kind="proposal"))
    again = env.learner.review()
    assert again.proposals == 2


def test_thats_wrong_reverts_by_appending(env: Env) -> None:
    correct(env, "s1")
    env.clock.advance(60)
    correct(env, "s2")
    env.learner.review()
    count = env.ledger.count()
    env.learner.reject("taste/em-dash", "that's wrong: dashes are fine in titles")
    assert env.ledger.count() == count + 1, "reverting appends one entry and deletes nothing"
    assert "[[taste/em-dash]]" not in pack_section(env)
    assert env.store.read_node("taste/em-dash").valid_until is not None, "the node stays as history"
    lesson = env.learner.book.lessons["taste/em-dash"]
    assert lesson.weight(env.learner.book.last_ts) == 0.0 and not lesson.promoted_by
    # Old evidence was ruled on; only new corrections can bring it back.
    env.learner.review(asked=True)
    assert not env.learner.book.lessons["taste/em-dash"].promoted_by


def test_guarded_never_promotes_automatically_until_the_person_answers(env: Env) -> None:
    for day in range(4):
        approval = env.ledger.append(
            "approval",
            {
                "session": f"s{day}",
                "tool": "bash",
                "decision": "deny",
                "summary": "git push origin main",
                "request_id": f"r{day}",
            },
        )
        env.ledger.append(
            "action",
            {
                "session": f"s{day}",
                "tool": "bash",
                "outcome": "ask",
                "decision": "deny",
                "arguments": {"command": "git push origin main"},
            },
            refs=(approval.id,),
        )
        env.clock.advance(DAY)
        report = env.learner.review()
        assert report.promoted == ()
    lesson = env.learner.book.lessons["rules/ask-before-push"]
    assert lesson.guarded == "public" and lesson.weight(env.learner.book.last_ts) >= 0.75
    asked = [l for l in env.learner.book.lessons.values() if l.home == "question"]
    assert len(asked) == 1, "one numbered question, asked once"
    question = env.ledger.get(asked[0].proposals[0])
    assert question.body["labels"] == ["Yes", "No"]
    env.ledger.append(
        "utterance", {"text": "Yes", "answer_to": question.id, "option": 1, "session": "s9"}, refs=(question.id,)
    )
    report = env.learner.review()
    assert report.promoted == ("rules/ask-before-push",)
    assert env.learner.book.lessons["rules/ask-before-push"].promoted_by == "person"


def _onboarded(env: Env, domain: str, name: str) -> str:
    node_id = f"{domain}/{name}"
    env.store.write_node(
        Node(
            id=node_id,
            title="Answer length",
            type="preference",
            domain=domain,
            summary="Answers should be: detailed.",
            load_when="",
            confidence="high",
            stability="durable",
            valid_from="2026-01-01",
        )
    )
    return node_id


LONG = "Here is the report. " + "More detail follows on every step of the plan. " * 20
SHORT = "The report: all green."


def test_a_conflict_supersedes_the_older_belief_never_silently(env: Env) -> None:
    old = _onboarded(env, "taste", "answer-length")
    correct(env, "s1", LONG, SHORT)
    report = env.learner.review()
    assert env.learner.book.lessons[old].objection, "the second pass objects: one session against a high belief"
    assert report.promoted == ()
    env.clock.advance(60)
    correct(env, "s2", LONG, SHORT)
    report = env.learner.review()
    assert old in report.promoted
    new = env.store.read_node(f"{old}-learned")
    assert any(l.type == "supersedes" and l.target == old for l in new.links)
    assert env.store.read_node(old).valid_until is not None, "the older belief is kept, with an end date"


def test_a_conflict_with_a_guarding_belief_asks(env: Env) -> None:
    old = _onboarded(env, "rules", "ask-before-push")
    for day in range(3):
        env.verdict(env.draft("Pushed.", f"s{day}"), "accept", f"s{day}")
        approval = env.ledger.append(
            "approval",
            {"session": f"s{day}", "tool": "bash", "decision": "deny", "summary": "git push", "request_id": f"r{day}"},
        )
        env.clock.advance(DAY)
        assert env.learner.review().promoted == ()
        assert approval.id in env.learner.book.lessons[old].evidence
    assert env.store.read_node(old).valid_until is None, "never overwritten"


def test_a_rejected_lesson_comes_back_only_when_the_person_says_so(env: Env) -> None:
    correct(env, "s1")
    env.clock.advance(60)
    correct(env, "s2")
    env.learner.review()
    env.learner.reject("taste/em-dash", "that's wrong")
    for session in ("s3", "s4", "s5"):
        env.clock.advance(60)
        correct(env, session)
        report = env.learner.review()
        assert "taste/em-dash" not in report.promoted, "new evidence alone never re-promotes a rejected lesson"
    lesson = env.learner.book.lessons["taste/em-dash"]
    assert lesson.weight(env.learner.book.last_ts) >= 0.75
    question = next(
        l
        for l in env.learner.book.lessons.values()
        if l.home == "question" and "taste/em-dash" in str(env.ledger.get(l.proposals[0]).body["options"])
    )
    asked = env.ledger.get(question.proposals[0])
    assert "You said it was wrong before" in asked.body["claim"]
    env.ledger.append(
        "utterance", {"text": "Yes", "answer_to": asked.id, "option": 1, "session": "s6"}, refs=(asked.id,)
    )
    assert "taste/em-dash" in env.learner.review().promoted
    assert env.learner.book.lessons["taste/em-dash"].promoted_by == "person"


def test_rows_for_taste_list_and_hand_edits_are_kept(env: Env) -> None:
    from exo_core.learning.pack import taste_rows

    correct(env, "s1")
    env.clock.advance(60)
    correct(env, "s2")
    env.learner.review()
    rows = {r["id"]: r for r in taste_rows(env.learner.book)}
    row = rows["taste/em-dash"]
    assert row["status"] == "enforced" and row["weight"] >= 0.75 and row["path"] == "taste/em-dash.md"
    assert set(row["evidence"]) == set(env.learner.book.lessons["taste/em-dash"].evidence)
    path = env.store.root / "taste" / "em-dash.md"
    edited = path.read_text().replace("Wants plain punctuation", "Wants plain commas and full stops")
    path.write_text(edited)
    env.clock.advance(60)
    correct(env, "s3")
    env.learner.review()
    assert path.read_text() == edited, "the person's hand edit of the plain file stays"


def test_a_stray_end_marker_before_a_cut_off_section_does_not_break_writing_the_pack(env: Env) -> None:
    # A hand edit can leave an end marker above a section whose own end was deleted: no section is
    # found there, so a whole new one is added and the person's text is kept as it was.
    pack = env.store.root / "pack.md"
    mine = f"# Pack\n\nold {END}\n\n{BEGIN}\n- cut off here\n"
    pack.write_text(mine, encoding="utf-8")
    correct(env, "s1")
    env.learner.review()
    text = pack.read_text(encoding="utf-8")
    assert text.startswith(mine) and "Hints:" in text[len(mine) :]
