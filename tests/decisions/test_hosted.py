"""The hosted provider over the router's decision role, against a real OpenAI-compatible server."""

from __future__ import annotations

import json
import time

import pytest
from models.fake_provider import FakeProvider, Reply, openai_chunks

from exo_core.decisions import PANEL, SIGNAL, Decider
from exo_core.decisions.providers import HostedProvider, RulesOnlyProvider, redact

from .conftest import hosted_router


async def test_one_letter_becomes_probabilities_over_redacted_state(server: FakeProvider) -> None:
    server.script("cloud", Reply(events=openai_chunks(" C")))
    router = hosted_router(server)
    try:
        decision = await Decider([HostedProvider(router)]).decide(
            PANEL, "email ana@example.org the figures from https://x.example/a, call +351 912 345 678"
        )
    finally:
        await router.aclose()
    assert decision.provider == "hosted" and decision.chosen == "file_preview"
    assert decision.raw["file_preview"] == pytest.approx(0.9)
    sent = json.dumps(server.seen[0].body)
    assert "ana@example.org" not in sent and "x.example" not in sent and "912" not in sent
    assert server.seen[0].body["max_tokens"] == 2 and server.seen[0].body["temperature"] == 0.0


@pytest.mark.parametrize(
    "reply",
    [
        Reply(status=500),
        Reply(status=429, headers={"Retry-After": "30"}),
        Reply(events=openai_chunks("I think it is a correction")),
        Reply(events=openai_chunks("Z")),
    ],
)
async def test_errors_and_non_answers_fall_through_to_the_next_provider(server: FakeProvider, reply: Reply) -> None:
    server.script("cloud", reply, Reply(status=500))  # the router's fallback to main meets a 500 too
    router = hosted_router(server)
    try:
        decision = await Decider([HostedProvider(router), RulesOnlyProvider()]).decide(
            SIGNAL, "I'd like shorter replies in general"
        )
    finally:
        await router.aclose()
    assert decision.provider == "rules-only"
    assert decision.failures and decision.failures[0][0] == "hosted"


async def test_a_slow_hosted_provider_times_out_then_the_safe_default_applies(server: FakeProvider) -> None:
    server.script("cloud", Reply(events=openai_chunks("B"), delay_headers=3.0))
    router = hosted_router(server)
    try:
        started = time.monotonic()
        decision = await Decider([HostedProvider(router, timeout=0.3)]).decide(PANEL, "hmm")
        took = time.monotonic() - started
    finally:
        await router.aclose()
    assert decision.failures == (("hosted", "timeout"),)
    assert decision.abstained and decision.applied == "none"
    assert took < 2.5  # did not wait for the slow answer


def test_redaction_masks_addresses_links_and_numbers() -> None:
    assert (
        redact("mail me at a.b@c.pt or see http://x.y/z?q=1, tel 21 123 4567; 3 cats")
        == "mail me at [email] or see [link] tel [number]; 3 cats"
    )
