"""Layouts drawn into real images, checked by reading pixels; the virtual and luma screens."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from device.app import capabilities_for
from device.layouts import LAYOUTS, ScreenSpec, clean, render, theme_for, wrap
from device.screen import LumaScreen, VirtualScreen, open_screen
from device.settings import DeviceConfig
from device.state import Approval, Notice, Question, ScreenState, apply_event, layout_of

PIL = pytest.importorskip("PIL")

MONO = ScreenSpec(128, 64, True)
COLOUR = ScreenSpec(240, 240, False)
WIDE = ScreenSpec(320, 240, False)

BASE = ScreenState(
    link="online",
    activity="idle",
    heard="what is the weather like tomorrow",
    answer="Tomorrow looks dry and mild. Take a light jacket for the morning.",
)
STATES = {
    "answer": BASE,
    "approval": BASE.with_(approvals=(Approval("a1", "bash: rm notes.txt", "high", "bash"),)),
    "question": BASE.with_(questions=(Question("q1", "Which day?", ("Monday", "Tuesday", "Friday"), False, 1),)),
    "notice": BASE.with_(notice=Notice("Commit messages are short.", "taste", "Learned")),
}


def ink(image, box) -> int:
    """Pixels in ``box`` that differ from the background colour of the frame's bottom-left corner."""
    region = np.asarray(image.crop(box).convert("RGB")).reshape(-1, 3)
    bg = np.asarray(image.convert("RGB"))[image.height - 1, 0]
    return int((region != bg).any(axis=1).sum())


@pytest.mark.parametrize("spec", [MONO, COLOUR, WIDE], ids=["128x64", "240x240", "320x240"])
@pytest.mark.parametrize("name", LAYOUTS)
def test_every_layout_draws_at_every_size(spec: ScreenSpec, name: str) -> None:
    state = STATES[name]
    assert layout_of(state) == name
    image = render(state, spec)
    assert image.size == (spec.width, spec.height) and image.mode == spec.mode
    theme = theme_for(spec)
    # The status band is drawn across the top, and the body has text in it.
    band = image.convert("RGB").getpixel((spec.width - 2, 1))
    assert band != image.convert("RGB").getpixel((spec.width - 2, spec.height - 2)) or name in ("approval", "question")
    assert ink(image, (0, theme.status + 1, spec.width, spec.height)) > 40
    # Same state, same pixels.
    assert render(state, spec).tobytes() == image.tobytes()


def test_mono_frames_are_one_bit_and_crisp() -> None:
    image = render(STATES["answer"], MONO)
    assert set(np.unique(np.asarray(image.convert("L")))) == {0, 255}


def test_highlighted_option_is_inverted_and_moves() -> None:
    theme = theme_for(MONO)
    first = render(STATES["question"].with_(questions=(Question("q", "Which?", ("Mon", "Tue"), False, 0),)), MONO)
    second = render(STATES["question"].with_(questions=(Question("q", "Which?", ("Mon", "Tue"), False, 1),)), MONO)
    row = lambda img, n: img.crop((0, theme.status + 1 + n * theme.line, 128, theme.status + 1 + (n + 1) * theme.line))
    lit = lambda img: float(np.asarray(img.convert("L")).mean()) / 255
    # Row 0 is the question; options follow. The selected option row is mostly lit (inverted).
    assert lit(row(first, 1)) > 0.6 and lit(row(first, 2)) < 0.4
    assert lit(row(second, 2)) > 0.6 and lit(row(second, 1)) < 0.4


def test_offline_status_icon_differs_from_online() -> None:
    on = render(BASE, MONO)
    off = render(BASE.with_(link="offline", pending=2), MONO)
    box = (2, 2, 8, 8)
    assert not np.asarray(on.crop(box).convert("L")).any()  # filled square, black on the white band
    assert np.asarray(off.crop(box).convert("L")).any()  # a crossed box has white inside
    assert on.crop((0, 12, 128, 64)).tobytes() == off.crop((0, 12, 128, 64)).tobytes()


def test_scrolling_moves_the_text_and_shows_a_bar() -> None:
    long = BASE.with_(answer=" ".join(f"word{n}" for n in range(80)))
    top = render(long, MONO)
    down = render(long.with_(scroll=3), MONO)
    assert top.tobytes() != down.tobytes()
    assert ink(top, (126, 12, 128, 64)) > 0  # the scroll bar


