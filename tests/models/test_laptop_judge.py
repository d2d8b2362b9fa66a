"""The core's judge on the laptop engine's tool calls (docs/models.md, "Text or a tool call").

A real aiohttp server on 127.0.0.1 plays the engine with scripted answers
(``fake_provider``): exact streams are the point here (a call in argument
deltas, a call in the text, a retry that 500s). The device side is the real
transport built by the real ``HostedTransports``, then a real exod whose
``main`` role is that server. The same behaviour with the real 0.5B on
llama-cpp-python's server is in ``test_laptop_engine_judge.py``.
"""

from __future__ import annotations

import importlib.util
import json
import sqlite3
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from exo_core.agent.grounding import Grounding
from exo_core.models import FailureKind, ModelRouter, RetryableProviderError, RoutesExhaustedError, load_catalog
from exo_core.seams.model import (
    ChatMessage,
    Finish,
    ModelChunk,
    ModelRequest,
    TextDelta,
    ToolCall,
    ToolCallChunk,
    UsageChunk,
)
from exo_edge.hosted import HostedTransports, OpenAICompatTransport

from .fake_provider import FakeClock, FakeProvider, Reply, openai_chunks
from .laptop_kit import run_turn, turn_rows, write_home_config

READ_FILE = {
    "name": "read_file",
    "description": "Read a text file in the workspace.",
    "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
}
FRANCE = ModelRequest(messages=(ChatMessage("user", "What is the capital of France?"),), tools=(READ_FILE,))
NOTES = ModelRequest(messages=(ChatMessage("user", "Read the file notes.txt"),), tools=(READ_FILE,))
FALLBACK = "The local model answers."
USAGE = {"prompt_tokens": 40, "completion_tokens": 9}


