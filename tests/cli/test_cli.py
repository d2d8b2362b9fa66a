"""The ``exo`` command: init, chat (piped, spawning exod), search, protocol export, errors."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

from exo_testkit import ROOT, write_script

from exo_core.client import ExoClient
from exo_core.client.linechat import LineChat


def exo(
    *args: str, home: Path, stdin: str | None = None, cwd: Path | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("EXO_TOKEN", "EXO_MODEL")}
    env.update({"PYTHONPATH": str(ROOT), "EXO_HOME": str(home)})
    return subprocess.run(
        [sys.executable, "-m", "exo_core.cli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=timeout,
    )


def test_init_creates_home_and_store_and_is_idempotent(tmp_path: Path) -> None:
    home = tmp_path / "h"
    first = exo("init", home=home)
    assert first.returncode == 0, first.stderr
    assert (home / "store" / "pack.md").exists()
    assert oct((home / "run").stat().st_mode & 0o777) == "0o700"
    (home / "store" / "pack.md").write_text("# mine\n")
    second = exo("init", home=home)
    assert second.returncode == 0 and "kept store" in second.stdout
    assert (home / "store" / "pack.md").read_text() == "# mine\n"


def test_piped_chat_spawns_exod_runs_the_conversation_and_exits_0(tmp_path: Path) -> None:
    home = tmp_path / "h"
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("apples\n")
    script = write_script(
        tmp_path / "s.json",
        [
            {"text": "Looking.", "tool_calls": [{"name": "read_file", "arguments": {"path": "a.txt"}}]},
            {"text": "It lists apples."},
            {"text": "Shall I?", "tool_calls": [{"name": "bash", "arguments": {"command": "rm a.txt"}}]},
            {"text": "Understood, I left it."},
        ],
    )
    assert exo("init", home=home).returncode == 0
    result = exo(
        "chat",
        "--model",
        f"scripted:{script}",
        home=home,
        cwd=ws,
        stdin="what is in a.txt?\ndelete it\n/search apples\n",
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "It lists apples." in out and "⚙ read_file" in out
    assert "approval deny" in out  # no terminal: approvals are denied, never silently allowed
    assert (ws / "a.txt").exists()
    assert "[apples]" in out
    assert not (home / "run" / "exod.sock").exists(), "the spawned exod is stopped at exit"
    found = exo("search", "apples", "--json", home=home)
    assert found.returncode == 0 and "[apples]" in found.stdout


ASK_DAY = {
    "text": "",
    "tool_calls": [{"name": "ask_person", "arguments": {"question": "Which day?", "options": ["Monday", "Tuesday"]}}],
}


def test_piped_chat_declines_a_question_at_once_and_reads_the_next_line_as_the_next_message(tmp_path: Path) -> None:
    """Piped lines are messages, so nobody can answer ``ask_person``: declined, the turn goes on (it used to wait
    out the tool's 600 s, docs/protocol.md ``question.answer``)."""
    home, ws = tmp_path / "h", tmp_path / "ws"
    ws.mkdir()
    script = write_script(tmp_path / "s.json", [ASK_DAY, {"text": "Monday, then."}, {"text": "Hello again."}])
    assert exo("init", home=home).returncode == 0
    chat = exo("chat", "--model", f"scripted:{script}", home=home, cwd=ws, stdin="book it\nhello\n", timeout=60)
    assert chat.returncode == 0, chat.stderr
    out = chat.stdout
    assert "? Which day?" in out and "question declined" in out
    assert out.index("Monday, then.") < out.index("> hello") < out.index("Hello again.")


async def test_the_line_client_answers_a_question_from_the_next_line(
    exod_factory, exo_home: Path, workspace: Path, tmp_path: Path
) -> None:
    import asyncio

    script = write_script(tmp_path / "s.json", [ASK_DAY, {"text": "Tuesday it is."}])
    d = exod_factory(exo_home, script, workspace)
    out = io.StringIO()
    async with ExoClient(d.url) as client:
        chat = LineChat(client, out=out, approve="deny", answer_questions=True, interactive=False)
        session = await chat.start()
        follower = asyncio.create_task(chat.follow())
        lines: asyncio.Queue[str | None] = asyncio.Queue()
        for line in ("Wednesday", "7", "2"):  # not an option, out of range, then the answer
            lines.put_nowait(line)
        turn = await chat.send("book it")
        assert turn
        await asyncio.wait_for(chat.wait_turn(turn, lines), 30)
        follower.cancel()
        got = await client.request("session.get", {"session": session})
    tool = [m for m in got["messages"] if m["role"] == "tool"][0]
    assert tool["content"] == "The person chose option 2: Tuesday"
    assert out.getvalue().count("answer with a number from 1 to 2") == 2 and "Tuesday it is." in out.getvalue()


def test_errors_are_typed_and_exit_2(tmp_path: Path) -> None:
    home = tmp_path / "h"
    home.mkdir()
    (home / "config.toml").write_text("store = [unclosed\n")
    result = exo("serve", "--no-unix", home=home)
    assert result.returncode == 2 and "bad_config" in result.stderr and "config.toml" in result.stderr
    bad = exo("serve", "--tcp", "nonsense", "--model", "scripted:/nonexistent", home=tmp_path / "h2")
    assert bad.returncode == 2 and "cannot read model script" in bad.stderr


def test_protocol_export_writes_schema_and_types(tmp_path: Path) -> None:
    result = exo("protocol", "export", "--out", str(tmp_path / "gen"), home=tmp_path / "h")
    assert result.returncode == 0
    assert (tmp_path / "gen" / "protocol.schema.json").exists() and (tmp_path / "gen" / "protocol.d.ts").exists()


async def test_line_client_resumes_after_the_core_restarts_without_missing_or_repeating(
    exod_factory, exo_home: Path, workspace: Path, tmp_path: Path
) -> None:
    script = write_script(tmp_path / "s.json", [{"text": "first answer"}, {"text": "second answer"}])
    d = exod_factory(exo_home, script, workspace)
    out = io.StringIO()
    seqs: list[int] = []
    async with ExoClient(d.url, reconnect_delay=0.05, max_reconnect_delay=0.2) as client:
        chat = LineChat(client, out=out, approve="deny", interactive=False, on_event=lambda e: seqs.append(e.seq))
        await chat.start()
        import asyncio

        follower = asyncio.create_task(chat.follow())
        lines: asyncio.Queue[str | None] = asyncio.Queue()
        t1 = await chat.send("one")
        assert t1
        await chat.wait_turn(t1, lines)
        d.stop()  # the link drops
        d.start()
        t2 = await chat.send("two")
        assert t2
        await chat.wait_turn(t2, lines)
        follower.cancel()
    assert "first answer" in out.getvalue() and "second answer" in out.getvalue()
    assert seqs == sorted(set(seqs)), "no event repeated or out of order"
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs))), "no event missed"


def test_a_turn_on_an_initialised_home_is_mirrored_into_a_sound_ledger(tmp_path: Path) -> None:
    home = tmp_path / "h"
    ws = tmp_path / "ws"
    ws.mkdir()
    script = write_script(
        tmp_path / "s.json",
        [
            {"text": "", "tool_calls": [{"name": "read_file", "arguments": {"path": "nothing.txt"}}]},
            {"text": "No such file."},
        ],
    )
    assert exo("init", home=home).returncode == 0
    assert exo("store", "lint", home=home).returncode == 0
    chat = exo("chat", "--model", f"scripted:{script}", home=home, cwd=ws, stdin="please read nothing.txt\n")
    assert chat.returncode == 0, chat.stderr
    verify = exo("ledger", "verify", home=home)
    assert verify.returncode == 0, verify.stdout + verify.stderr
    log = exo("ledger", "log", home=home)
    assert log.returncode == 0
    assert "utterance" in log.stdout and "action" in log.stdout
