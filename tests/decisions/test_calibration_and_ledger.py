"""Calibration per provider and mechanism; decision entries hold no raw text; labels refit calibration."""

from __future__ import annotations

import math
import random
from pathlib import Path
from typing import Any

import pytest

from exo_core.decisions import (
    PANEL,
    SIGNAL,
    CalibrationBook,
    Decider,
    expected_calibration_error,
    fit,
    labelled_samples,
    record_label,
)
from exo_core.decisions.setup import calibration_from_store
from exo_core.errors import BadBodyError
from exo_core.ledger import Ledger

from .conftest import Scripted

OPTIONS = SIGNAL.options


def _overconfident(n: int, seed: int = 1) -> list[tuple[dict[str, float], str]]:
    """A provider that says ~0.9 for its pick and likes 'correction', but is right only ~55% of the time."""
    rnd = random.Random(seed)
    rows = []
    for _ in range(n):
        label = rnd.choice(OPTIONS)
        pick = label if rnd.random() < 0.45 else "correction"
        raw = {o: 0.9 if o == pick else 0.05 for o in OPTIONS}
        rows.append((raw, label))
    return rows


def _ece(rows: list[tuple[dict[str, float], str]]) -> float:
    conf = [max(r.values()) for r, _ in rows]
    right = [max(r, key=r.get) == label for r, label in rows]
    return expected_calibration_error(conf, right)


def test_calibration_makes_stated_confidence_match_accuracy() -> None:
    train, test = _overconfident(300, seed=1), _overconfident(300, seed=2)
    calibration = fit(OPTIONS, train)
    assert calibration is not None and calibration.samples == 300
    # Its favourite is pulled down: a "0.9 correction" was right about a third of the time.
    assert calibration.apply({"correction": 0.9, "rule": 0.05, "neither": 0.05})["correction"] < 0.6
    calibrated = [(calibration.apply(raw), label) for raw, label in test]
    assert _ece(test) > 0.25
    assert _ece(calibrated) < 0.08
    assert all(math.isclose(sum(p.values()), 1.0) for p, _ in calibrated)


def test_too_few_labels_means_no_calibration_and_raw_numbers_are_used() -> None:
    assert fit(OPTIONS, _overconfident(9)) is None
    book = CalibrationBook.fitted(
        {("p", "signal"): (OPTIONS, _overconfident(9)), ("p", "panel"): (OPTIONS, _overconfident(40))}
    )
    assert set(book.entries) == {("p", "panel")}
    raw = {"correction": 0.9, "rule": 0.05, "neither": 0.05}
    assert book.apply("p", "signal", raw) == (raw, False)
    assert book.apply("q", "panel", raw) == (raw, False)  # per provider
    used, calibrated = book.apply("p", "panel", raw)
    assert calibrated and used != raw


def test_a_few_labels_fit_the_slope_alone() -> None:
    """From 10 to 29 labels only the temperature is fitted (docs/decisions.md §4): one number that a few
    cases pin down, where 7 cases once left an overconfident provider's raw numbers in place."""
    few = fit(OPTIONS, _overconfident(29, seed=3))
    assert few is not None and few.samples == 29
    assert few.offsets == (0.0, 0.0, 0.0)
    assert few.slope < 1.0  # an overconfident provider is softened
    raw = {"correction": 0.9, "rule": 0.05, "neither": 0.05}
    softened = few.apply(raw)
    assert softened["correction"] < raw["correction"]
    assert max(softened, key=softened.__getitem__) == "correction"  # the ranking is kept
    full = fit(OPTIONS, _overconfident(30, seed=3))
    assert full is not None and any(offset != 0.0 for offset in full.offsets)


def test_ece_of_perfect_and_of_useless_confidence() -> None:
    assert expected_calibration_error([0.8] * 10, [True] * 8 + [False] * 2) == pytest.approx(0.0)
    assert expected_calibration_error([1.0] * 4, [False] * 4) == pytest.approx(1.0)
    assert expected_calibration_error([], []) == 0.0


