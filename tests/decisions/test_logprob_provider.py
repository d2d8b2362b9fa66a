"""The larger model's decision over HTTP read as probabilities (issue 21): ``LogprobProvider`` through the real
router and OpenAI-compatible transport, against a real aiohttp server with scripted answers (its failures) and
a real ``llama_cpp.server`` serving the 0.5B (the happy path)."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from models.fake_provider import FakeProvider, Reply, openai_chunks

from exo_core.decisions import SIGNAL, Decider
from exo_core.decisions.chat_prompt import chat_messages
from exo_core.decisions.escalation import Escalation
from exo_core.decisions.logprobs import TOP_LOGPROBS, LogprobProvider, NoLogprobs, option_shares, read_top
from exo_core.decisions.providers import redact
from exo_core.seams.decision import BadProviderOutput, normalise
from exo_core.seams.model import TopTokens

from .conftest import hosted_router, logprob_chunks

TEXT = "From now on, mail ana@example.org the figures before noon."


def test_each_option_gets_the_mass_on_the_tokens_that_start_its_word() -> None:
    top = TopTokens(
        (
            ("rule", math.log(0.5)),
            ("cor", math.log(0.2)),
            ("correct", math.log(0.1)),
            ("Other", math.log(0.05)),
            (" correction", math.log(0.05)),  # a space before: not how the answer's line starts
            ("a", math.log(0.1)),  # starts no option word
        )
    )
    shares = option_shares(SIGNAL, top)
    assert shares == pytest.approx({"correction": 0.3 / 0.85, "rule": 0.5 / 0.85, "neither": 0.05 / 0.85})
    with pytest.raises(BadProviderOutput, match="none of the engine's 2 most likely tokens starts an option word"):
        option_shares(SIGNAL, TopTokens((("Sure", -0.1), ("I", -2.0))))


async def test_the_engine_is_sent_the_in_process_chat_turns_and_its_top_logprobs_are_the_probabilities(
    server: FakeProvider,
) -> None:
    top = [("rule", math.log(0.6)), ("cor", math.log(0.3)), ("other", math.log(0.05)), ("I", math.log(0.05))]
    server.script("cloud", Reply(events=logprob_chunks(top)))
    router = hosted_router(server)
    try:
        decision = await Decider([LogprobProvider(router, name="cloud:m:chat")]).decide(SIGNAL, "hmm, maybe")
    finally:
        await router.aclose()
    assert decision.provider == "cloud:m:chat" and decision.chosen == "rule"
    assert decision.raw == pytest.approx({"correction": 0.3 / 0.95, "rule": 0.6 / 0.95, "neither": 0.05 / 0.95})
    body = server.seen[0].body
    assert (body["logprobs"], body["top_logprobs"], body["max_tokens"], body["temperature"]) == (True, 20, 1, 0.0)
    assert body["messages"] == chat_messages(SIGNAL, "hmm, maybe")
    assert TOP_LOGPROBS == 20


async def test_the_message_and_draft_are_redacted_as_for_any_model_off_the_device(server: FakeProvider) -> None:
    server.script("cloud", Reply(events=logprob_chunks([("rule", -0.1)])))
    router = hosted_router(server)
    try:
        provider = LogprobProvider(router)
        await provider.probabilities_after(SIGNAL, TEXT, "Sent to bob@example.org, see https://x.example/a")
    finally:
        await router.aclose()
    sent = json.dumps(server.seen[0].body)
    assert "ana@example.org" not in sent and "bob@example.org" not in sent and "x.example" not in sent
    assert server.seen[0].body["messages"][-1]["content"].endswith("Message: " + redact(TEXT))


class Queue:
    def __init__(self) -> None:
        self.jobs: list[tuple[str, dict[str, Any], str]] = []

    def put(self, kind: str, inputs: dict[str, Any], *, key: str) -> bool:
        self.jobs.append((kind, inputs, key))
        return True


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        (Reply(events=openai_chunks("rule")), "no_logprobs"),  # an engine that does not support them
        (Reply(events=logprob_chunks([("rule", -0.1)], shape={"content": None})), "no_logprobs"),
        (Reply(events=logprob_chunks([("rule", -0.1)], shape="rule: 0.9")), "no_logprobs"),
        (Reply(events=logprob_chunks([("Sure", -0.1), ("I", -3.0)])), "bad_decision_output"),
        (Reply(events=["{not json"]), "model_retry"),  # the router: every route failed
        (Reply(status=500, body='{"error": {"message": "CUDA out of memory"}}'), "model_retry"),
    ],
    ids=["no-logprobs", "null-content", "garbage-logprobs", "no-option-token", "garbage", "500"],
)
async def test_no_probabilities_is_an_abstention_that_goes_on_to_the_queue_never_an_invented_confidence(
    server: FakeProvider, reply: Reply, reason: str
) -> None:
    server.script("laptop", reply, reply)
    first, second = hosted_router(server, "laptop"), hosted_router(server, "laptop")  # a 500 cools a router's route
    queue = Queue()
    device = Decider([])  # nothing on the device: the decision escalates
    try:
        alone = await Decider([LogprobProvider(first, name="laptop:m:chat")]).decide(SIGNAL, "hmm, the second one")
        larger = LogprobProvider(second, name="laptop:m:chat", timeout=10.0)
        settled = await Escalation(device, larger=larger, queue=queue).decide(SIGNAL, "hmm, the second one")
    finally:
        await first.aclose()
        await second.aclose()
    # The larger model's own decision: a failure with its reason, and no probability of its own.
    assert alone.chosen is None and alone.failures == (("laptop:m:chat", reason),)
    assert alone.raw == pytest.approx(dict.fromkeys(SIGNAL.options, 1 / 3))
    # Escalated: the abstention goes on to the queue.
    assert settled.route == "queued" and settled.decision.chosen is None
    assert len(queue.jobs) == 1 and queue.jobs[0][0] == "decide"
    assert server.count("laptop") == 2


@pytest.mark.model
@pytest.mark.slow
async def test_a_real_llama_cpp_server_gives_the_option_words_probabilities(tmp_path: Any) -> None:
    from models.laptop_kit import EngineProcess, free_port, need_engine

    from exo_core.models import ModelRouter, load_catalog

    engine = EngineProcess(need_engine(), free_port(), tmp_path / "engine.log").start()
    config = {
        "models": {
            "providers": {"laptop": {"kind": "openai", "base_url": engine.base_url, "api_key": engine.key}},
            "roles": {"decision": ["laptop:qwen2.5-coder-0.5b-instruct"]},
            "timeouts": {"first_byte": 240.0, "idle": 60.0},
        }
    }
    router = ModelRouter(load_catalog(config, env={}), env={})
    provider = LogprobProvider(router, name="laptop:qwen2.5-coder-0.5b-instruct:chat", timeout=240.0)
    try:
        found = {
            text: await provider.probabilities(SIGNAL, text)
            for text in ("From now on, always ask me before pushing anything.", "What's on my calendar tomorrow?")
        }
    finally:
        await router.aclose()
        engine.stop()
    for shares in found.values():
        assert set(shares) == set(SIGNAL.options) and sum(shares.values()) == pytest.approx(1.0)
        assert all(value > 0.0 for value in shares.values()), shares  # a distribution, not one letter at 0.9
    rule, question = found.values()
    assert max(rule, key=lambda o: rule[o]) == "rule"
    assert max(question, key=lambda o: question[o]) == "neither"


async def test_other_requests_do_not_ask_for_logprobs_and_get_no_top_tokens(server: FakeProvider) -> None:
    from exo_core.seams.model import ChatMessage, ModelRequest

    server.script("cloud", Reply(events=logprob_chunks([("Hi", -0.1)])))
    router = hosted_router(server)
    try:
        chunks = [chunk async for chunk in router.stream(ModelRequest(messages=(ChatMessage("user", "hi"),)))]
    finally:
        await router.aclose()
    assert "logprobs" not in server.seen[0].body and "top_logprobs" not in server.seen[0].body
    assert not [chunk for chunk in chunks if isinstance(chunk, TopTokens)]


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=20,
)
_TOKEN = st.sampled_from(["cor", "correct", "Correction", "rule", "Rule", "r", "other", "o", "", " rule", "I", "Sure"])
_STEP = st.fixed_dictionaries(
    {"token": _TOKEN | st.text(max_size=8) | _JSON, "logprob": st.floats() | st.integers(-(10**6), 10**6) | _JSON}
)
_LOGPROBS = _JSON | st.fixed_dictionaries(
    {"content": st.lists(st.fixed_dictionaries({"top_logprobs": st.lists(_STEP, max_size=25) | _JSON}), max_size=3)}
)


@settings(max_examples=400, deadline=None)
@given(_LOGPROBS)
def test_any_logprobs_an_engine_sends_reads_as_probabilities_or_a_typed_failure(logprobs: Any) -> None:
    """Whatever an engine puts in ``logprobs`` (garbage, NaN, infinities, huge or positive log probabilities,
    tokens that are not strings), the transport's parse never raises, and the reading is a probability per
    option (finite, summing to 1) or a :class:`BadProviderOutput` (``NoLogprobs`` among them): never a crash
    the decider would not catch, and never a number the engine did not give."""
    from exo_edge.hosted.openai_compat import _top_tokens

    steps = _top_tokens(logprobs)
    assert all(isinstance(t, str) and math.isfinite(v) for step in steps for t, v in step.tokens)
    first = steps[0] if steps else None
    try:
        shares = read_top(SIGNAL, first, provider="fuzz")
    except NoLogprobs:
        assert first is None or not first.tokens
        return
    except BadProviderOutput as exc:
        assert "starts an option word" in str(exc)
        return
    assert set(shares) == set(SIGNAL.options) and sum(shares.values()) == pytest.approx(1.0)
    assert all(math.isfinite(p) and 0.0 <= p <= 1.0 for p in shares.values())
    assert normalise(SIGNAL, shares, "fuzz") == pytest.approx(shares)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_TOKEN | st.text(max_size=6), st.floats(allow_nan=True, allow_infinity=True)), max_size=25))
def test_option_shares_are_finite_for_any_top_tokens(tokens: list[tuple[str, float]]) -> None:
    """A log probability above 0 (rounding, or garbage) counts as a probability of 1, and a non-finite one is
    skipped, so no mass overflows into infinity or NaN."""
    try:
        shares = option_shares(SIGNAL, TopTokens(tuple(tokens)))
    except BadProviderOutput:
        return
    assert sum(shares.values()) == pytest.approx(1.0) and all(math.isfinite(p) for p in shares.values())
