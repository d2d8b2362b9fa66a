"""A laptop server that misbehaves: each failure is a typed error naming the cause, and nothing is stored half.

The server is a real aiohttp server on 127.0.0.1 with scripted answers
(``fake_provider``); the device side is the real router, then a real exod
whose ``main`` role is that server. Answers that fail before any output fall
back (or end the turn with the reason); answers cut after output keep the
shown part as an ``interrupted`` message, the way an interrupt does.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from exo_core.models import FailureKind, ModelRouter, RetryableProviderError, RoutesExhaustedError, load_catalog
from exo_core.seams.model import ChatMessage, ModelRequest, TextDelta

from .fake_provider import FakeClock, FakeProvider, Reply, openai_chunks
from .laptop_kit import run_turn, turn_rows, write_home_config

REQ = ModelRequest(messages=(ChatMessage("user", "hi"),))


def _router(
    server: FakeProvider,
    clock: FakeClock,
    *,
    first_byte: float = 5.0,
    idle: float = 5.0,
    total: float = 60.0,
    spare: bool = False,
) -> ModelRouter:
    providers = {"laptop": {"kind": "openai", "base_url": server.base_url("laptop"), "key_env": []}}
    routes = ["laptop:m"]
    if spare:  # a second route after the laptop (the device's local model, in exod)
        providers["spare"] = {"kind": "openai", "base_url": server.base_url("spare"), "key_env": []}
        routes.append("spare:m")
    config = {
        "models": {
            "providers": providers,
            "roles": {"main": routes},
            "timeouts": {"first_byte": first_byte, "idle": idle, "total": total},
        }
    }
    return ModelRouter(load_catalog(config, env={}), env={}, clock=clock)


_ROLE_ONLY = {"choices": [{"index": 0, "delta": {"role": "assistant"}, "finish_reason": None}]}
_NOTHING = {"choices": [{"index": 0, "delta": {}, "finish_reason": None}]}
_HUGE_LINE = {"choices": [{"index": 0, "delta": {"content": "x" * 9_000_000}, "finish_reason": None}]}


async def _fails(router: ModelRouter) -> RoutesExhaustedError:
    with pytest.raises(RoutesExhaustedError) as info:
        async for _ in router.stream(REQ):
            pass
    return info.value


@pytest.mark.parametrize(
    ("reply", "cause", "cooled"),
    [
        (Reply(events=["<html>oops</html>"]), "the stream sent bad JSON", 30),
        (Reply(body="<html>login</html>", content_type="text/html"), "answered text/html, not an event stream", 30),
        (Reply(status=500, body='{"error": {"message": "CUDA out of memory"}}'), "HTTP 500: CUDA out of memory", 30),
        (Reply(status=429, headers={"Retry-After": "7"}), "HTTP 429", 7),
        (Reply(events=openai_chunks("hi"), delay_headers=2.0), "no response within 0.5 s", 15),
        # llama-cpp-python's server cutting a running answer for another request: a bare [DONE]
        (Reply(events=[_ROLE_ONLY]), "it sent [DONE] without a finish reason", 15),
        (Reply(events=openai_chunks()), "finished (end) without a word or a tool call", 30),
        (Reply(events=[_ROLE_ONLY], endless=_NOTHING, delay_events=0.01), "still streaming after 1 s", 30),
        (Reply(events=[_HUGE_LINE]), "line longer than the stream's buffer", 30),
    ],
    ids=["garbage", "web-page", "500", "429", "hang", "bare-done", "empty", "endless", "huge-line"],
)
async def test_each_failure_before_output_is_typed_and_names_its_cause(
    provider: FakeProvider, clock: FakeClock, reply: Reply, cause: str, cooled: float
) -> None:
    provider.script("laptop", reply)
    router = _router(provider, clock, first_byte=0.5, total=1.0)
    try:
        error = await _fails(router)
    finally:
        await router.aclose()
    assert cause in str(error), str(error)
    assert error.retry_after == pytest.approx(cooled, abs=0.5)  # the laptop rests, then is probed again
    assert provider.count("laptop") == 1


async def test_a_hang_mid_answer_is_a_typed_stall_after_the_shown_text(
    provider: FakeProvider, clock: FakeClock
) -> None:
    provider.script("laptop", Reply(events=openai_chunks("Hel", "lo"), stall_after=1, stall=2.0))
    router = _router(provider, clock, idle=0.3)
    shown: list[str] = []
    try:
        with pytest.raises(RetryableProviderError) as info:
            async for chunk in router.stream(REQ):
                if isinstance(chunk, TextDelta):
                    shown.append(chunk.text)
    finally:
        await router.aclose()
    # after output the router never falls back (one reply never splices two models): the caller gets the stall
    assert info.value.kind is FailureKind.NETWORK and "stalled" in str(info.value)
    assert shown == ["Hel"]


@pytest.mark.parametrize(
    "reply",
    [Reply(events=[_ROLE_ONLY]), Reply(events=openai_chunks()), Reply(events=[_ROLE_ONLY], done=False)],
    ids=["bare-done", "empty", "cut"],
)
async def test_a_cut_or_empty_answer_falls_back_to_the_next_route(
    provider: FakeProvider, clock: FakeClock, reply: Reply
) -> None:
    """Never an empty success: the next route (the device's local model, in exod) answers instead."""
    provider.script("laptop", reply)
    provider.script("spare", Reply(events=openai_chunks("Paris.")))
    router = _router(provider, clock, spare=True)
    try:
        said = [c.text async for c in router.stream(REQ) if isinstance(c, TextDelta)]
    finally:
        await router.aclose()
    assert said == ["Paris."] and provider.count("laptop") == 1 and provider.count("spare") == 1


@pytest.mark.parametrize(
    ("reply", "cause", "kind", "total"),
    [
        (
            Reply(events=openai_chunks("All", " work"), endless=openai_chunks(" and")[0], delay_events=0.01),
            "still streaming after 1 s",
            FailureKind.SERVER,
            1.0,
        ),
        # the total cap far away, so only the size cap can end it (9 MB take seconds on a loaded machine)
        (
            Reply(events=openai_chunks(*["y" * 100_000] * 90)),
            "more than 8192 KiB in one answer",
            FailureKind.SERVER,
            600.0,
        ),
    ],
    ids=["endless", "oversize"],
)
async def test_an_answer_that_never_ends_or_is_too_big_is_cut_off_typed(
    provider: FakeProvider, clock: FakeClock, reply: Reply, cause: str, kind: FailureKind, total: float
) -> None:
    provider.script("laptop", reply)
    router = _router(provider, clock, total=total)
    shown = 0
    try:
        with pytest.raises(RetryableProviderError) as info:
            async for chunk in router.stream(REQ):
                if isinstance(chunk, TextDelta):
                    shown += len(chunk.text)
    finally:
        await router.aclose()
    assert cause in str(info.value) and info.value.kind is kind, info.value
    assert 0 < shown <= 8 * 1024 * 1024


def _need_exod() -> None:
    for module in ("exo_core.daemon", "exo_core.client.client"):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} is not in this tree")


