"""The consequence gate: ``classify`` then ``decide``, behind the loop's :class:`Gate` seam.

:class:`ConsequenceGate` is what the core uses by default. For each tool
call it classifies the action, decides it under the person's policy, lets an
optional decision model *tighten* the result (never loosen it), and returns a
:class:`~exo_core.agent.seams.GateOutcome` with the outcome, a one-line
summary, the axes and the rule key that ``allow_always`` remembers for the
rest of the run. The operator floor holds throughout, ``allow_always``
included.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, Protocol

from exo_core.agent.seams import GateOutcome
from exo_core.errors import ExoError
from exo_core.gate.axes import OUTCOMES
from exo_core.gate.classify import Classification, classify
from exo_core.gate.floor import tighten
from exo_core.gate.policy import Decision, Policy, decide
from exo_core.tools.spec import ToolSpec

__all__ = ["ConsequenceGate", "Advisor", "evaluate"]

log = logging.getLogger(__name__)

# Each outcome the policy computes (one of axes.OUTCOMES) as the seam's literal type.
_ACTIONS: dict[str, Literal["allow", "log", "ask", "deny"]] = {
    "allow": "allow",
    "log": "log",
    "ask": "ask",
    "deny": "deny",
}


class Advisor(Protocol):
    """A decision model's view of an action: an outcome it proposes, or ``None`` to abstain."""

    def advise(self, classification: Classification, arguments: Mapping[str, Any]) -> str | None:
        """Propose ``allow``, ``log``, ``ask`` or ``deny`` (only a stricter proposal has any effect)."""
        ...


def evaluate(
    tool: str,
    arguments: Mapping[str, Any],
    policy: Policy,
    *,
    risk: str = "low",
    effects: tuple[str, ...] = (),
    always: frozenset[str] = frozenset(),
) -> Decision:
    """Classify and decide one call (pure: what ``exo gate check`` prints)."""
    amount = arguments.get("amount")
    number = float(amount) if isinstance(amount, (int, float)) and not isinstance(amount, bool) else None
    cell = classify(tool, arguments, scope=policy.scope, risk=risk, effects=effects)
    return decide(cell, policy, amount=number, always=always)


class ConsequenceGate:
    """The default gate: the person's policy under the operator floor; ``allow_always`` per run."""

    def __init__(
        self,
        policy: Policy | None = None,
        *,
        workspace: Path | None = None,
        advisor: Advisor | None = None,
        exo_home: Path | None = None,
        stores: tuple[Path, ...] = (),
    ) -> None:
        policy = policy or Policy()
        policy = policy.with_workspace(workspace) if workspace is not None else policy
        # exod's own files (keys, token, sockets, policy, the stores' ledgers) are off limits to the file tools.
        self.policy = policy.with_exo(exo_home, stores) if exo_home is not None or stores else policy
        self._advisor = advisor
        self._always: set[str] = set()

    def check(self, spec: ToolSpec, arguments: dict[str, Any]) -> GateOutcome:
        """The outcome for calling ``spec`` with ``arguments``."""
        decision = evaluate(
            spec.name, arguments, self.policy, risk=spec.risk, effects=spec.effects, always=frozenset(self._always)
        )
        outcome = decision.outcome
        reason = "; ".join(w for p in decision.deciding for w in p.why[-1:])
        if self._advisor is not None:
            try:
                proposed = self._advisor.advise(decision.classification, arguments)
            except ExoError as exc:
                # A decision model that fails abstains (docs/decisions.md): the turn never blocks on it.
                log.warning("decision model failed; the gate decides alone: %s", exc)
                proposed = None
            tightened = tighten(outcome, proposed if proposed in OUTCOMES else None)
            if tightened != outcome:
                outcome, reason = tightened, f"{reason}; a decision model asked to tighten it to {tightened}"
        # No floor step here: decide() already raised the outcome to the floor, and tighten() only raises.
        return GateOutcome(
            _ACTIONS[outcome],
            decision.summary,
            spec.risk,
            reason,
            decision.rule_key,
            axes=decision.classification.axes.as_dict(),
            keys=tuple(sorted({p.finding.key for p in decision.parts})),
            targets=decision.classification.targets,
        )

    def allow_always(self, rule_key: str) -> None:
        """Stop asking for ``rule_key`` for the rest of this run (the operator floor still asks)."""
        self._always.add(rule_key)
