"""Decision models (docs/decisions.md): typed questions answered with probabilities, rules first, tighten only.

One concept per module:

* :mod:`exo_core.seams.decision` — :class:`Question` (choice, score, predicate), :class:`Rule`,
  :class:`Decision`, the :class:`DecisionProvider` seam (on the seams floor, shared with the edge);
* :mod:`.decider`     — :class:`Decider`: rules, providers with timeouts, threshold, fallback;
* :mod:`.calibration` — Platt scaling per provider and mechanism; ECE;
* :mod:`.record`      — ``decision`` ledger entries (hashes and numbers) and their labels;
* :mod:`.providers`   — the rules-only and hosted providers (the local one is in ``exo_edge``);
* :mod:`.uses`        — the three decisions wired now: signal, toolset, panel;
* :mod:`.advisor`     — a decider as the gate's advisor (it may only propose ``ask``);
* :mod:`.setup`       — building a decider from an Exo home's config.

See ``docs/decisions.md``.
"""

from exo_core.decisions.calibration import MIN_SAMPLES, Calibration, CalibrationBook, expected_calibration_error, fit
from exo_core.decisions.decider import Decider
from exo_core.decisions.record import decision_body, labelled_samples, record_label
from exo_core.decisions.uses import PANEL, SIGNAL, TOOLSET, chosen_toolsets, panel, signal, toolset, toolset_question
from exo_core.seams.decision import (
    BadProviderOutput,
    Decision,
    DecisionProvider,
    DraftReadingProvider,
    Question,
    Rule,
    normalise,
)

__all__ = [
    "Question",
    "Rule",
    "Decision",
    "DecisionProvider",
    "DraftReadingProvider",
    "BadProviderOutput",
    "normalise",
    "Decider",
    "MIN_SAMPLES",
    "Calibration",
    "CalibrationBook",
    "fit",
    "expected_calibration_error",
    "decision_body",
    "record_label",
    "labelled_samples",
    "SIGNAL",
    "TOOLSET",
    "PANEL",
    "signal",
    "toolset",
    "panel",
    "toolset_question",
    "chosen_toolsets",
]
