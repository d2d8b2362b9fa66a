"""A settlement by the rules carries the rules' measured confidence, not 1 (issue 21; docs/decisions.md §2).

Through the real :class:`Decider` and a real signed ledger file: the signal question's rules settle at
``SIGNAL_RULE_CONFIDENCE`` (how often old versions of the rules were right on messages written after them,
docs/studies/signal-decisions.md), the rest split evenly; the toolset and panel questions keep 1; a confidence a rule
could not decide with is refused when the question is made; and rule settlements never become calibration
samples (rules are not a fitted provider).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from exo_core.decisions import PANEL, SIGNAL, Decider, Question, Rule, labelled_samples, record_label
from exo_core.decisions.setup import calibration_from_store
from exo_core.decisions.signal_rules import SIGNAL_RULE_CONFIDENCE
from exo_core.errors import ConfigError
from exo_core.ledger import Ledger

from .conftest import Scripted

HISTORY = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "decisions_rule_history.json"


def test_the_signal_question_uses_the_measured_confidence_and_the_others_keep_one() -> None:
    assert SIGNAL.rule_confidence == SIGNAL_RULE_CONFIDENCE
    assert SIGNAL.threshold <= SIGNAL_RULE_CONFIDENCE < 1.0
    rest = (1.0 - SIGNAL_RULE_CONFIDENCE) / 2
    assert SIGNAL.rule_probabilities("rule") == pytest.approx(
        {"correction": rest, "rule": SIGNAL_RULE_CONFIDENCE, "neither": rest}
    )
    assert sum(SIGNAL.rule_probabilities("neither").values()) == pytest.approx(1.0)
    assert PANEL.rule_confidence == 1.0
    assert PANEL.rule_probabilities("diff") == {o: float(o == "diff") for o in PANEL.options}
    with pytest.raises(ConfigError):
        SIGNAL.rule_probabilities("maybe")


def test_the_constant_is_the_committed_measurement() -> None:
    # bench_decisions_rule_history.py: each fit message judged by the newest rules written without it.
    measured = json.loads(HISTORY.read_text(encoding="utf-8"))["pooled"]["newest_without"]
    assert SIGNAL_RULE_CONFIDENCE == pytest.approx(measured["right"] / measured["settled"])


async def test_a_rule_settles_at_the_rule_probabilities_in_the_decision_and_its_ledger_entry(
    store: tuple[Path, Any],
) -> None:
    folder, recorder = store
    provider = Scripted("p", {"correction": 0.05, "rule": 0.9, "neither": 0.05})
    decider = Decider([provider], recorder=recorder)
    decision = await decider.decide(SIGNAL, "No, I said Tuesday.")
    expected = SIGNAL.rule_probabilities("correction")
    assert (decision.chosen, decision.applied, decision.provider, decision.via) == (
        "correction",
        "correction",
        "rules",
        "rule",
    )
    assert decision.probabilities == pytest.approx(expected) and decision.raw == pytest.approx(expected)
    assert not decision.calibrated and decision.escalate is None and provider.calls == 0
    panel = await decider.decide(PANEL, "show me the diff please")
    assert (panel.via, panel.chosen) == ("rule", "diff") and panel.probabilities["diff"] == 1.0
    with Ledger.open_store(folder) as ledger:
        bodies = {e.id: e.body for e in ledger.entries(kind="decision")}
    body = bodies[decision.entry_id]
    assert (body["via"], body["provider"], body["rule"], body["chosen"]) == (
        "rule",
        "rules",
        "i-said",
        "correction",
    )
    assert body["p"] == pytest.approx(expected, abs=1e-6) and body["raw"] == pytest.approx(expected, abs=1e-6)
    assert body["p"]["correction"] == round(SIGNAL_RULE_CONFIDENCE, 6) and body["calibrated"] is False
    assert bodies[panel.entry_id]["p"]["diff"] == 1.0


def test_a_rule_confidence_a_rule_could_not_decide_with_is_a_config_error() -> None:
    rules = (Rule("yes-word", r"\byes\b", "yes"),)
    with pytest.raises(ConfigError, match="below the threshold 0.6.*raise rule_confidence"):
        Question("confirm", "predicate", "?", ("yes", "no"), threshold=0.6, rules=rules, rule_confidence=0.55)
    for bad in (0.0, -0.1, 1.5, float("nan"), float("inf"), True):
        with pytest.raises(ConfigError, match="rule_confidence"):
            Question("confirm", "predicate", "?", ("yes", "no"), threshold=0.5, rule_confidence=bad)
    # At or under an even split the rule's option would not even be the most probable.
    with pytest.raises(ConfigError, match="even split"):
        Question(
            "pick",
            "choice",
            "?",
            ("a", "b", "c", "d"),
            threshold=0.2,
            rules=(Rule("x", "x", "a"),),
            rule_confidence=0.25,
        )
    # Without rules nothing settles at it: the signal question asked without its rules may hold a higher bar.
    assert replace(SIGNAL, rules=(), threshold=0.95).rule_confidence == SIGNAL_RULE_CONFIDENCE
    with pytest.raises(ConfigError, match="below the threshold"):
        replace(SIGNAL, threshold=0.95)
    exact = Question("confirm", "predicate", "?", ("yes", "no"), threshold=0.6, rules=rules, rule_confidence=0.6)
    assert exact.rule_probabilities("yes") == pytest.approx({"yes": 0.6, "no": 0.4})


async def test_rule_settlements_are_never_calibration_samples(store: tuple[Path, Any]) -> None:
    folder, recorder = store
    provider = Scripted("p", {"correction": 0.1, "rule": 0.8, "neither": 0.1})
    decider = Decider([provider], recorder=recorder)
    by_rule = [await decider.decide(SIGNAL, f"No, I said Tuesday {i}.") for i in range(12)]
    by_provider = [await decider.decide(SIGNAL, f"I'd rather you kept it shorter {i}") for i in range(12)]
    assert {d.via for d in by_rule} == {"rule"} and {d.via for d in by_provider} == {"provider"}
    for decision in [*by_rule, *by_provider]:
        record_label(recorder, decision, "chose", label="correction")
    with Ledger.open_store(folder) as ledger:
        samples = labelled_samples(ledger.entries())
    assert set(samples) == {("p", "signal")} and len(samples[("p", "signal")][1]) == 12
    book = calibration_from_store(folder)
    assert ("rules", "signal") not in book.entries and ("p", "signal") in book.entries
    # The rules keep their probabilities whatever the labels say: a calibration never reaches them.
    again = await Decider([provider], calibration=book).decide(SIGNAL, "No, I said Tuesday.")
    assert again.probabilities == pytest.approx(SIGNAL.rule_probabilities("correction")) and not again.calibrated
