"""The core's question broker (``ask_person`` and ``question.answer``) through the real engine and hub."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from corekit import CoreHarness

from exo_core.agent.scripted import ScriptedModel
from exo_core.engine.core import Core, CoreOptions
from exo_core.seams.home import ExoHome


@pytest.fixture
async def harness(tmp_path: Path):
    opened: list[tuple[Core, CoreHarness]] = []

    async def make(replies: list[dict[str, Any]]) -> CoreHarness:
        ws = tmp_path / "ws"
        ws.mkdir(exist_ok=True)
        core = Core.open(
            ExoHome(tmp_path / f"home{len(opened)}"),
            model=ScriptedModel(replies),
            options=CoreOptions(workspace=ws, synchronous="NORMAL"),
        )
        await core.__aenter__()
        h = CoreHarness(core, timeout=20.0)
        opened.append((core, h))
        return h

    yield make
    for core, h in opened:
        await h.close()
        await core.__aexit__(None, None, None)


ASK = {
    "text": "",
    "tool_calls": [{"name": "ask_person", "arguments": {"question": "Which day?", "options": ["Monday", "Tuesday"]}}],
}


async def start_turn(h: CoreHarness) -> tuple[str, str]:
    session = (await h.ok("session.create", title="q"))["session"]["id"]
    turn = (await h.ok("turn.send", session=session, text="book it"))["turn_id"]
    return session, turn


async def test_first_answer_wins_and_the_model_reads_it(harness) -> None:
    h = await harness([ASK, {"text": "Tuesday then."}])
    session, turn = await start_turn(h)
    asked = await h.wait(lambda e: e["type"] == "question.asked")
    assert asked["body"]["options"] == ["Monday", "Tuesday"] and asked["session"] == session
    qid = asked["body"]["question_id"]
    first = await h.cmd("question.answer", question_id=qid, option=2)
    second = await h.cmd("question.answer", question_id=qid, option=1)
    assert first["ok"] and first["result"]["option"] == 2
    assert second["error"]["code"] == "conflict"
    await h.wait(lambda e: e["type"] == "turn.completed" and e["body"]["turn_id"] == turn)
    answered = h.of("question.answered")
    assert len(answered) == 1 and answered[0]["body"]["option"] == 2
    tool = [m for m in (await h.ok("session.get", session=session))["messages"] if m["role"] == "tool"][0]
    assert tool["content"] == "The person chose option 2: Tuesday"


async def test_bad_answers_are_typed_errors_and_leave_the_question_open(harness) -> None:
    h = await harness([ASK, {"text": "ok"}])
    _, turn = await start_turn(h)
    qid = (await h.wait(lambda e: e["type"] == "question.asked"))["body"]["question_id"]
    assert (await h.cmd("question.answer", question_id=qid, option=3))["error"]["code"] == "bad_body"
    assert (await h.cmd("question.answer", question_id=qid, text="whenever"))["error"]["code"] == "bad_body"
    assert (await h.cmd("question.answer", question_id=qid))["error"]["code"] == "bad_body"
    assert (await h.cmd("question.answer", question_id="q_nope", option=1))["error"]["code"] == "not_found"
    assert h.core.questions.open_questions() == [qid]
    assert (await h.cmd("question.answer", question_id=qid, option=1))["ok"]
    await h.wait(lambda e: e["type"] == "turn.completed" and e["body"]["turn_id"] == turn)


async def test_interrupt_closes_the_question(harness) -> None:
    h = await harness([ASK, {"text": "never"}])
    session, turn = await start_turn(h)
    qid = (await h.wait(lambda e: e["type"] == "question.asked"))["body"]["question_id"]
    await h.ok("turn.interrupt", session=session)
    closed = await h.wait(lambda e: e["type"] == "question.closed")
    assert closed["body"] == {"question_id": qid, "reason": "its turn ended"}
    done = await h.wait(lambda e: e["type"] == "turn.completed" and e["body"]["turn_id"] == turn)
    assert done["body"]["stop_reason"] == "interrupted"
    late = await h.cmd("question.answer", question_id=qid, option=1)
    assert late["error"]["code"] == "conflict" and "that question has closed" in late["error"]["message"]
    assert h.core.questions.open_questions() == []


async def test_free_text_question(harness) -> None:
    ask = {"text": "", "tool_calls": [{"name": "ask_person", "arguments": {"question": "Your name for the booking?"}}]}
    h = await harness([ask, {"text": "noted"}])
    session, turn = await start_turn(h)
    asked = await h.wait(lambda e: e["type"] == "question.asked")
    assert asked["body"]["allow_text"] is True and asked["body"]["options"] == []
    assert (await h.cmd("question.answer", question_id=asked["body"]["question_id"], text="  Sam  "))["ok"]
    await h.wait(lambda e: e["type"] == "turn.completed" and e["body"]["turn_id"] == turn)
    assert h.of("question.answered")[0]["body"]["text"] == "Sam"


@pytest.mark.parametrize(
    "arguments",
    [
        {"question": "text"},
        {"question": "  "},
        {"question": "Which day?", "options": ["string", "string"]},
        {"question": "question?"},
    ],
)
async def test_a_placeholder_question_is_never_shown(harness, arguments) -> None:
    ask = {"text": "", "tool_calls": [{"name": "ask_person", "arguments": arguments}]}
    h = await harness([ask, {"text": "I will pick for you."}])
    session, turn = await start_turn(h)
    await h.wait(lambda e: e["type"] == "turn.completed" and e["body"]["turn_id"] == turn)
    assert h.of("question.asked") == []
    tool = [m for m in (await h.ok("session.get", session=session))["messages"] if m["role"] == "tool"][0]
    assert "not asked:" in tool["content"], tool["content"]


async def test_a_waiting_question_says_until_when(harness) -> None:
    from device.state import local_clock_time

    h = await harness([ASK, {"text": "ok"}])
    _, turn = await start_turn(h)
    asked = await h.wait(lambda e: e["type"] == "question.asked")
    expires = asked["body"]["expires_at"]
    assert expires > asked["ts"], (expires, asked["ts"])  # 600 s after it was asked
    assert len(local_clock_time(expires)) == 5
    assert (await h.cmd("question.answer", question_id=asked["body"]["question_id"], option=1))["ok"]
    await h.wait(lambda e: e["type"] == "turn.completed" and e["body"]["turn_id"] == turn)


async def test_a_declined_question_lets_the_turn_go_on_and_cannot_be_answered_after(harness) -> None:
    h = await harness([ASK, {"text": "I will pick Monday for now."}])
    session, turn = await start_turn(h)
    qid = (await h.wait(lambda e: e["type"] == "question.asked"))["body"]["question_id"]
    assert (await h.cmd("question.answer", question_id=qid, decline=True, option=1))["error"]["code"] == "bad_body"
    declined = await h.cmd("question.answer", question_id=qid, decline=True)
    assert declined["ok"] and declined["result"]["declined"] is True and declined["result"]["option"] is None
    late = await h.cmd("question.answer", question_id=qid, option=1)
    assert late["error"]["code"] == "conflict" and "declined" in late["error"]["message"]
    await h.wait(lambda e: e["type"] == "turn.completed" and e["body"]["turn_id"] == turn)
    answered = h.of("question.answered")
    assert len(answered) == 1 and answered[0]["body"]["declined"] is True
    tool = [m for m in (await h.ok("session.get", session=session))["messages"] if m["role"] == "tool"][0]
    assert tool["content"] == "The person did not answer; go on without their answer."
