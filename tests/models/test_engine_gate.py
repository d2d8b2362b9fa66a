"""One request at a time to an engine, the person's turn first, whatever the engine does with a second one.

A real aiohttp server on 127.0.0.1 plays the engine (``fake_provider``); the device side is real
routers as exod builds them: the turn's, and a background one (the signal decision's, the queue
drainer's), the drainer's in a thread with its own event loop.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from exo_core.seams.model import ChatMessage, ModelRequest, TextDelta
from exo_core.models import ModelRouter, load_catalog
from exo_edge.hosted import HostedTransports
from exo_edge.hosted.engine_gate import EngineGate, EngineGates, EnginePreempted, engine_origin

from .fake_provider import FakeProvider, Reply, openai_chunks

REQ = ModelRequest(messages=(ChatMessage("user", "hi"),))


def _router(server: FakeProvider, gates: EngineGates, *, background: bool = False) -> ModelRouter:
    config = {
        "models": {
            "providers": {"laptop": {"kind": "openai", "base_url": server.base_url("laptop"), "key_env": []}},
            "roles": {"main": ["laptop:m"]},
        }
    }
    catalog = load_catalog(config, env={})
    hosted = HostedTransports(catalog.timeouts, gates=gates)
    return ModelRouter(catalog, env={}, hosted=hosted, background=background)


async def _text(router: ModelRouter, *, after_first: asyncio.Event | None = None) -> str:
    said = []
    async for chunk in router.stream(REQ):
        if isinstance(chunk, TextDelta):
            said.append(chunk.text)
            if after_first is not None:
                after_first.set()
    return "".join(said)


async def test_requests_to_one_engine_go_one_at_a_time(provider: FakeProvider) -> None:
    gates = EngineGates()
    person, background = _router(provider, gates), _router(provider, gates, background=True)
    provider.script("laptop", *[Reply(events=openai_chunks("a", "b", "c"), delay_events=0.05) for _ in range(4)])
    try:
        answers = await asyncio.gather(_text(person), _text(person), _text(background), _text(background))
    finally:
        await person.aclose()
        await background.aclose()
    assert answers == ["abc"] * 4
    assert provider.most_active == 1  # the engine never saw two at once


async def test_a_person_request_goes_before_waiting_background_ones() -> None:
    gate = EngineGate()
    order: list[str] = []

    async def hold(name: str, *, background: bool, wait: float = 0.0) -> None:
        await asyncio.sleep(wait)
        async with gate.turn(background=background):
            order.append(name)
            await asyncio.sleep(0.05)

    await asyncio.gather(
        hold("person-1", background=False),
        hold("job-1", background=True, wait=0.01),
        hold("job-2", background=True, wait=0.01),
        hold("person-2", background=False, wait=0.02),
    )
    assert order == ["person-1", "person-2", "job-1", "job-2"]
    assert not gate.busy


async def test_a_running_background_answer_is_cut_off_for_the_persons_turn(provider: FakeProvider) -> None:
    gates = EngineGates()
    person, background = _router(provider, gates), _router(provider, gates, background=True)
    provider.script("laptop", Reply(events=openai_chunks(*["job "] * 40), delay_events=0.05))
    provider.script("laptop", Reply(events=openai_chunks("The person's", " answer.")))
    started = asyncio.Event()
    job = asyncio.create_task(_text(background, after_first=started))
    try:
        await asyncio.wait_for(started.wait(), 10)
        answer = await asyncio.wait_for(_text(person), 10)
        with pytest.raises(EnginePreempted, match="needed for the person's turn"):
            await asyncio.wait_for(job, 10)
    finally:
        await person.aclose()
        await background.aclose()
    assert answer == "The person's answer."


async def test_a_background_request_cut_before_any_output_is_simply_sent_again(provider: FakeProvider) -> None:
    """The engine was still reading the job's prompt: the job waits for the person's turn, then is asked again."""
    gates = EngineGates()
    person, background = _router(provider, gates), _router(provider, gates, background=True)
    provider.script("laptop", Reply(events=openai_chunks("first try"), delay_headers=1.0))
    provider.script("laptop", Reply(events=openai_chunks("The person's answer.")))
    provider.script("laptop", Reply(events=openai_chunks("The job's answer.")))
    job = asyncio.create_task(_text(background))
    try:
        await asyncio.sleep(0.2)  # the job's request is at the engine, no headers yet
        answer = await asyncio.wait_for(_text(person), 10)
        done = await asyncio.wait_for(job, 10)
    finally:
        await person.aclose()
        await background.aclose()
    assert (answer, done) == ("The person's answer.", "The job's answer.")
    assert [s.body["messages"][-1]["content"] for s in provider.seen] == ["hi"] * 3


async def test_the_drainers_thread_and_the_turn_share_the_engines_gate(provider: FakeProvider) -> None:
    """The queue drainer runs in its own thread and event loop, as in exod; the turn still goes first."""
    gates = EngineGates()
    person = _router(provider, gates)
    provider.script("laptop", Reply(events=openai_chunks(*["job "] * 60), delay_events=0.05))
    provider.script("laptop", Reply(events=openai_chunks("Yes.")))
    started = threading.Event()
    outcome: dict[str, Any] = {}

    def drainer() -> None:
        async def run() -> None:
            background = _router(provider, gates, background=True)
            try:
                async for chunk in background.stream(REQ):
                    if isinstance(chunk, TextDelta):
                        started.set()
            except EnginePreempted as exc:
                outcome["error"] = exc
            finally:
                await background.aclose()

        asyncio.run(run())

    thread = threading.Thread(target=drainer)
    thread.start()
    try:
        assert await asyncio.to_thread(started.wait, 10)
        answer = await asyncio.wait_for(_text(person), 10)
    finally:
        await asyncio.to_thread(thread.join, 20)
        await person.aclose()
    assert answer == "Yes." and isinstance(outcome.get("error"), EnginePreempted)
    assert not gates.gate(provider.base_url("laptop")).busy


def test_an_engine_is_its_scheme_host_and_port() -> None:
    assert engine_origin("http://127.0.0.1:8080/v1") == engine_origin("http://127.0.0.1:8080/p/other/v1")
    assert engine_origin("https://Laptop.local/v1") == "https://laptop.local:443"
    assert engine_origin("http://127.0.0.1:8080/v1") != engine_origin("http://127.0.0.1:8081/v1")
