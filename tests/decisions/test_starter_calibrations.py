"""The calibrations that ship with Exo stand in until a home has labelled enough of its own (docs/decisions.md §4)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from exo_core.decisions import Decider
from exo_core.decisions.calibration import MIN_SAMPLES, starter_key
from exo_core.decisions.record import record_label
from exo_core.decisions.setup import calibration_from_store
from exo_core.decisions.starters import DEFAULT_STARTERS, BadStarterFile, load_starters
from exo_core.decisions.uses import SIGNAL

from .conftest import Scripted

REPO = Path(__file__).resolve().parents[2]
LAPTOP = "laptop:qwen2.5-coder-1.5b-instruct:chat"  # the route `exo models serve --print-config` names
LOCAL = "local:qwen2.5-coder-0.5b-instruct-q4_k_m:chat"  # the local provider loaded by file
LEANING = {"correction": 0.2, "rule": 0.7, "neither": 0.1}  # raw: "rule" at 0.7 would decide
TEXT = "hmm, the second one maybe"  # no rule settles it
STUDIES = {"decisions_prompt.json", "decisions_sources.json"}  # the fit-data studies starters come from


def test_the_shipped_file_is_what_the_fit_data_raws_give() -> None:
    found = subprocess.run(
        [sys.executable, "-m", "benchmarks.starter_calibrations", "--check"], cwd=REPO, capture_output=True, text=True
    )
    assert found.returncode == 0, found.stdout + found.stderr
    shipped = json.loads(DEFAULT_STARTERS.read_text(encoding="utf-8"))
    assert all(entry["fitted_on"].split()[0] in STUDIES for entry in shipped["starters"])


def test_a_provider_is_matched_by_its_name_without_the_route_provider() -> None:
    starters = load_starters()
    assert starter_key(LAPTOP) == "qwen2.5-coder-1.5b-instruct:chat"
    for name in (LAPTOP, "hosted2:qwen2.5-coder-1.5b-instruct:chat", LOCAL, "local:qwen2.5-coder-0.5b-instruct:chat"):
        assert (starter_key(name), "signal") in starters, name
    assert (starter_key(LAPTOP + ":nn"), "signal") in starters
    assert (starter_key("laptop:some-other-model:chat"), "signal") not in starters
    assert starter_key("rules") == "rules"


async def test_a_fresh_home_calibrates_the_laptops_decision_with_its_starter(tmp_path: Path) -> None:
    book = calibration_from_store(tmp_path / "no-store")  # no ledger: the starters alone
    decision = await Decider([Scripted(LAPTOP, LEANING)], calibration=book).decide(SIGNAL, TEXT, record=False)
    starter = load_starters()[(starter_key(LAPTOP), "signal")]
    assert decision.calibrated
    assert dict(decision.probabilities) == pytest.approx(starter.apply(LEANING))
    assert dict(decision.raw) == pytest.approx(LEANING)
    # A model no starter knows keeps its raw numbers, and says so.
    other = await Decider([Scripted("laptop:other:chat", LEANING)], calibration=book).decide(SIGNAL, TEXT, record=False)
    assert not other.calibrated and other.chosen == "rule"


async def test_the_homes_own_labels_replace_the_starter_from_min_samples(store: tuple[Path, Any]) -> None:
    folder, recorder = store
    decider = Decider([Scripted(LAPTOP, LEANING)], recorder=recorder)
    decisions = [await decider.decide(SIGNAL, f"{TEXT} {i}") for i in range(MIN_SAMPLES)]
    starter = load_starters()[(starter_key(LAPTOP), "signal")]
    # The person says each was a correction: a few labels fit a slope alone, which keeps the starter in place.
    for decision in decisions[:12]:
        record_label(recorder, decision, "chose", label="correction")
    few = calibration_from_store(folder)
    assert few.entries[(LAPTOP, "signal")].samples == 12
    assert few.apply(LAPTOP, "signal", LEANING) == (pytest.approx(starter.apply(LEANING)), True)
    for decision in decisions[12:]:
        record_label(recorder, decision, "chose", label="correction")
    enough = calibration_from_store(folder)
    own = enough.entries[(LAPTOP, "signal")]
    used, calibrated = enough.apply(LAPTOP, "signal", LEANING)
    assert own.samples == MIN_SAMPLES and calibrated
    assert used == pytest.approx(own.apply(LEANING)) and max(used, key=used.__getitem__) == "correction"


@pytest.mark.parametrize(
    ("content", "named"),
    [
        ("not json", "cannot read"),
        ("[]", '"starters" list'),
        ('{"starters": [5]}', "starter 1: expected an object"),
        (
            '{"starters": [{"mechanism": "signal", "style": "chat", "models": [], "offsets": {"a": 1}, '
            '"slope": 1, "samples": 3}]}',
            '"models"',
        ),
        (
            '{"starters": [{"mechanism": "signal", "style": "chat", "models": ["m"], "offsets": {"a": 1}, '
            '"slope": -1, "samples": 3}]}',
            '"slope"',
        ),
        (
            '{"starters": [{"mechanism": "signal", "style": "chat", "models": ["m"], "offsets": {"a": "x"}, '
            '"slope": 1, "samples": 3}]}',
            '"offsets"',
        ),
        (
            '{"starters": [{"mechanism": "signal", "style": "chat", "models": ["m"], "offsets": {"a": 1}, '
            '"slope": 1, "samples": true}]}',
            '"samples"',
        ),
    ],
)
def test_a_bad_starter_file_is_a_typed_error_naming_it(tmp_path: Path, content: str, named: str) -> None:
    path = tmp_path / "starters.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(BadStarterFile, match=named) as raised:
        load_starters(path)
    assert str(path) in str(raised.value)


_VALUES = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.floats(allow_nan=True), st.text(max_size=5))


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.dictionaries(
            st.sampled_from(["mechanism", "style", "models", "offsets", "slope", "samples"]),
            st.one_of(_VALUES, st.lists(_VALUES, max_size=3), st.dictionaries(st.text(max_size=3), _VALUES)),
        ),
        max_size=3,
    )
)
def test_any_starter_entries_load_or_are_a_bad_starter_file(tmp_path_factory: Any, entries: list[Any]) -> None:
    path = tmp_path_factory.mktemp("starters") / "starters.json"
    path.write_text(json.dumps({"starters": entries}), encoding="utf-8")
    try:
        found = load_starters(path)
    except BadStarterFile:
        return
    for calibration in found.values():
        assert calibration.slope > 0 and calibration.samples >= 1