async def test_a_decision_entry_holds_hashes_and_numbers_never_the_text(store: tuple[Path, Any]) -> None:
    folder, recorder = store
    secret = "No, my account number is 12345 and my doctor is Dr Silva"
    decider = Decider([Scripted("p", {"correction": 0.7, "rule": 0.2, "neither": 0.1})], recorder=recorder)
    by_rule = await decider.decide(SIGNAL, secret)
    by_provider = await decider.decide(SIGNAL, "I'd rather you kept it shorter")
    assert by_rule.entry_id and by_provider.entry_id
    with Ledger.open_store(folder) as ledger:
        entries = [e for e in ledger.entries() if e.kind == "decision"]
        assert len(entries) == 2
        for entry in entries:
            content = entry.content.decode("utf-8")
            assert "Silva" not in content and "12345" not in content and "shorter" not in content
            for word in ("account", "doctor", "rather"):
                assert word not in content
        body = entries[1].body
        assert body["decider"] == "signal" and len(body["state"]) == 64
        assert body["raw"]["correction"] == pytest.approx(0.7) and body["provider"] == "p"
        assert body["chosen"] == "correction" and body["via"] == "provider"
    with pytest.raises(BadBodyError):  # the ledger itself refuses raw text in a decision
        recorder.record("decision", {"decider": "signal", "state": secret})


async def test_labels_refer_to_decisions_and_rebuild_calibration_from_the_ledger(store: tuple[Path, Any]) -> None:
    folder, recorder = store
    provider = Scripted("p", {"none": 0.1, "diff": 0.85, "file_preview": 0.05})
    decider = Decider([provider], recorder=recorder)
    decisions = [await decider.decide(PANEL, f"hmm number {i}") for i in range(32)]
    for i, decision in enumerate(decisions):
        if i % 4 == 0:
            record_label(recorder, decision, "accepted")  # the diff panel was right
        elif i % 4 == 1:
            record_label(recorder, decision, "chose", label="none")  # the person closed it
        elif i % 4 == 2:
            record_label(recorder, decision, "undone")  # wrong, right answer unknown: not a sample
        else:
            record_label(recorder, decision, "chose", label="file_preview")
    with Ledger.open_store(folder) as ledger:
        labels = [e for e in ledger.entries() if e.kind == "outcome"]
        assert len(labels) == 32 and labels[0].refs == (decisions[0].entry_id,)
        samples = labelled_samples(ledger.entries())
    options, rows = samples[("p", "panel")]
    assert options == PANEL.options and len(rows) == 24
    only_slope = calibration_from_store(folder).entries[("p", "panel")]  # 24 < 30: the slope alone
    assert only_slope.offsets == (0.0,) * len(PANEL.options) and only_slope.slope < 1.0
    book = calibration_from_store(folder, min_samples=20)
    used, calibrated = book.apply("p", "panel", decisions[0].raw)
    assert calibrated and used["diff"] < 0.5  # right 8 times in 24: no longer "0.85"
    calibrated_decider = Decider([provider], calibration=book)
    again = await calibrated_decider.decide(PANEL, "hmm again")
    assert again.calibrated and again.raw["diff"] == pytest.approx(0.85) and again.chosen is None


def test_labels_are_checked() -> None:
    from exo_core.decisions import Decision

    unrecorded = Decision("panel", PANEL.options, {}, {}, "diff", "p", "provider", applied="diff")
    with pytest.raises(ValueError):
        record_label(None, unrecorded, "accepted")  # type: ignore[arg-type]
    recorded = Decision("panel", PANEL.options, {}, {}, "diff", "p", "provider", applied="diff", entry_id="e" * 64)
    with pytest.raises(ValueError):
        record_label(None, recorded, "chose", label="banana")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        record_label(None, recorded, "maybe")  # type: ignore[arg-type]
