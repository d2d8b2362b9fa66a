"""The router against a real OpenAI-compatible server on 127.0.0.1 (scripted replies)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator
from typing import Any

import pytest
from exo_testkit import ROOT

from exo_core.errors import ConfigError, ModelError, RetryableModelError
from exo_core.models import (
    FailureKind,
    ModelRouter,
    NoUsableRouteError,
    ProviderError,
    RetryableProviderError,
    RoutesExhaustedError,
    load_catalog,
)
from exo_core.seams.model import (
    ChatMessage,
    Finish,
    ModelChunk,
    ModelRequest,
    TextDelta,
    ToolCallChunk,
    UsageChunk,
)

from .fake_provider import FakeClock, FakeProvider, Reply, openai_chunks

REQ = ModelRequest(messages=(ChatMessage("user", "hi"),))


def make_router(
    server: FakeProvider,
    clock: FakeClock,
    *,
    main: list[str],
    aux: list[str] | None = None,
    decision: list[str] | None = None,
    keys: dict[str, list[str]] | None = None,
    env: dict[str, str] | None = None,
    first_byte: float = 5.0,
    local: Any = None,
) -> ModelRouter:
    names = {r.split(":", 1)[0] for r in [*main, *(aux or []), *(decision or [])]} - {"local"}
    providers = {
        n: {
            "kind": "openai",
            "base_url": server.base_url(n),
            "key_env": (keys or {}).get(n, []),
            "models": {"m": {"input": 1.0, "output": 2.0, "cache_read": 0.5}},
        }
        for n in names
    }
    config = {
        "models": {
            "providers": providers,
            "roles": {"main": main, "aux": aux or [], "decision": decision or []},
            "timeouts": {"first_byte": first_byte, "idle": 5.0},
        }
    }
    return ModelRouter(load_catalog(config, env={}), env=env or {}, clock=clock, local=local)


async def collect(router: ModelRouter, request: ModelRequest = REQ) -> list[ModelChunk]:
    return [c async for c in router.stream(request)]


def text_of(chunks: list[ModelChunk]) -> str:
    return "".join(c.text for c in chunks if isinstance(c, TextDelta))


async def test_streams_text_and_prices_usage(provider: FakeProvider, clock: FakeClock) -> None:
    usage = {"prompt_tokens": 1000, "completion_tokens": 100, "prompt_tokens_details": {"cached_tokens": 400}}
    provider.script("a", Reply(events=openai_chunks("Hel", "lo", usage=usage)))
    router = make_router(provider, clock, main=["a:m"])
    try:
        chunks = await collect(router)
    finally:
        await router.aclose()
    assert text_of(chunks) == "Hello"
    assert isinstance(chunks[-1], Finish) and chunks[-1].reason == "end"
    (u,) = [c for c in chunks if isinstance(c, UsageChunk)]
    # 600 fresh * $1 + 400 cached * $0.5 + 100 out * $2, per million
    assert u.cost == pytest.approx((600 * 1.0 + 400 * 0.5 + 100 * 2.0) / 1e6)
    assert u.cache_read_tokens == 400
    body = provider.seen[0].body
    assert body["model"] == "m" and body["stream"] is True
    assert body["messages"] == [{"role": "user", "content": "hi"}]


async def test_429_with_retry_after_falls_back_and_cools_for_that_long(
    provider: FakeProvider, clock: FakeClock
) -> None:
    provider.script("a", Reply(status=429, headers={"Retry-After": "120"}))
    provider.script("b", Reply(events=openai_chunks("from b")))
    router = make_router(provider, clock, main=["a:m", "b:m"], keys={"a": ["A1", "A2"]}, env={"A1": "k1", "A2": "k2"})
    provider.script("a", Reply(status=429, headers={"Retry-After": "120"}))
    try:
        chunks = await collect(router)
    finally:
        await router.aclose()
    assert text_of(chunks) == "from b"
    # both keys of a were tried (rotation), each now rests the stated 120 s
    assert provider.count("a") == 2
    assert router.cooldowns.remaining("a#A1") == pytest.approx(120)
    assert router.cooldowns.remaining("a#A2") == pytest.approx(120)


async def test_429_without_retry_after_cools_a_minute(provider: FakeProvider, clock: FakeClock) -> None:
    provider.script("a", Reply(status=429))
    provider.script("b", Reply(events=openai_chunks("ok")))
    router = make_router(provider, clock, main=["a:m", "b:m"])
    try:
        assert text_of(await collect(router)) == "ok"
    finally:
        await router.aclose()
    assert router.cooldowns.remaining("a") == pytest.approx(60)
    assert router.cooldowns.get("a").kind is FailureKind.RATE_LIMIT  # type: ignore[union-attr]


async def test_500_falls_back_and_cools_briefly(provider: FakeProvider, clock: FakeClock) -> None:
    provider.script("a", Reply(status=500))
    provider.script("b", Reply(events=openai_chunks("ok")))
    router = make_router(provider, clock, main=["a:m", "b:m"])
    try:
        assert text_of(await collect(router)) == "ok"
        assert router.cooldowns.remaining("a") == pytest.approx(30)
        # while a rests, the next call goes straight to b without touching a
        provider.script("b", Reply(events=openai_chunks("again")))
        assert text_of(await collect(router)) == "again"
        assert provider.count("a") == 1
        # after the cooldown a is tried first again
        clock.advance(31)
        provider.script("a", Reply(events=openai_chunks("a is back")))
        assert text_of(await collect(router)) == "a is back"
        assert router.cooldowns.remaining("a") == 0
    finally:
        await router.aclose()


@pytest.mark.parametrize("status", [400, 413, 422])
async def test_bad_request_never_falls_back(provider: FakeProvider, clock: FakeClock, status: int) -> None:
    provider.script("a", Reply(status=status, body='{"error": {"message": "messages too long"}}'))
    provider.script("b", Reply(events=openai_chunks("should not be used")))
    router = make_router(provider, clock, main=["a:m", "b:m"])
    try:
        with pytest.raises(ProviderError) as info:
            await collect(router)
    finally:
        await router.aclose()
    assert info.value.status == status and info.value.kind is FailureKind.BAD_REQUEST
    assert "messages too long" in info.value.message
    assert not info.value.retryable
    assert provider.count("b") == 0
    assert router.cooldowns.remaining("a") == 0  # the key is fine; the request was not


async def test_stream_cut_after_output_is_not_hidden(provider: FakeProvider, clock: FakeClock) -> None:
    provider.script("a", Reply(events=openai_chunks("partial ", "answer", finish=None), cut_after=1))
    provider.script("b", Reply(events=openai_chunks("never")))
    router = make_router(provider, clock, main=["a:m", "b:m"])
    seen: list[ModelChunk] = []
    try:
        with pytest.raises(RetryableProviderError) as info:
            async for chunk in router.stream(REQ):
                seen.append(chunk)
    finally:
        await router.aclose()
    assert text_of(seen) == "partial "
    assert info.value.kind is FailureKind.NETWORK and info.value.retryable
    assert provider.count("b") == 0  # never splices two models into one reply
    assert router.cooldowns.remaining("a") == pytest.approx(15)


async def test_stream_cut_before_output_falls_back(provider: FakeProvider, clock: FakeClock) -> None:
    provider.script("a", Reply(events=openai_chunks("x"), cut_after=0))
    provider.script("b", Reply(events=openai_chunks("from b")))
    router = make_router(provider, clock, main=["a:m", "b:m"])
    try:
        assert text_of(await collect(router)) == "from b"
    finally:
        await router.aclose()


async def test_stream_ending_without_finish_is_a_cut(provider: FakeProvider, clock: FakeClock) -> None:
    # the body ends cleanly but with no finish_reason and no [DONE]
    provider.script("a", Reply(events=openai_chunks(finish=None), done=False))
    provider.script("b", Reply(events=openai_chunks("from b")))
    router = make_router(provider, clock, main=["a:m", "b:m"])
    try:
        assert text_of(await collect(router)) == "from b"
    finally:
        await router.aclose()
    assert router.cooldowns.get("a").kind is FailureKind.NETWORK  # type: ignore[union-attr]


async def test_slow_first_bytes_beyond_the_limit_fall_back(provider: FakeProvider, clock: FakeClock) -> None:
    provider.script("a", Reply(events=openai_chunks("late"), delay_headers=2.0))
    provider.script("b", Reply(events=openai_chunks("from b")))
    router = make_router(provider, clock, main=["a:m", "b:m"], first_byte=0.3)
    try:
        assert text_of(await collect(router)) == "from b"
    finally:
        await router.aclose()
    assert router.cooldowns.get("a").kind is FailureKind.NETWORK  # type: ignore[union-attr]


async def test_slow_first_bytes_within_the_limit_are_waited_for(provider: FakeProvider, clock: FakeClock) -> None:
    provider.script("a", Reply(events=openai_chunks("slow but fine"), delay_headers=0.3))
    router = make_router(provider, clock, main=["a:m"], first_byte=5.0)
    try:
        assert text_of(await collect(router)) == "slow but fine"
    finally:
        await router.aclose()


async def test_credential_rotation(provider: FakeProvider, clock: FakeClock) -> None:
    router = make_router(
        provider, clock, main=["a:m"], keys={"a": ["K1", "K2"]}, env={"K1": "key-one", "K2": "key-two"}
    )
    provider.script("a", Reply(status=429, headers={"Retry-After": "30"}), Reply(events=openai_chunks("second key")))
    try:
        assert text_of(await collect(router)) == "second key"
        auths = [s.headers["Authorization"] for s in provider.seen]
        assert auths == ["Bearer key-one", "Bearer key-two"]
        provider.script("a", Reply(events=openai_chunks("still second")))
        assert text_of(await collect(router)) == "still second"
        assert provider.seen[-1].headers["Authorization"] == "Bearer key-two"
        clock.advance(30)
        provider.script("a", Reply(events=openai_chunks("first again")))
        assert text_of(await collect(router)) == "first again"
        assert provider.seen[-1].headers["Authorization"] == "Bearer key-one"
    finally:
        await router.aclose()


async def test_lone_credential_long_window_is_probed_early(provider: FakeProvider, clock: FakeClock) -> None:
    router = make_router(provider, clock, main=["a:m"], keys={"a": ["ONLY"]}, env={"ONLY": "k"})
    provider.script("a", Reply(status=429, headers={"Retry-After": str(6 * 3600)}))
    try:
        with pytest.raises(RoutesExhaustedError) as info:
            await collect(router)
        # probed after max(60 s, 2 % of 6 h) = 432 s, not after 6 h
        assert info.value.retry_after == pytest.approx(432)
        assert router.cooldowns.remaining("a#ONLY") == pytest.approx(432)
        # still resting: no request goes out, and the error says when it reopens
        clock.advance(400)
        with pytest.raises(RoutesExhaustedError) as info:
            await collect(router)
        assert provider.count("a") == 1
        assert "reopens in 32 s" in info.value.message
        # the probe fails without a new statement: re-stamped from what remains
        clock.advance(32)
        provider.script("a", Reply(status=429))
        with pytest.raises(RoutesExhaustedError):
            await collect(router)
        remaining = 6 * 3600 - 432
        assert router.cooldowns.remaining("a#ONLY") == pytest.approx(max(60, 0.02 * remaining))
        # a successful probe clears it
        clock.advance(max(60, 0.02 * remaining))
        provider.script("a", Reply(events=openai_chunks("lifted early")))
        assert text_of(await collect(router)) == "lifted early"
        assert router.cooldowns.get("a#ONLY") is None
    finally:
        await router.aclose()


async def test_everything_exhausted_gives_one_error(provider: FakeProvider, clock: FakeClock) -> None:
    provider.script("a", Reply(status=503))
    provider.script("b", Reply(status=429, headers={"Retry-After": "90"}))
    router = make_router(provider, clock, main=["a:m", "b:m"])
    try:
        with pytest.raises(RoutesExhaustedError) as info:
            await collect(router)
    finally:
        await router.aclose()
    err = info.value
    assert isinstance(err, RetryableModelError)
    assert len(err.reasons) == 2
    assert "a:m" in err.reasons[0] and "HTTP 503" in err.reasons[0]
    assert "b:m" in err.reasons[1] and "HTTP 429" in err.reasons[1]
    assert err.retry_after == pytest.approx(30)  # a's 5xx cooldown reopens first
    assert "The next route reopens in 30 s" in err.message


async def test_unreachable_laptop_falls_back_to_local(provider: FakeProvider, clock: FakeClock) -> None:
    class Local:
        def __init__(self, model: str) -> None:
            self.model = model

        async def stream(self, request: ModelRequest) -> AsyncIterator[ModelChunk]:
            yield TextDelta(f"local {self.model}")
            yield Finish("end")

    config = {
        "models": {
            "providers": {"laptop": {"kind": "openai", "base_url": "http://127.0.0.1:9/v1", "key_env": []}},
            "roles": {"main": ["laptop:big", "local:gemma-3-270m"]},
        }
    }
    router = ModelRouter(load_catalog(config, env={}), env={}, clock=clock, local=Local)
    try:
        assert text_of(await collect(router)) == "local gemma-3-270m"
    finally:
        await router.aclose()
    assert router.cooldowns.get("laptop").kind is FailureKind.NETWORK  # type: ignore[union-attr]


async def test_tool_call_fragments_are_assembled(provider: FakeProvider, clock: FakeClock) -> None:
    frags = ['{"ci', 'ty": "Pa', 'ris"}']
    events: list[Any] = [
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {
                        "tool_calls": [
                            {
                                "index": 0,
                                "id": "call_9",
                                "type": "function",
                                "function": {"name": "weather", "arguments": ""},
                            }
                        ]
                    },
                }
            ]
        }
    ]
    events += [
        {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": f}}]}}]}
        for f in frags
    ]
    events.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
    provider.script("a", Reply(events=events))
    router = make_router(provider, clock, main=["a:m"])
    tools = (
        {
            "name": "weather",
            "description": "weather now",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    )
    try:
        chunks = await collect(router, ModelRequest(messages=REQ.messages, tools=tools, tool_choice="required"))
    finally:
        await router.aclose()
    (call,) = [c.call for c in chunks if isinstance(c, ToolCallChunk)]
    assert (call.id, call.name, call.arguments) == ("call_9", "weather", {"city": "Paris"})
    assert isinstance(chunks[-1], Finish) and chunks[-1].reason == "tool_calls"
    body = provider.seen[0].body
    assert body["tools"][0]["function"]["name"] == "weather"
    assert body["tool_choice"] == "required"


async def test_role_fallback_chain(provider: FakeProvider, clock: FakeClock) -> None:
    router = make_router(provider, clock, main=["m1:m"], aux=["a1:m"], decision=[])
    try:
        assert [str(r) for r in router.chain("decision")] == ["a1:m", "m1:m"]
        assert [str(r) for r in router.chain("aux")] == ["a1:m", "m1:m"]
        assert [str(r) for r in router.chain("main")] == ["m1:m"]
        provider.script("a1", Reply(status=500))
        provider.script("m1", Reply(events=openai_chunks("main answered")))
        chunks = await collect(router, ModelRequest(messages=REQ.messages, role="decision"))
        assert text_of(chunks) == "main answered"
        # models.set at run time
        router.set_role("decision", ["m1:m"])
        assert [str(r) for r in router.chain("decision")] == ["m1:m", "a1:m"]
        with pytest.raises(ConfigError):
            router.set_role("decision", ["nosuch:m"])
        with pytest.raises(ConfigError):
            router.set_role("boss", ["m1:m"])
    finally:
        await router.aclose()


async def test_missing_keys_say_which_variable(clock: FakeClock) -> None:
    router = ModelRouter(
        load_catalog({"models": {"roles": {"main": ["openai:gpt-4o-mini"]}}}, env={}), env={}, clock=clock
    )
    try:
        with pytest.raises(NoUsableRouteError) as info:
            await collect(router)
    finally:
        await router.aclose()
    assert "OPENAI_API_KEY" in info.value.message
    assert not isinstance(info.value, RetryableModelError)


async def test_local_route_without_runtime_is_reported(clock: FakeClock) -> None:
    router = ModelRouter(load_catalog({}, env={}), env={}, clock=clock, local=None)
    try:
        with pytest.raises(RoutesExhaustedError) as info:
            await collect(router)
    finally:
        await router.aclose()
    assert "no local model runtime" in info.value.message


_WITHOUT_HOSTED = """
import asyncio, sys
sys.modules["exo_edge.hosted"] = None  # a core installed without exo_edge: the import fails
from exo_core.seams.model import ChatMessage, ModelRequest, TextDelta
from exo_core.agent.scripted import ScriptedModel
from exo_core.models import ModelRouter, RoutesExhaustedError, load_catalog
config = {"models": {"providers": {"laptop": {"kind": "openai", "base_url": "http://127.0.0.1:9/v1"}},
                     "roles": {"main": sys.argv[1:]}}}
