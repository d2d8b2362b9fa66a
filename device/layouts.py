"""Layouts: a :class:`~device.state.ScreenState` drawn into an image.

One function, :func:`render`, draws every layout for a :class:`ScreenSpec`:

* the **status line** on top of every layout: link (a filled square when
  online, a crossed box when not), what the device is doing (listening,
  transcribing, thinking, speaking), the model on colour screens, and how many
  presses wait for the core;
* the **answer** (the last thing heard, then the streamed answer, wrapped and
  scrolled, with a scroll bar);
* the **approval card** (summary, risk, which button does what);
* the **question card** (the question and its numbered options, the
  highlighted one inverted);
* the **notice** (a learned-taste row or an announcement).

Monochrome screens (128x64 OLEDs) use Pillow's built-in 6x11 bitmap font,
drawn without anti-aliasing so every pixel is crisp; colour screens use
DejaVu Sans when installed (Pillow's built-in scalable font otherwise).
PIL is imported lazily (inside functions) so importing the device package
stays cheap.
"""

from __future__ import annotations

import functools
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from device.state import ScreenState, layout_of

if TYPE_CHECKING:
    from PIL import Image

__all__ = ["ScreenSpec", "Theme", "render", "wrap", "shorten_middle", "theme_for", "LAYOUTS"]

LAYOUTS = ("answer", "approval", "question", "notice")

_DEJAVU = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")
_DEJAVU_BOLD = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf")
_ASCII = str.maketrans(
    {
        "\u2018": "'",
        "\u2019": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u2013": "-",
        "\u2014": "-",
        "\u2026": "...",
        "\u00a0": " ",
        "\u2022": "*",
    }
)

RISK_COLOURS = {"high": (220, 60, 50), "medium": (230, 160, 40), "low": (70, 170, 90)}


@dataclass(frozen=True, slots=True)
class ScreenSpec:
    """A screen's size in pixels and whether it is one-bit."""

    width: int
    height: int
    mono: bool

    @property
    def mode(self) -> str:
        """The PIL image mode frames are drawn in."""
        return "1" if self.mono else "RGB"


