"""The full-screen terminal answers ``ask_person`` the three ways the protocol allows: an option's number,
typed text (when the question takes text), or Esc to decline, so the asking turn goes on at once instead
of waiting out the tool's timeout (docs/protocol.md ``question.answer``)."""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

import pytest
from exo_testkit import write_script
from tmux_driver import TMUX, Tmux

pytestmark = pytest.mark.skipif(TMUX is None, reason="tmux is not installed (scripts/install_system.sh)")


def _ask(question: str, options: list[str], *, allow_text: bool = False) -> dict[str, object]:
    arguments: dict[str, object] = {"question": question, "options": options}
    if allow_text:
        arguments["allow_text"] = True
    return {"text": "", "tool_calls": [{"name": "ask_person", "arguments": arguments}]}


SCRIPT = [
    _ask("Which day?", ["Monday", "Tuesday"]),
    {"text": "Going on without a day."},
    _ask("Which room?", ["Blue", "Green"], allow_text=True),
    {"text": "The room is noted."},
    _ask("Which floor?", ["First", "Second"]),
    {"text": "Second floor it is."},
]


def _tool_results(home: Path) -> list[str]:
    db = sqlite3.connect(home / "sessions.sqlite")
    try:
        rows = db.execute("SELECT content FROM messages WHERE role = 'tool' ORDER BY rowid").fetchall()
    finally:
        db.close()
    return [row[0] for row in rows]


def test_a_question_is_declined_with_esc_answered_by_text_and_by_number(
    exod_factory, exo_home: Path, workspace: Path, tmp_path: Path
) -> None:
    (tmp_path / "config" / "exo").mkdir(parents=True)
    (tmp_path / "config" / "exo" / "terminal.toml").write_text('theme = "plain"\n')
    exod_factory(exo_home, write_script(tmp_path / "s.json", SCRIPT), workspace)
    command = [sys.executable, "-m", "exo_core.cli", "chat", "--home", str(exo_home), "--no-spawn"]
    env = {"XDG_CONFIG_HOME": str(tmp_path / "config"), "EXO_HOME": str(exo_home)}
    term = Tmux(command, cwd=workspace, env=env)
    try:
        term.wait_for("· live ·")

        # 1. Esc declines: the turn goes on at once with "did not answer".
        term.line("book a day")
        term.wait_for("answer: 1-2 picks · Esc declines")
        term.keys("Escape")
        term.wait_for("Going on without a day.")

        # 2. A question that takes text: the typed line is the answer, not a new message.
        term.line("book a room")
        term.wait_for("answer: 1-2 picks · type an answer, Enter · Esc declines")
        term.line("the big one by the window")
        term.wait_for("The room is noted.")

        # 3. A number out of range is typed text; one in range picks the option.
        term.line("book a floor")
        term.wait_for("answer: 1-2 picks · Esc declines")
        term.type("7")
        term.keys("BSpace")
        term.type("2")
        term.wait_for("Second floor it is.")
    finally:
        term.close()
    assert _tool_results(exo_home) == [
        "The person did not answer; go on without their answer.",
        "The person answered: the big one by the window",
        "The person chose option 2: Second",
    ]
