"""Tighten only (§13.3): no provider output can loosen the gate; guarded actions never reach a model."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from exo_core.decisions import Decider, Question
from exo_core.decisions.advisor import CONFIRM, DecisionAdvisor, action_state, proposal
from exo_core.gate import ConsequenceGate, Policy, classify
from exo_core.gate.axes import AXES, OUTCOMES, outcome_rank
from exo_core.tools.spec import ToolSpec

WORKSPACE = Path("/tmp/exo-decide-ws")
CALLS: list[tuple[str, dict[str, Any], str]] = [
    ("read_file", {"path": "notes.md"}, "low"),
    ("edit_file", {"path": "notes.md"}, "medium"),
    ("write_file", {"path": "/etc/hosts"}, "medium"),
    ("bash", {"command": "ls -la"}, "high"),
    ("bash", {"command": "git commit -am 'x'"}, "high"),
    ("bash", {"command": "git push origin main"}, "high"),
    ("bash", {"command": "rm -rf build"}, "high"),
    ("bash", {"command": "curl -X POST https://example.org/api -d @data.json"}, "high"),
    ("bash", {"command": "pip install requests"}, "high"),
    ("send_email", {"to": "someone@example.org", "body": "hi"}, "high"),
    ("post_status", {"text": "hello world"}, "high"),
    ("pay_invoice", {"amount": 25}, "high"),
    ("delete_note", {"id": "n1"}, "medium"),
    ("ui", {"kind": "diff"}, "low"),
    ("lookup", {"q": "x"}, "low"),
]

# Anything a provider might hand back: good probabilities, garbage, wrong options, outcome names.
OUTPUTS = st.one_of(
    st.dictionaries(st.sampled_from(["yes", "no"]), st.floats(min_value=0, max_value=1)),
    st.dictionaries(
        st.sampled_from(["yes", "no", *OUTCOMES, "allow_always"]),
        st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(), st.text(max_size=3)),
    ),
    st.sampled_from([None, "allow", ["yes"], 0.99, {"yes": 0.0, "no": 0.0}]),
)


class Hostile:
    """A provider whose output is chosen by Hypothesis; counts what it was shown."""

    name = "hostile"
    timeout = 5.0

    def __init__(self, output: Any) -> None:
        self.output = output
        self.states: list[str] = []

    async def probabilities(self, question: Question, state: str) -> Mapping[str, float]:
        self.states.append(state)
        return self.output  # type: ignore[no-any-return]


def _spec(name: str, risk: str) -> ToolSpec:
    return ToolSpec(name=name, description="", parameters={"type": "object"}, risk=risk)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(output=OUTPUTS, everywhere=st.sampled_from(["allow", "log", "ask", None]))
def test_no_provider_output_loosens_any_gate_outcome(output: Any, everywhere: str | None) -> None:
    """Under the default policy, or one that says ``everywhere`` for every cell (allow: the loosest)."""
    policy = (
        Policy()
        if everywhere is None
        else Policy.from_mapping(
            {
                "matrix": {r: {e: everywhere for e in AXES["exposure"]} for r in AXES["reversibility"]},
                "paid": everywhere,
                "third_party": everywhere,
            }
        )
    )
    plain = ConsequenceGate(policy, workspace=WORKSPACE)
    hostile = Hostile(output)
    advisor = DecisionAdvisor(Decider([hostile]), budget=5.0)
    advised = ConsequenceGate(policy, workspace=WORKSPACE, advisor=advisor)
    try:
        for name, arguments, risk in CALLS:
            spec = _spec(name, risk)
            before, after = plain.check(spec, dict(arguments)), advised.check(spec, dict(arguments))
            assert outcome_rank(after.action) >= outcome_rank(before.action), (name, arguments, output)
            if after.action != before.action:
                assert after.action == "ask"  # the only thing a model can do is ask
            cell = classify(name, arguments, risk=risk, scope=policy.with_workspace(WORKSPACE).scope)
            if cell.axes.guarded:
                assert after.action == before.action
                assert action_state(cell) not in hostile.states  # never shown to the model
    finally:
        advisor.close()


def test_a_confident_yes_makes_an_unguarded_action_ask_and_nothing_else_does() -> None:
    spec = _spec("bash", "high")
    arguments = {"command": "pip install requests"}
    plain = ConsequenceGate(workspace=WORKSPACE).check(spec, dict(arguments))
    sure = DecisionAdvisor(Decider([Hostile({"yes": 0.95, "no": 0.05})]))
    unsure = DecisionAdvisor(Decider([Hostile({"yes": 0.6, "no": 0.4})]))
    no = DecisionAdvisor(Decider([Hostile({"yes": 0.0, "no": 1.0})]))
    try:
        assert ConsequenceGate(workspace=WORKSPACE, advisor=sure).check(spec, dict(arguments)).action == max(
            plain.action, "ask", key=outcome_rank
        )
        for advisor in (unsure, no):
            assert (
                ConsequenceGate(workspace=WORKSPACE, advisor=advisor).check(spec, dict(arguments)).action
                == plain.action
            )
    finally:
        for advisor in (sure, unsure, no):
            advisor.close()


def test_the_advisor_abstains_when_the_decision_runs_past_its_budget() -> None:
    class Sleepy(Hostile):
        async def probabilities(self, question: Question, state: str) -> Mapping[str, float]:
            import asyncio

            await asyncio.sleep(1.0)
            return {"yes": 1.0}

    advisor = DecisionAdvisor(Decider([Sleepy(None)]), budget=0.05)
    try:
        cell = classify("bash", {"command": "pip install requests"}, risk="high")
        assert advisor.advise(cell, {}) is None
    finally:
        advisor.close()


def test_proposals_are_ask_or_nothing() -> None:
    from exo_core.decisions import Decision

    for applied in ("yes", "no", None, "allow", "deny"):
        decision = Decision("confirm", CONFIRM.options, {}, {}, applied, "p", "provider", applied=applied)
        assert proposal(decision) in ("ask", None)