@pytest.mark.slow
async def test_through_exod_nothing_is_stored_half(provider: FakeProvider, tmp_path: Path) -> None:
    """A real exod: a cut or garbage after output keeps the shown text as interrupted; before output, the fallback."""
    _need_exod()
    from exo_testkit import Exod, write_script

    from exo_core.client.client import ExoClient

    home, ws = tmp_path / "home", tmp_path / "ws"
    ws.mkdir()
    fallback = write_script(tmp_path / "fallback.json", [{"text": "The local model answers."}] * 10)
    write_home_config(home, provider.base_url("laptop"), ["laptop:m"], first_byte=1.0, idle=1.0)
    unused = write_script(tmp_path / "unused.json", [])
    exod = Exod(home, unused, ws, extra=["--model", "local"]).start(timeout=60)
    try:
        async with ExoClient(exod.url) as client:
            await client.hello()
            session = (await client.request("session.create", {"title": "bad laptop"}))["session"]["id"]

            # 1. Garbage after two pieces of text: the turn ends with the typed error; the shown text is kept,
            #    marked interrupted, and nothing else of the answer is stored.
            provider.script("laptop", Reply(events=[*openai_chunks("The cap", "ital")[:2], "<html>oops"], done=False))
            deltas, done, turn = await run_turn(client, session, "What is the capital of France?")
            assert done["stop_reason"] == "error" and "bad JSON" in done["error"], done
            status, rows = turn_rows(home, turn)
            assert status == "error"
            assert rows[-1] == ("assistant", "".join(deltas), "interrupted") and "".join(deltas) == "The capital"
            assert [r for r in rows if r[0] == "assistant" and r[2] != "interrupted"] == []

            # 2. A hang after output: past the idle limit the turn ends as a stall; the same record.
            provider.script("laptop", Reply(events=openai_chunks("Par", "is"), stall_after=1, stall=4.0))
            deltas, done, turn = await run_turn(client, session, "Again?")
            assert done["stop_reason"] == "error" and "stalled" in done["error"], done
            status, rows = turn_rows(home, turn)
            assert status == "error" and deltas == ["Par"]
            assert [r for r in rows if r[0] == "assistant"] == [("assistant", "Par", "interrupted")]

            # 3. A 429 stating a short window, the laptop the only route: the loop waits as told and retries,
            #    then the turn ends naming the rate limit; no assistant message at all.
            before = provider.count("laptop")
            provider.script("laptop", *[Reply(status=429, headers={"Retry-After": "0.2"}) for _ in range(5)])
            deltas, done, turn = await run_turn(client, session, "Once more?")
            assert deltas == [] and done["stop_reason"] == "error" and "HTTP 429" in done["error"], done
            # The first call and up to three retries (a retry that lands a hair before the window reopens is
            # refused by the router's cooldown without a request).
            assert 2 <= provider.count("laptop") - before <= 4
            status, rows = turn_rows(home, turn)
            assert status == "error" and [r for r in rows if r[0] == "assistant"] == []

            # 4. The laptop answers a 500 before any output with a fallback route set: the fallback answers.
            provider.replies["laptop"].clear()  # 429s the retries did not use
            await client.request("models.set", {"role": "main", "routes": ["laptop:m", f"scripted:{fallback}"]})
            provider.script("laptop", Reply(status=500))
            deltas, done, turn = await run_turn(client, session, "Last one?")
            assert done["stop_reason"] == "end" and "".join(deltas) == "The local model answers.", done
            status, rows = turn_rows(home, turn)
            assert [r for r in rows if r[0] == "assistant"] == [("assistant", "The local model answers.", "complete")]
    finally:
        exod.stop()
