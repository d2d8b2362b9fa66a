"""The handheld tells the person what is happening: progress with elapsed time, a card that names its
target, and a long press of TALK that stops a streaming answer (issue: every screen tells the person
what is happening).

A real exod with a scripted model, and ``exo device --mock`` (mock pins, virtual screen) following the
same session. Frames are compared pixel for pixel with the layout drawn from the expected state.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from exo_testkit import write_script
from unixhttp import post_command

from device.layouts import ScreenSpec, render, shorten_middle, theme_for
from device.state import Approval, ScreenState, apply_event, approval_target
from devicekit import online_device, reference

pytest.importorskip("gpiozero")
pytest.importorskip("PIL")

MONO = ScreenSpec(128, 64, True)
SLOW = "This answer is long on purpose, so that it is still streaming when the person holds the talk button. " * 6


def _command(exod, type_: str, body: dict) -> dict:
    status, reply = post_command(str(exod.socket), json.dumps({"id": "t", "type": type_, "body": body}).encode())
    assert status == 200 and reply["ok"], reply
    return reply["result"]


def test_the_approval_target_is_taken_from_the_call_arguments() -> None:
    assert approval_target("delete_file", {"path": "notes.txt"}) == "notes.txt"
    assert approval_target("send_email", {"to": ["a@example.org", "b@example.org"], "body": "hi"}) == (
        "a@example.org, b@example.org"
    )
    assert approval_target("bash", {"command": "git push origin main"}) == "git push origin main"
    assert approval_target("pay", {"amount": 12.5, "currency": "EUR"}) == "12.5 EUR"
    assert approval_target("noop", {}) == ""


def test_a_long_target_is_shortened_in_the_middle_never_dropped() -> None:
    theme = theme_for(MONO)
    path = "/home/someone/projects/very/deep/folder/structure/old.log"
    short = shorten_middle(path, theme.bold, 100)
    assert theme.bold.getlength(short) <= 100
    assert short.endswith("old.log") and short.startswith("/ho") and "..." in short
    card = ScreenState(approvals=(Approval("r1", "delete data", "high", "delete_file", target=path),))
    plain = ScreenState(approvals=(Approval("r1", "delete data", "high", "delete_file"),))
    assert render(card, MONO).tobytes() != render(plain, MONO).tobytes()


@pytest.mark.slow
def test_progress_card_target_and_long_press_interrupt(tmp_path: Path, exo_home: Path, workspace: Path, exod_factory):
    (workspace / "notes.txt").write_text("keep me")
    (workspace / "old.log").write_text("delete me")
    script = [
        # The first words come after a second, so the "thinking" frame is drawn even on a quiet machine
        # (with no delay the device could go straight to "reading": CI on a quiet machine saw that).
        {
            "text": "Looking.",
            "delay": 1.0,
            "chunk": 8,
            "tool_calls": [{"name": "read_file", "arguments": {"path": "notes.txt"}}],
        },
        {"text": "", "tool_calls": [{"name": "delete_file", "arguments": {"path": "old.log"}}]},
        {"text": "Done."},
        {"text": SLOW, "delay": 0.25, "chunk": 4},
    ]
    exod = exod_factory(exo_home, write_script(tmp_path / "script.json", script), workspace)
    session = _command(exod, "session.create", {"title": "device"})["session"]["id"]
    out = tmp_path / "device"
    out.mkdir()
    docs = out / "states"
    docs.mkdir()
    with online_device(exo_home, out, extra=["--session", session]) as dev:
        # 1. Progress: thinking, then reading while read_file runs, with elapsed seconds.
        mark = dev.mark()
        _command(exod, "turn.send", {"session": session, "text": "Tidy my folder."})
        card = dev.wait_frame(lambda e: e["layout"] == "approval")
        phases = {e.get("phase") for e in dev.frames_index() if e["layout"] == "answer"}
        assert "thinking" in phases, phases  # (read_file is too quick to be sure of a "reading" frame)
        first = next(e for e in dev.frames_index() if e.get("phase") == "thinking")
        dev.image(first).save(docs / "thinking.png")

        # 2. The approval card names the file the press would delete.
        requested = dev.wait(lambda r: r.get("type") == "approval.requested", mark)
        body = requested["body"]
        expected = reference(
            ScreenState(
                approvals=(
                    Approval(body["request_id"], body["summary"], body["risk"], body["tool"], target="old.log"),
                ),
                phase=card.get("phase", ""),
                elapsed=card.get("elapsed", 0),
            ),
            MONO,
            card,
        )
        assert dev.image(card).tobytes() == expected.tobytes()
        dev.image(card).save(docs / "approval-card.png")
        dev.send("press deny")
        dev.wait(lambda r: r.get("type") == "approval.resolved", mark)
        assert (workspace / "old.log").exists()
        dev.wait(lambda r: r.get("type") == "turn.completed", mark)

        # 3. A slow answer streams; the elapsed seconds count up while it does.
        mark = dev.mark()
        _command(exod, "turn.send", {"session": session, "text": "Tell me a long story."})
        dev.wait(lambda r: r.get("type") == "message.delta", mark)
        streaming = dev.wait_frame(lambda e: e.get("phase") == "answering" and e.get("elapsed", 0) >= 1, timeout=30)
        dev.image(streaming).save(docs / "answering.png")

        # 4. Holding TALK interrupts it: the turn ends "interrupted", long before the scripted story would
        # have (how fast is a benchmark's business, not a wall-clock bar in a test).
        before = dev.mark()
        dev.send("hold talk 1.0")
        dev.ev("interrupt", before, why="talk held")
        dev.wait(lambda r: r.get("type") == "turn.completed", before)
        assert dev.ev("answered", before)["stop"] == "interrupted"
        idle = dev.wait_frame(lambda e: e["layout"] == "answer" and not e.get("phase"), latest=True)
        assert idle["activity"] in ("idle", "listening", "transcribing")


def test_phases_follow_the_turn() -> None:
    from exo_core.protocol import Event

    def event(seq: int, type_: str, **body) -> Event:
        return Event(id=f"e{seq}", seq=seq, session="s", type=type_, ts="2026-01-01T00:00:00Z", body=body)

    state = ScreenState(link="online")
    steps = [
        (event(1, "turn.started", turn_id="t"), "thinking"),
        (event(2, "tool.started", turn_id="t", call_id="c", name="read_file", arguments={"path": "a"}), "reading"),
        (event(3, "tool.completed", turn_id="t", call_id="c", name="read_file"), "thinking"),
        (event(4, "tool.started", turn_id="t", call_id="d", name="bash", arguments={"command": "ls"}), "working"),
        (event(5, "tool.completed", turn_id="t", call_id="d", name="bash"), "thinking"),
        (event(6, "message.delta", turn_id="t", text="Hi"), "answering"),
        (event(7, "turn.completed", turn_id="t", stop_reason="end"), ""),
    ]
    for ev, phase in steps:
        state = apply_event(state, ev, "s")
        assert state.phase == phase, (ev.type, state.phase)


def test_the_status_line_shows_the_phase_and_its_seconds() -> None:
    thinking = ScreenState(link="online", activity="thinking", phase="thinking", elapsed=12)
    later = ScreenState(link="online", activity="thinking", phase="thinking", elapsed=13)
    idle = ScreenState(link="online", activity="idle")
    assert render(thinking, MONO).tobytes() != render(later, MONO).tobytes()
    assert render(thinking, MONO).tobytes() != render(idle, MONO).tobytes()
