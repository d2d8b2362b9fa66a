"""Decisions in the ledger: hashes and probabilities only, then labels that refer to them (docs/decisions.md §5).

A decision is appended as a ``decision`` entry whose body holds the state's
SHA-256, the options, the raw and the used probabilities, the outcome and who
answered; never the state text (the ledger's own ``decision`` rule refuses
any string with whitespace, so raw text cannot slip in). A later signal about
it (the person accepted the result, opened a different panel, undid the
action) is an ``outcome`` entry with ``status: label`` that refers to it.

:func:`labelled_samples` turns the two back into calibration samples per
provider and mechanism, which is how calibration is rebuilt from the ledger.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from typing import Any

from exo_core.decisions.calibration import Sample
from exo_core.seams.decision import Decision, Question
from exo_core.seams.recorder import Recorder

__all__ = ["SIGNALS", "decision_body", "record_label", "labelled_samples"]

# Where a label comes from: the result was kept, the person chose another option, or undid it.
SIGNALS = ("accepted", "chose", "undone", "person")


def _round(probabilities: Mapping[str, float]) -> dict[str, float]:
    return {o: round(float(p), 6) for o, p in probabilities.items()}


def decision_body(question: Question, state: str, decision: Decision) -> dict[str, Any]:
    """The ledger body for ``decision``: the state's hash, never its text."""
    return {
        "decider": question.mechanism,
        "question": question.kind,
        "state": hashlib.sha256(state.encode("utf-8", "surrogatepass")).hexdigest(),  # argv may carry lone surrogates
        "options": list(question.options),
        "provider": decision.provider,
        "via": decision.via,
        "raw": _round(decision.raw),
        "p": _round(decision.probabilities),
        "calibrated": decision.calibrated,
        "chosen": decision.chosen,
        "applied": decision.applied,
        "escalate": decision.escalate,
        "threshold": question.threshold,
        "rule": decision.rule or None,
        "failures": [[name, reason] for name, reason in decision.failures],
        "ms": int(round(decision.seconds * 1000)),
    }


def record_label(recorder: Recorder, decision: Decision, signal: str, *, label: str | None = None) -> str | None:
    """Label a recorded ``decision`` from a later signal; returns the label entry's id.

    ``accepted`` labels it with what was applied; ``chose`` with ``label`` (the
    option the person actually took); ``undone`` marks what was applied as
    wrong (for a predicate that makes the other answer right); ``person`` is
    the person's explicit answer ``label``.
    """
    if signal not in SIGNALS:
        raise ValueError(f"label signal must be one of {', '.join(SIGNALS)}, not {signal!r}")
    if decision.entry_id is None:
        raise ValueError("this decision was not recorded in the ledger, so it cannot be labelled")
    wrong = None
    if signal == "accepted":
        label = decision.applied
    elif signal == "undone":
        wrong, label = decision.applied, None
        if decision.options == ("yes", "no") and wrong in decision.options:
            label = "no" if wrong == "yes" else "yes"
    if label is not None and label not in decision.options:
        raise ValueError(f"{label!r} is not one of {', '.join(decision.options)}")
    # The body names the right option when known, else the one that was wrong.
    body = {"status": "label", "decider": decision.mechanism, "label": label, "wrong": wrong, "signal": signal}
    return recorder.record("outcome", body, refs=(decision.entry_id,))


def labelled_samples(entries: Iterable[Any]) -> dict[tuple[str, str], tuple[tuple[str, ...], list[Sample]]]:
    """Calibration samples by ``(provider, mechanism)`` from ledger entries (``StoredEntry``) in arrival order.

    Only decisions a provider answered (not rules) count; the latest label of
    a decision wins; a label that only says which option was wrong is skipped.
    """
    decisions: dict[str, Mapping[str, Any]] = {}
    labels: dict[str, str] = {}
    for entry in entries:
        body = entry.body
        if entry.kind == "decision" and isinstance(body.get("raw"), dict) and body.get("via") != "rule":
            decisions[entry.id] = body
        elif entry.kind == "outcome" and body.get("status") == "label" and entry.refs:
            label = body.get("label")
            if isinstance(label, str):
                labels[entry.refs[0]] = label
            else:
                labels.pop(entry.refs[0], None)
    out: dict[tuple[str, str], tuple[tuple[str, ...], list[Sample]]] = {}
    for entry_id, label in labels.items():
        body = decisions.get(entry_id)
        if body is None or body.get("provider") in (None, "none"):
            continue
        options = tuple(body.get("options", ()))
        if label not in options:
            continue
        bucket = out.setdefault((str(body["provider"]), str(body["decider"])), (options, []))
        if bucket[0] == options:  # options changed (a plugin added a toolset): a new question
            bucket[1].append((dict(body["raw"]), label))
    return out
