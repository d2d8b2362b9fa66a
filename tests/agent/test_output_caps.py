"""Bounded tool output: a per-call and a per-turn cap on what is shown and stored, and a cap on run time.

One allowed command (``yes``, ``head -c 200000000 /dev/zero``) once grew sessions.sqlite
by hundreds of megabytes. Through a real exod with small caps configured, each such call
grows the database by at most its cap, the head and tail of the output are shown, the
middle is counted in a note both the person (a ``tool.output`` event) and the model (its
result) see, and ``yes`` asked to run for an hour stops at the configured limit.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from exo_testkit import ROOT, Exod

from exo_core.agent.output import CallOutput, OutputLimits, TurnOutput, bound_text, stored_size
from exo_core.agent.redaction import SecretRedactor
from exo_core.client import ExoClient
from exo_core.errors import ConfigError

CALL_BYTES = 64 * 1024
TURN_BYTES = 96 * 1024
TIMEOUT = 4


def _feed(out: CallOutput, text: str, chunk: int = 4096, stream: str = "stdout") -> str:
    shown = []
    for at in range(0, len(text), chunk):
        shown += [t for _s, t in out.feed(text[at : at + chunk], stream)]
    shown += [t for _s, t in out.finish()]
    return "".join(shown)


def test_a_call_over_its_cap_shows_head_note_and_tail_and_counts_what_it_dropped() -> None:
    out = CallOutput(SecretRedactor(), CALL_BYTES)
    lines = [f"line {n}\n" for n in range(100_000)]
    shown = _feed(out, "".join(lines))
    assert shown.startswith("line 0\nline 1\n") and shown.endswith("line 99999\n")
    assert out.capped and stored_size(shown) <= CALL_BYTES // 2 + 4 * SecretRedactor().reach
    note = out.note()
    dropped = int(note.split(" bytes")[0].split()[-1].replace(",", ""))
    dropped_lines = int(note.split("(")[1].split()[0].replace(",", ""))
    total = sum(len(line) for line in lines)
    shown_lines = shown.replace(note, "").strip("\n").count("\n") + 1
    assert dropped == total - len(shown.replace("\n" + note + "\n", "")), note
    assert abs(dropped_lines - (100_000 - shown_lines)) <= 2, (note, shown_lines)


def test_nul_bytes_are_counted_as_stored_six_bytes_each() -> None:
    out = CallOutput(SecretRedactor(), CALL_BYTES)
    shown = _feed(out, "\0" * 5_000_000)
    assert stored_size(shown) <= CALL_BYTES // 2 + 4 * SecretRedactor().reach
    assert "5,000,000" not in out.note() and "bytes (0 lines) of output not shown" in out.note()


def test_output_under_the_cap_is_shown_whole() -> None:
    out = CallOutput(SecretRedactor(), CALL_BYTES)
    text = "".join(f"row {n}\n" for n in range(1000))
    assert _feed(out, text, chunk=333) == text and not out.capped and out.note() == ""


def test_a_secret_at_either_edge_of_the_dropped_middle_is_not_shown_in_part() -> None:
    secret = secrets.token_urlsafe(32)
    redactor = SecretRedactor(known=(secret,))
    for at in range(CALL_BYTES // 4 - 60, CALL_BYTES // 4 + 20, 7):
        text = "a" * at + secret + "b" * 200_000 + secret + "c" * 5000
        shown = _feed(CallOutput(redactor, CALL_BYTES), text)
        for piece in range(0, len(secret) - 11, 4):
            assert secret[piece : piece + 12] not in shown, (at, piece)


def test_the_turn_budget_is_shared_by_its_calls() -> None:
    turn = TurnOutput(OutputLimits(call_bytes=CALL_BYTES, turn_bytes=TURN_BYTES))
    sizes = []
    for _ in range(6):
        out = turn.call(SecretRedactor())
        sizes.append(stored_size(_feed(out, "x" * 300_000)))
        turn.spend(4 * out.result_bytes)  # what the loop charges for the result the model reads
    assert sum(sizes) <= TURN_BYTES, sizes
    assert sizes[-1] < 200, sizes  # only the note
    assert "this turn's output cap (98,304 bytes)" in out.note()


def test_a_result_is_bounded_with_its_head_and_tail() -> None:
    text = "start\n" + "m" * 1_000_000 + "\n[exit status 0]"
    bounded, cut = bound_text(text, 8192)
    assert cut and bounded.startswith("start\n") and bounded.endswith("[exit status 0]")
    assert stored_size(bounded) <= 8192 and "bytes (0 lines) not shown: over the 8,192-byte cap" in bounded


@pytest.mark.parametrize(
    "table, message",
    [
        ({"call_bytes": 10}, "output.call_bytes"),
        ({"turn_bytes": "big"}, "output.turn_bytes"),
        ({"timeout_seconds": 0}, "output.timeout_seconds"),
        ({"timeout_seconds": True}, "output.timeout_seconds"),
        ({"timeout": 5}, "unknown key output.timeout"),
    ],
)
def test_bad_output_settings_are_refused_by_name(table: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        OutputLimits.from_config({"output": table})


# Through the real daemon.


def _init_home(home: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("EXO_HOME", None)
    subprocess.run(
        [sys.executable, "-m", "exo_core.cli", "init", "--home", str(home)], env=env, check=True, capture_output=True
    )


def _db_size(home: Path) -> int:
    return sum(p.stat().st_size for p in home.glob("sessions.sqlite*"))


async def _one_turn(url: str, session: str | None, text: str) -> tuple[str, list[Any]]:
    events: list[Any] = []
    async with ExoClient(url, client_name="caps-test") as client:
        since = (await client.hello())["last_seq"]
        if session is None:
            session = (await client.request("session.create", {"title": "caps"}))["session"]["id"]
        await client.request("turn.send", {"session": session, "text": text})

        async def follow() -> None:
            async for event in client.events(since=since, session=session):
                events.append(event)
                if event.type == "approval.requested":
                    await client.request(
                        "approval.respond", {"request_id": event.body["request_id"], "decision": "allow"}
                    )
                elif event.type == "turn.completed":
                    return

        await asyncio.wait_for(follow(), 120)
    return session, events


def test_yes_and_dev_zero_grow_sessions_sqlite_by_at_most_the_cap(tmp_path: Path) -> None:
    home = tmp_path / "home"
    _init_home(home)
    with (home / "config.toml").open("a", encoding="utf-8") as config:
        config.write(f"\n[output]\ncall_bytes = {CALL_BYTES}\nturn_bytes = {TURN_BYTES}\ntimeout_seconds = {TIMEOUT}\n")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    commands = ["echo warm", "yes", "head -c 200000000 /dev/zero"]
    replies: list[dict[str, Any]] = []
    for command in commands:
        replies.append(
            {"text": "", "tool_calls": [{"name": "bash", "arguments": {"command": command, "timeout": 3600}}]}
        )
        replies.append({"text": "done"})
    requests = tmp_path / "requests.jsonl"
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"record": str(requests), "replies": replies}))
    session = None
    sizes = []
    outputs: list[list[Any]] = []
    for command in commands:
        exod = Exod(home, script, workspace).start()
        try:
            session, events = asyncio.run(_one_turn(exod.url, session, f"run {command}"))
        finally:
            assert exod.stop() == 0
        sizes.append(_db_size(home))
        outputs.append(events)
    grew = [after - before for before, after in zip(sizes, sizes[1:], strict=False)]
    assert all(growth <= CALL_BYTES for growth in grew), grew
    for events in outputs[1:]:
        shown = "".join(e.body["text"] for e in events if e.type == "tool.output")
        completed = [e.body for e in events if e.type == "tool.completed"]
        assert "of output not shown" in shown and completed[0]["truncated"], shown[-500:]
        assert "of output not shown" in completed[0]["result"]
    yes_result = [e.body for e in outputs[1] if e.type == "tool.completed"][0]["result"]
    assert f"stopped after {TIMEOUT} s" in yes_result
    print("sessions.sqlite grew by", grew, "bytes for", commands[1:])
    for events in outputs[1:]:
        print([e.body["text"] for e in events if e.type == "tool.output" and "not shown" in e.body["text"]])
    sent = [json.loads(line) for line in requests.read_text().splitlines()]
    tool_messages = [m for m in sent[-1]["messages"] if m.get("role") == "tool"]
    assert "of output not shown" in tool_messages[-1]["content"], "the model is told what was dropped"
