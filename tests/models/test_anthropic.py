"""The Anthropic Messages transport against the scripted server."""

from __future__ import annotations

from typing import Any

import pytest

from exo_core.models import FailureKind, ModelRouter, RetryableProviderError, load_catalog
from exo_core.seams.model import (
    ChatMessage,
    Finish,
    ModelChunk,
    ModelRequest,
    ReasoningDelta,
    TextDelta,
    ToolCall,
    ToolCallChunk,
    UsageChunk,
)
from exo_edge.hosted.anthropic import anthropic_messages

from .fake_provider import FakeClock, FakeProvider, Reply, anthropic_events, openai_chunks


def make_router(server: FakeProvider, clock: FakeClock, main: list[str]) -> ModelRouter:
    config = {
        "models": {
            "providers": {
                "claude": {
                    "kind": "anthropic",
                    "base_url": server.base_url("claude", anthropic=True),
                    "key_env": ["CLAUDE_KEY"],
                    "models": {"c": {"input": 3.0, "output": 15.0, "cache_read": 0.3, "cache_write": 3.75}},
                },
                "backup": {"kind": "openai", "base_url": server.base_url("backup"), "key_env": []},
            },
            "roles": {"main": main},
        }
    }
    return ModelRouter(load_catalog(config, env={}), env={"CLAUDE_KEY": "sk-test"}, clock=clock)


async def collect(router: ModelRouter, request: ModelRequest) -> list[ModelChunk]:
    return [c async for c in router.stream(request)]


REQ = ModelRequest(messages=(ChatMessage("system", "be brief"), ChatMessage("user", "hi")))


async def test_text_usage_cache_pricing_and_headers(provider: FakeProvider, clock: FakeClock) -> None:
    provider.script(
        "claude",
        Reply(
            events=anthropic_events("Hi ", "there", usage_in=100, usage_out=20, cache_read=1000, cache_write=200),
            done=False,
        ),
    )
    router = make_router(provider, clock, ["claude:c"])
    try:
        chunks = await collect(router, REQ)
    finally:
        await router.aclose()
    assert "".join(c.text for c in chunks if isinstance(c, TextDelta)) == "Hi there"
    (u,) = [c for c in chunks if isinstance(c, UsageChunk)]
    assert (u.input_tokens, u.output_tokens, u.cache_read_tokens, u.cache_write_tokens) == (1300, 20, 1000, 200)
    assert u.cost == pytest.approx((100 * 3.0 + 1000 * 0.3 + 200 * 3.75 + 20 * 15.0) / 1e6)
    assert isinstance(chunks[-1], Finish) and chunks[-1].reason == "end"
    seen = provider.seen[0]
    assert seen.headers["x-api-key"] == "sk-test"
    assert seen.headers["anthropic-version"] == "2023-06-01"
    assert seen.body["system"] == "be brief"
    assert seen.body["messages"] == [{"role": "user", "content": "hi"}]


async def test_thinking_and_tool_use_fragments(provider: FakeProvider, clock: FakeClock) -> None:
    events: list[Any] = [
        (
            "message_start",
            {"type": "message_start", "message": {"model": "c", "usage": {"input_tokens": 5, "output_tokens": 1}}},
        ),
        (
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}},
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "thinking_delta", "thinking": "need weather"},
            },
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 1,
                "content_block": {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {}},
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 1,
                "delta": {"type": "input_json_delta", "partial_json": '{"city":'},
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 1,
                "delta": {"type": "input_json_delta", "partial_json": ' "Oslo"}'},
            },
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 1}),
        (
            "message_delta",
            {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 12}},
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    provider.script("claude", Reply(events=events, done=False))
    router = make_router(provider, clock, ["claude:c"])
    tools = ({"name": "weather", "description": "d", "parameters": {"type": "object"}},)
    try:
        chunks = await collect(router, ModelRequest(messages=REQ.messages, tools=tools, tool_choice="weather"))
    finally:
        await router.aclose()
    assert [c.text for c in chunks if isinstance(c, ReasoningDelta)] == ["need weather"]
    (call,) = [c.call for c in chunks if isinstance(c, ToolCallChunk)]
    assert call == ToolCall("toolu_1", "weather", {"city": "Oslo"})
    assert isinstance(chunks[-1], Finish) and chunks[-1].reason == "tool_calls"
    body = provider.seen[0].body
    assert body["tools"][0]["input_schema"] == {"type": "object"}
    assert body["tool_choice"] == {"type": "tool", "name": "weather"}


async def test_overloaded_event_before_output_falls_back(provider: FakeProvider, clock: FakeClock) -> None:
    provider.script(
        "claude",
        Reply(
            events=[("error", {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})],
            done=False,
        ),
    )
    provider.script("backup", Reply(events=openai_chunks("backup answered")))
    router = make_router(provider, clock, ["claude:c", "backup:x"])
    try:
        chunks = await collect(router, REQ)
    finally:
        await router.aclose()
    assert "".join(c.text for c in chunks if isinstance(c, TextDelta)) == "backup answered"
    rest = router.cooldowns.get("claude#CLAUDE_KEY")
    assert rest is not None and rest.kind is FailureKind.RATE_LIMIT


async def test_cut_stream_is_retryable(provider: FakeProvider, clock: FakeClock) -> None:
    provider.script("claude", Reply(events=anthropic_events("a", "b"), cut_after=3, done=False))
    router = make_router(provider, clock, ["claude:c"])
    got: list[ModelChunk] = []
    try:
        with pytest.raises(RetryableProviderError):
            async for c in router.stream(REQ):
                got.append(c)
    finally:
        await router.aclose()
    assert [c.text for c in got if isinstance(c, TextDelta)] == ["a"]


def test_tool_results_become_one_user_turn() -> None:
    msgs = (
        ChatMessage("user", "q"),
        ChatMessage("assistant", "", tool_calls=(ToolCall("t1", "a", {}), ToolCall("t2", "b", {}))),
        ChatMessage("tool", "ra", tool_call_id="t1"),
        ChatMessage("tool", "rb", tool_call_id="t2"),
    )
    system, out = anthropic_messages(msgs)
    assert system == ""
    assert out[1]["content"][0] == {"type": "tool_use", "id": "t1", "name": "a", "input": {}}
    assert [b["tool_use_id"] for b in out[2]["content"]] == ["t1", "t2"]
    assert len(out) == 3
