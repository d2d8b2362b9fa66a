"""The operator floor: outcomes no person's policy, override or answer can lower.

Amplifying a person is neutral; it would amplify a bad actor too. So the
rules that protect *other* people sit here, outside the person's policy
(docs/gate.md, docs/security.md): an irreversible public act that touches a third party always
asks. The floor only ever raises an outcome (``deny`` stays ``deny``).

:func:`tighten` is the one way a decision model's opinion enters the gate:
it may move an outcome toward ``ask`` or ``deny``, never toward ``allow``
(docs/decisions.md).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from exo_core.gate.axes import Axes, outcome_rank, strictest

__all__ = ["FloorRule", "FLOOR", "floor_for", "apply_floor", "tighten"]


@dataclass(frozen=True, slots=True)
class FloorRule:
    """One operator rule: when ``applies`` holds, the outcome is at least ``minimum``."""

    name: str
    applies: Callable[[Axes], bool]
    minimum: str


FLOOR: tuple[FloorRule, ...] = (
    FloorRule(
        "an irreversible public act that touches a third party",
        lambda a: a.reversibility == "irreversible" and a.exposure == "public" and a.third_party == "affects",
        "ask",
    ),
)


def floor_for(axes: Axes) -> tuple[str, str]:
    """The floor's minimum outcome for ``axes`` and the rule that set it (``allow``, '' when none applies)."""
    applying = ((rule.minimum, rule.name) for rule in FLOOR if rule.applies(axes))
    return max(applying, key=lambda pair: outcome_rank(pair[0]), default=("allow", ""))


def apply_floor(outcome: str, axes: Axes) -> tuple[str, str]:
    """``outcome`` raised to the floor for ``axes``; the floor rule's name when it raised it."""
    minimum, why = floor_for(axes)
    return (minimum, why) if outcome_rank(minimum) > outcome_rank(outcome) else (outcome, "")


def tighten(outcome: str, proposed: str | None) -> str:
    """``outcome`` made stricter by ``proposed`` (a decision model's view); never looser."""
    return outcome if proposed is None else strictest((outcome, proposed))
