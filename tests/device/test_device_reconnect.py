"""Killing exod under a connected device: the screen says so, presses wait or are refused visibly, the link resumes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from exo_testkit import write_script

from device.layouts import ScreenSpec
from device.state import Approval, Notice, ScreenState
from devicekit import DeviceProc, reference, same_region
from voicekit import needs_espeak, speak

pytest.importorskip("gpiozero")

MONO = ScreenSpec(128, 64, True)
SCRIPT = [
    {"text": "", "tool_calls": [{"name": "bash", "arguments": {"command": "rm notes.txt"}}]},
    {"text": "Resumed after the restart."},
    {"text": "Here is the answer to the question you asked while I was away."},
]


@needs_espeak
@pytest.mark.slow
def test_sigkill_shows_offline_keeps_presses_and_resumes(tmp_path: Path, exo_home: Path, workspace: Path,
                                                         exod_factory) -> None:
    (workspace / "notes.txt").write_text("keep me")
    exod = exod_factory(exo_home, write_script(tmp_path / "script.json", SCRIPT), workspace)
    q1 = speak(tmp_path / "q1.wav", "please delete my notes file", voice="en-us", speed=150)
    q2 = speak(tmp_path / "q2.wav", "what should I cook tonight", voice="en-gb", speed=150)
    out = tmp_path / "device"
    out.mkdir()
    dev = DeviceProc(exo_home, out, extra=["--tts", "none"])
    try:
        dev.ev("link", state="online")
        mark = dev.mark()
        dev.send(f"talk {q1}")
        requested = dev.wait(lambda r: r.get("type") == "approval.requested", mark)["body"]
        approval = Approval(requested["request_id"], requested["summary"], requested["risk"])

        # The core dies: the status line says so (a crossed box and OFFLINE), the card stays.
        mark = dev.mark()
        exod.kill()
        dev.ev("link", mark, state="offline")
        frame = dev.wait_frame(lambda e: e["link"] == "offline" and e["layout"] == "approval")
        image = dev.image(frame)
        assert image.tobytes() == reference(ScreenState(approvals=(approval,)), MONO, frame).tobytes()
        assert np.asarray(image.crop((3, 3, 8, 8)).convert("L")).any()  # crossed box, not the filled square

        # Pressed while the core is away: kept, and the screen counts what waits.
        dev.send("press allow")
        dev.send(f"talk {q2}")
        heard = dev.ev("heard", mark)
        assert "cook" in heard["text"].lower()
        frame = dev.wait_frame(lambda e: e["link"] == "offline" and e["pending"] == 2)
        assert dev.image(frame).tobytes() == reference(
            ScreenState(heard=heard["text"], approvals=(approval,)), MONO, frame).tobytes()
        assert not dev.all("delivered", mark)

        # The core is back: the link resumes; the stale approval is refused on screen, the question delivered.
        mark = dev.mark()
        exod.start()
        dev.ev("link", mark, state="online")
        dev.ev("resumed", mark)
        expired = dev.wait(lambda r: r.get("type") == "approval.resolved", mark)["body"]
        assert expired["decision"] == "expired"
        refused = dev.ev("refused", mark)
        assert refused["label"].startswith("allow") and "expired" in refused["reason"]
        notice = dev.wait_frame(lambda e: e["layout"] == "notice")
        expected = reference(ScreenState(notice=Notice(f"Not sent: {refused['label']}. {refused['reason']}",
                                                       "warning")), MONO, notice)
        assert same_region(dev.image(notice), expected, (0, 12, 128, 64))
        assert dev.ev("delivered", mark)["label"].startswith("ask")
        assert dev.ev("answered", mark, timeout=30)["text"] == "Resumed after the restart."
        dev.wait(lambda r: r.get("ev") == "answered" and r["text"].startswith("Here is the answer"), mark)
        assert (workspace / "notes.txt").exists()  # the allow pressed for a dead request did nothing
        seqs = [r["seq"] for r in dev.all("event")]
        assert seqs == sorted(set(seqs))  # nothing repeated across the reconnect
    finally:
        assert dev.quit() == 0
