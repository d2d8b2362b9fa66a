"""The whole device client as ``exo device --mock`` against a real exod with a scripted model.

A question spoken by espeak-ng is transcribed, answered through the core, drawn
on the virtual screen (PNG frames compared pixel for pixel with the expected
layout) and spoken to WAV files (measured with sox); an approval card is
answered with a mock button press; a question is answered with a spoken option.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from exo_testkit import write_script

from device.layouts import ScreenSpec
from device.state import Approval, Question, ScreenState, approval_target, local_clock_time
from devicekit import online_device, reference, same_region
from voicekit import needs_espeak, needs_sox, sox_stat, speak, wer

pytest.importorskip("gpiozero")
pytest.importorskip("PIL")

ANSWER = "Tomorrow looks dry and mild. Take a light jacket for the morning."
SCRIPT = [
    {"text": ANSWER, "delay": 0.02, "chunk": 6},
    {"text": "", "tool_calls": [{"name": "bash", "arguments": {"command": "rm notes.txt"}}]},
    {"text": "Deleted it."},
    {
        "text": "",
        "tool_calls": [
            {
                "name": "ask_person",
                "arguments": {"question": "Which day suits you?", "options": ["Monday", "Tuesday", "Friday"]},
            }
        ],
    },
    {"text": "Tuesday it is."},
]
MONO = ScreenSpec(128, 64, True)
COLOUR = ScreenSpec(240, 240, False)


def card_box(spec: ScreenSpec) -> tuple[int, int, int, int]:
    """Everything below the status line."""
    return (0, 12 if spec.mono else 30, spec.width, spec.height)


@needs_espeak
@needs_sox
@pytest.mark.slow
def test_ask_approve_and_answer_by_voice_on_a_128x64_screen(
    tmp_path: Path, exo_home: Path, workspace: Path, exod_factory
) -> None:
    (workspace / "notes.txt").write_text("old notes")
    exod_factory(exo_home, write_script(tmp_path / "script.json", SCRIPT), workspace)
    q1 = speak(tmp_path / "q1.wav", "what is the weather like tomorrow", voice="en-us", speed=150)
    q2 = speak(tmp_path / "q2.wav", "please delete my notes file", voice="en-gb", speed=140)
    q3 = speak(tmp_path / "q3.wav", "book the dentist for next week", voice="en-us", speed=150)
    a3 = speak(tmp_path / "a3.wav", "the second one", voice="en-gb", speed=130)
    with online_device(exo_home, tmp_path / "device") as dev:
        # 1. Ask by voice: transcribed, answered, shown and spoken.
        mark = dev.mark()
        last = len(dev.frames_index())
        dev.send(f"talk {q1}")
        heard = dev.ev("heard", mark)
        assert wer("what is the weather like tomorrow", heard["text"]) <= 0.2, heard
        sent = dev.ev("sent", mark)
        assert sent["follow_up"] is False
        assert dev.ev("answered", mark)["text"] == ANSWER
        dev.wait(lambda r: len(dev.all("spoken", mark)) >= 2, mark)
        assert [s["text"] for s in dev.all("spoken", mark)] == [
            "Tomorrow looks dry and mild.",
            "Take a light jacket for the morning.",
        ]
        wavs = sorted(dev.spoken.glob("*.wav"))
        assert len(wavs) == 2
        for wav in wavs:
            stats = sox_stat(wav)
            assert stats["Length (seconds)"] > 1.0 and stats["RMS amplitude"] > 0.01, stats
        frame = dev.wait_frame(
            lambda e: e["layout"] == "answer" and e["activity"] == "idle" and e["frame"] > last, latest=True
        )
        expected = reference(ScreenState(heard=heard["text"], answer=ANSWER), MONO, frame)
        assert dev.image(frame).tobytes() == expected.tobytes(), (frame, heard)

        # 2. Approve with a button: the card, then allow; the tool really runs.
        mark = dev.mark()
        last = len(dev.frames_index())
        dev.send(f"talk {q2}")
        requested = dev.wait(lambda r: r.get("type") == "approval.requested", mark)
        assert dev.ev("sent", mark)["follow_up"] is True  # within the follow-up window: same session
        card = dev.wait_frame(lambda e: e["layout"] == "approval" and e["frame"] > last)
        body = requested["body"]
        expected = reference(
            ScreenState(
                approvals=(
                    Approval(
                        body["request_id"],
                        body["summary"],
                        body["risk"],
                        body["tool"],
                        target=approval_target(body["tool"], body["arguments"]),
                    ),
                )
            ),
            MONO,
            card,
        )
        assert dev.image(card).tobytes() == expected.tobytes()
        assert (workspace / "notes.txt").exists()
        dev.send("press allow")
        resolved = dev.wait(lambda r: r.get("type") == "approval.resolved", mark)
        assert resolved["body"]["decision"] == "allow"
        assert dev.ev("answered", mark)["text"] == "Deleted it."
        assert not (workspace / "notes.txt").exists()

        # 3. A question from the core, shown, spoken, and answered by a spoken option.
        mark = dev.mark()
        last = len(dev.frames_index())
        dev.send(f"talk {q3}")
        asked = dev.wait(lambda r: r.get("type") == "question.asked", mark)
        card = dev.wait_frame(lambda e: e["layout"] == "question" and e["frame"] > last)
        body = asked["body"]
        expected = reference(
            ScreenState(
                questions=(
                    Question(
                        body["question_id"],
                        body["text"],
                        tuple(body["options"]),
                        deadline=local_clock_time(body.get("expires_at")),
                    ),
                )
            ),
            MONO,
            card,
        )
        assert same_region(dev.image(card), expected, card_box(MONO))
        dev.wait(lambda r: r.get("ev") == "spoken" and r["text"].startswith("Which day suits you?"), mark)
        dev.send(f"talk {a3}")
        assert dev.ev("answer", mark)["option"] == 2
        answered = dev.wait(lambda r: r.get("type") == "question.answered", mark)
        assert answered["body"]["option"] == 2
        assert dev.ev("answered", mark)["text"] == "Tuesday it is."


@needs_espeak
@pytest.mark.slow
def test_question_answered_with_buttons_on_a_240x240_colour_screen(
    tmp_path: Path, exo_home: Path, workspace: Path, exod_factory
) -> None:
    script = [SCRIPT[3], {"text": "Friday it is."}]
    exod_factory(exo_home, write_script(tmp_path / "script.json", script), workspace)
    ask = speak(tmp_path / "ask.wav", "when can I see the dentist", voice="en-us", speed=150)
    with online_device(exo_home, tmp_path / "device", size="240x240", extra=["--tts", "none"]) as dev:
        mark = dev.mark()
        dev.send(f"talk {ask}")
        asked = dev.wait(lambda r: r.get("type") == "question.asked", mark)
        dev.send("press next")
        dev.send("wait 0.6")  # past the double-press window: two single presses, not one double
        dev.send("press next")
        body = asked["body"]
        moved = Question(
            body["question_id"],
            body["text"],
            tuple(body["options"]),
            selected=2,
            deadline=local_clock_time(body.get("expires_at")),
        )
        card = dev.wait_frame(
            lambda e: (
                e["layout"] == "question"
                and dev.image(e).crop(card_box(COLOUR)).tobytes()
                == reference(ScreenState(questions=(moved,)), COLOUR, e).crop(card_box(COLOUR)).tobytes()
            )
        )
        assert dev.image(card).mode == "RGB" and dev.image(card).size == (240, 240)
        dev.send("press allow")
        assert dev.ev("answer", mark)["option"] == 3
        assert dev.ev("answered", mark)["text"] == "Friday it is."


@needs_espeak
@pytest.mark.slow
def test_a_free_text_answer_is_read_back_before_it_is_sent(
    tmp_path: Path, exo_home: Path, workspace: Path, exod_factory
) -> None:
    ask = {
        "text": "",
        "tool_calls": [{"name": "ask_person", "arguments": {"question": "Which city should I book?"}}],
    }
    exod_factory(exo_home, write_script(tmp_path / "script.json", [ask, {"text": "Booked."}]), workspace)
    q = speak(tmp_path / "q.wav", "book a hotel for me", voice="en-us", speed=150)
    # Whisper tiny hears espeak's lone "Lisbon" as nothing on some CPUs (2026-12-03: empty at 130 and
    # "Listen." at 150 wpm); this test is about the read-back, so the answer is a city it does hear.
    a = speak(tmp_path / "a.wav", "Berlin", voice="en-us", speed=130)
    with online_device(exo_home, tmp_path / "device", extra=["--tts", "none"]) as dev:
        mark = dev.mark()
        dev.send(f"talk {q}")
        dev.wait(lambda r: r.get("type") == "question.asked", mark)
        dev.send(f"talk {a}")
        heard = dev.ev("readback", mark)
        assert heard["text"], heard
        # Nothing is sent until the person confirms what was heard.
        assert not [r for r in dev.journal[mark:] if r.get("type") == "question.answered"]
        dev.send("press allow")
        answered = dev.wait(lambda r: r.get("type") == "question.answered", mark)
        assert answered["body"]["text"] == heard["text"]
        assert dev.ev("answered", mark)["text"] == "Booked."