def call_events(name: str, arguments: dict[str, Any], *, pieces: int = 3, before: str = "") -> list[Any]:
    """An OpenAI stream whose answer is one tool call, its arguments in ``pieces`` deltas (as engines send it)."""
    text = json.dumps(arguments)
    size = max(1, len(text) // pieces)
    parts = [text[i : i + size] for i in range(0, len(text), size)]
    events: list[Any] = openai_chunks(before, finish=None) if before else []
    head = {"index": 0, "id": "call_1", "type": "function", "function": {"name": name, "arguments": ""}}
    events.append({"choices": [{"index": 0, "delta": {"tool_calls": [head]}}]})
    for part in parts:
        delta = {"tool_calls": [{"index": 0, "function": {"arguments": part}}]}
        events.append({"choices": [{"index": 0, "delta": delta}]})
    events.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
    events.append({"choices": [], "usage": USAGE})
    return events


def transport(server: FakeProvider, hosted: HostedTransports) -> OpenAICompatTransport:
    made = hosted.transport(
        "openai", base_url=server.base_url("laptop"), model="m", api_key=None, provider="laptop", judge_calls=True
    )
    assert isinstance(made, OpenAICompatTransport)
    return made


async def collect(made: OpenAICompatTransport, request: ModelRequest) -> list[ModelChunk]:
    return [chunk async for chunk in made.stream(request)]


def text_of(chunks: list[ModelChunk]) -> str:
    return "".join(c.text for c in chunks if isinstance(c, TextDelta))


def calls_of(chunks: list[ModelChunk]) -> list[ToolCall]:
    return [c.call for c in chunks if isinstance(c, ToolCallChunk)]


async def test_an_ungrounded_call_is_asked_again_and_answered_in_words(provider: FakeProvider) -> None:
    provider.script(
        "laptop",
        Reply(events=call_events("read_file", {"path": "france.txt"})),
        Reply(events=openai_chunks("The capital", " of France", " is Paris.", usage=USAGE)),
    )
    hosted = HostedTransports()
    made = transport(provider, hosted)
    try:
        chunks = await collect(made, FRANCE)
    finally:
        await hosted.aclose()
    assert calls_of(chunks) == [] and text_of(chunks) == "The capital of France is Paris."
    assert [c.text for c in chunks if isinstance(c, TextDelta)] == ["The capital", " of France", " is Paris."]
    assert chunks[-1] == Finish("end") and sum(isinstance(c, Finish) for c in chunks) == 1
    # both answers' tokens were spent: both usages reach the loop, which adds them up
    assert [c.output_tokens for c in chunks if isinstance(c, UsageChunk)] == [9, 9]
    first, again = (seen.body for seen in provider.seen)
    assert first["tools"][0]["function"]["name"] == "read_file"
    assert "tools" not in again and "tool_choice" not in again and again["messages"] == first["messages"]
    assert again["stream"] is True
    decision = made.last_decision
    assert decision is not None and decision.mode == "text" and decision.call_share is None
    assert decision.proposed == ToolCall("call_1", "read_file", {"path": "france.txt"})
    assert "'france.txt' is not in the person's words" in decision.verdict


async def test_a_grounded_call_is_the_answer_and_one_request_is_made(provider: FakeProvider) -> None:
    provider.script("laptop", Reply(events=call_events("read_file", {"path": "notes.txt"}, pieces=4)))
    hosted = HostedTransports()
    made = transport(provider, hosted)
    try:
        chunks = await collect(made, NOTES)
    finally:
        await hosted.aclose()
    assert calls_of(chunks) == [ToolCall("call_1", "read_file", {"path": "notes.txt"})]
    assert chunks[-1] == Finish("tool_calls") and provider.count("laptop") == 1
    decision = made.last_decision
    assert decision is not None and decision.mode == "call" and decision.proposed == calls_of(chunks)[0]
    assert "come from the person's words" in decision.verdict


async def test_a_text_answer_streams_untouched(provider: FakeProvider) -> None:
    pieces = ("Paris", " is the", " capital", ".")
    provider.script("laptop", Reply(events=openai_chunks(*pieces, usage=USAGE)))
    hosted = HostedTransports()
    made = transport(provider, hosted)
    try:
        chunks = await collect(made, FRANCE)
    finally:
        await hosted.aclose()
    assert chunks == [*(TextDelta(p) for p in pieces), UsageChunk(40, 9, model="m"), Finish("end")]
    assert provider.count("laptop") == 1
    assert made.last_decision is not None and made.last_decision.verdict == "the model answered in words"


async def test_a_call_written_in_the_text_is_judged_too(provider: FakeProvider) -> None:
    """llama-cpp-python's server leaves Qwen's call in the content; it is taken out, judged and turned down."""
    written = '<tool_call>\n{"name": "read_file", "arguments": {"path": "capital.txt"}}\n</tool_call>'
    provider.script(
        "laptop",
        Reply(events=openai_chunks(written[:20], written[20:], usage=USAGE)),
        Reply(events=openai_chunks("Paris.")),
    )
    hosted = HostedTransports()
    made = transport(provider, hosted)
    try:
        chunks = await collect(made, FRANCE)
    finally:
        await hosted.aclose()
    assert calls_of(chunks) == [] and text_of(chunks) == "Paris." and "tool_call" not in text_of(chunks)
    assert made.last_decision is not None and made.last_decision.proposed is not None
    assert made.last_decision.proposed.arguments == {"path": "capital.txt"}


async def test_words_shown_before_a_turned_down_call_stay_and_the_answer_follows(provider: FakeProvider) -> None:
    provider.script(
        "laptop",
        Reply(events=call_events("read_file", {"path": "atlas.txt"}, before="Let me look that up.")),
        Reply(events=openai_chunks("It is Paris.")),
    )
    hosted = HostedTransports()
    made = transport(provider, hosted)
    try:
        chunks = await collect(made, FRANCE)
    finally:
        await hosted.aclose()
    assert text_of(chunks) == "Let me look that up.\n\nIt is Paris." and calls_of(chunks) == []


async def test_a_call_asked_for_is_not_judged(provider: FakeProvider) -> None:
    provider.script("laptop", Reply(events=call_events("read_file", {"path": "france.txt"})))
    hosted = HostedTransports()
    made = transport(provider, hosted)
    required = ModelRequest(messages=FRANCE.messages, tools=FRANCE.tools, tool_choice="read_file")
    try:
        chunks = await collect(made, required)
    finally:
        await hosted.aclose()
    assert [c.name for c in calls_of(chunks)] == ["read_file"] and provider.count("laptop") == 1
    assert made.last_decision is not None and made.last_decision.verdict == "a call (read_file) was required"


async def test_the_judge_is_the_one_hosted_transports_is_given(provider: FakeProvider) -> None:
    """The seam: a judge handed to ``HostedTransports`` rules on every OpenAI-compatible route's calls."""
    seen: list[tuple[str, int, list[str]]] = []

    def refuse_all(call: ToolCall, messages: Sequence[ChatMessage], tools: Sequence[Mapping[str, Any]]) -> Grounding:
        seen.append((call.name, len(messages), [str(t["name"]) for t in tools]))
        return Grounding(False, "this judge accepts nothing")

    provider.script(
        "laptop", Reply(events=call_events("read_file", {"path": "notes.txt"})), Reply(events=openai_chunks("No."))
    )
    hosted = HostedTransports(judge=refuse_all)
    made = transport(provider, hosted)
    try:
        chunks = await collect(made, NOTES)
    finally:
        await hosted.aclose()
    # the judge reads the tools as the core describes them (the OpenAI wrapper taken off)
    assert seen == [("read_file", 1, ["read_file"])] and text_of(chunks) == "No." and calls_of(chunks) == []
    assert made.last_decision is not None and made.last_decision.verdict == "this judge accepts nothing"


async def test_a_failed_retry_is_a_typed_error_naming_the_turned_down_call(provider: FakeProvider) -> None:
    provider.script(
        "laptop",
        Reply(events=call_events("read_file", {"path": "france.txt"})),
        Reply(status=500, body='{"error": {"message": "out of memory"}}'),
    )
    hosted = HostedTransports()
    made = transport(provider, hosted)
    chunks: list[ModelChunk] = []
    try:
        with pytest.raises(RetryableProviderError) as info:
            async for chunk in made.stream(FRANCE):
                chunks.append(chunk)
    finally:
        await hosted.aclose()
    error = info.value
    assert error.kind is FailureKind.SERVER and error.status == 500 and error.provider == "laptop"
    assert "tool call was turned down" in error.message and "HTTP 500: out of memory" in error.message
    assert isinstance(error.__cause__, RetryableProviderError)
    # nothing of the call came out: only the first answer's usage
    assert [type(c) for c in chunks] == [UsageChunk]


async def test_through_the_router_a_failed_retry_before_any_output_names_the_call(provider: FakeProvider) -> None:
    """The laptop the only route: the retry's 500 ends the call with the router's typed error, which says why."""
    provider.script(
        "laptop",
        Reply(events=call_events("read_file", {"path": "france.txt"})),
        Reply(status=500, body='{"error": {"message": "out of memory"}}'),
    )
    config = {
        "models": {
            "providers": {
                "laptop": {
                    "kind": "openai",
                    "base_url": provider.base_url("laptop"),
                    "key_env": [],
                    "judge_calls": True,
                }
            },
            "roles": {"main": ["laptop:m"]},
        }
    }
    router = ModelRouter(load_catalog(config, env={}), env={}, clock=FakeClock(), hosted=HostedTransports())
    chunks: list[ModelChunk] = []
    try:
        with pytest.raises(RoutesExhaustedError) as info:
            async for chunk in router.stream(FRANCE):
                chunks.append(chunk)
    finally:
        await router.aclose()
    assert chunks == [] and provider.count("laptop") == 2
    assert "tool call was turned down" in info.value.message and "HTTP 500: out of memory" in info.value.message
    assert router.cooldowns.get("laptop") is not None


def _need_exod() -> None:
    for module in ("exo_core.daemon", "exo_core.client.client"):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} is not in this tree")


