"""The agent loop through the real engine, hub and sessions database, with scripted models."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from corekit import CoreHarness

from exo_core.agent.loop import LoopSettings
from exo_core.agent.scripted import ScriptedModel
from exo_core.agent.seams import RiskGate
from exo_core.engine.core import Core, CoreOptions
from exo_core.errors import RetryableModelError
from exo_core.seams.home import ExoHome
from exo_core.seams.model import Finish, ModelRequest, TextDelta


class FakeClock:
    """Wall time from the system, sleeps recorded and skipped."""

    def __init__(self) -> None:
        self.slept: list[float] = []

    def now(self) -> float:
        import time

        return time.time()

    def monotonic(self) -> float:
        import time

        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)


@pytest.fixture
async def make(tmp_path: Path):
    opened: list[tuple[Core, CoreHarness]] = []

    async def factory(model: Any, **opts: Any) -> CoreHarness:
        ws = tmp_path / "ws"
        ws.mkdir(exist_ok=True)
        core = Core.open(
            ExoHome(tmp_path / f"home{len(opened)}"),
            model=model,
            options=CoreOptions(workspace=ws, synchronous="NORMAL", **opts),
        )
        await core.__aenter__()
        h = CoreHarness(core)
        opened.append((core, h))
        return h

    yield factory
    for core, h in opened:
        await h.close()
        await core.__aexit__(None, None, None)


async def new_session(h: CoreHarness) -> str:
    return (await h.ok("session.create", title="t"))["session"]["id"]


async def test_retryable_errors_are_retried_with_backoff_before_output(make) -> None:
    clock = FakeClock()
    h = await make(ScriptedModel([{"error": "retryable", "times": 2, "then": {"text": "fine"}}]), clock=clock)
    s = await new_session(h)
    t = (await h.ok("turn.send", session=s, text="hi"))["turn_id"]
    done = await h.turn_done(t)
    assert done["body"]["stop_reason"] == "end"
    assert clock.slept == [0.5, 1.0]
    assert [e["body"]["text"] for e in h.of("message.delta")] == ["fine"]


class ShowsThenFails:
    """A transport that streams some text, then fails transiently."""

    def __init__(self) -> None:
        self.calls = 0

    async def stream(self, request: ModelRequest) -> AsyncIterator[Any]:
        self.calls += 1
        yield TextDelta("partial ")
        raise RetryableModelError("connection reset")
        yield Finish()  # pragma: no cover


async def test_no_retry_once_text_was_shown_and_the_turn_fails_soft(make) -> None:
    model = ShowsThenFails()
    h = await make(model, clock=FakeClock())
    s = await new_session(h)
    t = (await h.ok("turn.send", session=s, text="hi"))["turn_id"]
    done = await h.turn_done(t)
    assert done["body"]["stop_reason"] == "error" and "connection reset" in done["body"]["error"]
    assert model.calls == 1
    messages = (await h.ok("session.get", session=s))["messages"]
    assert messages[-1]["content"] == "partial " and messages[-1]["status"] == "interrupted"
    # The session is not hung: a new turn runs.
    t2 = (await h.ok("turn.send", session=s, text="again"))["turn_id"]
    assert (await h.turn_done(t2))["body"]["stop_reason"] == "error"


async def test_iteration_cap_stops_with_a_notice(make) -> None:
    loop_call = {"text": "", "tool_calls": [{"name": "read_file", "arguments": {"path": "missing.txt"}}]}
    h = await make(ScriptedModel([loop_call] * 10), settings=LoopSettings(max_iterations=3))
    s = await new_session(h)
    t = (await h.ok("turn.send", session=s, text="loop"))["turn_id"]
    assert (await h.turn_done(t))["body"]["stop_reason"] == "iteration_cap"
    assert any("3 tool rounds" in e["body"]["text"] for e in h.of("notice"))
    assert len(h.of("tool.completed")) == 3
    assert all(not e["body"]["ok"] for e in h.of("tool.completed"))  # a failing tool is a result, not a crash


async def test_interrupt_keeps_partial_text_marked(make) -> None:
    h = await make(ScriptedModel([{"text": "a" * 400, "chunk": 2, "delay": 0.01}]))
    s = await new_session(h)
    t = (await h.ok("turn.send", session=s, text="talk"))["turn_id"]
    await h.wait(lambda e: e["type"] == "message.delta")
    result = await h.ok("turn.interrupt", session=s)
    assert result == {"interrupted": True, "turn_id": t}
    assert (await h.turn_done(t))["body"]["stop_reason"] == "interrupted"
    last = (await h.ok("session.get", session=s))["messages"][-1]
    assert last["role"] == "assistant" and last["status"] == "interrupted" and 0 < len(last["content"]) < 400


async def test_interrupt_during_a_tool_gives_every_call_a_result(make, tmp_path: Path) -> None:
    reply = {
        "text": "",
        "tool_calls": [
            {"name": "bash", "arguments": {"command": "echo go; sleep 30"}},
            {"name": "read_file", "arguments": {"path": "x"}},
        ],
    }
    h = await make(ScriptedModel([reply]), gate=RiskGate())  # asks for every high-risk tool
    s = await new_session(h)
    t = (await h.ok("turn.send", session=s, text="run"))["turn_id"]
    req = await h.wait(lambda e: e["type"] == "approval.requested")
    await h.ok("approval.respond", request_id=req["body"]["request_id"], decision="allow")
    await h.wait(lambda e: e["type"] == "tool.output")
    await h.ok("turn.interrupt", session=s)
    await h.turn_done(t)
    messages = (await h.ok("session.get", session=s))["messages"]
    calls = [c["id"] for m in messages for c in m["tool_calls"]]
    results = {m["tool_call_id"]: m["content"] for m in messages if m["role"] == "tool"}
    assert set(calls) == set(results)
    assert all("interrupted before completion" in r for r in results.values())


async def test_steer_slips_in_between_tool_rounds_and_queue_waits(make) -> None:
    model = ScriptedModel(
        [
            {"text": "", "tool_calls": [{"name": "bash", "arguments": {"command": "sleep 0.5"}}]},
            {"text": "first done"},
            {"text": "second done"},
        ]
    )
    from exo_core.agent.seams import GateOutcome

    class AllowAll:
        def check(self, spec, arguments):
            return GateOutcome("allow", spec.name, spec.risk)

    h = await make(model, gate=AllowAll())
    s = await new_session(h)
    t1 = (await h.ok("turn.send", session=s, text="start"))["turn_id"]
    await h.wait(lambda e: e["type"] == "tool.started")
    steered = await h.ok("turn.send", session=s, text="also mention cats", mode="steer")
    assert steered["disposition"] == "steered"
    queued = await h.ok("turn.send", session=s, text="next question", mode="queue")
    assert queued["disposition"] == "queued"
    refused = await h.cmd("turn.send", session=s, text="now!", mode="send")
    assert refused["error"]["code"] == "conflict"
    await h.turn_done(t1)
    await h.turn_done(queued["turn_id"])
    second_request = model.requests[1]
    assert second_request.messages[-1].role == "user" and second_request.messages[-1].content == "also mention cats"
    roles = [m["role"] for m in (await h.ok("session.get", session=s))["messages"]]
    assert roles == ["user", "assistant", "tool", "user", "assistant", "user", "assistant"]


async def test_a_broken_memory_provider_is_skipped(make) -> None:
    class Broken:
        async def system_block(self, session_id: str, text: str) -> str:
            raise RuntimeError("memory down")

        async def on_exchange(self, session_id: str, user_text: str, answer: str) -> None:
            raise RuntimeError("memory down")

    h = await make(ScriptedModel([{"text": "still here"}]), memory=Broken())
    s = await new_session(h)
    t = (await h.ok("turn.send", session=s, text="hi"))["turn_id"]
    assert (await h.turn_done(t))["body"]["stop_reason"] == "end"


async def test_approvals_first_answer_wins_and_deny_is_a_result(make) -> None:
    reply = {"text": "", "tool_calls": [{"name": "bash", "arguments": {"command": "echo never"}}]}
    h = await make(ScriptedModel([reply, {"text": "ok, not running it"}]), gate=RiskGate())
    s = await new_session(h)
    t = (await h.ok("turn.send", session=s, text="run"))["turn_id"]
    req = await h.wait(lambda e: e["type"] == "approval.requested")
    assert req["body"]["risk"] == "high" and req["body"]["summary"] == "bash: echo never"
    first = await h.cmd("approval.respond", request_id=req["body"]["request_id"], decision="deny")
    second = await h.cmd("approval.respond", request_id=req["body"]["request_id"], decision="allow")
    assert first["ok"] and second["error"]["code"] == "conflict"
    await h.turn_done(t)
    resolved = h.of("approval.resolved")
    assert len(resolved) == 1 and resolved[0]["body"]["decision"] == "deny"
    tool = [m for m in (await h.ok("session.get", session=s))["messages"] if m["role"] == "tool"][0]
    assert "denied" in tool["content"]
    assert not h.of("tool.output")


async def test_undo_fork_and_search(make) -> None:
    h = await make(ScriptedModel([{"text": "alpha answer"}, {"text": "beta answer"}]))
    s = await new_session(h)
    t1 = (await h.ok("turn.send", session=s, text="tell me about alpha"))["turn_id"]
    await h.turn_done(t1)
    t2 = (await h.ok("turn.send", session=s, text="and beta?"))["turn_id"]
    await h.turn_done(t2)
    hits = (await h.ok("search", query='alpha "OR" NEAR( *'))["hits"]
    assert hits == []  # every word is quoted: operators are just words
    hits = (await h.ok("search", query="alpha"))["hits"]
    assert {hit["snippet"] for hit in hits} >= {"tell me about [alpha]", "[alpha] answer"}
    messages = (await h.ok("session.get", session=s))["messages"]
    fork = (await h.ok("session.fork", session=s, message_id=messages[1]["id"]))["session"]
    assert fork["parent_id"] == s and fork["fork_message_id"] == messages[1]["id"]
    assert len((await h.ok("session.get", session=fork["id"]))["messages"]) == 2
    assert (await h.ok("session.undo", session=s, turns=1))["undone_turns"] == [t2]
    assert [m["content"] for m in (await h.ok("session.get", session=s))["messages"]] == [
        "tell me about alpha",
        "alpha answer",
    ]
    assert (await h.ok("search", query="beta", session=s))["hits"] == []
    missing = await h.cmd("session.get", session="ses_nope")
    assert missing["error"]["code"] == "not_found"
