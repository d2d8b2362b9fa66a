"""The terminal client says what happened: an empty answer and a failed turn are explained with what
to do, and a message typed while the core is down waits, visibly, and is sent once on reconnect."""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest
from exo_testkit import write_script
from tmux_driver import TMUX, Tmux

from exo_core.agent.outcome import explain_turn_end

pytestmark = pytest.mark.skipif(TMUX is None, reason="tmux is not installed (scripts/install_system.sh)")

SCRIPT = [
    {"text": ""},
    {"text": "Got it while you were away."},
    {"error": "fatal", "times": 1, "then": {"text": "unused"}},
]


def _chat(home: Path, workspace: Path, tmp_path: Path) -> Tmux:
    command = [sys.executable, "-m", "exo_core.cli", "chat", "--home", str(home), "--no-spawn"]
    return Tmux(command, cwd=workspace, env={"XDG_CONFIG_HOME": str(tmp_path / "config"), "EXO_HOME": str(home)})


def _user_messages(home: Path, text: str) -> int:
    db = sqlite3.connect(home / "sessions.sqlite")
    try:
        return db.execute("SELECT count(*) FROM messages WHERE role = 'user' AND content = ?", (text,)).fetchone()[0]
    finally:
        db.close()


def test_empty_failed_and_offline_in_a_real_terminal(exod_factory, exo_home: Path, workspace: Path, tmp_path: Path):
    (tmp_path / "config" / "exo").mkdir(parents=True)
    (tmp_path / "config" / "exo" / "terminal.toml").write_text('theme = "plain"\n')
    d = exod_factory(exo_home, write_script(tmp_path / "s.json", SCRIPT), workspace)
    term = _chat(exo_home, workspace, tmp_path)
    try:
        term.wait_for("· live ·")

        # 1. The model answers nothing: the screen says so and what to do.
        term.line("hello?")
        term.wait_for("The model returned an empty answer.")

        # 2. The core is down: the message waits with a visible mark, then goes exactly once.
        d.kill()
        term.wait_for("reconnecting")
        term.line("are you there?")
        term.wait_for("will send when connected: are you there?")
        d.start()
        term.wait_for("Got it while you were away.", timeout=40)
        term.wait_for("sent: are you there?")
        assert _user_messages(exo_home, "are you there?") == 1

        # 3. The model fails: the failure and the fix are shown.
        term.line("one more")
        term.wait_for("The model failed: scripted failure.")
    finally:
        term.close()


@pytest.mark.parametrize(
    ("reason", "error", "answer", "acted", "expected"),
    [
        ("end", None, "Paris.", False, None),
        ("end", None, "", True, None),
        ("end", None, "  ", False, "empty answer"),
        ("interrupted", None, "Par", False, "Stopped."),
        (
            "error",
            "model_error: the prompt has 1961 tokens but only 1536 fit in n_ctx 2048 with max_tokens 512",
            "",
            False,
            "[models.local] in config.toml",
        ),
        ("error", "model_error: cannot connect to http://laptop:8080/v1: refused", "", False, "unreachable"),
        ("error", "model_error: local model file /x.gguf is missing; run `exo models fetch`", "", False, "fetch"),
        ("error", "internal: KeyError: 'x'", "", False, "inside the core"),
        ("iteration_cap", None, "", True, "tool rounds"),
    ],
)
def test_each_end_gets_its_explanation(reason, error, answer, acted, expected) -> None:
    hint = explain_turn_end(reason, error, answer=answer, acted=acted)
    if expected is None:
        assert hint is None
    else:
        assert hint is not None and expected in hint, hint


CUT = "model_retry: laptop: the stream ended before the answer was finished"


@pytest.mark.parametrize(
    ("error", "shown_once", "stop"),
    [
        (CUT, "laptop: the stream ended before the answer was finished", "[turn error]"),
        # a hint that does not repeat the error: the error's detail stays on the stop line
        ("model_retry: laptop: cannot reach http://laptop:8080/v1 (refused)", "cannot reach", None),
    ],
    ids=["hint-says-it", "hint-differs"],
)
def test_a_failed_turn_is_shown_once_in_both_clients(error: str, shown_once: str, stop: str | None) -> None:
    """A cut laptop stream was printed twice in two formats: the stop line with the error, then the hint."""
    import asyncio
    import io

    from exo_core.client.linechat import LineChat
    from exo_core.protocol import Event
    from exo_core.terminal.prefs import TerminalPrefs
    from exo_core.terminal.transcript import Transcript

    hint = explain_turn_end("error", error, answer="Once upon", acted=False)
    assert hint is not None
    body = {"turn_id": "t1", "stop_reason": "error", "error": error, "hint": hint, "usage": {}}
    event = Event(id="e1", seq=1, session="s", type="turn.completed", ts="", body=body)

    out = io.StringIO()
    asyncio.run(_render_once(LineChat, out, event))
    printed = out.getvalue()
    assert printed.count(shown_once) == 1, printed
    if stop is not None:
        assert f"  {stop}\n" in printed, printed

    transcript = Transcript()
    transcript.apply(event)
    drawn = "\n".join(transcript.render(200, TerminalPrefs(theme="plain"), expanded=True))
    assert drawn.count(shown_once) == 1, drawn


async def _render_once(line_chat: Any, out: Any, event: Any) -> None:
    line_chat(client=None, out=out).render(event)
