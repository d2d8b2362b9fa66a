"""Which messages the learning question may interrupt for, and the benchmark that counts it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from exo_core.decisions.signal_ask import ordinary_turn, worth_asking
from exo_core.decisions.signal_escalation import signal_wording

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    "text",
    [
        "Add 'call the plumber' to my todo.txt",
        "Please append the line 'call the plumber' to the file todo.txt",
        "What time is it in Tokyo?",
        "Hello!",
        "Thanks, that's great",
        "Good. Create a channel for the marketing team too.",
        "Never mind the refund, it's a small amount.",
        "👍",
    ],
)
def test_ordinary_turns_are_not_asked_about(text: str) -> None:
    assert ordinary_turn(text) and not worth_asking(text)


@pytest.mark.parametrize(
    "text",
    [
        "Hmm, the second line reads oddly.",
        "That's too long.",
        "Can you use my initials instead?",
        "From now on, sign with just my initial.",
        "Why did you send it to Bob?",
        "Don't book anything before ten.",
        "Désormais, écris-moi en français.",
    ],
)
def test_messages_that_may_teach_are_asked_about(text: str) -> None:
    assert worth_asking(text)


@given(st.text(max_size=2000))
def test_any_text_is_judged_without_failing(text: str) -> None:
    assert worth_asking(text) is not ordinary_turn(text)


def test_the_learning_question_is_short_and_quiet_for_the_handheld() -> None:
    wording = signal_wording("Add eggs to the list and keep it sorted by aisle from now on please")
    assert wording.quiet and 0 < len(wording.short) <= 20


def test_the_benchmark_counts_questions_before_and_after(tmp_path: Path) -> None:
    out = tmp_path / "signal_asks.json"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.bench_signal_asks", "--quick", "--json", "--out", str(out)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    got = json.loads(out.read_text())["sets"]["held-out"]
    assert got["ordinary"] > 0 and got["teaching"] > 0
    assert got["asked_after"] <= got["asked_before"] and got["caught_after"] <= got["caught_before"]
