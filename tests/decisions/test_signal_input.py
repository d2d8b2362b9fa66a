"""``exo decide signal`` on what a person might really pass: empty text, 100 KB, binary garbage,
another language (issue 21). A typed error or an honest abstention, never a crash."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from exo_core.decisions import Decider, signal
from exo_core.decisions.providers import RulesOnlyProvider
from exo_testkit import ROOT


def _exo(home: Path, *args: str | bytes) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LC_ALL": "C.UTF-8"}
    return subprocess.run(
        [sys.executable, "-m", "exo_core.cli", *args, "--home", str(home)],
        capture_output=True,
        cwd=ROOT,
        env=env,
        timeout=120,
    )


def test_empty_and_huge_texts_are_typed_errors_that_say_what_to_pass(tmp_path: Path) -> None:
    empty = _exo(tmp_path, "decide", "signal", "", "--providers", "rules-only")
    assert empty.returncode == 2 and b"give the text" in empty.stderr
    huge = _exo(tmp_path, "decide", "signal", "No, shorter please. " * 5000, "--providers", "rules-only")
    assert huge.returncode == 2
    assert b"at most 4000 characters" in huge.stderr and b"100000" in huge.stderr
    assert b"Traceback" not in empty.stderr + huge.stderr


def test_binary_garbage_is_refused_as_unreadable_even_when_recorded(tmp_path: Path) -> None:
    garbage = bytes(range(1, 32)) + bytes(range(128, 256)) * 2  # control characters and bytes that are not UTF-8
    out = _exo(tmp_path, "decide", "signal", garbage, "--providers", "rules-only")
    assert out.returncode == 2 and b"not readable" in out.stderr and b"Traceback" not in out.stderr
    # A few undecodable bytes inside a real message are decided on (and hash into the ledger).
    assert _exo(tmp_path, "init").returncode == 0
    mixed = _exo(tmp_path, "decide", "signal", b"No, I said Tuesday \xff\xfe.", "--json", "--record")
    assert mixed.returncode == 0, mixed.stderr
    result = json.loads(mixed.stdout)
    assert result["chosen"] == "correction" and result["entry_id"]


def test_another_language_is_an_honest_abstention_escalated_to_the_larger_model(tmp_path: Path) -> None:
    # ("É na terça, não na quinta." is read: "X, not Y" after another language's "to be", signal_rules.py.)
    for text in ("Você errou o dia da reunião.", "Das Datum stimmt nicht, es ist Dienstag."):
        out = _exo(tmp_path, "decide", "signal", text, "--json", "--providers", "rules-only")
        assert out.returncode == 0, out.stderr
        result = json.loads(out.stdout)
        # The rules and cue words read English (and a few scope words of other languages): they say they do
        # not know, and hand it on.
        assert (result["chosen"], result["abstained"], result["escalate"]) == (None, True, "main")
        assert max(result["probabilities"].values()) < 0.6
    # A scope word of another language ("ab jetzt": from now on) is read like its English one.
    out = _exo(
        tmp_path,
        "decide",
        "signal",
        "Ab jetzt bitte immer auf Deutsch antworten.",
        "--json",
        "--providers",
        "rules-only",
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["chosen"] == "rule"


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=400))
async def test_any_text_gets_a_decision_or_an_abstention(text: str) -> None:
    decision = await signal(Decider([RulesOnlyProvider()]), text)
    assert decision.chosen in (None, "correction", "rule", "neither")
    assert abs(sum(decision.probabilities.values()) - 1.0) < 1e-9
    if decision.chosen is None:
        assert decision.escalate == "main"


async def test_the_rules_read_long_adversarial_text_in_one_pass() -> None:
    # Patterns with nested quantifiers would take minutes here; these read it linearly.
    for text in ("you " * 25_000, "no," * 30_000 + "?", "always " * 14_000 + "?" * 100, "a" * 100_000):
        decision = await signal(Decider([RulesOnlyProvider()]), text)
        assert decision.chosen in (None, "correction", "rule", "neither")
