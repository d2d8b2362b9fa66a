"""The ``hosted`` provider (``providers = ["hosted"]``) over the router's decision role, against a real
OpenAI-compatible server: the option words' probabilities from the engine's ``top_logprobs``
(:class:`LogprobProvider`, named ``hosted:chat``), never one letter at a made-up 0.9."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

import pytest
from models.fake_provider import FakeProvider, Reply, openai_chunks

from exo_core.decisions import PANEL, SIGNAL, Decider
from exo_core.decisions.logprobs import HOSTED, LogprobProvider, NoLogprobs
from exo_core.decisions.providers import RulesOnlyProvider, redact
from exo_core.decisions.setup import DecisionSettings, build_providers
from exo_core.seams.home import ExoHome

from .conftest import hosted_router, logprob_chunks

TEXT = "email ana@example.org the figures from https://x.example/a, call +351 912 345 678"


def _hosted(tmp_path: Path, router: object, timeout: float = 2.0) -> LogprobProvider:
    """What ``providers = ["hosted"]`` builds over exod's router."""
    settings = DecisionSettings.from_config({"decisions": {"providers": ["hosted"], "hosted_timeout": timeout}})
    [provider] = build_providers(ExoHome(tmp_path / "home"), settings, model=router)  # type: ignore[arg-type]
    assert isinstance(provider, LogprobProvider)
    return provider


async def test_the_option_words_probabilities_over_redacted_state(server: FakeProvider, tmp_path: Path) -> None:
    # PANEL's words: none, diff, file (file_preview), taste, history (session_tree), table.
    top = [("file", math.log(0.7)), ("table", math.log(0.2)), ("I", math.log(0.1))]
    server.script("cloud", Reply(events=logprob_chunks(top)))
    router = hosted_router(server)
    try:
        decision = await Decider([_hosted(tmp_path, router)]).decide(PANEL, TEXT)
    finally:
        await router.aclose()
    assert decision.provider == HOSTED == "hosted:chat" and decision.chosen == "file_preview"
    assert decision.raw["file_preview"] == pytest.approx(0.7 / 0.9) and decision.raw["table"] == pytest.approx(
        0.2 / 0.9
    )
    body = server.seen[0].body
    sent = json.dumps(body)
    assert "ana@example.org" not in sent and "x.example" not in sent and "912" not in sent
    assert (body["max_tokens"], body["temperature"], body["logprobs"], body["top_logprobs"]) == (1, 0.0, True, 20)
    assert body["messages"][-1]["content"] == "Message: " + redact(TEXT)


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        (Reply(status=500), "model_retry"),
        (Reply(status=429, headers={"Retry-After": "30"}), "model_retry"),
        (Reply(events=openai_chunks("I think it is a correction")), "no_logprobs"),  # an engine without them
        (Reply(events=logprob_chunks([("rule", -0.1)], shape={"content": None})), "no_logprobs"),
        (Reply(events=logprob_chunks([("rule", -0.1)], shape="rule: 0.9")), "no_logprobs"),
        (Reply(events=logprob_chunks([("Sure", -0.1), ("Z", -2.0)])), "bad_decision_output"),
    ],
    ids=["500", "429", "no-logprobs", "null-content", "garbage-logprobs", "no-option-token"],
)
async def test_errors_and_answers_without_probabilities_fall_through_to_the_next_provider(
    server: FakeProvider, tmp_path: Path, reply: Reply, reason: str
) -> None:
    server.script("cloud", reply, Reply(status=500))  # the router's fallback to main meets a 500 too
    router = hosted_router(server)
    try:
        decision = await Decider([_hosted(tmp_path, router), RulesOnlyProvider()]).decide(
            SIGNAL, "I'd like shorter replies in general"
        )
    finally:
        await router.aclose()
    assert decision.provider == "rules-only"
    assert decision.failures == ((HOSTED, reason),)


async def test_no_log_probabilities_is_a_typed_failure_that_says_how_to_fix_it(server: FakeProvider) -> None:
    server.script("cloud", Reply(events=openai_chunks("B")))
    router = hosted_router(server)
    try:
        with pytest.raises(NoLogprobs, match="an engine that returns top_logprobs") as caught:
            await LogprobProvider(router).probabilities(SIGNAL, "hmm")
    finally:
        await router.aclose()
    assert caught.value.code == "no_logprobs" and "Anthropic's API does not" in caught.value.message


async def test_a_slow_hosted_provider_times_out_then_the_safe_default_applies(
    server: FakeProvider, tmp_path: Path
) -> None:
    server.script("cloud", Reply(events=logprob_chunks([("diff", -0.1)]), delay_headers=3.0))
    router = hosted_router(server)
    try:
        started = time.monotonic()
        decision = await Decider([_hosted(tmp_path, router, timeout=0.3)]).decide(PANEL, "hmm")
        took = time.monotonic() - started
    finally:
        await router.aclose()
    assert decision.failures == ((HOSTED, "timeout"),)
    assert decision.abstained and decision.applied == "none"
    assert took < 2.5  # did not wait for the slow answer


def test_redaction_masks_addresses_links_and_numbers() -> None:
    assert (
        redact("mail me at a.b@c.pt or see http://x.y/z?q=1, tel 21 123 4567; 3 cats")
        == "mail me at [email] or see [link] tel [number]; 3 cats"
    )