router = ModelRouter(load_catalog(config, env={}), env={}, local=lambda name: ScriptedModel([{"text": "local"}]))
async def main():
    try:
        chunks = [c async for c in router.stream(ModelRequest(messages=(ChatMessage("user", "hi"),)))]
        print("".join(c.text for c in chunks if isinstance(c, TextDelta)))
    except RoutesExhaustedError as exc:
        print(exc.message)
    await router.aclose()
asyncio.run(main())
"""


def _without_hosted(*routes: str) -> str:
    return subprocess.run(
        [sys.executable, "-c", _WITHOUT_HOSTED, *routes], capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout.strip()


def test_without_the_hosted_transports_a_hosted_route_fails_clearly() -> None:
    said = _without_hosted("laptop:big")
    assert "laptop:big: the hosted-provider transports (exo_edge.hosted) are not installed in this core" in said


def test_without_the_hosted_transports_the_router_falls_back_to_local() -> None:
    assert _without_hosted("laptop:big", "local:gemma-3-270m") == "local"


async def test_consumer_stopping_early_closes_the_stream(provider: FakeProvider, clock: FakeClock) -> None:
    provider.script("a", Reply(events=openai_chunks(*[f"w{i} " for i in range(50)]), delay_events=0.01))
    router = make_router(provider, clock, main=["a:m"])
    try:
        agen = router.stream(REQ)
        first = await agen.__anext__()
        assert isinstance(first, TextDelta)
        await agen.aclose()  # an interrupt: no error, the credential is not blamed
        assert router.cooldowns.get("a") is None
    finally:
        await router.aclose()


def test_model_error_classes_keep_the_hierarchy() -> None:
    assert issubclass(ProviderError, ModelError)
    assert issubclass(RetryableProviderError, RetryableModelError)
    assert issubclass(RoutesExhaustedError, RetryableModelError)