@dataclass(frozen=True, slots=True)
class Theme:
    """Fonts, metrics and colours for one screen spec."""

    font: Any
    bold: Any
    line: int
    status: int
    pad: int
    fg: Any
    bg: Any
    band_fg: Any
    band_bg: Any
    offline_bg: Any
    dim: Any

    def columns(self, spec: ScreenSpec) -> int:
        """Characters of average width in one line."""
        return max(1, int((spec.width - 2 * self.pad) // max(1.0, float(self.font.getlength("n")))))

    def rows(self, spec: ScreenSpec) -> int:
        """Text lines below the status line."""
        return max(1, (spec.height - self.status) // self.line)


@functools.lru_cache(maxsize=8)
def theme_for(spec: ScreenSpec) -> Theme:
    """The theme for ``spec`` (cached: fonts load once)."""
    from PIL import ImageFont

    if spec.mono:
        bitmap = ImageFont.load_default_imagefont()
        return Theme(
            font=bitmap, bold=bitmap, line=11, status=11, pad=1, fg=1, bg=0, band_fg=0, band_bg=1, offline_bg=1, dim=1
        )
    size = max(12, min(spec.width, spec.height) // 15)
    font: ImageFont.FreeTypeFont | ImageFont.ImageFont  # the bitmap default when DejaVu is not installed
    bold: ImageFont.FreeTypeFont | ImageFont.ImageFont
    if _DEJAVU.is_file():
        font = ImageFont.truetype(str(_DEJAVU), size)
        bold = ImageFont.truetype(str(_DEJAVU_BOLD if _DEJAVU_BOLD.is_file() else _DEJAVU), size)
    else:
        font = bold = ImageFont.load_default(size=size)
    line = size + size // 4 + 1
    return Theme(
        font=font,
        bold=bold,
        line=line,
        status=line + 4,
        pad=max(3, size // 4),
        fg=(235, 235, 230),
        bg=(16, 20, 26),
        band_fg=(235, 235, 230),
        band_bg=(40, 60, 90),
        offline_bg=(150, 30, 30),
        dim=(140, 150, 160),
    )


def clean(text: str, mono: bool) -> str:
    """Text safe for the font: whitespace collapsed; ASCII only on the bitmap font."""
    text = " ".join(str(text).split())
    if not mono:
        return text
    text = unicodedata.normalize("NFKD", text.translate(_ASCII))
    return "".join(_printable(c) for c in text)


def _printable(c: str) -> str:
    if 32 <= ord(c) < 127:
        return c
    if unicodedata.combining(c):
        return ""  # an accent NFKD split off its letter: the letter stays
    return "?"


def wrap(text: str, font: Any, width: int) -> list[str]:
    """``text`` broken into lines no wider than ``width`` pixels (long words are cut)."""
    lines: list[str] = []
    for paragraph in str(text).split("\n"):
        words = paragraph.split()
        current = ""
        for word in words:
            candidate = f"{current} {word}" if current else word
            if font.getlength(candidate) <= width:
                current = candidate
                continue
            if current:
                lines.append(current)
            while font.getlength(word) > width and len(word) > 1:
                cut = len(word) - 1
                while cut > 1 and font.getlength(word[:cut]) > width:
                    cut -= 1
                lines.append(word[:cut])
                word = word[cut:]
            current = word
        lines.append(current)
    while lines and not lines[-1]:
        lines.pop()
    return lines


def render(state: ScreenState, spec: ScreenSpec) -> Image.Image:
    """Draw ``state`` at ``spec``; returns a new PIL image."""
    from PIL import Image, ImageDraw

    theme = theme_for(spec)
    image = Image.new(spec.mode, (spec.width, spec.height), theme.bg)
    draw = ImageDraw.Draw(image)
    draw.fontmode = "1" if spec.mono else "L"
    _status(draw, state, spec, theme)
    top = theme.status + (1 if spec.mono else 3)
    layout = layout_of(state)
    if layout == "approval":
        _approval(draw, state, spec, theme, top)
    elif layout == "question":
        _question(draw, state, spec, theme, top)
    elif layout == "notice":
        _notice(draw, state, spec, theme, top)
    else:
        _answer(draw, state, spec, theme, top)
    return image


def _text(
    draw: Any, xy: tuple[int, int], text: str, theme: Theme, spec: ScreenSpec, *, fill: Any = None, bold: bool = False
) -> None:
    draw.text(
        xy, clean(text, spec.mono), font=theme.bold if bold else theme.font, fill=theme.fg if fill is None else fill
    )


def _status(draw: Any, state: ScreenState, spec: ScreenSpec, theme: Theme) -> None:
    online = state.link == "online"
    band = theme.band_bg if online else theme.offline_bg
    draw.rectangle((0, 0, spec.width - 1, theme.status - 1), fill=band)
    box = theme.status - 5
    x0, y0 = 2, 2
    if online and spec.mono:
        draw.rectangle((x0, y0, x0 + box, y0 + box), fill=theme.band_fg)
    elif online:
        draw.ellipse((x0, y0, x0 + box, y0 + box), fill=RISK_COLOURS["low"], outline=theme.band_fg)
    else:
        draw.rectangle((x0, y0, x0 + box, y0 + box), outline=theme.band_fg)
        draw.line((x0, y0, x0 + box, y0 + box), fill=theme.band_fg)
        draw.line((x0, y0 + box, x0 + box, y0), fill=theme.band_fg)
    word = {"online": "", "offline": "OFFLINE ", "connecting": "connecting "}.get(state.link, state.link + " ")
    # Offline, only what the device does on its own (listening, transcribing) is worth the room.
    activity = _activity_words(state) if online or state.activity in ("listening", "transcribing") else ""
    left = f"{word}{activity}".strip()
    x = x0 + box + (4 if spec.mono else 6)
    y = 0 if spec.mono else (theme.status - theme.line) // 2 + 1
    _text(draw, (x, y), left, theme, spec, fill=theme.band_fg, bold=True)
    right_parts = []
    if state.pending:
        right_parts.append(f"wait {state.pending}")
    if state.model and not spec.mono:
        right_parts.append(state.model.split(":")[-1][:14])
    left_end = x + int(theme.bold.getlength(clean(left, spec.mono)))
    # What waits for the core matters more than the model name: drop the model first when short of room.
    for right in ("  ".join(right_parts), right_parts[0] if right_parts else ""):
        if not right:
            break
        width = int(theme.font.getlength(clean(right, spec.mono)))
        rx = spec.width - width - 3
        if rx > left_end + 4:
            _text(draw, (rx, y), right, theme, spec, fill=theme.band_fg)
            break


def _activity_words(state: ScreenState) -> str:
    """The status line's word for what is happening: a running turn's phase with its seconds."""
    if state.phase and state.activity == "thinking":
        return f"{state.phase} {state.elapsed}s"
    return state.activity


def shorten_middle(text: str, font: Any, width: int) -> str:
    """``text`` cut in the middle with ``...`` to fit ``width`` pixels: both ends stay readable.

    The end gets two thirds of the room: a path keeps its file name and a command its last words,
    which is what tells two targets apart.
    """
    if font.getlength(text) <= width:
        return text
    keep = len(text)
    while keep > 1:
        keep -= 1
        tail_chars = (2 * keep + 2) // 3
        head = text[: keep - tail_chars]
        tail = text[len(text) - tail_chars :]
        candidate = f"{head}...{tail}"
        if font.getlength(candidate) <= width:
            return candidate
    return "..."


def _lines_area(spec: ScreenSpec, theme: Theme, top: int, footer: int = 0) -> int:
    return max(1, (spec.height - top - footer) // theme.line)


def _answer(draw: Any, state: ScreenState, spec: ScreenSpec, theme: Theme, top: int) -> None:
    inner = spec.width - 2 * theme.pad - 4
    lines: list[tuple[str, bool]] = []
    if state.heard:
        heard = wrap(clean("> " + state.heard, spec.mono), theme.font, inner)
        if spec.mono and state.answer.strip() and len(heard) > 1:
            # A 64-pixel screen keeps one line of the question so the answer has room.
            heard = [heard[0][: max(0, len(heard[0]) - 3)] + "..."]
        lines += [(line, True) for line in heard]
    if state.answer.strip():
        lines += [(line, False) for line in wrap(clean(state.answer, spec.mono), theme.font, inner)]
    elif not state.heard:
        hint = "Hold TALK and ask." if state.link == "online" else "Waiting for the core..."
        lines = [(line, True) for line in wrap(hint, theme.font, inner)]
    visible = _lines_area(spec, theme, top)
    start = max(0, min(state.scroll, max(0, len(lines) - visible)))
    for n, (line, dim) in enumerate(lines[start : start + visible]):
        _text(draw, (theme.pad, top + n * theme.line), line, theme, spec, fill=theme.dim if dim else None)
    if len(lines) > visible:
        track = spec.height - top
        bar = max(4, track * visible // len(lines))
        pos = top + (track - bar) * start // max(1, len(lines) - visible)
        draw.rectangle((spec.width - 2, pos, spec.width - 1, pos + bar - 1), fill=theme.fg)


def _footer(draw: Any, spec: ScreenSpec, theme: Theme, *choices: str) -> int:
    """Draw the first legend of ``choices`` that fits (the last one, cut, when none does)."""
    y = spec.height - theme.line
    draw.line((0, y - 1, spec.width - 1, y - 1), fill=theme.dim)
    width = spec.width - 2 * theme.pad
    text = next((c for c in choices if theme.font.getlength(clean(c, spec.mono)) <= width), choices[-1])
    _text(draw, (theme.pad, y), text, theme, spec, fill=theme.dim if not spec.mono else theme.fg)
    return theme.line + 1


def _band(draw: Any, spec: ScreenSpec, theme: Theme, top: int, text: str, colour: Any = None) -> int:
    fill = theme.fg if spec.mono else (colour or theme.band_bg)
    draw.rectangle((0, top, spec.width - 1, top + theme.line - 1), fill=fill)
    _text(
        draw,
        (theme.pad, top if spec.mono else top + 1),
        text,
        theme,
        spec,
        fill=theme.bg if spec.mono else (255, 255, 255),
        bold=True,
    )
    return top + theme.line + (0 if spec.mono else 2)


def _approval(draw: Any, state: ScreenState, spec: ScreenSpec, theme: Theme, top: int) -> None:
    approval = state.approval
    assert approval is not None
    more = f" 1/{len(state.approvals)}" if len(state.approvals) > 1 else ""
    risk = approval.risk or "?"
    title = f"ALLOW? {risk}{more}" if spec.mono else f"Allow this?  risk: {risk}{more}"
    y = _band(draw, spec, theme, top, title, RISK_COLOURS.get(risk))
    footer = _footer(
        draw,
        spec,
        theme,
        "ALLOW: yes   DENY: no   hold ALLOW: always",
        "ALLOW: yes   DENY: no",
        "ALLOW=yes  DENY=no",
        "ALLOW=y DENY=n",
    )
    room = max(1, (spec.height - y - footer) // theme.line)
    width = spec.width - 2 * theme.pad
    if approval.target:
        # The target line comes first and always: "delete_file notes.txt" tells the person what a press does.
        # With the tool name when both fit; else the target alone, cut in the middle (the summary says the act).
        what = clean(f"{approval.tool} {approval.target}".strip(), spec.mono)
        if theme.bold.getlength(what) > width:
            what = shorten_middle(clean(approval.target, spec.mono), theme.bold, width)
        _text(draw, (theme.pad, y), what, theme, spec, bold=True)
        y += theme.line
        room -= 1
    if room <= 0:
        return
    lines = wrap(clean(approval.summary, spec.mono), theme.font, width)
    if len(lines) > room:
        lines = lines[:room]
        lines[-1] = lines[-1][: max(0, len(lines[-1]) - 3)] + "..."
    for n, line in enumerate(lines):
        _text(draw, (theme.pad, y + n * theme.line), line, theme, spec)


def _question(draw: Any, state: ScreenState, spec: ScreenSpec, theme: Theme, top: int) -> None:
    question = state.question
    assert question is not None
    # A waiting question shows until when it waits, in the legend, before any way of answering is dropped.
    by = f"by {question.deadline}  " if question.deadline else ""
    if question.options:
        footer = _footer(
            draw,
            spec,
            theme,
            f"{by}say a number, or NEXT to move and ALLOW to pick",
            f"{by}say a number or NEXT / ALLOW",
            f"{by}NEXT=move ALLOW=pick",
            f"{by}NEXT/ALLOW",
            "NEXT/ALLOW",
        )
    else:
        footer = _footer(draw, spec, theme, f"{by}hold TALK to answer", f"{by}TALK to answer", "TALK to answer")
    width = spec.width - 2 * theme.pad
    text_lines = wrap(clean(question.text, spec.mono), theme.bold, width)
    option_lines: list[tuple[str, int]] = []
    for n, option in enumerate(question.options):
        for k, line in enumerate(wrap(clean(f"{n + 1}. {option}", spec.mono), theme.font, width - 2)):
            option_lines.append((line if k == 0 else "   " + line, n))
    room = max(1, (spec.height - top - footer) // theme.line)
    # Options first: the question is also spoken, so on a tight screen it gets what is left (at least a line).
    q_room = max(1, min(len(text_lines), room - len(option_lines)))
    if len(text_lines) > q_room:
        text_lines = text_lines[:q_room]
        text_lines[-1] = text_lines[-1][: max(0, len(text_lines[-1]) - 3)] + "..."
    y = top
    for line in text_lines:
        _text(draw, (theme.pad, y), line, theme, spec, bold=True)
        y += theme.line
    o_room = max(0, room - len(text_lines))
    selected_rows = [i for i, (_, n) in enumerate(option_lines) if n == question.selected]
    first = 0
    if selected_rows and selected_rows[-1] >= o_room:
        first = selected_rows[-1] - o_room + 1
    for line, n in option_lines[first : first + o_room]:
        if n == question.selected:
            fill = theme.fg if spec.mono else theme.band_bg
            draw.rectangle((0, y, spec.width - 1, y + theme.line - 1), fill=fill)
            _text(draw, (theme.pad + 1, y), line, theme, spec, fill=theme.bg if spec.mono else (255, 255, 255))
        else:
            _text(draw, (theme.pad + 1, y), line, theme, spec)
        y += theme.line


def _notice(draw: Any, state: ScreenState, spec: ScreenSpec, theme: Theme, top: int) -> None:
    notice = state.notice
    assert notice is not None
    titles = {"taste": "Learned", "info": "Notice", "warning": "Warning", "error": "Error"}
    colours = {"taste": (60, 120, 80), "warning": RISK_COLOURS["medium"], "error": RISK_COLOURS["high"]}
    y = _band(draw, spec, theme, top, notice.title or titles.get(notice.kind, "Notice"), colours.get(notice.kind))
    room = max(1, (spec.height - y) // theme.line)
    lines = wrap(clean(notice.text, spec.mono), theme.font, spec.width - 2 * theme.pad)
    if len(lines) > room:
        lines = lines[:room]
        lines[-1] = lines[-1][: max(0, len(lines[-1]) - 3)] + "..."
    for n, line in enumerate(lines):
        _text(draw, (theme.pad, y + n * theme.line), line, theme, spec)
