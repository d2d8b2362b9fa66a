"""The consequence gate (docs/gate.md): classify an action on four axes, decide it under a policy.

Standard library only. ``classify`` and ``decide`` are pure; the operator
floor (:mod:`exo_core.gate.floor`) sits under every policy; the
:class:`ConsequenceGate` adapts both to the agent loop's gate seam.
"""

from exo_core.gate.axes import AXES, OUTCOMES, Axes, Finding
from exo_core.gate.classify import Classification, classify
from exo_core.gate.floor import FLOOR, apply_floor, tighten
from exo_core.gate.gate import Advisor, ConsequenceGate, evaluate
from exo_core.gate.policy import Decision, Policy, decide
from exo_core.gate.scope import Scope
from exo_core.gate.shell import ShellParse, SimpleCommand, parse_shell

__all__ = [
    "AXES",
    "OUTCOMES",
    "Axes",
    "Finding",
    "Classification",
    "classify",
    "Decision",
    "Policy",
    "decide",
    "FLOOR",
    "apply_floor",
    "tighten",
    "Scope",
    "ConsequenceGate",
    "Advisor",
    "evaluate",
    "ShellParse",
    "SimpleCommand",
    "parse_shell",
]