def _tool_rows(home: Path, turn: str) -> list[str]:
    """The turn's messages that carry tool calls or tool results, read from the file itself."""
    db = sqlite3.connect(f"file:{home / 'sessions.sqlite'}?mode=ro", uri=True)
    try:
        rows = db.execute(
            "SELECT role, tool_calls FROM messages WHERE turn_id=? AND (role='tool' OR tool_calls != '[]')", (turn,)
        ).fetchall()
    finally:
        db.close()
    return [f"{r[0]}: {r[1]}" for r in rows]


@pytest.mark.slow
async def test_through_exod_a_turned_down_call_runs_nothing(provider: FakeProvider, tmp_path: Path) -> None:
    """A real exod: an ungrounded call's turn is answered in words; a failed retry ends the turn or falls back,
    and no call is run or stored."""
    _need_exod()
    from exo_testkit import Exod, write_script

    from exo_core.client.client import ExoClient
    from exo_core.ledger import Ledger, create_signing_key, load_signing_key
    from exo_core.store import init_store

    home, ws = tmp_path / "home", tmp_path / "ws"
    ws.mkdir()
    create_signing_key(home / "keys")  # a store, so the turns are mirrored into its ledger
    init_store(home / "store", owner_key_ids=[load_signing_key(home / "keys").key_id])
    for name in ("france.txt", "spain.txt", "italy.txt"):
        (ws / name).write_text("a file the person never named\n", encoding="utf-8")
    fallback = write_script(tmp_path / "fallback.json", [{"text": FALLBACK}] * 5)
    spare = f'\n[models.providers.spare]\nkind = "openai"\nbase_url = "{provider.base_url("spare")}"\nkey_env = []\n'
    spare += "judge_calls = true\n"
    # With a store, exod puts a message the signal decision is unsure of to the laptop's larger model
    # (docs/decisions.md §7a); off here, so the engine's scripted replies are the turns' own.
    spare += '\n[decisions]\nlarger = "none"\n'
    write_home_config(home, provider.base_url("laptop"), ["laptop:m"], first_byte=2.0, idle=2.0, extra=spare)
    unused = write_script(tmp_path / "unused.json", [])
    exod = Exod(home, unused, ws, extra=["--model", "local"]).start(timeout=60)
    try:
        async with ExoClient(exod.url) as client:
            await client.hello()
            session = (await client.request("session.create", {"title": "judged"}))["session"]["id"]

            # 1. The engine proposes reading a file nobody named, then answers in words when asked again.
            provider.script(
                "laptop",
                Reply(events=call_events("read_file", {"path": "france.txt"})),
                Reply(events=openai_chunks("The capital of France", " is Paris.")),
            )
            deltas, done, turn = await run_turn(client, session, "What is the capital of France?")
            assert done["stop_reason"] == "end" and "".join(deltas) == "The capital of France is Paris.", done
            status, rows = turn_rows(home, turn)
            assert status == "completed"
            assert [r for r in rows if r[0] == "assistant"] == [
                ("assistant", "The capital of France is Paris.", "complete")
            ]
            assert _tool_rows(home, turn) == []
            offered = [t["function"]["name"] for t in provider.seen[0].body["tools"]]
            assert "read_file" in offered and "tools" not in provider.seen[1].body

            # 2. Words, then an ungrounded call; asking again fails with a 500. The words were shown, so the
            #    router does not fall back (one reply never splices two models): the turn ends with the typed
            #    error, the shown words kept marked interrupted, and no call stored.
            provider.script(
                "laptop",
                Reply(events=call_events("read_file", {"path": "spain.txt"}, before="Let me check.")),
                Reply(status=500, body='{"error": {"message": "out of memory"}}'),
            )
            deltas, done, turn = await run_turn(client, session, "And the capital of Spain?")
            assert "".join(deltas) == "Let me check." and done["stop_reason"] == "error", done
            assert done["error"].startswith("model_retry: laptop:"), done
            assert "tool call was turned down" in done["error"] and "HTTP 500: out of memory" in done["error"], done
            status, rows = turn_rows(home, turn)
            assert status == "error"
            assert [r for r in rows if r[0] == "assistant"] == [("assistant", "Let me check.", "interrupted")]
            assert _tool_rows(home, turn) == [] and provider.count("laptop") == 4

            # 3. An ungrounded call alone, and asking again fails with a 500: nothing was shown, so the router
            #    falls back to the next route, which answers; nothing of the call is stored. (A second engine:
            #    the first rests 30 s after its 500.)
            await client.request("models.set", {"role": "main", "routes": ["spare:m", f"scripted:{fallback}"]})
            provider.script(
                "spare",
                Reply(events=call_events("read_file", {"path": "italy.txt"})),
                Reply(status=500, body='{"error": {"message": "out of memory"}}'),
            )
            deltas, done, turn = await run_turn(client, session, "And of Italy?")
            assert done["stop_reason"] == "end" and "".join(deltas) == FALLBACK, done
            assert [r for r in turn_rows(home, turn)[1] if r[0] == "assistant"] == [("assistant", FALLBACK, "complete")]
            assert _tool_rows(home, turn) == [] and provider.count("spare") == 2
    finally:
        exod.stop()
    with Ledger.open_store(home / "store") as ledger:
        kinds = [e.kind for e in ledger.entries()]
        actions = [(e.body.get("tool"), e.body.get("text")) for e in ledger.entries(kind="action")]
    # the ledger: the person's three messages, and the replies as the only actions (no call was run or asked about)
    assert kinds.count("utterance") == 3 and "approval" not in kinds, kinds
    assert ("reply", "The capital of France is Paris.") in actions and {a[0] for a in actions} == {"reply"}, actions


