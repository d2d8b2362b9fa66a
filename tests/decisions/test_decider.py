"""The order of a decision call: rules, providers with timeouts, threshold, fallback."""

from __future__ import annotations

import asyncio

import pytest

from exo_core.decisions import PANEL, SIGNAL, Decider, Question, Rule, normalise, toolset_question
from exo_core.decisions.providers import RulesOnlyProvider
from exo_core.errors import ConfigError, RetryableModelError
from exo_core.models import FailureKind, ProviderError
from exo_core.seams.decision import BadProviderOutput

from .conftest import ManualClock, Scripted

SURE_RULE = {"correction": 0.05, "rule": 0.9, "neither": 0.05}


def test_normalise_fills_missing_options_and_refuses_what_is_not_a_probability() -> None:
    assert normalise(SIGNAL, {"rule": 2.0, "neither": 2.0}) == {"correction": 0.0, "rule": 0.5, "neither": 0.5}
    assert normalise(SIGNAL, {"rule": 1e308, "neither": 1e308})["rule"] == pytest.approx(0.5)
    for bad in (
        {"maybe": 1.0},
        {"rule": -0.1},
        {"rule": float("nan")},
        {"rule": float("inf")},
        {"rule": True},
        {"rule": "0.9"},
        {"rule": 0.0},
        [0.2, 0.8],
        None,
    ):
        with pytest.raises(BadProviderOutput):
            normalise(SIGNAL, bad)


def test_questions_are_checked_when_made() -> None:
    with pytest.raises(ConfigError):
        Question("x", "choice", "?", ("only",))
    with pytest.raises(ConfigError):
        Question("x", "predicate", "?", ("true", "false"))
    with pytest.raises(ConfigError):
        Question("x", "choice", "?", ("a", "b"), rules=(Rule("r", "x", "c"),))
    with pytest.raises(ConfigError):
        Question("x", "score", "?", ("Low level", "high"))
    assert Question("x", "score", "How urgent?", ("low", "medium", "high")).options[1] == "medium"


async def test_a_rule_settles_it_before_any_provider_is_asked() -> None:
    provider = Scripted("p", SURE_RULE)
    decision = await Decider([provider]).decide(SIGNAL, "No, I said Tuesday.")
    assert (decision.chosen, decision.provider, decision.via, decision.rule) == (
        "correction",
        "rules",
        "rule",
        "i-said",
    )
    # Not 1 since issue 21: the signal rules were wrong on some messages written after them, so a settlement
    # carries their measured confidence (SIGNAL.rule_confidence), the rest split evenly (test_rule_confidence.py).
    sure, rest = SIGNAL.rule_confidence, (1.0 - SIGNAL.rule_confidence) / 2
    assert sure < 1.0
    assert decision.probabilities == pytest.approx({"correction": sure, "rule": rest, "neither": rest})
    assert provider.calls == 0


async def test_rules_that_disagree_settle_nothing_and_the_providers_decide() -> None:
    # "I said" fires a correction rule and "from now on" a rule rule: code cannot say which.
    provider = Scripted("p", SURE_RULE)
    decision = await Decider([provider]).decide(SIGNAL, "I said Tuesday, and from now on write dates as YYYY-MM-DD.")
    assert (decision.chosen, decision.provider, decision.via, decision.rule) == ("rule", "p", "provider", "")
    assert provider.calls == 1
    # Two rules that agree still settle it.
    agreed = await Decider([provider]).decide(SIGNAL, "That's wrong, I said Tuesday.")
    assert (agreed.provider, agreed.rule) == ("rules", "says-wrong") and provider.calls == 1


async def test_providers_are_tried_in_order_and_errors_fall_through() -> None:
    broken = Scripted("down", error=ProviderError("refused", kind=FailureKind.NETWORK))
    limited = Scripted("limited", error=RetryableModelError("429"))
    garbage = Scripted("garbage", {"banana": 1.0})
    good = Scripted("good", SURE_RULE)
    decision = await Decider([broken, limited, garbage, good]).decide(SIGNAL, "I like short emails")
    assert decision.chosen == "rule" and decision.provider == "good" and decision.via == "provider"
    assert decision.failures == (("down", "network"), ("limited", "model_retry"), ("garbage", "bad_decision_output"))
    assert decision.raw == pytest.approx(SURE_RULE)


async def test_a_provider_past_its_timeout_on_the_clock_falls_through(clock: ManualClock) -> None:
    slow = Scripted("slow", SURE_RULE, hang=True, timeout=0.5)
    fast = Scripted("fast", {"correction": 0.1, "rule": 0.1, "neither": 0.8})
    task = asyncio.create_task(Decider([slow, fast], clock=clock).decide(SIGNAL, "I like short emails"))
    while clock.sleeping == 0:
        await asyncio.sleep(0)
    clock.advance(0.49)
    await asyncio.sleep(0)
    assert not task.done()
    clock.advance(0.02)
    decision = await asyncio.wait_for(task, 5)
    assert decision.provider == "fast" and decision.chosen == "neither"
    assert decision.failures == (("slow", "timeout"),)
    assert decision.seconds == pytest.approx(0.51)


async def test_when_every_provider_fails_the_safe_default_applies() -> None:
    down = Scripted("down", error=ProviderError("gone", kind=FailureKind.UNAVAILABLE))
    panel = await Decider([down]).decide(PANEL, "hmm, interesting")
    assert panel.chosen is None and panel.abstained and panel.provider == "none" and panel.via == "fallback"
    assert panel.applied == "none" and panel.escalate is None  # no panel
    tools = await Decider([down]).decide(toolset_question(), "hmm, interesting")
    assert tools.applied is None  # keep every tool
    signal = await Decider([down]).decide(SIGNAL, "hmm, interesting")
    assert signal.applied is None and signal.escalate == "main"  # the reviewer's larger model decides
    assert signal.to_json()["abstained"] is True and signal.to_json()["chosen"] is None


async def test_below_the_threshold_the_decision_abstains_but_keeps_the_numbers() -> None:
    unsure = Scripted("unsure", {"none": 0.4, "diff": 0.35, "file_preview": 0.25})
    decision = await Decider([unsure]).decide(PANEL, "hmm, interesting")
    assert decision.chosen is None and decision.provider == "unsure" and decision.applied == "none"
    assert decision.probabilities["none"] == pytest.approx(0.4)


async def test_no_providers_at_all_is_a_normal_abstention() -> None:
    decision = await Decider([]).decide(SIGNAL, "hmm, interesting")
    assert decision.abstained and decision.provider == "none"
    assert sum(decision.probabilities.values()) == pytest.approx(1.0)


async def test_the_rules_only_provider_scores_cue_words() -> None:
    probabilities = await RulesOnlyProvider().probabilities(PANEL, "compare the plans in a few columns please")
    assert max(probabilities, key=probabilities.get) == "table"
    assert sum(probabilities.values()) == pytest.approx(1.0)
    quiet = await RulesOnlyProvider().probabilities(PANEL, "zzz")
    assert max(quiet, key=quiet.get) == "none"  # the safe default leads when nothing matches
