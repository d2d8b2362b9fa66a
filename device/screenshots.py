"""Screenshots of every layout at 128x64 monochrome and 240x240 / 320x240 colour.

``python -m device.screenshots docs/device`` writes ``<layout>-<W>x<H>.png``
(and a 4x enlarged copy of each monochrome frame, ``...@4x.png``, for
reading on a laptop screen). The states are the examples below, drawn by the
same :func:`device.layouts.render` the device uses.
"""

from __future__ import annotations

import sys
from pathlib import Path

from device.layouts import ScreenSpec, render
from device.state import Approval, Notice, Question, ScreenState

__all__ = ["EXAMPLES", "SIZES", "write_screenshots"]

_BASE = ScreenState(
    link="online",
    model="gemma-3-270m",
    activity="speaking",
    heard="what is the weather like tomorrow",
    answer="Tomorrow looks dry and mild, about 18 degrees in the afternoon. Take a light jacket "
    "for the morning; it stays cool until ten.",
)

EXAMPLES: dict[str, ScreenState] = {
    "answer": _BASE,
    "listening": ScreenState(link="online", model="gemma-3-270m", activity="listening"),
    "approval": _BASE.with_(
        activity="idle",
        approvals=(Approval("a1", "delete a file", "high", "delete_file", target="notes/2026/old-meeting-notes.txt"),),
    ),
    "thinking": ScreenState(
        link="online",
        model="qwen2.5-coder-0.5b-instruct",
        activity="thinking",
        heard="where does my sister live",
        phase="thinking",
        elapsed=7,
    ),
    "reading": ScreenState(
        link="online",
        model="qwen2.5-coder-0.5b-instruct",
        activity="thinking",
        heard="what is in todo.txt",
        phase="reading",
        elapsed=3,
    ),
    "answering": _BASE.with_(activity="thinking", phase="answering", elapsed=12, answer=_BASE.answer[:60]),
    "question": _BASE.with_(
        activity="idle",
        questions=(
            Question("q1", "Which day suits you for the dentist?", ("Monday", "Tuesday", "Friday morning"), False, 1),
        ),
    ),
    "taste": _BASE.with_(
        activity="idle", notice=Notice("Commit messages are short and imperative.", "taste", "Learned")
    ),
    "announcement": _BASE.with_(activity="idle", notice=Notice("The weekly summary is ready.", "info")),
    "offline": _BASE.with_(link="offline", activity="idle", pending=1),
}
SIZES = (ScreenSpec(128, 64, True), ScreenSpec(240, 240, False), ScreenSpec(320, 240, False))


def write_screenshots(folder: Path) -> list[Path]:
    """Render every example at every size into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, state in EXAMPLES.items():
        for spec in SIZES:
            image = render(state, spec)
            path = folder / f"{name}-{spec.width}x{spec.height}.png"
            image.save(path)
            written.append(path)
            if spec.mono:
                big = folder / f"{name}-{spec.width}x{spec.height}@4x.png"
                image.convert("L").resize((spec.width * 4, spec.height * 4), 0).save(big)
                written.append(big)
    return written


if __name__ == "__main__":
    for p in write_screenshots(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/device")):
        print(p)