async def test_a_provider_without_judge_calls_passes_its_calls_as_they_are(provider: FakeProvider) -> None:
    """Hosted providers keep their own say (a big model's calls are not second-guessed): off by default."""
    provider.script("laptop", Reply(events=call_events("read_file", {"path": "france.txt"})))
    hosted = HostedTransports()
    made = hosted.transport("openai", base_url=provider.base_url("laptop"), model="m", api_key=None, provider="laptop")
    try:
        chunks = await collect(made, FRANCE)
    finally:
        await hosted.aclose()
    assert calls_of(chunks) == [ToolCall("call_1", "read_file", {"path": "france.txt"})]
    assert provider.count("laptop") == 1


def test_judge_calls_is_read_from_the_provider_and_must_be_a_boolean() -> None:
    from exo_core.errors import ConfigError
    from exo_core.models.catalog import load_catalog

    def laptop(**extra: object) -> dict[str, object]:
        spec = {"kind": "openai", "base_url": "http://127.0.0.1:8081/v1", "key_env": [], **extra}
        return {"models": {"providers": {"laptop": spec}}}

    assert load_catalog(laptop(judge_calls=True)).provider("laptop").judge_calls is True
    assert load_catalog(laptop()).provider("laptop").judge_calls is False
    with pytest.raises(ConfigError, match="judge_calls must be true or false"):
        load_catalog(laptop(judge_calls="yes"))
