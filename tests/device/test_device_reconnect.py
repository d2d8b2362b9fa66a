"""Killing exod under a connected device: the screen says so, presses wait, then are delivered or refused visibly.

Two presses made while the core is dead, two outcomes once it is back:

* *allow* on an approval card: approvals are stored and survive a restart,
  so the press is delivered and the tool runs;
* *allow* (pick) on a question card: questions live with their waiting turn,
  which the restart ended, so the core refuses the answer and the screen says
  "Not sent: ..." instead of dropping it silently.

A question spoken while the core is away is transcribed on the device and
delivered when the link comes back.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from exo_testkit import write_script

from device.layouts import ScreenSpec
from device.state import Approval, Notice, ScreenState, approval_target
from devicekit import online_device, reference, same_region
from voicekit import needs_espeak, speak

pytest.importorskip("gpiozero")

MONO = ScreenSpec(128, 64, True)
SCRIPT = [
    {"text": "", "tool_calls": [{"name": "bash", "arguments": {"command": "rm notes.txt"}}]},
    {"text": "Deleted it after the restart."},
    {
        "text": "",
        "tool_calls": [
            {"name": "ask_person", "arguments": {"question": "Which pasta?", "options": ["Penne", "Spaghetti"]}}
        ],
    },
    {"text": "I will ask again later."},
]


@needs_espeak
@pytest.mark.slow
def test_sigkill_shows_offline_then_delivers_or_refuses_visibly(
    tmp_path: Path, exo_home: Path, workspace: Path, exod_factory
) -> None:
    (workspace / "notes.txt").write_text("old notes")
    exod = exod_factory(exo_home, write_script(tmp_path / "script.json", SCRIPT), workspace)
    q1 = speak(tmp_path / "q1.wav", "please delete my notes file", voice="en-us", speed=150)
    q2 = speak(tmp_path / "q2.wav", "what should I cook tonight", voice="en-gb", speed=150)
    with online_device(exo_home, tmp_path / "device", extra=["--tts", "none"]) as dev:
        mark = dev.mark()
        dev.send(f"talk {q1}")
        requested = dev.wait(lambda r: r.get("type") == "approval.requested", mark)["body"]
        approval = Approval(
            requested["request_id"],
            requested["summary"],
            requested["risk"],
            requested["tool"],
            target=approval_target(requested["tool"], requested["arguments"]),
        )

        # The core dies: the status line says so (a crossed box and OFFLINE), the card stays.
        mark = dev.mark()
        exod.kill()
        dev.ev("link", mark, state="offline")
        frame = dev.wait_frame(lambda e: e["link"] == "offline" and e["layout"] == "approval")
        image = dev.image(frame)
        assert image.tobytes() == reference(ScreenState(approvals=(approval,)), MONO, frame).tobytes()
        assert np.asarray(image.crop((3, 3, 8, 8)).convert("L")).any()  # crossed box, not the filled square

        # Pressed and spoken while the core is away: kept, and the screen counts what waits.
        dev.send("press allow")
        dev.send(f"talk {q2}")
        heard = dev.ev("heard", mark)
        assert "cook" in heard["text"].lower()
        frame = dev.wait_frame(lambda e: e["link"] == "offline" and e["pending"] == 2)
        assert (
            dev.image(frame).tobytes()
            == reference(ScreenState(heard=heard["text"], approvals=(approval,)), MONO, frame).tobytes()
        )
        assert not dev.all("delivered", mark)
        assert (workspace / "notes.txt").exists()

        # The core is back: the link resumes from the last seq; both presses are delivered.
        mark = dev.mark()
        exod.start()
        dev.ev("link", mark, state="online")
        dev.ev("resumed", mark)
        assert dev.ev("delivered", mark)["label"].startswith("allow")
        resolved = dev.wait(lambda r: r.get("type") == "approval.resolved", mark)["body"]
        assert resolved["request_id"] == approval.request_id and resolved["decision"] == "allow"
        dev.wait(lambda r: r.get("ev") == "delivered" and r["label"].startswith("ask"), mark)
        assert dev.ev("answered", mark)["text"] == "Deleted it after the restart."
        assert not (workspace / "notes.txt").exists()

        # The spoken question runs next and the core asks something back; the core dies again.
        asked = dev.wait(lambda r: r.get("type") == "question.asked", mark)["body"]
        mark = dev.mark()
        exod.kill()
        dev.ev("link", mark, state="offline")
        dev.send("press allow")  # picks the highlighted option, "Penne"
        dev.wait_frame(lambda e: e["link"] == "offline" and e["pending"] == 1 and e["layout"] == "question")

        # Back again: the question closed with its turn, so the answer is refused, on screen.
        mark = dev.mark()
        exod.start()
        dev.ev("link", mark, state="online")
        refused = dev.ev("refused", mark)
        assert refused["label"] == "answer 'Penne'" and asked["question_id"] in refused["reason"]
        notice = dev.wait_frame(lambda e: e["layout"] == "notice")
        expected = reference(
            ScreenState(notice=Notice(f"Not sent: {refused['label']}. {refused['reason']}", "warning")), MONO, notice
        )
        assert same_region(dev.image(notice), expected, (0, 12, 128, 64))
        seqs = [r["seq"] for r in dev.all("event")]
        assert seqs == sorted(set(seqs))  # nothing repeated across two reconnects