def test_capabilities_come_from_the_layout_metrics() -> None:
    caps = capabilities_for(MONO, voice_in=True, voice_out=True)
    assert caps["screen_pixels"] == [128, 64] and caps["screen_columns"] == 21 and caps["screen_rows"] == 4
    assert caps["buttons"] == ["talk", "allow", "deny", "next"] and caps["can_draw"] is False
    big = capabilities_for(WIDE, voice_in=False, voice_out=True)
    assert big["screen_columns"] >= 28 and big["voice_in"] is False


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=300), st.integers(min_value=20, max_value=300))
def test_wrap_never_exceeds_the_width(text: str, width: int) -> None:
    font = theme_for(MONO).font
    for line in wrap(clean(text, True), font, width):
        assert font.getlength(line) <= max(width, font.getlength("W"))


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=200), st.text(max_size=80), st.sampled_from(["online", "offline", "connecting"]))
def test_any_text_renders(answer: str, summary: str, link: str) -> None:
    state = ScreenState(
        link=link, answer=answer, heard=summary, approvals=(Approval("a", summary, "medium"),) if summary else ()
    )
    for spec in (MONO, COLOUR):
        assert render(state, spec).size == (spec.width, spec.height)


def test_virtual_screen_writes_distinct_frames_and_an_index(tmp_path: Path) -> None:
    screen = VirtualScreen(tmp_path / "frames", MONO)
    screen.show(render(BASE, MONO), layout="answer", meta={"link": "online"})
    screen.show(render(BASE, MONO), layout="answer", meta={"link": "online"})  # identical: skipped
    screen.show(render(STATES["approval"], MONO), layout="approval")
    index = [json.loads(line) for line in (tmp_path / "frames" / "frames.jsonl").read_text().splitlines()]
    assert [i["layout"] for i in index] == ["answer", "approval"]
    from PIL import Image

    latest = Image.open(tmp_path / "frames" / "latest.png")
    assert latest.tobytes() == render(STATES["approval"], MONO).tobytes()
    assert Image.open(tmp_path / "frames" / index[0]["file"]).tobytes() == render(BASE, MONO).tobytes()


def test_luma_screen_draws_on_a_luma_device() -> None:
    dummy = pytest.importorskip("luma.core.device").dummy
    device = dummy(width=128, height=64, mode="1")
    screen = LumaScreen.on_device(device, MONO)
    frame = render(STATES["question"], MONO)
    screen.show(frame)
    assert device.image.convert("1").tobytes() == frame.tobytes()


def test_a_missing_display_is_a_clear_config_error() -> None:
    pytest.importorskip("luma.oled")
    from exo_core.errors import ConfigError

    with pytest.raises(ConfigError, match="cannot open the ssd1306 display"):
        open_screen(DeviceConfig(screen="ssd1306", i2c_port=97), None)


def test_events_become_cards_and_notices() -> None:
    from exo_core.engine.shaping import profile_for
    from exo_core.protocol import decode_event
    from exo_core.protocol.commands import Capabilities

    def event(type_: str, body: dict, session: str = "s1", seq: int = 1):
        return decode_event(
            json.dumps(
                {
                    "id": f"e{seq}",
                    "seq": seq,
                    "session": session,
                    "type": type_,
                    "ts": "2026-01-01T00:00:00Z",
                    "body": body,
                }
            )
        )

    state = ScreenState(link="online")
    state = apply_event(state, event("taste.updated", {"id": "t1", "text": "Short commit messages."}), "s1")
    assert state.notice == Notice("Short commit messages.", "taste", "Learned") and layout_of(state) == "notice"
    state = apply_event(state, event("notice", {"text": "Backup finished.", "level": "info"}, session="other"), "s1")
    assert state.notice == Notice("Backup finished.", "info")
    state = apply_event(
        state,
        event(
            "ui.panel",
            {"kind": "diff", "title": "README.md", "data": {"form": "card", "lines": ["README.md", "1 file, +2 -1"]}},
        ),
        "s1",
    )
    assert state.notice == Notice("1 file, +2 -1", "info", "README.md")
    # The core would shape panels for this device into such cards.
    caps = capabilities_for(MONO, voice_in=True, voice_out=True)
    assert profile_for("exo-device", Capabilities(**caps)).form == "card"
    # A question from another session shows here; its turn ending closes it.
    state = apply_event(
        state, event("question.asked", {"question_id": "q", "text": "Which?", "options": ["a"]}, session="laptop"), "s1"
    )
    assert layout_of(state) == "question"
    state = apply_event(
        state, event("turn.completed", {"turn_id": "t", "stop_reason": "interrupted"}, session="laptop"), "s1"
    )
    assert state.question is None
