"""The terminal client in a real tmux pane against a real exod: typed like a person would."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest
from exo_testkit import write_script
from tmux_driver import TMUX, Tmux

from exo_core.client import ExoClient

pytestmark = pytest.mark.skipif(TMUX is None, reason="tmux is not installed (scripts/install_system.sh)")

ANSWER = "Hello from Exo, streamed into the terminal."
SCRIPT = [
    {"text": ANSWER, "delay": 0.05, "chunk": 2},
    {
        "text": "Running it.",
        "tool_calls": [
            {"name": "bash", "arguments": {"command": "echo tool-output-marker; echo ok > made.txt; rm -f old.txt"}}
        ],
    },
    {"text": "Made it."},
    {"text": "Got your notes."},
    {
        "text": "",
        "tool_calls": [
            {
                "name": "ui",
                "arguments": {
                    "kind": "diff",
                    "title": "README typo",
                    "data": {"path": "README.md", "diff": "@@ -1 +1 @@\n-teh\n+the"},
                },
            }
        ],
    },
    {"text": "Back after the restart."},
]


def chat_in_tmux(home: Path, workspace: Path, tmp_path: Path, *extra: str) -> Tmux:
    command = [
        sys.executable,
        "-m",
        "exo_core.cli",
        "chat",
        "--home",
        str(home),
        "--no-spawn",
        "--event-log",
        str(tmp_path / "shown.log"),
        *extra,
    ]
    return Tmux(command, cwd=workspace, env={"XDG_CONFIG_HOME": str(tmp_path / "config"), "EXO_HOME": str(home)})


async def test_type_stream_approve_commands_attach_shell_palette_fold_and_resume(
    exod_factory, exo_home: Path, workspace: Path, tmp_path: Path
) -> None:
    (workspace / "notes.txt").write_text("first line\nsecond line\nthird line\n")
    (tmp_path / "config" / "exo").mkdir(parents=True)
    (tmp_path / "config" / "exo" / "terminal.toml").write_text('theme = "plain"\n')
    d = exod_factory(exo_home, write_script(tmp_path / "s.json", SCRIPT), workspace)
    term = chat_in_tmux(exo_home, workspace, tmp_path)
    try:
        term.wait_for("· live ·")
        assert "exo · model - · mode auto" in term.screen()

        # Type a message; the answer streams in (partial text is seen on the screen).
        term.line("hello?")
        partials: set[str] = set()
        deadline = time.monotonic() + 20
        while ANSWER not in (shown := term.screen()) and time.monotonic() < deadline:
            partials |= {ln for ln in shown.splitlines() if ln.startswith("Hello") and ln != ANSWER}
            time.sleep(0.03)
        assert ANSWER in term.screen()
        assert partials and all(ANSWER.startswith(p.rstrip()) for p in partials), partials
        term.wait_for("model scripted:s.json")

        # An approval, answered from the keyboard.
        term.line("please run it")
        term.wait_for("y allow · n deny · a always")
        term.type("y")
        term.wait_for("Made it.")
        assert (workspace / "made.txt").read_text() == "ok\n"
        folded = term.wait_for("folded — ctrl+o shows them")
        assert "tool-output-marker" not in folded, "a finished turn collapses to its answer"
        term.keys("C-o")
        term.wait_for("│ tool-output-marker")
        assert "→ allow" in term.screen()
        term.keys("C-o")
        term.wait_gone("│ tool-output-marker")

        # `!` runs here, `@` attaches a line range; both go with the next message.
        term.line("!echo shell-says-hi")
        term.wait_for("shell-says-hi")
        term.line("summarize @notes.txt:2-3 please")
        term.wait_for("Got your notes.")
        assert "+ attached notes.txt lines 2-3" in term.screen()
        async with ExoClient(d.url) as client:
            session = (await client.request("session.list", {}))["sessions"][0]["id"]
            messages = (await client.request("session.get", {"session": session}))["messages"]
        sent = [m["content"] for m in messages if m["role"] == "user"][-1]
        assert "[attached: notes.txt lines 2-3]\n```\nsecond line\nthird line\n```" in sent
        assert "shell-says-hi" in sent and "first line" not in sent

        # `/` commands and the palette.
        term.line("/sessions")
        term.wait_for(f"* {session} terminal")
        term.line("/help")
        term.wait_for("/interrupt")
        term.keys("C-p")
        term.wait_for("palette ›")
        term.type("tast")
        term.wait_for("› /taste")
        term.keys("Enter")
        term.wait_for("error [not_found]")  # no store in this home: the core says how to make one
        assert "palette ›" not in term.screen()

        # exod restarts under the client; it resumes without missing or repeating an event.
        d.stop()
        term.wait_for("· reconnecting ·")
        d.start()
        term.wait_for("· live ·", timeout=30)
        term.line("are you back?")
        term.wait_for("Back after the restart.")
        # The model opened a diff panel; the core shaped it to one line for this terminal.
        assert "▣ [diff] README typo — README.md +1 -1" in term.screen()
        time.sleep(0.5)
        assert term.screen().count("Back after the restart.") == 1
        term.line("/quit")
        deadline = time.monotonic() + 10
        while term.alive() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not term.alive(), "/quit ends the client"
    finally:
        term.close()
    async with ExoClient(d.url) as client:
        page = await client.request("events.subscribe", {"since": 0, "session": session, "limit": 10000})
    shown_seqs = [int(line.split()[0]) for line in (tmp_path / "shown.log").read_text().splitlines()]
    assert shown_seqs == [e["seq"] for e in page["events"]], "every event of the session shown exactly once, in order"
